"""What a change will do when it deploys: compare two synthesized cloud assemblies, no AWS credentials needed.

Usage::

    python -m tools.change_report BASE_DIR HEAD_DIR [--markdown]     # two cdk.out folders
    python -m tools.change_report --git-base origin/main [--markdown] [--config PATH] [--head-dir cdk.out]

The second form synthesizes the base branch (exported with ``git archive`` into a temporary
folder, so the repository's own state is never touched) and the working tree (or reads
``--head-dir``), both with this checkout's ``node_modules`` and ``.venv``, then compares.

The report opens with what the change costs per 30 days: per endpoint, EAGLE loop and benchmark schedule (matched
by subject; one on one side only is a whole line added or removed) and in total, the delta of the floor and the
ceiling in instance-hours and in USD ("+720 ml.p5e.48xlarge instance-hours per 30 days (+USD ...)"; an unknown price
makes it "USD unknown", never 0), and the prepaid plan fees the change would commit. The figures come from the
``cost-model.json`` the synth writes into each assembly (``cost.cost_model(app)``); when the base has none (an older
base), both sides are read from their templates (endpoint configs' instance counts and capacity binding, capacity
plans' fees), and the report says which. USD is what each synth priced, or ``--prices FILE`` (a table in
``prices.json``'s shape) for both sides.

Per stack (nested stacks included, matched by stack and logical id) it lists resources
added, removed and modified, with the changed property paths. A modification is a
**REPLACEMENT** when a changed property is create-only in the CloudFormation resource schema
that cfn-lint ships, when it reaches a create-only property through a reference to a replaced
resource, when the resource type changes, and when a resource leaves under one logical id and
comes back under another (same type and same physical name, or same properties).

A long string value is compared by what changed inside it: JSON text (dashboard bodies, state
machine definitions) is parsed and each changed path is shown as ``Property::path``, lists aligned
item by item; other text, and a long string inside such JSON (a dashboard's Markdown), shows the changed part with
context. Two values too long to show whole are each cut around their first difference, so the excerpts always show
where they part. Stack Outputs are compared as well.
The head is named by its commit (``HEAD (<branch> <sha>)`` when the working tree is clean), or by
``--head-label``. ``--output FILE`` also writes the report; ``--step-summary`` appends the Markdown
report to ``$GITHUB_STEP_SUMMARY`` when that is set.

What will fail to deploy comes first, before the cost (``DOES NOT DEPLOY IN ONE STEP``), each reason with the
two-step way: the ways a one-resource-at-a-time view misses, found from CloudFormation's order (every Create
first, then the Updates, the cleanup's Deletes last): a create-only change of a resource whose name is fixed
(CloudFormation cannot replace it); a name re-taken before cleanup (a new or replacing resource takes a name,
unique per account and region, ``UNIQUE_NAMES``, that a resource deleted or replaced in the same deploy holds until
the cleanup: an endpoint renamed, whose components keep their ``<stack>-<model>`` names); the same across stacks of
one assembly that do not deploy one after the other (``name_clashes``); and a changed custom resource
ServiceToken, an in-place component rename. The headline then calls out what costs money or capacity: an
``AWS::SageMaker::EndpointConfig`` replacement (it redeploys the endpoint: new instances are provisioned),
endpoints created or deleted, and any change to a capacity plan. ``redeploy(assembly)`` says what a stack delete
and a deploy again keeps (retain policies, run-time parameters with Removal retain) and what comes back fresh.

Every resource of the pair is also classified (``classify(base, head) -> list[Outcome]``, which the
tests use and the report prints per resource): unchanged, updated in place, replaced, added or removed, with the
step CloudFormation takes (``Outcome.step``: created first, deleted in cleanup, a custom resource's handler);
the write-only properties (from the schema) an in-place update sends again with the template's value,
and which of them overwrite what a service set at run time (``RuntimeConfig.CopyCount`` of an autoscaled
inference component); the run-time values it resets ("resets /sagemaker-llm/.../status": an
``AWS::SSM::Parameter`` that a function's or state machine's role may ``ssm:PutParameter``, which any
update or replacement of the resource puts back to the template's ``Value``) or keeps (a
``Custom::SageMakerLlmRunTimeParameter``, whose update never writes the value; a new ``ParameterName``
is a new parameter); and, for a replaced endpoint config bound to a capacity plan, the free plan
instances the move needs ("replaces the endpoint config: needs N free plan instances": the fleet in
use for blue/green, one batch for a rolling update). Values read at deploy (a plan's status, a
promoted EAGLE head) can be given per side (``at_deploy``), so a change that only flips one of them
is compared too. Run-time value resets and short plan headroom are in the headline.

Ignored as noise: ``AWS::CDK::Metadata``, asset hashes (Lambda code S3 keys, nested template
URLs, container asset tags), ``aws:cdk:*``/``aws:asset:*`` metadata, checkov/cdk-nag metadata
and ``DependsOn``. Exit status 0 whatever changes (the report informs; the pull-request check
decides), 2 when the inputs are not cloud assemblies or a synth fails.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

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
    parameters: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The template's Parameters: an ``AWS::SSM::Parameter::Value<...>`` one is read at every deploy."""
    conditions: dict[str, Any] = field(default_factory=dict)
    environment: str = ""
    """``aws://account/region`` from the manifest (a nested stack's is its parent's): names are unique per account
    and region, so only stacks of one environment can take a name from each other."""
    dependencies: tuple[str, ...] = ()
    """Keys of the stacks this one deploys after (the manifest's ``dependencies``, asset artifacts left out)."""


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
            stack = StackTemplate(
                prefix + artifact_id,
                artifact.get("displayName") or artifact_id,
                template.get("Resources") or {},
                outputs=template.get("Outputs") or {},
                parameters=template.get("Parameters") or {},
                conditions=template.get("Conditions") or {},
                environment=str(artifact.get("environment", "")),
                dependencies=tuple(
                    prefix + d
                    for d in artifact.get("dependencies", [])
                    if manifest["artifacts"].get(d, {}).get("type") == "aws:cloudformation:stack"
                ),
            )
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


def _load_nested(folder: Path, parent: StackTemplate, stacks: dict[str, StackTemplate], assets: dict[str, str]) -> None:
    for logical_id, resource in parent.resources.items():
        metadata = resource.get("Metadata") or {}
        template = _nested_template(folder, resource, assets) if resource.get("Type") == NESTED_STACK else None
        if template is None:
            continue
        cdk_path = metadata.get("aws:cdk:path", "")
        title = cdk_path.split(".NestedStack/")[0] if ".NestedStack/" in cdk_path else f"{parent.title}/{logical_id}"
        loaded = _read_json(template)
        nested = StackTemplate(
            f"{parent.key}/{logical_id}",
            title,
            loaded.get("Resources") or {},
            parent.key,
            logical_id,
            outputs=loaded.get("Outputs") or {},
            parameters=loaded.get("Parameters") or {},
            conditions=loaded.get("Conditions") or {},
            environment=parent.environment,
        )
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
    metadata = {
        k: v
        for k, v in (resource.get("Metadata") or {}).items()
        if not k.startswith(("aws:cdk:", "aws:asset:")) and k not in IGNORED_METADATA
    }
    if metadata:
        out["Metadata"] = _mask(metadata)
    return out


def _is_intrinsic(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and len(value) == 1
        and next(iter(value)) in ("Ref", "Condition")
        or (isinstance(value, dict) and len(value) == 1 and next(iter(value)).startswith("Fn::"))
    )


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
        return [
            (path, ItemDelta([v for v in before if v not in after]), ItemDelta([v for v in after if v not in before]))
        ]
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
    """The differing middle of two long strings, with ``context`` characters either side: each side starts at the
    first character where they differ (``first_difference``) and a long middle keeps its start, so what is shown is
    always where the two part."""
    start = first_difference(old, new)
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1

    def middle(text: str) -> str:
        part = text[start : len(text) - end]
        return part if len(part) <= 300 else part[:150] + "..." + part[-150:]

    lead = ("..." if start > context else "") + old[max(0, start - context) : start]
    tail_old = old[len(old) - end : len(old) - end + context] if end else ""
    tail = tail_old + ("..." if end > context else "")
    return TextDelta(lead + "[-" + middle(old) + "-]" + tail), TextDelta(lead + "{+" + middle(new) + "+}" + tail)


def _detailed(
    found: list[tuple[tuple[Any, ...], Any, Any]], prefix: str, resource_type: str | None
) -> list[PropertyChange]:
    """PropertyChanges for ``found``; a long string on both sides becomes what changed inside it (JSON-aware)."""
    out = []
    for path, before, after in found:
        create_only = is_create_only(resource_type, path) if resource_type else False
        shown = prefix + render_path(path)
        a, b = _as_text(before), _as_text(after)
        if a is not None and b is not None and max(len(json.dumps(a)), len(json.dumps(b))) > LONG:
            ja, jb = _as_json(a), _as_json(b)
            if ja is not None and jb is not None:
                inner = [(p, *_inside_text(x, y)) for p, x, y in json_changes(ja, jb)]
                out += [
                    PropertyChange(f"{shown}{INSIDE}{render_path(p) or '(whole)'}", x, y, create_only)
                    for p, x, y in inner
                ] or [PropertyChange(shown, before, after, create_only)]
                continue
            delta_old, delta_new = text_change(a, b)
            out.append(PropertyChange(shown, delta_old, delta_new, create_only))
            continue
        out.append(PropertyChange(shown, before, after, create_only))
    return out


def _inside_text(old: Any, new: Any) -> tuple[Any, Any]:
    """A long string inside a JSON value (a dashboard's Markdown text) as what changed in it, like a long property."""
    if isinstance(old, str) and isinstance(new, str) and max(len(json.dumps(old)), len(json.dumps(new))) > LONG:
        return text_change(old, new)
    return old, new


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
            ((key, arg),) = value.items()
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
            _CREATE_ONLY[resource_type] = [
                tuple(p.split("/")[2:]) for p in schema.get("createOnlyProperties", []) if p.startswith("/properties/")
            ]
    return _CREATE_ONLY[resource_type]


def is_create_only(resource_type: str, path: tuple[Any, ...]) -> bool:
    pointers = create_only_properties(resource_type) or []
    return any(all(p == "*" or p == str(c) for p, c in zip(pointer, path)) for pointer in pointers)


def is_custom(resource_type: str) -> bool:
    return resource_type.startswith("Custom::") or resource_type == CUSTOM_RESOURCE


@dataclass(frozen=True)
class UniqueName:
    """A name that only one resource of its kind may hold in an account and region (a budget's: in an account)."""

    resource_type: str
    path: tuple[str, ...]
    """Where the name sits in the resource's properties."""
    kind: str
    """What shares the name space: an ``AWS::SSM::Parameter`` and a run-time parameter share SSM's."""
    taken: str
    """What a Create that finds the name held does: the request that fails, or (``adopts``) what the handler does."""
    adopts: bool = False
    """The Create takes the existing thing over instead of failing."""
    per_account: bool = False
    """Unique in the account, all regions (AWS Budgets)."""


ROUTER_TYPE = "Custom::SageMakerInferenceRouter"
"""``sagemaker_llm_cdk.routing.router.RESOURCE_TYPE``."""
UNIQUE_NAMES: dict[str, UniqueName] = {
    n.resource_type: n
    for n in (
        UniqueName(ENDPOINT, ("EndpointName",), "endpoint", "CreateEndpoint fails"),
        UniqueName(ENDPOINT_CONFIG, ("EndpointConfigName",), "endpoint config", "CreateEndpointConfig fails"),
        UniqueName("AWS::SageMaker::Model", ("ModelName",), "model", "CreateModel fails"),
        UniqueName(
            "AWS::SageMaker::InferenceComponent",
            ("InferenceComponentName",),
            "inference component",
            "CreateInferenceComponent fails",
        ),
        UniqueName(
            "AWS::Budgets::Budget",
            ("Budget", "BudgetName"),
            "budget",
            "CreateBudget fails (DuplicateRecord)",
            per_account=True,
        ),
        UniqueName("AWS::SSM::Parameter", ("Name",), "SSM parameter", "PutParameter fails (ParameterAlreadyExists)"),
        UniqueName(ROUTER_TYPE, ("RouterName",), "inference router", "CreateInferenceRouter fails"),
        UniqueName(
            "Custom::SageMakerLlmRunTimeParameter",
            ("ParameterName",),
            "SSM parameter",
            "the handler keeps the parameter and its value and takes it over (owner tag), so the old resource's "
            "Delete leaves it",
            adopts=True,
        ),
        UniqueName(
            PLAN_TYPE,
            ("PlanName",),
            "capacity plan",
            "the handler adopts the bought plan when its shape is unchanged (nothing is bought again)",
            adopts=True,
        ),
    )
}
"""Names unique per account and region that the library's resources set, and where each sits. Other AWS types are
read by ``<Type>Name`` / ``Name`` (``physical_name``) except ``_SCOPED_NAMES``."""
_SCOPED_NAMES = frozenset(
    {"AWS::Logs::LogStream", "AWS::ApplicationAutoScaling::ScalingPolicy", "AWS::Scheduler::Schedule"}
)
"""Types whose ``<Type>Name`` is unique only inside another resource (a log group, a scalable target, a schedule
group), which a new resource usually is too."""


def _at(properties: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(properties, dict) or _is_intrinsic(properties) or part not in properties:
            return MISSING
        properties = properties[part]
    return properties


def unique_name(resource: dict[str, Any]) -> tuple[str, str] | None:
    """(name space, the name as JSON) of the name ``resource`` fixes, if it fixes one: from ``UNIQUE_NAMES``, else
    for an AWS type ``<Type>Name`` or ``Name``; a custom resource not in the table fixes none that is known."""
    kind = resource.get("Type", "")
    properties = resource.get("Properties") or {}
    entry = UNIQUE_NAMES.get(kind)
    if entry is None and is_capacity_plan(kind, ""):
        entry = UNIQUE_NAMES[PLAN_TYPE]
    if entry is not None:
        value = _at(properties, entry.path)
        return None if value is MISSING else (entry.kind, json.dumps(_mask(value), sort_keys=True))
    if kind in _NOT_PHYSICAL_NAMES or kind in _SCOPED_NAMES or is_custom(kind):
        return None
    for name in (kind.rpartition("::")[2] + "Name", "Name"):
        if name in properties:
            return kind, json.dumps(_mask(properties[name]), sort_keys=True)
    return None


def physical_name(resource: dict[str, Any]) -> str | None:
    """The resource's fixed name as JSON, if set: where ``UNIQUE_NAMES`` says it sits (``Budget.BudgetName`` for a
    budget, ``RouterName``, ``ParameterName``, ``PlanName``), else ``<Type>Name`` or ``Name``."""
    found = unique_name(resource)
    return found[1] if found else None


def name_entry(resource_type: str) -> UniqueName | None:
    return UNIQUE_NAMES.get(resource_type) or (UNIQUE_NAMES[PLAN_TYPE] if is_capacity_plan(resource_type, "") else None)


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
            path = path[len(self.stack.title) + 1 :]
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
    category: str  # redeploy | money | fails | runtime | headroom
    stack: str
    text: str
    resource_type: str = ""
    """For ``fails``: the type of the resource whose Create or Update fails."""
    reason: str = ""
    """For ``fails``: which way the deploy fails, in a few words (``FAILS_BY``)."""


@dataclass
class Report:
    base_label: str
    head_label: str
    stacks: list[StackTemplate]
    changes: list[ResourceChange]
    headlines: list[Headline]
    outputs: list[OutputChange] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    """What every resource undergoes (``classify``), changed or not."""
    cost: CostDelta | None = None
    """What the change does to the monthly floor and ceiling, and the plan fees it commits (``cost_delta``)."""

    def for_stack(self, stack: StackTemplate) -> list[ResourceChange]:
        return [c for c in self.changes if c.stack.key == stack.key]

    def outputs_for(self, stack: StackTemplate) -> list[OutputChange]:
        return [o for o in self.outputs if o.stack.key == stack.key]

    def outcome_of(self, change: ResourceChange) -> Outcome | None:
        return next(
            (o for o in self.outcomes if o.stack == change.stack.title and o.logical_id == change.logical_id), None
        )


def compare(
    base: dict[str, StackTemplate],
    head: dict[str, StackTemplate],
    *,
    base_label: str = "base",
    head_label: str = "head",
    base_values: dict[str, str] | None = None,
    head_values: dict[str, str] | None = None,
    base_cost: CostSide | None = None,
    head_cost: CostSide | None = None,
    prices: PriceBook | Mapping[str, Any] | Path | None = None,
) -> Report:
    """Compare two loaded assemblies (``load_assembly``), each as it deploys with its stack parameter values
    (``at_deploy``; none given: parameters stay references), and their cost models (``load_cost``; none: the cost
    is read from the templates, ``cost_delta``), priced by ``prices`` when given."""
    base, head = at_deploy(base, base_values), at_deploy(head, head_values)
    order = list(head) + [k for k in base if k not in head]
    stacks = [head.get(k) or base[k] for k in order]
    changes: list[ResourceChange] = []
    removed: list[ResourceChange] = []
    added: list[ResourceChange] = []
    for key in order:
        old = {
            k: v for k, v in (base[key].resources if key in base else {}).items() if v.get("Type") not in IGNORED_TYPES
        }
        new = {
            k: v for k, v in (head[key].resources if key in head else {}).items() if v.get("Type") not in IGNORED_TYPES
        }
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
    report.outcomes = _outcomes(base, head, report)
    report.headlines = _headlines(report, head) + name_clashes(base, head, report.changes)
    report.cost = cost_delta(base, head, base_cost, head_cost, prices)
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


FIXED_NAME_STEPS = (
    "Two steps: deploy once with the name changed (or pin another name), so CloudFormation creates the "
    "new one beside the old one and deletes the old one in cleanup; or deploy once without the "
    "resource, then with it."
)
"""What to do about a create-only change of a resource whose name is fixed."""
_RENAMED_IN_PLACE = {"AWS::SageMaker::InferenceComponent": "InferenceComponentName"}
"""Names the schema does not mark create-only although the service cannot rename the resource."""


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


# ----------------------------------------------------------------------------- names re-taken
RETAINED = frozenset({"Retain", "RetainExceptOnCreate"})
"""Deletion policies that leave the thing (and its name) in place when the resource leaves the stack."""


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


@dataclass
class Redeploy:
    """What deleting every stack of an assembly and deploying it again (a new stack id) does to each resource."""

    retained: dict[str, int]
    """Resource type -> how many stay after the delete (DeletionPolicy Retain): the redeploy creates new ones beside
    them (a generated name) and the old ones stay, orphaned, with what they hold."""
    values_kept: list[str]
    """Run-time parameters whose Removal is retain: the delete leaves them, the redeploy's Create finds them and keeps
    the value written at run time."""
    fresh: dict[str, int]
    """Resource type -> how many are deleted and come back new (run-time parameters with Removal destroy included:
    they start again at their initial value)."""
    blockers: list[str] = field(default_factory=list)
    """Retained resources with a fixed name: the redeploy's Create of that name fails while the old one stays."""


def _goes_with_its_container(stack: StackTemplate, resource: dict[str, Any]) -> bool:
    """A log stream retained in a log group the delete removes goes with the group."""
    if resource.get("Type") != "AWS::Logs::LogStream":
        return False
    groups = [ref for _, ref in references((resource.get("Properties") or {}).get("LogGroupName"))]
    return any((stack.resources.get(g) or {}).get("DeletionPolicy") not in RETAINED for g in groups)


def redeploy(assembly: dict[str, StackTemplate]) -> Redeploy:
    """Stack delete and deploy again, from the templates: what the DeletionPolicy (and a run-time parameter's
    Removal) keeps, what comes back fresh, and what keeps a name the redeploy needs."""
    retained: dict[str, int] = {}
    fresh: dict[str, int] = {}
    kept: list[str] = []
    blockers: list[str] = []
    for stack in assembly.values():
        for logical_id, resource in stack.resources.items():
            kind = resource.get("Type", "?")
            if kind in IGNORED_TYPES or kind == NESTED_STACK:
                continue
            properties = resource.get("Properties") or {}
            if kind == RUN_TIME_PARAMETER_TYPE and properties.get("Removal", "retain") == "retain":
                kept.append(str(properties.get("ParameterName", logical_id)))
                continue
            if resource.get("DeletionPolicy") not in RETAINED or _goes_with_its_container(stack, resource):
                fresh[kind] = fresh.get(kind, 0) + 1
                continue
            retained[kind] = retained.get(kind, 0) + 1
            entry, name = name_entry(kind), unique_name(resource)
            if name is not None and not (entry and entry.adopts):
                blockers.append(
                    f"{stack.title}: {_named(stack, logical_id, resource)} is retained with the fixed name "
                    f"{_short(json.loads(name[1]))}: the redeploy creates it again and fails while the "
                    "old one stays; delete it by hand first, or let it have a generated name"
                )
    return Redeploy(dict(sorted(retained.items())), sorted(kept), dict(sorted(fresh.items())), blockers)


# ----------------------------------------------------------------------------- headline
def _headlines(report: Report, head: dict[str, StackTemplate]) -> list[Headline]:
    lines: list[Headline] = []
    for change in report.changes:
        kind, title = change.resource_type, change.stack.title
        if kind == ENDPOINT_CONFIG and change.replacement:
            why = _why(change)
            endpoints = _endpoints_using(head.get(change.stack.key), change.logical_id)
            target = ", ".join(endpoints) if endpoints else "its endpoint"
            lines.append(
                Headline(
                    "redeploy",
                    title,
                    f"endpoint config {change.display} is replaced{why}: redeploys "
                    f"the endpoint {target}: new instances are provisioned",
                )
            )
            if any(
                p.path.startswith("ProductionVariants") and "CapacityReservationConfig" in p.path
                for p in change.properties
            ):
                lines.append(
                    Headline(
                        "money",
                        title,
                        f"endpoint config {change.display}: the capacity plan binding "
                        "(CapacityReservationConfig) changes",
                    )
                )
        elif kind == ENDPOINT and change.kind in ("added", "removed"):
            verb = (
                "created: instances are provisioned"
                if change.kind == "added"
                else "deleted: its instances are released"
            )
            lines.append(Headline("redeploy", title, f"endpoint {change.display} is {verb}"))
        elif kind == ENDPOINT and change.replacement:
            lines.append(
                Headline(
                    "redeploy",
                    title,
                    f"endpoint {change.display} is replaced{_why(change)}: a new "
                    "endpoint is created (new instances, new name) and the old one deleted",
                )
            )
        if is_capacity_plan(kind, change.logical_id):
            lines.append(Headline("money", title, _plan_headline(change)))
        for note in change.notes:
            if "fails" in note or "refuses" in note:
                reason = next((r for marker, r in _NOTE_REASONS if marker in note), "fails")
                lines.append(
                    Headline(
                        "fails", title, f"{change.resource_type} {change.display}: {note}", change.resource_type, reason
                    )
                )
    for outcome in report.outcomes:
        if outcome.resets or outcome.overwrites:
            lines += [
                Headline("runtime", outcome.stack, f"{outcome.resource_type} {outcome.display}: {line}")
                for line in outcome.lines
                if line.startswith(("resets ", "overwrites ", "a new parameter "))
            ]
        if outcome.headroom is not None:
            lines.append(
                Headline("headroom", outcome.stack, f"endpoint config {outcome.display} {outcome.headroom.text}")
            )
    return lines


_NOTE_REASONS = (
    ("custom-named resource must be replaced", "fixed-name replacement"),
    ("ServiceToken changes", "ServiceToken change"),
    ("there is no rename", "in-place rename"),
)
FAILS_BY = (
    "fixed-name replacement",
    "name re-taken before cleanup",
    "name re-taken across stacks",
    "name kept by a retained resource",
    "name held twice",
    "ServiceToken change",
    "in-place rename",
)
"""The ways a deploy fails that the report finds, as ``Headline.reason`` names them."""


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
            ref == config_id for _, ref in references((resource.get("Properties") or {}).get("EndpointConfigName"))
        ):
            path = (resource.get("Metadata") or {}).get("aws:cdk:path", "")
            shown = _strip_stack(path, stack.title)
            found.append(f"{shown} ({logical_id})" if shown else logical_id)
    return found


def _strip_stack(path: str, title: str) -> str:
    path = path[len(title) + 1 :] if path.startswith(title + "/") else path
    return path[: -len("/Resource")] if path.endswith("/Resource") else path


def _plan_headline(change: ResourceChange) -> str:
    props = ((change.head if change.kind != "removed" else change.base) or {}).get("Properties") or {}
    name = props.get("PlanName", change.logical_id)
    if change.kind == "added":
        return (
            f"capacity plan {name} is bought on deploy: {props.get('InstanceType', '?')} x "
            f"{props.get('InstanceCount', '?')} for {props.get('DurationDays', '?')} days, up to USD "
            f"{props.get('MaxUpfrontFeeUsd', '?')} upfront, never refunded"
        )
    if change.kind == "removed":
        return (
            f"capacity plan {name} leaves the template: the plan is retained and stays paid (nothing is "
            "refunded); its endpoint gets no reserved instances from it"
        )
    changed = [p for p in change.properties if not p.path.startswith("(")]
    described = (
        "; ".join(
            f"{p.path} {' -> '.join(_pair(p.old, p.new))}" if not p.via else f"{p.path} via {p.via}" for p in changed
        )
        or "resource attributes only"
    )
    if change.kind == "renamed":
        return (
            f"capacity plan {name} moves to logical id {change.logical_id} (was {change.old_logical_id}): the new "
            f"resource adopts the existing plan if its shape is unchanged; nothing is bought again ({described})"
        )
    identity = [p.path for p in changed if p.path in PLAN_IDENTITY]
    if identity:
        return (
            f"capacity plan {name} changes {', '.join(identity)}: the deployment fails, a bought plan cannot "
            f"change; declare a new plan instead ({described})"
        )
    return f"capacity plan {name} changes ({described}): no purchase"


# ----------------------------------------------------------------------------- values at deploy
SSM_PARAMETER = "AWS::SSM::Parameter"
SSM_VALUE_TYPE = "AWS::SSM::Parameter::Value<"
"""A stack parameter of this type is read from SSM by CloudFormation at every deploy."""
RUN_TIME_PARAMETER_TYPE = "Custom::SageMakerLlmRunTimeParameter"
"""``sagemaker_llm_cdk.core.run_time_state.RESOURCE_TYPE``: an SSM parameter a function writes at run time, created
once and never overwritten by a deploy (properties ``ParameterName``, ``InitialValue``, ``Removal``, optionally
``PlanName``)."""
_NO_VALUE: Any = object()


def at_deploy(assembly: dict[str, StackTemplate], values: dict[str, str] | None) -> dict[str, StackTemplate]:
    """``assembly`` as CloudFormation deploys it with these stack parameter values: ``values`` maps a parameter's
    logical name, or for an ``AWS::SSM::Parameter::Value<...>`` parameter the SSM name it defaults to (a glob
    pattern such as ``*/capacity-plans/*chat/status`` may stand for it), to its value.

    A ``Ref`` to a given parameter becomes the value, conditions that depend only on given values are decided,
    ``Fn::If`` on them picks its branch, ``AWS::NoValue`` leaves its place, and resources (and outputs) whose
    condition is false leave the template. What depends on a parameter without a value stays as written, so a
    change that only flips an SSM value at deploy (a plan's status, a promoted EAGLE head) can be compared."""
    if not values:
        return assembly
    resolved: dict[str, StackTemplate] = {}
    for key, stack in assembly.items():
        known = {}
        for name, parameter in stack.parameters.items():
            default = parameter.get("Default")
            if name in values:
                known[name] = values[name]
            elif str(parameter.get("Type", "")).startswith(SSM_VALUE_TYPE) and isinstance(default, str):
                given = [v for k, v in values.items() if fnmatch.fnmatchcase(default, k)]
                if given:
                    known[name] = given[0]
        if not known:
            resolved[key] = stack
            continue
        decided = _decide_conditions(stack.conditions, known)

        def kept(items: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
            return {
                k: _substitute(v, known, decided)
                for k, v in items.items()
                if decided.get(str(v.get("Condition"))) is not False
            }

        resolved[key] = StackTemplate(
            stack.key,
            stack.title,
            kept(stack.resources),
            stack.parent,
            stack.parent_logical_id,
            kept(stack.outputs),
            stack.parameters,
            stack.conditions,
            stack.environment,
            stack.dependencies,
        )
    return resolved


def _decide_conditions(conditions: dict[str, Any], known: dict[str, str]) -> dict[str, bool]:
    decided: dict[str, bool] = {}
    progress = True
    while progress:
        progress = False
        for name, expression in conditions.items():
            if name not in decided:
                value = _condition(expression, known, decided)
                if value is not None:
                    decided[name] = value
                    progress = True
    return decided


def _condition(expression: Any, known: dict[str, str], decided: dict[str, bool]) -> bool | None:
    """True or False when ``expression`` (a condition function) depends only on known values, else None."""
    if not isinstance(expression, dict) or len(expression) != 1:
        return None
    ((kind, arg),) = expression.items()
    if kind == "Condition":
        return decided.get(str(arg))
    if kind == "Fn::Equals" and isinstance(arg, list) and len(arg) == 2:
        a, b = (_substitute(v, known, decided) for v in arg)
        return None if isinstance(a, (dict, list)) or isinstance(b, (dict, list)) else str(a) == str(b)
    parts = [_condition(v, known, decided) for v in (arg if isinstance(arg, list) else [arg])]
    if kind == "Fn::Not" and len(parts) == 1:
        return None if parts[0] is None else not parts[0]
    if kind == "Fn::And":
        return False if False in parts else (None if None in parts else True)
    if kind == "Fn::Or":
        return True if True in parts else (None if None in parts else False)
    return None


def _substitute(value: Any, known: dict[str, str], decided: dict[str, bool]) -> Any:
    if isinstance(value, list):
        items = [_substitute(v, known, decided) for v in value]
        return [v for v in items if v is not _NO_VALUE]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((kind, arg),) = value.items()
        if kind == "Ref" and arg in known:
            return known[arg]
        if kind == "Ref" and arg == "AWS::NoValue":
            return _NO_VALUE
        if kind == "Fn::If" and isinstance(arg, list) and len(arg) == 3 and str(arg[0]) in decided:
            return _substitute(arg[1] if decided[str(arg[0])] else arg[2], known, decided)
    substituted = {k: _substitute(v, known, decided) for k, v in value.items()}
    return {k: v for k, v in substituted.items() if v is not _NO_VALUE}


# ----------------------------------------------------------------------------- run-time values
@dataclass
class RunTimeValue:
    """An SSM parameter whose value a function (or state machine) writes at run time.

    Found from the template, not from names: an ``AWS::SSM::Parameter`` is one when a function's or state
    machine's role in the assembly is allowed ``ssm:PutParameter`` on its ARN (by a reference to it or by a
    literal ARN naming it). A ``Custom::SageMakerLlmRunTimeParameter`` is one by its purpose, and keeps the
    value on update."""

    stack: str
    logical_id: str
    resource_type: str
    name: str | None
    """The parameter's name when the template fixes it (None: CloudFormation generates it)."""
    writers: list[str] = field(default_factory=list)
    """The functions and state machines allowed to write it."""
    readers: list[str] = field(default_factory=list)
    """``Stack.Parameter`` of every ``AWS::SSM::Parameter::Value<...>`` stack parameter that reads it at deploy."""

    @property
    def keeps_on_update(self) -> bool:
        return self.resource_type == RUN_TIME_PARAMETER_TYPE

    @property
    def shown(self) -> str:
        return self.name or f"the parameter of {self.logical_id} (a generated name)"


def _literal(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _parameter_resources(assembly: dict[str, StackTemplate]) -> dict[tuple[str, str], RunTimeValue]:
    found = {}
    for key, stack in assembly.items():
        for logical_id, resource in stack.resources.items():
            kind = resource.get("Type", "")
            properties = resource.get("Properties") or {}
            if kind == SSM_PARAMETER:
                name = _literal(properties.get("Name"))
            elif kind == RUN_TIME_PARAMETER_TYPE:
                name = _literal(properties.get("ParameterName"))
            else:
                continue
            found[(key, logical_id)] = RunTimeValue(stack.title, logical_id, kind, name)
    return found


def _statements(document: Any) -> list[dict[str, Any]]:
    statements = (document or {}).get("Statement", []) if isinstance(document, dict) else []
    return [s for s in _as_list(statements) if isinstance(s, dict)]


def _grants(stack: StackTemplate) -> Iterator[tuple[dict[str, Any], list[str]]]:
    """(statement, role logical ids) of every IAM policy statement attached to a role of ``stack``."""
    managed_users: dict[str, list[str]] = {}
    for logical_id, resource in stack.resources.items():
        if resource.get("Type") == "AWS::IAM::Role":
            for _, ref in references((resource.get("Properties") or {}).get("ManagedPolicyArns")):
                managed_users.setdefault(ref, []).append(logical_id)
    for logical_id, resource in stack.resources.items():
        kind, properties = resource.get("Type"), resource.get("Properties") or {}
        if kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            roles = [ref for _, ref in references(properties.get("Roles"))] + managed_users.get(logical_id, [])
            for statement in _statements(properties.get("PolicyDocument")):
                yield statement, roles
        elif kind == "AWS::IAM::Role":
            for policy in _as_list(properties.get("Policies") or []):
                for statement in _statements((policy or {}).get("PolicyDocument")):
                    yield statement, [logical_id]


_FRAMEWORK_HANDLERS = ("USER_ON_EVENT_FUNCTION_ARN", "USER_IS_COMPLETE_FUNCTION_ARN")
"""Environment variables through which CDK's custom resource framework names the handlers it calls."""


def _deploy_time_functions(stack: StackTemplate) -> set[str]:
    """Functions that run only while CloudFormation deploys: custom resource handlers (by ServiceToken, or called
    by CDK's provider framework)."""
    found = set()
    for resource in stack.resources.values():
        properties = resource.get("Properties") or {}
        if is_custom(resource.get("Type", "")):
            found |= {ref for _, ref in references(properties.get("ServiceToken"))}
        variables = (
            ((properties.get("Environment") or {}).get("Variables") or {})
            if isinstance(properties.get("Environment"), dict)
            else {}
        )
        for name in _FRAMEWORK_HANDLERS:
            found |= {ref for _, ref in references(variables.get(name))}
    return found


def _role_users(stack: StackTemplate) -> dict[str, list[str]]:
    """Role logical id -> the functions and state machines of ``stack`` that run with it at run time."""
    users: dict[str, list[str]] = {}
    deploy_time = _deploy_time_functions(stack)
    for logical_id, resource in stack.resources.items():
        kind, properties = resource.get("Type"), resource.get("Properties") or {}
        role = {"AWS::Lambda::Function": "Role", "AWS::StepFunctions::StateMachine": "RoleArn"}.get(str(kind))
        if role is None or logical_id in deploy_time:
            continue
        shown = _strip_stack((resource.get("Metadata") or {}).get("aws:cdk:path", ""), stack.title) or logical_id
        for _, ref in references(properties.get(role)):
            users.setdefault(ref, []).append(shown)
    return users


def _allows(statement: dict[str, Any], action: str) -> bool:
    actions = [str(a).lower() for a in _as_list(statement.get("Action") or [])]
    return statement.get("Effect") == "Allow" and any(fnmatch.fnmatchcase(action.lower(), a) for a in actions)


def _granted_parameters(
    resource: Any, key: str, parameters: dict[tuple[str, str], RunTimeValue]
) -> set[tuple[str, str]]:
    """The parameters an IAM ``Resource`` entry covers: one it references, or those a literal ARN pattern names."""
    hits = {(key, ref) for _, ref in references(resource) if (key, ref) in parameters}
    text = _as_text(resource)
    if text == "*":
        return set(parameters)
    if text is None or ":parameter" not in text:
        return hits
    pattern = re.sub(r"\$\{[^}]*\}", "*", text.split(":parameter", 1)[1]).lstrip("/")
    if hits and not pattern.strip("*/"):
        return hits  # "parameter/${Ref}": the reference says which
    return hits | {k for k, p in parameters.items() if p.name and fnmatch.fnmatchcase(p.name.lstrip("/"), pattern)}


def run_time_values(assembly: dict[str, StackTemplate]) -> dict[tuple[str, str], RunTimeValue]:
    """(stack key, logical id) -> the run-time value the resource holds, for every such parameter in ``assembly``."""
    parameters = _parameter_resources(assembly)
    for key, stack in assembly.items():
        users = _role_users(stack)
        for statement, roles in _grants(stack):
            writers = [u for role in roles for u in users.get(role, [])]
            if not writers or not _allows(statement, "ssm:PutParameter"):
                continue
            for resource in _as_list(statement.get("Resource") or []):
                for hit in _granted_parameters(resource, key, parameters):
                    parameters[hit].writers += [w for w in writers if w not in parameters[hit].writers]
        for name, parameter in stack.parameters.items():
            if str(parameter.get("Type", "")).startswith(SSM_VALUE_TYPE):
                for value in parameters.values():
                    if value.name and value.name == parameter.get("Default"):
                        value.readers.append(f"{stack.title}.{name}")
    return {k: v for k, v in parameters.items() if v.writers or v.keeps_on_update}


# ----------------------------------------------------------------------------- outcomes
COPY_COUNT_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"
RUN_TIME_WRITTEN = {("AWS::SageMaker::InferenceComponent", "RuntimeConfig.CopyCount"): COPY_COUNT_DIMENSION}
"""Write-only properties that a service changes at run time when a scalable target of this dimension names the
resource: re-sending the template's value overwrites what autoscaling set."""
_WRITE_ONLY: dict[str, list[tuple[str, ...]]] = {}


def write_only_properties(resource_type: str) -> list[tuple[str, ...]]:
    """Write-only property paths of ``resource_type`` from cfn-lint's schemas (``*`` for every list item)."""
    if resource_type not in _WRITE_ONLY:
        from cfnlint.schema import PROVIDER_SCHEMA_MANAGER, ResourceNotFoundError

        try:
            schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(SCHEMA_REGION, resource_type).schema
        except ResourceNotFoundError:
            _WRITE_ONLY[resource_type] = []
        else:
            _WRITE_ONLY[resource_type] = [
                tuple(p.split("/")[2:]) for p in schema.get("writeOnlyProperties", []) if p.startswith("/properties/")
            ]
    return _WRITE_ONLY[resource_type]


def _present(value: Any, pointer: tuple[str, ...]) -> bool:
    if not pointer:
        return value is not MISSING
    head, rest = pointer[0], pointer[1:]
    if head == "*":
        return isinstance(value, list) and any(_present(v, rest) for v in value)
    return isinstance(value, dict) and not _is_intrinsic(value) and head in value and _present(value[head], rest)


def write_only_in_template(resource: dict[str, Any]) -> list[str]:
    """The write-only properties ``resource`` sets: an update sends each again with the template's value."""
    kind, properties = resource.get("Type", ""), resource.get("Properties") or {}
    found: list[str] = []
    for pointer in write_only_properties(kind):
        shown = ".".join(pointer).replace(".*", "[*]")
        if _present(properties, pointer) and shown not in found and not any(shown.startswith(f + ".") for f in found):
            found.append(shown)
    return found


@dataclass
class Headroom:
    """What moving an endpoint to a replaced endpoint config bound to a capacity plan needs from the plan."""

    plan: str
    needed: int
    """Free plan instances the update needs: the fleet in use (blue/green) or one batch (rolling)."""
    policy: str
    """``blue/green`` or ``rolling (batches of N)``."""
    plan_instances: int | None
    """The plan's size when the assembly declares it."""
    in_use: int
    """Plan instances the current fleet may hold (its maximum), 0 when it runs on on-demand capacity."""

    @property
    def free(self) -> int | None:
        return None if self.plan_instances is None else self.plan_instances - self.in_use

    @property
    def respected(self) -> bool | None:
        return None if self.free is None else self.needed <= self.free

    @property
    def text(self) -> str:
        head = f"replaces the endpoint config: needs {self.needed} free plan instances ({self.policy}, plan {self.plan}"
        if self.plan_instances is None:
            return head + ": its size is not in the template; check it has them free)"
        verdict = "enough" if self.respected else "NOT enough: the new instances wait for capacity and the update fails"
        return (
            head + f" of {self.plan_instances}, {self.in_use} held by the current fleet: {self.free} free, {verdict})"
        )


@dataclass
class Outcome:
    """What one resource of a before/after pair of assemblies undergoes on deploy (``classify``)."""

    stack: str
    logical_id: str
    resource_type: str
    display: str
    action: str
    """``unchanged`` | ``no update`` (attributes only) | ``update`` | ``replace`` | ``add`` | ``remove``."""
    resends: list[str] = field(default_factory=list)
    """Write-only properties an in-place update sends again with the template's value."""
    overwrites: list[str] = field(default_factory=list)
    """Of ``resends``, those a service changes at run time (autoscaling's copy count): the update overwrites them."""
    run_time: RunTimeValue | None = None
    resets: bool = False
    """The deploy puts the template's value over the value written at run time (or starts a new parameter)."""
    keeps: bool = False
    """A run-time value the update leaves as it is."""
    headroom: Headroom | None = None
    binding_changes: bool = False
    """An endpoint config's CapacityReservationConfig differs."""
    lines: list[str] = field(default_factory=list)
    step: str = "no change"
    """What CloudFormation does with it, in its order: created first, updated, replaced (the new one first, the old
    one deleted in cleanup), deleted in cleanup, or left in place (a retain policy); a custom resource's handler."""

    @property
    def changed(self) -> bool:
        return self.action not in ("unchanged", "no update")


def classify(
    base: dict[str, StackTemplate],
    head: dict[str, StackTemplate],
    *,
    base_values: dict[str, str] | None = None,
    head_values: dict[str, str] | None = None,
) -> list[Outcome]:
    """What every resource of ``base`` and ``head`` (``load_assembly``) undergoes when ``head`` deploys over
    ``base``: unchanged, updated in place, replaced, added or removed, with the write-only properties an update
    re-sends, the run-time values it resets or keeps, and the capacity a replaced plan-bound endpoint config needs.

    ``base_values`` / ``head_values``: stack parameter values at each deploy (``at_deploy``), e.g.
    ``{"/sagemaker-llm/capacity-plans/<plan>/status": "Active"}``. The report prints the same outcomes."""
    return compare(base, head, base_values=base_values, head_values=head_values).outcomes


def _outcomes(base: dict[str, StackTemplate], head: dict[str, StackTemplate], report: Report) -> list[Outcome]:
    by_new = {(c.stack.key, c.logical_id): c for c in report.changes if c.kind != "removed"}
    by_old = {
        (c.old_stack.key if c.old_stack else c.stack.key, c.old_logical_id or c.logical_id): c
        for c in report.changes
        if c.kind in ("removed", "renamed")
    }
    old_values, new_values = run_time_values(base), run_time_values(head)
    found: list[Outcome] = []
    for key, stack in head.items():
        for logical_id, resource in stack.resources.items():
            if resource.get("Type") in IGNORED_TYPES:
                continue
            change = by_new.get((key, logical_id))
            kind = resource.get("Type", "?")
            outcome = Outcome(
                stack.title,
                logical_id,
                kind,
                change.display if change else logical_id,
                _action(change),
                run_time=new_values.get((key, logical_id)),
            )
            if change is not None:
                _explain(outcome, change, base, head, old_values)
                outcome.step = deploy_step(outcome.action, change)
            found.append(outcome)
    for (key, logical_id), change in by_old.items():
        if change.kind != "removed":
            continue
        outcome = Outcome(
            change.stack.title,
            logical_id,
            change.resource_type,
            change.display,
            "remove",
            run_time=old_values.get((key, logical_id)),
        )
        _explain(outcome, change, base, head, old_values)
        outcome.step = deploy_step("remove", change)
        found.append(outcome)
    return found


HANDLER_UPDATES = {
    RUN_TIME_PARAMETER_TYPE: "the handler keeps the value; a new ParameterName is a new parameter (a new physical id: "
    "CloudFormation deletes the old one in cleanup, which keeps or deletes it as its Removal "
    "says)",
    ROUTER_TYPE: "a new RouterName: the handler creates a new router (a new physical id) and CloudFormation deletes "
    "the old one in cleanup; the same name: UpdateInferenceRouter in place",
    PLAN_TYPE: "the handler refuses a change of a bought plan's shape (PlanName, instances, duration, window); other "
    "changes update in place",
}
"""What the library's custom resource handlers do on Update: CloudFormation cannot see a physical id change in the
template, the handler decides it."""


def deploy_step(action: str, change: ResourceChange) -> str:
    """What CloudFormation does with a changed resource, in its order (creates, then updates, then the cleanup)."""
    old, new = change.base or {}, change.head or {}
    if action == "add":
        return "created first (every Create runs before any Update)"
    if action == "remove":
        policy = old.get("DeletionPolicy")
        return (
            f"leaves the stack in cleanup and stays (DeletionPolicy {policy})"
            if policy in RETAINED
            else "deleted in cleanup (after every create and update succeeded)"
        )
    if action == "no update":
        return "no update (attributes or metadata only)"
    if is_custom(change.resource_type) and action in ("update", "replace"):
        known = HANDLER_UPDATES.get(change.resource_type)
        return f"Update sent to the handler: {known}" if known else "Update sent to the handler, which decides"
    if action == "replace":
        kept = " (the old one stays: UpdateReplacePolicy Retain)" if new.get("UpdateReplacePolicy") in RETAINED else ""
        first = "created under the new logical id first" if change.kind == "renamed" else "created anew first"
        return f"replaced: {first}, the old one deleted in cleanup{kept}"
    return "updated in place"


def _action(change: ResourceChange | None) -> str:
    if change is None:
        return "unchanged"
    if change.kind == "added":
        return "add"
    if change.kind == "removed":
        return "remove"
    if change.replacement or _run_time_renamed(change):
        return "replace"
    if all(p.path.startswith("(") for p in change.properties):
        return "no update"
    return "update"


def _run_time_renamed(change: ResourceChange) -> bool:
    """A run-time parameter custom resource whose ParameterName changes: the handler makes a new parameter."""
    return change.resource_type == RUN_TIME_PARAMETER_TYPE and any(p.path == "ParameterName" for p in change.properties)


def _explain(
    outcome: Outcome,
    change: ResourceChange,
    base: dict[str, StackTemplate],
    head: dict[str, StackTemplate],
    old_values: dict[tuple[str, str], RunTimeValue],
) -> None:
    resource = change.head or {}
    if outcome.action == "update" and not is_custom(outcome.resource_type):
        outcome.resends = write_only_in_template(resource)
        outcome.overwrites = [
            p
            for p in outcome.resends
            if (outcome.resource_type, p) in RUN_TIME_WRITTEN
            and _scaled(
                head.get(change.stack.key), change.logical_id, resource, RUN_TIME_WRITTEN[(outcome.resource_type, p)]
            )
        ]
        if outcome.resends:
            outcome.lines.append("re-sends write-only " + ", ".join(outcome.resends) + " with the template's value")
        for path in outcome.overwrites:
            outcome.lines.append(
                f"overwrites {path}: autoscaling ({RUN_TIME_WRITTEN[(outcome.resource_type, path)]}) "
                "sets it at run time and the update puts the template's value back"
            )
    old_key = (
        change.old_stack.key if change.old_stack else change.stack.key,
        change.old_logical_id or change.logical_id,
    )
    value = outcome.run_time or old_values.get(old_key)
    outcome.run_time = value
    if value is not None:
        _run_time_lines(outcome, change, value)
    if outcome.resource_type == ENDPOINT_CONFIG and change.kind in ("modified", "renamed"):
        before, after = _bindings(change.base or {}), _bindings(resource)
        outcome.binding_changes = _mask(before) != _mask(after)
        if outcome.action == "replace":
            outcome.headroom = _headroom(change, base, head)
            if outcome.headroom is not None:
                outcome.lines.append(outcome.headroom.text)
            elif outcome.binding_changes:
                outcome.lines.append(
                    "replaces the endpoint config: the new fleet runs on on-demand capacity and the "
                    "plan's instances are released when the old one goes"
                )


def _run_time_lines(outcome: Outcome, change: ResourceChange, value: RunTimeValue) -> None:
    writers = ", ".join(value.writers) or "a function"
    read = f"; read at deploy by {', '.join(value.readers)}" if value.readers else ""
    properties = (change.head or change.base or {}).get("Properties") or {}
    if outcome.action == "add":
        start = properties.get("InitialValue", properties.get("Value"))
        outcome.lines.append(f"creates {value.shown} with {_short(start)} (written at run time by {writers}{read})")
    elif outcome.action == "remove":
        kept = (change.base or {}).get("DeletionPolicy") == "Retain" or properties.get("Removal") == "retain"
        outcome.lines.append(f"{'leaves' if kept else 'deletes'} {value.shown} and the value {writers} wrote{read}")
    elif (
        value.keeps_on_update
        and outcome.action == "replace"
        and change.kind == "renamed"
        and ((change.base or {}).get("Properties") or {}).get("ParameterName") == properties.get("ParameterName")
    ):
        outcome.keeps = True
        outcome.lines.append(
            f"keeps {value.shown}: under its new logical id the resource's Create finds the parameter, "
            "keeps the value and takes it over (owner tag), so the old resource's Delete leaves it"
        )
    elif value.keeps_on_update and outcome.action == "replace":
        old = ((change.base or {}).get("Properties") or {}).get("ParameterName")
        removal = ((change.base or {}).get("Properties") or {}).get("Removal", "retain")
        outcome.resets = True
        outcome.lines.append(
            f"a new parameter {value.shown} (starts at {_short(properties.get('InitialValue'))}, or its "
            f"SeedFrom); {old} is {'kept' if removal == 'retain' else 'deleted'} (Removal: {removal})"
        )
    elif value.keeps_on_update and outcome.changed:
        outcome.keeps = True
        plan = f"; describes plan {properties['PlanName']} at deploy" if "PlanName" in properties else ""
        outcome.lines.append(
            f"keeps {value.shown}: {RUN_TIME_PARAMETER_TYPE}'s update never overwrites the value {writers} wrote{plan}"
        )
    elif outcome.action in ("update", "replace"):
        outcome.resets = True
        how = (
            "replaced: the new parameter starts at the template's Value"
            if outcome.action == "replace"
            else "the AWS::SSM::Parameter update calls PutParameter with Overwrite and the template's Value"
        )
        outcome.lines.append(
            f"resets {value.shown} to {_short(properties.get('Value'))}: {how}, over what {writers} "
            f"wrote at run time{read}"
        )


def _bindings(resource: dict[str, Any]) -> list[Any]:
    variants = ((resource.get("Properties") or {}).get("ProductionVariants")) or []
    return [v.get("CapacityReservationConfig") if isinstance(v, dict) else None for v in _as_list(variants)]


def _scaled(stack: StackTemplate | None, logical_id: str, resource: dict[str, Any], dimension: str) -> bool:
    """True when a scalable target of ``dimension`` in ``stack`` names the resource (by reference or by name)."""
    if stack is None:
        return False
    kind = resource.get("Type", "")
    name = _literal((resource.get("Properties") or {}).get(kind.rpartition("::")[2] + "Name"))
    for target in stack.resources.values():
        props = target.get("Properties") or {}
        if (
            target.get("Type") != "AWS::ApplicationAutoScaling::ScalableTarget"
            or props.get("ScalableDimension") != dimension
        ):
            continue
        ids = props.get("ResourceId")
        if any(ref == logical_id for _, ref in references(ids)) or (
            name and str(_as_text(ids) or "").endswith("/" + name)
        ):
            return True
    return False


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _fleet(variant: dict[str, Any]) -> int:
    """The most instances a variant runs: its managed scaling maximum, else its initial count."""
    scaling = variant.get("ManagedInstanceScaling") or {}
    if isinstance(scaling, dict) and scaling.get("Status") == "ENABLED" and "MaxInstanceCount" in scaling:
        return _int(scaling["MaxInstanceCount"], 1)
    return _int(variant.get("InitialInstanceCount"), 1)


def _bound_plans(resource: dict[str, Any], stacks: dict[str, StackTemplate], key: str) -> dict[str, int]:
    """Plan name -> instances the endpoint config's variants may hold on it (an unresolved Fn::If binds)."""
    stack = stacks.get(key)
    found: dict[str, int] = {}
    for variant in _as_list(((resource.get("Properties") or {}).get("ProductionVariants")) or []):
        if not isinstance(variant, dict):
            continue
        binding = variant.get("CapacityReservationConfig")
        if isinstance(binding, dict) and list(binding) == ["Fn::If"]:
            branches = [b for b in binding["Fn::If"][1:] if isinstance(b, dict) and "MlReservationArn" in b]
            binding = branches[0] if branches else None
        if not isinstance(binding, dict) or "MlReservationArn" not in binding:
            continue
        plan = _plan_name(binding["MlReservationArn"], stack)
        found[plan] = found.get(plan, 0) + _fleet(variant)
    return found


def _plan_name(arn: Any, stack: StackTemplate | None) -> str:
    for _, ref in references(arn):
        guard = (stack.resources.get(ref) if stack else None) or {}
        name = _literal((guard.get("Properties") or {}).get("PlanName"))
        if name:
            return name
    text = _as_text(arn) or ""
    return text.rsplit("training-plan/", 1)[1] if "training-plan/" in text else text or "?"


def _plan_instances(plan: str, stacks: dict[str, StackTemplate]) -> int | None:
    for stack in stacks.values():
        for logical_id, resource in stack.resources.items():
            props = resource.get("Properties") or {}
            if is_capacity_plan(resource.get("Type", ""), logical_id) and props.get("PlanName") == plan:
                return _int(props.get("InstanceCount"), 0) or None
    return None


def _headroom(
    change: ResourceChange, base: dict[str, StackTemplate], head: dict[str, StackTemplate]
) -> Headroom | None:
    after = _bound_plans(change.head or {}, head, change.stack.key)
    if not after:
        return None
    before = _bound_plans(change.base or {}, base, (change.old_stack or change.stack).key)
    old_fleet = sum(
        _fleet(v)
        for v in _as_list(((change.base or {}).get("Properties") or {}).get("ProductionVariants") or [])
        if isinstance(v, dict)
    )
    plan, new_fleet = next(iter(after.items()))
    in_use = before.get(plan, 0)
    fleet = old_fleet or new_fleet
    policy, needed = "blue/green: a second fleet as large as the one in use", fleet
    endpoint = _endpoint_of(head.get(change.stack.key), change.logical_id)
    rolling = ((endpoint or {}).get("DeploymentConfig") or {}).get("RollingUpdatePolicy") if endpoint else None
    if isinstance(rolling, dict):
        batch = rolling.get("MaximumBatchSize") or {}
        size = _int(batch.get("Value"), 1)
        needed = size if batch.get("Type") == "INSTANCE_COUNT" else max(1, -(-fleet * size // 100))
        policy = f"rolling: one batch of {needed}"
    return Headroom(plan, needed, policy, _plan_instances(plan, head) or _plan_instances(plan, base), in_use)


def _endpoint_of(stack: StackTemplate | None, config_id: str) -> dict[str, Any] | None:
    for resource in stack.resources.values() if stack else []:
        if resource.get("Type") == ENDPOINT and any(
            ref == config_id for _, ref in references((resource.get("Properties") or {}).get("EndpointConfigName"))
        ):
            return resource.get("Properties") or {}
    return None


# ----------------------------------------------------------------------------- cost
COST_FILE = "cost-model.json"
"""What the synth writes into the cloud assembly beside ``synth-summary.md`` (``stacks.checks.write_cost_model``):
``cost.cost_model(app)`` as JSON, one ``CostLine.as_dict()`` per endpoint, EAGLE loop, benchmark and plan."""
PRICE_TABLE = REPO / "constructs" / "sagemaker_llm_cdk" / "operations" / "prices.json"
"""The shipped price table, read as JSON (``operations.pricing.PriceTable`` would start jsii for nothing)."""
HOURS_PER_30_DAYS = Decimal(24 * 30)
HOSTING = "Hosting"
_CENT = Decimal("0.01")
_KIND_WORDS = {
    "endpoint": "endpoint",
    "eagle": "EAGLE loop",
    "benchmark": "benchmark schedule",
    "plan": "capacity plan",
}


@dataclass(frozen=True)
class CostItem:
    """One priced thing of one side, per 30 days: on-demand hours at the floor and the ceiling, plan-covered hours,
    the price of one hour (None: unknown) and a capacity plan's prepaid fee (one-off)."""

    kind: str
    subject: str
    what: str
    instance_type: str | None
    region: str | None
    usage: str
    usd_per_hour: Decimal | None
    floor_hours: Decimal
    ceiling_hours: Decimal
    plan_hours: Decimal = Decimal(0)
    prepaid_usd: Decimal | None = None
    prepaid_note: str = ""

    @property
    def unit(self) -> str:
        """What an hour is of: ``ml.p5e.48xlarge`` instance-hours, or the usage (``AI benchmark job``) hours."""
        return self.instance_type or self.usage

    def usd(self, hours: Decimal) -> Decimal | None:
        """USD for ``hours`` of this item: 0 for no hours whatever the price, None when the price is unknown."""
        if hours == 0:
            return Decimal(0)
        return None if self.usd_per_hour is None else (self.usd_per_hour * hours).quantize(_CENT)


@dataclass
class CostSide:
    """The cost items of one assembly and where they come from (``cost file`` or ``templates``)."""

    items: list[CostItem]
    source: str


def _decimal(value: Any) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        return Decimal(str(value))
    except ArithmeticError:
        return None


def load_cost(folder: Path) -> CostSide | None:
    """The cost model the synth wrote into the assembly in ``folder`` (``COST_FILE``); None when it wrote none (a base
    synthesized before the file existed)."""
    path = folder / COST_FILE
    if not path.is_file():
        return None
    lines = _read_json(path).get("lines", [])
    return CostSide(
        [
            CostItem(
                str(line.get("kind", "?")),
                str(line.get("subject", "?")),
                str(line.get("what", "")),
                line.get("instance_type"),
                line.get("region"),
                str(line.get("usage", HOSTING)),
                _decimal(line.get("usd_per_hour")),
                _decimal(line.get("floor_hours")) or Decimal(0),
                _decimal(line.get("ceiling_hours")) or Decimal(0),
                _decimal(line.get("plan_hours")) or Decimal(0),
                _decimal(line.get("prepaid_usd")),
                str(line.get("prepaid_note", "")),
            )
            for line in lines
            if isinstance(line, dict)
        ],
        "cost file",
    )


class PriceBook:
    """USD per hour by usage, instance type and region: a table in ``prices.json``'s shape, or ``{instance type: USD}``
    for every usage and region. A region of None is priced at the table's highest (as the cost model does)."""

    def __init__(
        self,
        cells: dict[tuple[str, str, str], Decimal | None] | None = None,
        flat: Mapping[str, Decimal] | None = None,
        label: str = "",
    ) -> None:
        self.cells = cells or {}
        self.flat = dict(flat or {})
        self.label = label

    @classmethod
    def of(cls, prices: PriceBook | Mapping[str, Any] | Path | None) -> PriceBook:
        """``prices`` as a book: a mapping of instance type to USD, a ``prices.json``-shaped file, or (None) the
        shipped table."""
        if isinstance(prices, PriceBook):
            return prices
        if isinstance(prices, Mapping):
            return cls(flat={k: Decimal(str(v)) for k, v in prices.items()}, label="the prices given")
        path = prices or PRICE_TABLE
        if path in _BOOKS:
            return _BOOKS[path]
        data = _read_json(path) if path.is_file() else {}
        cells: dict[tuple[str, str, str], Decimal | None] = {}
        for usage, entry in (data.get("usages") or {}).items():
            for instance_type, by_region in (entry.get("prices") or {}).items():
                for region, cell in by_region.items():
                    cells[(usage, instance_type, region)] = _decimal((cell or {}).get("usd_per_hour"))
        _BOOKS[path] = cls(cells, label=f"the price table of {data.get('read', '?')}" if data else "no price table")
        return _BOOKS[path]

    def hourly(self, instance_type: str | None, usage: str, region: str | None) -> Decimal | None:
        if instance_type is None:
            return None
        if self.flat or not self.cells:
            return self.flat.get(instance_type)
        if region is not None:
            return self.cells.get((usage, instance_type, region))
        known = [a for (u, t, _r), a in self.cells.items() if u == usage and t == instance_type and a is not None]
        return max(known) if known else None


_BOOKS: dict[Path, PriceBook] = {}
"""Price tables read from files, once per process."""


def template_cost(assembly: dict[str, StackTemplate], prices: PriceBook) -> CostSide:
    """What the templates say an assembly runs: per endpoint config (named by its endpoint's construct path) its
    variants' instance type and ``ManagedInstanceScaling`` Min/MaxInstanceCount (else ``InitialInstanceCount``) around
    the clock, as ``cost_model.endpoint_line`` counts them (bound to a plan: plan-covered; bound only while the plan is
    Active, ``Fn::If``: floor 0 and the ceiling on demand); per capacity plan its ``MaxUpfrontFeeUsd``. EAGLE loops and
    benchmarks are not read from templates (their schedules and run limits are spread over state machines)."""
    items: list[CostItem] = []
    for stack in assembly.values():
        for logical_id, resource in stack.resources.items():
            kind, props = resource.get("Type", ""), resource.get("Properties") or {}
            if kind == ENDPOINT_CONFIG:
                item = _config_cost(stack, logical_id, props, prices)
                if item is not None:
                    items.append(item)
            elif kind == PLAN_TYPE:
                path = str((resource.get("Metadata") or {}).get("aws:cdk:path", ""))
                subject = path.removesuffix("/Default").removesuffix("/Resource") or f"{stack.title}/{logical_id}"
                approved = props.get("Purchase") == "approved"
                note = (
                    "this deploy may buy it"
                    if approved
                    else f"bought only by a deploy with -c purchase={props.get('ConsentName', props.get('PlanName', '?'))}"
                )
                items.append(
                    CostItem(
                        "plan",
                        subject,
                        f"capacity plan {props.get('PlanName', logical_id)} "
                        f"({props.get('InstanceType', '?')} x {props.get('InstanceCount', '?')})",
                        _literal(props.get("InstanceType")),
                        None,
                        HOSTING,
                        None,
                        Decimal(0),
                        Decimal(0),
                        prepaid_usd=_decimal(props.get("MaxUpfrontFeeUsd")),
                        prepaid_note=f"prepaid up to {_usd(_decimal(props.get('MaxUpfrontFeeUsd')))}, "
                        f"never refunded ({note})",
                    )
                )
    return CostSide(items, "templates")


def _config_cost(stack: StackTemplate, logical_id: str, props: dict[str, Any], prices: PriceBook) -> CostItem | None:
    variants = [v for v in _as_list(props.get("ProductionVariants") or []) if isinstance(v, dict)]
    types = [t for t in (_literal(v.get("InstanceType")) for v in variants) if t]
    if not types:
        return None  # serverless variants: no instance-hours
    low = high = plan = Decimal(0)
    bindings = []
    for variant in variants:
        scaling = variant.get("ManagedInstanceScaling") or {}
        managed = isinstance(scaling, dict) and scaling.get("Status") == "ENABLED"
        least = _int(scaling.get("MinInstanceCount"), 0) if managed else _int(variant.get("InitialInstanceCount"), 1)
        most = _fleet(variant)
        binding = variant.get("CapacityReservationConfig")
        if isinstance(binding, dict) and list(binding) == ["Fn::If"]:  # on the plan while it is Active, else on demand
            high += most * HOURS_PER_30_DAYS
            plan += most * HOURS_PER_30_DAYS
            bindings.append("a plan while it is Active, on demand otherwise")
        elif isinstance(binding, dict) and binding:
            plan += most * HOURS_PER_30_DAYS
            bindings.append("only a plan")
        else:
            low += least * HOURS_PER_30_DAYS
            high += most * HOURS_PER_30_DAYS
            bindings.append("on demand")
        shape = f"{variant.get('InstanceType')} x {least}-{most}"
    endpoint = next(iter(_endpoints_using(stack, logical_id)), "")
    subject = f"{stack.title}/{endpoint.split(' (')[0]}" if endpoint else f"{stack.title}/{logical_id}"
    return CostItem(
        "endpoint",
        subject,
        f"endpoint config {logical_id} ({shape}, {', '.join(sorted(set(bindings)))})",
        types[0],
        None,
        HOSTING,
        prices.hourly(types[0], HOSTING, None),
        low,
        high,
        plan,
    )


def _repriced(side: CostSide, prices: PriceBook) -> CostSide:
    from dataclasses import replace

    return CostSide(
        [
            replace(i, usd_per_hour=prices.hourly(i.instance_type, i.usage, i.region))
            if i.instance_type is not None and i.kind != "plan"
            else i
            for i in side.items
        ],
        side.source,
    )


@dataclass(frozen=True)
class CostChange:
    """One cost line compared by subject: added, removed (its whole floor and ceiling) or modified."""

    kind: str  # added | removed | modified
    base: CostItem | None
    head: CostItem | None

    @property
    def item(self) -> CostItem:
        item = self.head or self.base
        assert item is not None
        return item

    def hours(self, which: str) -> tuple[Decimal, Decimal]:
        """(base, head) hours of ``which`` (``floor_hours``, ``ceiling_hours``, ``plan_hours``); 0 where absent."""
        return (
            getattr(self.base, which) if self.base else Decimal(0),
            getattr(self.head, which) if self.head else Decimal(0),
        )

    def usd_delta(self, which: str) -> Decimal | None:
        """Head USD minus base USD at ``which`` (``floor_hours``/``ceiling_hours``); None when a price is unknown."""
        old, new = self.hours(which)
        if (
            self.base
            and self.head
            and old == new
            and (self.base.unit, self.base.usd_per_hour, self.base.region)
            == (self.head.unit, self.head.usd_per_hour, self.head.region)
        ):
            return Decimal(0)  # the same hours of the same thing at the same price, known or not
        before = self.base.usd(old) if self.base else Decimal(0)
        after = self.head.usd(new) if self.head else Decimal(0)
        return None if before is None or after is None else after - before

    @property
    def prepaid_delta(self) -> Decimal:
        return ((self.head.prepaid_usd or Decimal(0)) if self.head else Decimal(0)) - (
            (self.base.prepaid_usd or Decimal(0)) if self.base else Decimal(0)
        )


@dataclass
class CostDelta:
    """What a change does to the monthly floor and ceiling (and which plan fees it commits), line by line."""

    changes: list[CostChange]
    source: str
    """Where each side's figures come from, in words."""
    prices: str
    """Where the USD comes from, in words."""
    compared: int = 0
    """Subjects compared (changed or not)."""

    def unknown(self, which: str) -> list[str]:
        return [c.item.subject for c in self.changes if c.usd_delta(which) is None]

    def total_hours(self, which: str) -> dict[str, Decimal]:
        """Hours added (or removed, negative) per unit (instance type or usage), in the order they first appear."""
        out: dict[str, Decimal] = {}
        for change in self.changes:
            old, new = change.hours(which)
            if change.base is not None:
                out[change.base.unit] = out.get(change.base.unit, Decimal(0)) - old
            if change.head is not None:
                out[change.head.unit] = out.get(change.head.unit, Decimal(0)) + new
        return out

    def total_usd(self, which: str) -> Decimal:
        return sum((d for d in (c.usd_delta(which) for c in self.changes) if d is not None), Decimal(0))

    @property
    def committed(self) -> list[CostChange]:
        """Plan lines whose prepaid fee grows: what the change would commit (a plan fee is never refunded)."""
        return [c for c in self.changes if c.prepaid_delta > 0]


def cost_delta(
    base: dict[str, StackTemplate],
    head: dict[str, StackTemplate],
    base_cost: CostSide | None,
    head_cost: CostSide | None,
    prices: PriceBook | Mapping[str, Any] | Path | None = None,
) -> CostDelta:
    """The cost lines of both sides matched by subject: each side's cost file when both have one; else both from
    their templates (``template_cost``), priced by ``prices``, by the head's cost file, or by the shipped table.
    ``prices`` given: every line is priced by it (both sides alike), else by what each side's synth priced."""
    book = PriceBook.of(prices) if prices is not None else None
    if base_cost is not None and head_cost is not None:
        source = f"both assemblies' {COST_FILE} (endpoints, EAGLE loops, benchmarks, capacity plans)"
        sides = [base_cost, head_cost]
        priced = f"USD from {book.label}" if book else "USD from the price table each synth used"
    else:
        known = {
            (i.instance_type, i.usage, i.region): i.usd_per_hour
            for i in (head_cost or base_cost or CostSide([], "")).items
            if i.usd_per_hour is not None
        }
        table = book or PriceBook.of(None)
        lookup = (
            PriceBook(
                flat={t: a for (t, u, _r), a in known.items() if t and u == HOSTING and a is not None},
                label="the head's cost file",
            )
            if known and book is None
            else table
        )
        missing = (
            "the base has"
            if base_cost is None and head_cost is not None
            else ("the head has" if base_cost is not None else "neither assembly has")
        )
        source = (
            f"the templates, as {missing} no {COST_FILE} (synthesized before the synth wrote one): endpoint "
            "configs' instance counts and capacity binding, capacity plans' fees; EAGLE loop and benchmark "
            "schedules not compared"
        )
        sides = [template_cost(base, lookup), template_cost(head, lookup)]
        priced = f"USD from {lookup.label}"
        book = None
    if book is not None:
        sides = [_repriced(side, book) for side in sides]
    old = {i.subject: i for i in sides[0].items}
    new = {i.subject: i for i in sides[1].items}
    changes = []
    for subject in list(new) + [s for s in old if s not in new]:
        a, b = old.get(subject), new.get(subject)
        if a is None:
            changes.append(CostChange("added", None, b))
        elif b is None:
            changes.append(CostChange("removed", a, None))
        elif _cost_figures(a) != _cost_figures(b):
            changes.append(CostChange("modified", a, b))
    return CostDelta(changes, source, priced, len(set(old) | set(new)))


def _cost_figures(item: CostItem) -> tuple[Any, ...]:
    return (
        item.unit,
        item.region,
        item.usd_per_hour,
        item.floor_hours,
        item.ceiling_hours,
        item.plan_hours,
        item.prepaid_usd,
        item.prepaid_note,
    )


def _usd(amount: Decimal | None) -> str:
    return "unknown" if amount is None else f"USD {amount.quantize(_CENT):,}"


def _signed_usd(amount: Decimal | None, why: str = "") -> str:
    if amount is None:
        return "USD unknown" + (f": {why}" if why else "")
    sign = "+" if amount > 0 else "-" if amount < 0 else ""
    return f"{sign}USD {abs(amount).quantize(_CENT):,}"


def _hours_text(hours: Decimal) -> str:
    return f"{hours.normalize():,f}" if hours == hours.to_integral_value() else f"{hours:,f}"


def _signed(hours: Decimal) -> str:
    return ("+" if hours >= 0 else "-") + _hours_text(abs(hours))


def _unit_words(unit: str) -> str:
    return f"{unit} instance-hours" if unit.startswith("ml.") else f"{unit} hours"


def _hours_change(change: CostChange, which: str) -> str:
    """``+720 ml.p5e.48xlarge instance-hours per 30 days (+USD 1,000.00)``, ``unchanged (0 ...)`` or, across a change
    of instance type, ``-720 ml.p5.48xlarge, +720 ml.p5e.48xlarge instance-hours ...``."""
    old, new = change.hours(which)
    base_unit = change.base.unit if change.base else None
    head_unit = change.head.unit if change.head else None
    if (
        old == new
        and base_unit == head_unit
        and change.base
        and change.head
        and (change.base.usd_per_hour == change.head.usd_per_hour or old == 0)
    ):
        return f"unchanged ({_hours_text(old)} {_unit_words(change.item.unit)})"
    if base_unit is None or head_unit is None or base_unit == head_unit:
        delta = f"{_signed(new - old)} {_unit_words(change.item.unit)}"
    else:
        delta = f"{_signed(-old)} {base_unit}, {_signed(new)} {_unit_words(head_unit)}"
    return f"{delta} per 30 days ({_signed_usd(change.usd_delta(which), _why_unknown(change, which))})"


def _why_unknown(change: CostChange, which: str) -> str:
    sides = [(change.base, change.hours(which)[0]), (change.head, change.hours(which)[1])]
    units = sorted(
        {
            i.unit + ("" if i.usage == HOSTING or not i.instance_type else f" {i.usage}")
            for i, hours in sides
            if i is not None and hours and i.usd_per_hour is None
        }
    )
    return f"no price for {', '.join(units)}" if units else ""


def _total_text(delta: CostDelta, which: str) -> str:
    hours = {u: h for u, h in delta.total_hours(which).items() if h}
    shown = ", ".join(f"{_signed(h)} {u}" for u, h in hours.items()) if hours else "+0"
    words = "instance-hours" if all(u.startswith("ml.") for u in hours) else "hours"
    unknown = delta.unknown(which)
    known = delta.total_usd(which)
    if unknown:
        usd = f"USD unknown: no price for {', '.join(unknown)}" + (
            f"; the priced lines {_signed_usd(known)}" if known else ""
        )
    else:
        usd = _signed_usd(known)
    return f"{shown} {words} per 30 days ({usd})"


COST_TITLE = "Cost per 30 days (on demand)"


def cost_lines(delta: CostDelta) -> tuple[str, list[str], list[str]]:
    """(where the figures come from, one line per changed subject, totals and plan fees): the report's first lines,
    text or Markdown."""
    source = f"from {delta.source}; {delta.prices}"
    per_line = []
    for change in delta.changes:
        item = change.item
        mark = {"added": "+", "removed": "-", "modified": "~"}[change.kind]
        what = (
            item.what
            if change.kind != "modified" or change.base is None or change.base.what == item.what
            else (f"{change.base.what} -> {item.what}")
        )
        parts = []
        if item.kind != "plan" or change.hours("floor_hours") != change.hours("ceiling_hours"):
            parts += [
                f"floor {_hours_change(change, 'floor_hours')}",
                f"ceiling {_hours_change(change, 'ceiling_hours')}",
            ]
        old_plan, new_plan = change.hours("plan_hours")
        if old_plan != new_plan:
            parts.append(
                f"plan-covered {_signed(new_plan - old_plan)} {_unit_words(item.unit)} (prepaid, no hourly bill)"
            )
        if item.kind == "plan" and change.kind == "removed":
            parts.append("prepaid fee: leaves the template; a bought plan stays paid, nothing is refunded")
        elif item.kind == "plan" or change.prepaid_delta:
            fee = item.prepaid_note or f"up to {_usd(item.prepaid_usd)}"
            parts.append(
                f"prepaid {_signed_usd(change.prepaid_delta)}: {fee}"
                if change.kind == "modified" and change.prepaid_delta
                else f"prepaid {fee}"
            )
        verb = {"added": "new", "removed": "removed", "modified": "changed"}[change.kind]
        per_line.append(
            f"{mark} {_KIND_WORDS.get(item.kind, item.kind)} {item.subject} ({verb}): "
            + "; ".join(parts)
            + f" [{what}]"
        )
    if not delta.changes:
        totals = [f"Total: no change to the floor or the ceiling ({delta.compared} line(s) compared)"]
    else:
        totals = [f"Total: floor {_total_text(delta, 'floor_hours')}; ceiling {_total_text(delta, 'ceiling_hours')}"]
    committed = delta.committed
    if committed:
        commits = sum((c.prepaid_delta for c in committed), Decimal(0))
        which = "; ".join(f"{c.item.subject}: {c.item.prepaid_note or _usd(c.prepaid_delta)}" for c in committed)
        totals.append(
            f"Prepaid plan fees this change would commit: up to {_usd(commits)}, one-off and never refunded, "
            f"not in the monthly figures ({which})"
        )
    return source, per_line, totals


# ----------------------------------------------------------------------------- rendering
def _compact(value: Any) -> Any:
    """CloudFormation intrinsics as readable text: Ref -> ${X}, GetAtt -> ${X.Attr}, Join concatenated."""
    if isinstance(value, dict) and len(value) == 1:
        ((kind, arg),) = value.items()
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
    """``value`` as short JSON; a long one keeps its start and its end. Two values that differ are shortened with
    ``_pair`` instead, so what is shown of them is where they differ."""
    if value is MISSING:
        return "(absent)"
    if isinstance(value, TextDelta):
        return json.dumps(str(value))
    text = json.dumps(_compact(value), sort_keys=True)
    return text if len(text) <= limit else text[: limit // 2 - 2] + "..." + text[-(limit // 2 - 1) :]


def first_difference(old: str, new: str) -> int:
    """The index of the first character where ``old`` and ``new`` differ (the shorter's length when one is the
    other's start; the length when they are equal)."""
    index = 0
    while index < min(len(old), len(new)) and old[index] == new[index]:
        index += 1
    return index


def excerpts(old: str, new: str, limit: int = 70, context: int = 24) -> tuple[str, str]:
    """``old`` and ``new`` each cut to about ``limit`` characters around their first difference: ``context``
    characters before it, then as much after it as fits, ``...`` where text is left out. Both windows start at the
    same place, so the shown parts line up and each holds its side's first differing character (a cut that kept the
    start and the end could show two identical excerpts of strings that differ in the middle)."""
    if len(old) <= limit and len(new) <= limit:
        return old, new
    at = first_difference(old, new)
    start = max(0, at - context)
    if max(len(old), len(new)) - start <= limit - 3:  # the rest fits: keep it up to the end
        start = max(0, min(start, max(len(old), len(new)) - (limit - 3)))

    def cut(text: str) -> str:
        width = limit - (3 if start else 0)
        shown = text[start : start + width]
        if start + width < len(text):
            shown = shown[:-3] + "..."
        return ("..." if start else "") + shown

    return cut(old), cut(new)


def _pair(old: Any, new: Any, limit: int = 70) -> tuple[str, str]:
    """``old`` and ``new`` as short JSON (``_short``); when both are there and one is too long, each is cut around
    where the two differ first (``excerpts``)."""
    if old is MISSING or new is MISSING or isinstance(old, TextDelta) or isinstance(new, TextDelta):
        return _short(old, limit), _short(new, limit)
    a, b = json.dumps(_compact(old), sort_keys=True), json.dumps(_compact(new), sort_keys=True)
    return excerpts(a, b, limit)


def _property_text(p: PropertyChange) -> str:
    if p.via:
        text = f"{p.path}: from {p.via}, " + (
            "a parameter whose value changes" if p.via_parameter else "which is replaced"
        )
    elif p.items:
        parts = [f"-{_short(v)}" for v in p.old] + [f"+{_short(v)}" for v in p.new]
        text = f"{p.path}: " + ", ".join(parts) if parts else f"{p.path}: reordered"
    else:
        before, after = _pair(p.old, p.new)
        text = f"{p.path}: {before} -> {after}"
    return text + (" [create-only]" if p.create_only else "")


def _verdict(change: ResourceChange) -> str:
    if change.kind in ("added", "removed"):
        return change.kind
    if change.replacement:
        return "REPLACEMENT"
    if is_custom(change.resource_type):
        known = HANDLER_UPDATES.get(change.resource_type)
        return f"update ({known})" if known else "update (the custom resource handler decides)"
    if all(p.path.startswith("(") for p in change.properties):
        return "no update (attributes or metadata only)"
    return "update in place"


_HEADLINE_TITLES = {
    "redeploy": "Endpoint redeploys",
    "money": "Capacity plans (money)",
    "fails": "Will fail to deploy",
    "runtime": "Run-time values reset",
    "headroom": "Capacity headroom",
}


BLOCKED_TITLE = "DOES NOT DEPLOY IN ONE STEP"


def blocked_lines(report: Report) -> list[str]:
    """The report's first lines when the deploy would fail: each reason with what to do instead, text or Markdown."""
    fails = [h for h in report.headlines if h.category == "fails"]
    if not fails:
        return []
    return [f"{BLOCKED_TITLE}: {len(fails)} reason{'s' if len(fails) != 1 else ''} the deploy fails and rolls back"] + [
        f"{h.stack}: {h.text}" for h in fails
    ]


def render_text(report: Report) -> str:
    out = [f"Change report: {report.base_label} -> {report.head_label}"]
    blocked = blocked_lines(report)
    if blocked:
        out += [f"!! {blocked[0]}:"] + [f"  !! {line}" for line in blocked[1:]]
    if report.cost is not None:
        source, per_line, totals = cost_lines(report.cost)
        out += ["", f"{COST_TITLE}, {source}:"] + [f"  {line}" for line in per_line + totals]
    out += ["", "Headline:"]
    rest = [h for h in report.headlines if h.category != "fails"]
    if rest:
        out += [f"  !! {_HEADLINE_TITLES[h.category]}: {h.stack}: {h.text}" for h in rest]
    if blocked:
        out.append(f"  !! {_HEADLINE_TITLES['fails']}: {len(blocked) - 1} reason(s), first in this report")
    if not report.headlines:
        out.append("  no endpoint redeploy, no capacity plan change")
    unchanged = []
    for stack in report.stacks:
        changes, outputs = report.for_stack(stack), report.outputs_for(stack)
        if not changes and not outputs:
            unchanged.append(stack.title)
            continue
        out += [
            "",
            f"Stack {stack.title}: {_counts(changes)}" + (f", {len(outputs)} output(s) changed" if outputs else ""),
        ]
        for change in changes:
            mark = {"added": "+", "removed": "-", "renamed": "~", "modified": "~"}[change.kind]
            out.append(f"  {mark} {change.resource_type} {change.display}: {_verdict(change)}")
            out += [f"      {_property_text(p)}" for p in change.properties]
            out += [f"      note: {n}" for n in change.notes]
            out += [f"      {line}" for line in _outcome_lines(report, change)]
        for output in outputs:
            out.append(f"  {_OUTPUT_MARK[output.kind]} Output {output.name}: {output.kind}")
            out += [f"      {_property_text(p)}" for p in output.properties]
    if unchanged:
        out += ["", "No changes: " + ", ".join(unchanged)]
    return "\n".join(out) + "\n"


_OUTPUT_MARK = {"added": "+", "removed": "-", "modified": "~"}


def _outcome_lines(report: Report, change: ResourceChange) -> list[str]:
    """What the change does to run-time values, write-only properties and plan capacity (``Outcome.lines``)."""
    outcome = report.outcome_of(change)
    return outcome.lines if outcome is not None else []


def _counts(changes: list[ResourceChange]) -> str:
    count = {k: sum(1 for c in changes if c.kind == k) for k in ("added", "removed", "modified", "renamed")}
    replaced = sum(1 for c in changes if c.replacement)
    text = f"{count['added']} added, {count['removed']} removed, {count['modified'] + count['renamed']} modified"
    return text + (f" ({replaced} replacement{'s' if replaced != 1 else ''})" if replaced else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report) -> str:
    out = [f"## Change report: `{report.base_label}` → `{report.head_label}`", ""]
    blocked = blocked_lines(report)
    if blocked:
        out += [f"### ⛔ {_cell(blocked[0])}", ""] + [f"- {_cell(line)}" for line in blocked[1:]] + [""]
    if report.cost is not None:
        source, per_line, totals = cost_lines(report.cost)
        out += [f"### {COST_TITLE}", "", f"_{_cell(source[0].upper() + source[1:])}._", ""]
        out += [f"- {_cell(line)}" for line in per_line]
        out += [f"- **{_cell(line).replace(': ', ':** ', 1)}" for line in totals]
        out.append("")
    if report.headlines:
        out.append("### ⚠️ Headline")
        out += [
            f"- **{_HEADLINE_TITLES[h.category]}** (`{h.stack}`): {_cell(h.text)}"
            for h in report.headlines
            if h.category != "fails"
        ]
        if blocked:
            out.append(f"- **{_HEADLINE_TITLES['fails']}**: {len(blocked) - 1} reason(s), first in this report")
    else:
        out.append("**Headline:** no endpoint redeploy, no capacity plan change.")
    unchanged = []
    for stack in report.stacks:
        changes, outputs = report.for_stack(stack), report.outputs_for(stack)
        if not changes and not outputs:
            unchanged.append(f"`{stack.title}`")
            continue
        out += [
            "",
            f"### Stack `{stack.title}`: {_counts(changes)}"
            + (f", {len(outputs)} output(s) changed" if outputs else ""),
            "",
            "| Change | Resource | Type | Details |",
            "| --- | --- | --- | --- |",
        ]
        for change in changes:
            verdict = _verdict(change)
            verdict = f"**{verdict}**" if change.replacement else verdict
            details = [f"`{_cell(_property_text(p))}`" for p in change.properties] + [_cell(n) for n in change.notes]
            details += [
                f"**{_cell(line)}**" if line.startswith(("resets ", "overwrites ", "a new parameter ")) else _cell(line)
                for line in _outcome_lines(report, change)
            ]
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
    env["PATH"] = os.pathsep.join(
        [str(REPO / "node_modules" / ".bin"), str(REPO / ".venv" / "bin"), env.get("PATH", "")]
    )
    # The source's own library first: the venv's editable install points at this checkout.
    env["PYTHONPATH"] = os.pathsep.join([str(source / "constructs"), str(source), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
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
    command = [
        "cdk",
        "synth",
        "--quiet",
        "--no-validation",
        "--app",
        f"{shlex.quote(str(_python()))} app.py",
        "--output",
        str(out),
    ]
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


def report_against_git(
    ref: str,
    *,
    config: str | None = None,
    head_dir: Path | None = None,
    keep: Path | None = None,
    head_label: str | None = None,
    prices: Path | None = None,
) -> Report:
    with tempfile.TemporaryDirectory(prefix="change-report-") as tmp:
        work = keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        commit = export_ref(ref, work / "base-src")
        base_out = synthesize(work / "base-src", work / "base.out", config=config)
        head_out = head_dir or synthesize(REPO, work / "head.out", config=config)
        label = head_label or (f"{head_dir} ({working_tree_label()})" if head_dir else working_tree_label())
        return compare(
            load_assembly(base_out),
            load_assembly(head_out),
            base_label=f"{ref} ({commit})",
            head_label=label,
            base_cost=load_cost(base_out),
            head_cost=load_cost(head_out),
            prices=prices,
        )


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
    parser.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="price both sides with this table (prices.json's shape) instead of what each synth used",
    )
    parser.add_argument("--markdown", action="store_true", help="GitHub-flavoured Markdown (step summary)")
    parser.add_argument("--output", type=Path, help="also write the report to this file")
    parser.add_argument(
        "--step-summary",
        action="store_true",
        help="also append the Markdown report to $GITHUB_STEP_SUMMARY, when it is set",
    )
    args = parser.parse_args(argv)
    try:
        if args.git_base:
            if args.base_dir or args.head_dir:
                parser.error("give either BASE_DIR HEAD_DIR or --git-base REF")
            report = report_against_git(
                args.git_base,
                config=args.config,
                head_dir=args.head_dir,
                keep=args.keep,
                head_label=args.head_label,
                prices=args.prices,
            )
        elif args.base_dir and args.head_dir:
            report = compare(
                load_assembly(args.base_dir),
                load_assembly(args.head_dir),
                base_label=str(args.base_dir),
                head_label=args.head_label or str(args.head_dir),
                base_cost=load_cost(args.base_dir),
                head_cost=load_cost(args.head_dir),
                prices=args.prices,
            )
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
