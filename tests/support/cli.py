"""Commands as a user types them: ``npx cdk synth`` and ``make`` in a checkout of the repository.

The CLI hands the app a relative output folder (``CDK_OUTDIR=cdk.out``, relative to the app's folder) unless ``-o``
names another; every check whose result depends on a path must see that form. ``checkout`` lays out a copy of the
repository whose entries are links to the real ones (nothing is copied but ``config/``, so a test can add a config
beside the shipped ones), so the default ``cdk.out`` of a test is its own and never the developer's.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "123456789012"
REGION = "us-east-1"
_NOT_LINKED = {".git", "cdk.out", "reports", ".pytest_cache", "config", "examples"}


def checkout(where: Path) -> Path:
    """A folder that is the repository to every command (links to its entries), with real ``config/`` and
    ``examples/`` folders holding links to the shipped files: a config or an app's ``cdk.out`` written there stays
    there."""
    where.mkdir(parents=True, exist_ok=True)
    for entry in ROOT.iterdir():
        if entry.name not in _NOT_LINKED:
            (where / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    for folder in ("config", "examples"):
        _link_tree(ROOT / folder, where / folder)
    return where


def _link_tree(source: Path, target: Path) -> None:
    target.mkdir()
    for entry in source.iterdir():
        if entry.name in ("cdk.out", "__pycache__") or entry.name.startswith("cdk.context"):
            continue
        if entry.is_dir() and (source.name == "examples" or entry.name in ("examples", "pipelines")):
            _link_tree(entry, target / entry.name)  # an example's cdk.out must land in the checkout
        else:
            (target / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())


def env() -> dict[str, str]:
    """The environment a user's shell has after ``make setup``: the project's Node and venv first on PATH, no
    output folder or context of a test runner, no AWS credentials or account (nothing here may call AWS)."""
    drop = {"CDK_OUTDIR", "CDK_CONTEXT_JSON", "PYTHONPATH", "VIRTUAL_ENV", "CDK_DEFAULT_ACCOUNT", "CDK_DEFAULT_REGION"}
    out = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("AWS_")}
    out["PATH"] = os.pathsep.join([str(ROOT / "node_modules" / ".bin"), str(ROOT / ".venv" / "bin"), out["PATH"]])
    out.update(
        CDK_DISABLE_VERSION_CHECK="1",
        CDK_CLI_TELEMETRY="false",
        JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE="/dev/null",
        AWS_SHARED_CREDENTIALS_FILE="/dev/null",
    )
    return out


@dataclass
class Run:
    command: list[str]
    cwd: Path
    returncode: int
    stdout: str
    stderr: str

    @property
    def log(self) -> str:
        return self.stdout + self.stderr

    def explain(self) -> str:
        return f"$ cd {self.cwd} && {' '.join(self.command)}\n(exit {self.returncode})\n{self.log[-6000:]}"

    def stacks(self, outdir: str = "cdk.out") -> dict[str, dict[str, Any]]:
        """Each stack of the assembly the command wrote (nested stages included): name -> template."""
        return _stacks(self.cwd / outdir)


def run(command: list[str], cwd: Path, timeout: int = 900) -> Run:
    result = subprocess.run(
        command, cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    return Run(command, cwd, result.returncode, result.stdout, result.stderr)


def _stacks(folder: Path) -> dict[str, dict[str, Any]]:
    manifest = json.loads((folder / "manifest.json").read_text())
    out: dict[str, dict[str, Any]] = {}
    for name, artifact in manifest["artifacts"].items():
        if artifact["type"] == "aws:cloudformation:stack":
            out[name] = json.loads((folder / artifact["properties"]["templateFile"]).read_text())
            out[name]["__environment__"] = artifact.get("environment")
        elif artifact["type"] == "cdk:cloud-assembly":
            out |= _stacks(folder / artifact["properties"]["directoryName"])
    return out
