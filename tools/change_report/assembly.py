"""Reading a synthesized cloud assembly: every stack template of a ``cdk.out`` folder (stacks, nested stacks found
through their asset manifests, stages) as a ``StackTemplate``, with its manifest's environment and dependencies.
``ReportError`` is what the report raises when its inputs are not cloud assemblies or a synth fails."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.change_report.resource_types import NESTED_STACK


class ReportError(Exception):
    """The inputs are not cloud assemblies, or a synth failed."""


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
