"""What one feature needs of another's resources, as protocols, so features refer to each other by interface.

Like aws-cdk's ``IBucket`` or ``IFunction``: a construct takes ``IEndpoint`` or ``ICapacityReservation``, not
the class that makes one, so imported resources fit too and the packages import no construct of each other
at run time. ``runtime_checkable``: ``isinstance`` checks that the attributes exist (not their types).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam


@runtime_checkable
class IEndpoint(Protocol):
    """A SageMaker endpoint: made here (``LlmEndpoint``) or imported (``EndpointReference``)."""

    endpoint_name: str
    endpoint_arn: str
    variant_name: str

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant: ...

    def metric(self, metric_name: str, **kwargs: Any) -> cloudwatch.Metric: ...


@runtime_checkable
class ICapacityReservation(Protocol):
    """Reserved capacity an endpoint can run on: a SageMaker training plan (``CapacityPlan``)."""

    plan_name: str
    plan_arn: str

    @property
    def training_plan_arns(self) -> list[str]: ...

    def metric_days_left(self, **kwargs: Any) -> cloudwatch.Metric: ...
