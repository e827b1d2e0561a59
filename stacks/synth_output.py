"""What the app prints, per CDK CLI command: the synth summary for ``cdk synth``, quiet for the rest.

The cdk-nag summary and the cost table are for a reviewer reading a synth log (``make synth``, ``make check``, a
bare ``cdk synth``); ``cdk ls`` and ``cdk diff`` synthesize too, and there the tables bury what the user asked
for. The tables are always written to ``cdk.out/synth-summary.md`` (``stacks.checks.report_checks``); whether
they are printed as well:

- context ``sagemaker-llm-cdk:summary`` (``SUMMARY_CONTEXT``) decides when given: ``1``/``true`` prints,
  ``0``/``false`` does not. The Makefile's synth passes ``-c sagemaker-llm-cdk:summary=1``;
- otherwise the CDK CLI command decides (``cli_command``): ``synth`` prints, any other command is quiet. The CLI
  tells its app nothing about the command (no environment variable), so it is read from the CLI's own command
  line, the nearest ancestor process that runs ``cdk`` (``/proc`` on Linux, ``ps`` elsewhere);
- an app not run by the CLI at all (``python app.py``, the tests) prints, as a synth does.

A failing synth prints its failures whatever the command: quiet never hides why a command failed.

Two more sources of noise are handled here. jsii records a JavaScript stack trace with every construct and
annotation; for a Python app its only frame is jsii's own kernel, which the CLI prints as a location line
(``/tmp/<dir>/lib/program.js:1:5591``) above each annotation: the app turns the traces off (``APP_PROPS``).
And the CLI prints every info annotation as a finding to acknowledge (``Acknowledge with
'Annotation::info-annotation'``), though an info cannot fail anything: ``keep_annotations`` gives the CLI the
annotations report itself, without the infos (the library prints its notes as ``note:`` lines already).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

SUMMARY_CONTEXT = "sagemaker-llm-cdk:summary"
"""CDK context: ``1``/``true`` prints the synth summary (the Makefile's synth passes it), ``0``/``false`` does not."""
APP_PROPS: Mapping[str, Any] = {"stack_traces": False}
"""``App(**APP_PROPS)``: no construct or annotation stack traces (for a Python app they hold only jsii's kernel)."""
SUMMARY_COMMANDS = frozenset({"synth", "synthesize"})
"""CDK CLI commands whose log gets the summary."""
ANNOTATIONS_PLUGIN = "Construct Annotations"
"""The plugin name under which the CDK CLI reports construct annotations (it derives that report from the
assembly's metadata unless ``validation-report.json`` holds it already)."""
OFFLINE_DIFF_HINT = (
    "note: no AWS credentials, so cdk diff cannot read the deployed stacks; offline: `make change-report` "
    "(this branch against origin/main) or `cdk diff --exclusively --template <saved>.template.json "
    "<stack>`"
)
_LEVELS = {"aws:cdk:warning": "warning", "aws:cdk:error": "error"}
_CDK_SCRIPT = re.compile(r"(^|/)(cdk|cdk\.js|aws-cdk)$")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}


def _command_after_cdk(argv: Sequence[str]) -> str | None:
    """The CLI command in a process's argv when it runs the CDK CLI (``node .../cdk ls ...``, ``cdk diff``,
    ``npx cdk synth``): the first argument after the ``cdk`` script that is not an option. None otherwise."""
    for index, arg in enumerate(argv):
        if _CDK_SCRIPT.search(arg) and not arg.endswith(".py"):
            rest = argv[index + 1 :]
            skip = False
            for item in rest:
                if skip:
                    skip = False
                    continue
                if item.startswith("-"):
                    # options that take a value, as the CLI's global options do (--app X, -c k=v, --profile X ...)
                    skip = "=" not in item and item in {
                        "-a",
                        "--app",
                        "-c",
                        "--context",
                        "--profile",
                        "-o",
                        "--output",
                        "--plugin",
                        "-p",
                        "--role-arn",
                        "-r",
                        "--ca-bundle-path",
                    }
                    continue
                return item
            return None
    return None


def _ancestors(limit: int = 8) -> list[list[str]]:
    """The command lines of this process's ancestors, nearest first."""
    found: list[list[str]] = []
    pid = os.getppid()
    proc = Path("/proc")
    for _ in range(limit):
        if pid <= 1:
            break
        if proc.is_dir():
            try:
                argv = (proc / str(pid) / "cmdline").read_bytes().split(b"\0")
                stat = (proc / str(pid) / "stat").read_text()
            except OSError:
                break
            found.append([a.decode(errors="replace") for a in argv if a])
            pid = int(stat[stat.rfind(")") + 2 :].split()[1])
        else:
            try:
                out = subprocess.run(
                    ["ps", "-o", "ppid=", "-o", "args=", "-p", str(pid)], capture_output=True, text=True, timeout=5
                ).stdout.strip()
            except (OSError, subprocess.SubprocessError):
                break
            if not out:
                break
            parent, _, args = out.partition(" ")
            found.append(args.split())
            pid = int(parent)
    return found


def cli_command(ancestors: Sequence[Sequence[str]] | None = None) -> str | None:
    """The CDK CLI command this app runs under (``synth``, ``ls``, ``diff``, ``deploy`` ...), from the nearest
    ancestor process that runs ``cdk``; None when no ancestor does (``python app.py``) or it cannot be read."""
    for argv in _ancestors() if ancestors is None else ancestors:
        command = _command_after_cdk(list(argv))
        if command is not None:
            return command
    return None


def prints_summary(context_value: Any, *, command: str | None, under_cli: bool) -> bool:
    """Whether the cdk-nag summary and the cost table go to the log (see the module's docstring)."""
    if context_value is not None:
        text = str(context_value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    if command is not None:
        return command in SUMMARY_COMMANDS
    return not under_cli  # run by the CLI, command unknown: quiet; run directly: a synth


def offline_diff_hint(command: str | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The one line ``cdk diff`` gets when the CLI found no credentials (it sets ``CDK_DEFAULT_ACCOUNT`` for the
    app only when it resolved an account); None otherwise."""
    if command == "diff" and not environ.get("CDK_DEFAULT_ACCOUNT"):
        return OFFLINE_DIFF_HINT
    return None


def _messages(assembly_dir: Path) -> list[dict[str, Any]]:
    """Every warning and error annotation of every stack in the assembly and its nested assemblies (stages),
    as the CLI's annotations report has them."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    manifests = [assembly_dir / "manifest.json"]
    while manifests:
        manifest_path = manifests.pop(0)
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        for artifact in manifest.get("artifacts", {}).values():
            if artifact.get("type") == "cdk:cloud-assembly":
                nested = manifest_path.parent / artifact["properties"]["directoryName"] / "manifest.json"
                if nested.is_file():
                    manifests.append(nested)
                continue
            metadata = dict(artifact.get("metadata", {}))
            extra = artifact.get("additionalMetadataFile")  # CDK writes a stack's metadata beside its template
            if extra and (manifest_path.parent / extra).is_file():
                for path, entries in json.loads((manifest_path.parent / extra).read_text(encoding="utf-8")).items():
                    metadata[path] = [*metadata.get(path, []), *entries]
            for path, entries in metadata.items():
                for entry in entries:
                    severity = _LEVELS.get(entry.get("type"))
                    if severity is None:
                        continue
                    message = str(entry.get("data"))
                    ack = re.search(r"\[ack: ([^\]]+)\]", message)
                    rule = ack.group(1) if ack else f"{severity}-annotation"
                    message = message.replace(ack.group(0), "").strip() if ack else message
                    violation = found.setdefault(
                        (rule, severity, message),
                        {
                            "ruleName": rule,
                            "description": message,
                            "severity": severity,
                            "violatingConstructs": [],
                            "ruleMetadata": {"cdk:annotation": "true"},
                        },
                    )
                    construct = {"constructPath": path.lstrip("/"), "stackTraces": []}
                    if construct not in violation["violatingConstructs"]:
                        violation["violatingConstructs"].append(construct)
    return list(found.values())


def keep_annotations(assembly_dir: str | Path, *, report_name: str = "validation-report.json") -> None:
    """Put the annotations report into ``validation-report.json`` with the warnings and errors only, so the CLI
    shows those as before (and fails on an error as before) and no info asks to be acknowledged. A report that
    has it already (CDK's ``annotationsInValidationReport`` wrote it) keeps its warnings and errors only."""
    folder = Path(assembly_dir)
    path = folder / report_name
    report: dict[str, Any] = (
        json.loads(path.read_text(encoding="utf-8"))
        if path.is_file()
        else {"title": "Validation Report", "pluginReports": []}
    )
    plugins = report.setdefault("pluginReports", [])
    existing = next((p for p in plugins if p.get("pluginName") == ANNOTATIONS_PLUGIN), None)
    if existing is not None:
        existing["violations"] = [v for v in existing.get("violations", []) if v.get("severity") != "info"]
    else:
        violations = _messages(folder)
        plugins.append(
            {
                "pluginName": ANNOTATIONS_PLUGIN,
                "conclusion": "failure" if any(v["severity"] == "error" for v in violations) else "success",
                "violations": violations,
            }
        )
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def _has_credentials() -> bool:
    """Whether boto3 resolves credentials here (as the CDK CLI would, from the same chain)."""
    try:
        import boto3

        return boto3.Session().get_credentials() is not None
    except Exception:  # noqa: BLE001 - no boto3 or a broken profile: no credentials for cdk diff either
        return False


if __name__ == "__main__":
    # `python stacks/synth_output.py --offline-diff-hint`: `make diff` runs it when cdk diff failed (the assembly is
    # diffed without running the app, so the app cannot say it); run as a file, so CDK is not imported.
    if sys.argv[1:] == ["--offline-diff-hint"]:
        if not _has_credentials():
            print(OFFLINE_DIFF_HINT, file=sys.stderr)
        sys.exit(0)
    print("usage: python stacks/synth_output.py --offline-diff-hint", file=sys.stderr)
    sys.exit(2)
