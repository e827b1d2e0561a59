"""stacks/checks.py: AwsSolutions fails the synth; the extra cdk-nag packs only warn."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, RemovalPolicy, Stack, Validations
from aws_cdk import aws_logs as logs
from cdk_nag import NIST80053R5Checks

from stacks.checks import WARNING_PACKS, attach_checks


def app_with_a_log_group(out: Path) -> App:
    """A log group AwsSolutions accepts and NIST 800-53 R5 does not (no KMS key)."""
    app = App(outdir=str(out))
    logs.LogGroup(Stack(app, "Logs"), "Group", retention=logs.RetentionDays.ONE_YEAR,
                  removal_policy=RemovalPolicy.RETAIN)
    return app


def test_extra_packs_report_warnings_and_never_fail_the_synth(tmp_path: Path) -> None:
    app = app_with_a_log_group(tmp_path)
    attach_checks(app, extra_packs=["nist-800-53-r5", "serverless"])
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    violations = [(plugin["pluginName"], v["ruleName"], v["severity"])
                  for plugin in report["pluginReports"] for v in plugin["violations"]]
    assert ("NIST.800.53.R5", "NIST.800.53.R5-CloudWatchLogGroupEncrypted", "warning") in violations
    assert {severity for _, _, severity in violations} == {"warning"}


def test_the_same_pack_unwrapped_fails_the_synth(tmp_path: Path) -> None:
    """Why the wrapper exists: CDK fails the synth on any finding of a plain cdk-nag 3 pack."""
    app = app_with_a_log_group(tmp_path)
    Validations.of(app).add_plugins(NIST80053R5Checks(app))
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()


def test_unknown_pack_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown cdk-nag pack"):
        attach_checks(App(), extra_packs=["hipaa"])
    assert sorted(WARNING_PACKS) == ["nist-800-53-r5", "serverless"]
