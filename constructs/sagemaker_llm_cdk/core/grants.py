"""Grants that acknowledge exactly their own wildcards, and the guard that keeps ``Resource::*`` honest.

cdk-nag reports ``AwsSolutions-IAM5`` once per wildcard *string* of a policy: acknowledging
``AwsSolutions-IAM5[Resource::*]`` on a role therefore covers every statement on ``*`` that role
will ever have, including one added later for ``s3:GetObject``. Two things close that gap:

* ``grant(...)`` adds one statement and acknowledges exactly its wildcards (each resource and
  action that holds ``*``) with the reason given at the call; a wildcard without a reason, or an
  action on ``*`` that has resource-level permissions, raises at the call.
* ``guard_wildcards(scope)`` (added by every ``Resource::*`` acknowledgement the library makes, and
  by the app's checks on every stack and stage) fails the synth when any policy under ``scope``
  allows, on ``*``, an action that is not in ``WILDCARD_ONLY_ACTIONS``: actions that the IAM
  Service Authorization Reference lists with no resource type, so that ``*`` is the only resource
  they can have. The acknowledgement of ``*`` then only ever covers those.
"""
from __future__ import annotations

import fnmatch
from typing import Any, Mapping, Sequence

import jsii
from aws_cdk import CfnResource, IAspect, Stack, Stage, Token
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct, IValidation

from .nag import acknowledge, acknowledge_all, nag_form
from .tree import at_synth, constructs_in

SAR = "https://docs.aws.amazon.com/service-authorization/latest/reference"

WILDCARD_ONLY_ACTIONS: Mapping[str, str] = {
    # X-Ray tracing of Lambda functions and Step Functions state machines.
    "xray:PutTraceSegments": f"{SAR}/list_awsx-ray.html (no resource type)",
    "xray:PutTelemetryRecords": f"{SAR}/list_awsx-ray.html (no resource type)",
    "xray:GetSamplingRules": f"{SAR}/list_awsx-ray.html (no resource type)",
    "xray:GetSamplingTargets": f"{SAR}/list_awsx-ray.html (no resource type)",
    # Metrics: only the namespace can be limited, by the cloudwatch:namespace condition key.
    "cloudwatch:PutMetricData": f"{SAR}/list_amazoncloudwatch.html (no resource type; cloudwatch:namespace condition)",
    # Pulling an image: the token call has no resource; the layer calls name the repository.
    "ecr:GetAuthorizationToken": f"{SAR}/list_amazonelasticcontainerregistry.html (no resource type)",
    # Buying a capacity plan: searching offerings reads a catalogue, it has no resource.
    "sagemaker:SearchTrainingPlanOfferings": f"{SAR}/list_amazonsagemakerai.html (no resource type)",
    # VPC placement: SageMaker describes the network before attaching interfaces.
    "ec2:DescribeVpcs": f"{SAR}/list_amazonec2.html (Describe* actions have no resource type)",
    "ec2:DescribeSubnets": f"{SAR}/list_amazonec2.html (Describe* actions have no resource type)",
    "ec2:DescribeSecurityGroups": f"{SAR}/list_amazonec2.html (Describe* actions have no resource type)",
    "ec2:DescribeNetworkInterfaces": f"{SAR}/list_amazonec2.html (Describe* actions have no resource type)",
    "ec2:DescribeDhcpOptions": f"{SAR}/list_amazonec2.html (Describe* actions have no resource type)",
    # Vended log delivery of Step Functions: its documentation requires these on '*'.
    **{f"logs:{action}": ("https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs.html (IAM policy for "
                          "logging to CloudWatch Logs: Resource '*')")
       for action in ("CreateLogDelivery", "GetLogDelivery", "UpdateLogDelivery", "DeleteLogDelivery",
                      "ListLogDeliveries", "PutResourcePolicy", "DescribeResourcePolicies", "DescribeLogGroups")},
}
"""Actions that may be allowed on ``Resource: '*'``, each with where that is documented."""

_EXTRA = "_sagemaker_llm_cdk_wildcard_actions"
_GUARDED = "_sagemaker_llm_cdk_wildcard_guard"


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
    with ``reason``. Raises ``ValueError`` when a wildcard has no reason, or when the statement
    allows on ``*`` an action not in ``WILDCARD_ONLY_ACTIONS`` (name the resource instead).
    A ``*`` grant also adds ``guard_wildcards`` on the grantee.
    """
    if not actions or not resources:
        raise ValueError(f"grant needs actions and resources (got {list(actions)!r}, {list(resources)!r})")
    wild_resources = [r for r in resources if "*" in _text(r)]
    wild_actions = [a for a in actions if "*" in a]
    if (wild_resources or wild_actions) and not (reason or "").strip():
        raise ValueError(f"wildcards {wild_resources + wild_actions} need a reason: pass reason='why each is unavoidable'")
    if "*" in resources:
        named = [a for a in actions if a not in WILDCARD_ONLY_ACTIONS]
        if named:
            raise ValueError(f"actions {named} have resource-level permissions and may not be granted on '*'; name the "
                             f"resources (allowed on '*': {', '.join(sorted(WILDCARD_ONLY_ACTIONS))})")
    statement = iam.PolicyStatement(sid=sid, actions=list(actions), resources=list(resources),
                                    conditions=dict(conditions) if conditions else None)
    principal = grantee.grant_principal
    principal.add_to_principal_policy(statement)
    owner: IConstruct = principal if isinstance(principal, Construct) else grantee  # type: ignore[assignment]
    acknowledge_all(owner, [("AwsSolutions-IAM5", str(reason), f"Resource::{nag_form(owner, resource)}")
                            for resource in wild_resources]
                    + [("AwsSolutions-IAM5", str(reason), f"Action::{action}") for action in wild_actions])
    if "*" in resources:
        guard_wildcards(owner)
    return statement


def acknowledge_wildcard_only(scope: IConstruct, reason: str, *, extra_actions: Mapping[str, str] | None = None) -> None:
    """Acknowledge ``AwsSolutions-IAM5[Resource::*]`` on ``scope`` for statements made by CDK itself.

    For statements the library cannot build with ``grant`` (CDK's X-Ray grant of a traced function,
    Step Functions' log delivery). The guard makes the acknowledgement safe: any action on ``*``
    under ``scope`` that is neither in ``WILDCARD_ONLY_ACTIONS`` nor in ``extra_actions``
    (action -> why it needs ``*``) fails the synth.
    """
    if not reason.strip():
        raise ValueError(f"{scope.node.path}: an acknowledgement of Resource::* needs a reason")
    if extra_actions:
        allow_wildcard_actions(scope, extra_actions)
    acknowledge(scope, "AwsSolutions-IAM5", reason, finding="Resource::*")
    guard_wildcards(scope)


def allow_wildcard_actions(scope: IConstruct, actions: Mapping[str, str]) -> None:
    """Let policies under ``scope`` allow ``actions`` (patterns like ``s3:List*``) on ``*``; each needs a reason."""
    missing = [a for a, why in actions.items() if not why.strip()]
    if missing:
        raise ValueError(f"{scope.node.path}: actions {missing} allowed on '*' need a reason each")
    current = dict(getattr(scope, _EXTRA, {}))
    current.update(actions)
    setattr(scope, _EXTRA, current)


def _extra_actions(node: IConstruct) -> dict[str, str]:
    found: dict[str, str] = {}
    for scope in node.node.scopes:
        found.update(getattr(scope, _EXTRA, {}))
    return found


def guard_wildcards(scope: IConstruct) -> None:
    """Fail the synth when a policy under ``scope`` allows an action on ``*`` that is not wildcard-only."""
    if getattr(scope, _GUARDED, False):
        return
    setattr(scope, _GUARDED, True)
    scope.node.add_validation(_WildcardGuard(scope))


@jsii.implements(IValidation)
class _WildcardGuard:
    def __init__(self, scope: IConstruct) -> None:
        self._scope = scope

    def validate(self) -> list[str]:
        # A guarded ancestor in the same Stage walks this scope too (find_all) and finds the same lines: say them once.
        ancestors = self._scope.node.scopes[:-1]
        stages = [i for i, s in enumerate(ancestors) if isinstance(s, Stage)]
        if any(getattr(s, _GUARDED, False) for s in ancestors[stages[-1] if stages else 0:]):
            return []
        return wildcard_problems(self._scope)


def wildcard_problems(scope: IConstruct) -> list[str]:
    """One line per policy statement under ``scope`` that allows a non-wildcard-only action on ``*``."""
    problems = []
    for node in scope.node.find_all():
        if not isinstance(node, CfnResource):  # no round trip to the Node kernel per construct
            continue
        allowed: dict[str, str] | None = None
        for document in _documents(node):
            for statement in _statements(document):
                if statement.get("Effect") != "Allow" or not _on_everything(statement):
                    continue
                if allowed is None:
                    allowed = _extra_actions(node)
                if "NotAction" in statement:
                    problems.append(f"{node.node.path}: a statement allows NotAction on '*' (everything else); name "
                                    "the actions and resources")
                    continue
                bad = [a for a in _as_list(statement.get("Action")) if not _allowed(a, allowed)]
                if bad:
                    problems.append(
                        f"{node.node.path}: allows {bad} on Resource '*', which cdk-nag's IAM5[Resource::*] "
                        "acknowledgement would hide; these actions have resource-level permissions: name the resources "
                        "(sagemaker_llm_cdk.core.grants.grant), or, if they truly have none, add them to "
                        "grants.WILDCARD_ONLY_ACTIONS with the Service Authorization Reference page that says so")
    return problems


def _allowed(action: Any, extra: Mapping[str, str]) -> bool:
    if not isinstance(action, str):
        return False
    if action in WILDCARD_ONLY_ACTIONS:
        return True
    return any(action == pattern or fnmatch.fnmatchcase(action, pattern) for pattern in extra)


def _documents(node: Any) -> list[Any]:
    # Only these L1 classes have the typed properties read below: the isinstance test (no jsii round trip)
    # spares every other resource the round trips that follow, in each guarded scope's walk. A plain
    # CfnResource of these types (CDK's CustomResourceProvider makes its role so) has no typed properties
    # to read; it is CDK's own, fixed code (the auto-delete-objects provider).
    if isinstance(node, (iam.CfnPolicy, iam.CfnManagedPolicy)):
        return [Stack.of(node).resolve(node.policy_document)]
    if isinstance(node, iam.CfnRole):
        policies = Stack.of(node).resolve(node.policies) or []
        return [p.get("PolicyDocument") for p in policies if isinstance(p, dict)]
    return []


def _statements(document: Any) -> list[dict[str, Any]]:
    if not isinstance(document, dict):
        return []
    return [s for s in _as_list(document.get("Statement")) if isinstance(s, dict)]


def _on_everything(statement: Mapping[str, Any]) -> bool:
    return "*" in _as_list(statement.get("Resource"))


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _text(value: str) -> str:
    # CDK encodes every string token as ``${Token[...]}``: without that marker the string is plain (no round trip).
    if "${Token[" not in value or not Token.is_unresolved(value):
        return value
    return "".join(c for c in value if c == "*")


@jsii.implements(IAspect)
class WildcardGuard:
    """Aspect: guard every stack it visits (``guard_wildcards``); the app's checks add it to every stage."""

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, Stack):  # CDK calls this for every construct: no second round trip for each
            guard_wildcards(node)


def guard_app(scope: IConstruct) -> None:
    """Guard every stack under ``scope`` (an App or Stage; not inside nested Stages) at synth, as ``WildcardGuard``
    would, in one pass over the tree from Python (``tree.at_synth``) instead of a callback per construct."""
    def guard_stacks() -> None:
        for node in constructs_in(scope):
            if isinstance(node, Stack):
                guard_wildcards(node)

    at_synth(scope, guard_stacks)


# ------------------------------------------------------------------ confused deputies
def sagemaker_principal(scope: IConstruct) -> iam.ServicePrincipal:
    """``sagemaker.amazonaws.com``, trusted only on behalf of SageMaker resources of this account and region.

    SageMaker's confused-deputy guide (security-confused-deputy-prevention, "SageMaker AI Inference" and
    "Training Jobs") gives trust policies with ``ArnLike aws:SourceArn arn:<partition>:sagemaker:<region>:
    <account>:*``; ``aws:SourceAccount`` is added with the same account, as the guide allows.
    """
    stack = Stack.of(scope)
    return iam.ServicePrincipal("sagemaker.amazonaws.com", conditions={
        "StringEquals": {"aws:SourceAccount": stack.account},
        "ArnLike": {"aws:SourceArn": f"arn:{stack.partition}:sagemaker:{stack.region}:{stack.account}:*"},
    })


def service_statements_without_source(document: Any) -> list[str]:
    """Allow statements of a resolved resource policy that trust a service principal with no source condition."""
    problems = []
    for statement in _statements(document):
        principal = statement.get("Principal")
        services = _as_list(principal.get("Service")) if isinstance(principal, dict) else []
        if statement.get("Effect") != "Allow" or not services:
            continue
        keys = {key.lower() for operator in (statement.get("Condition") or {}).values() if isinstance(operator, dict)
                for key in operator}
        if not keys & {"aws:sourcearn", "aws:sourceaccount"}:
            problems.append(f"statement {statement.get('Sid', '?')} lets {', '.join(map(str, services))} "
                            f"{_as_list(statement.get('Action'))} with no aws:SourceArn or aws:SourceAccount condition")
    return problems


@jsii.implements(IValidation)
class _SourceConditions:
    def __init__(self, policy: Any) -> None:
        self._policy = policy

    def validate(self) -> list[str]:
        document = Stack.of(self._policy).resolve(self._policy.document)
        return [f"{self._policy.node.path}: {p} (a confused deputy could use it); add the condition"
                for p in service_statements_without_source(document)]


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


NETWORK_DESCRIBE_ACTIONS = ("ec2:DescribeVpcs", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups",
                            "ec2:DescribeNetworkInterfaces", "ec2:DescribeDhcpOptions")
"""What SageMaker describes before it attaches network interfaces in a VPC (no resource type: granted on '*')."""
NETWORK_INTERFACE_ACTIONS = ("ec2:CreateNetworkInterface", "ec2:CreateNetworkInterfacePermission",
                             "ec2:DeleteNetworkInterface", "ec2:DeleteNetworkInterfacePermission")
"""What SageMaker does to attach an endpoint's or a job's network interfaces."""


def network_interface_resources(scope: IConstruct, subnet_ids: Sequence[str],
                                security_groups: Sequence[Any]) -> list[str]:
    """Resources of ``NETWORK_INTERFACE_ACTIONS``: any network interface (ids made at run time), limited to these
    subnets and security groups, which are named."""
    stack = Stack.of(scope)
    return [
        stack.format_arn(service="ec2", resource="network-interface", resource_name="*"),
        *[stack.format_arn(service="ec2", resource="subnet", resource_name=s) for s in subnet_ids],
        *[stack.format_arn(service="ec2", resource="security-group", resource_name=g.security_group_id)
          for g in security_groups],
    ]
