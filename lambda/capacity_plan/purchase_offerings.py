"""Capacity plan offerings: reading SearchTrainingPlanOfferings' answer and choosing the one to buy.

An offering is bought only when it targets endpoints, has the declared instance type and length, lies inside the
declared window and costs at most MaxUpfrontFeeUsd in USD (``rejection_reason``); of those the cheapest wins, the
earliest start breaking ties (``select_offering``). When none fits, the error lists the cheapest few with the
reason each was refused and, where only the fee is in the way, the cap that would buy one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from llm_cdk_shared.problems import shown as _shown
from purchase_errors import CapacityPlanCurrencyError, NoCapacityOfferingError
from purchase_times import duration_text, iso, total_minutes, whole_days

if TYPE_CHECKING:
    from purchase_properties import CapacityPlanProperties

TARGET_RESOURCE = "endpoint"
SUPPORTED_CURRENCY = "USD"
MAX_LISTED_OFFERINGS = 5


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
            duration_minutes=total_minutes(item),
            instance_types=frozenset(c["InstanceType"] for c in capacities if c.get("InstanceType")),
            target_resources=frozenset(item.get("TargetResources") or []),
        )

    def describe(self) -> str:
        fee = f"{self.fee_raw} {self.currency or '(no currency)'}" if self.fee_raw else "fee unknown"
        return (
            f"{fee}, start {iso(self.start) or 'unknown'}, end {iso(self.end) or 'unknown'}, "
            f"{duration_text(self.duration_minutes)}"
        )


def rejection_reason(offering: Offering, props: CapacityPlanProperties) -> str | None:
    """Why an offering cannot be bought for ``props``; None if it can."""
    if TARGET_RESOURCE not in offering.target_resources:
        return f"targets {sorted(offering.target_resources)}, not endpoints"
    if offering.instance_types and offering.instance_types != {props.instance_type}:
        return f"instance type {', '.join(sorted(offering.instance_types))}, not {props.instance_type}"
    if offering.duration_minutes is not None and whole_days(offering.duration_minutes) != props.duration_days:
        return f"lasts {duration_text(offering.duration_minutes)}, not {props.duration_days} days"
    if props.start_time_after and (offering.start is None or offering.start < props.start_time_after):
        return f"starts before StartTimeAfter {iso(props.start_time_after)}"
    if props.end_time_before and (offering.end is None or offering.end > props.end_time_before):
        return f"ends after EndTimeBefore {iso(props.end_time_before)}"
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
        f"{iso(props.start_time_after) or 'any start'} to {iso(props.end_time_before) or 'any end'}"
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
