"""Buying a capacity plan: the custom resources that purchase or extend it, their handler and its grants.

A plan to reserve is a ``Custom::SageMakerCapacityPlan`` (child ``Resource``) and an extension a
``Custom::SageMakerCapacityPlanExtension`` (child ``Extension``), both served by one handler per plan
(child ``OnEvent``) behind a custom resource provider, and both retained when they leave the template.
The handler may spend (``SPENDING_ACTIONS``) only when the synth carries the deploy-time consent
(``CapacityPlan.purchase_approved`` / ``extension_approved``); otherwise it may only describe the plan.
``announce`` says at synth what a deploy would buy and whether it may.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Annotations, CfnOutput, CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import custom_resources as cr

from ..core import grants
from ..core.functions import provider_framework, python_function
from ..core.nag import acknowledge_resource
from ..settings.capacity import EXTEND_CONTEXT, PURCHASE_CONTEXT, _iso

if TYPE_CHECKING:
    from .capacity_plan import CapacityPlan

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


def purchase_handler(plan: CapacityPlan, stack: Stack) -> cr.Provider:
    """The purchase/extension handler and its provider (one per plan), created on first use."""
    if plan.provider is not None:
        return plan.provider
    function = python_function(
        plan,
        "OnEvent",
        folder="capacity_plan",
        description=f"custom resource that buys or extends capacity plan {plan.plan_name} once",
        timeout=Duration.minutes(2),
    )
    function.add_to_role_policy(
        iam.PolicyStatement(
            sid="DescribeThisPlan",
            actions=["sagemaker:DescribeTrainingPlan", "sagemaker:DescribeTrainingPlanExtensionHistory"],
            resources=plan._plan_arns_by_name(stack),
        )
    )
    # A refused change of the plan is rolled back with an Update back to it, which the handler accepts only while
    # this stack is UPDATE_ROLLBACK_IN_PROGRESS: it reads this stack's status, no other's.
    function.add_to_role_policy(
        iam.PolicyStatement(
            sid="ReadThisStacksStatus", actions=["cloudformation:DescribeStacks"], resources=[stack.stack_id]
        )
    )
    plan.on_event_function = function

    provider, plan.provider_role = provider_framework(
        plan, on_event=function, description=f"Custom resource framework of capacity plan {plan.plan_name}"
    )
    plan.provider = provider
    return provider


def grant_spending(plan: CapacityPlan, stack: Stack, sid: str, actions: list[str]) -> None:
    """Spending actions for the handler, added only when this synth carries the deploy-time consent."""
    assert plan.on_event_function is not None
    plan.on_event_function.add_to_role_policy(
        iam.PolicyStatement(sid=sid, actions=actions, resources=plan._plan_arns_by_name(stack))
    )
    if "SearchOfferings" not in plan._granted:
        plan._granted.add("SearchOfferings")
        grants.grant(
            plan.on_event_function,
            sid="SearchOfferings",
            actions=["sagemaker:SearchTrainingPlanOfferings"],
            resources=["*"],
            reason="sagemaker:SearchTrainingPlanOfferings has no resource type, so it is allowed on '*' "
            "(it reads offerings and buys nothing); X-Ray tracing needs '*' as well.",
        )


def reserve(plan: CapacityPlan, stack: Stack) -> str:
    """The purchase (child ``Resource``), its grants and outputs; returns the bought plan's ARN (a token)."""
    spec = plan.spec
    plan._granted = set()
    provider = purchase_handler(plan, stack)
    if plan.purchase_approved:
        grant_spending(plan, stack, "BuyThisPlan", ["sagemaker:CreateTrainingPlan"])
        assert plan.on_event_function is not None
        grants.grant(
            plan.on_event_function,
            sid="ReserveCapacityForThePlan",
            actions=["sagemaker:CreateReservedCapacity"],
            resources=[reserved_capacity_arns(stack)],
            reason="CreateTrainingPlan creates the plan's reserved capacity under an id SageMaker "
            "generates at purchase, so it cannot be named in advance: only CreateReservedCapacity, "
            "only in this account and region; the purchase itself (CreateTrainingPlan) is limited "
            "to this plan's name.",
        )

    properties: dict[str, str] = {
        "PlanName": plan.plan_name,
        "InstanceType": spec.instance_type,
        "InstanceCount": str(spec.instance_count),
        "DurationDays": str(spec.duration_days),
        "MaxUpfrontFeeUsd": format(spec.max_upfront_fee_usd, "f"),
        "Purchase": APPROVED if plan.purchase_approved else NOT_APPROVED,
        "ConsentName": plan.config_name,  # what the handler's "how to consent" message names
    }
    if spec.start_after is not None:
        properties["StartTimeAfter"] = _iso(spec.start_after)
    if spec.end_before is not None:
        properties["EndTimeBefore"] = _iso(spec.end_before)
    plan.custom_resource = CustomResource(
        plan,
        "Resource",
        service_token=provider.service_token,
        resource_type=RESOURCE_TYPE,
        properties=properties,
        removal_policy=RemovalPolicy.RETAIN,
    )
    plan.node.default_child = plan.custom_resource.node.default_child  # the CfnResource (escape hatch)
    data = plan.custom_resource.get_att_string
    plan.start_time = data("StartTime")
    plan.end_time = data("EndTime")
    plan.upfront_fee = data("UpfrontFee")
    plan.currency_code = data("CurrencyCode")

    CfnOutput(
        plan,
        "EndTime",
        value=plan.end_time,
        description=f"When capacity plan {plan.plan_name} ends (UTC); its endpoint gets no instances after it",
    )
    CfnOutput(
        plan,
        "UpfrontFee",
        value=f"{plan.upfront_fee} {plan.currency_code}",
        description=f"What capacity plan {plan.plan_name} cost (paid upfront)",
    )
    CfnOutput(
        plan,
        "Retained",
        value=(
            f"Capacity plan {plan.plan_name} ({spec.purchase_summary()}) is retained when this resource or stack is "
            "deleted: it is prepaid and not refundable"
        ),
        description=f"Deletion policy of capacity plan {plan.plan_name}",
    )
    return data("TrainingPlanArn")


def extend(plan: CapacityPlan, stack: Stack) -> None:
    """The extension (child ``Extension``), bought at most once per target end date, and its output."""
    extension = plan.spec.extension
    assert extension is not None
    if not hasattr(plan, "_granted"):
        plan._granted = set()
    provider = purchase_handler(plan, stack)
    if plan.extension_approved:
        grant_spending(plan, stack, "ExtendThisPlan", ["sagemaker:ExtendTrainingPlan"])
    plan.extension_resource = CustomResource(
        plan,
        "Extension",
        service_token=provider.service_token,
        resource_type=EXTENSION_RESOURCE_TYPE,
        removal_policy=RemovalPolicy.RETAIN,
        properties={
            "PlanName": plan.plan_name,
            "ExtendUntil": _iso(extension.until),
            "MaxUpfrontFeeUsd": format(extension.max_upfront_fee_usd, "f"),
            "Extend": APPROVED if plan.extension_approved else NOT_APPROVED,
            "ConsentName": plan.config_name,
        },
    )
    if plan.custom_resource is not None:
        plan.extension_resource.node.add_dependency(plan.custom_resource)
    CfnOutput(
        plan,
        "ExtendedEndTime",
        value=plan.extension_resource.get_att_string("EndTime"),
        description=f"When capacity plan {plan.plan_name} ends after its extension (UTC)",
    )


def announce(plan: CapacityPlan) -> None:
    """Say at synth what a deploy of this plan's stack would buy, and whether it may."""
    if plan.mode == "reserve":
        cap = plan.spec.max_upfront_fee_usd
        what = (
            f"capacity plan {plan.config_name} as TrainingPlanName {plan.plan_name} ({_name_origin(plan)}): "
            f"{plan.spec.purchase_summary()}, prepaid up to USD {cap}, never refunded"
        )
        if plan.purchase_approved:
            Annotations.of(plan).add_warning_v2(
                "sagemaker-llm-cdk:purchaseApproved",
                f"This deploy may BUY {what} (consent: -c {PURCHASE_CONTEXT}={plan.config_name}). Bought once; "
                f"a plan named {plan.plan_name} that exists already is adopted.",
            )
        else:
            Annotations.of(plan).add_info(
                f"Not bought by this deploy: {what}. To buy it, deploy this stack with "
                f"-c {PURCHASE_CONTEXT}={plan.config_name}; without that, the deploy fails unless a plan named "
                f"{plan.plan_name} exists (it is then adopted)."
            )
    summary = plan.extension_summary()
    if summary is not None:
        if plan.extension_approved:
            Annotations.of(plan).add_warning_v2(
                "sagemaker-llm-cdk:extensionApproved",
                f"This deploy may BUY an extension: {summary} (consent: -c {EXTEND_CONTEXT}={plan.config_name}).",
            )
        else:
            Annotations.of(plan).add_info(
                f"Not bought by this deploy: {summary}. To buy it, deploy with -c {EXTEND_CONTEXT}={plan.config_name}."
            )


def _name_origin(plan: CapacityPlan) -> str:
    if plan.spec.physical_name is not None:
        return "pinned by physical_name"
    if plan.plan_name == plan.config_name:
        return "the config name"
    return (
        f"<stack>-{plan.config_name}; a plan bought before names were stack-prefixed keeps its name only "
        "with physical_name"
    )


def acknowledge_provider(plan: CapacityPlan) -> None:
    """The custom resource framework a ``CapacityPlan`` creates (its handler's grants acknowledge themselves)."""
    if plan.provider_role is not None and plan.on_event_function is not None:
        acknowledge_resource(
            plan.provider_role,
            f"{plan.on_event_function.function_arn}:*",
            "The custom resource framework invokes the plan's purchase handler: lambda:InvokeFunction on that one "
            "function and its versions (the ':*' qualifier), nothing else.",
            actions=["lambda:InvokeFunction"],
        )
