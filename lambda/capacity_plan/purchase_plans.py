"""Existing capacity plans: reading one (DescribeTrainingPlan, its extension history) and comparing it with a
declaration.

A plan of the declared name that already exists is adopted when its shape matches (``plan_mismatches``); a plan
that was extended is compared as it was bought (``as_bought``), since an extension moves its end. ``plan_data`` is
the resource's Data: what the plan is, every value a string. The SageMaker client getter is the handler's, passed in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from llm_cdk_shared.aws_errors import not_found
from purchase_offerings import TARGET_RESOURCE
from purchase_times import duration_text, iso, total_minutes, whole_days

if TYPE_CHECKING:
    from purchase_properties import CapacityPlanProperties


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
    minutes = total_minutes(plan)
    if minutes is not None and whole_days(minutes) != props.duration_days:
        problems.append(f"duration is {duration_text(minutes)}, declared DurationDays {props.duration_days}")
    start, end = plan.get("StartTime"), plan.get("EndTime")
    if props.start_time_after and start and start < props.start_time_after:
        problems.append(f"it starts {iso(start)}, before StartTimeAfter {iso(props.start_time_after)}")
    if props.end_time_before and end and end > props.end_time_before:
        problems.append(f"it ends {iso(end)}, after EndTimeBefore {iso(props.end_time_before)}")
    return problems


def describe_plan(sagemaker: Callable[[], Any], name_or_arn: str) -> dict[str, Any] | None:
    """DescribeTrainingPlan, or None if no plan has that name."""
    try:
        return sagemaker().describe_training_plan(TrainingPlanName=name_or_arn)
    except ClientError as error:
        if not_found(error):
            return None
        raise


def plan_data(plan: dict[str, Any], props: CapacityPlanProperties) -> dict[str, str]:
    count = _plan_instance_count(plan)
    return {
        "TrainingPlanArn": plan["TrainingPlanArn"],
        "TrainingPlanName": plan["TrainingPlanName"],
        "StartTime": iso(plan.get("StartTime")),
        "EndTime": iso(plan.get("EndTime")),
        "UpfrontFee": str(plan.get("UpfrontFee") or ""),
        "CurrencyCode": str(plan.get("CurrencyCode") or ""),
        "InstanceType": _plan_instance_type(plan) or props.instance_type,
        "InstanceCount": str(count if count is not None else props.instance_count),
        "Status": str(plan.get("Status") or ""),
    }


def as_bought(sagemaker: Callable[[], Any], plan: dict[str, Any]) -> dict[str, Any] | None:
    """The plan as it was bought, before its extensions (None without any): an extension moves the plan's EndTime
    (and duration) past what was declared, so a plan extended by its own Extension is compared as bought. Its end
    is where the first extension that did not fail starts; its duration runs from StartTime to there."""
    starts = [
        item["StartDate"]
        for item in extension_history(sagemaker, plan["TrainingPlanArn"])
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


def extension_history(sagemaker: Callable[[], Any], plan_arn: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    request: dict[str, Any] = {"TrainingPlanArn": plan_arn}
    while True:
        page = sagemaker().describe_training_plan_extension_history(**request)
        items.extend(page.get("TrainingPlanExtensions") or [])
        token = page.get("NextToken")
        if not token:
            return items
        request["NextToken"] = token
