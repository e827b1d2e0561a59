"""Synthesizing the two sides: ``cdk synth`` of an app with this checkout's Node tooling and venv, a git ref exported
with ``git archive`` into a temporary folder, the base and the working tree compared (``report_against_git``), and
the working tree named by its commit."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from tools.change_report.assembly import ReportError, load_assembly
from tools.change_report.comparing import compare
from tools.change_report.cost import COST_FILE, load_cost

if TYPE_CHECKING:
    from tools.change_report.records import Report
REPO = Path(__file__).resolve().parents[2]


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
        base_label = f"{ref} ({commit})"
        if config is not None and not config_in(work / "base-src", config):
            # A config new on this branch: deploying it creates everything, so the base is an empty assembly.
            base_out = empty_assembly(work / "base.out")
            base_label += f", which has no {config} (a new config: everything is created)"
        else:
            base_out = synthesize(work / "base-src", work / "base.out", config=config)
        head_out = head_dir or synthesize(REPO, work / "head.out", config=config)
        label = head_label or (f"{head_dir} ({working_tree_label()})" if head_dir else working_tree_label())
        return compare(
            load_assembly(base_out),
            load_assembly(head_out),
            base_label=base_label,
            head_label=label,
            base_cost=load_cost(base_out),
            head_cost=load_cost(head_out),
            prices=prices,
        )


def config_in(source: Path, config: str) -> bool:
    """Whether the exported ``source`` holds ``config``: a path inside this checkout is looked up at the same place
    in ``source``; a path outside it is the same file for both sides."""
    path = Path(config)
    absolute = path if path.is_absolute() else REPO / path
    try:
        inside = absolute.resolve().relative_to(REPO)
    except ValueError:
        return True
    return (source / inside).is_file()


def empty_assembly(out: Path) -> Path:
    """A cloud assembly with no stack and no cost line: what a config that does not exist yet deploys."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").write_text(json.dumps({"version": "0.0.0", "artifacts": {}}), encoding="utf-8")
    (out / COST_FILE).write_text(json.dumps({"lines": []}), encoding="utf-8")
    return out


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
