"""CloudFormation custom resource (provider framework on_event) that buys a SageMaker capacity plan for endpoints once and never cancels it.

A capacity plan is a SageMaker *training plan* whose target resource is ``endpoint``. It is
paid upfront and never refunded, so this handler buys at most once per plan name, refuses
changes to a bought plan, and keeps the plan when the resource is deleted.

Environment variables
---------------------
POWERTOOLS_SERVICE_NAME   Logger service name (optional).
POWERTOOLS_LOG_LEVEL      Log level (optional, default INFO).

Event (from ``aws_cdk.custom_resources.Provider``; a CloudFormation custom resource event)
-----------------------------------------------------------------------------------------
RequestType: "Create" | "Update" | "Delete"
PhysicalResourceId: the plan ARN (Update/Delete)
ResourceProperties / OldResourceProperties (CloudFormation passes every value as a string):
    PlanName              1-64 chars, ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``; unique per account and region
    InstanceType          e.g. "ml.p5e.48xlarge"
    InstanceCount         "1" | "2" | "4" | "8" | "16" | "32" | "64"
    DurationDays          "1" .. "182" (whole days)
    StartTimeAfter        optional ISO-8601 date-time with offset, e.g. "2026-01-15T00:00:00Z"
    EndTimeBefore         optional ISO-8601 date-time with offset
    MaxUpfrontFeeUsd      decimal > 0; the most this resource may spend (USD)
    Purchase              "approved" (the deploy command carried ``-c purchase=<ConsentName>``) or
                          "not-approved" (adopt a plan of this name that already exists; never buy)
    ConsentName           optional: the plan's name in the config, which ``-c purchase=`` names
                          (PlanName is stack-prefixed); messages say it. Default: PlanName
    ServiceToken          ignored
Any other property is refused (a misspelt StartTimeAfter must never buy a plan without its window).

ResourceType ``Custom::SageMakerCapacityPlanExtension`` (same function; see ``on_extension``):
    PlanName              the plan to extend
    ExtendUntil           ISO-8601 date-time with offset: the plan should last at least until then
    MaxUpfrontFeeUsd      decimal > 0; the most the extension may cost (USD)
    Extend                "approved" (``-c extend=<ConsentName>`` on the deploy command) or "not-approved"
    ConsentName           optional, as above

Returns
-------
{"PhysicalResourceId": <plan ARN>, "Data": {TrainingPlanArn, TrainingPlanName, StartTime,
 EndTime (ISO-8601 UTC, "" if unknown), UpfrontFee, CurrencyCode, InstanceType,
 InstanceCount, Status}} -- every Data value is a string.

Create: DescribeTrainingPlan(PlanName); an existing plan of the same shape is adopted (retry
after a partial failure, re-created stack, new logical id), one of a different shape is refused;
an extended plan is compared as it was bought (``as_bought``: its extension history). Otherwise
SearchTrainingPlanOfferings(TargetResources=["endpoint"], ...) and CreateTrainingPlan with the
cheapest USD offering within MaxUpfrontFeeUsd and the window (ties: earliest start).
Without ``Purchase: approved`` a missing plan is never bought: the deploy fails and says how to consent.
Update: only MaxUpfrontFeeUsd / Purchase may change (no purchase, same Data);
any change of PlanName, InstanceType, InstanceCount, DurationDays, StartTimeAfter or
EndTimeBefore is refused. CloudFormation rolls a refused Update back with another Update to the
same resource, from the refused properties to the ones it holds: while the stack is
``UPDATE_ROLLBACK_IN_PROGRESS`` (DescribeStacks on the event's StackId) an Update back to the plan
the physical id names is accepted (nothing bought), so the rollback completes instead of ending in
``UPDATE_ROLLBACK_FAILED``. Delete: no AWS call; the plan is retained.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from llm_cdk_shared import clients, stack_status
from llm_cdk_shared.aws_errors import not_found
from llm_cdk_shared.problems import ShortError
from llm_cdk_shared.problems import shown as _shown

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    # classes that _models() builds on first use: Any for annotations
    CapacityPlanProperties: TypeAlias = Any
    CustomResourceEvent: TypeAlias = Any
    ExtensionProperties: TypeAlias = Any

logger = Logger()

TARGET_RESOURCE = "endpoint"
ALLOWED_INSTANCE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
MIN_DAYS, MAX_DAYS = 1, 182
SUPPORTED_CURRENCY = "USD"
MAX_LISTED_OFFERINGS = 5
MAX_MESSAGE_CHARS = 3500  # CloudFormation's whole response must stay under 4096 bytes
UNUSABLE_STATUSES = ("Failed", "Expired")
APPROVED = "approved"
NOT_APPROVED = "not-approved"
PLAN_RESOURCE_TYPE = "Custom::SageMakerCapacityPlan"
EXTENSION_RESOURCE_TYPE = "Custom::SageMakerCapacityPlanExtension"
MAX_PLAN_NAME_CHARS = 64  # TrainingPlanName: 1-64 characters (botocore's model)
MAX_EXTENSION_HOURS = 4368  # TrainingPlanExtensionDurationHours maximum (botocore's model)
EXTENDABLE_STATUSES = ("Active", "Scheduled")  # AWS: extension offerings exist only for these
IDENTITY_FIELDS = ("PlanName", "InstanceType", "InstanceCount", "DurationDays", "StartTimeAfter", "EndTimeBefore")

_PLAN_NAME_RE = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}")
_CONSENT_WORDS = (APPROVED, NOT_APPROVED)
_INSTANCE_TYPE_RE = re.compile(r"ml\.[a-z0-9][a-z0-9-]*\.[a-z0-9]+")


_sagemaker = clients.client_getter("sagemaker")
_cloudformation = clients.client_getter("cloudformation")


# --------------------------------------------------------------------------- errors


class CapacityPlanError(ShortError):
    """Base class; the message is what CloudFormation shows, so it is kept short."""

    max_chars = MAX_MESSAGE_CHARS


class CapacityPlanPropertiesError(CapacityPlanError):
    """ResourceProperties are missing or invalid (nothing was bought)."""


class CapacityPlanConflictError(CapacityPlanError):
    """A plan with this name exists but differs from the declaration or cannot be used."""


class NoCapacityOfferingError(CapacityPlanError):
    """No offering fits the fee cap, window and shape (nothing was bought)."""


class CapacityPlanCurrencyError(CapacityPlanError):
    """Offerings are priced in a currency other than USD (nothing was bought)."""


class CapacityPlanImmutableError(CapacityPlanError):
    """An update tried to change what a bought plan is."""


class CapacityPlanNotFoundError(CapacityPlanError):
    """An update or a post-conflict read found no plan of that name."""


class CapacityPlanConsentError(CapacityPlanError):
    """The purchase or extension was not approved on the deploy command (nothing was bought)."""


class CapacityPlanEventError(CapacityPlanError):
    """The event is not a custom resource event this handler can act on (no AWS call was made)."""


# --------------------------------------------------------------------------- properties


def _parse_int(value: Any, field: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{field} must be a whole number, got {_shown(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[0-9]{1,6}\s*", value):
        return int(value)
    raise ValueError(f"{field} must be a whole number, got {_shown(value)}")


def parse_instance_count(value: Any) -> int:
    count = _parse_int(value, "InstanceCount")
    if count not in ALLOWED_INSTANCE_COUNTS:
        allowed = ", ".join(str(c) for c in ALLOWED_INSTANCE_COUNTS)
        raise ValueError(f"InstanceCount {count} is not offered; use one of {allowed}")
    return count


def parse_duration_days(value: Any) -> int:
    days = _parse_int(value, "DurationDays")
    if not MIN_DAYS <= days <= MAX_DAYS:
        raise ValueError(f"DurationDays {days} is out of range; use whole days {MIN_DAYS}-{MAX_DAYS}")
    return days


def parse_plan_name(value: Any) -> str:
    if not isinstance(value, str) or len(value) > MAX_PLAN_NAME_CHARS or not _PLAN_NAME_RE.fullmatch(value):
        raise ValueError(
            f"PlanName {_shown(value)} is not a valid training plan name; use 1-64 letters, digits "
            "and hyphens, starting and ending with a letter or digit (e.g. 'llm-p5e-2026q1')"
        )
    return value


def parse_consent_name(value: Any) -> str:
    """ConsentName: the plan's config name, what ``-c purchase=`` / ``-c extend=`` name (only shown in messages)."""
    if not isinstance(value, str) or len(value) > MAX_PLAN_NAME_CHARS or not _PLAN_NAME_RE.fullmatch(value):
        raise ValueError(
            f"ConsentName {_shown(value)} is not a valid plan name; use 1-64 letters, digits and hyphens, starting "
            "and ending with a letter or digit (the plan's name in the config, e.g. 'llm-p5e-2026q1')"
        )
    return value


def parse_instance_type(value: Any) -> str:
    if not isinstance(value, str) or not _INSTANCE_TYPE_RE.fullmatch(value):
        raise ValueError(f"InstanceType {_shown(value)} is not a SageMaker instance type; use e.g. 'ml.p5e.48xlarge'")
    return value


def parse_time(value: Any, field: str) -> datetime | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(
                f"{field} {_shown(value)} is not an ISO-8601 date-time; use e.g. '2026-01-15T00:00:00Z'"
            ) from None
    else:
        raise ValueError(f"{field} must be an ISO-8601 date-time string, got {_shown(value)}")
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValueError(f"{field} {_shown(value)} has no time zone; add 'Z' or an offset, e.g. '2026-01-15T00:00:00Z'")
    return parsed.astimezone(UTC)


def parse_fee_cap(value: Any) -> Decimal:
    try:
        if isinstance(value, bool):
            raise InvalidOperation
        cap = Decimal(value.strip() if isinstance(value, str) else str(value))
    except (InvalidOperation, ValueError, TypeError):
        raise ValueError(
            f"MaxUpfrontFeeUsd {_shown(value)} is not a number; use a plain decimal in USD, e.g. '25000' or '25000.50'"
        ) from None
    if not cap.is_finite() or cap <= 0:
        raise ValueError(f"MaxUpfrontFeeUsd {_shown(value)} must be a finite amount greater than 0 (USD)")
    return cap


def parse_consent(value: Any, field: str) -> str:
    """``approved`` or ``not-approved``; anything else (``true``, ``yes``, a typo) is refused."""
    if isinstance(value, str) and value in _CONSENT_WORDS:
        return value
    raise ValueError(
        f"{field} is {_shown(value)}; it must be {APPROVED!r} (consent given on the deploy command) or {NOT_APPROVED!r}"
    )


@functools.cache
def _models() -> SimpleNamespace:
    """The ResourceProperties models of both resource types and their checked types, built on the first Create or
    Update: pydantic is not imported on a cold start, and a Delete (no properties read) never builds them."""
    from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

    def _checked_time(field: str) -> BeforeValidator:
        return BeforeValidator(lambda value: parse_time(value, field))

    # One checked type per property, shared by the plan and the extension models: each property is
    # checked by the same function, with the same message, whichever resource declares it.
    PlanName = Annotated[str, BeforeValidator(parse_plan_name)]
    ConsentName = Annotated[str, BeforeValidator(parse_consent_name)]
    InstanceType = Annotated[str, BeforeValidator(parse_instance_type)]
    InstanceCount = Annotated[int, BeforeValidator(parse_instance_count)]
    DurationDays = Annotated[int, BeforeValidator(parse_duration_days)]
    FeeCapUsd = Annotated[Decimal, BeforeValidator(parse_fee_cap)]
    StartTimeAfter = Annotated[datetime | None, _checked_time("StartTimeAfter")]
    EndTimeBefore = Annotated[datetime | None, _checked_time("EndTimeBefore")]
    Purchase = Annotated[str, BeforeValidator(lambda value: parse_consent(value, "Purchase"))]
    Extend = Annotated[str, BeforeValidator(lambda value: parse_consent(value, "Extend"))]

    def _extend_until(value: Any) -> datetime:
        parsed = parse_time(value, "ExtendUntil")
        if parsed is None:
            raise ValueError("ExtendUntil is required: the date-time the plan should last until")
        return parsed

    ExtendUntil = Annotated[datetime, BeforeValidator(_extend_until)]

    class CapacityPlanProperties(BaseModel):
        """Validated ResourceProperties (CloudFormation strings parsed to real types)."""

        model_config = ConfigDict(extra="forbid", frozen=True)

        plan_name: PlanName = Field(alias="PlanName")
        instance_type: InstanceType = Field(alias="InstanceType")
        instance_count: InstanceCount = Field(alias="InstanceCount")
        duration_days: DurationDays = Field(alias="DurationDays")
        start_time_after: StartTimeAfter = Field(default=None, alias="StartTimeAfter")
        end_time_before: EndTimeBefore = Field(default=None, alias="EndTimeBefore")
        max_upfront_fee_usd: FeeCapUsd = Field(alias="MaxUpfrontFeeUsd")
        purchase: Purchase = Field(alias="Purchase")
        consent_name: ConsentName | None = Field(default=None, alias="ConsentName")

        @property
        def approved(self) -> bool:
            return self.purchase == APPROVED

        @model_validator(mode="after")
        def _window_fits_duration(self) -> CapacityPlanProperties:
            start, end = self.start_time_after, self.end_time_before
            if start and end:
                if end <= start:
                    raise ValueError(f"EndTimeBefore {_iso(end)} must be later than StartTimeAfter {_iso(start)}")
                if end - start < timedelta(days=self.duration_days):
                    raise ValueError(
                        f"the window {_iso(start)} to {_iso(end)} is shorter than DurationDays {self.duration_days}; "
                        "widen the window or shorten the plan"
                    )
            return self

        @property
        def duration_hours(self) -> int:
            return self.duration_days * 24

        def identity(self) -> dict[str, str]:
            return {
                "PlanName": self.plan_name,
                "InstanceType": self.instance_type,
                "InstanceCount": str(self.instance_count),
                "DurationDays": str(self.duration_days),
                "StartTimeAfter": _iso(self.start_time_after),
                "EndTimeBefore": _iso(self.end_time_before),
            }

    class ExtensionProperties(BaseModel):
        """ResourceProperties of ``Custom::SageMakerCapacityPlanExtension`` (strict: unknown keys refused)."""

        model_config = ConfigDict(extra="forbid", frozen=True)

        plan_name: PlanName = Field(alias="PlanName")
        extend_until: ExtendUntil = Field(alias="ExtendUntil")
        max_upfront_fee_usd: FeeCapUsd = Field(alias="MaxUpfrontFeeUsd")
        extend: Extend = Field(alias="Extend")
        consent_name: ConsentName | None = Field(default=None, alias="ConsentName")

        @property
        def approved(self) -> bool:
            return self.extend == APPROVED

    found = locals()
    return SimpleNamespace(**{name: found[name] for name in _MODEL_NAMES})


_MODEL_NAMES = (
    "CapacityPlanProperties",
    "ExtensionProperties",
    "PlanName",
    "ConsentName",
    "InstanceType",
    "InstanceCount",
    "DurationDays",
    "FeeCapUsd",
    "StartTimeAfter",
    "EndTimeBefore",
    "Purchase",
    "Extend",
    "ExtendUntil",
)


def parse_properties(raw: Any) -> CapacityPlanProperties:
    """Validate ResourceProperties; every problem is reported at once in a CapacityPlanPropertiesError."""
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_properties(
        _models().CapacityPlanProperties,
        raw,
        error=CapacityPlanPropertiesError,
        what="capacity plan",
        not_done="nothing was bought",
    )


def _identity_of_raw(raw: Any) -> dict[str, str]:
    """Identity of OldResourceProperties; fields that no longer parse are compared as given."""
    raw = raw if isinstance(raw, dict) else {}
    parsers: dict[str, Callable[[Any], str]] = {
        "PlanName": parse_plan_name,
        "InstanceType": parse_instance_type,
        "InstanceCount": lambda v: str(parse_instance_count(v)),
        "DurationDays": lambda v: str(parse_duration_days(v)),
        "StartTimeAfter": lambda v: _iso(parse_time(v, "StartTimeAfter")),
        "EndTimeBefore": lambda v: _iso(parse_time(v, "EndTimeBefore")),
    }
    identity = {}
    for field in IDENTITY_FIELDS:
        value = raw.get(field)
        try:
            identity[field] = parsers[field](value)
        except (ValueError, TypeError):
            identity[field] = "" if value is None else str(value)
    return identity


# --------------------------------------------------------------------------- event


@functools.cache
def _event_model() -> type:
    """``CustomResourceEvent``, built on the first event (pydantic is not imported on a cold start)."""
    from llm_cdk_shared import custom_resource
    from pydantic import Field, field_validator

    class CustomResourceEvent(custom_resource.CustomResourceEvent):
        """The custom resource event (``llm_cdk_shared.custom_resource``), for the two resource types served here.

        Checked before any AWS call: RequestType is one of the three, ResourceType is one this
        function serves, Update and Delete carry the PhysicalResourceId, Update carries
        OldResourceProperties.
        """

        resource_type: str = Field(default=PLAN_RESOURCE_TYPE, alias="ResourceType")

        @field_validator("resource_type")
        @classmethod
        def _known_type(cls, value: str) -> str:
            if value not in (PLAN_RESOURCE_TYPE, EXTENSION_RESOURCE_TYPE):
                raise ValueError(
                    f"ResourceType {_shown(value)} is not served here; use {PLAN_RESOURCE_TYPE} or "
                    f"{EXTENSION_RESOURCE_TYPE}"
                )
            return value

    return CustomResourceEvent


def __getattr__(name: str) -> Any:
    """The models (``CustomResourceEvent``, ``CapacityPlanProperties``, ``ExtensionProperties``, the checked types)
    as module attributes (PEP 562), built on first access."""
    if name == "CustomResourceEvent":
        return _event_model()
    if name in _MODEL_NAMES:
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_event(event: Any) -> CustomResourceEvent:
    """The event, or a CapacityPlanEventError naming every problem (before any AWS call)."""
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_event(
        event, error=CapacityPlanEventError, not_done="nothing was done", model=_event_model()
    )


# --------------------------------------------------------------------------- helpers


def _brief(text: str) -> str:
    """``text`` cut to 80 characters (an old property that no longer parses is shown as given)."""
    return text if len(text) <= 80 else text[:77] + "..."


def _iso(value: datetime | None) -> str:
    if value is None:
        return ""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _duration_text(minutes: int | None) -> str:
    if minutes is None:
        return "unknown duration"
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    text = f"{days}d {hours}h"
    return text + (f" {mins}min" if mins else "")


def _whole_days(minutes: int) -> int:
    """Duration rounded to the nearest whole day (half a day rounds up)."""
    return math.floor((minutes + 720) / 1440)


def _total_minutes(item: dict[str, Any]) -> int | None:
    hours = item.get("DurationHours")
    if hours is None:
        return None
    return int(hours) * 60 + int(item.get("DurationMinutes") or 0)


def parse_fee(raw: Any) -> Decimal | None:
    """An UpfrontFee string ("12345.67", "1,234.50") as Decimal; None if unreadable."""
    if not isinstance(raw, str):
        return None
    try:
        fee = Decimal(raw.replace(",", "").strip())
    except InvalidOperation:
        return None
    return fee if fee.is_finite() and fee >= 0 else None


@dataclass(frozen=True)
class Offering:
    offering_id: str
    fee_raw: str
    fee: Decimal | None
    currency: str
    start: datetime | None
    end: datetime | None
    duration_minutes: int | None
    instance_types: frozenset[str]
    target_resources: frozenset[str]

    @classmethod
    def from_api(cls, item: dict[str, Any]) -> Offering:
        capacities = item.get("ReservedCapacityOfferings") or []
        starts = [c["StartTime"] for c in capacities if c.get("StartTime")]
        ends = [c["EndTime"] for c in capacities if c.get("EndTime")]
        fee_raw = item.get("UpfrontFee")
        return cls(
            offering_id=item["TrainingPlanOfferingId"],
            fee_raw="" if fee_raw is None else str(fee_raw),
            fee=parse_fee(fee_raw),
            currency=str(item.get("CurrencyCode") or ""),
            start=min(starts) if starts else None,
            end=max(ends) if ends else None,
            duration_minutes=_total_minutes(item),
            instance_types=frozenset(c["InstanceType"] for c in capacities if c.get("InstanceType")),
            target_resources=frozenset(item.get("TargetResources") or []),
        )

    def describe(self) -> str:
        fee = f"{self.fee_raw} {self.currency or '(no currency)'}" if self.fee_raw else "fee unknown"
        return (
            f"{fee}, start {_iso(self.start) or 'unknown'}, end {_iso(self.end) or 'unknown'}, "
            f"{_duration_text(self.duration_minutes)}"
        )


def rejection_reason(offering: Offering, props: CapacityPlanProperties) -> str | None:
    """Why an offering cannot be bought for ``props``; None if it can."""
    if TARGET_RESOURCE not in offering.target_resources:
        return f"targets {sorted(offering.target_resources)}, not endpoints"
    if offering.instance_types and offering.instance_types != {props.instance_type}:
        return f"instance type {', '.join(sorted(offering.instance_types))}, not {props.instance_type}"
    if offering.duration_minutes is not None and _whole_days(offering.duration_minutes) != props.duration_days:
        return f"lasts {_duration_text(offering.duration_minutes)}, not {props.duration_days} days"
    if props.start_time_after and (offering.start is None or offering.start < props.start_time_after):
        return f"starts before StartTimeAfter {_iso(props.start_time_after)}"
    if props.end_time_before and (offering.end is None or offering.end > props.end_time_before):
        return f"ends after EndTimeBefore {_iso(props.end_time_before)}"
    if offering.currency != SUPPORTED_CURRENCY:
        return f"priced in {offering.currency or 'an unstated currency'}, not {SUPPORTED_CURRENCY}"
    if offering.fee is None:
        return f"upfront fee {_shown(offering.fee_raw)} could not be read"
    if offering.fee > props.max_upfront_fee_usd:
        return f"above MaxUpfrontFeeUsd {props.max_upfront_fee_usd}"
    return None


_FAR_FUTURE = datetime.max.replace(tzinfo=UTC)


def _price_order(offering: Offering) -> tuple[bool, Decimal, datetime, str]:
    return (
        offering.fee is None,
        offering.fee if offering.fee is not None else Decimal(0),
        offering.start or _FAR_FUTURE,
        offering.offering_id,
    )


def select_offering(offerings: list[Offering], props: CapacityPlanProperties) -> Offering:
    """The cheapest acceptable offering (ties: earliest start); raises if none is acceptable."""
    acceptable = [o for o in offerings if rejection_reason(o, props) is None]
    if acceptable:
        return min(acceptable, key=_price_order)
    request = (
        f"{props.instance_count} x {props.instance_type} for {props.duration_days} days, window "
        f"{_iso(props.start_time_after) or 'any start'} to {_iso(props.end_time_before) or 'any end'}"
    )
    if not offerings:
        raise NoCapacityOfferingError(
            f"No capacity plan offering for plan '{props.plan_name}' ({request}); nothing was bought. "
            "Widen StartTimeAfter/EndTimeBefore, or change InstanceType, InstanceCount, DurationDays or the region."
        )
    currencies = {o.currency for o in offerings}
    if SUPPORTED_CURRENCY not in currencies:
        raise CapacityPlanCurrencyError(
            f"Capacity plan offerings for plan '{props.plan_name}' are priced in "
            f"{', '.join(sorted(c or '(unstated)' for c in currencies))}, not {SUPPORTED_CURRENCY}; "
            "MaxUpfrontFeeUsd can only be compared with USD fees, so nothing was bought. "
            "Buy this plan outside this stack (console or API) in your billing currency."
        )
    cheapest = sorted(offerings, key=_price_order)[:MAX_LISTED_OFFERINGS]
    lines = [f"- {o.describe()}: {rejection_reason(o, props)}" for o in cheapest]
    in_window_usd = [
        o.fee
        for o in offerings
        if o.fee is not None
        and (reason := rejection_reason(o, props)) is not None
        and reason.startswith("above MaxUpfrontFeeUsd")
    ]
    hint = (
        f"raise MaxUpfrontFeeUsd to at least {min(in_window_usd)} to buy the cheapest one that fits, or "
        if in_window_usd
        else ""
    )
    raise NoCapacityOfferingError(
        f"No capacity plan offering within MaxUpfrontFeeUsd {props.max_upfront_fee_usd} and the window for "
        f"plan '{props.plan_name}' ({request}); nothing was bought. "
        f"Cheapest of {len(offerings)} offerings found:\n" + "\n".join(lines) + f"\nTo buy one, {hint}"
        "widen StartTimeAfter/EndTimeBefore, then deploy again."
    )


def _plan_instance_type(plan: dict[str, Any]) -> str | None:
    types = {s["InstanceType"] for s in plan.get("ReservedCapacitySummaries") or [] if s.get("InstanceType")}
    return ", ".join(sorted(types)) if types else None


def _plan_instance_count(plan: dict[str, Any]) -> int | None:
    if plan.get("TotalInstanceCount") is not None:
        return int(plan["TotalInstanceCount"])
    summaries = plan.get("ReservedCapacitySummaries") or []
    counts = [s["TotalInstanceCount"] for s in summaries if s.get("TotalInstanceCount") is not None]
    return sum(counts) if counts else None


def plan_mismatches(plan: dict[str, Any], props: CapacityPlanProperties) -> list[str]:
    """How an existing plan differs from the declaration (unknown values are not counted)."""
    problems = []
    targets = plan.get("TargetResources")
    if targets and TARGET_RESOURCE not in targets:
        problems.append(f"it targets {', '.join(targets)}, not endpoints")
    instance_type = _plan_instance_type(plan)
    if instance_type is not None and instance_type != props.instance_type:
        problems.append(f"InstanceType is {instance_type}, declared {props.instance_type}")
    count = _plan_instance_count(plan)
    if count is not None and count != props.instance_count:
        problems.append(f"InstanceCount is {count}, declared {props.instance_count}")
    minutes = _total_minutes(plan)
    if minutes is not None and _whole_days(minutes) != props.duration_days:
        problems.append(f"duration is {_duration_text(minutes)}, declared DurationDays {props.duration_days}")
    start, end = plan.get("StartTime"), plan.get("EndTime")
    if props.start_time_after and start and start < props.start_time_after:
        problems.append(f"it starts {_iso(start)}, before StartTimeAfter {_iso(props.start_time_after)}")
    if props.end_time_before and end and end > props.end_time_before:
        problems.append(f"it ends {_iso(end)}, after EndTimeBefore {_iso(props.end_time_before)}")
    return problems


def describe_plan(name_or_arn: str) -> dict[str, Any] | None:
    """DescribeTrainingPlan, or None if no plan has that name."""
    try:
        return _sagemaker().describe_training_plan(TrainingPlanName=name_or_arn)
    except ClientError as error:
        if not_found(error):
            return None
        raise


def plan_data(plan: dict[str, Any], props: CapacityPlanProperties) -> dict[str, str]:
    count = _plan_instance_count(plan)
    return {
        "TrainingPlanArn": plan["TrainingPlanArn"],
        "TrainingPlanName": plan["TrainingPlanName"],
        "StartTime": _iso(plan.get("StartTime")),
        "EndTime": _iso(plan.get("EndTime")),
        "UpfrontFee": str(plan.get("UpfrontFee") or ""),
        "CurrencyCode": str(plan.get("CurrencyCode") or ""),
        "InstanceType": _plan_instance_type(plan) or props.instance_type,
        "InstanceCount": str(count if count is not None else props.instance_count),
        "Status": str(plan.get("Status") or ""),
    }


# --------------------------------------------------------------------------- request types


def as_bought(plan: dict[str, Any]) -> dict[str, Any] | None:
    """The plan as it was bought, before its extensions (None without any): an extension moves the plan's EndTime
    (and duration) past what was declared, so a plan extended by its own Extension is compared as bought. Its end
    is where the first extension that did not fail starts; its duration runs from StartTime to there."""
    starts = [
        item["StartDate"]
        for item in _extension_history(plan["TrainingPlanArn"])
        if str(item.get("Status") or "").lower() != "failed" and item.get("StartDate")
    ]
    if not starts:
        return None
    end, start = min(starts), plan.get("StartTime")
    bought = {**plan, "EndTime": end}
    if start is not None:
        minutes = max(0, int((end - start).total_seconds() // 60))
        bought.update(DurationHours=minutes // 60, DurationMinutes=minutes % 60)
    return bought


def _adopt_existing(plan: dict[str, Any], props: CapacityPlanProperties) -> dict[str, Any]:
    problems = plan_mismatches(plan, props)
    if problems and not plan_mismatches({**plan, "EndTime": None, "DurationHours": None}, props):
        bought = as_bought(plan)  # only its end or duration differ: an extension may have moved them
        if bought is not None:
            problems = plan_mismatches(bought, props)
    if problems:
        raise CapacityPlanConflictError(
            f"A capacity plan named '{props.plan_name}' already exists ({plan['TrainingPlanArn']}) but does not "
            f"match this declaration: {'; '.join(problems)}. Nothing was bought. Plans cannot be changed: "
            "declare the existing plan's exact shape, or use a new PlanName to buy a different plan."
        )
    status = plan.get("Status")
    if status in UNUSABLE_STATUSES:
        detail = f" ({plan['StatusMessage']})" if plan.get("StatusMessage") else ""
        raise CapacityPlanConflictError(
            f"A capacity plan named '{props.plan_name}' already exists but its status is {status}{detail}; "
            "an endpoint cannot use it and the name cannot be reused. Nothing was bought. "
            "Declare the plan under a new PlanName."
        )
    logger.info(
        "Adopting existing capacity plan; nothing bought", extra={"plan_name": props.plan_name, "status": status}
    )
    return {"PhysicalResourceId": plan["TrainingPlanArn"], "Data": plan_data(plan, props)}


def on_create(props: CapacityPlanProperties) -> dict[str, Any]:
    existing = describe_plan(props.plan_name)
    if existing is not None:
        return _adopt_existing(existing, props)
    if not props.approved:
        raise CapacityPlanConsentError(
            f"Capacity plan '{props.plan_name}' does not exist and this deploy did not approve buying it; nothing "
            f"was bought. To buy {props.instance_count} x {props.instance_type} for {props.duration_days} days "
            f"(window {_iso(props.start_time_after) or 'any start'} to {_iso(props.end_time_before) or 'any end'}, "
            f"at most {props.max_upfront_fee_usd} USD, paid upfront, never refunded), deploy this stack with "
            f"-c purchase={props.consent_name or props.plan_name}."
        )

    search: dict[str, Any] = {
        "TargetResources": [TARGET_RESOURCE],
        "InstanceType": props.instance_type,
        "InstanceCount": props.instance_count,
        "DurationHours": props.duration_hours,
    }
    if props.start_time_after:
        search["StartTimeAfter"] = props.start_time_after
    if props.end_time_before:
        search["EndTimeBefore"] = props.end_time_before
    response = _sagemaker().search_training_plan_offerings(**search)
    offerings = [Offering.from_api(item) for item in response.get("TrainingPlanOfferings", [])]
    logger.info("Capacity plan offerings found", extra={"plan_name": props.plan_name, "offerings": len(offerings)})
    chosen = select_offering(offerings, props)

    logger.info(
        "Buying capacity plan",
        extra={
            "plan_name": props.plan_name,
            "offering_id": chosen.offering_id,
            "upfront_fee": chosen.fee_raw,
            "currency": chosen.currency,
            "start": _iso(chosen.start),
            "end": _iso(chosen.end),
        },
    )
    try:
        created = _sagemaker().create_training_plan(
            TrainingPlanName=props.plan_name, TrainingPlanOfferingId=chosen.offering_id
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceInUse":
            raise
        # Created concurrently (or the first read missed it): adopt it instead of buying again.
        existing = describe_plan(props.plan_name)
        if existing is None:
            raise CapacityPlanNotFoundError(
                f"SageMaker says a plan named '{props.plan_name}' is in use but cannot describe it; "
                "nothing more was bought. Check the plan in the SageMaker console, then deploy again."
            ) from error
        return _adopt_existing(existing, props)

    arn = created["TrainingPlanArn"]
    try:
        plan = _sagemaker().describe_training_plan(TrainingPlanName=props.plan_name)
    except ClientError:
        logger.warning("Bought plan not readable yet; reporting the offering", extra={"plan_name": props.plan_name})
        data = {
            "TrainingPlanArn": arn,
            "TrainingPlanName": props.plan_name,
            "StartTime": _iso(chosen.start),
            "EndTime": _iso(chosen.end),
            "UpfrontFee": chosen.fee_raw,
            "CurrencyCode": chosen.currency,
            "InstanceType": props.instance_type,
            "InstanceCount": str(props.instance_count),
            "Status": "Pending",
        }
        return {"PhysicalResourceId": arn, "Data": data}
    return {"PhysicalResourceId": arn, "Data": plan_data(plan, props)}


def rolling_back(stack_id: Any) -> bool:
    """Whether the stack is rolling an update back (``UPDATE_ROLLBACK_IN_PROGRESS``).

    An Update that changes what a plan is can only be a refused change or the rollback of one; only the stack's
    status tells them apart. When it cannot be read, the change is treated as a new one (refused): nothing is
    bought either way.
    """
    return stack_status.rolling_back(
        _cloudformation, stack_id, logger=logger, otherwise="the change is treated as a new one"
    )


def _names_plan(physical_id: str, plan_name: str) -> bool:
    """Whether ``physical_id`` (the plan ARN, or its name) is the plan named ``plan_name`` (ARNs may be lowercase)."""
    return physical_id.rsplit("/", 1)[-1].lower() == plan_name.lower()


def on_update(event: CustomResourceEvent, props: CapacityPlanProperties) -> dict[str, Any]:
    old, new = _identity_of_raw(event.old_resource_properties), props.identity()
    changed = [f for f in IDENTITY_FIELDS if old[f] != new[f]]
    physical_id = event.physical_resource_id or props.plan_name
    if changed and _names_plan(physical_id, props.plan_name) and rolling_back(getattr(event, "StackId", None)):
        # The rollback of a refused change: back to the properties of the plan this resource holds.
        logger.info("Rollback to the plan this resource holds; nothing bought", extra={"changed": changed})
        changed = []
    if changed:
        changes = "; ".join(f"{f} {_brief(old[f]) or '(not set)'} -> {_brief(new[f]) or '(not set)'}" for f in changed)
        raise CapacityPlanImmutableError(
            f"Capacity plan {_shown(old['PlanName'])} is reserved and paid; it cannot be changed ({changes}). "
            "Nothing was bought or cancelled. Restore the old values, and declare a new capacity plan "
            "(new construct id and new PlanName) for the new capacity."
        )
    plan = describe_plan(props.plan_name)
    if plan is None:
        raise CapacityPlanNotFoundError(
            f"Capacity plan '{props.plan_name}' ({physical_id}) was not found in this account and region; "
            "nothing was bought. Check the plan in the SageMaker console."
        )
    logger.info("Capacity plan unchanged; nothing bought", extra={"plan_name": props.plan_name})
    return {"PhysicalResourceId": physical_id, "Data": plan_data(plan, props)}


def on_delete(event: CustomResourceEvent) -> dict[str, Any]:
    logger.info(
        "Capacity plan retained: plans are prepaid and not refundable, so nothing is cancelled",
        extra={
            "physical_resource_id": event.physical_resource_id,
            "plan_name": str(event.resource_properties.get("PlanName", "")),
        },
    )
    return {"PhysicalResourceId": event.physical_resource_id} if event.physical_resource_id else {}


# --------------------------------------------------------------------------- extension


def parse_extension_properties(raw: Any) -> ExtensionProperties:
    """ResourceProperties of ``Custom::SageMakerCapacityPlanExtension`` (``ExtensionProperties``), every problem
    reported at once in a CapacityPlanPropertiesError."""
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_properties(
        _models().ExtensionProperties,
        raw,
        error=CapacityPlanPropertiesError,
        what="capacity plan extension",
        not_done="nothing was bought",
    )


@dataclass(frozen=True)
class ExtensionOffering:
    offering_id: str
    fee_raw: str
    fee: Decimal | None
    currency: str
    start: datetime | None
    end: datetime | None

    @classmethod
    def from_api(cls, item: dict[str, Any]) -> ExtensionOffering:
        fee_raw = item.get("UpfrontFee")
        return cls(
            item["TrainingPlanExtensionOfferingId"],
            "" if fee_raw is None else str(fee_raw),
            parse_fee(fee_raw),
            str(item.get("CurrencyCode") or ""),
            item.get("StartDate"),
            item.get("EndDate"),
        )

    def describe(self) -> str:
        fee = f"{self.fee_raw} {self.currency or '(no currency)'}" if self.fee_raw else "fee unknown"
        return f"{fee}, {_iso(self.start) or 'start unknown'} to {_iso(self.end) or 'end unknown'}"


def extension_rejection(offering: ExtensionOffering, props: ExtensionProperties, plan_end: datetime) -> str | None:
    """Why an extension offering cannot be bought; None if it can."""
    if offering.start is not None and offering.start > plan_end + timedelta(minutes=1):
        return f"starts {_iso(offering.start)}, leaving a gap after the plan ends ({_iso(plan_end)})"
    if offering.end is None or offering.end < props.extend_until:
        return f"ends {_iso(offering.end) or 'at an unknown time'}, before ExtendUntil {_iso(props.extend_until)}"
    if offering.currency != SUPPORTED_CURRENCY:
        return f"priced in {offering.currency or 'an unstated currency'}, not {SUPPORTED_CURRENCY}"
    if offering.fee is None:
        return f"upfront fee {_shown(offering.fee_raw)} could not be read"
    if offering.fee > props.max_upfront_fee_usd:
        return f"above MaxUpfrontFeeUsd {props.max_upfront_fee_usd}"
    return None


def _extension_history(plan_arn: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    request: dict[str, Any] = {"TrainingPlanArn": plan_arn}
    while True:
        page = _sagemaker().describe_training_plan_extension_history(**request)
        items.extend(page.get("TrainingPlanExtensions") or [])
        token = page.get("NextToken")
        if not token:
            return items
        request["NextToken"] = token


def _extension_data(
    plan: dict[str, Any], end: datetime | None, fee: str, currency: str, offering: str
) -> dict[str, str]:
    return {
        "TrainingPlanArn": plan["TrainingPlanArn"],
        "EndTime": _iso(end),
        "UpfrontFee": fee,
        "CurrencyCode": currency,
        "ExtensionOfferingId": offering,
    }


def on_extension(request: CustomResourceEvent) -> dict[str, Any]:
    """Extend a plan so that it lasts until ExtendUntil: at most once per ExtendUntil, never refunded.

    Already long enough (its EndTime, or an extension in its history that is not Failed, reaches
    ExtendUntil): nothing is bought. In a rollback (an Update while the stack is
    ``UPDATE_ROLLBACK_IN_PROGRESS``) nothing is bought either: it answers the plan's end as it is.
    Otherwise, only with ``Extend: approved``: search the plan's
    extension offerings for the whole days missing and buy the cheapest USD one within the cap
    that starts when the plan ends and reaches ExtendUntil. Delete: retained (prepaid).
    """
    if request.request_type == "Delete":
        logger.info("Capacity plan extension retained: prepaid and not refundable")
        return {"PhysicalResourceId": request.physical_resource_id}
    props = parse_extension_properties(request.resource_properties)
    physical_id = f"{props.plan_name}/extended-until-{_iso(props.extend_until)}"
    plan = describe_plan(props.plan_name)
    if plan is None:
        raise CapacityPlanNotFoundError(
            f"Capacity plan '{props.plan_name}' was not found in this account and region, so it cannot be extended; "
            "nothing was bought."
        )
    end = plan.get("EndTime")
    if end is not None and end >= props.extend_until:
        logger.info("Plan already lasts until ExtendUntil; nothing bought", extra={"plan_name": props.plan_name})
        return {
            "PhysicalResourceId": physical_id,
            "Data": _extension_data(plan, end, "", str(plan.get("CurrencyCode") or ""), ""),
        }
    for item in _extension_history(plan["TrainingPlanArn"]):
        if (
            str(item.get("Status") or "").lower() != "failed"
            and item.get("EndDate")
            and item["EndDate"] >= props.extend_until
        ):
            logger.info(
                "An extension to ExtendUntil was bought already; nothing bought again",
                extra={"plan_name": props.plan_name, "offering": item.get("TrainingPlanExtensionOfferingId")},
            )
            return {
                "PhysicalResourceId": physical_id,
                "Data": _extension_data(
                    plan,
                    item["EndDate"],
                    str(item.get("UpfrontFee") or ""),
                    str(item.get("CurrencyCode") or ""),
                    str(item.get("TrainingPlanExtensionOfferingId") or ""),
                ),
            }
    if request.request_type == "Update" and rolling_back(getattr(request, "StackId", None)):
        # A rollback buys nothing and fails nothing (that would end in UPDATE_ROLLBACK_FAILED): the plan as it is.
        logger.warning(
            "Rollback to an ExtendUntil the plan does not reach; nothing bought",
            extra={"plan_name": props.plan_name, "end": _iso(end)},
        )
        return {
            "PhysicalResourceId": physical_id,
            "Data": _extension_data(plan, end, "", str(plan.get("CurrencyCode") or ""), ""),
        }
    status = plan.get("Status")
    if status not in EXTENDABLE_STATUSES or end is None:
        raise CapacityPlanConflictError(
            f"Capacity plan '{props.plan_name}' is {status} (end {_iso(end) or 'unknown'}); only Active or Scheduled plans "
            "can be extended. Nothing was bought. Reserve a new plan under a new name instead."
        )
    hours = math.ceil((props.extend_until - end).total_seconds() / 86400) * 24
    if hours > MAX_EXTENSION_HOURS:
        raise CapacityPlanPropertiesError(
            f"Extending capacity plan '{props.plan_name}' from {_iso(end)} to {_iso(props.extend_until)} needs {hours} "
            f"hours; SageMaker extends by at most {MAX_EXTENSION_HOURS}. Nothing was bought. Choose an earlier ExtendUntil."
        )
    if not props.approved:
        raise CapacityPlanConsentError(
            f"Capacity plan '{props.plan_name}' ends {_iso(end)}; extending it to {_iso(props.extend_until)} "
            f"({hours // 24} days, at most {props.max_upfront_fee_usd} USD, paid upfront, never refunded) was not "
            f"approved by this deploy, so nothing was bought. Deploy this stack with -c extend={props.consent_name or props.plan_name}."
        )
    response = _sagemaker().search_training_plan_offerings(TrainingPlanArn=plan["TrainingPlanArn"], DurationHours=hours)
    offerings = [ExtensionOffering.from_api(i) for i in response.get("TrainingPlanExtensionOfferings") or []]
    acceptable = [o for o in offerings if extension_rejection(o, props, end) is None]
    if not acceptable:
        listed = sorted(offerings, key=lambda o: (o.fee is None, o.fee or Decimal(0)))[:MAX_LISTED_OFFERINGS]
        lines = "".join(f"\n- {o.describe()}: {extension_rejection(o, props, end)}" for o in listed)
        raise NoCapacityOfferingError(
            f"No extension offering for capacity plan '{props.plan_name}' reaches {_iso(props.extend_until)} within "
            f"MaxUpfrontFeeUsd {props.max_upfront_fee_usd}; nothing was bought. {len(offerings)} offering(s) found:"
            f"{lines or ' none'}\nRaise the cap, choose another ExtendUntil, or reserve a new plan."
        )
    chosen = min(acceptable, key=lambda o: (o.fee, o.offering_id))
    logger.info(
        "Extending capacity plan",
        extra={
            "plan_name": props.plan_name,
            "offering_id": chosen.offering_id,
            "upfront_fee": chosen.fee_raw,
            "end": _iso(chosen.end),
        },
    )
    _sagemaker().extend_training_plan(TrainingPlanExtensionOfferingId=chosen.offering_id)
    return {
        "PhysicalResourceId": physical_id,
        "Data": _extension_data(plan, chosen.end, chosen.fee_raw, chosen.currency, chosen.offering_id),
    }


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse_event(event)
    logger.append_keys(request_type=request.request_type, physical_resource_id=request.physical_resource_id)
    if request.resource_type == EXTENSION_RESOURCE_TYPE:
        return on_extension(request)
    if request.request_type == "Delete":
        return on_delete(request)
    props = parse_properties(request.resource_properties)
    logger.append_keys(plan_name=props.plan_name)
    if request.request_type == "Create":
        return on_create(props)
    return on_update(request, props)
