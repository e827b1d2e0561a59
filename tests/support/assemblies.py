"""Cloud assemblies of this repository's app, synthesized in this interpreter from a config held in memory: the
functions live in ``tools/assemblies.py`` (the update catalogue's generator synthesizes with them too); the tests
import them from here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tools.assemblies import CDK_CONTEXT, ROOT, config_data, pipeline_data, synth_config, synth_pipeline

__all__ = [
    "CDK_CONTEXT",
    "ENVIRONMENT",
    "ROOT",
    "config_data",
    "pipeline_data",
    "synth_config",
    "synth_pipeline",
    "write_assembly",
]


ENVIRONMENT = "aws://123456789012/us-east-1"


def write_assembly(
    folder: Path,
    stacks: dict[str, dict[str, dict[str, Any]]],
    *,
    dependencies: dict[str, list[str]] | None = None,
    environments: dict[str, str] | None = None,
) -> Path:
    """A hand-made cloud assembly in ``folder``: stack name -> its resources (logical id -> resource), each stack
    in ``ENVIRONMENT`` unless ``environments`` names another, deploying after the stacks ``dependencies`` lists (as
    ``cdk synth`` writes them into ``manifest.json``). For what no config of the app can make (a fixed name, two
    stacks sharing one)."""
    folder.mkdir(parents=True, exist_ok=True)
    artifacts: dict[str, Any] = {}
    for name, resources in stacks.items():
        (folder / f"{name}.template.json").write_text(json.dumps({"Resources": resources}), encoding="utf-8")
        artifacts[name] = {
            "type": "aws:cloudformation:stack",
            "environment": (environments or {}).get(name, ENVIRONMENT),
            "properties": {"templateFile": f"{name}.template.json"},
            "dependencies": list((dependencies or {}).get(name, [])),
            "displayName": name,
        }
    (folder / "manifest.json").write_text(json.dumps({"version": "48.0.0", "artifacts": artifacts}), encoding="utf-8")
    return folder
