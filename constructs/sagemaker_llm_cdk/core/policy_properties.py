"""Every property of a CloudFormation resource type that holds an IAM policy or a principal, as the guard reads it.

``policy_properties.json`` beside this module is the table: for each kind (``identity``, ``resource``,
``principal``, ``unread``, ``statement``), resource type -> property paths (``Policies[].PolicyDocument``,
``ResourcePolicy.PolicyDocument``). It is generated from the CloudFormation schemas cfn-lint ships, and from the
library's own custom resources, by ``python -m tools.policy_properties`` (which documents how each property is
classified); ``tests/checks/test_policy_properties.py`` fails when the installed schemas say otherwise. Reading it
costs one small JSON file per process, not a scan of the schemas at every synth.

``schema_reads`` turns one resource into what the guard reads of it: the policy documents (with their location and
whether they are identity policies), and findings for principals that reach everyone, values chosen at deploy
time, and policies in a grammar the guard does not read (``unread``): never skipped.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from .policy_documents import _intrinsic, _parsed, _wild, render, unreadable

KINDS = ("identity", "resource", "principal", "unread", "statement")

PRINCIPAL_LIMITS: Mapping[str, tuple[str, ...]] = {
    "AWS::Lambda::Permission": ("SourceArn", "SourceAccount", "PrincipalOrgID"),
    "AWS::Lambda::LayerVersionPermission": ("OrganizationId",),
    "AWS::Events::EventBusPolicy": ("Condition",),
}
"""Properties that limit who a principal property reaches, per type (a ``*`` principal with one set passes)."""


@cache
def table() -> Mapping[str, Mapping[str, tuple[str, ...]]]:
    """kind -> resource type -> property paths, from ``policy_properties.json``."""
    raw = json.loads((Path(__file__).with_name("policy_properties.json")).read_text(encoding="utf-8"))
    return {kind: {t: tuple(paths) for t, paths in (raw.get(kind) or {}).items()} for kind in KINDS}


def values_at(properties: Any, path: str) -> list[tuple[str, Any, bool]]:
    """The values at ``path`` (``a.b``, ``list[].c``) of ``properties``: (location, value, readable). A step through
    an intrinsic (an ``Fn::If`` list, a ``Ref``) cannot be followed: its value is returned unreadable. Absent values
    are left out."""
    found: list[tuple[str, Any, bool]] = []

    def walk(value: Any, steps: list[str], at: str) -> None:
        if not steps:
            if value is not None and value != {"Ref": "AWS::NoValue"}:
                found.append((at, value, True))
            return
        if _intrinsic(value):
            found.append((at, value, False))
            return
        step, rest = steps[0], steps[1:]
        name, is_list = step.removesuffix("[]"), step.endswith("[]")
        if not isinstance(value, dict) or name not in value:
            return
        child, where = value[name], f"{at}.{name}".lstrip(".")
        if not is_list:
            walk(child, rest, where)
        elif _intrinsic(child) or not isinstance(child, list):
            if child is not None:
                found.append((where, child, False))
        else:
            for i, item in enumerate(child):
                walk(item, rest, f"{where}[{i}]")

    walk(properties, path.split("."), "")
    return found


def schema_reads(
    kind: str, properties: Mapping[str, Any], parameters: Mapping[str, Any], handled: Collection[str] = ()
) -> tuple[list[tuple[str, Any, bool]], list[tuple[str, str, str]]]:
    """What the guard reads of one resource of type ``kind`` through the table, beyond the paths in ``handled``
    (read elsewhere): (location, document, identity) of each policy document, and (rule, location, text) of each
    finding about its principals and its unread policies."""
    documents: list[tuple[str, Any, bool]] = []
    problems: list[tuple[str, str, str]] = []
    tables = table()
    for category in KINDS:
        for path in tables[category].get(kind, ()):
            if path in handled:
                continue
            for location, value, readable in values_at(properties, path):
                if not readable:
                    problems.append(
                        ("UnreadablePolicy", location, f"is {render(value)[:160]}, which the guard cannot read")
                    )
                elif category in ("identity", "resource"):
                    documents.append((location, value, category == "identity"))
                elif category == "statement":
                    documents.append((location, _holding(value), False))
                elif category == "principal":
                    problems += _principal_problems(kind, properties, location, value, parameters)
                else:
                    problems.append(
                        (
                            "UnreadablePolicy",
                            location,
                            f"holds a {kind} policy, whose grammar (not IAM's) the guard does not read: what it "
                            "allows is unchecked",
                        )
                    )
    return documents, problems


def _holding(statement: Any) -> Any:
    """A policy document holding only ``statement`` (one statement, as an object or JSON text; an intrinsic stays an
    item of the document, so ``Fn::If`` branches are read and any other is an ``UnreadablePolicy``)."""
    parsed = _parsed(statement)  # JSON text, CDK's Fn::Join of it included
    if parsed is None:
        return statement  # text that is not JSON: read as a document, it is an UnreadablePolicy
    return {"Statement": [parsed]}


def _principal_problems(
    kind: str, properties: Mapping[str, Any], location: str, value: Any, parameters: Mapping[str, Any]
) -> list[tuple[str, str, str]]:
    deploy_time = unreadable(value, parameters)
    if deploy_time:
        return [("UnreadablePolicy", location, f"holds {'; '.join(deploy_time)}: the guard cannot read who it allows")]
    values = value if isinstance(value, list) else [value]
    wide = [render(v) for v in values if isinstance(v, str) and _wild(v)]
    limits = PRINCIPAL_LIMITS.get(kind, ())
    if not wide or any(properties.get(k) for k in limits):
        return []
    by = f" with no {', '.join(limits)}" if limits else ""
    return [("BroadPrincipal", location, f"gives {kind} to every principal ({wide}){by}")]
