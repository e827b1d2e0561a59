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
    PurchaseAcknowledged  must be "true" (the plan is paid upfront and never refunded)
    ServiceToken          ignored

Returns
-------
{"PhysicalResourceId": <plan ARN>, "Data": {TrainingPlanArn, TrainingPlanName, StartTime,
 EndTime (ISO-8601 UTC, "" if unknown), UpfrontFee, CurrencyCode, InstanceType,
 InstanceCount, Status}} -- every Data value is a string.

Create: DescribeTrainingPlan(PlanName); an existing plan of the same shape is adopted (retry
after a partial failure, re-created stack), one of a different shape is refused. Otherwise
SearchTrainingPlanOfferings(TargetResources=["endpoint"], ...) and CreateTrainingPlan with the
cheapest USD offering within MaxUpfrontFeeUsd and the window (ties: earliest start).
Update: only MaxUpfrontFeeUsd / PurchaseAcknowledged may change (no purchase, same Data);
any change of PlanName, InstanceType, InstanceCount, DurationDays, StartTimeAfter or
EndTimeBefore is refused. Delete: no AWS call; the plan is retained.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

import boto3
from aws_lambda_powertools import Logger
from botocore.config import Config
from botocore.exceptions import ClientError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

logger = Logger()

TARGET_RESOURCE = "endpoint"
ALLOWED_INSTANCE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
MIN_DAYS, MAX_DAYS = 1, 182
SUPPORTED_CURRENCY = "USD"
MAX_LISTED_OFFERINGS = 5
MAX_MESSAGE_CHARS = 3500  # CloudFormation's whole response must stay under 4096 bytes
UNUSABLE_STATUSES = ("Failed", "Expired")
IDENTITY_FIELDS = ("PlanName", "InstanceType", "InstanceCount", "DurationDays", "StartTimeAfter", "EndTimeBefore")

_PLAN_NAME_RE = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}")
_INSTANCE_TYPE_RE = re.compile(r"ml\.[a-z0-9][a-z0-9-]*\.[a-z0-9]+")
_NOT_FOUND_MESSAGE_RE = re.compile(r"not found|does not exist|could not find|cannot find", re.IGNORECASE)


@functools.cache
def _sagemaker():
    return boto3.client("sagemaker", config=Config(retries={"mode": "adaptive", "max_attempts": 8}))


# --------------------------------------------------------------------------- errors


class CapacityPlanError(Exception):
    """Base class; the message is what CloudFormation shows, so it is kept short."""

    def __init__(self, message: str) -> None:
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[: MAX_MESSAGE_CHARS - 15] + " ...(truncated)"
        super().__init__(message)


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


# --------------------------------------------------------------------------- properties


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


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
    if not isinstance(value, str) or not _PLAN_NAME_RE.fullmatch(value):
        raise ValueError(
            f"PlanName {_shown(value)} is not a valid training plan name; use 1-64 letters, digits "
            "and hyphens, starting and ending with a letter or digit (e.g. 'llm-p5e-2026q1')"
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
        raise ValueError(
            f"{field} {_shown(value)} has no time zone; add 'Z' or an offset, e.g. '2026-01-15T00:00:00Z'"
        )
    return parsed.astimezone(timezone.utc)


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


def parse_acknowledgement(value: Any) -> bool:
    if value is True or (isinstance(value, str) and value.strip().lower() == "true"):
        return True
    raise ValueError(
        f'PurchaseAcknowledged is {_shown(value)}; it must be "true" to confirm that the capacity plan is '
        "paid upfront (up to MaxUpfrontFeeUsd) and never refunded"
    )


class CapacityPlanProperties(BaseModel):
    """Validated ResourceProperties (CloudFormation strings parsed to real types)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    plan_name: str = Field(alias="PlanName")
    instance_type: str = Field(alias="InstanceType")
    instance_count: int = Field(alias="InstanceCount")
    duration_days: int = Field(alias="DurationDays")
    start_time_after: datetime | None = Field(default=None, alias="StartTimeAfter")
    end_time_before: datetime | None = Field(default=None, alias="EndTimeBefore")
    max_upfront_fee_usd: Decimal = Field(alias="MaxUpfrontFeeUsd")
    purchase_acknowledged: bool = Field(alias="PurchaseAcknowledged")

    @field_validator("plan_name", mode="before")
    @classmethod
    def _check_plan_name(cls, value: Any) -> str:
        return parse_plan_name(value)

    @field_validator("instance_type", mode="before")
    @classmethod
    def _check_instance_type(cls, value: Any) -> str:
        return parse_instance_type(value)

    @field_validator("instance_count", mode="before")
    @classmethod
    def _check_instance_count(cls, value: Any) -> int:
        return parse_instance_count(value)

    @field_validator("duration_days", mode="before")
    @classmethod
    def _check_duration_days(cls, value: Any) -> int:
        return parse_duration_days(value)

    @field_validator("start_time_after", mode="before")
    @classmethod
    def _check_start(cls, value: Any) -> datetime | None:
        return parse_time(value, "StartTimeAfter")

    @field_validator("end_time_before", mode="before")
    @classmethod
    def _check_end(cls, value: Any) -> datetime | None:
        return parse_time(value, "EndTimeBefore")

    @field_validator("max_upfront_fee_usd", mode="before")
    @classmethod
    def _check_fee_cap(cls, value: Any) -> Decimal:
        return parse_fee_cap(value)

    @field_validator("purchase_acknowledged", mode="before")
    @classmethod
    def _check_acknowledgement(cls, value: Any) -> bool:
        return parse_acknowledgement(value)

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


def parse_properties(raw: Any) -> CapacityPlanProperties:
    """Validate ResourceProperties; every problem is reported at once in a CapacityPlanPropertiesError."""
    if not isinstance(raw, dict):
        raise CapacityPlanPropertiesError("Capacity plan ResourceProperties are missing; nothing was bought.")
    try:
        return CapacityPlanProperties.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"])
            message = str(error["msg"]).removeprefix("Value error, ")
            if error["type"] == "missing":
                problems.append(f"{field}: required property is missing")
            elif not field or message.startswith(field):
                problems.append(message)
            else:
                problems.append(f"{field}: {message}")
        raise CapacityPlanPropertiesError(
            "Invalid capacity plan properties (nothing was bought):\n- " + "\n- ".join(problems)
        ) from None


def _identity_of_raw(raw: Any) -> dict[str, str]:
    """Identity of OldResourceProperties; fields that no longer parse are compared as given."""
    raw = raw if isinstance(raw, dict) else {}
    parsers = {
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


class CustomResourceEvent(BaseModel):
    """The fields of a CloudFormation custom resource event this handler reads."""

    model_config = ConfigDict(extra="allow")

    request_type: Literal["Create", "Update", "Delete"] = Field(alias="RequestType")
    physical_resource_id: str | None = Field(default=None, alias="PhysicalResourceId")
    resource_properties: dict[str, Any] = Field(default_factory=dict, alias="ResourceProperties")
    old_resource_properties: dict[str, Any] | None = Field(default=None, alias="OldResourceProperties")


# --------------------------------------------------------------------------- helpers


def _iso(value: datetime | None) -> str:
    if value is None:
        return ""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


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


_FAR_FUTURE = datetime.max.replace(tzinfo=timezone.utc)


def _price_order(offering: Offering) -> tuple:
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


def _is_not_found(error: ClientError) -> bool:
    code = error.response.get("Error", {}).get("Code", "")
    message = error.response.get("Error", {}).get("Message", "")
    if code in ("ResourceNotFound", "ResourceNotFoundException"):
        return True
    # Some SageMaker Describe* calls report a missing resource as ValidationException.
    return code == "ValidationException" and bool(_NOT_FOUND_MESSAGE_RE.search(message))


def describe_plan(name_or_arn: str) -> dict[str, Any] | None:
    """DescribeTrainingPlan, or None if no plan has that name."""
    try:
        return _sagemaker().describe_training_plan(TrainingPlanName=name_or_arn)
    except ClientError as error:
        if _is_not_found(error):
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


def _adopt_existing(plan: dict[str, Any], props: CapacityPlanProperties) -> dict[str, Any]:
    problems = plan_mismatches(plan, props)
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
    logger.info("Adopting existing capacity plan; nothing bought", extra={"plan_name": props.plan_name, "status": status})
    return {"PhysicalResourceId": plan["TrainingPlanArn"], "Data": plan_data(plan, props)}


def on_create(props: CapacityPlanProperties) -> dict[str, Any]:
    existing = describe_plan(props.plan_name)
    if existing is not None:
        return _adopt_existing(existing, props)

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


def on_update(event: CustomResourceEvent, props: CapacityPlanProperties) -> dict[str, Any]:
    old, new = _identity_of_raw(event.old_resource_properties), props.identity()
    changed = [f for f in IDENTITY_FIELDS if old[f] != new[f]]
    if changed:
        changes = "; ".join(f"{f} {old[f] or '(not set)'} -> {new[f] or '(not set)'}" for f in changed)
        raise CapacityPlanImmutableError(
            f"Capacity plan '{old['PlanName']}' is reserved and paid; it cannot be changed ({changes}). "
            "Nothing was bought or cancelled. Restore the old values, and declare a new capacity plan "
            "(new construct id and new PlanName) for the new capacity."
        )
    physical_id = event.physical_resource_id or props.plan_name
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


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        request = CustomResourceEvent.model_validate(event)
    except ValidationError as exc:
        raise CapacityPlanPropertiesError(
            f"Not a CloudFormation custom resource event: {exc.error_count()} problem(s), "
            f"e.g. {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}"
        ) from None
    logger.append_keys(request_type=request.request_type, physical_resource_id=request.physical_resource_id)
    if request.request_type == "Delete":
        return on_delete(request)
    props = parse_properties(request.resource_properties)
    logger.append_keys(plan_name=props.plan_name)
    if request.request_type == "Create":
        return on_create(props)
    return on_update(request, props)
