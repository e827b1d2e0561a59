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
    logs.LogGroup(
        Stack(app, "Logs"), "Group", retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.RETAIN
    )
    return app


def test_extra_packs_report_warnings_and_never_fail_the_synth(tmp_path: Path) -> None:
    app = app_with_a_log_group(tmp_path)
    attach_checks(app, extra_packs=["nist-800-53-r5", "serverless"])
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    violations = [
        (plugin["pluginName"], v["ruleName"], v["severity"])
        for plugin in report["pluginReports"]
        for v in plugin["violations"]
    ]
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


# ------------------------------------------------------------------ the synth log and the PR summary (report_checks)
from aws_cdk import Acknowledgment  # noqa: E402
from aws_cdk import aws_iam as iam  # noqa: E402

from stacks.checks import (  # noqa: E402
    FAIL_SYNTH_CONTEXT,
    FINDINGS_JSON,
    FINDINGS_MD,
    SUMMARY_MD,
    VALIDATION_REPORT,
    report_checks,
    tally_findings,
)


def app_reporting_itself(out: Path, *, wildcard: bool = False) -> App:
    """As app.py builds it: the app, not CDK, reports the checks. Two log groups (NIST flags both), one of them
    acknowledged; with ``wildcard`` a role allowed s3:* on one bucket that nobody acknowledged (AwsSolutions fails)."""
    app = App(outdir=str(out), context={FAIL_SYNTH_CONTEXT: False})
    stack = Stack(app, "Logs")
    for name in ("Kept", "Acknowledged"):
        logs.LogGroup(stack, name, retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.RETAIN)
    Validations.of(stack.node.find_child("Acknowledged")).acknowledge(
        Acknowledgment(
            id="NIST.800.53.R5::NIST.800.53.R5-CloudWatchLogGroupEncrypted", reason="test: logs hold no data"
        )
    )
    if wildcard:
        role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        role.add_to_policy(iam.PolicyStatement(actions=["s3:*"], resources=["arn:aws:s3:::my-bucket/*"]))
    attach_checks(app, extra_packs=["nist-800-53-r5"])
    return app


def test_report_checks_writes_one_summary_the_findings_and_the_pr_summary_file(tmp_path: Path, capsys) -> None:
    assembly = app_reporting_itself(tmp_path / "out").synth()  # does not raise: the app reports
    status = report_checks(assembly.directory, cost_table="Cost ceiling: TABLE")
    assert status == 0
    log = capsys.readouterr().err
    assert "NIST.800.53.R5 NIST.800.53.R5-CloudWatchLogGroupEncrypted" in log
    (line,) = [row for row in log.splitlines() if "CloudWatchLogGroupEncrypted" in row]
    assert "open   1" in line and "acknowledged   1" in line and "open (warning)" in line
    assert len(log.splitlines()) < 30, "one line per rule, not one block per finding"

    folder = Path(assembly.directory)
    summary = (folder / SUMMARY_MD).read_text()  # what the PR check appends to $GITHUB_STEP_SUMMARY
    assert "| NIST.800.53.R5 | `NIST.800.53.R5-CloudWatchLogGroupEncrypted` | warning | 1 | 1 |" in summary
    assert "nothing fails the synth" in summary
    assert (
        summary.index("## cdk-nag findings") < summary.index("## Cost ceiling") < summary.index("Cost ceiling: TABLE")
    )

    findings = json.loads((folder / FINDINGS_JSON).read_text())  # the whole report, stack traces left out
    (nist,) = [p for p in findings["pluginReports"] if p["pluginName"] == "NIST.800.53.R5"]
    assert [
        c["constructPath"]
        for v in nist["violations"]
        for c in v["violatingConstructs"]
        if v["ruleName"].endswith("CloudWatchLogGroupEncrypted")
    ] == ["Logs/Kept/Resource"]
    assert [s["reason"] for s in nist["suppressedViolations"]] == ["test: logs hold no data"]
    assert "stackTraces" not in json.dumps(findings)
    markdown = (folder / FINDINGS_MD).read_text()
    assert "`Logs/Kept/Resource`" in markdown and "test: logs hold no data" in markdown
    # What CDK's CLI prints after the synth: only findings that fail (none here).
    left = json.loads((folder / VALIDATION_REPORT).read_text())
    assert [v for p in left["pluginReports"] for v in p["violations"]] == []


def test_report_checks_fails_on_an_unacknowledged_error_and_prints_it_in_full(tmp_path: Path, capsys) -> None:
    assembly = app_reporting_itself(tmp_path / "out", wildcard=True).synth()
    assert report_checks(assembly.directory) == 1
    log = capsys.readouterr().err
    assert "AwsSolutions AwsSolutions-IAM5" in log and "FAILS the synth" in log
    assert "[AwsSolutions] AwsSolutions-IAM5[Action::s3:*]: Logs/Role/DefaultPolicy/Resource" in log
    assert "beside the grant that causes it (grants.grant(..., reason=...)" in log
    assert "acknowledge as: AwsSolutions::AwsSolutions-IAM5[Action::s3:*] (with its reason)" in log
    summary = (Path(assembly.directory) / SUMMARY_MD).read_text()
    # The policy guard refuses the same statement (s3:* that no acknowledgement names), and nothing can acknowledge it.
    assert "**2 rule(s) fail the synth**" in summary and "| AwsSolutions | `AwsSolutions-IAM5` | **error** |" in summary
    assert "| SageMakerLlmPolicyGuard | `UnacknowledgedWildcard` | **fatal** |" in summary
    assert "allows ['s3:*'] on 'arn:aws:s3:::my-bucket/*'" in log and "cannot be acknowledged: change the policy" in log
    left = json.loads((Path(assembly.directory) / VALIDATION_REPORT).read_text())
    assert {v["severity"] for p in left["pluginReports"] for v in p["violations"]} == {"error", "fatal"}


def test_report_checks_refuses_an_assembly_without_a_validation_report(tmp_path: Path, capsys) -> None:
    assert report_checks(tmp_path) == 1
    assert "was not written" in capsys.readouterr().err


def test_tally_counts_granular_findings_under_their_rule() -> None:
    report = {
        "pluginReports": [
            {
                "pluginName": "AwsSolutions",
                "violations": [
                    {
                        "ruleName": "AwsSolutions-IAM5[Action::s3:*]",
                        "severity": "error",
                        "violatingConstructs": [{}, {}],
                    }
                ],
                "suppressedViolations": [
                    {"ruleName": "AwsSolutions-IAM5[Resource::*]", "severity": "error", "violatingConstructs": [{}]}
                ],
            }
        ]
    }
    (tally,) = tally_findings(report)
    assert (tally.pack, tally.rule, tally.severity, tally.open, tally.acknowledged, tally.fails) == (
        "AwsSolutions",
        "AwsSolutions-IAM5",
        "error",
        2,
        1,
        True,
    )


def test_the_headline_says_how_many_open_findings_fail_the_synth():
    from stacks.checks import RuleTally, open_counts, summary_text

    tallies = [
        RuleTally("AwsSolutions", "AwsSolutions-IAM5", "error", 2, 1),
        RuleTally("HIPAA.Security", "HIPAA.Security-X", "warning", 136, 0),
    ]
    assert open_counts(tallies) == "138 open (2 fail the synth, 136 warnings), 1 acknowledged"
    assert summary_text(tallies).splitlines()[0] == (
        "cdk-nag findings per rule (138 open (2 fail the synth, 136 warnings), 1 acknowledged):"
    )
    warnings_only = [RuleTally("HIPAA.Security", "HIPAA.Security-X", "warning", 138, 0)]
    assert open_counts(warnings_only) == "138 open (0 fail the synth, 138 warnings), 0 acknowledged"


# ------------------------------------------------------- the warning packs when the app reports (no jsii read-back)
from stacks.checks import WARNING_PACK_PLUGINS, as_warnings  # noqa: E402

pytestmark = pytest.mark.synth


def test_each_warning_pack_plugin_name_is_the_packs_own_name() -> None:
    app = App()
    assert {key: pack(app).name for key, pack in WARNING_PACKS.items()} == dict(WARNING_PACK_PLUGINS)


def test_an_app_that_reports_gets_the_packs_unwrapped_and_report_checks_makes_their_findings_warnings(
    tmp_path: Path, capsys
) -> None:
    app = app_reporting_itself(tmp_path / "out")
    assembly = app.synth()
    folder = Path(assembly.directory)
    raw = json.loads((folder / VALIDATION_REPORT).read_text())  # as CDK wrote it: the pack's own severities
    (nist,) = [p for p in raw["pluginReports"] if p["pluginName"] == "NIST.800.53.R5"]
    assert nist["conclusion"] == "failure"
    assert "error" in {v["severity"] for v in nist["violations"]}

    assert report_checks(assembly.directory) == 0  # the pack's errors are warnings: nothing fails
    assert "open (warning)" in capsys.readouterr().err
    findings = json.loads((folder / FINDINGS_JSON).read_text())
    (nist,) = [p for p in findings["pluginReports"] if p["pluginName"] == "NIST.800.53.R5"]
    assert nist["conclusion"] == "success"
    assert {v["severity"] for v in nist["violations"] + nist["suppressedViolations"]} == {"warning"}
    assert "### NIST.800.53.R5-CloudWatchLogGroupEncrypted (warning)" in (folder / FINDINGS_MD).read_text()


def test_an_app_that_does_not_report_gets_the_packs_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """CDK reads the context as false when it is False or "false": only then does report_checks run the show."""
    original = Validations.add_plugins
    for context, wrapped in (
        ({}, True),
        ({FAIL_SYNTH_CONTEXT: True}, True),
        ({FAIL_SYNTH_CONTEXT: False}, False),
        ({FAIL_SYNTH_CONTEXT: "false"}, False),
    ):
        added: list[object] = []
        monkeypatch.setattr(
            Validations,
            "add_plugins",
            lambda self, *plugins, _added=added: (_added.extend(plugins), original(self, *plugins))[1],
        )
        attach_checks(App(context=context), extra_packs=["serverless"])
        assert [type(p).__name__ for p in added] == [
            "AwsSolutionsChecks",
            "WarningsOnly" if wrapped else "ServerlessChecks",
            "PolicyGuard",
        ]


def test_as_warnings_turns_only_the_warning_packs_findings_into_warnings() -> None:
    report = {
        "pluginReports": [
            {
                "pluginName": "AwsSolutions",
                "conclusion": "failure",
                "violations": [{"ruleName": "AwsSolutions-IAM5", "severity": "error", "violatingConstructs": [{}]}],
            },
            {
                "pluginName": "NIST.800.53.R5",
                "conclusion": "failure",
                "violations": [{"ruleName": "NIST.800.53.R5-X", "severity": "error", "description": "d"}],
                "suppressedViolations": [{"ruleName": "NIST.800.53.R5-Y", "severity": "error", "reason": "r"}],
            },
            # A pack that threw: CDK reports a failure without findings; it still fails the synth.
            {
                "pluginName": "Serverless",
                "conclusion": "failure",
                "violations": [],
                "metadata": {"error": "Validation plugin 'Serverless' failed: boom"},
            },
        ]
    }
    aws, nist, serverless = as_warnings(report)["pluginReports"]
    assert aws == report["pluginReports"][0]
    assert nist == {
        "pluginName": "NIST.800.53.R5",
        "conclusion": "success",
        "violations": [{"ruleName": "NIST.800.53.R5-X", "severity": "warning", "description": "d"}],
        "suppressedViolations": [{"ruleName": "NIST.800.53.R5-Y", "severity": "warning", "reason": "r"}],
    }
    assert serverless["conclusion"] == "failure"
    assert report["pluginReports"][1]["violations"][0]["severity"] == "error", "the input is left as it was"
    assert [t.severity for t in tally_findings(as_warnings(report))] == ["error", "warning", "warning"]


def test_report_checks_fails_when_a_warning_pack_could_not_run(tmp_path: Path, capsys) -> None:
    report = {
        "pluginReports": [
            {
                "pluginName": "Serverless",
                "conclusion": "failure",
                "violations": [],
                "metadata": {"error": "Validation plugin 'Serverless' failed: boom"},
            }
        ]
    }
    (tmp_path / VALIDATION_REPORT).write_text(json.dumps(report))
    assert report_checks(tmp_path) == 1
    assert "(Serverless)" in capsys.readouterr().err
