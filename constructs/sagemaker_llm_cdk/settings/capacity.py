"""Settings of a capacity plan (a SageMaker training plan for an endpoint): what to buy or import, its extension,
and what keeps an endpoint from running on it. Pure: the config model uses them too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import Field

from ..core import service_model
from ..core.errors import MISSING, Problem
from ..core.name_rules import as_prefix, prefixed_name
from ..core.settings import Settings, field_rule, instance_type_problem, name_problem
from .endpoint import EndpointOptions

ALLOWED_INSTANCE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
"""Instance counts SageMaker offers capacity plans for.

SageMaker's guide ("Search training plan offerings"): "The reservation instance quantity options
are 1, 2, 4, 8, 16, 32 or 64 instances." botocore's model allows 0-256 for
``SearchTrainingPlanOfferings.InstanceCount``; only the documented set is accepted here."""
MIN_DURATION_DAYS, MAX_DURATION_DAYS = 1, 182
PURCHASE_CONTEXT = "purchase"
"""Context key of the deploy-time consent to buy: ``-c purchase=<plan-name>[,<plan-name>]``."""
EXTEND_CONTEXT = "extend"
"""Context key of the deploy-time consent to extend: ``-c extend=<plan-name>[,<plan-name>]``."""
_PLAN_ARN = re.compile(
    r"arn:aws[a-z-]*:sagemaker:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d):(?P<account>\d{12}):training-plan/(?P<name>.+)"
)
_ARN_SHAPE = "arn:aws:sagemaker:<region>:<12-digit account>:training-plan/<plan name>"
_PURCHASE_FIELDS = ("duration_days", "start_after", "end_before", "max_upfront_fee_usd")


def _iso(value: datetime) -> str:
    """``value`` as ISO-8601 in UTC with a ``Z`` (what the purchase handler reads)."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _aware(value: datetime | None) -> bool:
    return value is not None and value.tzinfo is not None and value.utcoffset() is not None


class PlanExtension(Settings):
    """Renew a plan: buy an extension (``ExtendTrainingPlan``) so that it lasts until ``until``.

    Paid upfront, never refunded; bought only by a deploy with ``-c extend=<plan name>`` and at
    most once per ``until`` (a retry or a later deploy finds the extension in the plan's history).
    """

    until: Annotated[
        datetime,
        Field(
            description=(
                "The plan should last at least until this time (ISO-8601 with a time zone). The extension covers the "
                "whole days from the plan's current end to it."
            )
        ),
    ]
    max_upfront_fee_usd: Annotated[
        Decimal,
        Field(
            gt=0,
            allow_inf_nan=False,
            description=(
                "The most the extension may cost, in US dollars; the cheapest offering at or below it is bought, or "
                "nothing."
            ),
        ),
    ]

    def _rules(self) -> list[Problem]:
        if not _aware(self.until):
            return [
                Problem(
                    "until",
                    self.until.isoformat(),
                    "a date-time with a time zone, e.g. 2027-03-01T00:00:00Z",
                    "add Z (UTC) or an offset such as +09:00",
                )
            ]
        return []


class CapacityPlanSpec(Settings):
    """Reserved capacity for one endpoint: a new plan to buy, or a plan you already have.

    Reserve a new plan (paid upfront, never refunded)::

        CapacityPlanSpec(name="chat-p5e-2026q1", instance_type="ml.p5e.48xlarge", instance_count=2,
                         duration_days=30, start_after=datetime(2026, 1, 15, tzinfo=timezone.utc),
                         max_upfront_fee_usd=Decimal("250000"))
        # bought only by: cdk deploy -c purchase=chat-p5e-2026q1

    Use an existing plan (nothing is bought)::

        CapacityPlanSpec(existing_plan_arn="arn:aws:sagemaker:us-east-1:123456789012:training-plan/chat-p5e",
                         instance_type="ml.p5e.48xlarge", instance_count=2)
    """

    name: Annotated[
        str | None,
        Field(
            description=(
                "The plan's name in this config: 1-64 letters, digits and hyphens. The consent names it (-c "
                "purchase=<name>) and endpoints' capacity_plan refer to it. A plan to reserve is bought as <stack "
                "name>-<name> (its TrainingPlanName, cut to 64 characters with a hash), unless physical_name pins it, "
                "so two stacks of one config never share a plan; an existing plan is used by exactly this name. "
                "Required to reserve a plan and to use an existing plan by name; with existing_plan_arn it defaults to "
                "the name in the ARN."
            )
        ),
    ] = None
    physical_name: Annotated[
        str | None,
        field_rule(lambda v: name_problem("", v, "TrainingPlanName")),
        Field(
            description=(
                "reserve: the exact TrainingPlanName to buy or adopt, not prefixed (1-64 letters, digits and hyphens). "
                "Pin it for a plan bought before names were stack-prefixed (its name was the config name): without it "
                "the next deploy asks for <stack name>-<name> instead and refuses to change the bought plan. A pinned "
                "name is unique in the account and region, so two stacks of one config share that plan. Refused for an "
                "existing plan (its name is used as given). Default: <stack name>-<name>."
            )
        ),
    ] = None
    mode: Annotated[
        Literal["reserve", "existing"] | None,
        Field(
            description=(
                "reserve: buy a new plan (needs max_upfront_fee_usd here and -c purchase=<name> on the deploy "
                "command). existing: use a plan you already have, by existing_plan_arn or name; nothing is bought. "
                "Default: existing when existing_plan_arn is set, otherwise reserve."
            )
        ),
    ] = None
    existing_plan_arn: Annotated[
        str | None,
        Field(
            description=(
                "Use this existing plan: " + _ARN_SHAPE + ", in the stack's account and region. Default: none."
            )
        ),
    ] = None
    instance_type: Annotated[
        str,
        Field(
            description=(
                "The plan's instance type, e.g. ml.p5e.48xlarge; the endpoint must use the same. For an existing plan, "
                "give its instance type so the binding can be checked."
            )
        ),
    ]
    instance_count: Annotated[
        int,
        Field(
            description=(
                "Instances reserved: 1, 2, 4, 8, 16, 32 or 64. The endpoint's scaling.max_instances may not exceed it."
            )
        ),
    ]
    duration_days: Annotated[
        int | None,
        Field(
            description=(
                "reserve: whole days the plan lasts, 1-182. Required to reserve; refused for an existing plan."
            )
        ),
    ] = None
    start_after: Annotated[
        datetime | None,
        Field(
            description=(
                "reserve: the plan starts at or after this time (ISO-8601 with a time zone, e.g. "
                "2026-01-15T00:00:00Z). Default: as soon as SageMaker offers."
            )
        ),
    ] = None
    end_before: Annotated[
        datetime | None,
        Field(
            description=(
                "reserve: the plan ends at or before this time (ISO-8601 with a time zone). Default: no limit."
            )
        ),
    ] = None
    max_upfront_fee_usd: Annotated[
        Decimal | None,
        Field(
            gt=0,
            allow_inf_nan=False,
            description=(
                "reserve: the most the purchase may cost, in US dollars; the cheapest offering at or below it is "
                "bought, or nothing. Required to reserve; refused for an existing plan."
            ),
        ),
    ] = None
    purchase_acknowledged: Annotated[
        bool | None,
        Field(
            strict=True,
            description=(
                "Removed: consent is no longer a config field. Give it on the deploy command, "
                "cdk deploy -c purchase=<plan name>. Any value is refused."
            ),
        ),
    ] = None
    expiry_warning_days: Annotated[
        int,
        Field(ge=1, le=60, description=("Alarm when the plan has fewer than this many days left, 1-60. Default: 7.")),
    ] = 7
    when_not_active: Annotated[
        Literal["fail", "on_demand"],
        Field(
            description=(
                "What a deploy does when the bound plan is not Active (before its start, after its end). fail: a guard "
                "fails the deploy in seconds with the plan's status and dates, before the endpoint config changes. "
                "on_demand: the endpoint runs on on-demand capacity while the plan's status parameter (written by the "
                "daily check) is not Active, and the first deploy after it is binds the plan. Default: fail."
            )
        ),
    ] = "fail"
    extension: Annotated[
        PlanExtension | None,
        Field(
            description=(
                "Extend the plan (ExtendTrainingPlan) so that it lasts until extension.until, within "
                "extension.max_upfront_fee_usd; bought only by a deploy with -c extend=<plan name>, once. Default: "
                "none."
            )
        ),
    ] = None

    # ------------------------------------------------------------------ derived
    @property
    def effective_mode(self) -> Literal["reserve", "existing"]:
        if self.mode is not None:
            return self.mode
        return "existing" if self.existing_plan_arn is not None else "reserve"

    @property
    def plan_name(self) -> str:
        """The plan's config name: ``name``, or the name in ``existing_plan_arn`` (what ``-c purchase=`` names)."""
        if self.name is not None:
            return self.name
        match = _PLAN_ARN.fullmatch(self.existing_plan_arn or "")
        return match.group("name") if match else ""

    def physical_plan_name(self, prefix: str) -> str:
        """The TrainingPlanName SageMaker knows the plan by, in a stack whose name is ``prefix``.

        An existing plan: its name as given. A plan to reserve: ``physical_name`` when pinned, else
        ``<prefix>-<name>`` (``naming.prefixed_name`` within TrainingPlanName's length).
        """
        if self.effective_mode == "existing":
            return self.plan_name
        if self.physical_name is not None:
            return self.physical_name
        return prefixed_name(
            as_prefix(prefix), self.plan_name, max_length=service_model.name_rule("TrainingPlanName")[0]
        )

    @property
    def arn_parts(self) -> tuple[str, str] | None:
        """(region, account) of ``existing_plan_arn``, when it is given."""
        match = _PLAN_ARN.fullmatch(self.existing_plan_arn or "")
        return (match.group("region"), match.group("account")) if match else None

    def purchase_summary(self) -> str:
        """What reserving this plan buys, in one phrase (for messages and outputs)."""
        days = "?" if self.duration_days is None else str(self.duration_days)
        if self.start_after is not None and self.end_before is not None:
            window = f"between {_iso_or_raw(self.start_after)} and {_iso_or_raw(self.end_before)}"
        elif self.start_after is not None:
            window = f"starting at or after {_iso_or_raw(self.start_after)}"
        elif self.end_before is not None:
            window = f"ending by {_iso_or_raw(self.end_before)}"
        else:
            window = "at the earliest time SageMaker offers"
        return f"{self.instance_type} x {self.instance_count} for {days} days {window}"

    # ------------------------------------------------------------------- rules
    def _rules(self) -> list[Problem]:
        problems: list[Problem] = []
        if self.name is not None:
            problem = name_problem("name", self.name, "TrainingPlanName")
            if problem:
                problems.append(problem)
        problem = instance_type_problem(
            "instance_type", self.instance_type, service_model.capacity_plan_instance_types(), "capacity plans"
        )
        if problem:
            problems.append(problem)
        if self.instance_count not in ALLOWED_INSTANCE_COUNTS:
            problems.append(
                Problem(
                    "instance_count",
                    self.instance_count,
                    "one of " + ", ".join(str(c) for c in ALLOWED_INSTANCE_COUNTS),
                    "pick an offered count; an endpoint may use fewer instances than the plan holds",
                )
            )
        for field in ("start_after", "end_before"):
            value = getattr(self, field)
            if value is not None and not _aware(value):
                problems.append(
                    Problem(
                        field,
                        value.isoformat(),
                        "a date-time with a time zone, e.g. 2026-01-15T00:00:00Z",
                        "add Z (UTC) or an offset such as +09:00",
                    )
                )
        if self.purchase_acknowledged is not None:
            problems.append(
                Problem(
                    "purchase_acknowledged",
                    self.purchase_acknowledged,
                    "nothing: consent to buy is no longer a config field (a committed or copied config must never buy)",
                    f"remove purchase_acknowledged and deploy the capacity stack with -c {PURCHASE_CONTEXT}="
                    f"{self.name or '<plan name>'} when you mean to buy",
                )
            )
        if self.effective_mode == "existing":
            problems.extend(self._existing_rules())
        else:
            problems.extend(self._reserve_rules())
        problems.extend(self._extension_rules())
        return problems

    def _extension_rules(self) -> list[Problem]:
        """An extension must reach past the plan's own window, where the config knows it (a plan to reserve).

        A plan starts at or after ``start_after`` and lasts ``duration_days``, so it lasts at least until
        ``start_after + duration_days``: an ``until`` at or before that extends nothing and would only print that
        it will. Without ``start_after`` the start is whenever SageMaker offers (not known at synth); an existing
        plan's end is known only to SageMaker (preflight reads it).
        """
        extension = self.extension
        if extension is None or not _aware(extension.until) or self.effective_mode != "reserve":
            return []
        if self.start_after is None or not _aware(self.start_after) or self.duration_days is None:
            return []
        end = self.start_after + timedelta(days=self.duration_days)
        if extension.until > end:
            return []
        return [
            Problem(
                "extension.until",
                _iso(extension.until),
                f"a time after the plan's own window, which lasts at least until {_iso(end)} (start_after + "
                f"duration_days): an extension to that time or earlier extends nothing",
                "move extension.until past the plan's end, or remove the extension",
            )
        ]

    def _existing_rules(self) -> list[Problem]:
        problems: list[Problem] = []
        arn_name: str | None = None
        if self.existing_plan_arn is not None:
            match = _PLAN_ARN.fullmatch(self.existing_plan_arn)
            if not match:
                problems.append(
                    Problem(
                        "existing_plan_arn",
                        self.existing_plan_arn,
                        _ARN_SHAPE,
                        "copy TrainingPlanArn from `aws sagemaker describe-training-plan --training-plan-name <name>`",
                    )
                )
            else:
                arn_name = match.group("name")
                if name_problem("existing_plan_arn", arn_name, "TrainingPlanName"):
                    problems.append(
                        Problem(
                            "existing_plan_arn",
                            self.existing_plan_arn,
                            _ARN_SHAPE + " whose plan name is 1-64 letters, digits and hyphens",
                            "copy the ARN exactly as SageMaker returns it",
                        )
                    )
        if arn_name is not None and self.name is not None and self.name != arn_name:
            problems.append(
                Problem(
                    "name",
                    self.name,
                    f"'{arn_name}' (the name in existing_plan_arn), or nothing",
                    "remove name or make it match the ARN",
                )
            )
        if self.existing_plan_arn is None and self.name is None:
            problems.append(
                Problem(
                    "name",
                    MISSING,
                    "the existing plan's name, or existing_plan_arn",
                    "set existing_plan_arn (recommended) or name",
                )
            )
        if self.physical_name is not None:
            problems.append(
                Problem(
                    "physical_name",
                    self.physical_name,
                    "nothing when using an existing plan: it is used by its name as given",
                    "remove physical_name and give the plan's exact name in name or existing_plan_arn",
                )
            )
        for field in _PURCHASE_FIELDS:
            value = getattr(self, field)
            if value is not None:
                problems.append(
                    Problem(
                        field,
                        value,
                        "nothing when using an existing plan: nothing is bought",
                        f"remove {field}, or set mode: reserve (and remove existing_plan_arn) to buy a new plan",
                    )
                )
        return problems

    def _reserve_rules(self) -> list[Problem]:
        problems: list[Problem] = []
        if self.existing_plan_arn is not None:
            problems.append(
                Problem(
                    "existing_plan_arn",
                    self.existing_plan_arn,
                    "nothing with mode reserve: a new plan gets its ARN when it is bought",
                    "remove mode to use this existing plan, or remove existing_plan_arn to buy a new one",
                )
            )
        if self.name is None:
            problems.append(
                Problem(
                    "name",
                    MISSING,
                    "the new plan's name: 1-64 letters, digits and hyphens, unique in the account and region",
                    "add name, e.g. chat-p5e-2026q1",
                )
            )
        if self.duration_days is None:
            problems.append(
                Problem(
                    "duration_days", MISSING, f"whole days {MIN_DURATION_DAYS}-{MAX_DURATION_DAYS}", "add duration_days"
                )
            )
        elif not MIN_DURATION_DAYS <= self.duration_days <= MAX_DURATION_DAYS:
            problems.append(
                Problem(
                    "duration_days",
                    self.duration_days,
                    f"whole days {MIN_DURATION_DAYS}-{MAX_DURATION_DAYS}",
                    "shorten the plan, or declare a second plan for the rest of the time",
                )
            )
        start, end = self.start_after, self.end_before
        if _aware(start) and _aware(end):
            if end <= start:  # type: ignore[operator]
                problems.append(
                    Problem(
                        "end_before",
                        _iso(end),  # type: ignore[arg-type]
                        f"later than start_after ({_iso(start)})",  # type: ignore[arg-type]
                        "swap the two or correct end_before",
                    )
                )
            elif (
                self.duration_days is not None
                and MIN_DURATION_DAYS <= self.duration_days <= MAX_DURATION_DAYS
                and end - start < timedelta(days=self.duration_days)  # type: ignore[operator]
            ):
                problems.append(
                    Problem(
                        "end_before",
                        _iso(end),  # type: ignore[arg-type]
                        f"at least duration_days ({self.duration_days}) after start_after ({_iso(start)})",  # type: ignore[arg-type]
                        "widen the window or shorten duration_days",
                    )
                )
        if self.max_upfront_fee_usd is None:
            what = (
                f"reserving {self.purchase_summary()} as capacity plan '{self.name or '?'}' is a purchase, paid "
                "upfront and never refunded"
            )
            problems.append(
                Problem(
                    "max_upfront_fee_usd",
                    MISSING,
                    f"a price cap in USD greater than 0: {what}",
                    "set max_upfront_fee_usd to the most you agree to pay (USD); the purchase then happens only on a "
                    f"deploy with -c {PURCHASE_CONTEXT}={self.name or '<plan name>'}. To use a plan you already have, "
                    "set existing_plan_arn instead",
                )
            )
        return problems


def _iso_or_raw(value: datetime) -> str:
    return _iso(value) if _aware(value) else value.isoformat()


def spec_binding_problems(spec: CapacityPlanSpec, options: EndpointOptions) -> list[Problem]:
    """What keeps an endpoint with ``options`` from running on the plan ``spec`` (paths relative to the endpoint).

    Pure: the config model can use it too, to report problems with the config file's paths.
    """
    problems: list[Problem] = []
    if options.instance_type != spec.instance_type:
        problems.append(
            Problem(
                "instance_type",
                options.instance_type,
                f"{spec.instance_type}, the instance type of capacity plan '{spec.plan_name}'",
                f"set the endpoint's instance_type to {spec.instance_type}, or bind a plan of "
                f"{options.instance_type} instances",
            )
        )
    if options.scaling.max_instances > spec.instance_count:
        problems.append(
            Problem(
                "scaling.max_instances",
                options.scaling.max_instances,
                f"at most {spec.instance_count}, the instances capacity plan '{spec.plan_name}' reserves",
                f"lower scaling.max_instances to {spec.instance_count} or reserve a larger plan "
                "(the endpoint only gets instances from the plan)",
            )
        )
    return problems


def unknown_consent_problems(
    consented: Mapping[str, Iterable[str]], reservable: Iterable[str], extendable: Iterable[str]
) -> list[Problem]:
    """``-c purchase=`` / ``-c extend=`` names that match no plan that could be bought or extended: a typo must not
    look like consent that silently did nothing. ``consented`` maps the context key to the names given."""
    problems: list[Problem] = []
    for key, names, what in (
        (PURCHASE_CONTEXT, sorted(set(reservable)), "plans declared with mode reserve"),
        (EXTEND_CONTEXT, sorted(set(extendable)), "plans declared with an extension"),
    ):
        for name in sorted(set(consented.get(key, ())) - set(names)):
            problems.append(
                Problem(
                    f"-c {key}",
                    name,
                    f"names of {what}: {', '.join(names) or 'none declared'}",
                    f"correct the name, or declare the plan before consenting to {key} it",
                )
            )
    return problems


def raw_consent_problems(data: Any, consented: Mapping[str, Iterable[str]]) -> list[Problem]:
    """``unknown_consent_problems`` against a config as written (it may fail validation elsewhere): the names of
    its ``capacity_plans`` that reserve (no ``existing_plan_arn``, ``mode`` not ``existing``) or carry an
    ``extension``, so a mistyped consent is named in the same round as the config's own problems."""
    if not any(consented.get(key) for key in (PURCHASE_CONTEXT, EXTEND_CONTEXT)):
        return []
    plans = data.get("capacity_plans") if isinstance(data, dict) else None
    reservable, extendable = [], []
    for plan in plans if isinstance(plans, list) else []:
        if not isinstance(plan, dict) or not isinstance(plan.get("name"), str):
            continue
        mode = plan.get("mode") or ("existing" if plan.get("existing_plan_arn") else "reserve")
        if mode == "reserve":
            reservable.append(plan["name"])
        if plan.get("extension") is not None:
            extendable.append(plan["name"])
    return unknown_consent_problems(consented, reservable, extendable)


UpdatePolicyName = Literal["BLUE_GREEN", "ROLLING"]


def choose_update_policy(plan_instances: int, max_instances: int) -> UpdatePolicyName | None:
    """The endpoint update policy a plan of ``plan_instances`` has room for, or None when neither fits.

    A blue/green update launches a second fleet as large as the first (up to ``max_instances``)
    before the old one goes: it needs ``2 x max_instances``. A rolling update one instance at a time
    needs ``max_instances + 1``. An endpoint bound with ``capacity-reservations-only`` gets
    instances only from its plan, so an update the plan has no room for runs to its timeout.
    """
    if plan_instances >= 2 * max_instances:
        return "BLUE_GREEN"
    if plan_instances >= max_instances + 1:
        return "ROLLING"
    return None
