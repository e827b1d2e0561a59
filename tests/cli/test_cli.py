"""One real `cdk synth` through the CLI the project pins, as `make synth` runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.cli
def test_cdk_cli_synthesizes_the_default_app(tmp_path):
    cdk = ROOT / "node_modules" / ".bin" / "cdk"
    assert cdk.exists(), "the CDK CLI is not installed: run `make setup` (npm ci installs it from package.json)"
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(ROOT / "node_modules" / ".bin"), str(Path(sys.executable).parent), env["PATH"]])
    env["CDK_DISABLE_VERSION_CHECK"] = "1"
    env["CDK_CLI_TELEMETRY"] = "false"
    result = subprocess.run(
        [str(cdk), "synth", "--quiet", "--output", str(tmp_path / "out")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    stacks = [
        name for name, artifact in manifest["artifacts"].items() if artifact["type"] == "aws:cloudformation:stack"
    ]
    assert sorted(stacks) == ["SageMakerLlm", "SageMakerLlmEaglePromotion"]
    template = json.loads((tmp_path / "out" / "SageMakerLlm.template.json").read_text())
    assert any(r["Type"] == "AWS::SageMaker::InferenceComponent" for r in template["Resources"].values())
    # The log is one summary per cdk-nag pack and rule, not a block per finding; the PR summary file has the
    # findings table and the cost ceiling; every finding is in nag-findings.json.
    log = result.stdout + result.stderr
    assert "cdk-nag findings per rule" in log and "Acknowledge with" not in log
    assert len(log.splitlines()) < 80, log[-3000:]
    summary = (tmp_path / "out" / "synth-summary.md").read_text()
    assert "| AwsSolutions | `AwsSolutions-IAM5` | error | 0 |" in summary and "## Cost ceiling" in summary
    findings = json.loads((tmp_path / "out" / "nag-findings.json").read_text())
    assert sum(len(p.get("suppressedViolations", [])) for p in findings["pluginReports"]) > 10


@pytest.mark.cli
def test_a_consent_in_the_user_cdk_json_fails_the_synth(tmp_path):
    """The CLI merges ~/.cdk.json's context into CDK_CONTEXT_JSON like -c: the app refuses it by the file."""
    cdk = ROOT / "node_modules" / ".bin" / "cdk"
    home = tmp_path / "home"
    home.mkdir()
    (home / ".cdk.json").write_text(json.dumps({"context": {"purchase": "chat-p5e-2027q1"}}))
    env = dict(os.environ, HOME=str(home), CDK_DISABLE_VERSION_CHECK="1", CDK_CLI_TELEMETRY="false")
    env["PATH"] = os.pathsep.join([str(ROOT / "node_modules" / ".bin"), str(Path(sys.executable).parent), env["PATH"]])
    result = subprocess.run(
        [
            str(cdk),
            "synth",
            "--quiet",
            "--output",
            str(tmp_path / "out"),
            "-c",
            "config=config/examples/reserved-capacity.yaml",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode != 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (
        "~/.cdk.json context purchase: got 'chat-p5e-2027q1'; allowed: no consent to purchase in a file the CDK "
        "CLI reads on every deploy"
    ) in result.stderr, result.stderr[-3000:]
    assert f"where: {home / '.cdk.json'}" in result.stderr
    assert not list((tmp_path / "out").glob("*.template.json")), "nothing synthesized"
