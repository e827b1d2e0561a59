"""cdk-nag acknowledgements: one finding, one reason, on the construct that owns the grant.

Each construct acknowledges its own findings right beside the grant or the framework that causes them
(``grants.grant`` does it for the statements the library writes). cdk-nag 3 acknowledges per finding
(``AwsSolutions-IAM5[Resource::...]``), so a new wildcard that nobody reviewed still fails the synth.

cdk-nag's acknowledgement of a resource string covers every action on it; the policy guard
(``core/policy_guard.py``) does not: each ``AwsSolutions-IAM5`` resource acknowledgement made here is also
recorded for the guard with the actions it covers (``acknowledge_resource(..., actions=[...])``, or else the
actions the construct's policies allow on that resource when the acknowledgement is made), so an action added
later on the same resource fails the synth.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations

from constructs import IConstruct

from .policy_guard import _remember, allowed_now, record, render, stack_of

PACK = "AwsSolutions"
WILDCARD_RULE = "AwsSolutions-IAM5"


_VALIDATIONS = "_sagemaker_llm_cdk_validations"


def acknowledge(construct: IConstruct, rule: str, reason: str, *, finding: str | None = None) -> None:
    """Acknowledge one finding of ``rule`` on ``construct`` (and its children)."""
    acknowledge_all(construct, [(rule, reason, finding)])


def acknowledge_all(
    construct: IConstruct, findings: Sequence[tuple[str, str, str | None]], *, record_wildcards: bool = True
) -> None:
    """``acknowledge`` each ``(rule, reason, finding)`` on ``construct``, in order, in one call to the Node kernel.

    Each ``AwsSolutions-IAM5`` finding of a resource (``Resource::X``, or the whole rule) is recorded for the policy
    guard with the actions the construct's policies allow on it now (on ``*``, only wildcard-only actions);
    ``record_wildcards=False`` leaves that to the caller (``grants.grant`` records its statement's own actions).
    """
    if not findings:
        return
    if record_wildcards:
        _record_wildcards(construct, findings)
    validations = getattr(construct, _VALIDATIONS, None)
    if validations is None:
        validations = Validations.of(construct)  # a view of the construct: the same for every call
        _remember(construct, _VALIDATIONS, validations)
    validations.acknowledge(
        *[
            Acknowledgment(id=f"{PACK}::{f'{rule}[{finding}]' if finding else rule}", reason=reason)
            for rule, reason, finding in findings
        ]
    )


def _record_wildcards(construct: IConstruct, findings: Sequence[tuple[str, str, str | None]]) -> None:
    now: dict[str, list[str]] | None = None
    for rule, reason, finding in findings:
        if rule != WILDCARD_RULE or not (finding is None or finding.startswith("Resource::")):
            continue
        if now is None:
            now = allowed_now(construct)
        if finding is None:  # the whole rule: every wildcard resource the construct's policies hold now
            for resource, actions in now.items():
                record(construct, [resource], actions, reason)
        else:
            resource = finding[len("Resource::") :]
            record(construct, [resource], now.get(resource, []), reason)


__all__ = ["acknowledge", "acknowledge_all", "acknowledge_resource", "nag_form", "policy_resources", "stack_of"]


def nag_form(scope: IConstruct, value: str) -> str:
    """``value`` (a string that may hold tokens) as cdk-nag writes it in a finding id."""
    if "${Token[" not in value:
        return value  # no token (CDK encodes every string token so): resolving would return it unchanged
    return _render(stack_of(scope).resolve(value))


_render = render
"""A resolved value as cdk-nag writes it (``policy_guard.render``)."""


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


def acknowledge_resource(
    construct: IConstruct, resource: str, reason: str, *, actions: Sequence[str] | None = None
) -> None:
    """``AwsSolutions-IAM5[Resource::<resource>]`` on ``construct``: exactly that resource string, as cdk-nag writes it.

    For the policy guard the acknowledgement covers ``actions`` on that resource (patterns such as
    ``lambda:InvokeFunction``); without them, the actions the construct's policies allow on it when this is
    called. Name them: a statement added before the call would otherwise be covered too.
    """
    form = nag_form(construct, resource)
    if actions is None:
        acknowledge(construct, WILDCARD_RULE, reason, finding=f"Resource::{form}")
        return
    if not actions:
        raise ValueError(f"{construct.node.path}: acknowledge_resource({resource!r}) names no action")
    acknowledge_all(construct, [(WILDCARD_RULE, reason, f"Resource::{form}")], record_wildcards=False)
    record(construct, [form], actions, reason)
