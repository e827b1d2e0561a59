"""Acknowledgements the policy guard honours: reviewed wildcards, recorded on the app's root construct.

An ``Acknowledgement`` names a construct scope, a resource pattern and the actions allowed on it, with the
reason. They are kept on the app's root (``acknowledgements`` reads them back); ``allowed_now`` reads what
the policies under a scope allow at the moment an acknowledgement is made, which is what was reviewed with it.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from constructs import IConstruct

from .policy_documents import _arn_text, _as_list, _broad_action, _effect, _matches, _statements, _wild, render
from .policy_tables import _WILDCARD_ONLY


@dataclass(frozen=True)
class Acknowledgement:
    """A reviewed wildcard: under construct ``scope`` (a path), ``actions`` (lower-case patterns) on ``resource``
    (a pattern, as cdk-nag writes it), with ``reason``."""

    scope: str
    resource: str
    actions: tuple[str, ...]
    reason: str

    def covers(self, resource: str, action: str) -> bool:
        return _matches(resource, self.resource) and any(_matches(action, pattern) for pattern in self.actions)


_ROLE_ACTIONS = ("iam:passrole", "sts:assumerole", "sts:assumerolewithsaml", "sts:assumerolewithwebidentity")
_WHOLE_SERVICES = ("iam",)
"""Actions that may never be acknowledged or granted on a wildcard resource: passing or assuming any role, and any
action of IAM (an action pattern counts when it can match one of them). ``kms:*`` is refused as every action of a
service; named KMS actions on the keys of one named account and region (``key/*``, a key id made at deploy time,
limited by an alias condition) stay acknowledgeable."""


def _needs_named_resource(action: str) -> bool:
    service = action.partition(":")[0] if ":" in action else action
    return any(_matches(name, action) for name in _ROLE_ACTIONS) or any(_matches(s, service) for s in _WHOLE_SERVICES)


def _arn_form(resource: str) -> str:
    # A resource cdk-nag writes as compact JSON (``Fn::Sub``) is read as its ARN text (``${X}`` -> ``<X>``).
    if resource.startswith("{"):
        with contextlib.suppress(ValueError):
            return _arn_text(json.loads(resource))
    return resource


def _whole_namespace(resource: str) -> bool:
    """A wildcard resource over every account or a whole service: ``arn:aws:s3:::*``, ``arn:aws:iam::*:role/*``,
    an ARN with a wildcard in its partition, service or account, or whose resource part is only wildcards."""
    text = _arn_form(resource)
    if text == "*" or not _wild(text) or text.startswith(("<", "{")):
        return False  # a reference to one resource's ARN (``<Bucket.Arn>/prefix/*``), or an intrinsic not read here
    parts = re.sub(r"<[^<>]*>", "ref", text).split(":", 5)  # ``<AWS::Partition>`` is one field
    if len(parts) < 6:
        return True  # the wildcard is in the ARN's head: "arn:aws:*", "arn:*", "?*"
    _, partition, service, _, account, rest = parts
    return _wild(partition) or _wild(service) or _wild(account) or not rest.strip("*?/:")


def breadth_problems(resources: Iterable[str], actions: Iterable[str]) -> list[str]:
    """What an acknowledgement (or ``grants.grant``) of ``actions`` on ``resources`` may not allow, one line each,
    with what to write instead: the action ``*`` or ``<service>:*``; an action pattern (``s3:Get*``) on ``*``; a
    resource over a whole service or every account; ``iam:PassRole``, ``sts:AssumeRole*`` or any IAM action on any
    wildcard resource (``*`` or ``?`` in it). Resources are written as cdk-nag writes them."""
    resources = list(dict.fromkeys(resources))
    actions = list(dict.fromkeys(actions))
    problems = [
        f"action {a!r} allows every action of a service (or of every service); list the actions by name "
        f"(e.g. 's3:GetObject', 's3:PutObject')"
        for a in actions
        if _broad_action(a)
    ]
    narrow = [a for a in actions if not _broad_action(a)]
    if "*" in resources:
        problems += [
            f"action pattern {a!r} on resource '*' covers actions that have resource types; name the resources, "
            f"or list each action by name if it has no resource type (policy_tables.WILDCARD_ONLY_ACTIONS)"
            for a in narrow
            if _wild(a)
        ]
    problems += [
        f"resource {r!r} is a wildcard over a whole service or every account; name the account and the resources "
        f"(e.g. arn:aws:s3:::my-bucket/prefix/* or arn:aws:iam::123456789012:role/my-role)"
        for r in resources
        if _whole_namespace(r)
    ]
    wild = [r for r in resources if _wild(r)]
    problems += [
        f"action {a!r} on wildcard resource {r!r}: passing or assuming roles and IAM actions are never "
        f"acknowledged on a wildcard; name the exact ARN (role.role_arn) with no '*' or '?'"
        for a in narrow
        if _needs_named_resource(a.lower())
        for r in wild
    ]
    if "*" in resources:
        problems += [
            f"action {a!r} on resource '*' reaches every KMS key the account holds; name the key "
            f"(key.key_arn), or the keys of one account and region with a condition that picks them "
            f"(key/* with kms:ResourceAliases)"
            for a in narrow
            if _matches("kms", a.lower().partition(":")[0])
        ]
    return problems


def refuse_breadth(path: str, call: str, resources: Iterable[str], actions: Iterable[str]) -> None:
    """Raise ``ValueError`` naming ``path``, ``call`` and every ``breadth_problems`` line, when there is one."""
    problems = breadth_problems(resources, actions)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise ValueError(f"{path}: {call} may not acknowledge what it would allow:\n{lines}")


_RECORDS = "_sagemaker_llm_cdk_policy_acknowledgements"
_STACK = "_sagemaker_llm_cdk_stack"


def stack_of(construct: IConstruct) -> Stack:
    """``Stack.of(construct)``, asked once per construct object (a construct never moves to another stack)."""
    stack: Stack | None = getattr(construct, _STACK, None)
    if stack is None:
        stack = Stack.of(construct)
        _remember(construct, _STACK, stack)
    return stack


def _remember(construct: Any, name: str, value: Any) -> None:
    # A jsii proxy of several interfaces takes no new attribute: ask again next time.
    with contextlib.suppress(AttributeError):
        setattr(construct, name, value)


def acknowledgements(root: IConstruct) -> list[Acknowledgement]:
    """Every acknowledgement recorded in ``root``'s app."""
    return list(getattr(root.node.root, _RECORDS, []))


def allowed_now(scope: IConstruct, resource: str | None = None) -> dict[str, list[str]]:
    """What the policies under ``scope`` allow right now: resource (as cdk-nag writes it) -> actions, for the
    wildcard resources (or only ``resource``). ``Resource: '*'`` lists only actions of ``WILDCARD_ONLY_ACTIONS``:
    an acknowledgement made from this can never cover an action with resource-level permissions on ``*``.

    Reads each document's statements as they are (``PolicyDocument.to_json``), never resolving the document itself:
    that would freeze and merge its statements (and fix a stable ``Lazy``) before the app is complete.
    """
    found: dict[str, list[str]] = {}
    for document in _current_documents(scope):
        for statement in _statements(document):
            if _effect(statement) != "Allow":
                continue
            actions = [a for a in _as_list(statement.get("Action")) if isinstance(a, str)]
            for value in _as_list(statement.get("Resource")):
                text = render(value)
                if (resource is not None and text != resource) or (resource is None and not _wild(text)):
                    continue
                chosen = [a for a in actions if a.lower() in _WILDCARD_ONLY] if text == "*" else actions
                found.setdefault(text, [])
                found[text] += [a for a in chosen if a not in found[text]]
    return found


def _current_documents(scope: IConstruct) -> list[Any]:
    # L2 policies (a role's DefaultPolicy, iam.ManagedPolicy): their documents' statements. An L1 policy made
    # directly: its document when it is one, or plain JSON. Inline role policies are not read: name their actions.
    nodes = scope.node.find_all()
    documents: list[Any] = []
    l2_paths: set[str] = set()
    for node in nodes:
        if isinstance(node, (iam.Policy, iam.ManagedPolicy)):
            l2_paths.add(node.node.path + "/Resource")
            documents.append(stack_of(node).resolve(node.document.to_json()))
    for node in nodes:
        if isinstance(node, (iam.CfnPolicy, iam.CfnManagedPolicy)) and node.node.path not in l2_paths:
            value = node.policy_document
            if isinstance(value, iam.PolicyDocument):
                value = value.to_json()
            if isinstance(value, dict):
                documents.append(stack_of(node).resolve(value))
    return documents
