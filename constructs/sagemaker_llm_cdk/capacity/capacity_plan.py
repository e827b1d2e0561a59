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

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import jsii
from aws_cdk import Annotations, CfnOutput, CustomResource, Duration, RemovalPolicy, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import custom_resources as cr

from constructs import Construct, IConstruct, IValidation

from ..core.errors import ConfigurationError, Problem
from ..core.functions import METRICS_NAMESPACE, provider_framework, python_function
from ..core.naming import stack_prefix
from ..core.settings import validated
from ..core.storage import secure_key
from ..settings.hosting import EndpointOptions

if TYPE_CHECKING:
    from ..hosting.endpoint import LlmEndpoint
from ..core import grants
from ..core.metrics import metric
from ..core.nag import acknowledge_resource
from ..core.protocols import IEndpoint
from .guard import STATUS_PARAMETER_PREFIX as STATUS_PARAMETER_PREFIX
from .guard import CapacityPlanGuard, status_parameter_name
from ..core.run_time_state import RunTimeParameter
from ..settings.capacity import (
    choose_update_policy,
    EXTEND_CONTEXT,
    PURCHASE_CONTEXT,
    CapacityPlanSpec,
    _iso,
    spec_binding_problems,
    unknown_consent_problems,
)

DAYS_LEFT_METRIC = "CapacityPlanDaysLeft"
"""Metric the daily check publishes (namespace ``functions.METRICS_NAMESPACE``), one dimension below."""
PLAN_NAME_DIMENSION = "TrainingPlanName"
RESOURCE_TYPE = "Custom::SageMakerCapacityPlan"
EXTENSION_RESOURCE_TYPE = "Custom::SageMakerCapacityPlanExtension"
APPROVED, NOT_APPROVED = "approved", "not-approved"
SPENDING_ACTIONS = ("sagemaker:CreateTrainingPlan", "sagemaker:ExtendTrainingPlan", "sagemaker:CreateReservedCapacity")
"""IAM actions that spend money on capacity; granted only with the deploy-time consent."""


def reserved_capacity_arns(stack: Stack) -> str:
    """Every reserved capacity of the stack's account and region.

    Buying a plan creates its reserved capacity under an id SageMaker generates at purchase,
    so it cannot be named in advance.
    """
    return stack.format_arn(service="sagemaker", resource="reserved-capacity", resource_name="*")


CONTEXT_FILES = (("cdk.json", "context"), ("cdk.context.json", None), ("~/.cdk.json", "context"))
"""Files the CDK CLI merges into the app's context on every run, with the key that holds it there (None: the
whole file): ``cdk.json`` and ``cdk.context.json`` in its working directory (the app's), and the user's
``~/.cdk.json``. What they hold reaches the app as ``-c`` does, in ``CDK_CONTEXT_JSON``."""


@dataclass(frozen=True)
class FileConsent:
    """A consent key written in a context file (``CONTEXT_FILES``): ``value`` under ``key`` in ``file``."""

    file: str
    """The file as the CDK CLI names it: ``cdk.json``, ``cdk.context.json`` or ``~/.cdk.json``."""
    path: Path
    key: str
    value: Any

    def problem(self) -> Problem:
        """The refusal, with the command that gives the same consent on the command line."""
        names = ",".join(sorted(_names(self.value))) or "<plan>"
        where = f"the context of {self.file}" if self.file != "cdk.context.json" else self.file
        return Problem(
            f"{self.file} context {self.key}",
            self.value,
            f"no consent to {self.key} in a file the CDK CLI reads on every deploy (cdk.json, cdk.context.json, "
            f"~/.cdk.json): only -c {self.key}=<plan> on the deploy command consents",
            f'remove "{self.key}" from {where} and pass -c {self.key}={names} on the deploy command that should '
            f'spend (make deploy CONTEXT="-c {self.key}={names}")',
            where=str(self.path),
        )


def file_consents(app_dir: Path | None = None, home: Path | None = None) -> list[FileConsent]:
    """Every ``purchase`` / ``extend`` key in ``CONTEXT_FILES``, read where the CDK CLI reads them.

    ``app_dir`` defaults to the working directory (the CLI runs the app in its own) and ``home`` to
    ``$HOME`` (the CLI's ``os.homedir()``). A file that is missing or is not a JSON object holds none
    (the CLI itself refuses to run on a file it cannot parse).
    """
    app_dir = Path.cwd() if app_dir is None else app_dir
    home = Path.home() if home is None else home
    found: list[FileConsent] = []
    for name, section in CONTEXT_FILES:
        path = home / name[2:] if name.startswith("~/") else app_dir / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        context = data.get(section) if section is not None and isinstance(data, dict) else data
        if isinstance(context, dict):
            found.extend(
                FileConsent(name, path, key, context[key])
                for key in (PURCHASE_CONTEXT, EXTEND_CONTEXT)
                if key in context
            )
    return found


def _names(raw: Any) -> frozenset[str]:
    if raw is None or raw is False or raw == "":
        return frozenset()
    items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
    return frozenset(str(item).strip() for item in items if str(item).strip())


def consented_plans(scope: IConstruct, key: str = PURCHASE_CONTEXT) -> frozenset[str]:
    """Plan names the deploy command consents to: ``-c purchase=a,b`` (``App(context=...)`` may give a list).

    Empty when the context is not set, and when ``cdk.json``, ``cdk.context.json`` or ``~/.cdk.json``
    holds the key (``file_consents``): the CDK CLI merges those files into the context of every
    deploy, where a committed or user-level name would consent each time, and the app cannot tell
    their values from ``-c``. ``consent_problems`` reports both such a file and unknown names.
    """
    if any(found.key == key for found in file_consents()):
        return frozenset()
    return _names(scope.node.try_get_context(key))


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


@jsii.implements(IValidation)
class _NoConsentInFiles:
    """Fails the synth of an app with a plan while a context file holds a consent (``file_consents``).

    ``consent_problems`` reports the same before synth in an app that calls it; this holds for any
    app that declares a plan, so a consent in a file fails ``cdk synth`` and ``cdk deploy`` rather
    than leaving the plan unbought with a note that looks like the consent went unseen.
    """

    def __init__(self, found: list[FileConsent]) -> None:
        self._lines = [found_one.problem().located() for found_one in found]

    def validate(self) -> list[str]:
        return self._lines


def encrypted_alarm_topic(scope: Construct, id: str, *, description: str) -> sns.Topic:
    """An SNS topic for alarms: KMS-encrypted with a new key CloudWatch may use, TLS-only publishing.

    CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed ``aws/sns`` key,
    so the topic gets a customer-managed key whose policy lets ``cloudwatch.amazonaws.com``
    encrypt messages. Children: ``<id>Key`` and ``<id>``.
    """
    key = secure_key(scope, f"{id}Key", description=f"Encrypts {description}")
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="CloudWatchAlarmsPublish",
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"],
            resources=["*"],
        )
    )
    topic = sns.Topic(scope, id, master_key=key, enforce_ssl=True, display_name=description[:100])
    from ..core.grants import require_source_conditions

    require_source_conditions(topic)  # a service may publish only with aws:SourceArn/SourceAccount (confused deputy)
    return topic


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

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        spec: CapacityPlanSpec | Mapping[str, Any],
        alarm_topic: sns.ITopic | None = None,
        name_prefix: str | None = None,
    ) -> None:
        """
        :param spec: the plan to reserve or use (see ``CapacityPlanSpec``).
        :param name_prefix: what a plan to reserve is named after, ``<name_prefix>-<spec.name>``
            (unless ``spec.physical_name`` pins the name), e.g. the name of the stack that serves on
            the plan when the plan lives in a companion stack. Default: the name of the (top-level)
            stack this plan is in. Not used for an existing plan.
        :param alarm_topic: where the expiry and check-failure alarms notify. If it is encrypted,
            its key must let ``cloudwatch.amazonaws.com`` use it. Default: a new KMS-encrypted
            topic for this plan (its key is retained with the stack's other keys); pass one topic
            (``encrypted_alarm_topic``) to share it between plans.
        """
        super().__init__(scope, id)
        spec = validated(CapacityPlanSpec, spec, where=self.node.path)
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
            self.plan_arn = self._reserve(stack)
        elif spec.existing_plan_arn is not None:
            self.plan_arn = spec.existing_plan_arn
        else:
            self.plan_arn = self._named_arn(stack, self.plan_name)
        if spec.extension is not None:
            self._extend(stack)

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
        self._add_expiry_check()
        CfnOutput(self, "Arn", value=self.plan_arn, description=f"ARN of capacity plan {self.plan_name}")
        self._announce()
        _acknowledge_capacity_plan(self)

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
            spec={
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
            try:
                Stack.of(endpoint).add_stack_dependency(
                    Stack.of(self),
                    "the capacity plan is bought and watched in its own stack, deployed first",
                )
            except Exception:  # noqa: BLE001 - stacks of different apps or stages: bound by name only
                pass
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
        """Days until the plan ends (0 once over, missing or failed), from the daily check. Default: minimum over 1 day."""
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

    def _handler(self, stack: Stack) -> cr.Provider:
        """The purchase/extension handler and its provider (one per plan), created on first use."""
        if self.provider is not None:
            return self.provider
        function = python_function(
            self,
            "OnEvent",
            folder="capacity_plan",
            description=f"custom resource that buys or extends capacity plan {self.plan_name} once",
            timeout=Duration.minutes(2),
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="DescribeThisPlan",
                actions=["sagemaker:DescribeTrainingPlan", "sagemaker:DescribeTrainingPlanExtensionHistory"],
                resources=self._plan_arns_by_name(stack),
            )
        )
        # A refused change of the plan is rolled back with an Update back to it, which the handler accepts only while
        # this stack is UPDATE_ROLLBACK_IN_PROGRESS: it reads this stack's status, no other's.
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ReadThisStacksStatus", actions=["cloudformation:DescribeStacks"], resources=[stack.stack_id]
            )
        )
        self.on_event_function = function

        provider, self.provider_role = provider_framework(
            self, on_event=function, description=f"Custom resource framework of capacity plan {self.plan_name}"
        )
        self.provider = provider
        return provider

    def _grant_spending(self, stack: Stack, sid: str, actions: list[str]) -> None:
        """Spending actions for the handler, added only when this synth carries the deploy-time consent."""
        assert self.on_event_function is not None
        self.on_event_function.add_to_role_policy(
            iam.PolicyStatement(sid=sid, actions=actions, resources=self._plan_arns_by_name(stack))
        )
        if "SearchOfferings" not in self._granted:
            self._granted.add("SearchOfferings")
            grants.grant(
                self.on_event_function,
                sid="SearchOfferings",
                actions=["sagemaker:SearchTrainingPlanOfferings"],
                resources=["*"],
                reason="sagemaker:SearchTrainingPlanOfferings has no resource type, so it is allowed on '*' "
                "(it reads offerings and buys nothing); X-Ray tracing needs '*' as well.",
            )

    def _reserve(self, stack: Stack) -> str:
        spec = self.spec
        self._granted: set[str] = set()
        provider = self._handler(stack)
        if self.purchase_approved:
            self._grant_spending(stack, "BuyThisPlan", ["sagemaker:CreateTrainingPlan"])
            assert self.on_event_function is not None
            grants.grant(
                self.on_event_function,
                sid="ReserveCapacityForThePlan",
                actions=["sagemaker:CreateReservedCapacity"],
                resources=[reserved_capacity_arns(stack)],
                reason="CreateTrainingPlan creates the plan's reserved capacity under an id SageMaker "
                "generates at purchase, so it cannot be named in advance: only CreateReservedCapacity, "
                "only in this account and region; the purchase itself (CreateTrainingPlan) is limited "
                "to this plan's name.",
            )

        properties: dict[str, str] = {
            "PlanName": self.plan_name,
            "InstanceType": spec.instance_type,
            "InstanceCount": str(spec.instance_count),
            "DurationDays": str(spec.duration_days),
            "MaxUpfrontFeeUsd": format(spec.max_upfront_fee_usd, "f"),
            "Purchase": APPROVED if self.purchase_approved else NOT_APPROVED,
            "ConsentName": self.config_name,  # what the handler's "how to consent" message names
        }
        if spec.start_after is not None:
            properties["StartTimeAfter"] = _iso(spec.start_after)
        if spec.end_before is not None:
            properties["EndTimeBefore"] = _iso(spec.end_before)
        self.custom_resource = CustomResource(
            self,
            "Resource",
            service_token=provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties=properties,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.node.default_child = self.custom_resource.node.default_child  # the CfnResource (escape hatch)
        data = self.custom_resource.get_att_string
        self.start_time = data("StartTime")
        self.end_time = data("EndTime")
        self.upfront_fee = data("UpfrontFee")
        self.currency_code = data("CurrencyCode")

        CfnOutput(
            self,
            "EndTime",
            value=self.end_time,
            description=f"When capacity plan {self.plan_name} ends (UTC); its endpoint gets no instances after it",
        )
        CfnOutput(
            self,
            "UpfrontFee",
            value=f"{self.upfront_fee} {self.currency_code}",
            description=f"What capacity plan {self.plan_name} cost (paid upfront)",
        )
        CfnOutput(
            self,
            "Retained",
            value=(
                f"Capacity plan {self.plan_name} ({spec.purchase_summary()}) is retained when this resource or stack is "
                "deleted: it is prepaid and not refundable"
            ),
            description=f"Deletion policy of capacity plan {self.plan_name}",
        )
        return data("TrainingPlanArn")

    def _extend(self, stack: Stack) -> None:
        extension = self.spec.extension
        assert extension is not None
        if not hasattr(self, "_granted"):
            self._granted = set()
        provider = self._handler(stack)
        if self.extension_approved:
            self._grant_spending(stack, "ExtendThisPlan", ["sagemaker:ExtendTrainingPlan"])
        self.extension_resource = CustomResource(
            self,
            "Extension",
            service_token=provider.service_token,
            resource_type=EXTENSION_RESOURCE_TYPE,
            removal_policy=RemovalPolicy.RETAIN,
            properties={
                "PlanName": self.plan_name,
                "ExtendUntil": _iso(extension.until),
                "MaxUpfrontFeeUsd": format(extension.max_upfront_fee_usd, "f"),
                "Extend": APPROVED if self.extension_approved else NOT_APPROVED,
                "ConsentName": self.config_name,
            },
        )
        if self.custom_resource is not None:
            self.extension_resource.node.add_dependency(self.custom_resource)
        CfnOutput(
            self,
            "ExtendedEndTime",
            value=self.extension_resource.get_att_string("EndTime"),
            description=f"When capacity plan {self.plan_name} ends after its extension (UTC)",
        )

    def extension_summary(self) -> str | None:
        """What the extension buys, in one phrase, or None without one."""
        extension = self.spec.extension
        if extension is None:
            return None
        return (
            f"extend capacity plan {self.plan_name} ({self.instance_type} x {self.instance_count}) until "
            f"{_iso(extension.until)} for at most USD {extension.max_upfront_fee_usd}"
        )

    def _announce(self) -> None:
        """Say at synth what a deploy of this plan's stack would buy, and whether it may."""
        if self.mode == "reserve":
            cap = self.spec.max_upfront_fee_usd
            what = (
                f"capacity plan {self.config_name} as TrainingPlanName {self.plan_name} ({self._name_origin()}): "
                f"{self.spec.purchase_summary()}, prepaid up to USD {cap}, never refunded"
            )
            if self.purchase_approved:
                Annotations.of(self).add_warning_v2(
                    "sagemaker-llm-cdk:purchaseApproved",
                    f"This deploy may BUY {what} (consent: -c {PURCHASE_CONTEXT}={self.config_name}). Bought once; "
                    f"a plan named {self.plan_name} that exists already is adopted.",
                )
            else:
                Annotations.of(self).add_info(
                    f"Not bought by this deploy: {what}. To buy it, deploy this stack with "
                    f"-c {PURCHASE_CONTEXT}={self.config_name}; without that, the deploy fails unless a plan named "
                    f"{self.plan_name} exists (it is then adopted)."
                )
        summary = self.extension_summary()
        if summary is not None:
            if self.extension_approved:
                Annotations.of(self).add_warning_v2(
                    "sagemaker-llm-cdk:extensionApproved",
                    f"This deploy may BUY an extension: {summary} (consent: -c {EXTEND_CONTEXT}={self.config_name}).",
                )
            else:
                Annotations.of(self).add_info(
                    f"Not bought by this deploy: {summary}. To buy it, deploy with -c {EXTEND_CONTEXT}={self.config_name}."
                )

    def _name_origin(self) -> str:
        if self.spec.physical_name is not None:
            return "pinned by physical_name"
        if self.plan_name == self.config_name:
            return "the config name"
        return (
            f"<stack>-{self.config_name}; a plan bought before names were stack-prefixed keeps its name only "
            "with physical_name"
        )

    def _add_expiry_check(self) -> None:
        stack = Stack.of(self)
        self.expiry_function = python_function(
            self,
            "ExpiryCheck",
            folder="capacity_plan_expiry",
            description=f"daily check of the days capacity plan {self.plan_name} has left",
            environment={"TRAINING_PLAN_NAMES": self.plan_name},
            timeout=Duration.minutes(1),
        )
        self.expiry_function.add_to_role_policy(
            iam.PolicyStatement(
                sid="DescribeThisPlan",
                actions=["sagemaker:DescribeTrainingPlan"],
                resources=self._described_arns(stack),
            )
        )
        if self.status_parameter is not None:
            self.expiry_function.add_environment(
                "STATUS_PARAMETERS", f"{self.plan_name}={status_parameter_name(self.plan_name)}"
            )
            self.status_parameter.grant_write(self.expiry_function)
            self.status_parameter.grant_read(self.expiry_function)
        self.expiry_rule = events.Rule(
            self,
            "DailyExpiryCheck",
            description=f"Daily check of the days capacity plan {self.plan_name} has left",
            schedule=events.Schedule.rate(Duration.days(1)),
            targets=[
                events_targets.LambdaFunction(self.expiry_function, retry_attempts=2, max_event_age=Duration.hours(6))
            ],
        )
        action = cloudwatch_actions.SnsAction(self.alarm_topic)
        warning_days = self.spec.expiry_warning_days
        self.expiry_alarm = cloudwatch.Alarm(
            self,
            "ExpiryAlarm",
            alarm_description=(
                f"Capacity plan {self.plan_name} has fewer than {warning_days} days left; its endpoint "
                "gets no instances after it ends. Reserve the next plan now."
            ),
            metric=self.metric_days_left(),
            threshold=warning_days,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=1,
            datapoints_to_alarm=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.expiry_alarm.add_alarm_action(action)
        self.check_failed_alarm = cloudwatch.Alarm(
            self,
            "CheckFailedAlarm",
            alarm_description=(
                f"The daily check of capacity plan {self.plan_name} failed, so its days left are not "
                "known; see the function's log group."
            ),
            metric=self.expiry_function.metric_errors(statistic="Sum", period=Duration.days(1)),
            threshold=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
            datapoints_to_alarm=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.check_failed_alarm.add_alarm_action(action)


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


def _acknowledge_capacity_plan(plan: CapacityPlan) -> None:
    """The custom resource framework a ``CapacityPlan`` creates (its handler's grants acknowledge themselves)."""
    if plan.provider_role is not None and plan.on_event_function is not None:
        acknowledge_resource(
            plan.provider_role,
            f"{plan.on_event_function.function_arn}:*",
            "The custom resource framework invokes the plan's purchase handler: lambda:InvokeFunction on that one "
            "function and its versions (the ':*' qualifier), nothing else.",
            actions=["lambda:InvokeFunction"],
        )
