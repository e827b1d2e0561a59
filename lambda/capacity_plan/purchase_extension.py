"""The extension resource (``Custom::SageMakerCapacityPlanExtension``): a plan made to last until ExtendUntil.

An extension is bought at most once per ExtendUntil and never refunded: nothing is bought when the plan (or an
extension in its history that did not fail) already reaches ExtendUntil, nor in a rollback; otherwise, with
``Extend: approved``, the cheapest USD extension offering within the cap that starts when the plan ends. The
client getters are the handler's, passed in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from llm_cdk_shared.problems import shown as _shown
from purchase_errors import (
    CapacityPlanConflictError,
    CapacityPlanConsentError,
    CapacityPlanNotFoundError,
    CapacityPlanPropertiesError,
    NoCapacityOfferingError,
)
from purchase_offerings import MAX_LISTED_OFFERINGS, SUPPORTED_CURRENCY, parse_fee
from purchase_plans import describe_plan, extension_history
from purchase_properties import parse_extension_properties
from purchase_requests import rolling_back
from purchase_times import iso

if TYPE_CHECKING:
    from purchase_event import CustomResourceEvent
    from purchase_properties import ExtensionProperties

logger = Logger()

MAX_EXTENSION_HOURS = 4368  # TrainingPlanExtensionDurationHours maximum (botocore's model)
EXTENDABLE_STATUSES = ("Active", "Scheduled")  # AWS: extension offerings exist only for these


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
        return f"{fee}, {iso(self.start) or 'start unknown'} to {iso(self.end) or 'end unknown'}"


def extension_rejection(offering: ExtensionOffering, props: ExtensionProperties, plan_end: datetime) -> str | None:
    """Why an extension offering cannot be bought; None if it can."""
    if offering.start is not None and offering.start > plan_end + timedelta(minutes=1):
        return f"starts {iso(offering.start)}, leaving a gap after the plan ends ({iso(plan_end)})"
    if offering.end is None or offering.end < props.extend_until:
        return f"ends {iso(offering.end) or 'at an unknown time'}, before ExtendUntil {iso(props.extend_until)}"
    if offering.currency != SUPPORTED_CURRENCY:
        return f"priced in {offering.currency or 'an unstated currency'}, not {SUPPORTED_CURRENCY}"
    if offering.fee is None:
        return f"upfront fee {_shown(offering.fee_raw)} could not be read"
    if offering.fee > props.max_upfront_fee_usd:
        return f"above MaxUpfrontFeeUsd {props.max_upfront_fee_usd}"
    return None


def _extension_data(
    plan: dict[str, Any], end: datetime | None, fee: str, currency: str, offering: str
) -> dict[str, str]:
    return {
        "TrainingPlanArn": plan["TrainingPlanArn"],
        "EndTime": iso(end),
        "UpfrontFee": fee,
        "CurrencyCode": currency,
        "ExtensionOfferingId": offering,
    }


def on_extension(
    sagemaker: Callable[[], Any], cloudformation: Callable[[], Any], request: CustomResourceEvent
) -> dict[str, Any]:
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
    physical_id = f"{props.plan_name}/extended-until-{iso(props.extend_until)}"
    plan = describe_plan(sagemaker, props.plan_name)
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
    for item in extension_history(sagemaker, plan["TrainingPlanArn"]):
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
    if request.request_type == "Update" and rolling_back(cloudformation, getattr(request, "StackId", None)):
        # A rollback buys nothing and fails nothing (that would end in UPDATE_ROLLBACK_FAILED): the plan as it is.
        logger.warning(
            "Rollback to an ExtendUntil the plan does not reach; nothing bought",
            extra={"plan_name": props.plan_name, "end": iso(end)},
        )
        return {
            "PhysicalResourceId": physical_id,
            "Data": _extension_data(plan, end, "", str(plan.get("CurrencyCode") or ""), ""),
        }
    status = plan.get("Status")
    if status not in EXTENDABLE_STATUSES or end is None:
        raise CapacityPlanConflictError(
            f"Capacity plan '{props.plan_name}' is {status} (end {iso(end) or 'unknown'}); only Active or Scheduled "
            "plans can be extended. Nothing was bought. Reserve a new plan under a new name instead."
        )
    hours = math.ceil((props.extend_until - end).total_seconds() / 86400) * 24
    if hours > MAX_EXTENSION_HOURS:
        raise CapacityPlanPropertiesError(
            f"Extending capacity plan '{props.plan_name}' from {iso(end)} to {iso(props.extend_until)} needs {hours} "
            f"hours; SageMaker extends by at most {MAX_EXTENSION_HOURS}. Nothing was bought. "
            "Choose an earlier ExtendUntil."
        )
    if not props.approved:
        raise CapacityPlanConsentError(
            f"Capacity plan '{props.plan_name}' ends {iso(end)}; extending it to {iso(props.extend_until)} "
            f"({hours // 24} days, at most {props.max_upfront_fee_usd} USD, paid upfront, never refunded) was not "
            "approved by this deploy, so nothing was bought. "
            f"Deploy this stack with -c extend={props.consent_name or props.plan_name}."
        )
    response = sagemaker().search_training_plan_offerings(TrainingPlanArn=plan["TrainingPlanArn"], DurationHours=hours)
    offerings = [ExtensionOffering.from_api(i) for i in response.get("TrainingPlanExtensionOfferings") or []]
    acceptable = [o for o in offerings if extension_rejection(o, props, end) is None]
    if not acceptable:
        listed = sorted(offerings, key=lambda o: (o.fee is None, o.fee or Decimal(0)))[:MAX_LISTED_OFFERINGS]
        lines = "".join(f"\n- {o.describe()}: {extension_rejection(o, props, end)}" for o in listed)
        raise NoCapacityOfferingError(
            f"No extension offering for capacity plan '{props.plan_name}' reaches {iso(props.extend_until)} within "
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
            "end": iso(chosen.end),
        },
    )
    sagemaker().extend_training_plan(TrainingPlanExtensionOfferingId=chosen.offering_id)
    return {
        "PhysicalResourceId": physical_id,
        "Data": _extension_data(plan, chosen.end, chosen.fee_raw, chosen.currency, chosen.offering_id),
    }
