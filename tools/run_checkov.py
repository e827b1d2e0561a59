"""Run checkov on every synthesized template and print a readable summary.

A finding fails the check unless the resource acknowledges it with a reason: checkov reads
``Metadata: {checkov: {skip: [{id, comment}]}}``, which the library writes through
``sagemaker_llm_cdk.core.checkov.checkov_skip`` (its reasons table is ``CHECKOV_REASONS``).
A skip without a comment fails too.

checkov pins its own boto3, so it lives in its own virtualenv (``.venv/checkov``, made by
``make setup`` from ``requirements-checkov.txt``) and runs as a subprocess; nothing is sent
anywhere (``--skip-download``, ``BC_SKIP_MAPPING``).

Exit status: 0 when every finding is acknowledged with a reason, 1 when not, 2 when checkov
cannot run. Usage: ``python -m tools.run_checkov cdk.out [--json reports/checkov.json]``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CHECKOV = REPO / ".venv" / "checkov" / "bin" / "checkov"
NO_COMMENT = {"", "no comment provided"}
"""What checkov reports as the comment of a skip that has none."""
ACKNOWLEDGE_HINT = (
    "fix the resource, or acknowledge the finding with its reason: a reason in the table "
    "constructs/sagemaker_llm_cdk/core/checkov.py CHECKOV_REASONS, or checkov_skip(resource, CHECK_ID, "
    "REASON) in the construct that creates the resource"
)


class CheckovError(RuntimeError):
    """checkov could not run or its output could not be read."""


@dataclass(frozen=True)
class Finding:
    check_id: str
    check_name: str
    template: str
    resource: str
    cdk_path: str
    comment: str = ""

    def line(self) -> str:
        where = f" ({self.cdk_path})" if self.cdk_path else ""
        return f"{self.check_id} {self.template}: {self.resource}{where}: {self.check_name}"


@dataclass
class Result:
    templates: int
    version: str
    passed: int
    failed: list[Finding]
    skipped: list[Finding]
    parsing_errors: list[str]

    @property
    def unexplained_skips(self) -> list[Finding]:
        return [s for s in self.skipped if s.comment.strip().lower() in NO_COMMENT]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.unexplained_skips and not self.parsing_errors


def find_checkov(explicit: str | None = None) -> str:
    """The checkov executable: ``explicit``, ``$CHECKOV``, ``.venv/checkov/bin/checkov``, or on PATH."""
    for candidate in (explicit, os.environ.get("CHECKOV"), str(DEFAULT_CHECKOV)):
        if candidate and Path(candidate).is_file():
            return candidate
    on_path = shutil.which("checkov")
    if on_path:
        return on_path
    raise CheckovError(
        "checkov not found: run `make setup` (it installs checkov into .venv/checkov from "
        "requirements-checkov.txt), or pass --checkov PATH"
    )


def templates_in(folder: Path) -> list[Path]:
    """Every CloudFormation template of the cloud assembly in ``folder``, nested stacks and stages included."""
    return sorted(
        p
        for p in folder.rglob("*.template.json")
        if not any(part.startswith("asset.") for part in p.relative_to(folder).parts)
    )


def run_checkov(templates: Sequence[Path], *, checkov: str | None = None, raw_json: Path | None = None) -> Result:
    """Run checkov on ``templates``; ``raw_json`` keeps checkov's own JSON report."""
    executable = find_checkov(checkov)
    command = [executable, "--framework", "cloudformation", "--output", "json", "--compact", "--skip-download"]
    for template in templates:
        command += ["--file", str(template)]
    env = {**os.environ, "BC_SKIP_MAPPING": "TRUE", "LOG_LEVEL": "ERROR"}
    completed = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if completed.returncode not in (0, 1):
        raise CheckovError(f"checkov exited with {completed.returncode}: {completed.stderr.strip()[-2000:]}")
    try:
        output = json.loads(completed.stdout)
    except json.JSONDecodeError as error:
        raise CheckovError(f"checkov printed no JSON ({error}): {completed.stderr.strip()[-2000:]}") from error
    if raw_json is not None:
        raw_json.parent.mkdir(parents=True, exist_ok=True)
        raw_json.write_text(json.dumps(output, indent=2) + "\n", encoding="utf-8")
    return _result(output, templates)


def _result(output: Any, templates: Sequence[Path]) -> Result:
    reports = output if isinstance(output, list) else [output]
    paths = _cdk_paths(templates)
    result = Result(templates=len(templates), version="", passed=0, failed=[], skipped=[], parsing_errors=[])
    for report in reports:
        summary = report.get("summary", report)
        result.version = summary.get("checkov_version", result.version)
        result.passed += int(summary.get("passed", 0))
        results = report.get("results", {})
        result.failed += [_finding(c, paths) for c in results.get("failed_checks", [])]
        result.skipped += [_finding(c, paths) for c in results.get("skipped_checks", [])]
        result.parsing_errors += [str(e) for e in results.get("parsing_errors", [])]
    return result


def _finding(check: dict[str, Any], paths: dict[tuple[str, str], str]) -> Finding:
    template = Path(check.get("file_path", "")).name
    resource = check.get("resource", "")
    logical_id = resource.rpartition(".")[2]
    comment = (check.get("check_result") or {}).get("suppress_comment") or ""
    return Finding(
        check.get("check_id", "?"),
        check.get("check_name", ""),
        template,
        resource,
        paths.get((template, logical_id), ""),
        comment,
    )


def _cdk_paths(templates: Sequence[Path]) -> dict[tuple[str, str], str]:
    paths: dict[tuple[str, str], str] = {}
    for template in templates:
        try:
            resources = json.loads(template.read_text(encoding="utf-8")).get("Resources", {})
        except (OSError, ValueError):
            continue
        for logical_id, resource in resources.items():
            path = (resource.get("Metadata") or {}).get("aws:cdk:path")
            if path:
                paths[(template.name, logical_id)] = path
    return paths


def summary_lines(result: Result) -> list[str]:
    lines = [f"FAILED  {f.line()}" for f in result.failed]
    lines += [
        f"FAILED  {s.line()}: skipped without a reason; give checkov_skip a comment" for s in result.unexplained_skips
    ]
    lines += [f"FAILED  parsing error: {e}" for e in result.parsing_errors]
    if not result.ok:
        lines.append(f"To pass: {ACKNOWLEDGE_HINT}.")
    skipped = Counter(s.check_id for s in result.skipped)
    if skipped:
        lines.append(
            "Acknowledged (skipped with a reason): "
            + ", ".join(f"{check} x{count}" for check, count in sorted(skipped.items()))
        )
    lines.append(
        f"checkov {result.version or '?'}: {result.templates} template(s), {result.passed} passed, "
        f"{len(result.failed)} failed, {len(result.skipped)} skipped "
        f"({len(result.unexplained_skips)} without a reason)"
    )
    return lines


def check_folder(folder: Path, *, checkov: str | None = None, raw_json: Path | None = None) -> int:
    templates = templates_in(folder)
    if not templates:
        print(f"checkov: no templates in {folder}; run `make synth` first", file=sys.stderr)
        return 2
    try:
        result = run_checkov(templates, checkov=checkov, raw_json=raw_json)
    except CheckovError as error:
        print(f"checkov: {error}", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(result)))
    return 0 if result.ok else 1


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", default="cdk.out", type=Path)
    parser.add_argument("--checkov", help="checkov executable (default: .venv/checkov/bin/checkov, then PATH)")
    parser.add_argument("--json", type=Path, help="also write checkov's JSON report here")
    args = parser.parse_args()
    sys.exit(check_folder(args.folder, checkov=args.checkov, raw_json=args.json))
