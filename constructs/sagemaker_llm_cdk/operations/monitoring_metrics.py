"""The metrics ``LlmMonitoring`` graphs and alarms on, beyond each construct's own ``metric_*`` methods.

An inference-component endpoint publishes its invocation metrics per component, so the endpoint's latency, 5xx
rate and traffic are metric math over its models' metrics; its instance metrics are per variant
(``EndpointMetrics``). Capacity plans declared elsewhere, EAGLE runs and the session front door's errors are
read by name and dimensions. Every metric here is a value: making one creates no construct.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from aws_cdk import Duration, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_

from ..core.metrics import metric, one_minute

if TYPE_CHECKING:
    from ..hosting.component_base import InferenceComponentConstruct
    from ..hosting.endpoint import LlmEndpoint


class EndpointMetrics:
    """Variant metrics of an endpoint, naming it literally when its physical name is known at synth."""

    def __init__(self, endpoint: LlmEndpoint) -> None:
        given = endpoint.cfn_endpoint.endpoint_name if endpoint.cfn_endpoint is not None else None
        self.literal = isinstance(given, str) and not Token.is_unresolved(given)
        self._name: str = given if isinstance(given, str) and self.literal else endpoint.endpoint_name
        self._variant = endpoint.variant_name

    def metric(
        self, metric_name: str, *, namespace: str = "AWS/SageMaker", statistic: str = "Sum", label: str | None = None
    ) -> cloudwatch.Metric:
        return metric(
            namespace,
            metric_name,
            {"EndpointName": self._name, "VariantName": self._variant},
            statistic=statistic,
            label=label,
        )


def endpoint_latency(models: Sequence[InferenceComponentConstruct]) -> cloudwatch.MathExpression:
    """The highest p99 ModelLatency among ``models`` (per-component metrics), microseconds."""
    using = {f"m{i}": m.metric_model_latency(statistic="p99") for i, m in enumerate(models)}
    return cloudwatch.MathExpression(
        expression=f"MAX([{', '.join(using)}])",
        using_metrics=using,
        label="Highest p99 ModelLatency of the models",
        period=one_minute(),
    )


def endpoint_error_rate(models: Sequence[InferenceComponentConstruct], min_requests: int) -> cloudwatch.MathExpression:
    """5xx share of the invocations of ``models`` together, percent; 0 in minutes with fewer than ``min_requests``."""
    using: dict[str, cloudwatch.IMetric] = {}
    for i, model in enumerate(models):
        using[f"e{i}"] = model.metric_invocation_5xx_errors()
        using[f"i{i}"] = model.metric_invocations()
    errors = " + ".join(f"FILL(e{i}, 0)" for i in range(len(models)))
    invocations = " + ".join(f"FILL(i{i}, 0)" for i in range(len(models)))
    return cloudwatch.MathExpression(
        expression=f"IF(({invocations}) >= {min_requests}, 100 * ({errors}) / ({invocations}), 0)",
        using_metrics=using,
        label="5xx rate of the models (%)",
        period=one_minute(),
    )


def sum_of(models: Sequence[InferenceComponentConstruct], metric_name: str) -> cloudwatch.MathExpression:
    """``metric_name`` (a per-component Sum metric) added up over ``models``."""
    prefix = re.sub(r"[^a-z0-9]", "", metric_name.lower())  # ids unique among the graph's expressions
    using = {f"{prefix}{i}": m.metric(metric_name) for i, m in enumerate(models)}
    return cloudwatch.MathExpression(
        expression=" + ".join(f"FILL({k}, 0)" for k in using),
        using_metrics=using,
        label=f"{metric_name} (all models)",
        period=one_minute(),
    )


def error_rate(
    errors: cloudwatch.IMetric, invocations: cloudwatch.IMetric, min_requests: int
) -> cloudwatch.MathExpression:
    """5xx share of invocations in percent; 0 in minutes with fewer than ``min_requests`` invocations."""
    return cloudwatch.MathExpression(
        expression=f"IF(inv >= {min_requests}, 100 * FILL(err, 0) / inv, 0)",
        using_metrics={"err": errors, "inv": invocations},
        label="5xx rate (%)",
        period=one_minute(),
    )


def days_left(plan_name: str, namespace: str) -> cloudwatch.Metric:
    """``CapacityPlanDaysLeft`` of a plan known only by name (``CapacityPlan.metric_days_left`` for one of ours)."""
    return metric(
        namespace, "CapacityPlanDaysLeft", {"TrainingPlanName": plan_name}, statistic="Minimum", period=Duration.days(1)
    )


def front_door_errors(
    function: lambda_.IFunction, extra_error_metrics: Sequence[cloudwatch.IMetric]
) -> cloudwatch.IMetric:
    """The front door function's Errors per 5 minutes, plus ``extra_error_metrics`` when there are any."""
    errors: cloudwatch.IMetric = function.metric_errors(statistic="Sum", period=Duration.minutes(5))
    if extra_error_metrics:
        using = {"m0": errors, **{f"m{i + 1}": m for i, m in enumerate(extra_error_metrics)}}
        errors = cloudwatch.MathExpression(
            expression="+".join(f"FILL({k}, 0)" for k in using),
            using_metrics=using,
            label="Errors",
            period=Duration.minutes(5),
        )
    return errors


def eagle_metric(
    namespace: str, dimensions: Mapping[str, str], name: str, statistic: str, period: Duration
) -> cloudwatch.Metric:
    """One of the metrics an EAGLE optimization run publishes (``EagleSpeedup``, ``EagleJobSucceeded``, ...)."""
    return metric(namespace, name, dimensions, statistic=statistic, period=period)
