"""cfn-lint over a cloud assembly: agnostic stacks for every target region, bound stacks for their own region."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, CfnResource, Environment, NestedStack, Stack

from tools.lint_templates import DEFAULT_REGIONS, bound_regions, lint_folder

pytestmark = pytest.mark.synth

EVERY_TARGET_BUT_US_WEST_1 = "AWS::AppRunner::ObservabilityConfiguration"
"""A resource type cfn-lint's schemas have in all of DEFAULT_REGIONS but not in us-west-1."""
US_EAST_1_ONLY = "AWS::B2BI::Profile"
"""A resource type of us-east-1 that ap-northeast-1 (one of DEFAULT_REGIONS) does not have."""


def assembly(tmp_path: Path, placements: dict[str, tuple[str | None, str, bool]]) -> Path:
    """Synthesize one stack per entry: name -> (region or None for agnostic, resource type, in a nested stack?)."""
    app = App(outdir=str(tmp_path / "out"))
    for name, (region, kind, nested) in placements.items():
        stack = Stack(app, name, env=Environment(account="123456789012", region=region) if region else None)
        scope = NestedStack(stack, "Inner") if nested else stack
        props = (
            {"Name": "p", "Phone": "5550100100", "BusinessName": "b", "Logging": "ENABLED"}
            if kind == US_EAST_1_ONLY
            else {}
        )
        CfnResource(scope, "Thing", type=kind, properties=props)
    app.synth()
    return tmp_path / "out"


def test_the_region_of_each_bound_template_and_of_its_nested_stacks(tmp_path):
    out = assembly(
        tmp_path, {"Anywhere": (None, "AWS::SNS::Topic", False), "West": ("us-west-1", "AWS::SNS::Topic", True)}
    )
    regions = {path.name: region for path, region in bound_regions(out).items()}
    (nested,) = [name for name in regions if name.endswith(".nested.template.json")]
    assert regions == {"West.template.json": "us-west-1", nested: "us-west-1"}


def test_a_bound_stack_is_linted_for_its_own_region_only(tmp_path, capsys):
    """Bound to us-west-1, a type us-west-1 lacks is an error, though every target region has it (and in a nested
    stack too); bound to us-east-1, a type only us-east-1 has is fine, though a target region lacks it."""
    bad = assembly(
        tmp_path / "bad",
        {
            "West": ("us-west-1", EVERY_TARGET_BUT_US_WEST_1, False),
            "WestNested": ("us-west-1", EVERY_TARGET_BUT_US_WEST_1, True),
        },
    )
    assert lint_folder(bad) == 1
    printed = capsys.readouterr().out
    assert printed.count("E3006") == 2, printed
    assert (
        "3 template(s) (0 for " + ", ".join(DEFAULT_REGIONS) + "; 3 bound, each for its own region), 2 error(s)"
        in printed
    )

    good = assembly(
        tmp_path / "good",
        {"East": ("us-east-1", US_EAST_1_ONLY, False), "Anywhere": (None, EVERY_TARGET_BUT_US_WEST_1, False)},
    )
    assert lint_folder(good) == 0, capsys.readouterr().out


def test_an_agnostic_stack_is_linted_for_every_target_region(tmp_path, capsys):
    out = assembly(tmp_path, {"Anywhere": (None, US_EAST_1_ONLY, False)})
    assert lint_folder(out) == 1
    printed = capsys.readouterr().out
    assert "E3006" in printed and "ap-northeast-1" in printed


@pytest.mark.parametrize("text", ["", "{", json.dumps({"artifacts": {"S": {"type": "aws:cloudformation:stack"}}})])
def test_a_manifest_that_is_not_a_cloud_assembly_binds_nothing(tmp_path, text):
    (tmp_path / "manifest.json").write_text(text)
    assert bound_regions(tmp_path) == {}


def test_a_template_that_is_not_json_is_an_error_with_its_line_not_a_traceback(tmp_path, capsys):
    (tmp_path / "Broken.template.json").write_text('{"Resources": {\n  "A": \n')
    assert lint_folder(tmp_path) == 1
    printed = capsys.readouterr().out
    assert "ERROR   Broken.template.json: E0000 line " in printed and "1 error(s)" in printed, printed


def test_only_the_jumpstart_deploy_refusal_may_always_fail(tmp_path, capsys):
    """W8003 (an assertion that is always false) is the point of the rule that refuses a deploy of a JumpStart lock
    entry not read from JumpStart; the same finding on any other rule is still reported."""
    from aws_cdk import CfnRule, CfnRuleAssertion, Fn

    app = App(outdir=str(tmp_path / "out"))
    stack = Stack(app, "S")
    CfnResource(stack, "Thing", type="AWS::SNS::Topic")
    CfnRule(
        stack,
        "JumpStartLockNotFromJumpStartM100",
        assertions=[
            CfnRuleAssertion(assert_=Fn.condition_equals("fixture", "jumpstart"), assert_description="refused")
        ],
    )
    app.synth()
    assert lint_folder(tmp_path / "out", ("us-east-1",)) == 0
    assert "0 warning(s)" in capsys.readouterr().out
    app2 = App(outdir=str(tmp_path / "out2"))
    other = Stack(app2, "S")
    CfnResource(other, "Thing", type="AWS::SNS::Topic")
    CfnRule(
        other,
        "SomethingElse",
        assertions=[CfnRuleAssertion(assert_=Fn.condition_equals("a", "b"), assert_description="a mistake")],
    )
    app2.synth()
    lint_folder(tmp_path / "out2", ("us-east-1",))
    assert "W8003 Rules/SomethingElse" in capsys.readouterr().out
