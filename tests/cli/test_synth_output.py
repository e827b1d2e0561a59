"""Quiet by default: `cdk ls` and `cdk diff` print no cdk-nag or cost tables, no jsii kernel locations and no info
annotation to acknowledge; `cdk synth` and `make synth` print the summary; `cdk diff` without credentials says how
to compare offline (stacks/synth_output.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stacks import synth_output
from stacks.synth_output import (
    ANNOTATIONS_PLUGIN,
    OFFLINE_DIFF_HINT,
    SUMMARY_CONTEXT,
    cli_command,
    keep_annotations,
    offline_diff_hint,
    prints_summary,
)

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
CDK = ROOT / "node_modules" / ".bin" / "cdk"
TABLES = ("Cost per 30 days", "cdk-nag findings per rule", "cdk destroy keeps")
NOISE = ("program.js", "Acknowledge with 'Annotation::info-annotation'", "!!  Node")


@pytest.mark.parametrize(
    "argv, command",
    [
        (["node", "/repo/node_modules/.bin/cdk", "ls"], "ls"),
        (
            ["node", "/usr/lib/node_modules/aws-cdk/bin/cdk", "--app", "python3 app.py", "-c", "k=v", "diff", "S"],
            "diff",
        ),
        (["cdk", "synth", "--quiet"], "synth"),
        (["node", "/x/cdk.js", "--context=a=b", "deploy"], "deploy"),
        (["/bin/sh", "-c", "tools/venv-python app.py"], None),
        (["python", "cdk.py", "synth"], None),
    ],
)
def test_the_command_is_read_from_the_clis_command_line(argv, command):
    assert cli_command([argv]) == command


def test_the_nearest_cdk_ancestor_decides_and_no_cdk_ancestor_means_no_command():
    assert (
        cli_command([["/bin/sh", "-c", "tools/venv-python app.py"], ["node", "/r/.bin/cdk", "diff"], ["make", "synth"]])
        == "diff"
    )
    assert cli_command([["python", "-m", "pytest"], ["bash"]]) is None
    assert cli_command() is None  # this test process: pytest, not the CLI


@pytest.mark.parametrize(
    "context, command, under_cli, printed",
    [
        ("1", "ls", True, True),
        (True, "diff", True, True),
        ("true", None, True, True),
        ("0", "synth", True, False),
        (False, None, False, False),
        (None, "synth", True, True),
        (None, "synthesize", True, True),
        (None, "ls", True, False),
        (None, "diff", True, False),
        (None, "deploy", True, False),
        (None, None, True, False),  # run by the CLI, command unknown: quiet
        (None, None, False, True),  # python app.py: a synth
    ],
)
def test_the_summary_is_printed_for_a_synth_only(context, command, under_cli, printed):
    assert prints_summary(context, command=command, under_cli=under_cli) is printed


def test_the_offline_hint_is_for_diff_without_an_account():
    assert offline_diff_hint("diff", {}) == OFFLINE_DIFF_HINT and "make change-report" in OFFLINE_DIFF_HINT
    assert offline_diff_hint("diff", {"CDK_DEFAULT_ACCOUNT": "123456789012"}) is None
    assert offline_diff_hint("ls", {}) is None and "\n" not in OFFLINE_DIFF_HINT


def _assembly(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    (out / "assembly-Stage").mkdir(parents=True)
    (out / "manifest.json").write_text(
        json.dumps(
            {
                "version": "55.0.0",
                "artifacts": {
                    "S": {"type": "aws:cloudformation:stack", "additionalMetadataFile": "S.metadata.json"},
                    "Stage": {"type": "cdk:cloud-assembly", "properties": {"directoryName": "assembly-Stage"}},
                },
            }
        )
    )
    (out / "S.metadata.json").write_text(
        json.dumps(
            {
                "/S/Chat": [
                    {"type": "aws:cdk:info", "data": "a note"},
                    {"type": "aws:cdk:warning", "data": "a warning [ack: @sagemaker-llm-cdk/x:y]"},
                    {"type": "aws:cdk:logicalId", "data": "Chat"},
                ]
            }
        )
    )
    (out / "assembly-Stage" / "manifest.json").write_text(
        json.dumps(
            {
                "version": "55.0.0",
                "artifacts": {
                    "StageS": {
                        "type": "aws:cloudformation:stack",
                        "metadata": {"/Stage/S/Bad": [{"type": "aws:cdk:error", "data": "an error"}]},
                    }
                },
            }
        )
    )
    (out / "validation-report.json").write_text(
        json.dumps(
            {
                "version": "55.0.0",
                "title": "Validation Report",
                "pluginReports": [{"pluginName": "AwsSolutions", "conclusion": "success", "violations": []}],
            }
        )
    )
    return out


def test_the_annotations_report_keeps_warnings_and_errors_and_drops_infos(tmp_path):
    out = _assembly(tmp_path)
    keep_annotations(out)
    report = json.loads((out / "validation-report.json").read_text())
    assert [p["pluginName"] for p in report["pluginReports"]] == ["AwsSolutions", ANNOTATIONS_PLUGIN]
    annotations = report["pluginReports"][1]
    assert annotations["conclusion"] == "failure"  # an error annotation fails as the CLI's own report would
    assert [
        (v["severity"], v["ruleName"], v["description"], [c["constructPath"] for c in v["violatingConstructs"]])
        for v in annotations["violations"]
    ] == [
        ("warning", "@sagemaker-llm-cdk/x:y", "a warning", ["S/Chat"]),
        ("error", "error-annotation", "an error", ["Stage/S/Bad"]),
    ]


def test_an_annotations_report_cdk_wrote_keeps_its_warnings_only(tmp_path):
    out = _assembly(tmp_path)
    (out / "validation-report.json").write_text(
        json.dumps(
            {
                "pluginReports": [
                    {
                        "pluginName": ANNOTATIONS_PLUGIN,
                        "conclusion": "success",
                        "violations": [{"severity": "info", "ruleName": "i"}, {"severity": "warning", "ruleName": "w"}],
                    }
                ]
            }
        )
    )
    keep_annotations(out)
    (plugin,) = json.loads((out / "validation-report.json").read_text())["pluginReports"]
    assert [v["ruleName"] for v in plugin["violations"]] == ["w"]


def test_make_synth_asks_for_the_summary_and_make_diff_says_how_to_compare_offline():
    dry = subprocess.run(["make", "-n", "synth-app"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert f"-c {SUMMARY_CONTEXT}=1" in next(line for line in dry.splitlines() if "cdk synth" in line and "||" in line)
    diff = subprocess.run(["make", "-n", "diff"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "stacks/synth_output.py --offline-diff-hint" in diff


def test_the_hint_script_runs_without_cdk_and_prints_one_line_without_credentials(tmp_path):
    env = _no_credentials(tmp_path)
    result = subprocess.run(
        [sys.executable, str(ROOT / "stacks" / "synth_output.py"), "--offline-diff-hint"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and result.stderr.strip() == OFFLINE_DIFF_HINT


def test_the_app_interpreter_puts_the_pinned_node_first(tmp_path):
    node = ROOT / "node_modules" / ".bin" / "node"
    assert node.exists(), "the pinned Node is not installed: run `make setup`"
    env = dict(os.environ, PATH="/usr/bin:/bin")
    found = subprocess.run(
        [str(ROOT / "tools" / "venv-python"), "-c", "import shutil; print(shutil.which('node'))"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(found) == node


def _no_credentials(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "CDK_DEFAULT_ACCOUNT"}
    env.update(
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        HOME=str(tmp_path),
        CDK_DISABLE_VERSION_CHECK="1",
        CDK_CLI_TELEMETRY="false",
        JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="",
    )
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])  # the system Node first
    return env


def _cdk(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CDK.exists(), "the CDK CLI is not installed: run `make setup` (npm ci installs it from package.json)"
    return subprocess.run(
        [str(CDK), *args, "--output", str(tmp_path / "out")],
        cwd=ROOT,
        env=_no_credentials(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.cli
def test_cdk_ls_prints_the_stack_names_and_nothing_else(tmp_path):
    result = _cdk(tmp_path, "ls")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["SageMakerLlm", "SageMakerLlmEaglePromotion"]
    assert result.stderr.strip() == "", result.stderr[-3000:]
    summary = (tmp_path / "out" / "synth-summary.md").read_text()
    assert "## cdk-nag findings" in summary and "## Cost ceiling" in summary, "the tables are in the file still"


@pytest.mark.cli
def test_cdk_diff_without_credentials_is_quiet_and_says_how_to_compare_offline(tmp_path):
    """The JumpStart example adds info annotations (its lock entry comes from a fixture): the CLI no longer lists
    them as findings to acknowledge under a jsii kernel location; the library's own note lines stay."""
    result = _cdk(tmp_path, "diff", "-c", "config=config/examples/eagle-jumpstart.yaml")
    log = result.stdout + result.stderr
    assert result.returncode != 0, "no credentials: the CLI cannot read the deployed stacks"
    assert log.count(OFFLINE_DIFF_HINT) == 1, log[-3000:]
    for text in TABLES + NOISE:
        assert text not in log, f"{text!r} in the log:\n{log[-3000:]}"
    assert "note: EagleJumpStart/Chat/gpt-oss-20b: JumpStart lock entry" in log
    assert {"synth", "synthesize"} == synth_output.SUMMARY_COMMANDS
