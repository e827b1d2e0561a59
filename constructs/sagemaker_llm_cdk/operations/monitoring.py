"""``LlmMonitoring``: one place for the dashboards, alarms and safe rollouts of LLM endpoints.

In the spirit of cdk-monitoring-constructs: the facade takes the shared defaults once (alarm
name prefix, the SNS topic, thresholds) and has one ``monitor_*`` method per resource kind.
Each endpoint gets its own CloudWatch dashboard; adapters, the session front door, capacity
plans and EAGLE runs add rows to the dashboard of the endpoint they belong to (or to a
shared ``Operations`` dashboard when none is given). The methods can be called in any order:
a dashboard's sections are laid out in a fixed order whatever order the rows arrive in.

Smallest use::

    monitoring = LlmMonitoring(self, "Monitoring")
    monitoring.monitor_endpoint(endpoint)   # after endpoint.add_model(...)

``monitor_endpoint`` also makes model updates safe: each model's inference component gets a
``DeploymentConfig`` that rolls a new model out copy by copy and rolls back automatically
when that model's latency or 5xx-rate alarm fires; the endpoint itself gets a blue/green
``DeploymentConfig`` with a baking period and the endpoint-level alarms (see ``RolloutSettings``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import jsii
from aws_cdk import Annotations, Aws, Duration, Names, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions

from constructs import Construct, IValidation

from ..core.errors import ConfigurationError, Problem
from ..core.functions import METRICS_NAMESPACE
from ..core.metrics import metric, one_minute
from ..core.settings import validated
from ..hosting.component_base import InferenceComponentConstruct

if TYPE_CHECKING:
    from ..core.protocols import ICapacityReservation
    from ..hosting.endpoint import LlmEndpoint
    from ..hosting.model_component import ModelComponent

from ..settings.operations import _PREFIX, _SUBJECT, MAX_ALARM_METRICS, MonitoringSettings

SECTIONS = ("endpoint", "models", "adapters", "front_door", "capacity_plan", "eagle")
"""Dashboard sections, top to bottom, whatever order the ``monitor_*`` calls come in."""
ADAPTERS_PER_GRAPH = 50
"""Adapter invocation lines per graph; more adapters get further graphs."""


class AdapterLike(Protocol):
    """What ``monitor_adapter`` needs from an adapter: its component name and invocation metric."""

    component_name: str

    def metric_invocations(self, **kwargs: Any) -> cloudwatch.IMetric: ...


@dataclass
class _Board:
    dashboard: cloudwatch.Dashboard
    sections: dict[str, cloudwatch.Column]
    adapter_graphs: list[cloudwatch.GraphWidget] = field(default_factory=list)
    adapter_count: int = 0


@dataclass
class _Monitored:
    endpoint: LlmEndpoint
    components: set[str]


@jsii.implements(IValidation)
class _AllModelsMonitored:
    """Fails the synth when a model was added to an endpoint after ``monitor_endpoint`` saw it."""

    def __init__(self, monitoring: LlmMonitoring) -> None:
        self._monitoring = monitoring

    def validate(self) -> list[str]:
        errors = []
        for watched in self._monitoring._monitored.values():
            missed = [m.component_name for m in watched.endpoint.models if m.component_name not in watched.components]
            if missed:
                errors.append(
                    f"{self._monitoring.node.path}: models {missed} were added to {watched.endpoint.node.path} after "
                    "monitor_endpoint ran, so they have no alarms, dashboard rows or rollback config; call "
                    "monitor_endpoint after the last add_model"
                )
        return errors


class LlmMonitoring(Construct):
    """Dashboards, alarms and safe rollouts for LLM endpoints, in one facade.

    Alarms have fixed names ``<alarm_prefix>-<subject>-<kind>`` (SageMaker's rollback
    configuration refers to alarms by name) and notify ``alarm_topic``, on alarm and on
    recovery. Escape hatches: ``alarm_topic``, ``alarms`` (by name), ``dashboards``
    (by endpoint construct path), ``overview_dashboard``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: MonitoringSettings | Mapping[str, Any] | None = None,
        alarm_topic: sns.ITopic | None = None,
        alarm_prefix: str | None = None,
    ) -> None:
        """
        :param settings: thresholds and rollout policy. Default: ``MonitoringSettings()``.
        :param alarm_topic: where every alarm notifies. If it is encrypted, its key must let
            ``cloudwatch.amazonaws.com`` use it. Default: a new topic encrypted with a new KMS key.
        :param alarm_prefix: first part of every alarm and dashboard name: letters, digits, '.', '_'
            and '-', up to 100 characters. Default: the stack name.
        """
        super().__init__(scope, id)
        self.settings = validated(MonitoringSettings, settings or MonitoringSettings(), where=self.node.path)
        prefix = alarm_prefix if alarm_prefix is not None else Stack.of(self).stack_name
        if not Token.is_unresolved(prefix) and not _PREFIX.match(prefix):
            raise ConfigurationError(
                [
                    Problem(
                        "alarm_prefix",
                        prefix,
                        "1-100 letters, digits, '.', '_' and '-', starting with a letter or digit",
                        "shorten it or replace other characters with '-'",
                    )
                ],
                source=self.node.path,
            )
        self.alarm_prefix = prefix
        if alarm_topic is None:
            from ..capacity.capacity_plan import encrypted_alarm_topic

            alarm_topic = encrypted_alarm_topic(self, "AlarmTopic", description=f"LLM endpoint alarms ({prefix})")
        self.alarm_topic: sns.ITopic = alarm_topic
        if self.settings.email is not None:
            self.alarm_topic.add_subscription(subscriptions.EmailSubscription(self.settings.email))
        self._action = cloudwatch_actions.SnsAction(self.alarm_topic)
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        self._boards: dict[str, _Board] = {}
        # The board of each endpoint object seen, so a repeat lookup makes no jsii round trip (node.path).
        self._board_of: dict[int, tuple[LlmEndpoint, _Board]] = {}
        self._monitored: dict[str, _Monitored] = {}
        self._overview: _Board | None = None
        self.node.add_validation(_AllModelsMonitored(self))

    # ------------------------------------------------------------- dashboards
    @property
    def dashboards(self) -> dict[str, cloudwatch.Dashboard]:
        """Each endpoint's dashboard, by the endpoint's construct path."""
        return {path: board.dashboard for path, board in self._boards.items()}

    @property
    def overview_dashboard(self) -> cloudwatch.Dashboard | None:
        """The dashboard of rows that belong to no endpoint, once one was added."""
        return self._overview.dashboard if self._overview else None

    def dashboard_for(self, endpoint: LlmEndpoint) -> cloudwatch.Dashboard:
        """The endpoint's dashboard (created empty on first use)."""
        return self._board(endpoint).dashboard

    # --------------------------------------------------------------- endpoint
    def monitor_endpoint(self, endpoint: LlmEndpoint) -> cloudwatch.Dashboard:
        """Dashboard rows, alarms and rollback config for ``endpoint`` and each of its models.

        Per model: p99-latency, 5xx-rate and GPU-saturation alarms, a no-capacity alarm when it
        can scale to zero, and ``cfn_inference_component.deployment_config`` with a rolling
        update policy whose auto rollback lists the model's latency and 5xx-rate alarms. Per
        endpoint: p99-latency and 5xx-rate alarms over its models' per-component metrics
        (an inference-component endpoint publishes invocation metrics per
        ``InferenceComponentName``, not per variant) and, unless ``rollout.endpoint_rollback``
        is off, the endpoint's blue/green ``DeploymentConfig`` rolling back on them. Call it
        after the endpoint's last ``add_model``.

        Rollback configurations name alarms literally. The alarms name only component names,
        which are fixed at synth, so every alarm exists before the component or endpoint whose
        rollback names it.
        """
        path = endpoint.node.path
        if path in self._monitored:
            raise ConfigurationError(
                [
                    Problem(
                        "endpoint", path, "an endpoint this facade does not monitor yet", "call monitor_endpoint once"
                    )
                ],
                source=self.node.path,
            )
        board = self._board(endpoint)
        subject = self._subject("endpoint", endpoint.node.id)
        self._monitored[path] = _Monitored(endpoint, {m.component_name for m in endpoint.models})
        endpoint_alarms = self._endpoint_alarms(endpoint, subject)
        self._endpoint_rows(board, endpoint, endpoint_alarms)
        for model in endpoint.models:
            self._monitor_model(board, model)
        if endpoint.capacity_plan is not None:
            # The plan alarms on its own expiry (CapacityPlan, to the topic it was given); the
            # dashboard shows its days left.
            self._capacity_plan_rows(
                board, endpoint.capacity_plan.plan_name, endpoint.capacity_plan.metric_days_left(), alarm=None
            )
        rollout = self.settings.rollout
        if rollout.enabled and rollout.endpoint_rollback:
            endpoint.configure_rollout(rollout, {self._name_of(a): a for a in endpoint_alarms})
        return board.dashboard

    def rollback_alarms(self, model: ModelComponent) -> list[cloudwatch.Alarm]:
        """The alarms a model's rollout watches (its p99-latency and 5xx-rate alarms, when on)."""
        names = [self._alarm_name(model.component_name, kind) for kind in ("p99-latency", "5xx-rate")]
        return [self.alarms[n] for n in names if n in self.alarms]

    # ---------------------------------------------------------------- adapters
    def monitor_adapter(self, adapter: AdapterLike, *, endpoint: LlmEndpoint | None = None) -> cloudwatch.GraphWidget:
        """Add the adapter's invocations to the adapter graph of ``endpoint``'s dashboard.

        :param adapter: anything with ``component_name`` and ``metric_invocations()``.
        :param endpoint: the endpoint the adapter runs on. Default: the overview dashboard.
        """
        return self.monitor_adapters([adapter], endpoint=endpoint)[0]

    def monitor_adapters(
        self, adapters: Sequence[AdapterLike], *, endpoint: LlmEndpoint | None = None
    ) -> list[cloudwatch.GraphWidget]:
        """``monitor_adapter`` for each of ``adapters``, in order: the same lines in the same graphs
        (``ADAPTERS_PER_GRAPH`` lines each), but a new graph gets its lines when it is created, one jsii call
        per graph instead of one per line.

        :return: the graph each adapter's line is in, in the order of ``adapters``.
        """
        if not adapters:
            return []
        board = self._board(endpoint)
        metrics = [self._adapter_metric(adapter) for adapter in adapters]
        graphs: list[cloudwatch.GraphWidget] = []
        room = ADAPTERS_PER_GRAPH - board.adapter_count % ADAPTERS_PER_GRAPH if board.adapter_graphs else 0
        if room == ADAPTERS_PER_GRAPH:
            room = 0  # the last graph is full
        for line in metrics[:room]:  # the room left in the last graph, line by line
            board.adapter_graphs[-1].add_left_metric(line)
            graphs.append(board.adapter_graphs[-1])
        for first in range(len(graphs), len(metrics), ADAPTERS_PER_GRAPH):
            left = metrics[first : first + ADAPTERS_PER_GRAPH]
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
                board.sections["adapters"].add_widget(
                    _header("LoRA adapters", "Invocations per adapter (sum per minute).")
                )
            board.adapter_graphs.append(graph)
            board.sections["adapters"].add_widget(graph)
            graphs += [graph] * len(left)
        board.adapter_count += len(metrics)
        return graphs

    @staticmethod
    def _adapter_metric(adapter: AdapterLike) -> cloudwatch.IMetric:
        name = adapter.component_name
        if isinstance(adapter, InferenceComponentConstruct):
            # The same metric as metric_invocations().with_(label=name), in one jsii call instead of two.
            return adapter.metric_invocations(label=name)
        metric = adapter.metric_invocations()
        if isinstance(metric, cloudwatch.Metric):
            metric = metric.with_(label=name)
        return metric

    # -------------------------------------------------------------- front door
    def monitor_front_door(
        self,
        function: lambda_.IFunction,
        name: str,
        *,
        endpoint: LlmEndpoint | None = None,
        extra_error_metrics: Sequence[cloudwatch.IMetric] = (),
    ) -> cloudwatch.Alarm | None:
        """Rows for the session front door's function, and an alarm on its errors.

        :param function: the front door's Lambda function.
        :param name: short name for titles and the alarm name (letters, digits, '.', '_', '-').
        :param endpoint: the endpoint it fronts. Default: the overview dashboard.
        :param extra_error_metrics: counts added to the function's own Errors, e.g. the 5xx
            responses the handler returns itself. Default: none.
        :returns: the errors alarm, or None when ``front_door_errors`` is off.
        """
        subject = self._subject("name", name)
        board = self._board(endpoint)
        errors: cloudwatch.IMetric = function.metric_errors(statistic="Sum", period=Duration.minutes(5))
        if extra_error_metrics:
            using = {"m0": errors, **{f"m{i + 1}": m for i, m in enumerate(extra_error_metrics)}}
            errors = cloudwatch.MathExpression(
                expression="+".join(f"FILL({k}, 0)" for k in using),
                using_metrics=using,
                label="Errors",
                period=Duration.minutes(5),
            )
        section = board.sections["front_door"]
        section.add_widget(_header(f"Session front door {name}", "Lambda invocations, errors, throttles and duration."))
        section.add_widget(
            _row(
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
        threshold = self.settings.front_door_errors
        if threshold is None:
            return None
        alarm = self._alarm(
            ("FrontDoor", subject),
            subject,
            "front-door-errors",
            description=(
                f"Session front door {name} had at least {threshold} errors in 5 minutes; see its log group "
                "and the endpoint's 4xx/5xx."
            ),
            metric=errors,
            threshold=threshold,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            periods=1,
        )
        section.add_widget(cloudwatch.AlarmStatusWidget(alarms=[alarm], title=f"{name}: alarms", width=24, height=2))
        return alarm

    # ----------------------------------------------------------- capacity plan
    def monitor_capacity_plan(
        self,
        plan: str | ICapacityReservation,
        warning_days: int | None = None,
        *,
        endpoint: LlmEndpoint | None = None,
        namespace: str = METRICS_NAMESPACE,
    ) -> cloudwatch.Alarm | None:
        """Days left of a capacity plan (``CapacityPlanDaysLeft``, published daily) and an expiry alarm.

        ``CapacityPlan`` alarms on its own expiry already (pass it this facade's
        ``alarm_topic``); use this for plans declared elsewhere, or to set another threshold.

        :param plan: the plan (its ``metric_days_left``), or the name of a plan whose check publishes in ``namespace``.
        :param warning_days: alarm below this many days. Default: ``capacity_plan_warning_days``.
        :returns: the alarm, or None when both are off.
        """
        plan_name = plan if isinstance(plan, str) else plan.plan_name
        days_left = _days_left(plan, namespace) if isinstance(plan, str) else plan.metric_days_left()
        subject = self._subject("plan_name", plan_name)
        board = self._board(endpoint)
        days = warning_days if warning_days is not None else self.settings.capacity_plan_warning_days
        alarm = None
        if days is not None:
            alarm = self._alarm(
                ("CapacityPlan", subject),
                subject,
                "capacity-plan-expiring",
                description=(
                    f"Capacity plan {plan_name} has fewer than {days} days left; its endpoint gets no instances "
                    "after it ends. Reserve the next plan now."
                ),
                metric=days_left,
                threshold=days,
                comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                periods=1,
            )
        self._capacity_plan_rows(board, plan_name, days_left, alarm=alarm)
        return alarm

    # ------------------------------------------------------------------- EAGLE
    def monitor_eagle(
        self,
        model_name: str,
        namespace: str = METRICS_NAMESPACE,
        *,
        endpoint: LlmEndpoint | None = None,
        extra_dimensions: Mapping[str, str] | None = None,
    ) -> cloudwatch.Alarm | None:
        """EAGLE speedup of the latest optimization runs of ``model_name``, and an alarm when a job fails.

        Reads ``EagleSpeedup`` (maximum per day), ``EagleJobSucceeded`` and ``EagleJobFailed``
        with dimension ``ModelName`` (plus ``extra_dimensions``, e.g. Powertools' ``service``
        when the publisher keeps it). Alarm: ``EagleJobFailed`` sum >= 1 in an hour.
        """
        subject = self._subject("model_name", model_name)
        board = self._board(endpoint)
        dimensions = {"ModelName": model_name, **(extra_dimensions or {})}

        def eagle_metric(name: str, statistic: str, period: Duration) -> cloudwatch.Metric:
            return metric(namespace, name, dimensions, statistic=statistic, period=period)

        section = board.sections["eagle"]
        section.add_widget(
            _header(
                f"EAGLE speculative decoding: {model_name}",
                "Throughput speedup of the trained draft head over the base model, per run.",
            )
        )
        section.add_widget(
            _row(
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
        if not self.settings.eagle_job_failed:
            return None
        return self._alarm(
            ("Eagle", subject),
            subject,
            "eagle-job-failed",
            description=(
                f"An EAGLE optimization job for {model_name} failed; the served draft head was not changed. "
                "See the job's FailureReason and the run record."
            ),
            metric=eagle_metric("EagleJobFailed", "Sum", Duration.hours(1)),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            periods=1,
        )

    # =============================================================== internals
    def _board(self, endpoint: LlmEndpoint | None) -> _Board:
        if endpoint is None:
            if self._overview is None:
                self._overview = self._new_board("Operations", "operations")
            return self._overview
        known = self._board_of.get(id(endpoint))
        if known is not None and known[0] is endpoint:
            return known[1]
        path = endpoint.node.path
        if path not in self._boards:
            self._boards[path] = self._new_board(f"Dashboard{Names.unique_id(endpoint)}", endpoint.node.id)
        self._board_of[id(endpoint)] = (endpoint, self._boards[path])
        return self._boards[path]

    def _new_board(self, id: str, label: str) -> _Board:
        name = (
            re.sub(r"[^A-Za-z0-9_-]", "-", f"{self.alarm_prefix}-{label}")
            if not Token.is_unresolved(self.alarm_prefix)
            else None
        )
        dashboard = cloudwatch.Dashboard(
            self,
            id,
            dashboard_name=f"{name[:200]}-{Aws.REGION}" if name else None,
            default_interval=Duration.hours(6),
        )
        sections = {section: cloudwatch.Column() for section in SECTIONS}
        for column in sections.values():
            dashboard.add_widgets(cast(cloudwatch.IWidget, column))
        return _Board(dashboard, sections)

    def _subject(self, field: str, value: str) -> str:
        if Token.is_unresolved(value) or not _SUBJECT.match(value):
            raise ConfigurationError(
                [
                    Problem(
                        field,
                        value,
                        "1-63 letters, digits, '.', '_' and '-' known at synth (it names alarms)",
                        "pass a plain name",
                    )
                ],
                source=self.node.path,
            )
        return value

    def _alarm_name(self, subject: str, kind: str) -> str:
        return f"{self.alarm_prefix}-{subject}-{kind}"

    def _alarm(
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
        name = self._alarm_name(subject, kind)
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
                source=self.node.path,
            )
        group, key = where
        scope = cast(Construct, self.node.try_find_child(group) or Construct(self, group))
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

    # ---------------------------------------------------------- endpoint rows
    def _endpoint_alarms(self, endpoint: LlmEndpoint, subject: str) -> list[cloudwatch.Alarm]:
        """p99-latency and 5xx-rate alarms of the endpoint, from its models' own metrics.

        An inference-component endpoint publishes its invocation metrics per component
        (dimension ``InferenceComponentName``), not per variant: alarms on
        ``EndpointName``/``VariantName`` would never see a bad rollout. So the endpoint's
        latency is the highest p99 of its models and its 5xx rate is the models' errors over
        their invocations. A CloudWatch alarm reads at most 10 metrics, so these alarms watch
        the first 10 models (latency) and the first 5 (error rate); synth warns beyond that.
        """
        settings = self.settings
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
                self._alarm(
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
                self._alarm(
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

    def _endpoint_rows(self, board: _Board, endpoint: LlmEndpoint, alarms: list[cloudwatch.Alarm]) -> None:
        metrics = _EndpointMetrics(endpoint)
        options = endpoint.options
        section = board.sections["endpoint"]
        section.add_widget(
            _header(
                f"Endpoint {endpoint.node.path}",
                f"{options.instance_type}, {options.scaling.min_instances}-{options.scaling.max_instances} instances, "
                f"models: {', '.join(m.component_name for m in endpoint.models) or 'none'}. Latency in microseconds.",
            )
        )
        # Invocation metrics of an inference-component endpoint are per component: sum them.
        models = list(endpoint.models)
        traffic: list[cloudwatch.IMetric] = (
            [_sum_of(models, name) for name in ("Invocations", "Invocation4XXErrors", "Invocation5XXErrors")]
            if models
            else [_placeholder()]
        )
        latency: list[cloudwatch.IMetric] = [
            m.metric_model_latency(statistic="p99", label=f"{m.component_name} p99") for m in models
        ] or [_placeholder()]
        overhead = [
            metrics.metric("OverheadLatency", statistic=s, label=f"OverheadLatency {s}") for s in ("p50", "p99")
        ]
        gpu = [
            metrics.metric("GPUUtilization", namespace="/aws/sagemaker/Endpoints", statistic="Average"),
            metrics.metric("GPUMemoryUtilization", namespace="/aws/sagemaker/Endpoints", statistic="Average"),
        ]
        section.add_widget(
            _row(
                cloudwatch.GraphWidget(title="Invocations and errors", width=6, left=traffic),
                cloudwatch.GraphWidget(title="Model latency p99 per model (µs)", width=6, left=latency),
                cloudwatch.GraphWidget(title="Overhead latency (µs)", width=6, left=overhead),
                cloudwatch.GraphWidget(title="GPU and GPU memory utilization (%)", width=6, left=gpu),
            )
        )
        copies = [m.metric_copy_count(label=m.component_name) for m in endpoint.models]
        no_capacity = [m.metric_no_capacity_invocation_failures(label=m.component_name) for m in endpoint.models]
        section.add_widget(
            _row(
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
                cloudwatch.GraphWidget(title="Copies per model", width=6, left=copies or [_placeholder()]),
                cloudwatch.GraphWidget(
                    title="NoCapacityInvocationFailures", width=6, left=no_capacity or [_placeholder()]
                ),
                cloudwatch.AlarmStatusWidget(title="Endpoint alarms", width=6, height=6, alarms=alarms)
                if alarms
                else cloudwatch.TextWidget(markdown="No endpoint alarms (thresholds off).", width=6, height=6),
            )
        )

    # ------------------------------------------------------------- model rows
    def _monitor_model(self, board: _Board, model: ModelComponent) -> None:
        settings = self.settings
        subject = self._subject("component_name", model.component_name)
        where = ("Models", subject)
        alarms: list[cloudwatch.Alarm] = []
        if settings.p99_latency_seconds is not None:
            alarms.append(
                self._alarm(
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
                self._alarm(
                    where,
                    subject,
                    "5xx-rate",
                    description=(
                        f"More than {settings.error_rate_percent}% of requests to {subject} failed with 5xx for "
                        f"{settings.error_rate_minutes} minutes. Rolls back a model update."
                    ),
                    metric=_error_rate(
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
                self._alarm(
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
                self._alarm(
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
        model.configure_rollout(
            settings.rollout if settings.rollout.enabled else None,
            {self._name_of(a): a for a in rollback},
            watched=alarms,
        )
        self._model_rows(board, model, alarms)

    def _model_rows(self, board: _Board, model: ModelComponent, alarms: list[cloudwatch.Alarm]) -> None:
        name = model.component_name
        copies = model.spec.copies
        section = board.sections["models"]
        section.add_widget(
            _header(
                f"Model {name}",
                f"{model.spec.accelerators} accelerator(s) per copy, {copies.min_copies}-{copies.max_copies} copies.",
            )
        )
        section.add_widget(
            _row(
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
                        model.metric_model_latency(statistic=s, label=f"ModelLatency {s}")
                        for s in ("p50", "p90", "p99")
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

    # ---------------------------------------------------------- capacity rows
    def _capacity_plan_rows(
        self, board: _Board, plan_name: str, days: cloudwatch.IMetric, *, alarm: cloudwatch.Alarm | None
    ) -> None:
        section = board.sections["capacity_plan"]
        section.add_widget(
            _header(
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
        section.add_widget(_row(*widgets))

    def _name_of(self, alarm: cloudwatch.Alarm) -> str:
        """The literal name an alarm was created with (never a reference: see ``_endpoint_alarms``)."""
        return next(name for name, known in self.alarms.items() if known is alarm)


class _EndpointMetrics:
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


def _sum_of(models: Sequence[InferenceComponentConstruct], metric_name: str) -> cloudwatch.MathExpression:
    """``metric_name`` (a per-component Sum metric) added up over ``models``."""
    prefix = re.sub(r"[^a-z0-9]", "", metric_name.lower())  # ids unique among the graph's expressions
    using = {f"{prefix}{i}": m.metric(metric_name) for i, m in enumerate(models)}
    return cloudwatch.MathExpression(
        expression=" + ".join(f"FILL({k}, 0)" for k in using),
        using_metrics=using,
        label=f"{metric_name} (all models)",
        period=one_minute(),
    )


def _error_rate(
    errors: cloudwatch.IMetric, invocations: cloudwatch.IMetric, min_requests: int
) -> cloudwatch.MathExpression:
    """5xx share of invocations in percent; 0 in minutes with fewer than ``min_requests`` invocations."""
    return cloudwatch.MathExpression(
        expression=f"IF(inv >= {min_requests}, 100 * FILL(err, 0) / inv, 0)",
        using_metrics={"err": errors, "inv": invocations},
        label="5xx rate (%)",
        period=one_minute(),
    )


def _days_left(plan_name: str, namespace: str) -> cloudwatch.Metric:
    """``CapacityPlanDaysLeft`` of a plan known only by name (``CapacityPlan.metric_days_left`` for one of ours)."""
    return metric(
        namespace, "CapacityPlanDaysLeft", {"TrainingPlanName": plan_name}, statistic="Minimum", period=Duration.days(1)
    )


def _row(*widgets: cloudwatch.IWidget) -> cloudwatch.IWidget:
    """A dashboard row (a ``Row`` is a widget; its type stubs do not say so)."""
    return cast(cloudwatch.IWidget, cloudwatch.Row(*widgets))


def _header(title: str, text: str) -> cloudwatch.TextWidget:
    return cloudwatch.TextWidget(markdown=f"## {title}\n{text}", width=24, height=2)


def _placeholder() -> cloudwatch.MathExpression:
    return cloudwatch.MathExpression(expression="TIME_SERIES(0)", label="no models", period=one_minute())
