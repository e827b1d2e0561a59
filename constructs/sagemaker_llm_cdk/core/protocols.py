"""What one feature needs of another's resources, as protocols, so features refer to each other by interface.

Like aws-cdk's ``IBucket`` or ``IFunction``: a construct takes ``IEndpoint`` or ``ICapacityReservation``, not
the class that makes one, so imported resources fit too and the packages import no construct of each other
at run time. ``runtime_checkable``: ``isinstance`` checks that the attributes exist (not their types).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from aws_cdk import CfnCondition
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam

from constructs import Construct, Node

from .errors import Problem


@runtime_checkable
class IEndpoint(Protocol):
    """A SageMaker endpoint: made here (``LlmEndpoint``) or imported (``EndpointReference``)."""

    endpoint_name: str
    endpoint_arn: str
    variant_name: str

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant: ...

    def metric(self, metric_name: str, **kwargs: Any) -> cloudwatch.Metric: ...


class IServedAdapter(Protocol):
    """A LoRA adapter served on an endpoint (``adapters.LoraAdapter``), as the endpoint keeps it by name."""

    component_name: str

    @property
    def node(self) -> Node: ...

    @property
    def spec(self) -> Any: ...


class IPlanGuard(Protocol):
    """What binding a plan leaves under the endpoint: the deploy-time check ahead of its endpoint config
    (``capacity.guard.CapacityPlanGuard``)."""

    ml_reservation_arn: str
    """The plan's ARN as SageMaker returns it, for ``CapacityReservationConfig.MlReservationArn``."""
    bound: CfnCondition | None
    """True while the plan is Active, when the endpoint runs on demand otherwise; None when it always binds."""

    def set_update_policy(self, policy: str, *, rolling_batch: Mapping[str, str] | None = None) -> None: ...

    def watch(self, rendered: Callable[[], Mapping[str, Any]]) -> None: ...


@runtime_checkable
class ICapacityReservation(Protocol):
    """Reserved capacity an endpoint can run on: a SageMaker training plan (``CapacityPlan``).

    The endpoint binds it by asking it: ``binding_problems`` before anything is made, then ``bind``, which makes
    the plan's guard under the endpoint; ``headroom_metadata`` is what the change report reads."""

    plan_name: str
    plan_arn: str
    instance_count: int

    @property
    def training_plan_arns(self) -> list[str]: ...

    @property
    def when_not_active(self) -> str: ...

    def metric_days_left(self, **kwargs: Any) -> cloudwatch.Metric: ...

    def binding_problems(self, options: Any, *, endpoint_scope: Construct | None = None) -> list[Problem]: ...

    def bind(self, endpoint: Construct, *, instance_type: str, max_instances: int) -> IPlanGuard: ...

    def headroom_metadata(self, options: Any) -> dict[str, Any]: ...
