"""tools/run_checkov.py and the library's checkov acknowledgements (checkov_skip / checkov_defaults)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, RemovalPolicy, Stack
from aws_cdk import aws_logs as logs
from sagemaker_llm_cdk import EndpointOptions, LlmEndpoint, ModelSpec
from sagemaker_llm_cdk.core.checkov import CHECKOV_REASONS, checkov_defaults, checkov_skip

from tools import run_checkov
from tools.run_checkov import CheckovError, Result, check_folder, find_checkov

pytestmark = pytest.mark.synth

try:
    CHECKOV = find_checkov()
except CheckovError as missing:  # `make setup` installs it into .venv/checkov
    pytest.skip(str(missing), allow_module_level=True)

REASON = "Handler logs hold only names and counts; CloudWatch Logs encrypts them at rest."


def log_group_stack(tmp: Path, name: str, *, skip: str | None) -> Path:
    """A stack with one log group (kept a year, not KMS-encrypted: checkov's CKV_AWS_158), synthesized."""
    app = App(outdir=str(tmp / name))
    stack = Stack(app, name)
    group = logs.LogGroup(stack, "Logs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.RETAIN)
    if skip is not None:
        checkov_skip(group, "CKV_AWS_158", skip)
    app.synth()
    return tmp / name / f"{name}.template.json"


def without_comment(template: Path, out: Path) -> Path:
    """``template`` with its checkov skips' comments removed."""
    body = json.loads(template.read_text())
    for resource in body["Resources"].values():
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
            skip.pop("comment")
    out.write_text(json.dumps(body))
    return out


def without_skips(template: Path, out: Path) -> Path:
    body = json.loads(template.read_text())
    for resource in body["Resources"].values():
        resource.get("Metadata", {}).pop("checkov", None)
    out.write_text(json.dumps(body))
    return out


def endpoint_stack(tmp: Path) -> Path:
    """The library's endpoint and one model, with checkov_defaults."""
    app = App(outdir=str(tmp / "endpoint"))
    stack = Stack(app, "Endpoint")
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-weights/qwen3-8b/"))
    checkov_defaults(app)
    app.synth()
    return tmp / "endpoint" / "Endpoint.template.json"


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("checkov")
    justified = log_group_stack(tmp, "Justified", skip=REASON)
    plain = tmp / "plain"
    plain.mkdir()
    library = endpoint_stack(tmp)
    return {
        "justified": justified,
        "unjustified": log_group_stack(tmp, "Unjustified", skip=None),
        "no-comment": without_comment(justified, plain / "NoComment.template.json"),
        "library": library,
        "library-without-skips": without_skips(library, plain / "LibraryWithoutSkips.template.json"),
    }


@pytest.fixture(scope="module")
def results(templates: dict[str, Path]) -> dict[str, Result]:
    """One checkov run over every template, split per template."""
    combined = run_checkov.run_checkov(list(templates.values()), checkov=CHECKOV)
    out = {}
    for name, path in templates.items():
        mine = [f for f in combined.failed if f.template == path.name]
        skipped = [s for s in combined.skipped if s.template == path.name]
        out[name] = Result(1, combined.version, 0, mine, skipped, [])
    return out


def test_a_finding_skipped_with_a_reason_passes(results: dict[str, Result]) -> None:
    result = results["justified"]
    assert result.ok
    assert [(s.check_id, s.comment) for s in result.skipped] == [("CKV_AWS_158", REASON)]


def test_a_finding_without_a_skip_fails(results: dict[str, Result]) -> None:
    result = results["unjustified"]
    assert not result.ok
    assert [f.check_id for f in result.failed] == ["CKV_AWS_158"]
    assert "FAILED  CKV_AWS_158 Unjustified.template.json: AWS::Logs::LogGroup." in "\n".join(
        run_checkov.summary_lines(result)
    )


def test_a_skip_without_a_comment_fails(results: dict[str, Result]) -> None:
    result = results["no-comment"]
    assert not result.failed and not result.ok
    assert [s.check_id for s in result.unexplained_skips] == ["CKV_AWS_158"]
    assert "skipped without a reason" in "\n".join(run_checkov.summary_lines(result))


def test_the_librarys_defaults_acknowledge_every_finding_of_an_endpoint_with_its_reason(
    results: dict[str, Result],
) -> None:
    assert results["library"].ok, run_checkov.summary_lines(results["library"])
    skipped = {(s.check_id, s.comment) for s in results["library"].skipped}
    assert skipped and all(comment == CHECKOV_REASONS[check] for check, comment in skipped)
    # Without them the same template fails on exactly those checks.
    assert {f.check_id for f in results["library-without-skips"].failed} == {check for check, _ in skipped}


def test_exit_status(templates: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_folder(templates["justified"].parent, checkov=CHECKOV, raw_json=tmp_path / "checkov.json") == 0
    assert json.loads((tmp_path / "checkov.json").read_text())
    assert "0 failed, 1 skipped (0 without a reason)" in capsys.readouterr().out
    assert check_folder(tmp_path / "empty", checkov=CHECKOV) == 2


# ------------------------------------------------------------------ checkov_skip (no checkov run)


def skips_of(resource: Any) -> list[dict[str, str]]:
    return list((resource.get_metadata("checkov") or {}).get("skip", []))


def test_checkov_skip_merges_without_duplicates() -> None:
    stack = Stack(App(), "S")
    group = logs.LogGroup(stack, "Logs", retention=logs.RetentionDays.ONE_YEAR)
    checkov_skip(group, "CKV_AWS_158", "first reason")
    checkov_skip(group.node.default_child, "CKV_AWS_66", "another check")  # type: ignore[arg-type]
    checkov_skip(group, "CKV_AWS_158", "second reason")
    assert skips_of(group.node.default_child) == [
        {"id": "CKV_AWS_158", "comment": "first reason"},
        {"id": "CKV_AWS_66", "comment": "another check"},
    ]


def test_checkov_skip_needs_a_comment_and_a_resource() -> None:
    stack = Stack(App(), "S")
    group = logs.LogGroup(stack, "Logs", retention=logs.RetentionDays.ONE_YEAR)
    with pytest.raises(ValueError, match="needs a check id and a comment"):
        checkov_skip(group, "CKV_AWS_158", " ")
    with pytest.raises(TypeError, match="not a CfnResource"):
        checkov_skip(stack, "CKV_AWS_158", "reason")


def test_checkov_defaults_leave_your_own_resources_alone(tmp_path: Path) -> None:
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Mine")
    logs.LogGroup(stack, "MyLogs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.RETAIN)
    checkov_defaults(app)
    app.synth()
    body = json.loads((tmp_path / "Mine.template.json").read_text())
    assert all("checkov" not in r.get("Metadata", {}) for r in body["Resources"].values())


def test_templates_in_walks_stage_assemblies_and_skips_assets(tmp_path: Path) -> None:
    """A pipeline's cdk.out holds each stage in an assembly-* folder (nested stacks included); all are checked."""
    for relative in (
        "Pipeline.template.json",
        "assembly-Pipeline-Dev/DevStack.template.json",
        "assembly-Pipeline-Dev/DevStackAdapters.nested.template.json",
        "assembly-Pipeline-Prod/assembly-Inner/Deep.template.json",
        "asset.0123/Ignored.template.json",
        "assembly-Pipeline-Dev/asset.4567/Ignored.template.json",
    ):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("{}")
    assert [p.relative_to(tmp_path).as_posix() for p in run_checkov.templates_in(tmp_path)] == [
        "Pipeline.template.json",
        "assembly-Pipeline-Dev/DevStack.template.json",
        "assembly-Pipeline-Dev/DevStackAdapters.nested.template.json",
        "assembly-Pipeline-Prod/assembly-Inner/Deep.template.json",
    ]


def test_your_function_inside_a_library_construct_gets_no_library_skip(tmp_path: Path) -> None:
    """The library's skips go to what it made: a function you add inside its endpoint is judged as it is."""
    from aws_cdk import aws_lambda as lambda_

    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Mine")
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-weights/qwen3-8b/"))
    from aws_cdk import aws_iam as iam

    role = iam.Role(stack, "MyRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))  # no managed policy
    mine = lambda_.Function(
        endpoint,
        "MyFunction",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
        role=role,
    )
    checkov_defaults(app)
    app.synth()
    body = json.loads((tmp_path / "Mine.template.json").read_text())
    logical_id = stack.resolve(mine.node.default_child.logical_id)  # type: ignore[union-attr]
    assert "checkov" not in body["Resources"][logical_id].get("Metadata", {})
    library_functions = [
        r
        for r in body["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function" and r is not body["Resources"][logical_id]
    ]
    for function in library_functions:  # the library's own functions keep theirs, each with its reason
        skips = {s["id"]: s["comment"] for s in function["Metadata"]["checkov"]["skip"]}
        assert skips["CKV_AWS_115"] == CHECKOV_REASONS["CKV_AWS_115"]
