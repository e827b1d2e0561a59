"""tools/cfn_guard.py: AWS's Guard rules registry over every shipped template, each failure with a reviewed reason.

The reasons logic runs on hand-made templates (no synth, a cfn-guard run of a second or less); the last test
synthesizes every shipped config and example and checks them against tools/guard/reasons.yaml, as `make guard` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import cfn_guard
from tools.cfn_guard import Failure, GuardError, Reason, judge, load_reasons

try:
    BINARY = cfn_guard.find_cfn_guard()
except GuardError as missing:  # `make setup` installs cdklabs-cdk-validator-cfnguard from requirements-dev.txt
    pytest.skip(str(missing), allow_module_level=True)

REASON = "Functions here call only AWS APIs and hold no data."
NO_VPC = "LAMBDA_INSIDE_VPC"


def function(**properties: object) -> dict[str, object]:
    return {"Type": "AWS::Lambda::Function", "Properties": {"Role": "arn:aws:iam::123456789012:role/r", **properties}}


def bucket_policy(secure_transport: object) -> dict[str, object]:
    statement = {
        "Effect": "Deny",
        "Action": "s3:*",
        "Principal": {"AWS": "*"},
        "Resource": "arn:aws:s3:::b/*",
        "Condition": {"Bool": {"aws:SecureTransport": secure_transport}},
    }
    return {
        "Type": "AWS::S3::BucketPolicy",
        "Properties": {"Bucket": "b", "PolicyDocument": {"Version": "2012-10-17", "Statement": [statement]}},
    }


def assembly(folder: Path, resources: dict[str, dict[str, object]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Stack.template.json").write_text(json.dumps({"Resources": resources}), encoding="utf-8")
    (folder / "asset.0123").mkdir(exist_ok=True)  # an asset folder's files are no templates
    (folder / "asset.0123" / "Ignored.template.json").write_text("{}", encoding="utf-8")
    return folder


def reasons_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "reasons.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def failures(tmp_path_factory: pytest.TempPathFactory) -> list[Failure]:
    """One cfn-guard run over a function outside a VPC and the two forms of a TLS-only bucket policy."""
    folder = assembly(
        tmp_path_factory.mktemp("guard") / "app",
        {"Fn": function(), "AsString": bucket_policy("false")},
    )
    report = cfn_guard.run_guard(cfn_guard.templates_in(folder), binary=BINARY)
    return cfn_guard.failures_of(report, {str(folder / "Stack.template.json"): "app/Stack.template.json"})


def test_a_failure_names_its_rule_template_resource_and_type(failures: list[Failure]) -> None:
    assert Failure(NO_VPC, "app/Stack.template.json", "Fn", "AWS::Lambda::Function") in failures
    assert not [f for f in failures if f.template != "app/Stack.template.json"]


def test_the_tls_rule_fails_the_string_false_cdk_writes(failures: list[Failure], tmp_path: Path) -> None:
    """The false positive reasons.yaml explains: the rule compares aws:SecureTransport with the boolean false."""
    assert Failure("S3_BUCKET_SSL_REQUESTS_ONLY", "app/Stack.template.json") in failures
    folder = assembly(tmp_path / "boolean", {"AsBoolean": bucket_policy(False)})
    report = cfn_guard.run_guard(cfn_guard.templates_in(folder), binary=BINARY)
    assert not [f for f in cfn_guard.failures_of(report) if f.rule == "S3_BUCKET_SSL_REQUESTS_ONLY"]


def test_an_unreasoned_failure_fails_with_one_line_each(failures: list[Failure]) -> None:
    verdict = judge(failures, {}, 1)
    assert not verdict.ok and set(verdict.unreasoned) == set(failures)
    lines = cfn_guard.summary_lines(verdict)
    assert (
        "FAILED  LAMBDA_INSIDE_VPC app/Stack.template.json: Fn (AWS::Lambda::Function): "
        "no reason in tools/guard/reasons.yaml covers it"
    ) in lines
    assert "To pass: fix the resource, or add the rule with a reason" in lines[-2]


def test_a_reason_covers_only_the_types_and_resources_it_names(failures: list[Failure]) -> None:
    vpc = [f for f in failures if f.rule == NO_VPC]
    assert judge(vpc, {NO_VPC: Reason(NO_VPC, REASON, ("AWS::Lambda::Function",))}).ok
    other_type = judge(vpc, {NO_VPC: Reason(NO_VPC, REASON, ("AWS::S3::Bucket",))})
    assert other_type.unreasoned == vpc
    assert other_type.stale == ["LAMBDA_INSIDE_VPC: no AWS::S3::Bucket fails it now"]
    other_id = judge(vpc, {NO_VPC: Reason(NO_VPC, REASON, ("AWS::Lambda::Function",), cfn_guard.re.compile("Other.*"))})
    assert other_id.unreasoned == vpc


def test_a_reason_that_no_longer_fails_is_stale(failures: list[Failure]) -> None:
    vpc = [f for f in failures if f.rule == NO_VPC]
    reasons = {
        NO_VPC: Reason(NO_VPC, REASON, ("AWS::Lambda::Function", "AWS::Lambda::Url")),
        "LAMBDA_DLQ_CHECK": Reason("LAMBDA_DLQ_CHECK", REASON, ("AWS::Lambda::Function",)),
    }
    verdict = judge(vpc, reasons, 1)
    assert not verdict.ok and not verdict.unreasoned
    assert verdict.stale == [
        "LAMBDA_DLQ_CHECK: it fails nowhere now",
        "LAMBDA_INSIDE_VPC: no AWS::Lambda::Url fails it now",
    ]
    assert "STALE   reason LAMBDA_DLQ_CHECK: it fails nowhere now; remove it from tools/guard/reasons.yaml" in (
        cfn_guard.summary_lines(verdict)
    )


def test_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CFN_GUARD", str(BINARY))
    folder = assembly(tmp_path / "app", {"Fn": function()})
    covered = f"{NO_VPC}: {{reason: {REASON}, types: [AWS::Lambda::Function]}}\n"
    for rule in ("LAMBDA_DLQ_CHECK", "LAMBDA_CONCURRENCY_CHECK"):
        covered += f"{rule}: {{reason: {REASON}, types: [AWS::Lambda::Function]}}\n"
    assert cfn_guard.main([str(folder), "--reasons", str(reasons_file(tmp_path, covered))]) == 0
    assert "0 without one, 0 stale reason(s)" in capsys.readouterr().out
    assert cfn_guard.main([str(folder), "--reasons", str(reasons_file(tmp_path, "{}"))]) == 1
    assert cfn_guard.main([str(tmp_path / "empty"), "--reasons", str(reasons_file(tmp_path, "{}"))]) == 2
    assert "no templates in" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("- a list", "must map rule names to"),
        ("NOT_A_RULE: {reason: a b c d e, types: [AWS::S3::Bucket]}", "'NOT_A_RULE' is no rule of the vendored"),
        (f"{NO_VPC}: {{reason: {REASON}, types: [AWS::Lambda::Function], why: x}}", r"\['why'\] is not allowed"),
        (f"{NO_VPC}: just a string", "'just a string' is not allowed"),
        (f"{NO_VPC}: {{reason: n/a, types: [AWS::Lambda::Function]}}", r"LAMBDA_INSIDE_VPC.reason is 'n/a': give a"),
        (f"{NO_VPC}: {{reason: {REASON}}}", r"LAMBDA_INSIDE_VPC.types is None: list the CloudFormation resource"),
        (f"{NO_VPC}: {{reason: {REASON}, types: [Lambda]}}", r"types is \['Lambda'\]: list the CloudFormation"),
        (f"{NO_VPC}: {{reason: {REASON}, types: [AWS::Lambda::Function], resources: '('}}", r"resources is '\('"),
        ("{unclosed", "cannot read the reasons file"),
    ],
)
def test_a_malformed_reasons_file_is_refused(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(GuardError, match=match):
        load_reasons(reasons_file(tmp_path, text), known=cfn_guard.rule_names())


def test_the_binary_is_found_through_the_package_and_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CFN_GUARD", raising=False)
    binary = cfn_guard.find_cfn_guard(tmp_path)
    assert binary.is_file() and binary.parent.name.startswith("cfn-guard-0.0.")
    assert cfn_guard.find_cfn_guard(tmp_path) == binary
    monkeypatch.setenv("CFN_GUARD", str(tmp_path / "missing"))
    with pytest.raises(GuardError, match=r"CFN_GUARD='.*missing' is not a file: point it at a cfn-guard binary"):
        cfn_guard.find_cfn_guard(tmp_path)


def test_the_vendored_registry_has_its_license_and_the_mappings_rules() -> None:
    registry = cfn_guard.RULES.parent
    assert (registry / "LICENSE").is_file() and (registry / "NOTICE").is_file()
    assert (registry / "COMMIT").read_text().strip()
    from tools.guard.vendor import MAPPINGS, rule_paths

    for name in MAPPINGS:
        mapping = json.loads((registry / "mappings" / name).read_text())
        assert all((registry / path).is_file() for path in rule_paths(mapping)), name


@pytest.mark.synth
def test_every_shipped_template_passes_or_has_a_reason(tmp_path: Path) -> None:
    """Every shipped config, pipeline file and example, against tools/guard/reasons.yaml (what `make guard` runs)."""
    folders = cfn_guard.synth_shipped(tmp_path)
    verdict = cfn_guard.check_folders(folders)
    assert verdict.ok, "\n".join(cfn_guard.summary_lines(verdict))
    assert verdict.templates >= len(folders)
