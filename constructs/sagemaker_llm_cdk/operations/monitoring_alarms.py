"""The alarms of ``LlmMonitoring``: fixed names, one notification action, and the alarms of endpoints and models.

Every alarm is named ``<alarm_prefix>-<subject>-<kind>`` (SageMaker's rollback configuration refers to alarms by
name, so a name is never a reference), is created under ``<group>/<subject>`` of the facade, treats missing data
as not breaching and notifies the facade's topic on alarm and on recovery (``AlarmBook``). An endpoint gets
p99-latency and 5xx-rate alarms over its models' per-component metrics; each model gets its own latency and
5xx-rate alarms (the ones its rollout watches), and GPU-saturation and no-capacity alarms.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from aws_cdk import Annotations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions

from constructs import Construct

from ..core.errors import ConfigurationError, Problem
from ..settings.operations import MAX_ALARM_METRICS, MonitoringSettings
from .monitoring_metrics import endpoint_error_rate, endpoint_latency, error_rate

if TYPE_CHECKING:
    from ..hosting.endpoint import LlmEndpoint
    from ..hosting.model_component import ModelComponent


class AlarmBook:
    """The alarms of one facade by name, created under ``owner`` and notifying ``action``."""

    def __init__(self, owner: Construct, prefix: str, action: cloudwatch_actions.SnsAction) -> None:
        self._owner = owner
        self._prefix = prefix
        self._action = action
        self.alarms: dict[str, cloudwatch.Alarm] = {}

    def name(self, subject: str, kind: str) -> str:
        return f"{self._prefix}-{subject}-{kind}"

    def name_of(self, alarm: cloudwatch.Alarm) -> str:
        """The literal name an alarm was created with (never a reference: see ``endpoint_alarms``)."""
        return next(name for name, known in self.alarms.items() if known is alarm)

    def alarm(
        self,
        where: tuple[str, str],
        subject: str,
        kind: str,
        *,
        description: str,
        metric: cloudwatch.IMetric,
        threshold: float,
        comparison: cloudwatch.ComparisonOperator,
        periods: int,
    ) -> cloudwatch.Alarm:
        """A new alarm ``<prefix>-<subject>-<kind>`` under ``where`` (group, key); refused when the name is taken."""
        name = self.name(subject, kind)
        if name in self.alarms:
            raise ConfigurationError(
                [
                    Problem(
                        "alarm name",
                        name,
                        "a name no other alarm of this facade has",
                        f"{subject} is monitored twice as {kind}; monitor it once or rename one",
                    )
                ],
                source=self._owner.node.path,
            )
        group, key = where
        scope = cast(Construct, self._owner.node.try_find_child(group) or Construct(self._owner, group))
        parent = cast(Construct, scope.node.try_find_child(key) or Construct(scope, key))
        alarm = cloudwatch.Alarm(
            parent,
            "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]", kind)) + "Alarm",
            alarm_name=name,
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
        self.alarms[name] = alarm
        return alarm


def endpoint_alarms(
    book: AlarmBook, settings: MonitoringSettings, endpoint: LlmEndpoint, subject: str
) -> list[cloudwatch.Alarm]:
    """p99-latency and 5xx-rate alarms of the endpoint, from its models' own metrics.

    An inference-component endpoint publishes its invocation metrics per component
    (dimension ``InferenceComponentName``), not per variant: alarms on
    ``EndpointName``/``VariantName`` would never see a bad rollout. So the endpoint's
    latency is the highest p99 of its models and its 5xx rate is the models' errors over
    their invocations. A CloudWatch alarm reads at most 10 metrics, so these alarms watch
    the first 10 models (latency) and the first 5 (error rate); synth warns beyond that.
    """
    models = list(endpoint.models)
    alarms: list[cloudwatch.Alarm] = []
    if not models:
        return alarms
    for limit, what in ((MAX_ALARM_METRICS, "p99 latency"), (MAX_ALARM_METRICS // 2, "5xx rate")):
        if len(models) > limit:
            Annotations.of(endpoint).add_warning_v2(
                "sagemaker-llm-cdk:endpoint-alarm-models",
                f"The endpoint {what} alarm watches the first {limit} of {len(models)} models (a CloudWatch "
                "alarm reads at most 10 metrics); each model's own alarms still watch it.",
            )
    if settings.p99_latency_seconds is not None:
        alarms.append(
            book.alarm(
                ("Endpoints", subject),
                subject,
                "endpoint-p99-latency",
                description=(
                    f"Highest p99 model latency among the models of endpoint {endpoint.node.path} above "
                    f"{settings.p99_latency_seconds} s for {settings.latency_minutes} minutes. Rolls back an "
                    "endpoint update."
                ),
                metric=endpoint_latency(models[:MAX_ALARM_METRICS]),
                threshold=settings.p99_latency_seconds * 1_000_000,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                periods=settings.latency_minutes,
            )
        )
    if settings.error_rate_percent is not None:
        alarms.append(
            book.alarm(
                ("Endpoints", subject),
                subject,
                "endpoint-5xx-rate",
                description=(
                    f"More than {settings.error_rate_percent}% of requests to the models of endpoint "
                    f"{endpoint.node.path} failed with 5xx for {settings.error_rate_minutes} minutes. Rolls back "
                    "an endpoint update."
                ),
                metric=endpoint_error_rate(models[: MAX_ALARM_METRICS // 2], settings.error_rate_min_requests),
                threshold=settings.error_rate_percent,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                periods=settings.error_rate_minutes,
            )
        )
    if endpoint.cfn_endpoint is not None:
        # The alarms name only the models' fixed component names, so they can exist before the
        # endpoint: the rollback configuration then never names an alarm that is not there yet.
        for alarm in alarms:
            endpoint.cfn_endpoint.node.add_dependency(alarm)
    return alarms


def model_alarms(
    book: AlarmBook, settings: MonitoringSettings, model: ModelComponent, subject: str
) -> tuple[list[cloudwatch.Alarm], list[cloudwatch.Alarm]]:
    """A model's alarms, and the ones among them its rollout rolls back on (p99 latency and 5xx rate).

    :return: ``(all the model's alarms, its rollback alarms)``.
    """
    where = ("Models", subject)
    alarms: list[cloudwatch.Alarm] = []
    if settings.p99_latency_seconds is not None:
        alarms.append(
            book.alarm(
                where,
                subject,
                "p99-latency",
                description=(
                    f"p99 model latency of {subject} above {settings.p99_latency_seconds} s for "
                    f"{settings.latency_minutes} minutes. Rolls back a model update."
                ),
                metric=model.metric_model_latency(statistic="p99"),
                threshold=settings.p99_latency_seconds * 1_000_000,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                periods=settings.latency_minutes,
            )
        )
    if settings.error_rate_percent is not None:
        alarms.append(
            book.alarm(
                where,
                subject,
                "5xx-rate",
                description=(
                    f"More than {settings.error_rate_percent}% of requests to {subject} failed with 5xx for "
                    f"{settings.error_rate_minutes} minutes. Rolls back a model update."
                ),
                metric=error_rate(
                    model.metric_invocation_5xx_errors(),
                    model.metric_invocations(),
                    settings.error_rate_min_requests,
                ),
                threshold=settings.error_rate_percent,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                periods=settings.error_rate_minutes,
            )
        )
    rollback = list(alarms)
    if settings.gpu_saturation_percent is not None:
        alarms.append(
            book.alarm(
                where,
                subject,
                "gpu-saturated",
                description=(
                    f"GPUs of {subject} above {settings.gpu_saturation_percent}% for "
                    f"{settings.gpu_saturation_minutes} minutes: raise max_copies or max_instances."
                ),
                metric=model.metric_gpu_utilization(statistic="Average"),
                threshold=settings.gpu_saturation_percent,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                periods=settings.gpu_saturation_minutes,
            )
        )
    if settings.no_capacity_minutes is not None and model.spec.copies.min_copies == 0:
        alarms.append(
            book.alarm(
                where,
                subject,
                "no-capacity",
                description=(
                    f"Requests to {subject} found no copy for {settings.no_capacity_minutes} minutes in a row: "
                    "scaling from zero is not bringing a copy up (instance capacity, quota or plan)."
                ),
                metric=model.metric_no_capacity_invocation_failures(statistic="Sum"),
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                periods=settings.no_capacity_minutes,
            )
        )
    return alarms, rollback
