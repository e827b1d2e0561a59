"""What every inference component construct shares: invoke grants and per-component metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import Aws, Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam

from constructs import Construct

from ..core.errors import Problem
from ..core.metrics import SAGEMAKER_NAMESPACE, metric

if TYPE_CHECKING:
    from ..settings.hosting import ModelSpec
    from .endpoint import LlmEndpoint


class InferenceComponentConstruct(Construct):
    """Base of ``ModelComponent`` and ``LoraAdapter``: subclasses set ``endpoint``,
    ``component_name`` and ``component_arn``."""

    endpoint: LlmEndpoint
    component_name: str
    component_arn: str

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to invoke this component only: the endpoint ARN and this component's ARN.

        IAM checks both ARNs for a request that names an inference component, so a request
        for any other model or adapter on the endpoint is refused.
        """
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
            resource_arns=[self.endpoint.endpoint_arn, self.component_arn],
        )

    def metric(
        self,
        metric_name: str,
        *,
        namespace: str = SAGEMAKER_NAMESPACE,
        statistic: str = "Sum",
        period: Duration | None = None,
        **kwargs: Any,
    ) -> cloudwatch.Metric:
        """A metric of this inference component (dimension InferenceComponentName). Default: sum over 1 minute."""
        return metric(
            namespace,
            metric_name,
            {"InferenceComponentName": self.component_name},
            statistic=statistic,
            period=period,
            **kwargs,
        )

    def metric_invocations(self, **kwargs: Any) -> cloudwatch.Metric:
        """Requests sent to this component. Default: sum over 1 minute."""
        return self.metric("Invocations", **kwargs)

    def metric_model_latency(self, *, statistic: str = "p90", **kwargs: Any) -> cloudwatch.Metric:
        """Model latency, microseconds. Default: p90 over 1 minute."""
        return self.metric("ModelLatency", statistic=statistic, **kwargs)

    def metric_invocation_4xx_errors(self, **kwargs: Any) -> cloudwatch.Metric:
        """Requests answered with a 4xx status. Default: sum over 1 minute."""
        return self.metric("Invocation4XXErrors", **kwargs)

    def metric_invocation_5xx_errors(self, **kwargs: Any) -> cloudwatch.Metric:
        """Requests answered with a 5xx status. Default: sum over 1 minute."""
        return self.metric("Invocation5XXErrors", **kwargs)


def name_taken_problem(field: str, name: str, endpoint: LlmEndpoint) -> Problem | None:
    """A problem when ``name`` is already used by a model or an adapter on ``endpoint``, as a
    config name or as an inference component name."""
    for model in endpoint.models:
        if name in (model.component_name, model.spec.name):
            return Problem(
                field,
                name,
                f"a name no model or adapter on this endpoint uses (model {model.node.path} "
                "has it; inference component names are unique in an account and region)",
                "rename the adapter",
            )
    adapters = endpoint.lora_adapters
    other = adapters.get(name) or next((a for a in adapters.values() if a.spec.name == name), None)
    if other is not None:
        return Problem(
            field,
            name,
            f"a name no model or adapter on this endpoint uses (adapter {other.node.path} has it)",
            "rename one of the two adapters",
        )
    return None


def weights_owner(spec: ModelSpec) -> dict[str, dict[str, str]] | None:
    """The condition that the weights bucket belongs to ``model_data_owner`` (default: the deploying account).

    Bucket names are global: without ``s3:ResourceAccount`` a role reads whoever holds the name. JumpStart's
    buckets belong to AWS accounts the lock does not name, so a JumpStart model goes without (None).
    """
    if spec.is_jumpstart:
        return None
    return {"StringEquals": {"s3:ResourceAccount": spec.model_data_owner or Aws.ACCOUNT_ID}}
