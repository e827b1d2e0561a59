"""cdk-nag acknowledgements: one finding, one reason, on the construct that owns the grant.

Each construct acknowledges its own findings right beside the grant or the framework that causes them
(``grants.grant`` does it for the statements the library writes). cdk-nag 3 acknowledges per finding
(``AwsSolutions-IAM5[Resource::...]``), so a new wildcard that nobody reviewed still fails the synth.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct

PACK = "AwsSolutions"


_VALIDATIONS = "_sagemaker_llm_cdk_validations"
_STACK = "_sagemaker_llm_cdk_stack"


def acknowledge(construct: IConstruct, rule: str, reason: str, *, finding: str | None = None) -> None:
    """Acknowledge one finding of ``rule`` on ``construct`` (and its children)."""
    acknowledge_all(construct, [(rule, reason, finding)])


def acknowledge_all(construct: IConstruct, findings: Sequence[tuple[str, str, str | None]]) -> None:
    """``acknowledge`` each ``(rule, reason, finding)`` on ``construct``, in order, in one call to the Node kernel."""
    if not findings:
        return
    validations = getattr(construct, _VALIDATIONS, None)
    if validations is None:
        validations = Validations.of(construct)  # a view of the construct: the same for every call
        _remember(construct, _VALIDATIONS, validations)
    validations.acknowledge(*[Acknowledgment(id=f"{PACK}::{f'{rule}[{finding}]' if finding else rule}", reason=reason)
                              for rule, reason, finding in findings])


def stack_of(construct: IConstruct) -> Stack:
    """``Stack.of(construct)``, asked once per construct object (a construct never moves to another stack)."""
    stack: Stack | None = getattr(construct, _STACK, None)
    if stack is None:
        stack = Stack.of(construct)
        _remember(construct, _STACK, stack)
    return stack


def _remember(construct: Any, name: str, value: Any) -> None:
    try:
        setattr(construct, name, value)
    except AttributeError:  # a jsii proxy of several interfaces takes no new attribute: ask again next time
        pass


def nag_form(scope: IConstruct, value: str) -> str:
    """``value`` (a string that may hold tokens) as cdk-nag writes it in a finding id."""
    if "${Token[" not in value:
        return value  # no token (CDK encodes every string token so): resolving would return it unchanged
    return _render(stack_of(scope).resolve(value))


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((kind, arg),) = value.items()
        if kind == "Ref":
            return f"<{arg}>"
        if kind == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>"
        if kind == "Fn::Join":
            return str(arg[0]).join(_render(part) for part in arg[1])
    # Any other intrinsic (Fn::Select, Fn::Split, Fn::FindInMap, ...): cdk-nag writes it as compact JSON.
    return json.dumps(value, separators=(",", ":"))


def policy_resources(policy: Any, contains: str, suffix: str) -> list[str]:
    """The resources of ``policy`` (an ``iam.Policy``) in cdk-nag's form that contain ``contains`` and end with
    ``suffix`` (ARNs CDK builds itself, whose form differs between bound and environment-agnostic stacks)."""
    cfn = policy.node.default_child
    document = Stack.of(policy).resolve(cfn.policy_document) or {}
    found: list[str] = []
    for statement in document.get("Statement", []):
        resources = statement.get("Resource", [])
        for resource in resources if isinstance(resources, list) else [resources]:
            text = _render(resource)
            if contains in text and text.endswith(suffix) and "*" in text and text not in found:
                found.append(text)
    return found


def acknowledge_resource(construct: IConstruct, resource: str, reason: str) -> None:
    """``AwsSolutions-IAM5[Resource::<resource>]`` on ``construct``: exactly that resource string, as cdk-nag writes it."""
    acknowledge(construct, "AwsSolutions-IAM5", reason, finding=f"Resource::{nag_form(construct, resource)}")
