"""Deploys that fail on a name re-taken before cleanup: CloudFormation runs every Create before the cleanup's
Deletes, so a new or replacing resource that takes a name a resource of the base still holds fails, in one stack's
deploy and across stacks of an assembly that do not deploy one after the other."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tools.change_report.records import Headline, ResourceChange
from tools.change_report.resource_types import ENDPOINT, IGNORED_TYPES, RETAINED
from tools.change_report.templates import _strip_stack
from tools.change_report.unique_names import name_entry, unique_name
from tools.change_report.value_text import _short

if TYPE_CHECKING:
    from tools.change_report.assembly import StackTemplate


def _root_key(stacks: dict[str, StackTemplate], key: str) -> str:
    """The top-level stack whose deploy a (nested) stack's resources belong to."""
    while key in stacks and stacks[key].parent is not None:
        key = str(stacks[key].parent)
    return key


def deploys_after(stacks: dict[str, StackTemplate], later: str, earlier: str) -> bool:
    """True when stack ``later`` depends (directly or through others) on ``earlier``: ``cdk deploy`` finishes
    ``earlier``, its cleanup included, before it starts ``later``."""
    seen: set[str] = set()
    todo = [later]
    while todo:
        key = todo.pop()
        if key in seen or key not in stacks:
            continue
        seen.add(key)
        if earlier in stacks[key].dependencies:
            return True
        todo += stacks[key].dependencies
    return False


def _name_key(stack: StackTemplate, resource: dict[str, Any]) -> tuple[str, str, str] | None:
    """(where the name is unique, its name space, the name as JSON) of the name ``resource`` fixes, if any."""
    found = unique_name(resource)
    if found is None:
        return None
    entry = name_entry(resource.get("Type", ""))
    where = stack.environment.rsplit("/", 1)[0] if entry is not None and entry.per_account else stack.environment
    return (where, *found)


def _held(assembly: dict[str, StackTemplate]) -> dict[tuple[str, str, str], list[tuple[str, str]]]:
    held: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    for key, stack in assembly.items():
        for logical_id, resource in stack.resources.items():
            name = _name_key(stack, resource) if resource.get("Type") not in IGNORED_TYPES else None
            if name is not None:
                held.setdefault(name, []).append((key, logical_id))
    return held


def _named(stack: StackTemplate, logical_id: str, resource: dict[str, Any]) -> str:
    shown = _strip_stack(str((resource.get("Metadata") or {}).get("aws:cdk:path", "")), stack.title)
    shown = shown.removesuffix("/Resource").removesuffix("/Default")
    return (
        f"{resource.get('Type')} {shown} ({logical_id})"
        if shown and shown != logical_id
        else (f"{resource.get('Type')} {logical_id}")
    )


def name_clashes(
    base: dict[str, StackTemplate], head: dict[str, StackTemplate], changes: list[ResourceChange]
) -> list[Headline]:
    """Deploys that fail on a name re-taken before cleanup: a new or replacing resource of ``head`` takes a name
    (unique per account and region, ``UNIQUE_NAMES``) that a resource of ``base`` still holds when the Create runs.

    In one stack's deploy (nested stacks included) every Create runs before the cleanup that deletes what leaves or
    is replaced, so the old holder always still has the name. Across the stacks of one assembly the name is free only
    when the taker's stack deploys after the holder's (a dependency) and the holder is not retained. A name that a
    Create adopts (a run-time parameter, a bought capacity plan) is no failure. A create-only change of a resource
    that keeps its fixed name is the other failure (``_classify``)."""
    replaced = {(c.stack.key, c.logical_id) for c in changes if c.replacement and c.kind == "modified"}
    old_names = _held(base)
    created_endpoints: dict[str, list[str]] = {}
    for c in changes:
        if c.resource_type == ENDPOINT and (c.kind in ("added", "renamed") or c.replacement):
            created_endpoints.setdefault(_root_key(head, c.stack.key), []).append(c.display)
    lines: list[Headline] = []
    for key, stack in head.items():
        for logical_id, resource in stack.resources.items():
            name = _name_key(stack, resource) if resource.get("Type") not in IGNORED_TYPES else None
            old_stack = base.get(key)
            new = old_stack is None or logical_id not in old_stack.resources
            if name is None or not (new or (key, logical_id) in replaced):
                continue
            entry = name_entry(resource.get("Type", ""))
            if entry is not None and entry.adopts:
                continue
            for holder_key, holder_id in old_names.get(name, []):
                if (holder_key, holder_id) == (key, logical_id):
                    continue  # the same resource replaced under its fixed name: _classify says so
                found = _clash(
                    base, head, stack, logical_id, resource, holder_key, holder_id, replaced, created_endpoints
                )
                if found is not None:
                    lines.append(Headline("fails", stack.title, found[1], str(resource.get("Type")), found[0]))
    return lines


def _clash(
    base: dict[str, StackTemplate],
    head: dict[str, StackTemplate],
    stack: StackTemplate,
    logical_id: str,
    resource: dict[str, Any],
    holder_key: str,
    holder_id: str,
    replaced: set[tuple[str, str]],
    created_endpoints: dict[str, list[str]],
) -> tuple[str, str] | None:
    """(``FAILS_BY`` reason, why) the Create of ``logical_id`` fails on the name ``holder_id`` of ``base`` holds, or
    None when the name is free by then."""
    holder_stack = base[holder_key]
    holder = holder_stack.resources[holder_id]
    holder_after = head.get(holder_key)
    still = holder_after.resources.get(holder_id) if holder_after is not None else None
    name = unique_name(resource)
    assert name is not None
    shown_name = _short(json.loads(name[1]))
    taker, old = _named(stack, logical_id, resource), _named(holder_stack, holder_id, holder)
    entry = name_entry(resource.get("Type", ""))
    request = entry.taken if entry is not None else f"creating the {name[0].rpartition('::')[2]} fails (it exists)"
    root, holder_root = _root_key(head, stack.key), _root_key(base, holder_key)
    across = root != holder_root
    where = f" (in {holder_stack.title})" if holder_key != stack.key else ""
    head_line = f"{name[0]} name {shown_name}: {taker} is created while {old}{where}"
    if still is not None and (holder_key, holder_id) not in replaced and unique_name(still) == name:
        return "name held twice", (
            f"{head_line} keeps the name: {request}; two resources cannot hold one name, give one another name."
        )
    policy = holder.get("UpdateReplacePolicy" if still is not None else "DeletionPolicy")
    if policy in RETAINED:
        return "name kept by a retained resource", (
            f"{head_line} leaves the stack with {'UpdateReplacePolicy' if still is not None else 'DeletionPolicy'} "
            f"{policy}: the thing stays and keeps the name after cleanup, so {request}. Two steps: delete the "
            "retained one by hand (or import it into the new resource) before the deploy, or give the new one "
            "another name."
        )
    if across and deploys_after(head, root, holder_root):
        return None  # the holder's stack deploys first and its cleanup frees the name
    if across:
        return "name re-taken across stacks", (
            f"{head_line} still holds the name: stack {stack.title} does not deploy after {holder_stack.title} "
            f"(no dependency), so it may create it before {holder_stack.title}'s cleanup deletes the old one, and "
            f"then {request}: the create fails while the name is still taken. Two steps: deploy "
            f"{holder_stack.title} once without it (or with it renamed), then {stack.title}; or make "
            f"{stack.title} depend on {holder_stack.title}, or pin another name."
        )
    text = (
        f"{head_line} still holds the name (the old one is deleted only in the cleanup, after every create): "
        f"{request}, so the create fails while the name is still taken and the stack rolls back."
    )
    endpoints = created_endpoints.get(root, [])
    if resource.get("Type") == "AWS::SageMaker::InferenceComponent" and endpoints:
        text += (
            f" It fails after the new endpoint {', '.join(endpoints)} was provisioned (instances started and "
            "billed, then deleted by the rollback). Component names are <stack>-<model>, with no endpoint in "
            "them: to rename an endpoint, deploy once with the old endpoint removed (or its models renamed), "
            "then add the new one."
        )
    else:
        text += (
            f" Two steps: deploy once with {old} removed or renamed, then add the new one; or keep the construct "
            "id (the same logical id updates in place), or pin another name."
        )
    return "name re-taken before cleanup", text
