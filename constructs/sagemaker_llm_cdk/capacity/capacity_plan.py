"""``CapacityPlan``: reserved GPU capacity for one endpoint (a SageMaker training plan), bought once or imported.

A capacity plan is paid upfront and never refunded, so this module is careful in four ways:

* The price cap (``max_upfront_fee_usd``) is in the declaration; the consent is not. It is
  given on the deploy command, ``cdk deploy -c purchase=<plan-name>`` (``-c extend=<plan-name>``
  for an extension), so a config that is copied or committed never buys by itself. The same key
  in ``cdk.json``, ``cdk.context.json`` or ``~/.cdk.json``, which the CDK CLI merges into the
  context of every deploy, consents to nothing and fails the synth (``consent_problems``).
  Without the consent the template holds no resource that can spend: the purchase handler's role
  may only describe the plan, and the handler adopts a plan of that name if it exists or fails
  the deploy saying what would be bought (``purchase_summary``) and how to consent.
  ``purchase_acknowledged`` in a declaration is refused with a migration message.
* The purchase is a custom resource that buys at most once per plan name, refuses changes to
  what was bought, and is retained (DeletionPolicy and UpdateReplacePolicy ``Retain``) when it
  leaves the template or the stack is deleted. An extension (``ExtendTrainingPlan``) is bought
  at most once per target end date.
* A plan to buy is named ``<stack name>-<name>`` (``CapacityPlan.plan_name``; the stack is
  ``name_prefix``, e.g. the serving stack, or the plan's own), so two stacks of one config in
  one account and region never adopt each other's plan; ``physical_name`` pins an exact name
  (a plan bought before this rule). The consent and the config keep ``name``
  (``CapacityPlan.config_name``). An existing plan is used by the exact name given.
* An endpoint binds a plan only through ``CapacityPlanGuard`` (see ``capacity_guard``), which
  checks at deploy time that the plan is Active before the endpoint config is created.
* A daily check publishes the days the plan has left; an alarm warns ``expiry_warning_days``
  ahead of the end, another when the check itself fails, both to a KMS-encrypted SNS topic.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from aws_cdk import CfnOutput, CustomResource, Duration, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import custom_resources as cr

from constructs import Construct, IConstruct

from ..core.errors import MISSING, ConfigurationError, Problem, keyword_problems
from ..core.functions import METRICS_NAMESPACE
from ..core.metrics import metric
from ..core.naming import stack_prefix
from ..core.protocols import IEndpoint
from ..core.run_time_state import RunTimeParameter
from ..core.settings import validated
from ..settings.capacity import (
    EXTEND_CONTEXT,
    PURCHASE_CONTEXT,
    CapacityPlanSpec,
    _iso,
    spec_binding_problems,
    unknown_consent_problems,
)
from ..settings.capacity import choose_update_policy as choose_update_policy
from ..settings.hosting import EndpointOptions
from .consent import CONTEXT_FILES as CONTEXT_FILES
from .consent import FileConsent as FileConsent
from .consent import _NoConsentInFiles, consented_plans, file_consents
from .expiry import DAYS_LEFT_METRIC, PLAN_NAME_DIMENSION, add_expiry_check, encrypted_alarm_topic
from .guard import STATUS_PARAMETER_PREFIX as STATUS_PARAMETER_PREFIX
from .guard import CapacityPlanGuard, status_parameter_name
from .purchase import APPROVED as APPROVED
from .purchase import EXTENSION_RESOURCE_TYPE as EXTENSION_RESOURCE_TYPE
from .purchase import NOT_APPROVED as NOT_APPROVED
from .purchase import RESOURCE_TYPE as RESOURCE_TYPE
from .purchase import SPENDING_ACTIONS as SPENDING_ACTIONS
from .purchase import acknowledge_provider, announce, extend, reserve
from .purchase import reserved_capacity_arns as reserved_capacity_arns

if TYPE_CHECKING:
    from ..hosting.endpoint import LlmEndpoint

__all__ = [
    "APPROVED",
    "CONTEXT_FILES",
    "DAYS_LEFT_METRIC",
    "EXTENSION_RESOURCE_TYPE",
    "NOT_APPROVED",
    "PLAN_NAME_DIMENSION",
    "RESOURCE_TYPE",
    "SPENDING_ACTIONS",
    "STATUS_PARAMETER_PREFIX",
    "CapacityPlan",
    "FileConsent",
    "choose_update_policy",
    "consent_problems",
    "consented_plans",
    "encrypted_alarm_topic",
    "file_consents",
    "headroom_metadata",
    "reserved_capacity_arns",
]


def consent_problems(root: IConstruct) -> list[Problem]:
    """What keeps ``-c purchase=`` / ``-c extend=`` from being the deploy command's consent, and only that.

    * ``purchase`` or ``extend`` in ``cdk.json``, ``cdk.context.json`` or ``~/.cdk.json``
      (``file_consents``): a consent in a file would be given again by every deploy, so it is refused
      wherever it is found, even next to the same ``-c``; the problem names the file, key and value.
    * A name that matches no plan that could be bought or extended: a typo must not look like
      consent that silently did nothing.
    """
    problems = [found.problem() for found in file_consents()]
    plans = _plans_in(root)
    problems.extend(
        unknown_consent_problems(
            {key: consented_plans(root, key) for key in (PURCHASE_CONTEXT, EXTEND_CONTEXT)},
            reservable=[p.config_name for p in plans if p.mode == "reserve"],
            extendable=[p.config_name for p in plans if p.spec.extension is not None],
        )
    )
    return problems


PLAN_ARGUMENTS = ("settings", "alarm_topic", "name_prefix")
"""The keywords ``CapacityPlan`` takes."""


class CapacityPlan(Construct):
    """Reserved capacity (a SageMaker training plan targeting endpoints) for one ``LlmEndpoint``.

    Two modes, chosen by ``spec`` (see ``CapacityPlanSpec``):

    * **reserve**: a custom resource (``Custom::SageMakerCapacityPlan``, child ``Resource``)
      searches the offerings and buys the cheapest one within ``max_upfront_fee_usd`` and the
      window as ``plan_name`` (``<name_prefix or stack name>-<spec.name>``, or ``spec.physical_name``),
      once, and only when the synth carries ``-c purchase=<spec.name>`` (``purchase_approved``);
      without it the handler may only describe the plan: it adopts a plan of that name or fails
      the deploy saying how to consent. An update that changes only the price cap or the consent is a no-op;
      one that changes what was bought fails and changes nothing. The resource is retained when
      removed or when the stack is deleted (the plan is prepaid and not refundable). Outputs:
      the plan ARN, end time, upfront fee and a retention notice.
    * **existing**: a plan you already have, by ARN or name; nothing is bought. Its instance
      type and count are declared so the endpoint binding can be checked at synth.

    Both modes add a daily check (EventBridge rule -> Lambda) that publishes
    ``CapacityPlanDaysLeft`` and two alarms to ``alarm_topic``: days left below
    ``expiry_warning_days`` (minimum over one day), and the check function failing on a day.
    Missing data is not treated as breaching: a brand-new alarm has no data until the first
    daily run, and CloudWatch's handling of missing one-day periods is not predictable, so a
    failed check is caught by the second alarm instead.

    Bind with ``LlmEndpoint(..., capacity_plan=plan)``, best from another stack deployed after
    this one (no export is made: the endpoint names the plan): the endpoint gets a
    ``CapacityPlanGuard`` that checks at deploy time that the plan is Active, and its variant gets
    ``CapacityReservationConfig`` with ``capacity-reservations-only`` and the ARN the guard
    returns (``when_not_active`` decides what happens while the plan is not Active). The synth
    fails unless the endpoint uses the plan's instance type, needs at most the plan's instance
    count, and no other endpoint in the app uses the plan. ``extension`` renews the plan
    (``Extension`` child, ``-c extend=<name>``); ``status_parameter`` (``when_not_active:
    on_demand``) holds the status the daily check last saw.

    Escape hatches: ``custom_resource``, ``provider``, ``provider_role``, ``on_event_function`` (reserve mode),
    ``expiry_function``, ``expiry_rule``, ``expiry_alarm``, ``check_failed_alarm``, ``alarm_topic``.
    """

    # The daily check and its alarms, set by ``expiry.add_expiry_check``.
    expiry_function: lambda_.Function
    expiry_rule: events.Rule
    expiry_alarm: cloudwatch.Alarm
    check_failed_alarm: cloudwatch.Alarm
    # The handler's shared grants already added (``purchase.grant_spending``), set by ``purchase.reserve``/``extend``.
    _granted: set[str]

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: CapacityPlanSpec | Mapping[str, Any] | None = None,
        alarm_topic: sns.ITopic | None = None,
        name_prefix: str | None = None,
        **unknown: Any,
    ) -> None:
        """
        :param settings: the plan to reserve or use (``CapacityPlanSpec``, or a mapping of its fields, as a
            config's ``capacity_plans`` item is).
        :param name_prefix: what a plan to reserve is named after, ``<name_prefix>-<spec.name>``
            (unless ``spec.physical_name`` pins the name), e.g. the name of the stack that serves on
            the plan when the plan lives in a companion stack. Default: the name of the (top-level)
            stack this plan is in. Not used for an existing plan.
        :param alarm_topic: where the expiry and check-failure alarms notify. If it is encrypted,
            its key must let ``cloudwatch.amazonaws.com`` use it. Default: a new KMS-encrypted
            topic for this plan (its key is retained with the stack's other keys); pass one topic
            (``encrypted_alarm_topic``) to share it between plans.
        """
        where = f"{scope.node.path}/{id}"
        problems = keyword_problems(unknown, takes=PLAN_ARGUMENTS, renamed={"spec": ("settings", "CapacityPlanSpec")})
        if settings is None and not problems:
            problems.append(
                Problem(
                    "settings",
                    MISSING,
                    "the plan's settings (CapacityPlanSpec: a plan to reserve, or an existing plan's ARN)",
                    'pass settings=CapacityPlanSpec(mode="existing", name=..., instance_type=..., instance_count=...)',
                )
            )
        if problems or settings is None:
            raise ConfigurationError(problems, source=where)
        super().__init__(scope, id)
        spec = validated(CapacityPlanSpec, settings, where=self.node.path)
        self.spec = spec
        self.config_name = spec.plan_name
        """The plan's name in the config (``spec.name``): what ``-c purchase=`` / ``-c extend=`` name."""
        if spec.effective_mode == "reserve" and spec.physical_name is None:
            prefix = (
                name_prefix
                if name_prefix is not None
                else stack_prefix(
                    self,
                    field="name",
                    what="the capacity plan's name",
                    pin="pin the plan's name with physical_name (or pass name_prefix)",
                )
            )
            self.plan_name = spec.physical_plan_name(prefix)
        else:
            self.plan_name = spec.physical_plan_name("")
        """The plan's TrainingPlanName (what SageMaker, its ARN, the status parameter and the metrics use):
        ``<name_prefix or stack name>-<spec.name>`` for a plan to reserve unless ``spec.physical_name``
        pins it; an existing plan's name as given."""
        self.instance_type = spec.instance_type
        self.instance_count = spec.instance_count
        self.mode = spec.effective_mode
        stack = Stack.of(self)
        if spec.arn_parts is not None:
            self._region, self._account = spec.arn_parts
        else:
            self._region, self._account = stack.region, stack.account

        problems = self._placement_problems(stack)
        if problems:
            raise ConfigurationError(problems, source=self.node.path)

        self.custom_resource: CustomResource | None = None
        self.extension_resource: CustomResource | None = None
        self.provider: cr.Provider | None = None
        self.on_event_function: lambda_.Function | None = None
        self.provider_role: iam.Role | None = None
        self.start_time: str | None = None
        self.end_time: str | None = None
        self.upfront_fee: str | None = None
        self.currency_code: str | None = None
        self.purchase_approved = self.mode == "reserve" and self.config_name in consented_plans(self, PURCHASE_CONTEXT)
        """Whether this synth carries ``-c purchase=<name>``: only then may the purchase handler spend."""
        self.extension_approved = spec.extension is not None and self.config_name in consented_plans(
            self, EXTEND_CONTEXT
        )
        """Whether this synth carries ``-c extend=<name>``: only then may the extension be bought."""
        in_files = file_consents()
        if in_files:
            self.node.add_validation(_NoConsentInFiles(in_files))
        self.binding_arn: str = spec.existing_plan_arn or self._named_arn(stack, self.plan_name)
        """The plan's ARN as known at synth (no token), for guards and bindings in other stacks."""
        if self.mode == "reserve":
            self.plan_arn = reserve(self, stack)
        elif spec.existing_plan_arn is not None:
            self.plan_arn = spec.existing_plan_arn
        else:
            self.plan_arn = self._named_arn(stack, self.plan_name)
        if spec.extension is not None:
            extend(self, stack)

        self.status_parameter: RunTimeParameter | None = None
        """``when_not_active: on_demand``: the plan's status, read from SageMaker when this stack deploys and daily
        by the plan's check; no deploy resets it (``core.run_time_state``)."""
        if spec.when_not_active == "on_demand":
            self.status_parameter = RunTimeParameter(
                self,
                "Status",
                parameter_name=status_parameter_name(self.plan_name),
                initial_value="Unknown",
                plan_name=self.plan_name,
                plan_arns=self._described_arns(stack),
                description=f"Status of capacity plan {self.plan_name} (read at deploy and by its daily check); "
                "endpoints with when_not_active on_demand bind the plan only while it is Active",
            )
        self.alarm_topic: sns.ITopic = alarm_topic or encrypted_alarm_topic(
            self, "AlarmTopic", description=f"capacity plan {self.plan_name} alarms"
        )
        add_expiry_check(self)
        CfnOutput(self, "Arn", value=self.plan_arn, description=f"ARN of capacity plan {self.plan_name}")
        announce(self)
        acknowledge_provider(self)

    # ---------------------------------------------------------------- imports
    @classmethod
    def from_plan_arn(
        cls,
        scope: Construct,
        id: str,
        *,
        plan_arn: str,
        instance_type: str,
        instance_count: int,
        expiry_warning_days: int = 7,
        alarm_topic: sns.ITopic | None = None,
    ) -> CapacityPlan:
        """Use an existing plan (nothing is bought); its instance type and count make the binding checkable."""
        return cls(
            scope,
            id,
            alarm_topic=alarm_topic,
            settings={
                "existing_plan_arn": plan_arn,
                "instance_type": instance_type,
                "instance_count": instance_count,
                "expiry_warning_days": expiry_warning_days,
            },
        )

    # ---------------------------------------------------------------- binding
    @property
    def training_plan_arns(self) -> list[str]:
        """``[plan_arn]``, for an optimization job's ``TrainingPlanArns``."""
        return [self.plan_arn]

    @property
    def bound_endpoints(self) -> list[LlmEndpoint]:
        """Endpoints in this app that run on this plan (by construct, or by the same plan name and place)."""
        bound: list[LlmEndpoint] = []
        for c in self.node.root.node.find_all():
            plan = getattr(c, "capacity_plan", None)  # LlmEndpoint's: capacity imports no hosting construct
            if isinstance(c, IEndpoint) and plan is not None and self._same_plan(plan):
                bound.append(cast("LlmEndpoint", c))
        return bound

    @property
    def when_not_active(self) -> str:
        """What a bound endpoint does while the plan is not Active: ``fail`` or ``on_demand`` (``spec``)."""
        return self.spec.when_not_active

    def bind(self, endpoint: Construct, *, instance_type: str, max_instances: int) -> CapacityPlanGuard:
        """Bind ``endpoint`` (an ``LlmEndpoint`` being built) to this plan: the plan's Active check ahead of the
        endpoint's config (child ``CapacityGuard``), and, when the plan is in another stack, that stack deployed
        first. ``LlmEndpoint`` calls it after ``binding_problems`` found nothing."""

        guard = CapacityPlanGuard(
            endpoint, "CapacityGuard", plan=self, instance_type=instance_type, max_instances=max_instances
        )
        if Stack.of(self) is not Stack.of(endpoint):
            with contextlib.suppress(Exception):  # stacks of different apps or stages: bound by name only
                Stack.of(endpoint).add_stack_dependency(
                    Stack.of(self),
                    "the capacity plan is bought and watched in its own stack, deployed first",
                )
        return guard

    def headroom_metadata(self, options: EndpointOptions) -> dict[str, Any]:
        """What the change report needs when an endpoint-config change needs headroom the plan lacks."""
        return headroom_metadata(self, options)

    def binding_problems(self, options: EndpointOptions, *, endpoint_scope: Construct | None = None) -> list[Problem]:
        """What keeps an endpoint with ``options`` (made under ``endpoint_scope``) from running on this plan;
        ``LlmEndpoint`` calls it.

        One plan per endpoint: a plan already bound to an endpoint in the app is a problem. With
        ``when_not_active: on_demand`` the plan is in a stack deployed before the endpoint's (its status
        parameter is read when the endpoint's stack deploys).
        """
        problems = spec_binding_problems(self.spec, options)
        if (
            endpoint_scope is not None
            and self.spec.when_not_active == "on_demand"
            and Stack.of(self) is Stack.of(endpoint_scope)
        ):
            problems.append(
                Problem(
                    "capacity_plan",
                    self.node.path,
                    "with when_not_active on_demand, a plan in a stack deployed before this one (its status parameter "
                    "is read when this stack deploys)",
                    "create the CapacityPlan in its own stack (e.g. <stack>Capacity), or use when_not_active: fail",
                )
            )
        # LlmEndpoint asks while it is being built, already in the tree with ``options`` as its
        # own (a fresh object per endpoint): every other endpoint on this plan is a second one.
        for other in self.bound_endpoints:
            if other.options is options:
                continue
            problems.append(
                Problem(
                    "capacity_plan",
                    self.node.path,
                    f"a capacity plan no other endpoint uses (one endpoint per plan); "
                    f"{other.node.path} already runs on '{self.plan_name}'",
                    "declare a separate CapacityPlan for this endpoint",
                )
            )
        return problems

    # ---------------------------------------------------------------- metrics
    def metric_days_left(
        self, *, statistic: str = "Minimum", period: Duration | None = None, **kwargs: Any
    ) -> cloudwatch.Metric:
        """Days until the plan ends (0 once over, missing or failed), from the daily check.

        Default: minimum over 1 day."""
        return metric(
            METRICS_NAMESPACE,
            DAYS_LEFT_METRIC,
            {PLAN_NAME_DIMENSION: self.plan_name},
            statistic=statistic,
            period=period or Duration.days(1),
            **kwargs,
        )

    # --------------------------------------------------------------- internals
    def _same_plan(self, other: CapacityPlan) -> bool:
        if other is self:
            return True
        return other.plan_name == self.plan_name and other._region == self._region and other._account == self._account

    def _placement_problems(self, stack: Stack) -> list[Problem]:
        problems: list[Problem] = []
        if self.spec.arn_parts is not None:
            for what, given, here in (
                ("region", self._region, stack.region),
                ("account", self._account, stack.account),
            ):
                if not Token.is_unresolved(here) and given != here:
                    problems.append(
                        Problem(
                            "existing_plan_arn",
                            self.spec.existing_plan_arn,
                            f"a plan in this stack's {what} ({here}); endpoints use plans of their "
                            "own account and region",
                            "deploy the stack there or use a plan from here",
                        )
                    )
        for other in _plans_in(self.node.root):
            if other is not self and self._same_plan(other):
                pinned = self.spec.physical_name is not None
                problems.append(
                    Problem(
                        "physical_name" if pinned else "name",
                        self.spec.physical_name if pinned else self.config_name,
                        f"a plan no other CapacityPlan in this app declares ({other.node.path} does, "
                        f"as TrainingPlanName {self.plan_name})",
                        "declare each plan once and bind it to one endpoint",
                    )
                )
        return problems

    @staticmethod
    def _named_arn(stack: Stack, name: str) -> str:
        return stack.format_arn(service="sagemaker", resource="training-plan", resource_name=name)

    def _plan_arns_by_name(self, stack: Stack) -> list[str]:
        """The plan's ARN built from its name, and its lowercase form when different.

        SageMaker writes some resource names into ARNs in lowercase; IAM matches ARNs
        case-sensitively, so both exact forms are allowed (never a wildcard).
        """
        names = [self.plan_name] + ([self.plan_name.lower()] if self.plan_name.lower() != self.plan_name else [])
        return [self._named_arn(stack, n) for n in names]

    def _described_arns(self, stack: Stack) -> list[str]:
        """The exact ARNs the plan's checks may describe: the bought plan's, the given one, or the name's forms."""
        if self.mode == "reserve":
            return [self.plan_arn]  # the ARN SageMaker returned: exact
        if self.spec.existing_plan_arn is not None:
            return [self.spec.existing_plan_arn]
        return self._plan_arns_by_name(stack)

    def extension_summary(self) -> str | None:
        """What the extension buys, in one phrase, or None without one."""
        extension = self.spec.extension
        if extension is None:
            return None
        return (
            f"extend capacity plan {self.plan_name} ({self.instance_type} x {self.instance_count}) until "
            f"{_iso(extension.until)} for at most USD {extension.max_upfront_fee_usd}"
        )


def _plans_in(root: IConstruct) -> list[CapacityPlan]:
    return [c for c in root.node.find_all() if isinstance(c, CapacityPlan)]


def headroom_metadata(plan: CapacityPlan, options: EndpointOptions) -> dict[str, Any]:
    """What the change report needs to say when an endpoint-config change needs headroom the plan lacks."""
    count, most = plan.instance_count, options.scaling.max_instances
    policy = choose_update_policy(count, most)
    return {
        "Plan": plan.plan_name,
        "PlanInstances": count,
        "MaxInstances": most,
        "WhenNotActive": plan.spec.when_not_active,
        "BlueGreenNeedsInstances": 2 * most,
        "RollingNeedsInstances": most + 1,
        "UpdatePolicy": policy or "NONE_FITS",
        "UpdateFits": policy is not None,
    }
