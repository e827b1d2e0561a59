"""Resource changes between two versions of a stack: added, removed, modified (its changed properties, and whether it
is a replacement and why) and renamed (a resource that leaves under one logical id and comes back under another),
replacements followed through the references to them, and changed stack outputs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tools.change_report.property_changes import _detailed, leaf_changes
from tools.change_report.records import OutputChange, PropertyChange, ResourceChange
from tools.change_report.resource_types import (
    IGNORED_TYPES,
    NESTED_STACK,
    create_only_properties,
    is_create_only,
    is_custom,
)
from tools.change_report.templates import ATTRIBUTES, MISSING, _mask, normalize, references, render_path
from tools.change_report.unique_names import name_entry, physical_name
from tools.change_report.value_text import _short

if TYPE_CHECKING:
    from tools.change_report.assembly import StackTemplate


FIXED_NAME_STEPS = (
    "Two steps: deploy once with the name changed (or pin another name), so CloudFormation creates the "
    "new one beside the old one and deletes the old one in cleanup; or deploy once without the "
    "resource, then with it."
)
"""What to do about a create-only change of a resource whose name is fixed."""
_RENAMED_IN_PLACE = {"AWS::SageMaker::InferenceComponent": "InferenceComponentName"}
"""Names the schema does not mark create-only although the service cannot rename the resource."""


def _change(
    kind: str, stack: StackTemplate, logical_id: str, base: dict[str, Any] | None, head: dict[str, Any] | None
) -> ResourceChange:
    resource = head or base or {}
    return ResourceChange(
        kind,
        stack,
        logical_id,
        resource.get("Type", "?"),
        (resource.get("Metadata") or {}).get("aws:cdk:path", ""),
        base=base,
        head=head,
    )


def _modification(
    stack: StackTemplate, logical_id: str, old: dict[str, Any], new: dict[str, Any]
) -> ResourceChange | None:
    a, b = normalize(old), normalize(new)
    if a == b:
        return None
    change = _change("modified", stack, logical_id, old, new)
    if a["Type"] != b["Type"]:
        change.replacement = True
        change.notes.append(f"type changes from {a['Type']}: CloudFormation cannot update a resource's type")
        return change
    kind = b["Type"]
    change.properties += _detailed(leaf_changes(a["Properties"], b["Properties"]), "", kind)
    for attribute in ATTRIBUTES + ("Metadata",):
        for path, before, after in leaf_changes(a.get(attribute, MISSING), b.get(attribute, MISSING), (attribute,)):
            change.properties.append(PropertyChange(f"({render_path(path)})", before, after))
    _classify(change)
    return change


def _classify(change: ResourceChange) -> None:
    kind = change.resource_type
    change.replacement = change.replacement or any(p.create_only for p in change.properties)
    name_property = _RENAMED_IN_PLACE.get(kind)
    if change.kind == "modified" and any(p.path == name_property and not p.via for p in change.properties):
        note = (
            f"{name_property} changes, which the schema does not mark create-only: CloudFormation sends the "
            "rename as an update, which SageMaker cannot apply (there is no rename), so the deployment fails; keep "
            "the name (pin it with physical_name) or move the model to a new construct id so a new component is "
            "created under the new name"
        )
        if note not in change.notes:
            change.notes.append(note)
    if is_custom(kind):
        if any(p.path == "ServiceToken" for p in change.properties):
            note = "ServiceToken changes: CloudFormation refuses to change a custom resource's ServiceToken"
            if note not in change.notes:
                change.notes.append(note)
    elif create_only_properties(kind) is None and kind != NESTED_STACK:
        note = f"no CloudFormation schema for {kind} in cfn-lint: replacement not predicted"
        if note not in change.notes:
            change.notes.append(note)
    name = physical_name(change.head) if change.head is not None and change.kind == "modified" else None
    if change.replacement and name is not None and name == physical_name(change.base or {}):
        why = ", ".join(p.path for p in change.properties if p.create_only) or "a create-only property"
        note = (
            f"custom-named resource must be replaced ({why} is create-only): CloudFormation cannot replace a "
            f"resource with a fixed name ({_short(json.loads(name))}), so the update fails. {FIXED_NAME_STEPS}"
        )
        if note not in change.notes:
            change.notes.append(note)


def _pair_renames(removed: list[ResourceChange], added: list[ResourceChange]) -> list[ResourceChange]:
    pairs: list[ResourceChange] = []
    free = list(added)
    for same_name in (True, False):
        for gone in removed:
            if any(p.old_logical_id == gone.logical_id and p.old_stack is gone.stack for p in pairs):
                continue
            match = next((new for new in free if _same_resource(gone, new, same_name)), None)
            if match is None:
                continue
            free.remove(match)
            pair = ResourceChange(
                "renamed",
                match.stack,
                match.logical_id,
                match.resource_type,
                match.cdk_path,
                old_logical_id=gone.logical_id,
                old_stack=gone.stack,
                replacement=True,
                base=gone.base,
                head=match.head,
            )
            if gone.stack.key == match.stack.key:
                pair.notes.append(
                    f"logical id changes from {gone.logical_id} to {match.logical_id}: CloudFormation "
                    "creates the new resource and deletes the old one"
                )
            else:
                pair.notes.append(
                    f"moves from stack {gone.stack.title} ({gone.logical_id}) to {match.stack.title}: "
                    "CloudFormation creates it in the new stack and deletes it from the old one"
                )
            name = physical_name(match.head or {})
            if same_name and name is not None:
                entry = name_entry(pair.resource_type)
                taken = (
                    f"a Create that finds it held: {entry.taken}"
                    if entry and entry.adopts
                    else "the old one holds it until cleanup"
                )
                pair.notes.append(f"same name {_short(json.loads(name))} under the new logical id: {taken}")
            a, b = normalize(gone.base or {}), normalize(match.head or {})
            pair.properties = _detailed(leaf_changes(a["Properties"], b["Properties"]), "", pair.resource_type)
            pairs.append(pair)
    return pairs


def _same_resource(gone: ResourceChange, new: ResourceChange, by_name: bool) -> bool:
    if gone.resource_type != new.resource_type:
        return False
    if by_name:
        name = physical_name(gone.base or {})
        return name is not None and name == physical_name(new.head or {})
    return (
        gone.stack.key == new.stack.key
        and normalize(gone.base or {})["Properties"] == normalize(new.head or {})["Properties"]
    )


def _cascade(base: dict[str, StackTemplate], head: dict[str, StackTemplate], changes: list[ResourceChange]) -> None:
    """Mark what changes because a resource it references is replaced (its name or ARN changes)."""
    by_key = {(c.stack.key, c.logical_id): c for c in changes if c.kind == "modified"}
    for key, stack in head.items():
        if key not in base:
            continue
        changed = {c.logical_id for c in changes if c.stack.key == key and c.replacement}
        changed |= {
            c.old_logical_id for c in changes if c.kind == "renamed" and c.stack.key == key and c.old_logical_id
        }
        parameters = _changed_parameters(stack, changes) if stack.parent is not None else set()
        changed |= parameters
        progress = True
        while progress:
            progress = False
            for logical_id, resource in stack.resources.items():
                old = base[key].resources.get(logical_id)
                if old is None or resource.get("Type") in IGNORED_TYPES or logical_id in changed:
                    continue
                old_refs = set(references(old.get("Properties") or {}))
                hits = [
                    (p, ref)
                    for p, ref in references(resource.get("Properties") or {})
                    if ref in changed and (p, ref) in old_refs
                ]
                if not hits:
                    continue
                change = by_key.get((key, logical_id))
                if change is None:
                    change = _change("modified", stack, logical_id, old, resource)
                    by_key[(key, logical_id)] = change
                    changes.append(change)
                known = {(p.path, p.via) for p in change.properties}
                for path, ref in hits:
                    if (render_path(path), ref) not in known:
                        change.properties.append(
                            PropertyChange(
                                render_path(path),
                                via=ref,
                                via_parameter=ref in parameters,
                                create_only=is_create_only(change.resource_type, path),
                            )
                        )
                before = change.replacement
                _classify(change)
                if change.replacement and not before:
                    changed.add(logical_id)
                    progress = True


def _changed_parameters(stack: StackTemplate, changes: list[ResourceChange]) -> set[str]:
    """Parameters of nested ``stack`` whose value its parent now passes differently."""
    parent_change = next(
        (
            c
            for c in changes
            if c.stack.key == stack.parent and c.logical_id == stack.parent_logical_id and c.kind == "modified"
        ),
        None,
    )
    if parent_change is None:
        return set()
    return {p.path.split(".")[1].split("[")[0] for p in parent_change.properties if p.path.startswith("Parameters.")}


def _output_changes(base: StackTemplate | None, head: StackTemplate | None) -> list[OutputChange]:
    stack = head or base
    assert stack is not None
    old = base.outputs if base is not None else {}
    new = head.outputs if head is not None else {}
    found = []
    for name in list(new) + [n for n in old if n not in new]:
        if name not in old:
            found.append(OutputChange("added", stack, name, [PropertyChange("Value", new=new[name].get("Value"))]))
        elif name not in new:
            found.append(OutputChange("removed", stack, name, [PropertyChange("Value", old=old[name].get("Value"))]))
        else:
            a, b = _mask(old[name]), _mask(new[name])
            if a != b:
                found.append(OutputChange("modified", stack, name, _detailed(leaf_changes(a, b), "", None)))
    return found
