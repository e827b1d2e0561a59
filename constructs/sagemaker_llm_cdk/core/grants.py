"""Grants that acknowledge exactly their own wildcards, and the guard that keeps every acknowledgement honest.

cdk-nag reports ``AwsSolutions-IAM5`` once per wildcard *string* of a policy: acknowledging
``AwsSolutions-IAM5[Resource::*]`` on a role covers every statement on ``*`` that role will ever have, including
one added later for ``s3:GetObject``, and ``Resource::arn:...:bucket/*`` covers ``s3:DeleteObject`` as well as the
``s3:GetObject`` it was made for. Two things close that gap:

* ``grant(...)`` adds one statement and acknowledges exactly its wildcards (each resource and action that holds
  ``*``) with the reason given at the call, and records for the guard the actions it allows on each; a wildcard
  without a reason, an action on ``*`` that has resource-level permissions, or a wildcard-only action without
  the condition its ``WILDCARD_ONLY_ACTIONS`` entry requires, raises at the call.
* the policy guard (``core/policy_guard.py``), which every acknowledgement adds to its app and the app's checks
  add to every app (``sagemaker_llm_cdk.checks.apply``), reads the synthesized templates and fails the synth on
  any ``Allow`` whose wildcard no acknowledgement names with that action, on ``NotAction``/``NotResource``, on a
  wildcard-only action without its condition, on a managed policy it cannot read, and on resource policies that
  trust every principal. ``WILDCARD_ONLY_ACTIONS`` lists the actions that the IAM Service Authorization
  Reference gives no resource type, so that ``*`` is the only resource they can have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import IAspect, Stack, Token
from aws_cdk import aws_iam as iam

from constructs import Construct, IConstruct, IValidation

from .nag import WILDCARD_RULE, acknowledge, acknowledge_all, nag_form
from .policy_acknowledgements import breadth_problems
from .policy_documents import _wild
from .policy_guard import (
    WILDCARD_ONLY_ACTIONS,
    WildcardOnly,
    _as_list,
    _statements,
    guard,
    problems_of,
    record,
)

__all__ = [
    "WILDCARD_ONLY_ACTIONS",
    "WildcardOnly",
    "acknowledge_wildcard_only",
    "allow_wildcard_actions",
    "grant",
    "guard_app",
    "guard_wildcards",
    "wildcard_problems",
]

_WILDCARD_ONLY = {action.lower(): (action, entry) for action, entry in WILDCARD_ONLY_ACTIONS.items()}


def grant(
    grantee: iam.IGrantable,
    *,
    actions: Sequence[str],
    resources: Sequence[str],
    reason: str | None = None,
    sid: str | None = None,
    conditions: Mapping[str, Any] | None = None,
) -> iam.PolicyStatement:
    """Add one Allow statement to ``grantee``'s policy and acknowledge exactly its wildcards.

    Each resource and each action that holds ``*`` becomes one cdk-nag finding-level
    acknowledgement (``AwsSolutions-IAM5[Resource::...]`` / ``[Action::...]``) on the grantee
    with ``reason``, and the policy guard learns that these actions (and no others) are acknowledged on
    those resources (``?`` is a wildcard like ``*``). Raises one ``ValueError`` naming every problem: a wildcard
    without a reason; an action on ``*`` not in ``WILDCARD_ONLY_ACTIONS`` (name the resource instead); such an
    action without the condition its entry requires (``cloudwatch:PutMetricData`` needs ``cloudwatch:namespace``);
    and what no acknowledgement may allow (``policy_acknowledgements.breadth_problems``): ``*`` or
    ``<service>:*``, an action pattern on ``*``, a resource over a whole service or every account, and
    ``iam:PassRole``, ``sts:AssumeRole*``, ``iam:*`` or ``kms:*`` actions on any wildcard resource.
    """
    if not actions or not resources:
        raise ValueError(f"grant needs actions and resources (got {list(actions)!r}, {list(resources)!r})")
    principal = grantee.grant_principal
    owner: IConstruct = principal if isinstance(principal, Construct) else grantee  # type: ignore[assignment]
    wild_resources = [r for r in resources if _wild(_text(r))]
    wild_actions = [a for a in actions if _wild(a)]
    problems = breadth_problems([nag_form(owner, r) for r in resources], actions)
    if (wild_resources or wild_actions) and not (reason or "").strip():
        problems.append(
            f"wildcards {wild_resources + wild_actions} need a reason: pass reason='why each is unavoidable'"
        )
    if "*" in resources:
        named = [a for a in actions if a.lower() not in _WILDCARD_ONLY and not _wild(a)]
        if named:
            problems.append(
                f"actions {named} have resource-level permissions and may not be granted on '*'; name the "
                f"resources (allowed on '*': {', '.join(sorted(WILDCARD_ONLY_ACTIONS))})"
            )
    if wild_resources:
        keys = {str(key).lower() for body in (conditions or {}).values() if isinstance(body, Mapping) for key in body}
        for action in actions:
            name, entry = _WILDCARD_ONLY.get(action.lower(), (action, None))
            if entry is not None and entry.condition and entry.condition.lower() not in keys:
                problems.append(
                    f"{name} on a wildcard needs the {entry.condition} condition that limits it "
                    f"({entry.source}): pass conditions={{'StringEquals': {{'{entry.condition}': ...}}}}"
                )
    if problems:
        if len(problems) == 1:
            raise ValueError(f"{owner.node.path}: grant refused: {problems[0]}")
        raise ValueError(f"{owner.node.path}: grant refused:\n" + "\n".join(f"  - {p}" for p in problems))
    statement = iam.PolicyStatement(
        sid=sid, actions=list(actions), resources=list(resources), conditions=dict(conditions) if conditions else None
    )
    principal.add_to_principal_policy(statement)
    forms = [nag_form(owner, resource) for resource in wild_resources]
    acknowledge_all(
        owner,
        [(WILDCARD_RULE, str(reason), f"Resource::{form}") for form in forms]
        + [(WILDCARD_RULE, str(reason), f"Action::{action}") for action in wild_actions],
        record_wildcards=False,
    )
    if forms:
        record(owner, forms, actions, str(reason))
    return statement


def acknowledge_wildcard_only(
    scope: IConstruct, reason: str, *, extra_actions: Mapping[str, str] | None = None
) -> None:
    """Acknowledge ``AwsSolutions-IAM5[Resource::*]`` on ``scope`` for statements made by CDK itself.

    For statements the library cannot build with ``grant`` (CDK's X-Ray grant of a traced function,
    Step Functions' log delivery). The guard makes the acknowledgement safe: it covers the actions of
    ``WILDCARD_ONLY_ACTIONS`` that the policies under ``scope`` allow on ``*`` when it is made (Step Functions'
    log delivery, which the table allows only where acknowledged) and ``extra_actions`` (action -> why it needs
    ``*``); any other action on ``*`` under ``scope`` fails the synth.
    """
    if not reason.strip():
        raise ValueError(f"{scope.node.path}: an acknowledgement of Resource::* needs a reason")
    if extra_actions:
        allow_wildcard_actions(scope, extra_actions)
    acknowledge(scope, WILDCARD_RULE, reason, finding="Resource::*")
    guard(scope)


def allow_wildcard_actions(scope: IConstruct, actions: Mapping[str, str]) -> None:
    """Let policies under ``scope`` allow ``actions`` (patterns like ``s3:List*``) on ``*``; each needs a reason."""
    missing = [a for a, why in actions.items() if not why.strip()]
    if missing:
        raise ValueError(f"{scope.node.path}: actions {missing} allowed on '*' need a reason each")
    for action, why in actions.items():
        record(scope, ["*"], [action], why)


def guard_wildcards(scope: IConstruct) -> None:
    """Run the policy guard on the templates of ``scope``'s app at synth (``policy_guard.guard``)."""
    guard(scope)


def wildcard_problems(scope: IConstruct) -> list[str]:
    """The policy guard's findings for ``scope``'s app, one line each, read from its last synth's templates."""
    return problems_of(scope)


def _text(value: str) -> str:
    # CDK encodes every string token as ``${Token[...]}``: without that marker the string is plain (no round trip).
    if "${Token[" not in value or not Token.is_unresolved(value):
        return value
    return "".join(c for c in value if c in "*?")


@jsii.implements(IAspect)
class WildcardGuard:
    """Aspect: run the policy guard on the app of every stack it visits (``guard_wildcards``)."""

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, Stack):  # CDK calls this for every construct: no second round trip for each
            guard(node)


def guard_app(scope: IConstruct) -> None:
    """Run the policy guard on every template of ``scope``'s app (an App or Stage): ``policy_guard.guard``."""
    guard(scope)


# ------------------------------------------------------------------ confused deputies
def sagemaker_principal(scope: IConstruct) -> iam.ServicePrincipal:
    """``sagemaker.amazonaws.com``, trusted only on behalf of SageMaker resources of this account and region.

    SageMaker's confused-deputy guide (security-confused-deputy-prevention, "SageMaker AI Inference" and
    "Training Jobs") gives trust policies with ``ArnLike aws:SourceArn arn:<partition>:sagemaker:<region>:
    <account>:*``; ``aws:SourceAccount`` is added with the same account, as the guide allows.
    """
    stack = Stack.of(scope)
    return iam.ServicePrincipal(
        "sagemaker.amazonaws.com",
        conditions={
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {"aws:SourceArn": f"arn:{stack.partition}:sagemaker:{stack.region}:{stack.account}:*"},
        },
    )


def service_statements_without_source(document: Any) -> list[str]:
    """Allow statements of a resolved resource policy that trust a service principal with no source condition."""
    problems = []
    for statement in _statements(document):
        principal = statement.get("Principal")
        services = _as_list(principal.get("Service")) if isinstance(principal, dict) else []
        if statement.get("Effect") != "Allow" or not services:
            continue
        keys = {
            key.lower()
            for operator in (statement.get("Condition") or {}).values()
            if isinstance(operator, dict)
            for key in operator
        }
        if not keys & {"aws:sourcearn", "aws:sourceaccount"}:
            problems.append(
                f"statement {statement.get('Sid', '?')} lets {', '.join(map(str, services))} "
                f"{_as_list(statement.get('Action'))} with no aws:SourceArn or aws:SourceAccount condition"
            )
    return problems


@jsii.implements(IValidation)
class _SourceConditions:
    def __init__(self, policy: Any) -> None:
        self._policy = policy

    def validate(self) -> list[str]:
        document = Stack.of(self._policy).resolve(self._policy.document)
        return [
            f"{self._policy.node.path}: {p} (a confused deputy could use it); add the condition"
            for p in service_statements_without_source(document)
        ]


def require_source_conditions(topic: Any) -> None:
    """Fail the synth when ``topic``'s policy trusts a service principal without ``aws:SourceArn``/``SourceAccount``.

    CDK's ``events_targets.SnsTopic`` adds an unconditioned ``sns:Publish`` for ``events.amazonaws.com``,
    which would cancel any conditioned statement; this keeps such a grant from reappearing.
    """
    topic.node.add_validation(_TopicSourceConditions(topic))


@jsii.implements(IValidation)
class _TopicSourceConditions:
    def __init__(self, topic: Any) -> None:
        self._topic = topic

    def validate(self) -> list[str]:
        policy = self._topic.node.try_find_child("Policy")
        if policy is None:
            return []
        return _SourceConditions(policy).validate()


def depend_on_policy(resource: Construct, role: iam.IRole) -> None:
    """Create ``resource`` only after the role's permissions exist (SageMaker checks them at creation)."""
    policy = role.node.try_find_child("DefaultPolicy")
    resource.node.add_dependency(policy if policy is not None else role)


NETWORK_DESCRIBE_ACTIONS = (
    "ec2:DescribeVpcs",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeDhcpOptions",
)
"""What SageMaker describes before it attaches network interfaces in a VPC (no resource type: granted on '*')."""
NETWORK_INTERFACE_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
)
"""What SageMaker does to attach an endpoint's or a job's network interfaces."""


def network_interface_resources(
    scope: IConstruct, subnet_ids: Sequence[str], security_groups: Sequence[Any]
) -> list[str]:
    """Resources of ``NETWORK_INTERFACE_ACTIONS``: any network interface (ids made at run time), limited to these
    subnets and security groups, which are named."""
    stack = Stack.of(scope)
    return [
        stack.format_arn(service="ec2", resource="network-interface", resource_name="*"),
        *[stack.format_arn(service="ec2", resource="subnet", resource_name=s) for s in subnet_ids],
        *[
            stack.format_arn(service="ec2", resource="security-group", resource_name=g.security_group_id)
            for g in security_groups
        ],
    ]


def acknowledge_waiting_provider(
    provider: Any, framework_roles: Sequence[Any], handlers: Sequence[Any], *, handler_text: str, polled_text: str
) -> None:
    """The findings of a ``custom_resources.Provider`` with an is-complete waiter, acknowledged exactly: each
    framework role invokes only ``handlers`` (and their versions), the waiter state machine only the framework's
    polling functions, its log delivery needs the log-delivery actions on '*', and CDK builds it without tracing.

    :param handler_text: what the handlers are, e.g. "the check's own handler function".
    :param polled_text: what the waiter polls in the end, e.g. "check function".
    """
    from .nag import acknowledge_resource

    for role in framework_roles:
        for handler in handlers:
            acknowledge_resource(
                role,
                f"{handler.function_arn}:*",
                f"The custom resource framework invokes {handler_text}; lambda:InvokeFunction on "
                "that one function and its versions (the ':*' qualifier), nothing else.",
                actions=["lambda:InvokeFunction"],
            )
    waiter = provider.node.find_child("waiter-state-machine")
    for child in ("framework-isComplete", "framework-onTimeout"):
        acknowledge_resource(
            waiter,
            f"{provider.node.find_child(child).function_arn}:*",
            "The waiter state machine invokes the framework's polling function; lambda:InvokeFunction "
            "on that one function and its versions (the ':*' qualifier), nothing else.",
            actions=["lambda:InvokeFunction"],
        )
    acknowledge_wildcard_only(
        waiter,
        "Step Functions delivers its execution logs through CloudWatch Logs log-delivery "
        "actions (CreateLogDelivery, PutResourcePolicy, DescribeLogGroups, ...), which have no "
        "resource-level permissions; CDK grants them on '*' for the waiter's log group.",
    )
    acknowledge(
        waiter,
        "AwsSolutions-SF2",
        "The Provider framework creates its waiter state machine without a tracing option; it only polls the "
        f"{polled_text}, whose own X-Ray tracing is on, and logs ALL events to its log group.",
    )
