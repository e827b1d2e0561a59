"""What a change will do when it deploys: compare two synthesized cloud assemblies, no AWS credentials needed.

Usage::

    python -m tools.change_report BASE_DIR HEAD_DIR [--markdown]     # two cdk.out folders
    python -m tools.change_report --git-base origin/main [--markdown] [--config PATH] [--head-dir cdk.out]

The second form synthesizes the base branch (exported with ``git archive`` into a temporary
folder, so the repository's own state is never touched) and the working tree (or reads
``--head-dir``), both with this checkout's ``node_modules`` and ``.venv``, then compares.

Per stack (nested stacks included, matched by stack and logical id) it lists resources
added, removed and modified, with the changed property paths. A modification is a
**REPLACEMENT** when a changed property is create-only in the CloudFormation resource schema
that cfn-lint ships, when it reaches a create-only property through a reference to a replaced
resource, when the resource type changes, and when a resource leaves under one logical id and
comes back under another (same type and same physical name, or same properties).

A long string value is compared by what changed inside it: JSON text (dashboard bodies, state
machine definitions) is parsed and each changed path is shown as ``Property::path``, lists aligned
item by item; other text shows the changed part with context. Stack Outputs are compared as well.
The head is named by its commit (``HEAD (<branch> <sha>)`` when the working tree is clean), or by
``--head-label``. ``--output FILE`` also writes the report; ``--step-summary`` appends the Markdown
report to ``$GITHUB_STEP_SUMMARY`` when that is set.

The headline calls out what costs money or capacity: an ``AWS::SageMaker::EndpointConfig``
replacement (it redeploys the endpoint: new instances are provisioned), endpoints created or
deleted, and any change to a capacity plan; and what will fail to deploy (a custom-named
resource that must be replaced, a name re-created before the old one is deleted, a changed
custom resource ServiceToken, a change to a bought capacity plan).

Ignored as noise: ``AWS::CDK::Metadata``, asset hashes (Lambda code S3 keys, nested template
URLs, container asset tags), ``aws:cdk:*``/``aws:asset:*`` metadata, checkov/cdk-nag metadata
and ``DependsOn``. Exit status 0 whatever changes (the report informs; the pull-request check
decides), 2 when the inputs are not cloud assemblies or a synth fails.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

REPO = Path(__file__).resolve().parents[1]
SCHEMA_REGION = "us-east-1"

ENDPOINT_CONFIG = "AWS::SageMaker::EndpointConfig"
ENDPOINT = "AWS::SageMaker::Endpoint"
NESTED_STACK = "AWS::CloudFormation::Stack"
CUSTOM_RESOURCE = "AWS::CloudFormation::CustomResource"
PLAN_TYPE = "Custom::SageMakerCapacityPlan"
"""``sagemaker_llm_cdk.capacity.capacity_plan.RESOURCE_TYPE`` (a test keeps them equal; importing the library here
would start jsii for nothing)."""
CAPACITY_PLAN_TYPES = frozenset({PLAN_TYPE, "Custom::CapacityPlan", "AWS::SageMaker::TrainingPlan"})
PLAN_IDENTITY = ("PlanName", "InstanceType", "InstanceCount", "DurationDays", "StartTimeAfter", "EndTimeBefore")
"""What the capacity plan handler refuses to change on a bought plan (lambda/capacity_plan/index.py)."""

IGNORED_TYPES = frozenset({"AWS::CDK::Metadata"})
IGNORED_METADATA = frozenset({"checkov", "cdk_nag", "cfn_nag", "guard"})
ATTRIBUTES = ("DeletionPolicy", "UpdateReplacePolicy", "Condition", "UpdatePolicy", "CreationPolicy")
_FILE_ASSET = re.compile(r"\b[0-9a-f]{64}(?=\.[a-z])")
_IMAGE_ASSET = re.compile(r"(container-assets.*:)[0-9a-f]{64}\b")
_NOT_PHYSICAL_NAMES = frozenset({"AWS::IAM::Policy"})
"""Types whose ``<Type>Name`` property is not a unique physical name (an inline policy's name)."""


class ReportError(Exception):
    """The inputs are not cloud assemblies, or a synth failed."""


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


MISSING: Any = _Missing()


# ----------------------------------------------------------------------------- loading
@dataclass
class StackTemplate:
    key: str
    title: str
    resources: dict[str, dict[str, Any]]
    parent: str | None = None
    parent_logical_id: str | None = None
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)


def load_assembly(folder: Path) -> dict[str, StackTemplate]:
    """Every stack template of the cloud assembly in ``folder``: stacks, nested stacks, stages."""
    if not (folder / "manifest.json").is_file():
        raise ReportError(f"{folder}: no manifest.json; not a synthesized cloud assembly (run `cdk synth`)")
    stacks: dict[str, StackTemplate] = {}
    _load(folder, "", stacks)
    return stacks


def _read_json(path: Path) -> dict[str, Any]:
    try:
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return loaded
    except (OSError, ValueError) as error:
        raise ReportError(f"{path}: {error}") from error


def _load(folder: Path, prefix: str, stacks: dict[str, StackTemplate]) -> None:
    manifest = _read_json(folder / "manifest.json")
    assets = _file_assets(folder, manifest)
    for artifact_id, artifact in manifest.get("artifacts", {}).items():
        properties = artifact.get("properties", {})
        if artifact.get("type") == "aws:cloudformation:stack":
            template = _read_json(folder / properties["templateFile"])
            stack = StackTemplate(prefix + artifact_id, artifact.get("displayName") or artifact_id,
                                  template.get("Resources") or {}, outputs=template.get("Outputs") or {})
            stacks[stack.key] = stack
            _load_nested(folder, stack, stacks, assets)
        elif artifact.get("type") == "cdk:cloud-assembly":
            _load(folder / properties["directoryName"], f"{prefix}{artifact_id}/", stacks)


def _file_assets(folder: Path, manifest: dict[str, Any]) -> dict[str, str]:
    """Asset hash -> file in ``folder``, from the assembly's asset manifests."""
    assets: dict[str, str] = {}
    for artifact in manifest.get("artifacts", {}).values():
        if artifact.get("type") == "cdk:asset-manifest":
            files = _read_json(folder / artifact["properties"]["file"]).get("files", {})
            assets.update({h: a.get("source", {}).get("path", "") for h, a in files.items()})
    return assets


def _nested_template(folder: Path, resource: dict[str, Any], assets: dict[str, str]) -> Path | None:
    """The template file of a nested stack resource: by its asset hash in TemplateURL, or its asset metadata."""
    url = json.dumps((resource.get("Properties") or {}).get("TemplateURL", ""))
    candidates = [assets.get(h, "") for h in re.findall(r"[0-9a-f]{64}", url)]
    candidates.append((resource.get("Metadata") or {}).get("aws:asset:path", ""))
    return next((folder / c for c in candidates if c and (folder / c).is_file()), None)


def _load_nested(folder: Path, parent: StackTemplate, stacks: dict[str, StackTemplate],
                 assets: dict[str, str]) -> None:
    for logical_id, resource in parent.resources.items():
        metadata = resource.get("Metadata") or {}
        template = _nested_template(folder, resource, assets) if resource.get("Type") == NESTED_STACK else None
        if template is None:
            continue
        cdk_path = metadata.get("aws:cdk:path", "")
        title = cdk_path.split(".NestedStack/")[0] if ".NestedStack/" in cdk_path else f"{parent.title}/{logical_id}"
        loaded = _read_json(template)
        nested = StackTemplate(f"{parent.key}/{logical_id}", title, loaded.get("Resources") or {}, parent.key,
                               logical_id, outputs=loaded.get("Outputs") or {})
        stacks[nested.key] = nested
        _load_nested(folder, nested, stacks, assets)


# ----------------------------------------------------------------------------- normalizing
_UNORDERED_IN_STATEMENT = ("Action", "NotAction", "Resource", "NotResource")


def _mask(value: Any) -> Any:
    """``value`` with asset hashes masked and the unordered lists of IAM policy statements sorted."""
    if isinstance(value, str):
        return _IMAGE_ASSET.sub(r"\1<asset-hash>", _FILE_ASSET.sub("<asset-hash>", value))
    if isinstance(value, list):
        return [_mask(v) for v in value]
    if isinstance(value, dict):
        masked = {k: _mask(v) for k, v in value.items()}
        if "Effect" in masked:  # an IAM policy statement: the order of actions and resources means nothing
            for key in _UNORDERED_IN_STATEMENT:
                if isinstance(masked.get(key), list):
                    masked[key] = sorted(masked[key], key=lambda v: json.dumps(v, sort_keys=True))
        return masked
    return value


def normalize(resource: dict[str, Any]) -> dict[str, Any]:
    """The parts of a resource that a deployment acts on, asset hashes masked."""
    out: dict[str, Any] = {"Type": resource.get("Type"), "Properties": _mask(resource.get("Properties") or {})}
    for attribute in ATTRIBUTES:
        if attribute in resource:
            out[attribute] = resource[attribute]
    metadata = {k: v for k, v in (resource.get("Metadata") or {}).items()
                if not k.startswith(("aws:cdk:", "aws:asset:")) and k not in IGNORED_METADATA}
    if metadata:
        out["Metadata"] = _mask(metadata)
    return out


def _is_intrinsic(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("Ref", "Condition") or (
        isinstance(value, dict) and len(value) == 1 and next(iter(value)).startswith("Fn::"))


def leaf_changes(old: Any, new: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any, Any]]:
    """(path, old, new) for every smallest part that differs; an intrinsic function is one part."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict) and not _is_intrinsic(old) and not _is_intrinsic(new):
        keys = list(old) + [k for k in new if k not in old]
        return [c for k in keys for c in leaf_changes(old.get(k, MISSING), new.get(k, MISSING), path + (k,))]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [c for i, (a, b) in enumerate(zip(old, new)) for c in leaf_changes(a, b, path + (i,))]
    if (isinstance(old, list) or isinstance(new, list)) and old is not MISSING and new is not MISSING:
        before, after = _as_list(old), _as_list(new)
        return [(path, ItemDelta([v for v in before if v not in after]), ItemDelta([v for v in after if v not in before]))]
    return [(path, old, new)]


class ItemDelta(list):  # type: ignore[type-arg]
    """The items only one side of a grown or shrunk list has."""


# ----------------------------------------------------------------------------- long strings
LONG = 70
"""Values whose JSON is longer than this are shown by what changed inside them, not elided."""
INSIDE = "::"
"""Separates a property path from a path inside its JSON string value: ``DashboardBody::widgets[2].properties``."""


class TextDelta(str):
    """The changed part of a long non-JSON string, with a little context: ``...ctx[-old-]{+new+}ctx...``."""


def _as_text(value: Any) -> str | None:
    compacted = _compact(value)
    return compacted if isinstance(compacted, str) else None


def _as_json(text: str) -> Any:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def json_changes(old: Any, new: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any, Any]]:
    """Like ``leaf_changes`` for plain JSON, but a list that grew or shrank is aligned item by item (difflib), so an
    inserted dashboard widget is one added item and the widgets after it are not all "changed"."""
    import difflib

    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        keys = list(old) + [k for k in new if k not in old]
        return [c for k in keys for c in json_changes(old.get(k, MISSING), new.get(k, MISSING), path + (k,))]
    if isinstance(old, list) and isinstance(new, list):
        keyed = [json.dumps(v, sort_keys=True) for v in old], [json.dumps(v, sort_keys=True) for v in new]
        found: list[tuple[tuple[Any, ...], Any, Any]] = []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, *keyed, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            if tag == "replace" and i2 - i1 == j2 - j1:
                for offset in range(i2 - i1):
                    found += json_changes(old[i1 + offset], new[j1 + offset], path + (j1 + offset,))
                continue
            found += [(path + (i,), old[i], MISSING) for i in range(i1, i2)]
            found += [(path + (j,), MISSING, new[j]) for j in range(j1, j2)]
        return found
    return [(path, old, new)]


def text_change(old: str, new: str, context: int = 30) -> tuple[TextDelta, TextDelta]:
    """The differing middle of two long strings, with ``context`` characters either side."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    def middle(text: str) -> str:
        part = text[start:len(text) - end]
        return part if len(part) <= 300 else part[:150] + "..." + part[-150:]

    lead = ("..." if start > context else "") + old[max(0, start - context):start]
    tail_old = old[len(old) - end:len(old) - end + context] if end else ""
    tail = tail_old + ("..." if end > context else "")
    return TextDelta(lead + "[-" + middle(old) + "-]" + tail), TextDelta(lead + "{+" + middle(new) + "+}" + tail)


def _detailed(found: list[tuple[tuple[Any, ...], Any, Any]], prefix: str,
              resource_type: str | None) -> list[PropertyChange]:
    """PropertyChanges for ``found``; a long string on both sides becomes what changed inside it (JSON-aware)."""
    out = []
    for path, before, after in found:
        create_only = is_create_only(resource_type, path) if resource_type else False
        shown = prefix + render_path(path)
        a, b = _as_text(before), _as_text(after)
        if a is not None and b is not None and max(len(json.dumps(a)), len(json.dumps(b))) > LONG:
            ja, jb = _as_json(a), _as_json(b)
            if ja is not None and jb is not None:
                inner = json_changes(ja, jb)
                out += [PropertyChange(f"{shown}{INSIDE}{render_path(p) or '(whole)'}", x, y, create_only)
                        for p, x, y in inner] or [PropertyChange(shown, before, after, create_only)]
                continue
            delta_old, delta_new = text_change(a, b)
            out.append(PropertyChange(shown, delta_old, delta_new, create_only))
            continue
        out.append(PropertyChange(shown, before, after, create_only))
    return out


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def render_path(path: Iterable[Any]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def references(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(path, logical id or parameter) for every Ref, Fn::GetAtt and Fn::Sub reference in ``value``."""
    if isinstance(value, dict):
        if len(value) == 1:
            (key, arg), = value.items()
            if key == "Ref" and isinstance(arg, str) and not arg.startswith("AWS::"):
                yield path, arg
                return
            if key == "Fn::GetAtt":
                target = arg[0] if isinstance(arg, list) else str(arg).split(".")[0]
                yield path, target
                return
            if key == "Fn::Sub":
                template = arg[0] if isinstance(arg, list) else arg
                for name in re.findall(r"\$\{([^!}][^}]*)\}", str(template)):
                    if not name.startswith("AWS::"):
                        yield path, name.split(".")[0]
        for k, v in value.items():
            yield from references(v, path if k.startswith("Fn::") or k == "Ref" else path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from references(v, path + (i,))


# ----------------------------------------------------------------------------- schema
_CREATE_ONLY: dict[str, list[tuple[str, ...]] | None] = {}


def create_only_properties(resource_type: str) -> list[tuple[str, ...]] | None:
    """Create-only property paths of ``resource_type`` from cfn-lint's schemas; None when it has no schema."""
    if resource_type not in _CREATE_ONLY:
        from cfnlint.schema import PROVIDER_SCHEMA_MANAGER, ResourceNotFoundError  # type: ignore[import-untyped]

        try:
            schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(SCHEMA_REGION, resource_type).schema
        except ResourceNotFoundError:
            _CREATE_ONLY[resource_type] = None
        else:
            _CREATE_ONLY[resource_type] = [tuple(p.split("/")[2:]) for p in schema.get("createOnlyProperties", [])
                                           if p.startswith("/properties/")]
    return _CREATE_ONLY[resource_type]


def is_create_only(resource_type: str, path: tuple[Any, ...]) -> bool:
    pointers = create_only_properties(resource_type) or []
    return any(all(p == "*" or p == str(c) for p, c in zip(pointer, path)) for pointer in pointers)


def is_custom(resource_type: str) -> bool:
    return resource_type.startswith("Custom::") or resource_type == CUSTOM_RESOURCE


def physical_name(resource: dict[str, Any]) -> str | None:
    """The resource's fixed name (``<Type>Name`` or ``Name``, ``PlanName`` for a capacity plan) as JSON, if set."""
    kind = resource.get("Type", "")
    if kind in _NOT_PHYSICAL_NAMES:
        return None
    properties = resource.get("Properties") or {}
    if is_capacity_plan(kind, ""):
        candidates: tuple[str, ...] = ("PlanName",)
    elif is_custom(kind):
        return None
    else:
        candidates = (kind.rpartition("::")[2] + "Name", "Name")
    for name in candidates:
        if name in properties:
            return json.dumps(_mask(properties[name]), sort_keys=True)
    return None


def is_capacity_plan(resource_type: str, logical_id: str) -> bool:
    return resource_type in CAPACITY_PLAN_TYPES or (is_custom(resource_type) and "CapacityPlan" in logical_id)


# ----------------------------------------------------------------------------- comparing
@dataclass
class PropertyChange:
    path: str
    old: Any = MISSING
    new: Any = MISSING
    create_only: bool = False
    via: str | None = None
    """The replaced resource (or changed parameter) whose new value reaches this property."""
    via_parameter: bool = False
    items: bool = False
    """``old``/``new`` are the items only in the old/new list (a list that grew or shrank)."""

    def __post_init__(self) -> None:
        self.items = self.items or isinstance(self.old, ItemDelta) or isinstance(self.new, ItemDelta)


@dataclass
class ResourceChange:
    kind: str  # added | removed | modified | renamed
    stack: StackTemplate
    logical_id: str
    resource_type: str
    cdk_path: str = ""
    old_logical_id: str | None = None
    old_stack: StackTemplate | None = None
    replacement: bool = False
    properties: list[PropertyChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    base: dict[str, Any] | None = None
    head: dict[str, Any] | None = None

    @property
    def display(self) -> str:
        path = self.cdk_path.split(".NestedStack/")[0]
        if path.startswith(self.stack.title + "/"):
            path = path[len(self.stack.title) + 1:]
        for suffix in ("/Resource/Resource", "/Resource/Default", "/Resource", "/Default"):
            if path.endswith(suffix):
                path = path[: -len(suffix)]
                break
        return f"{path} ({self.logical_id})" if path and path != self.logical_id else self.logical_id


@dataclass
class OutputChange:
    """A stack output added, removed or changed (its value, description, export or condition)."""

    kind: str  # added | removed | modified
    stack: StackTemplate
    name: str
    properties: list[PropertyChange] = field(default_factory=list)


@dataclass
class Headline:
    category: str  # redeploy | money | fails
    stack: str
    text: str


@dataclass
class Report:
    base_label: str
    head_label: str
    stacks: list[StackTemplate]
    changes: list[ResourceChange]
    headlines: list[Headline]
    outputs: list[OutputChange] = field(default_factory=list)

    def for_stack(self, stack: StackTemplate) -> list[ResourceChange]:
        return [c for c in self.changes if c.stack.key == stack.key]

    def outputs_for(self, stack: StackTemplate) -> list[OutputChange]:
        return [o for o in self.outputs if o.stack.key == stack.key]


def compare(base: dict[str, StackTemplate], head: dict[str, StackTemplate], *, base_label: str = "base",
            head_label: str = "head") -> Report:
    """Compare two loaded assemblies (``load_assembly``)."""
    order = list(head) + [k for k in base if k not in head]
    stacks = [head.get(k) or base[k] for k in order]
    changes: list[ResourceChange] = []
    removed: list[ResourceChange] = []
    added: list[ResourceChange] = []
    for key in order:
        old = {k: v for k, v in (base[key].resources if key in base else {}).items() if v.get("Type") not in IGNORED_TYPES}
        new = {k: v for k, v in (head[key].resources if key in head else {}).items() if v.get("Type") not in IGNORED_TYPES}
        stack = head.get(key) or base[key]
        for logical_id in new:
            if logical_id not in old:
                added.append(_change("added", stack, logical_id, None, new[logical_id]))
            else:
                change = _modification(stack, logical_id, old[logical_id], new[logical_id])
                if change is not None:
                    changes.append(change)
        for logical_id in old:
            if logical_id not in new:
                removed.append(_change("removed", base.get(key) or stack, logical_id, old[logical_id], None))
    renamed = _pair_renames(removed, added)
    new_ids = {(p.stack.key, p.logical_id) for p in renamed}
    old_ids = {(p.old_stack.key, p.old_logical_id) for p in renamed if p.old_stack is not None}
    changes += renamed
    changes += [c for c in added if (c.stack.key, c.logical_id) not in new_ids]
    changes += [c for c in removed if (c.stack.key, c.logical_id) not in old_ids]
    _cascade(base, head, changes)
    outputs = [o for key in order for o in _output_changes(base.get(key), head.get(key))]
    report = Report(base_label, head_label, stacks, sorted(changes, key=_sort_key(order)), [], outputs)
    report.headlines = _headlines(report, head)
    return report


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


def _sort_key(order: list[str]) -> Any:
    rank = {"renamed": 0, "modified": 1, "added": 2, "removed": 3}
    return lambda c: (order.index(c.stack.key), not c.replacement, rank[c.kind], c.logical_id)


def _change(kind: str, stack: StackTemplate, logical_id: str, base: dict[str, Any] | None,
            head: dict[str, Any] | None) -> ResourceChange:
    resource = head or base or {}
    return ResourceChange(kind, stack, logical_id, resource.get("Type", "?"),
                          (resource.get("Metadata") or {}).get("aws:cdk:path", ""), base=base, head=head)


def _modification(stack: StackTemplate, logical_id: str, old: dict[str, Any],
                  new: dict[str, Any]) -> ResourceChange | None:
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


_RENAMED_IN_PLACE = {"AWS::SageMaker::InferenceComponent": "InferenceComponentName"}
"""Names the schema does not mark create-only although the service cannot rename the resource."""


def _classify(change: ResourceChange) -> None:
    kind = change.resource_type
    change.replacement = change.replacement or any(p.create_only for p in change.properties)
    name_property = _RENAMED_IN_PLACE.get(kind)
    if change.kind == "modified" and any(p.path == name_property and not p.via for p in change.properties):
        note = (f"{name_property} changes, which the schema does not mark create-only: CloudFormation sends the "
                "rename as an update, which SageMaker cannot apply (there is no rename), so the deployment fails; keep "
                "the name (pin it with physical_name) or move the model to a new construct id so a new component is "
                "created under the new name")
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
        note = ("custom-named resource must be replaced: CloudFormation cannot replace a resource with a fixed name, "
                "so the update fails; change the name as well")
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
            pair = ResourceChange("renamed", match.stack, match.logical_id, match.resource_type, match.cdk_path,
                                  old_logical_id=gone.logical_id, old_stack=gone.stack, replacement=True,
                                  base=gone.base, head=match.head)
            if gone.stack.key == match.stack.key:
                pair.notes.append(f"logical id changes from {gone.logical_id} to {match.logical_id}: CloudFormation "
                                  "creates the new resource and deletes the old one")
            else:
                pair.notes.append(f"moves from stack {gone.stack.title} ({gone.logical_id}) to {match.stack.title}: "
                                  "CloudFormation creates it in the new stack and deletes it from the old one")
            name = physical_name(match.head or {})
            if same_name and name is not None:
                pair.notes.append(f"same name {_short(json.loads(name))}: the new resource is created before the old "
                                  "one is deleted, so the create fails while the name is still taken (deploy once "
                                  "without it, or rename it)")
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
    return (gone.stack.key == new.stack.key
            and normalize(gone.base or {})["Properties"] == normalize(new.head or {})["Properties"])


def _cascade(base: dict[str, StackTemplate], head: dict[str, StackTemplate], changes: list[ResourceChange]) -> None:
    """Mark what changes because a resource it references is replaced (its name or ARN changes)."""
    by_key = {(c.stack.key, c.logical_id): c for c in changes if c.kind == "modified"}
    for key, stack in head.items():
        if key not in base:
            continue
        changed = {c.logical_id for c in changes if c.stack.key == key and c.replacement}
        changed |= {c.old_logical_id for c in changes if c.kind == "renamed" and c.stack.key == key and c.old_logical_id}
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
                hits = [(p, ref) for p, ref in references(resource.get("Properties") or {})
                        if ref in changed and (p, ref) in old_refs]
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
                        change.properties.append(PropertyChange(render_path(path), via=ref, via_parameter=ref in parameters,
                                                                create_only=is_create_only(change.resource_type, path)))
                before = change.replacement
                _classify(change)
                if change.replacement and not before:
                    changed.add(logical_id)
                    progress = True


def _changed_parameters(stack: StackTemplate, changes: list[ResourceChange]) -> set[str]:
    """Parameters of nested ``stack`` whose value its parent now passes differently."""
    parent_change = next((c for c in changes if c.stack.key == stack.parent and c.logical_id == stack.parent_logical_id
                          and c.kind == "modified"), None)
    if parent_change is None:
        return set()
    return {p.path.split(".")[1].split("[")[0] for p in parent_change.properties if p.path.startswith("Parameters.")}


# ----------------------------------------------------------------------------- headline
def _headlines(report: Report, head: dict[str, StackTemplate]) -> list[Headline]:
    lines: list[Headline] = []
    for change in report.changes:
        kind, title = change.resource_type, change.stack.title
        if kind == ENDPOINT_CONFIG and change.replacement:
            why = _why(change)
            endpoints = _endpoints_using(head.get(change.stack.key), change.logical_id)
            target = ", ".join(endpoints) if endpoints else "its endpoint"
            lines.append(Headline("redeploy", title, f"endpoint config {change.display} is replaced{why}: redeploys "
                                  f"the endpoint {target}: new instances are provisioned"))
            if any(p.path.startswith("ProductionVariants") and "CapacityReservationConfig" in p.path
                   for p in change.properties):
                lines.append(Headline("money", title, f"endpoint config {change.display}: the capacity plan binding "
                                      "(CapacityReservationConfig) changes"))
        elif kind == ENDPOINT and change.kind in ("added", "removed"):
            verb = "created: instances are provisioned" if change.kind == "added" else "deleted: its instances are released"
            lines.append(Headline("redeploy", title, f"endpoint {change.display} is {verb}"))
        elif kind == ENDPOINT and change.replacement:
            lines.append(Headline("redeploy", title, f"endpoint {change.display} is replaced{_why(change)}: a new "
                                  "endpoint is created (new instances, new name) and the old one deleted"))
        if is_capacity_plan(kind, change.logical_id):
            lines.append(Headline("money", title, _plan_headline(change)))
        for note in change.notes:
            if "fails" in note or "refuses" in note:
                lines.append(Headline("fails", title, f"{change.resource_type} {change.display}: {note}"))
    return lines


def _why(change: ResourceChange) -> str:
    paths = [p.path + (f" via {p.via}" if p.via else "") for p in change.properties if p.create_only]
    if change.kind == "renamed":
        paths.insert(0, f"logical id {change.old_logical_id} -> {change.logical_id}")
    return f" ({'; '.join(paths[:4])}{'; ...' if len(paths) > 4 else ''})" if paths else ""


def _endpoints_using(stack: StackTemplate | None, config_id: str) -> list[str]:
    if stack is None:
        return []
    found = []
    for logical_id, resource in stack.resources.items():
        if resource.get("Type") == ENDPOINT and any(
                ref == config_id for _, ref in references((resource.get("Properties") or {}).get("EndpointConfigName"))):
            path = (resource.get("Metadata") or {}).get("aws:cdk:path", "")
            shown = _strip_stack(path, stack.title)
            found.append(f"{shown} ({logical_id})" if shown else logical_id)
    return found


def _strip_stack(path: str, title: str) -> str:
    path = path[len(title) + 1:] if path.startswith(title + "/") else path
    return path[: -len("/Resource")] if path.endswith("/Resource") else path


def _plan_headline(change: ResourceChange) -> str:
    props = ((change.head if change.kind != "removed" else change.base) or {}).get("Properties") or {}
    name = props.get("PlanName", change.logical_id)
    if change.kind == "added":
        return (f"capacity plan {name} is bought on deploy: {props.get('InstanceType', '?')} x "
                f"{props.get('InstanceCount', '?')} for {props.get('DurationDays', '?')} days, up to USD "
                f"{props.get('MaxUpfrontFeeUsd', '?')} upfront, never refunded")
    if change.kind == "removed":
        return (f"capacity plan {name} leaves the template: the plan is retained and stays paid (nothing is "
                "refunded); its endpoint gets no reserved instances from it")
    changed = [p for p in change.properties if not p.path.startswith("(")]
    described = "; ".join(f"{p.path} {_short(p.old)} -> {_short(p.new)}" if not p.via else f"{p.path} via {p.via}"
                          for p in changed) or "resource attributes only"
    if change.kind == "renamed":
        return (f"capacity plan {name} moves to logical id {change.logical_id} (was {change.old_logical_id}): the new "
                f"resource adopts the existing plan if its shape is unchanged; nothing is bought again ({described})")
    identity = [p.path for p in changed if p.path in PLAN_IDENTITY]
    if identity:
        return (f"capacity plan {name} changes {', '.join(identity)}: the deployment fails, a bought plan cannot "
                f"change; declare a new plan instead ({described})")
    return f"capacity plan {name} changes ({described}): no purchase"


# ----------------------------------------------------------------------------- rendering
def _compact(value: Any) -> Any:
    """CloudFormation intrinsics as readable text: Ref -> ${X}, GetAtt -> ${X.Attr}, Join concatenated."""
    if isinstance(value, dict) and len(value) == 1:
        (kind, arg), = value.items()
        if kind == "Ref":
            return "${" + str(arg) + "}"
        if kind == "Fn::GetAtt" and isinstance(arg, list):
            return "${" + ".".join(str(a) for a in arg) + "}"
        if kind == "Fn::Join" and isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list):
            parts = [_compact(p) for p in arg[1]]
            if all(isinstance(p, str) for p in parts):
                return str(arg[0]).join(parts)
        if kind == "Fn::Sub" and isinstance(arg, str):
            return arg
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def _short(value: Any, limit: int = 70) -> str:
    """``value`` as short JSON; a long one keeps its start and its end."""
    if value is MISSING:
        return "(absent)"
    if isinstance(value, TextDelta):
        return json.dumps(str(value))
    text = json.dumps(_compact(value), sort_keys=True)
    return text if len(text) <= limit else text[: limit // 2 - 2] + "..." + text[-(limit // 2 - 1):]


def _property_text(p: PropertyChange) -> str:
    if p.via:
        text = f"{p.path}: from {p.via}, " + ("a parameter whose value changes" if p.via_parameter else "which is replaced")
    elif p.items:
        parts = [f"-{_short(v)}" for v in p.old] + [f"+{_short(v)}" for v in p.new]
        text = f"{p.path}: " + ", ".join(parts) if parts else f"{p.path}: reordered"
    else:
        text = f"{p.path}: {_short(p.old)} -> {_short(p.new)}"
    return text + (" [create-only]" if p.create_only else "")


def _verdict(change: ResourceChange) -> str:
    if change.kind in ("added", "removed"):
        return change.kind
    if change.replacement:
        return "REPLACEMENT"
    if is_custom(change.resource_type):
        return "update (the custom resource handler decides)"
    if all(p.path.startswith("(") for p in change.properties):
        return "no update (attributes or metadata only)"
    return "update in place"


_HEADLINE_TITLES = {"redeploy": "Endpoint redeploys", "money": "Capacity plans (money)", "fails": "Will fail to deploy"}


def render_text(report: Report) -> str:
    out = [f"Change report: {report.base_label} -> {report.head_label}", "", "Headline:"]
    if report.headlines:
        out += [f"  !! {_HEADLINE_TITLES[h.category]}: {h.stack}: {h.text}" for h in report.headlines]
    else:
        out.append("  no endpoint redeploy, no capacity plan change")
    unchanged = []
    for stack in report.stacks:
        changes, outputs = report.for_stack(stack), report.outputs_for(stack)
        if not changes and not outputs:
            unchanged.append(stack.title)
            continue
        out += ["", f"Stack {stack.title}: {_counts(changes)}" + (f", {len(outputs)} output(s) changed" if outputs else "")]
        for change in changes:
            mark = {"added": "+", "removed": "-", "renamed": "~", "modified": "~"}[change.kind]
            out.append(f"  {mark} {change.resource_type} {change.display}: {_verdict(change)}")
            out += [f"      {_property_text(p)}" for p in change.properties]
            out += [f"      note: {n}" for n in change.notes]
        for output in outputs:
            out.append(f"  {_OUTPUT_MARK[output.kind]} Output {output.name}: {output.kind}")
            out += [f"      {_property_text(p)}" for p in output.properties]
    if unchanged:
        out += ["", "No changes: " + ", ".join(unchanged)]
    return "\n".join(out) + "\n"


_OUTPUT_MARK = {"added": "+", "removed": "-", "modified": "~"}


def _counts(changes: list[ResourceChange]) -> str:
    count = {k: sum(1 for c in changes if c.kind == k) for k in ("added", "removed", "modified", "renamed")}
    replaced = sum(1 for c in changes if c.replacement)
    text = f"{count['added']} added, {count['removed']} removed, {count['modified'] + count['renamed']} modified"
    return text + (f" ({replaced} replacement{'s' if replaced != 1 else ''})" if replaced else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report) -> str:
    out = [f"## Change report: `{report.base_label}` → `{report.head_label}`", ""]
    if report.headlines:
        out.append("### ⚠️ Headline")
        out += [f"- **{_HEADLINE_TITLES[h.category]}** (`{h.stack}`): {_cell(h.text)}" for h in report.headlines]
    else:
        out.append("**Headline:** no endpoint redeploy, no capacity plan change.")
    unchanged = []
    for stack in report.stacks:
        changes, outputs = report.for_stack(stack), report.outputs_for(stack)
        if not changes and not outputs:
            unchanged.append(f"`{stack.title}`")
            continue
        out += ["", f"### Stack `{stack.title}`: {_counts(changes)}" + (f", {len(outputs)} output(s) changed" if outputs else ""),
                "", "| Change | Resource | Type | Details |", "| --- | --- | --- | --- |"]
        for change in changes:
            verdict = _verdict(change)
            verdict = f"**{verdict}**" if change.replacement else verdict
            details = [f"`{_cell(_property_text(p))}`" for p in change.properties] + [_cell(n) for n in change.notes]
            out.append(f"| {verdict} | `{_cell(change.display)}` | `{change.resource_type}` | {'<br>'.join(details)} |")
        for output in outputs:
            details = [f"`{_cell(_property_text(p))}`" for p in output.properties]
            out.append(f"| output {output.kind} | `{_cell(output.name)}` | Output | {'<br>'.join(details)} |")
    if unchanged:
        out += ["", "No changes: " + ", ".join(unchanged)]
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- synthesizing
def _tool_env(source: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(REPO / "node_modules" / ".bin"), str(REPO / ".venv" / "bin"), env.get("PATH", "")])
    # The source's own library first: the venv's editable install points at this checkout.
    env["PYTHONPATH"] = os.pathsep.join([str(source / "constructs"), str(source), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("CDK_DISABLE_VERSION_CHECK", "1")
    env.setdefault("CDK_CLI_TELEMETRY", "false")
    return env


def _python() -> Path:
    """This checkout's virtualenv Python (what cdk.json's tools/venv-python runs), else the running one."""
    venv = REPO / ".venv" / "bin" / "python"
    return venv if venv.is_file() else Path(sys.executable)


def synthesize(source: Path, out: Path, *, config: str | None = None) -> Path:
    """``cdk synth`` of the app in ``source`` into ``out``, with this checkout's Node tooling and venv."""
    # The app command is given, not read from the source's cdk.json: an exported ref has no .venv of its own.
    # --no-validation: the report compares templates; validating them is cfn-lint's job in `make check` (and the
    # base was checked when it merged), so CDK's built-in validator (seconds and ~450 MiB) is not run here.
    command = ["cdk", "synth", "--quiet", "--no-validation", "--app", f"{shlex.quote(str(_python()))} app.py",
               "--output", str(out)]
    command += ["--context", f"config={config}"] if config else []
    completed = subprocess.run(command, cwd=source, env=_tool_env(source), capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        tail = "\n".join((completed.stderr or completed.stdout).strip().splitlines()[-25:])
        raise ReportError(f"cdk synth failed in {source}:\n{tail}")
    return out


def export_ref(ref: str, into: Path) -> str:
    """The files of ``ref`` (a commit, branch or tag) extracted into ``into``; returns the commit's short id."""
    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)

    verified = git("rev-parse", "--verify", "--short", f"{ref}^{{commit}}")
    if verified.returncode != 0:
        raise ReportError(f"git: unknown revision {ref!r} (in CI, check out with fetch-depth: 0)")
    archive = into.parent / f"{into.name}.tar"
    exported = git("archive", "--format=tar", f"--output={archive}", ref)
    if exported.returncode != 0:
        raise ReportError(f"git archive {ref} failed: {exported.stderr.strip()}")
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    archive.unlink()
    return verified.stdout.strip()


def report_against_git(ref: str, *, config: str | None = None, head_dir: Path | None = None,
                       keep: Path | None = None, head_label: str | None = None) -> Report:
    with tempfile.TemporaryDirectory(prefix="change-report-") as tmp:
        work = keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        commit = export_ref(ref, work / "base-src")
        base_out = synthesize(work / "base-src", work / "base.out", config=config)
        head_out = head_dir or synthesize(REPO, work / "head.out", config=config)
        label = head_label or (f"{head_dir} ({working_tree_label()})" if head_dir else working_tree_label())
        return compare(load_assembly(base_out), load_assembly(head_out), base_label=f"{ref} ({commit})",
                       head_label=label)


def working_tree_label(repo: Path = REPO) -> str:
    """What the working tree is, as a git name: ``HEAD (<branch> <sha>)`` when it is clean (it is that commit),
    else ``working tree (uncommitted changes on <sha>)``; ``working tree`` outside git."""
    def git(*args: str) -> str | None:
        done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else None

    sha = git("rev-parse", "--short", "HEAD")
    if sha is None:
        return "working tree"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    if dirty:
        return f"working tree (uncommitted changes on {sha})"
    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    return f"HEAD ({branch} {sha})" if branch and branch != "HEAD" else f"HEAD ({sha})"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base_dir", nargs="?", type=Path, help="the base cloud assembly (cdk.out folder)")
    parser.add_argument("head_dir", nargs="?", type=Path, help="the changed cloud assembly")
    parser.add_argument("--git-base", metavar="REF", help="synthesize REF and compare it with the working tree")
    parser.add_argument("--head-dir", type=Path, help="with --git-base: compare with this assembly instead")
    parser.add_argument("--config", help="with --git-base: the app config (cdk synth -c config=PATH)")
    parser.add_argument("--keep", type=Path, help="with --git-base: keep the exported source and assemblies here")
    parser.add_argument("--head-label", help="name the compared head this way (e.g. the pull request's head commit)")
    parser.add_argument("--markdown", action="store_true", help="GitHub-flavoured Markdown (step summary)")
    parser.add_argument("--output", type=Path, help="also write the report to this file")
    parser.add_argument("--step-summary", action="store_true",
                        help="also append the Markdown report to $GITHUB_STEP_SUMMARY, when it is set")
    args = parser.parse_args(argv)
    try:
        if args.git_base:
            if args.base_dir or args.head_dir:
                parser.error("give either BASE_DIR HEAD_DIR or --git-base REF")
            report = report_against_git(args.git_base, config=args.config, head_dir=args.head_dir, keep=args.keep,
                                        head_label=args.head_label)
        elif args.base_dir and args.head_dir:
            report = compare(load_assembly(args.base_dir), load_assembly(args.head_dir),
                             base_label=str(args.base_dir), head_label=args.head_label or str(args.head_dir))
        else:
            parser.error("give BASE_DIR HEAD_DIR, or --git-base REF")
    except ReportError as error:
        print(f"change report: {error}", file=sys.stderr)
        return 2
    text = render_markdown(report) if args.markdown else render_text(report)
    sys.stdout.write(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if args.step_summary and summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(render_markdown(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
