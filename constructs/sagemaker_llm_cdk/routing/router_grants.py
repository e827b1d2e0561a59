"""Who the inference router's functions are: the owner tags the handler sets, and the IAM that rests on them.

The handler tags every router it creates with the stack id and the custom resource's logical id
(``OWNER_TAGS``). The functions may manage the router of this resource's name (or, for a stack-prefixed name,
every ``<stack name>-*`` router, so a rename's cleanup can delete the old one), and describe, update and delete
any router of the account and region whose owner tags are this resource's; the on-event function may read any
router's tags, to tell this resource's earlier router from one someone else made. ``tag_problems`` keeps the
user's ``tags`` clear of the owner tags' prefix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from aws_cdk import Aws, Stack

from ..core import grants
from ..core.errors import Problem
from ..core.nag import acknowledge_resource
from ..core.naming import stack_prefix
from .router_health import METRICS_NAMESPACE

if TYPE_CHECKING:
    from .router import InferenceRouter

STACK_TAG = "sagemaker-llm-cdk:stack-id"
LOGICAL_ID_TAG = "sagemaker-llm-cdk:logical-id"
OWNER_TAGS = (STACK_TAG, LOGICAL_ID_TAG)
"""The tags the handler sets on each router it creates: the StackId and the custom resource's LogicalResourceId
(the handler's ``STACK_TAG`` and ``LOGICAL_ID_TAG``; a test keeps the two equal). Tags of ``tags`` may not use the
``sagemaker-llm-cdk:`` prefix."""
MAX_TAGS = 48
"""Tags a router may take from ``tags``: SageMaker's 50 per resource, less the two owner tags."""
OWNED_ROUTER_ACTIONS = (
    "sagemaker:DescribeInferenceRouter",
    "sagemaker:UpdateInferenceRouter",
    "sagemaker:DeleteInferenceRouter",
)
"""What the handler does to a router by name after a rename moved the policy away from it (the cleanup's delete and
its wait; a rollback's update and its wait): AWS evaluates ``aws:ResourceTag`` for exactly these three (and the
invoke actions), so they are allowed on any router whose owner tags are this resource's."""
MANAGE_ACTIONS = (
    "sagemaker:CreateInferenceRouter",
    "sagemaker:DescribeInferenceRouter",
    "sagemaker:UpdateInferenceRouter",
    "sagemaker:DeleteInferenceRouter",
    "sagemaker:AddTags",
    "sagemaker:DeleteTags",
)
DESCRIBE_DESTINATION_ACTIONS = ("sagemaker:DescribeEndpoint", "sagemaker:DescribeInferenceComponent")
"""SageMaker checks each destination with the caller's credentials when the router is created and described
(AWS's get-started policy grants these on the destinations)."""


_RENAME_REASON = (
    "A new router_name replaces the router: CloudFormation deletes the old router after the policy already "
    "names the new one, so the stack's functions manage the routers named <stack name>-*, the names "
    "this stack gives its routers."
)


_OWNED_REASON = (
    "A new router_name moves this policy to the new router before CloudFormation's cleanup deletes the old "
    "one (and a rollback brings the old one back): describe, update and delete on inference-router/* only "
    f"where the router's {STACK_TAG} and {LOGICAL_ID_TAG} tags, which the handler sets when it creates a "
    "router, name this stack and this custom resource."
)
_OWNER_TAGS_REASON = (
    "sagemaker:ListTags on inference-router/* reads tags only: before the rollback of a rename brings "
    "this resource's earlier router back, the handler reads its owner tags (a router of that name "
    "that this resource did not create is never adopted), and that name is not this policy's any more."
)


def tag_problems(tags: Mapping[str, str]) -> list[Problem]:
    """What the handler would refuse in a router's ``tags``: the owner tags' prefix, or more than ``MAX_TAGS``."""
    problems = [
        Problem(
            f"tags[{key!r}]",
            key,
            "a tag key that does not start with 'sagemaker-llm-cdk:' (the owner tags the handler sets use it)",
            "rename the tag",
        )
        for key in tags
        if key.startswith("sagemaker-llm-cdk:")
    ]
    if len(tags) > MAX_TAGS:
        problems.append(
            Problem(
                "tags",
                len(tags),
                f"at most {MAX_TAGS} tags (SageMaker's 50 per router, less the two owner tags)",
                "remove tags",
            )
        )
    return problems


def manage_arns(router: InferenceRouter, stack: Stack, router_arns: Sequence[str]) -> list[str]:
    """The routers the functions manage by name: ``router_arns``, or every ``<stack name>-*`` router when the
    router's name is stack-prefixed (a rename's cleanup deletes the old router under the new policy)."""
    prefix = stack_prefix(router, field="router_name")
    if not router.router_name.startswith(f"{prefix}-"):
        return list(router_arns)
    return list(
        dict.fromkeys(
            stack.format_arn(service="sagemaker", resource="inference-router", resource_name=f"{form}-*")
            for form in (prefix, prefix.lower())
        )
    )


def grant_functions(router: InferenceRouter, managed: list[str]) -> None:
    """Each function's actions on the ``managed`` routers and on the destinations; the check's metric writes."""
    destinations = router.destination_arns()
    for function, actions in (
        (router.on_event_function, MANAGE_ACTIONS),
        (
            router.is_complete_function,
            (
                "sagemaker:DescribeInferenceRouter",
                "sagemaker:DeleteInferenceRouter",
                "sagemaker:UpdateInferenceRouter",
            ),
        ),
        (router.check_function, ("sagemaker:DescribeInferenceRouter",)),
    ):
        grants.grant(function, sid="ManageThisRouter", actions=list(actions), resources=managed, reason=_RENAME_REASON)
        grants.grant(
            function,
            sid="DescribeTheDestinations",
            actions=list(DESCRIBE_DESTINATION_ACTIONS),
            resources=destinations,
        )
    grants.grant(
        router.check_function,
        sid="PublishRouterHealth",
        actions=["cloudwatch:PutMetricData"],
        resources=["*"],
        conditions={"StringEquals": {"cloudwatch:namespace": METRICS_NAMESPACE}},
        reason="cloudwatch:PutMetricData has no resource type; the cloudwatch:namespace condition limits "
        f"it to {METRICS_NAMESPACE}.",
    )


def grant_owned_routers(router: InferenceRouter, stack: Stack) -> None:
    """Describe, update and delete on every router whose owner tags are this resource's, and ListTags on the
    account's routers (read only: the handler reads a router's owner tags before it brings it back)."""
    any_router = stack.format_arn(service="sagemaker", resource="inference-router", resource_name="*")
    logical_id = stack.get_logical_id(router.custom_resource.node.default_child)  # type: ignore[arg-type]
    owned = {
        "StringEquals": {
            f"aws:ResourceTag/{STACK_TAG}": Aws.STACK_ID,
            f"aws:ResourceTag/{LOGICAL_ID_TAG}": logical_id,
        }
    }
    for function in (router.on_event_function, router.is_complete_function):
        grants.grant(
            function,
            sid="ManageRoutersThisResourceCreated",
            actions=list(OWNED_ROUTER_ACTIONS),
            resources=[any_router],
            conditions=owned,
            reason=_OWNED_REASON,
        )
    grants.grant(
        router.on_event_function,
        sid="ReadRouterOwnerTags",
        actions=["sagemaker:ListTags"],
        resources=[any_router],
        reason=_OWNER_TAGS_REASON,
    )


def acknowledge_router(router: InferenceRouter) -> None:
    """An ``InferenceRouter``: provider framework with an is-complete waiter, a scheduled check."""
    grants.acknowledge_waiting_provider(
        router.provider,
        router.framework_roles,
        (router.on_event_function, router.is_complete_function),
        handler_text="the router's own handler function",
        polled_text="router's function",
    )
    acknowledge_resource(
        router.schedule_role,
        f"{router.check_function.function_arn}:*",
        "EventBridge Scheduler invokes the router's health check function only; lambda:InvokeFunction on that one "
        "function and its versions (the ':*' qualifier).",
    )
