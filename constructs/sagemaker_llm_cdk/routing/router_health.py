"""How an inference router is watched: a scheduled health check, its metrics, two alarms and a dashboard.

AWS publishes the router's own metrics as OpenTelemetry metrics outside the ``AWS/SageMaker`` namespace, so an
EventBridge Scheduler schedule runs the check function, which describes the router and publishes
``UnroutableDestinations``, ``UnknownDestinations`` and ``RouterNotInService`` in ``METRICS_NAMESPACE``. The
``Unroutable`` and ``NotInService`` alarms read them (missing data breaches: a check that stopped is a problem),
and the dashboard adds each destination's own ``AWS/SageMaker`` metrics from its region and account.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import Aws, Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sns as sns

from ..core.metrics import SAGEMAKER_NAMESPACE, metric

if TYPE_CHECKING:
    from .router import InferenceRouter

METRICS_NAMESPACE = "SageMakerLlm/InferenceRouter"
"""Namespace of the scheduled check's metrics (dimensions InferenceRouterName, and RoutingTarget per target)."""


def check_metric(router_name: str, name: str, target: str | None, **kwargs: Any) -> cloudwatch.Metric:
    """Metric ``name`` of the check of router ``router_name`` (of one target, or all). Default: max over 5 min."""
    dimensions = {"InferenceRouterName": router_name, **({"RoutingTarget": target} if target else {})}
    kwargs.setdefault("period", Duration.minutes(5))
    return metric(METRICS_NAMESPACE, name, dimensions, statistic=kwargs.pop("statistic", "Maximum"), **kwargs)


def check_schedule(router: InferenceRouter, expression: str) -> tuple[iam.Role, scheduler.Schedule]:
    """The role EventBridge Scheduler runs the check with, and the schedule (after the router exists)."""
    role = iam.Role(
        router,
        "ScheduleRole",
        assumed_by=iam.ServicePrincipal(
            "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
        ),
        description=f"Lets EventBridge Scheduler run the health check of inference router {router.router_name}",
    )
    schedule = scheduler.Schedule(
        router,
        "CheckSchedule",
        schedule=scheduler.ScheduleExpression.expression(expression),
        target=scheduler_targets.LambdaInvoke(
            router.check_function, role=role, input=scheduler.ScheduleTargetInput.from_object({})
        ),
        description=f"Checks which destinations inference router {router.router_name} can route to",
    )
    schedule.node.add_dependency(router.custom_resource)
    return role, schedule


def health_alarms(
    router: InferenceRouter, unroutable_alarm_periods: int, alarm_topic: sns.ITopic | None
) -> dict[str, cloudwatch.Alarm]:
    """The ``Unroutable`` and ``NotInService`` alarms, publishing to ``alarm_topic`` when one is given."""
    action = cloudwatch_actions.SnsAction(alarm_topic) if alarm_topic is not None else None
    alarms: dict[str, cloudwatch.Alarm] = {}
    for key, metric_of, periods, what in (
        (
            "Unroutable",
            router.metric_unroutable_destinations(),
            unroutable_alarm_periods,
            "a destination the router cannot route to (being created, failed, or without capacity)",
        ),
        ("NotInService", router.metric_router_not_in_service(), 2, "the router is not InService (or is gone)"),
    ):
        alarm = metric_of.create_alarm(
            router,
            f"{key}Alarm",
            alarm_name=f"{router.router_name}-{key}"[:255],
            threshold=1,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
            alarm_description=f"Inference router {router.router_name}: {what}. Requests still go to the other "
            "destinations; see DescribeInferenceRouter RoutingStatus.",
        )
        if action is not None:
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)
        alarms[key] = alarm
    return alarms


def dashboard_widgets(router: InferenceRouter) -> list[cloudwatch.IWidget]:
    """One row for the router (its check's metrics), then per target its destinations' own metrics
    (``AWS/SageMaker`` in each destination's region and account: invocations, 5XX errors, model latency)."""
    row: list[cloudwatch.IWidget] = [
        cloudwatch.GraphWidget(
            title=f"{router.router_name}: destinations it cannot route to",
            width=12,
            left=[
                router.metric_unroutable_destinations(label="Unroutable"),
                router.metric_unknown_destinations(label="Unknown"),
            ],
        ),
        cloudwatch.AlarmStatusWidget(
            title=f"{router.router_name}: alarms", width=12, alarms=list(router.alarms.values())
        ),
    ]
    for target in router.targets:
        lines: dict[str, list[cloudwatch.IMetric]] = {
            "Invocations": [],
            "Invocation5XXErrors": [],
            "ModelLatency": [],
        }
        for destination in target.destinations:
            dimensions = (
                {"InferenceComponentName": destination.name}
                if destination.kind == "inference-component"
                else {"EndpointName": destination.name, "VariantName": "AllTraffic"}
            )
            where = f"{destination.region}/{destination.account}"
            for metric_name, statistic in (
                ("Invocations", "Sum"),
                ("Invocation5XXErrors", "Sum"),
                ("ModelLatency", "p90"),
            ):
                lines[metric_name].append(
                    metric(
                        SAGEMAKER_NAMESPACE,
                        metric_name,
                        dimensions,
                        statistic=statistic,
                        label=where,
                        region=destination.region,
                        account=destination.account,
                    )
                )
        row.extend(
            cloudwatch.GraphWidget(title=f"{target.name}: {name} per destination", width=8, left=metrics)
            for name, metrics in lines.items()
        )
    return row
