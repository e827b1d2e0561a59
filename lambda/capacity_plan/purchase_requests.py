"""The plan's three request types: Create buys a plan (or adopts one), Update changes nothing, Delete keeps it.

A plan is paid upfront and never refunded, so Create buys at most once per plan name: an existing plan of the
declared shape is adopted, one of another shape refused, and a missing one bought only with ``Purchase:
approved``. Update accepts only a new fee cap or consent (a change of what the plan is is refused, except the
rollback of a refused change); Delete makes no AWS call. The client getters are the handler's, passed in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from llm_cdk_shared import stack_status
from llm_cdk_shared.problems import shown as _shown
from purchase_errors import (
    CapacityPlanConflictError,
    CapacityPlanConsentError,
    CapacityPlanImmutableError,
    CapacityPlanNotFoundError,
)
from purchase_offerings import TARGET_RESOURCE, Offering, select_offering
from purchase_plans import as_bought, describe_plan, plan_data, plan_mismatches
from purchase_properties import IDENTITY_FIELDS, identity_of_raw
from purchase_times import iso

if TYPE_CHECKING:
    from purchase_event import CustomResourceEvent
    from purchase_properties import CapacityPlanProperties

logger = Logger()

UNUSABLE_STATUSES = ("Failed", "Expired")


def _brief(text: str) -> str:
    """``text`` cut to 80 characters (an old property that no longer parses is shown as given)."""
    return text if len(text) <= 80 else text[:77] + "..."


def _adopt_existing(
    sagemaker: Callable[[], Any], plan: dict[str, Any], props: CapacityPlanProperties
) -> dict[str, Any]:
    problems = plan_mismatches(plan, props)
    if problems and not plan_mismatches({**plan, "EndTime": None, "DurationHours": None}, props):
        bought = as_bought(sagemaker, plan)  # only its end or duration differ: an extension may have moved them
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


def on_create(sagemaker: Callable[[], Any], props: CapacityPlanProperties) -> dict[str, Any]:
    existing = describe_plan(sagemaker, props.plan_name)
    if existing is not None:
        return _adopt_existing(sagemaker, existing, props)
    if not props.approved:
        raise CapacityPlanConsentError(
            f"Capacity plan '{props.plan_name}' does not exist and this deploy did not approve buying it; nothing "
            f"was bought. To buy {props.instance_count} x {props.instance_type} for {props.duration_days} days "
            f"(window {iso(props.start_time_after) or 'any start'} to {iso(props.end_time_before) or 'any end'}, "
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
    response = sagemaker().search_training_plan_offerings(**search)
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
            "start": iso(chosen.start),
            "end": iso(chosen.end),
        },
    )
    try:
        created = sagemaker().create_training_plan(
            TrainingPlanName=props.plan_name, TrainingPlanOfferingId=chosen.offering_id
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceInUse":
            raise
        # Created concurrently (or the first read missed it): adopt it instead of buying again.
        existing = describe_plan(sagemaker, props.plan_name)
        if existing is None:
            raise CapacityPlanNotFoundError(
                f"SageMaker says a plan named '{props.plan_name}' is in use but cannot describe it; "
                "nothing more was bought. Check the plan in the SageMaker console, then deploy again."
            ) from error
        return _adopt_existing(sagemaker, existing, props)

    arn = created["TrainingPlanArn"]
    try:
        plan = sagemaker().describe_training_plan(TrainingPlanName=props.plan_name)
    except ClientError:
        logger.warning("Bought plan not readable yet; reporting the offering", extra={"plan_name": props.plan_name})
        data = {
            "TrainingPlanArn": arn,
            "TrainingPlanName": props.plan_name,
            "StartTime": iso(chosen.start),
            "EndTime": iso(chosen.end),
            "UpfrontFee": chosen.fee_raw,
            "CurrencyCode": chosen.currency,
            "InstanceType": props.instance_type,
            "InstanceCount": str(props.instance_count),
            "Status": "Pending",
        }
        return {"PhysicalResourceId": arn, "Data": data}
    return {"PhysicalResourceId": arn, "Data": plan_data(plan, props)}


def rolling_back(cloudformation: Callable[[], Any], stack_id: Any) -> bool:
    """Whether the stack is rolling an update back (``UPDATE_ROLLBACK_IN_PROGRESS``).

    An Update that changes what a plan is can only be a refused change or the rollback of one; only the stack's
    status tells them apart. When it cannot be read, the change is treated as a new one (refused): nothing is
    bought either way.
    """
    return stack_status.rolling_back(
        cloudformation, stack_id, logger=logger, otherwise="the change is treated as a new one"
    )


def _names_plan(physical_id: str, plan_name: str) -> bool:
    """Whether ``physical_id`` (the plan ARN, or its name) is the plan named ``plan_name`` (ARNs may be lowercase)."""
    return physical_id.rsplit("/", 1)[-1].lower() == plan_name.lower()


def on_update(
    sagemaker: Callable[[], Any],
    cloudformation: Callable[[], Any],
    event: CustomResourceEvent,
    props: CapacityPlanProperties,
) -> dict[str, Any]:
    old, new = identity_of_raw(event.old_resource_properties), props.identity()
    changed = [f for f in IDENTITY_FIELDS if old[f] != new[f]]
    physical_id = event.physical_resource_id or props.plan_name
    if (
        changed
        and _names_plan(physical_id, props.plan_name)
        and rolling_back(cloudformation, getattr(event, "StackId", None))
    ):
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
    plan = describe_plan(sagemaker, props.plan_name)
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
