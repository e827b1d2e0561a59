"""The CloudWatch dashboards of ``LlmMonitoring``: one board per endpoint, its sections and the rows in them.

A board is a dashboard with one column per section (``SECTIONS``, top to bottom), so rows land in their
section whatever order the ``monitor_*`` calls come in. Each ``*_rows`` function adds the header and the
graphs of one monitored thing to its section; widgets are values, so adding rows creates no construct (only
``new_board`` does: the dashboard).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from aws_cdk import Aws, Duration, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_

from constructs import Construct

from ..core.metrics import one_minute
from .monitoring_metrics import EndpointMetrics, sum_of

if TYPE_CHECKING:
    from ..hosting.endpoint import LlmEndpoint
    from ..hosting.model_component import ModelComponent

SECTIONS = ("endpoint", "models", "adapters", "front_door", "capacity_plan", "eagle")
"""Dashboard sections, top to bottom, whatever order the ``monitor_*`` calls come in."""
ADAPTERS_PER_GRAPH = 50
"""Adapter invocation lines per graph; more adapters get further graphs."""


@dataclass
class Board:
    """One dashboard, its section columns and the adapter graphs it has so far."""

    dashboard: cloudwatch.Dashboard
    sections: dict[str, cloudwatch.Column]
    adapter_graphs: list[cloudwatch.GraphWidget] = field(default_factory=list)
    adapter_count: int = 0


def new_board(scope: Construct, id: str, label: str, alarm_prefix: str) -> Board:
    """A dashboard ``id`` under ``scope`` named ``<alarm_prefix>-<label>-<region>``, with one column per section."""
    name = re.sub(r"[^A-Za-z0-9_-]", "-", f"{alarm_prefix}-{label}") if not Token.is_unresolved(alarm_prefix) else None
    dashboard = cloudwatch.Dashboard(
        scope,
        id,
        dashboard_name=f"{name[:200]}-{Aws.REGION}" if name else None,
        default_interval=Duration.hours(6),
    )
    sections = {section: cloudwatch.Column() for section in SECTIONS}
    for column in sections.values():
        dashboard.add_widgets(cast(cloudwatch.IWidget, column))
    return Board(dashboard, sections)


def row(*widgets: cloudwatch.IWidget) -> cloudwatch.IWidget:
    """A dashboard row (a ``Row`` is a widget; its type stubs do not say so)."""
    return cast(cloudwatch.IWidget, cloudwatch.Row(*widgets))


def header(title: str, text: str) -> cloudwatch.TextWidget:
    return cloudwatch.TextWidget(markdown=f"## {title}\n{text}", width=24, height=2)


def placeholder() -> cloudwatch.MathExpression:
    return cloudwatch.MathExpression(expression="TIME_SERIES(0)", label="no models", period=one_minute())


# ------------------------------------------------------------------ adapters
def add_adapter_lines(board: Board, metrics: Sequence[cloudwatch.IMetric]) -> list[cloudwatch.GraphWidget]:
    """Add one line per metric to the board's adapter graphs (``ADAPTERS_PER_GRAPH`` lines each): the room left in
    the last graph line by line, then new graphs that get their lines when they are created.

    :return: the graph each line is in, in the order of ``metrics``.
    """
    graphs: list[cloudwatch.GraphWidget] = []
    room = ADAPTERS_PER_GRAPH - board.adapter_count % ADAPTERS_PER_GRAPH if board.adapter_graphs else 0
    if room == ADAPTERS_PER_GRAPH:
        room = 0  # the last graph is full
    for line in metrics[:room]:  # the room left in the last graph, line by line
        board.adapter_graphs[-1].add_left_metric(line)
        graphs.append(board.adapter_graphs[-1])
    for first in range(len(graphs), len(metrics), ADAPTERS_PER_GRAPH):
        left = list(metrics[first : first + ADAPTERS_PER_GRAPH])
        graph = cloudwatch.GraphWidget(
            title=f"Adapter invocations ({len(board.adapter_graphs) + 1})"
            if board.adapter_graphs
            else "Adapter invocations",
            left=left,
            width=24,
            height=6,
            legend_position=cloudwatch.LegendPosition.RIGHT,
        )
        if not board.adapter_graphs:
            board.sections["adapters"].add_widget(header("LoRA adapters", "Invocations per adapter (sum per minute)."))
        board.adapter_graphs.append(graph)
        board.sections["adapters"].add_widget(graph)
        graphs += [graph] * len(left)
    board.adapter_count += len(metrics)
    return graphs


# ------------------------------------------------------------------ endpoint
def endpoint_rows(board: Board, endpoint: LlmEndpoint, alarms: list[cloudwatch.Alarm]) -> None:
    """The endpoint's header, its traffic, latency and GPU graphs, then its instances, copies and alarms."""
    metrics = EndpointMetrics(endpoint)
    options = endpoint.options
    section = board.sections["endpoint"]
    section.add_widget(
        header(
            f"Endpoint {endpoint.node.path}",
            f"{options.instance_type}, {options.scaling.min_instances}-{options.scaling.max_instances} instances, "
            f"models: {', '.join(m.component_name for m in endpoint.models) or 'none'}. Latency in microseconds.",
        )
    )
    # Invocation metrics of an inference-component endpoint are per component: sum them.
    models = list(endpoint.models)
    traffic: list[cloudwatch.IMetric] = (
        [sum_of(models, name) for name in ("Invocations", "Invocation4XXErrors", "Invocation5XXErrors")]
        if models
        else [placeholder()]
    )
    latency: list[cloudwatch.IMetric] = [
        m.metric_model_latency(statistic="p99", label=f"{m.component_name} p99") for m in models
    ] or [placeholder()]
    overhead = [metrics.metric("OverheadLatency", statistic=s, label=f"OverheadLatency {s}") for s in ("p50", "p99")]
    gpu = [
        metrics.metric("GPUUtilization", namespace="/aws/sagemaker/Endpoints", statistic="Average"),
        metrics.metric("GPUMemoryUtilization", namespace="/aws/sagemaker/Endpoints", statistic="Average"),
    ]
    section.add_widget(
        row(
            cloudwatch.GraphWidget(title="Invocations and errors", width=6, left=traffic),
            cloudwatch.GraphWidget(title="Model latency p99 per model (µs)", width=6, left=latency),
            cloudwatch.GraphWidget(title="Overhead latency (µs)", width=6, left=overhead),
            cloudwatch.GraphWidget(title="GPU and GPU memory utilization (%)", width=6, left=gpu),
        )
    )
    copies = [m.metric_copy_count(label=m.component_name) for m in endpoint.models]
    no_capacity = [m.metric_no_capacity_invocation_failures(label=m.component_name) for m in endpoint.models]
    section.add_widget(
        row(
            # One CPUUtilization sample per instance per minute: the sample count is the instance count.
            cloudwatch.GraphWidget(
                title="Instances",
                width=6,
                left=[
                    metrics.metric(
                        "CPUUtilization",
                        namespace="/aws/sagemaker/Endpoints",
                        statistic="SampleCount",
                        label="Instances (CPUUtilization samples per minute)",
                    ),
                ],
            ),
            cloudwatch.GraphWidget(title="Copies per model", width=6, left=copies or [placeholder()]),
            cloudwatch.GraphWidget(title="NoCapacityInvocationFailures", width=6, left=no_capacity or [placeholder()]),
            cloudwatch.AlarmStatusWidget(title="Endpoint alarms", width=6, height=6, alarms=alarms)
            if alarms
            else cloudwatch.TextWidget(markdown="No endpoint alarms (thresholds off).", width=6, height=6),
        )
    )


# -------------------------------------------------------------------- models
def model_rows(board: Board, model: ModelComponent, alarms: list[cloudwatch.Alarm]) -> None:
    """A model's header, its invocations, latency, GPU and copies graphs, and its alarms when it has any."""
    name = model.component_name
    copies = model.spec.copies
    section = board.sections["models"]
    section.add_widget(
        header(
            f"Model {name}",
            f"{model.spec.accelerators} accelerator(s) per copy, {copies.min_copies}-{copies.max_copies} copies.",
        )
    )
    section.add_widget(
        row(
            cloudwatch.GraphWidget(
                title=f"{name}: invocations and errors",
                width=6,
                left=[
                    model.metric_invocations(),
                    model.metric_invocation_4xx_errors(),
                    model.metric_invocation_5xx_errors(),
                ],
            ),
            cloudwatch.GraphWidget(
                title=f"{name}: model latency (µs)",
                width=6,
                left=[
                    model.metric_model_latency(statistic=s, label=f"ModelLatency {s}") for s in ("p50", "p90", "p99")
                ],
            ),
            cloudwatch.GraphWidget(
                title=f"{name}: GPU and GPU memory (%)",
                width=6,
                left=[
                    model.metric_gpu_utilization(),
                    model.metric_gpu_memory_utilization(),
                ],
            ),
            cloudwatch.GraphWidget(
                title=f"{name}: copies and no-capacity failures",
                width=6,
                left=[model.metric_copy_count()],
                right=[model.metric_no_capacity_invocation_failures()],
            ),
        )
    )
    if alarms:
        section.add_widget(cloudwatch.AlarmStatusWidget(title=f"{name}: alarms", alarms=alarms, width=24, height=2))


# ---------------------------------------------------------------- front door
def front_door_rows(board: Board, function: lambda_.IFunction, name: str, errors: cloudwatch.IMetric) -> None:
    """The front door's header and its requests, errors and duration graphs."""
    section = board.sections["front_door"]
    section.add_widget(header(f"Session front door {name}", "Lambda invocations, errors, throttles and duration."))
    section.add_widget(
        row(
            cloudwatch.GraphWidget(
                title=f"{name}: requests",
                width=8,
                left=[
                    function.metric_invocations(statistic="Sum", period=one_minute()),
                    function.metric_throttles(statistic="Sum", period=one_minute()),
                ],
            ),
            cloudwatch.GraphWidget(title=f"{name}: errors (5 min)", width=8, left=[errors]),
            cloudwatch.GraphWidget(
                title=f"{name}: duration",
                width=8,
                left=[function.metric_duration(statistic=s, period=one_minute(), label=s) for s in ("p50", "p99")],
            ),
        )
    )


def front_door_alarm_row(board: Board, name: str, alarm: cloudwatch.Alarm) -> None:
    board.sections["front_door"].add_widget(
        cloudwatch.AlarmStatusWidget(alarms=[alarm], title=f"{name}: alarms", width=24, height=2)
    )


# ------------------------------------------------------------- capacity plan
def capacity_plan_rows(
    board: Board, plan_name: str, days: cloudwatch.IMetric, *, alarm: cloudwatch.Alarm | None
) -> None:
    """A capacity plan's days left, as a number and a graph, and its expiry alarm when there is one."""
    section = board.sections["capacity_plan"]
    section.add_widget(
        header(
            f"Capacity plan {plan_name}",
            "Days left of the reserved capacity (published daily); no instances after it ends.",
        )
    )
    widgets: list[cloudwatch.IWidget] = [
        cloudwatch.SingleValueWidget(title=f"{plan_name}: days left", metrics=[days], width=6, height=4),
        cloudwatch.GraphWidget(title=f"{plan_name}: days left", left=[days], width=12, height=4),
    ]
    if alarm is not None:
        widgets.append(cloudwatch.AlarmStatusWidget(title=f"{plan_name}: alarm", alarms=[alarm], width=6, height=4))
    section.add_widget(row(*widgets))


# --------------------------------------------------------------------- EAGLE
def eagle_rows(board: Board, model_name: str, eagle_metric: Callable[[str, str, Duration], cloudwatch.Metric]) -> None:
    """The latest EAGLE speedup of ``model_name``, its speedup per run, its optimization jobs and the USD per
    million output tokens of the base model and the trained head per run (at the lowest-speedup concurrency)."""
    section = board.sections["eagle"]
    section.add_widget(
        header(
            f"EAGLE speculative decoding: {model_name}",
            "Throughput speedup of the trained draft head over the base model, per run.",
        )
    )
    section.add_widget(
        row(
            cloudwatch.SingleValueWidget(
                title=f"{model_name}: latest speedup",
                width=6,
                height=6,
                metrics=[eagle_metric("EagleSpeedup", "Maximum", Duration.days(7))],
            ),
            cloudwatch.GraphWidget(
                title=f"{model_name}: speedup per run (x)",
                width=10,
                height=6,
                left=[eagle_metric("EagleSpeedup", "Maximum", Duration.days(1))],
            ),
            cloudwatch.GraphWidget(
                title=f"{model_name}: optimization jobs",
                width=8,
                height=6,
                left=[
                    eagle_metric("EagleJobSucceeded", "Sum", Duration.days(1)),
                    eagle_metric("EagleJobFailed", "Sum", Duration.days(1)),
                ],
            ),
        )
    )
    section.add_widget(
        row(
            cloudwatch.GraphWidget(
                title=f"{model_name}: USD per million output tokens, base vs EAGLE",
                width=24,
                height=6,
                left=[
                    eagle_metric("EagleBaseUsdPerMillionOutputTokens", "Maximum", Duration.days(1)).with_(
                        label="base model (no EAGLE)"
                    ),
                    eagle_metric("EagleUsdPerMillionOutputTokens", "Maximum", Duration.days(1)).with_(
                        label="trained EAGLE head"
                    ),
                ],
                left_y_axis=cloudwatch.YAxisProps(label="USD / 1M output tokens", show_units=False, min=0),
            ),
        )
    )
