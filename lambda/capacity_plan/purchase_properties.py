"""The ResourceProperties of both resource types: each property's check, and the models built from them.

CloudFormation passes every property as a string. Each property has one checking function (``parse_*``), used by
the plan's model (``CapacityPlanProperties``) and the extension's (``ExtensionProperties``) alike, so a property is
refused with the same message whichever resource declares it; unknown properties are refused. The models are
pydantic classes built on the first Create or Update (``_models``), never on a cold start or a Delete.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any

from llm_cdk_shared.problems import shown as _shown
from purchase_errors import CapacityPlanPropertiesError
from purchase_times import iso

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    # classes that _models() builds on first use: Any for annotations
    CapacityPlanProperties: TypeAlias = Any
    ExtensionProperties: TypeAlias = Any

ALLOWED_INSTANCE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
MIN_DAYS, MAX_DAYS = 1, 182
APPROVED = "approved"
NOT_APPROVED = "not-approved"
MAX_PLAN_NAME_CHARS = 64  # TrainingPlanName: 1-64 characters (botocore's model)
IDENTITY_FIELDS = ("PlanName", "InstanceType", "InstanceCount", "DurationDays", "StartTimeAfter", "EndTimeBefore")

_PLAN_NAME_RE = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}")
_CONSENT_WORDS = (APPROVED, NOT_APPROVED)
_INSTANCE_TYPE_RE = re.compile(r"ml\.[a-z0-9][a-z0-9-]*\.[a-z0-9]+")


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
                    raise ValueError(f"EndTimeBefore {iso(end)} must be later than StartTimeAfter {iso(start)}")
                if end - start < timedelta(days=self.duration_days):
                    raise ValueError(
                        f"the window {iso(start)} to {iso(end)} is shorter than DurationDays {self.duration_days}; "
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
                "StartTimeAfter": iso(self.start_time_after),
                "EndTimeBefore": iso(self.end_time_before),
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
    return SimpleNamespace(**{name: found[name] for name in MODEL_NAMES})


MODEL_NAMES = (
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


def identity_of_raw(raw: Any) -> dict[str, str]:
    """Identity of OldResourceProperties; fields that no longer parse are compared as given."""
    raw = raw if isinstance(raw, dict) else {}
    parsers: dict[str, Callable[[Any], str]] = {
        "PlanName": parse_plan_name,
        "InstanceType": parse_instance_type,
        "InstanceCount": lambda v: str(parse_instance_count(v)),
        "DurationDays": lambda v: str(parse_duration_days(v)),
        "StartTimeAfter": lambda v: iso(parse_time(v, "StartTimeAfter")),
        "EndTimeBefore": lambda v: iso(parse_time(v, "EndTimeBefore")),
    }
    identity = {}
    for field in IDENTITY_FIELDS:
        value = raw.get(field)
        try:
            identity[field] = parsers[field](value)
        except (ValueError, TypeError):
            identity[field] = "" if value is None else str(value)
    return identity
