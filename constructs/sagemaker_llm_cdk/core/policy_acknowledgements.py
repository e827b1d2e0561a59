"""Acknowledgements the policy guard honours: reviewed wildcards, recorded on the app's root construct.

An ``Acknowledgement`` names a construct scope, a resource pattern and the actions allowed on it, with the
reason. They are kept on the app's root (``acknowledgements`` reads them back); ``allowed_now`` reads what
the policies under a scope allow at the moment an acknowledgement is made, which is what was reviewed with it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from constructs import IConstruct

from .policy_documents import _as_list, _effect, _matches, _statements, _wild, render
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
