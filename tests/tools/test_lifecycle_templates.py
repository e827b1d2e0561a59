"""The change report's lifecycle analysis at template level: the deploys that fail although each resource alone looks
fine, found from CloudFormation's order (every create first, the cleanup's deletes last) and named on the report's
first lines with the two-step way.

- a create-only change of a resource with a fixed name (CloudFormation cannot replace it): a budget whose
  notifications change;
- a name re-taken before cleanup: an endpoint renamed, whose components keep their ``<stack>-<model>`` names;
- the same across two stacks of one assembly, unless the taker deploys after the holder (a dependency).

Real assemblies come from the default config synthesized in this interpreter (``tools/assemblies.py``); what no
config can make (a fixed budget name, two stacks sharing a name) from hand-made ones (``write_assembly``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from support.assemblies import ROOT, config_data, synth_config, write_assembly

from tools.change_report import (
    BLOCKED_TITLE,
    Report,
    compare,
    load_assembly,
    redeploy,
    render_markdown,
    render_text,
)
from tools.update_catalogue import apply

pytestmark = pytest.mark.synth

DEFAULT = ROOT / "config" / "default.yaml"
BUDGET = {"max_usd_per_month": 200000, "email": "finance@example.com"}


def synth(folder: Path, edits: tuple[Any, ...] = ()) -> Path:
    synth_config(apply(config_data(DEFAULT), edits), DEFAULT.parent, folder)
    return folder


def fails(result: Report) -> list[Any]:
    return [h for h in result.headlines if h.category == "fails"]


def first_lines(result: Report) -> list[str]:
    """The text report's lines up to the first blank one: its title and the block that comes before the cost."""
    lines = render_text(result).splitlines()
    return lines[: lines.index("")]


@pytest.fixture(scope="module")
def default(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth(tmp_path_factory.mktemp("default") / "out")


# ------------------------------------------------------------------ (a) a fixed name that must be replaced
def budget(name: Any, email: str) -> dict[str, Any]:
    return {
        "Type": "AWS::Budgets::Budget",
        "Properties": {
            "Budget": {
                "BudgetName": name,
                "BudgetType": "COST",
                "TimeUnit": "MONTHLY",
                "BudgetLimit": {"Amount": 1000, "Unit": "USD"},
            },
            "NotificationsWithSubscribers": [
                {
                    "Notification": {
                        "ComparisonOperator": "GREATER_THAN",
                        "NotificationType": "ACTUAL",
                        "Threshold": 80,
                    },
                    "Subscribers": [{"Address": email, "SubscriptionType": "EMAIL"}],
                }
            ],
        },
    }


def test_a_fixed_name_budget_whose_notifications_change_is_flagged_first_with_the_two_step_way(tmp_path: Path) -> None:
    """``NotificationsWithSubscribers`` is create-only and the name sits in ``Budget.BudgetName``: CloudFormation
    would have to replace a resource whose name is fixed, and fails."""
    base = write_assembly(tmp_path / "base", {"Costs": {"Budget": budget("llm-monthly", "a@example.com")}})
    head = write_assembly(tmp_path / "head", {"Costs": {"Budget": budget("llm-monthly", "b@example.com")}})
    result = compare(load_assembly(base), load_assembly(head))
    (blocker,) = fails(result)
    assert (blocker.reason, blocker.resource_type) == ("fixed-name replacement", "AWS::Budgets::Budget")
    assert "NotificationsWithSubscribers" in blocker.text and '"llm-monthly"' in blocker.text
    assert "Two steps: deploy once with the name changed" in blocker.text
    lines = first_lines(result)
    assert lines[1] == f"!! {BLOCKED_TITLE}: 1 reason the deploy fails and rolls back:"
    assert "cannot replace a resource with a fixed name" in lines[2]
    markdown = render_markdown(result).splitlines()
    assert markdown[2].startswith(f"### ⛔ {BLOCKED_TITLE}") and "Two steps" in markdown[4]


def test_the_shipped_budget_takes_a_new_name_when_its_notifications_change(tmp_path: Path) -> None:
    """The library's budget name carries a digest of its create-only properties: the same change is a clean
    replacement, the new budget created under its new name before the old one goes in cleanup."""
    base = load_assembly(synth(tmp_path / "base", (("set", "budget", BUDGET),)))
    head = load_assembly(synth(tmp_path / "head", (("set", "budget", {**BUDGET, "email": "llm@example.com"}),)))
    result = compare(base, head)
    (change,) = [c for c in result.changes if c.resource_type == "AWS::Budgets::Budget"]
    assert change.replacement and not fails(result)
    names = [((r or {}).get("Properties") or {})["Budget"]["BudgetName"] for r in (change.base, change.head)]
    assert names[0] != names[1]
    (outcome,) = [o for o in result.outcomes if o.resource_type == "AWS::Budgets::Budget"]
    assert outcome.step == "replaced: created anew first, the old one deleted in cleanup"
    assert render_text(result).splitlines()[1] == ""


# ------------------------------------------------------------------ (b) a name re-taken before cleanup
def test_an_endpoint_rename_is_flagged_on_the_first_lines(default: Path, tmp_path: Path) -> None:
    """The renamed endpoint's components (and its adapters') are created while the old endpoint's still hold
    their names, after a whole new endpoint was provisioned: the report opens with that and the way to do it."""
    head = synth(tmp_path / "renamed", (("set", "endpoints[0].name", "Assistant"),))
    result = compare(load_assembly(default), load_assembly(head))
    blockers = fails(result)
    assert {b.resource_type for b in blockers} == {"AWS::SageMaker::InferenceComponent"}, [b.text for b in blockers]
    assert {b.reason for b in blockers} == {"name re-taken before cleanup"}
    names = {b.text.split('"')[1] for b in blockers}
    assert names == {
        "SageMakerLlm-qwen3-32b",
        "SageMakerLlm-qwen3-32b-lora",
        "SageMakerLlm-qwen3-32b-support",
        "SageMakerLlm-qwen3-32b-sql",
    }
    lines = first_lines(result)
    assert lines[1] == f"!! {BLOCKED_TITLE}: 4 reasons the deploy fails and rolls back:"
    for line in lines[2:]:
        assert line.startswith("  !! ") and "CreateInferenceComponent fails" in line
        assert "after the new endpoint Assistant" in line and "deploy once with the old endpoint removed" in line
    text = render_text(result)
    assert text.index(BLOCKED_TITLE) < text.index("Cost per 30 days") < text.index("Headline:")
    markdown = render_markdown(result)
    assert markdown.index(f"### ⛔ {BLOCKED_TITLE}") < markdown.index("### Cost per 30 days")


def test_a_run_time_parameter_under_a_new_logical_id_keeps_its_value_and_blocks_nothing(default: Path) -> None:
    """Its handler adopts the parameter of the same name, so the old resource's Delete leaves it: no failure, no
    reset."""
    base, head = load_assembly(default), load_assembly(default)
    stack = head["SageMakerLlm"]
    (old_id,) = [k for k, r in stack.resources.items() if r["Type"] == "Custom::SageMakerLlmRunTimeParameter"]
    stack.resources["WatermarkMoved"] = stack.resources.pop(old_id)
    result = compare(base, head)
    assert not fails(result) and not [h for h in result.headlines if h.category == "runtime"]
    (outcome,) = [o for o in result.outcomes if o.logical_id == "WatermarkMoved"]
    assert outcome.keeps and not outcome.resets and outcome.lines[0].startswith("keeps /sagemaker-llm/state/eagle/")


# ------------------------------------------------------------------ (c) across the stacks of one assembly
def parameter(name: str) -> dict[str, Any]:
    return {"Type": "AWS::SSM::Parameter", "Properties": {"Name": name, "Type": "String", "Value": "x"}}


def moved_parameter(tmp_path: Path, **head: Any) -> Report:
    base = write_assembly(
        tmp_path / "base",
        {"Platform": {"Status": parameter("/llm/status")}, "Routers": {}},
        dependencies=head.pop("base_dependencies", None),
    )
    moved = write_assembly(tmp_path / "head", {"Platform": {}, "Routers": {"Status": parameter("/llm/status")}}, **head)
    return compare(load_assembly(base), load_assembly(moved))


def test_a_name_moved_to_a_stack_that_may_deploy_first_is_flagged(tmp_path: Path) -> None:
    result = moved_parameter(tmp_path)
    (blocker,) = fails(result)
    assert (blocker.reason, blocker.stack, blocker.resource_type) == (
        "name re-taken across stacks",
        "Routers",
        "AWS::SSM::Parameter",
    )
    assert "stack Routers does not deploy after Platform" in blocker.text
    assert "PutParameter fails (ParameterAlreadyExists)" in blocker.text
    assert "Two steps: deploy Platform once without it" in blocker.text
    assert first_lines(result)[1].startswith(f"!! {BLOCKED_TITLE}: 1 reason")


def test_a_name_moved_to_a_stack_that_deploys_after_the_holder_is_free_by_then(tmp_path: Path) -> None:
    assert not fails(moved_parameter(tmp_path, dependencies={"Routers": ["Platform"]}))


def test_a_name_moved_to_another_region_is_another_name(tmp_path: Path) -> None:
    assert not fails(moved_parameter(tmp_path, environments={"Routers": "aws://123456789012/us-west-2"}))


def test_a_retained_holder_keeps_the_name_whatever_the_order(tmp_path: Path) -> None:
    kept = {**parameter("/llm/status"), "DeletionPolicy": "Retain"}
    base = write_assembly(tmp_path / "base", {"Platform": {"Status": kept}, "Routers": {}})
    head = write_assembly(
        tmp_path / "head",
        {"Platform": {}, "Routers": {"Status": parameter("/llm/status")}},
        dependencies={"Routers": ["Platform"]},
    )
    (blocker,) = fails(compare(load_assembly(base), load_assembly(head)))
    assert blocker.reason == "name kept by a retained resource" and "DeletionPolicy Retain" in blocker.text


# ------------------------------------------------------------------ stack delete and deploy again
def test_a_redeploy_keeps_what_is_retained_and_fails_on_a_retained_fixed_name(tmp_path: Path) -> None:
    state = {
        "Type": "Custom::SageMakerLlmRunTimeParameter",
        "DeletionPolicy": "Delete",
        "Properties": {"ParameterName": "/llm/watermark", "InitialValue": "0", "Removal": "retain"},
    }
    logs = {"Type": "AWS::Logs::LogGroup", "DeletionPolicy": "Retain", "Properties": {}}
    stream = {
        "Type": "AWS::Logs::LogStream",
        "DeletionPolicy": "Retain",
        "Properties": {"LogGroupName": {"Ref": "Gone"}, "LogStreamName": "S3Delivery"},
    }
    gone = {"Type": "AWS::Logs::LogGroup", "DeletionPolicy": "Delete", "Properties": {}}
    assembly = write_assembly(
        tmp_path / "a",
        {
            "Platform": {
                "State": state,
                "Logs": logs,
                "Gone": gone,
                "Stream": stream,
                "Status": parameter("/llm/status"),
            }
        },
    )
    again = redeploy(load_assembly(assembly))
    assert again.retained == {"AWS::Logs::LogGroup": 1} and again.values_kept == ["/llm/watermark"]
    assert again.fresh == {"AWS::Logs::LogGroup": 1, "AWS::Logs::LogStream": 1, "AWS::SSM::Parameter": 1}
    assert not again.blockers
    named = copy.deepcopy(load_assembly(assembly))
    named["Platform"].resources["Status"]["DeletionPolicy"] = "Retain"
    (blocker,) = redeploy(named).blockers
    assert '"/llm/status"' in blocker and "the redeploy creates it again and fails" in blocker
