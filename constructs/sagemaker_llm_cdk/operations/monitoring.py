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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import jsii
from aws_cdk import Duration, Names, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions

from constructs import Construct, IValidation

from ..core.errors import ConfigurationError, Problem
from ..core.functions import METRICS_NAMESPACE
from ..core.settings import validated
from ..hosting.component_base import InferenceComponentConstruct
from ..settings.operations import _PREFIX, _SUBJECT, MonitoringSettings
from . import dashboard, monitoring_metrics
from .dashboard import ADAPTERS_PER_GRAPH as ADAPTERS_PER_GRAPH
from .dashboard import SECTIONS as SECTIONS
from .dashboard import Board
from .monitoring_alarms import AlarmBook, endpoint_alarms, model_alarms
from .monitoring_metrics import endpoint_error_rate as endpoint_error_rate
from .monitoring_metrics import endpoint_latency as endpoint_latency

if TYPE_CHECKING:
    from ..core.protocols import ICapacityReservation
    from ..hosting.endpoint import LlmEndpoint
    from ..hosting.model_component import ModelComponent


class AdapterLike(Protocol):
    """What ``monitor_adapter`` needs from an adapter: its component name and invocation metric."""

    component_name: str

    def metric_invocations(self, **kwargs: Any) -> cloudwatch.IMetric: ...


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
        self._alarm_book = AlarmBook(self, prefix, cloudwatch_actions.SnsAction(self.alarm_topic))
        self.alarms: dict[str, cloudwatch.Alarm] = self._alarm_book.alarms
        self._boards: dict[str, Board] = {}
        # The board of each endpoint object seen, so a repeat lookup makes no jsii round trip (node.path).
        self._board_of: dict[int, tuple[LlmEndpoint, Board]] = {}
        self._monitored: dict[str, _Monitored] = {}
        self._overview: Board | None = None
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
        alarms = endpoint_alarms(self._alarm_book, self.settings, endpoint, subject)
        dashboard.endpoint_rows(board, endpoint, alarms)
        for model in endpoint.models:
            self._monitor_model(board, model)
        if endpoint.capacity_plan is not None:
            # The plan alarms on its own expiry (CapacityPlan, to the topic it was given); the
            # dashboard shows its days left.
            dashboard.capacity_plan_rows(
                board, endpoint.capacity_plan.plan_name, endpoint.capacity_plan.metric_days_left(), alarm=None
            )
        rollout = self.settings.rollout
        if rollout.enabled and rollout.endpoint_rollback:
            endpoint.configure_rollout(rollout, {self._alarm_book.name_of(a): a for a in alarms})
        return board.dashboard

    def rollback_alarms(self, model: ModelComponent) -> list[cloudwatch.Alarm]:
        """The alarms a model's rollout watches (its p99-latency and 5xx-rate alarms, when on)."""
        names = [self._alarm_book.name(model.component_name, kind) for kind in ("p99-latency", "5xx-rate")]
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
        return dashboard.add_adapter_lines(board, [self._adapter_metric(adapter) for adapter in adapters])

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
        errors = monitoring_metrics.front_door_errors(function, extra_error_metrics)
        dashboard.front_door_rows(board, function, name, errors)
        threshold = self.settings.front_door_errors
        if threshold is None:
            return None
        alarm = self._alarm_book.alarm(
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
        dashboard.front_door_alarm_row(board, name, alarm)
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
        days_left = monitoring_metrics.days_left(plan, namespace) if isinstance(plan, str) else plan.metric_days_left()
        subject = self._subject("plan_name", plan_name)
        board = self._board(endpoint)
        days = warning_days if warning_days is not None else self.settings.capacity_plan_warning_days
        alarm = None
        if days is not None:
            alarm = self._alarm_book.alarm(
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
        dashboard.capacity_plan_rows(board, plan_name, days_left, alarm=alarm)
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
            return monitoring_metrics.eagle_metric(namespace, dimensions, name, statistic, period)

        dashboard.eagle_rows(board, model_name, eagle_metric)
        if not self.settings.eagle_job_failed:
            return None
        return self._alarm_book.alarm(
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
    def _board(self, endpoint: LlmEndpoint | None) -> Board:
        if endpoint is None:
            if self._overview is None:
                self._overview = dashboard.new_board(self, "Operations", "operations", self.alarm_prefix)
            return self._overview
        known = self._board_of.get(id(endpoint))
        if known is not None and known[0] is endpoint:
            return known[1]
        path = endpoint.node.path
        if path not in self._boards:
            self._boards[path] = dashboard.new_board(
                self, f"Dashboard{Names.unique_id(endpoint)}", endpoint.node.id, self.alarm_prefix
            )
        self._board_of[id(endpoint)] = (endpoint, self._boards[path])
        return self._boards[path]

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

    # ------------------------------------------------------------- model rows
    def _monitor_model(self, board: Board, model: ModelComponent) -> None:
        settings = self.settings
        subject = self._subject("component_name", model.component_name)
        alarms, rollback = model_alarms(self._alarm_book, settings, model, subject)
        model.configure_rollout(
            settings.rollout if settings.rollout.enabled else None,
            {self._alarm_book.name_of(a): a for a in rollback},
            watched=alarms,
        )
        dashboard.model_rows(board, model, alarms)
