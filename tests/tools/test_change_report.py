"""tools/change_report/ on pairs of real synthesized cloud assemblies (in-process synths, one per variant)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from sagemaker_llm_cdk import (
    AdapterSpec,
    CopyScaling,
    EndpointOptions,
    InstanceScaling,
    LlmEndpoint,
    LoraSettings,
    ModelSpec,
    Routing,
    add_adapters,
)
from sagemaker_llm_cdk.capacity.capacity_plan import RESOURCE_TYPE, CapacityPlan
from sagemaker_llm_cdk.settings.capacity import CapacityPlanSpec

from tools import change_report
from tools.change_report import Report, compare, load_assembly, render_markdown, render_text

INSTANCE = "ml.p5e.48xlarge"
PLAN: dict[str, Any] = {
    "name": "chat-p5e-2027q1",
    "instance_type": INSTANCE,
    "instance_count": 2,
    "duration_days": 30,
    "start_after": datetime(2027, 1, 4, tzinfo=UTC),
    "end_before": datetime(2027, 3, 1, tzinfo=UTC),
    "max_upfront_fee_usd": Decimal("150000"),
}
ADAPTERS = [
    AdapterSpec(name="qwen3-32b-support", artifact_s3_uri="s3://my-llm-adapters/qwen3-32b/support.tar.gz"),
    AdapterSpec(name="qwen3-32b-sql", artifact_s3_uri="s3://my-llm-adapters/qwen3-32b/sql.tar.gz"),
]


def synth(
    tmp: Path,
    name: str,
    *,
    routing: Routing | None = None,
    adapters: int = 1,
    min_copies: int = 1,
    plan: dict[str, Any] | None = None,
    physical_name: str | None = None,
) -> Path:
    """The default app's shape (a plan, an endpoint on it, a LoRA model, adapters in a nested stack) in tmp/name."""
    out = tmp / name
    app = App(outdir=str(out), context={"aws:cdk:enable-path-metadata": True})
    stack = Stack(app, "SageMakerLlm")
    capacity = CapacityPlan(stack, "CapacityPlan-chat", settings=CapacityPlanSpec(**(plan or PLAN)))
    endpoint = LlmEndpoint(
        stack,
        "Chat",
        settings=EndpointOptions(
            instance_type=INSTANCE,
            scaling=InstanceScaling(min_instances=1, max_instances=2),
            routing=routing or Routing.least_outstanding_requests(),
        ),
        capacity_plan=capacity,
    )
    model = endpoint.add_model(
        "qwen3-32b",
        ModelSpec(
            name="qwen3-32b",
            physical_name=physical_name,
            model_data_s3_uri="s3://my-llm-weights/qwen3-32b/",
            accelerators=2,
            min_memory_mb=65536,
            copies=CopyScaling(min_copies=min_copies, max_copies=4),
            lora=LoraSettings(max_gpu_adapters=4, max_rank=16),
        ),
    )
    add_adapters(model, ADAPTERS[:adapters])  # in a nested stack, as the app does
    app.synth()
    return out


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("assemblies")


@pytest.fixture(scope="module")
def base(tmp: Path) -> Path:
    return synth(tmp, "base")


def report(base: Path, head: Path) -> Report:
    return compare(load_assembly(base), load_assembly(head), base_label="main", head_label="pr")


def changes(result: Report, resource_type: str) -> list[change_report.ResourceChange]:
    return [c for c in result.changes if c.resource_type == resource_type]


# ------------------------------------------------------------------------- the four cases


@pytest.fixture(scope="module")
def routing_changed(tmp: Path, base: Path) -> Report:
    return report(base, synth(tmp, "random-routing", routing=Routing.random()))


def test_routing_change_replaces_the_endpoint_config_and_the_headline_says_the_endpoint_redeploys(
    routing_changed: Report,
) -> None:
    (config,) = changes(routing_changed, "AWS::SageMaker::EndpointConfig")
    assert config.kind == "modified" and config.replacement
    (routing,) = [p for p in config.properties if p.path.endswith("RoutingStrategy")]
    assert (routing.path, routing.old, routing.new, routing.create_only) == (
        "ProductionVariants[0].RoutingConfig.RoutingStrategy",
        "LEAST_OUTSTANDING_REQUESTS",
        "RANDOM",
        True,
    )
    (endpoint,) = changes(routing_changed, "AWS::SageMaker::Endpoint")
    assert not endpoint.replacement and [p.via for p in endpoint.properties] == [config.logical_id]
    redeploys = [h for h in routing_changed.headlines if h.category == "redeploy"]
    assert len(redeploys) == 1 and "redeploys the endpoint" in redeploys[0].text
    assert "new instances are provisioned" in redeploys[0].text
    assert not [h for h in routing_changed.headlines if h.category in ("money", "fails")]
    # Bound to a plan of 2 with up to 2 instances in use: the blue/green fleet finds no free plan instance.
    (headroom,) = [h for h in routing_changed.headlines if h.category == "headroom"]
    assert "replaces the endpoint config: needs 2 free plan instances" in headroom.text
    assert "0 free, NOT enough" in headroom.text
    text = render_text(routing_changed)
    assert "REPLACEMENT" in text and "redeploys the endpoint Chat" in text
    assert "      replaces the endpoint config: needs 2 free plan instances" in text
    markdown = render_markdown(routing_changed)
    assert "### ⚠️ Headline" in markdown and "**REPLACEMENT**" in markdown


@pytest.fixture(scope="module")
def adapter_added(tmp: Path, base: Path) -> Report:
    return report(base, synth(tmp, "second-adapter", adapters=2))


def test_adding_an_adapter_replaces_nothing(adapter_added: Report) -> None:
    assert not [c for c in adapter_added.changes if c.replacement]
    assert not adapter_added.headlines
    added = [c for c in adapter_added.changes if c.kind == "added"]
    assert [c.resource_type for c in added] == ["AWS::SageMaker::InferenceComponent"]
    assert not [c for c in adapter_added.changes if c.kind in ("removed", "renamed")]
    # The adapters' read policy gains the new artifact: an update in place, nothing more.
    assert {c.resource_type for c in adapter_added.changes if c.kind == "modified"} <= {"AWS::IAM::ManagedPolicy"}
    assert "no endpoint redeploy, no capacity plan change" in render_text(adapter_added)


@pytest.fixture(scope="module")
def copies_changed(tmp: Path, base: Path) -> Report:
    return report(base, synth(tmp, "two-copies", min_copies=2))


def test_copy_count_change_is_an_update_in_place(copies_changed: Report) -> None:
    # Autoscaled: the copy range lives on the scalable target; the component carries no CopyCount,
    # so the update does not reset the copies autoscaling runs.
    assert not changes(copies_changed, "AWS::SageMaker::InferenceComponent")
    (target,) = changes(copies_changed, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert target.kind == "modified" and not target.replacement
    assert [(p.path, p.old, p.new) for p in target.properties] == [("MinCapacity", 1, 2)]
    assert not [c for c in copies_changed.changes if c.replacement]
    assert not copies_changed.headlines
    assert "update in place" in render_text(copies_changed)


@pytest.fixture(scope="module")
def plan_changed(tmp: Path, base: Path) -> Report:
    return report(
        base, synth(tmp, "bigger-plan", plan={**PLAN, "instance_count": 4, "max_upfront_fee_usd": Decimal("300000")})
    )


def test_capacity_plan_change_is_called_out_as_money_and_as_a_failing_deploy(plan_changed: Report) -> None:
    (plan,) = changes(plan_changed, RESOURCE_TYPE)
    assert {p.path for p in plan.properties} == {"InstanceCount", "MaxUpfrontFeeUsd"}
    (money,) = [h for h in plan_changed.headlines if h.category == "money"]
    assert "capacity plan SageMakerLlm-chat-p5e-2027q1 changes InstanceCount" in money.text
    assert "the deployment fails" in money.text and '"2" -> "4"' in money.text
    markdown = render_markdown(plan_changed)
    assert "**Capacity plans (money)**" in markdown


def test_only_a_price_cap_change_buys_nothing(base: Path) -> None:
    assembly = load_assembly(base)
    head = load_assembly(base)
    stack = head["SageMakerLlm"]
    (plan_id,) = [k for k, r in stack.resources.items() if r["Type"] == RESOURCE_TYPE]
    stack.resources[plan_id] = {
        **stack.resources[plan_id],
        "Properties": {**stack.resources[plan_id]["Properties"], "MaxUpfrontFeeUsd": "160000"},
    }
    (money,) = compare(assembly, head).headlines
    assert money.category == "money" and money.text.endswith("): no purchase")


def _with_old_plan_name(assembly: Any) -> Any:
    """``assembly`` as synthesized before plan names were stack-prefixed: PlanName was the config name."""
    stack = assembly["SageMakerLlm"]
    (plan_id,) = [k for k, r in stack.resources.items() if r["Type"] == RESOURCE_TYPE]
    stack.resources[plan_id] = {
        **stack.resources[plan_id],
        "Properties": {**stack.resources[plan_id]["Properties"], "PlanName": "chat-p5e-2027q1"},
    }
    return assembly


def test_upgrading_a_bought_plan_without_physical_name_is_called_out_as_a_failing_deploy(base: Path) -> None:
    result = compare(_with_old_plan_name(load_assembly(base)), load_assembly(base))
    (money,) = [h for h in result.headlines if h.category == "money"]
    assert "changes PlanName: the deployment fails" in money.text
    assert '"chat-p5e-2027q1" -> "SageMakerLlm-chat-p5e-2027q1"' in money.text


def test_pinning_physical_name_keeps_a_bought_plan_unchanged(tmp: Path, base: Path) -> None:
    pinned = synth(tmp, "pinned-plan", plan={**PLAN, "physical_name": "chat-p5e-2027q1"})
    result = compare(_with_old_plan_name(load_assembly(base)), load_assembly(pinned))
    assert changes(result, RESOURCE_TYPE) == []
    assert not [h for h in result.headlines if h.category == "money"]


# ------------------------------------------------------------------ renames, names, noise


def test_same_name_under_a_new_logical_id_is_a_replacement_that_fails_to_deploy(base: Path) -> None:
    assembly, head = load_assembly(base), load_assembly(base)
    nested = next(s for s in head.values() if s.parent is not None)
    old_id = next(k for k, r in nested.resources.items() if r["Type"] == "AWS::SageMaker::InferenceComponent")
    nested.resources["MovedAdapter"] = nested.resources.pop(old_id)
    result = compare(assembly, head)
    (moved,) = result.changes
    assert (moved.kind, moved.old_logical_id, moved.logical_id, moved.replacement) == (
        "renamed",
        old_id,
        "MovedAdapter",
        True,
    )
    (fails,) = result.headlines
    assert fails.category == "fails" and "the create fails while the name is still taken" in fails.text


def test_same_properties_under_a_new_logical_id_is_a_replacement(base: Path) -> None:
    assembly, head = load_assembly(base), load_assembly(base)
    resources = head["SageMakerLlm"].resources
    config_id = next(k for k, r in resources.items() if r["Type"] == "AWS::SageMaker::EndpointConfig")
    resources["ChatConfigRenamed"] = resources.pop(config_id)
    result = compare(assembly, head)
    (renamed,) = [c for c in result.changes if c.kind == "renamed"]
    assert renamed.old_logical_id == config_id and renamed.replacement
    assert any(
        h.category == "redeploy" and f"logical id {config_id} -> ChatConfigRenamed" in h.text for h in result.headlines
    )


def test_asset_hashes_and_metadata_are_noise(base: Path) -> None:
    assembly, head = load_assembly(base), load_assembly(base)
    for resource in head["SageMakerLlm"].resources.values():
        if resource["Type"] == "AWS::Lambda::Function":
            resource["Properties"]["Code"]["S3Key"] = "f" * 64 + ".zip"
        resource["Metadata"] = {
            **resource.get("Metadata", {}),
            "aws:cdk:path": "x/y",
            "checkov": {"skip": [{"id": "CKV_AWS_1", "comment": "c"}]},
        }
    assert compare(assembly, head).changes == []


def test_invalid_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert change_report.main([str(tmp_path), str(tmp_path)]) == 2
    assert "not a synthesized cloud assembly" in capsys.readouterr().err


def test_cli_exits_0_and_prints_markdown(base: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert change_report.main([str(base), str(base), "--markdown"]) == 0
    assert "no endpoint redeploy, no capacity plan change" in capsys.readouterr().out


def test_the_plan_type_is_the_librarys() -> None:
    assert change_report.PLAN_TYPE == RESOURCE_TYPE


def test_renaming_an_inference_component_is_called_out_as_a_failing_deploy(tmp: Path, base: Path) -> None:
    """InferenceComponentName is not create-only in the schema, yet SageMaker cannot rename: the report says so."""
    renamed = report(base, synth(tmp, "renamed", physical_name="chat-qwen"))
    (component,) = [
        c
        for c in changes(renamed, "AWS::SageMaker::InferenceComponent")
        if any(p.path == "InferenceComponentName" for p in c.properties)
    ]
    (name,) = [p for p in component.properties if p.path == "InferenceComponentName"]
    assert (name.old, name.new) == ("SageMakerLlm-qwen3-32b", "chat-qwen")
    fails = [h for h in renamed.headlines if h.category == "fails"]
    assert any("InferenceComponentName changes" in h.text and "the deployment fails" in h.text for h in fails)


# ------------------------------------------------------------------ long strings, outputs, what was compared
from tools.change_report import StackTemplate, text_change, working_tree_label  # noqa: E402

WIDGETS = [
    {"type": "metric", "properties": {"title": f"Widget {i}", "metrics": [["AWS/SageMaker", "Invocations"]]}}
    for i in range(4)
]


def dashboard(widgets: list[dict[str, Any]]) -> dict[str, Any]:
    """A dashboard whose body is a Fn::Join of JSON text around a Ref, as CDK writes it."""
    body = json.dumps({"start": "-PT6H", "widgets": widgets})
    cut = body.index("Invocations") + len("Invocations")
    return {
        "Type": "AWS::CloudWatch::Dashboard",
        "Properties": {
            "DashboardBody": {"Fn::Join": ["", [body[:cut], '", "EndpointName", "', {"Ref": "Chat"}, body[cut:]]]}
        },
    }


def stacks(resources: dict[str, Any], outputs: dict[str, Any] | None = None) -> dict[str, StackTemplate]:
    return {"S": StackTemplate("S", "S", resources, outputs=outputs or {})}


def test_a_long_json_string_is_diffed_by_path_inside_it() -> None:
    changed = [dict(w) for w in WIDGETS]
    changed[1] = {**changed[1], "properties": {**changed[1]["properties"], "title": "Latency p99"}}
    changed.insert(3, {"type": "text", "properties": {"markdown": "# New"}})
    result = compare(stacks({"Dash": dashboard(WIDGETS)}), stacks({"Dash": dashboard(changed)}))
    (change,) = result.changes
    assert [(p.path, p.old, p.new) for p in change.properties] == [
        ("DashboardBody::widgets[1].properties.title", "Widget 1", "Latency p99"),
        ("DashboardBody::widgets[3]", change_report.MISSING, {"type": "text", "properties": {"markdown": "# New"}}),
    ]
    text = render_text(result)
    assert 'DashboardBody::widgets[1].properties.title: "Widget 1" -> "Latency p99"' in text
    assert (
        "DashboardBody::widgets[3]: (absent) -> " in text and "..." not in text.split("widgets[1]")[1].splitlines()[0]
    )


def test_a_state_machine_definition_change_names_the_state_and_field() -> None:
    def machine(seconds: int) -> dict[str, Any]:
        definition = {
            "StartAt": "Plan",
            "States": {
                "Plan": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Next": "Wait"},
                "Wait": {"Type": "Wait", "Seconds": seconds, "Next": "Describe"},
                "Describe": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::aws-sdk:sagemaker:describeOptimizationJob",
                    "End": True,
                },
            },
        }
        return {"Type": "AWS::StepFunctions::StateMachine", "Properties": {"DefinitionString": json.dumps(definition)}}

    (change,) = compare(stacks({"Loop": machine(300)}), stacks({"Loop": machine(600)})).changes
    assert [(p.path, p.old, p.new, p.create_only) for p in change.properties] == [
        ("DefinitionString::States.Wait.Seconds", 300, 600, False)
    ]
    assert _verdict_of(change) == "update in place"


def _verdict_of(change: change_report.ResourceChange) -> str:
    return change_report._verdict(change)


def test_a_long_plain_string_shows_the_changed_part_with_context() -> None:
    old = "echo start; " + "x" * 200 + " --mode=fast; " + "y" * 200
    new = old.replace("--mode=fast", "--mode=safe")
    a, b = text_change(old, new)
    assert "[-fast-]" in a and "{+safe+}" in b and a.startswith("...") and b.endswith("...")
    assert len(a) < 100
    resource = {"Type": "AWS::SSM::Parameter", "Properties": {"Type": "String", "Value": old}}
    result = compare(
        stacks({"P": resource}), stacks({"P": {**resource, "Properties": {"Type": "String", "Value": new}}})
    )
    (line,) = [row for row in render_text(result).splitlines() if "Value:" in row]
    assert "[-fast-]" in line and "{+safe+}" in line


def test_outputs_added_removed_and_changed_are_reported() -> None:
    base = stacks({}, {"Url": {"Value": {"Fn::GetAtt": ["Url", "FunctionUrl"]}}, "Old": {"Value": "x"}})
    head = stacks(
        {}, {"Url": {"Value": {"Fn::GetAtt": ["Url2", "FunctionUrl"]}}, "PlanArn": {"Value": {"Ref": "Plan"}}}
    )
    result = compare(base, head)
    assert [(o.kind, o.name) for o in result.outputs] == [("modified", "Url"), ("added", "PlanArn"), ("removed", "Old")]
    text = render_text(result)
    assert "Stack S: 0 added, 0 removed, 0 modified, 3 output(s) changed" in text
    assert "~ Output Url: modified" in text and 'Value: "${Url.FunctionUrl}" -> "${Url2.FunctionUrl}"' in text
    assert "+ Output PlanArn: added" in text and "- Output Old: removed" in text
    assert "| output added | `PlanArn` | Output |" in render_markdown(result)


def test_the_compared_head_is_named_by_its_commit(tmp_path: Path) -> None:
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q", "-b", "feature")
    (tmp_path / "app.py").write_text("print(1)\n")
    git("add", "app.py")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "c")
    sha = git("rev-parse", "--short", "HEAD")
    assert working_tree_label(tmp_path) == f"HEAD (feature {sha})"
    (tmp_path / "app.py").write_text("print(2)\n")
    assert working_tree_label(tmp_path) == f"working tree (uncommitted changes on {sha})"


def test_a_config_the_base_lacks_is_compared_with_nothing(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools.change_report import synthesizing

    synthesized: list[Path] = []

    def head_only(source: Path, out: Path, *, config: str | None = None) -> Path:
        synthesized.append(source)
        return base  # the head side: this branch's synth of the new config

    monkeypatch.setattr(synthesizing, "synthesize", head_only)
    new_config = "config/only-on-this-branch.yaml"
    found = synthesizing.report_against_git("HEAD", config=new_config, keep=tmp_path / "work")
    assert synthesized == [synthesizing.REPO]  # the base was not synthesized: it has no such file
    assert "which has no config/only-on-this-branch.yaml (a new config: everything is created)" in found.base_label
    assert found.changes and {c.kind for c in found.changes} == {"added"}
    assert not any(c.replacement for c in found.changes)


def test_a_config_is_looked_up_in_the_exported_base(tmp_path: Path) -> None:
    from tools.change_report.synthesizing import REPO, config_in

    (tmp_path / "config").mkdir()
    assert not config_in(tmp_path, "config/mine.yaml")
    (tmp_path / "config" / "mine.yaml").write_text("endpoints: []\n")
    assert config_in(tmp_path, "config/mine.yaml")
    assert config_in(tmp_path, str(REPO / "config" / "mine.yaml"))  # absolute, inside the checkout
    assert config_in(tmp_path, "/elsewhere/team.yaml")  # outside the checkout: the same file on both sides


def test_cli_writes_the_report_file_and_the_step_summary(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("## cdk-nag findings\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert (
        change_report.main(
            [str(base), str(base), "--head-label", "abc1234", "--output", str(tmp_path / "r.txt"), "--step-summary"]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert printed.startswith(f"Change report: {base} -> abc1234")
    assert (tmp_path / "r.txt").read_text() == printed
    written = summary.read_text()
    assert written.startswith("## cdk-nag findings\n## Change report: ") and "`abc1234`" in written


# ------------------------------------------------------------------ run-time values, write-only properties, headroom
from tools.change_report import RUN_TIME_PARAMETER_TYPE, at_deploy, classify, run_time_values  # noqa: E402

STATUS = "/sagemaker-llm/capacity-plans/chat/status"


def _arn(name: str) -> dict[str, Any]:
    return {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":ssm:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                f":parameter{name}",
            ],
        ]
    }


def _writer(resource: Any, *, handler: bool = False) -> dict[str, Any]:
    """A function (a custom resource's handler when ``handler``) whose role may ssm:PutParameter ``resource``."""
    resources: dict[str, Any] = {
        "CheckRole": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {}}},
        "CheckPolicy": {
            "Type": "AWS::IAM::Policy",
            "Properties": {
                "Roles": [{"Ref": "CheckRole"}],
                "PolicyDocument": {
                    "Statement": [
                        {"Effect": "Allow", "Action": ["ssm:GetParameter", "ssm:PutParameter"], "Resource": resource}
                    ]
                },
            },
        },
        "Check": {
            "Type": "AWS::Lambda::Function",
            "Properties": {"Role": {"Fn::GetAtt": ["CheckRole", "Arn"]}},
            "Metadata": {"aws:cdk:path": "S/Plan/ExpiryCheck/Resource"},
        },
    }
    if handler:
        resources["Seed"] = {"Type": "Custom::Seed", "Properties": {"ServiceToken": {"Fn::GetAtt": ["Check", "Arn"]}}}
    return resources


def _parameter(**properties: Any) -> dict[str, Any]:
    return {"Type": "AWS::SSM::Parameter", "Properties": {"Type": "String", "Value": "Unknown", **properties}}


def test_an_ssm_parameter_a_function_writes_is_reset_by_a_tag_or_description_change() -> None:
    """CloudFormation's AWS::SSM::Parameter update calls PutParameter with Overwrite and the template's Value."""
    writer = _writer(_arn(STATUS))
    base = stacks({"Status": _parameter(Name=STATUS, Tags={"project": "a"}), **writer})
    for changed in ({"Tags": {"project": "b"}}, {"Description": "reworded"}):
        head = stacks({"Status": _parameter(Name=STATUS, **{"Tags": {"project": "a"}, **changed}), **writer})
        (outcome,) = [o for o in classify(base, head) if o.logical_id == "Status"]
        assert (outcome.action, outcome.resets) == ("update", True)
        assert outcome.run_time is not None and outcome.run_time.writers == ["Plan/ExpiryCheck"]
        assert outcome.lines[-1].startswith(
            f'resets {STATUS} to "Unknown": the AWS::SSM::Parameter update calls PutParameter with Overwrite'
        )
        result = compare(base, head)
        assert [h.category for h in result.headlines] == ["runtime"]
        assert f"resets {STATUS}" in render_text(result) and f"**resets {STATUS}" in render_markdown(result)


def test_run_time_state_is_found_from_grants_not_names() -> None:
    # A generated name, granted through a reference to the parameter: run-time state.
    by_ref = stacks(
        {"Watermark": _parameter(), **_writer({"Fn::Join": ["", ["arn:aws:ssm:r:a:parameter/", {"Ref": "Watermark"}]]})}
    )
    assert [v.shown for v in run_time_values(by_ref).values()] == ["the parameter of Watermark (a generated name)"]
    # A grant by wildcard covers it too; a grant to a custom resource's handler (a deploy-time writer) does not.
    assert run_time_values(stacks({"Status": _parameter(Name=STATUS), **_writer(_arn("/sagemaker-llm/*"))}))
    assert not run_time_values(stacks({"Status": _parameter(Name=STATUS), **_writer(_arn(STATUS), handler=True)}))
    # A parameter nobody writes is configuration: an update is an update.
    plain = stacks({"Setting": _parameter(Name="/team/setting")})
    assert not run_time_values(plain)
    head = stacks({"Setting": _parameter(Name="/team/setting", Description="x")})
    assert [(o.action, o.resets) for o in classify(plain, head)] == [("update", False)]


def test_a_stack_parameter_that_reads_a_run_time_value_names_it() -> None:
    writer = stacks({"Status": _parameter(Name=STATUS), **_writer(_arn(STATUS))})
    reader = StackTemplate(
        "R", "R", {}, parameters={"PlanStatus": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": STATUS}}
    )
    (value,) = run_time_values({**writer, "R": reader}).values()
    assert value.readers == ["R.PlanStatus"]


def _run_time_parameter(**properties: Any) -> dict[str, Any]:
    return {
        "Type": RUN_TIME_PARAMETER_TYPE,
        "Properties": {
            "ServiceToken": "arn:aws:lambda:us-east-1:1:function:f",
            "ParameterName": STATUS,
            "InitialValue": "Unknown",
            "Removal": "retain",
            **properties,
        },
    }


def test_the_run_time_parameter_custom_resource_keeps_its_value_and_a_new_name_is_a_new_parameter() -> None:
    writer = _writer(_arn(STATUS))
    base = stacks({"Status": _run_time_parameter(PlanName="chat"), **writer})
    head = stacks({"Status": _run_time_parameter(PlanName="chat", Description="reworded"), **writer})
    (kept,) = [o for o in classify(base, head) if o.logical_id == "Status"]
    assert (kept.action, kept.keeps, kept.resets) == ("update", True, False)
    assert kept.lines == [
        f"keeps {STATUS}: {RUN_TIME_PARAMETER_TYPE}'s update never overwrites the value "
        "Plan/ExpiryCheck wrote; describes plan chat at deploy"
    ]
    assert not compare(base, head).headlines
    renamed = stacks(
        {
            "Status": _run_time_parameter(ParameterName="/sagemaker-llm/state/chat/status"),
            **_writer(_arn("/sagemaker-llm/state/chat/status")),
        }
    )
    (moved,) = [o for o in classify(base, renamed) if o.logical_id == "Status"]
    assert (moved.action, moved.resets) == ("replace", True)
    assert moved.lines[-1] == (
        'a new parameter /sagemaker-llm/state/chat/status (starts at "Unknown", or its '
        f"SeedFrom); {STATUS} is kept (Removal: retain)"
    )


def _component(**properties: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::SageMaker::InferenceComponent",
        "Properties": {
            "InferenceComponentName": "chat-qwen",
            "EndpointName": "chat",
            "VariantName": "AllTraffic",
            "Specification": {"ModelName": "m", "DataCacheConfig": {"EnableCaching": True}},
            **properties,
        },
    }


SCALING = {
    "Type": "AWS::ApplicationAutoScaling::ScalableTarget",
    "Properties": {
        "ResourceId": "inference-component/chat-qwen",
        "ScalableDimension": "sagemaker:inference-component:DesiredCopyCount",
        "ServiceNamespace": "sagemaker",
        "MinCapacity": 1,
        "MaxCapacity": 4,
    },
}


def test_an_update_re_sends_write_only_properties_and_a_copy_count_autoscaling_owns_is_overwritten() -> None:
    pinned = {"RuntimeConfig": {"CopyCount": 1}}
    base = stacks({"Ic": _component(**pinned), "Scaling": SCALING})
    head = stacks({"Ic": _component(**pinned, Tags=[{"Key": "team", "Value": "x"}]), "Scaling": SCALING})
    (ic,) = [o for o in classify(base, head) if o.changed]
    assert ic.resends == ["Specification.DataCacheConfig", "RuntimeConfig.CopyCount"]
    assert ic.overwrites == ["RuntimeConfig.CopyCount"] and ic.lines[-1].startswith(
        "overwrites RuntimeConfig.CopyCount"
    )
    assert [h.category for h in compare(base, head).headlines] == ["runtime"]
    # Without a scalable target on the component the count is the template's own: re-sent, nothing overwritten.
    (alone,) = [
        o
        for o in classify(
            stacks({"Ic": _component(**pinned)}),
            stacks({"Ic": _component(**pinned, Tags=[{"Key": "team", "Value": "x"}])}),
        )
        if o.changed
    ]
    assert alone.overwrites == [] and "RuntimeConfig.CopyCount" in alone.resends


def test_values_read_at_deploy_decide_conditions_and_fn_if() -> None:
    template = StackTemplate(
        "S",
        "S",
        {
            "Serving": {
                "Type": "Custom::EagleServingModel",
                "Condition": "Promoted",
                "Properties": {"S3Uri": {"Ref": "Head"}},
            },
            "Ic": _component(
                Specification={
                    "ModelName": {"Fn::If": ["Promoted", "eagle", "base"]},
                    "Extra": {"Fn::If": ["Promoted", "x", {"Ref": "AWS::NoValue"}]},
                }
            ),
        },
        parameters={"Head": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": "/eagle/chat/draft-head"}},
        conditions={"Promoted": {"Fn::Not": [{"Fn::Equals": [{"Ref": "Head"}, "none"]}]}},
    )
    off = at_deploy({"S": template}, {"*/chat/draft-head": "none"})["S"]
    assert list(off.resources) == ["Ic"] and off.resources["Ic"]["Properties"]["Specification"] == {"ModelName": "base"}
    on = at_deploy({"S": template}, {"/eagle/chat/draft-head": "s3://b/h/"})["S"]
    assert on.resources["Serving"]["Properties"] == {"S3Uri": "s3://b/h/"}
    assert on.resources["Ic"]["Properties"]["Specification"] == {"ModelName": "eagle", "Extra": "x"}
    assert at_deploy({"S": template}, {}) == {"S": template}
    changed = {
        (o.logical_id, o.action)
        for o in classify(
            {"S": template},
            {"S": template},
            base_values={"*/draft-head": "none"},
            head_values={"*/draft-head": "s3://b/h/"},
        )
        if o.changed
    }
    assert changed == {("Serving", "add"), ("Ic", "update")}


def _bound_config(max_instances: int, routing: str) -> dict[str, Any]:
    return {
        "Type": "AWS::SageMaker::EndpointConfig",
        "Properties": {
            "ProductionVariants": [
                {
                    "VariantName": "AllTraffic",
                    "InstanceType": INSTANCE,
                    "InitialInstanceCount": 1,
                    "ManagedInstanceScaling": {
                        "Status": "ENABLED",
                        "MinInstanceCount": 1,
                        "MaxInstanceCount": max_instances,
                    },
                    "RoutingConfig": {"RoutingStrategy": routing},
                    "CapacityReservationConfig": {
                        "CapacityReservationPreference": "capacity-reservations-only",
                        "MlReservationArn": {"Fn::GetAtt": ["Guard", "MlReservationArn"]},
                    },
                }
            ]
        },
    }


def _bound(max_instances: int, routing: str, plan_instances: int, deployment: Any = None) -> dict[str, StackTemplate]:
    endpoint: dict[str, Any] = {"EndpointConfigName": {"Fn::GetAtt": ["Config", "EndpointConfigName"]}}
    if deployment is not None:
        endpoint["DeploymentConfig"] = deployment
    return stacks(
        {
            "Plan": {"Type": RESOURCE_TYPE, "Properties": {"PlanName": "chat", "InstanceCount": str(plan_instances)}},
            "Guard": {"Type": "Custom::SageMakerCapacityPlanGuard", "Properties": {"PlanName": "chat"}},
            "Config": _bound_config(max_instances, routing),
            "Endpoint": {"Type": "AWS::SageMaker::Endpoint", "Properties": endpoint},
        }
    )


def test_a_replaced_plan_bound_endpoint_config_needs_free_plan_instances() -> None:
    (enough,) = [
        o.headroom for o in classify(_bound(2, "LEAST_OUTSTANDING_REQUESTS", 4), _bound(2, "RANDOM", 4)) if o.headroom
    ]
    assert (enough.needed, enough.in_use, enough.free, enough.respected) == (2, 2, 2, True)
    assert enough.text == (
        "replaces the endpoint config: needs 2 free plan instances (blue/green: a second fleet as "
        "large as the one in use, plan chat of 4, 2 held by the current fleet: 2 free, enough)"
    )
    short = compare(_bound(2, "LEAST_OUTSTANDING_REQUESTS", 2), _bound(2, "RANDOM", 2))
    (headroom,) = [h for h in short.headlines if h.category == "headroom"]
    assert "needs 2 free plan instances" in headroom.text and "0 free, NOT enough" in headroom.text
    rolling = {"RollingUpdatePolicy": {"MaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 50}}}
    (batch,) = [
        o.headroom
        for o in classify(_bound(2, "LEAST_OUTSTANDING_REQUESTS", 2, rolling), _bound(2, "RANDOM", 2, rolling))
        if o.headroom
    ]
    assert (batch.needed, batch.policy, batch.respected) == (1, "rolling: one batch of 1", False)


# ------------------------------------------------------------------ what a change costs
import copy  # noqa: E402
import shutil  # noqa: E402

from tools.change_report import COST_FILE, excerpts, first_difference, load_cost  # noqa: E402

pytestmark = pytest.mark.synth

P5E_USD = Decimal("40.50")
"""An injected price (USD per ml.p5e.48xlarge instance-hour): the shipped table knows none."""


def synth_default(tmp: Path, name: str, change: Any = None) -> Path:
    """The default config (``change``d in place first), synthesized as ``app.py`` does, with the cost file the synth
    writes (``stacks.checks.write_cost_model``) and without the checks (as ``tests/support/assemblies.py``)."""
    from aws_cdk import Environment
    from sagemaker_llm_cdk import parse_config
    from sagemaker_llm_cdk.operations.cost import cost_model
    from support.assemblies import CDK_CONTEXT, ROOT, config_data

    from stacks import LlmPlatformStack
    from stacks.checks import write_cost_model

    data = config_data(ROOT / "config" / "default.yaml")
    if change is not None:
        change(data)
    config = parse_config(data, source=str(ROOT / "config"))
    out = tmp / name
    app = App(outdir=str(out), context=dict(CDK_CONTEXT), builtin_cloud_formation_validation=False)
    LlmPlatformStack(
        app,
        config.stack_name,
        config=config,
        config_dir=ROOT / "config",
        env=Environment(account=config.target.account, region=config.target.region),
    )
    app.synth()
    write_cost_model(out, cost_model(app))
    return out


def _third_instance(data: dict[str, Any]) -> None:
    data["endpoints"][0]["scaling"]["max_instances"] = 3


def _code_endpoint(data: dict[str, Any]) -> None:
    model = {k: v for k, v in copy.deepcopy(data["endpoints"][0]["models"][1]).items() if k not in ("lora", "adapters")}
    data["endpoints"].append(
        {
            "name": "Code",
            "instance_type": INSTANCE,
            "scaling": {"min_instances": 1, "max_instances": 1},
            "models": [{**model, "name": "qwen3-32b-code"}],
        }
    )


@pytest.fixture(scope="module")
def default_base(tmp: Path) -> Path:
    return synth_default(tmp, "default")


@pytest.fixture(scope="module")
def third_instance(tmp: Path) -> Path:
    return synth_default(tmp, "default-max-3", _third_instance)


@pytest.fixture(scope="module")
def code_endpoint(tmp: Path) -> Path:
    return synth_default(tmp, "default-code", _code_endpoint)


def cost_report(base: Path, head: Path, **kwargs: Any) -> Report:
    return compare(
        load_assembly(base),
        load_assembly(head),
        base_cost=load_cost(base),
        head_cost=load_cost(head),
        base_label="main",
        head_label="pr",
        **kwargs,
    )


def test_the_synth_writes_the_cost_model_the_report_reads(default_base: Path) -> None:
    written = json.loads((default_base / COST_FILE).read_text())
    assert written["version"] == 1
    side = load_cost(default_base)
    assert side is not None and side.source == "cost file"
    (chat,) = [i for i in side.items if i.kind == "endpoint"]
    assert (chat.subject, chat.instance_type, chat.floor_hours, chat.ceiling_hours, chat.usd_per_hour) == (
        "SageMakerLlm/Chat",
        INSTANCE,
        Decimal(0),
        Decimal(1440),
        None,
    )
    assert [i.kind for i in side.items] == ["endpoint", "eagle"]


def test_one_more_instance_adds_720_instance_hours_to_the_ceiling_priced_by_an_injected_table(
    default_base: Path, third_instance: Path
) -> None:
    result = cost_report(default_base, third_instance, prices={INSTANCE: P5E_USD})
    assert result.cost is not None
    (change,) = result.cost.changes
    assert (change.kind, change.item.subject) == ("modified", "SageMakerLlm/Chat")
    assert change.hours("ceiling_hours") == (Decimal(1440), Decimal(2160))
    assert change.hours("floor_hours") == (Decimal(0), Decimal(0))
    assert change.usd_delta("ceiling_hours") == Decimal("29160.00") and change.usd_delta("floor_hours") == 0
    text = render_text(result)
    first = text.splitlines()[2:6]
    assert first[0].startswith("Cost per 30 days (on demand), from both assemblies' cost-model.json")
    assert "USD from the prices given" in first[0]
    assert first[1] == (
        "  ~ endpoint SageMakerLlm/Chat (changed): floor unchanged (0 ml.p5e.48xlarge instance-hours); "
        "ceiling +720 ml.p5e.48xlarge instance-hours per 30 days (+USD 29,160.00) [endpoint Chat "
        "(ml.p5e.48xlarge x 0-2, on demand) -> endpoint Chat (ml.p5e.48xlarge x 0-3, on demand)]"
    )
    assert first[2] == (
        "  Total: floor +0 instance-hours per 30 days (USD 0.00); ceiling +720 ml.p5e.48xlarge "
        "instance-hours per 30 days (+USD 29,160.00)"
    )
    assert text.index("Cost per 30 days") < text.index("Headline:")
    markdown = render_markdown(result)
    assert markdown.index("### Cost per 30 days (on demand)") < markdown.index("### ⚠️ Headline")
    assert "- ~ endpoint SageMakerLlm/Chat (changed): floor unchanged" in markdown
    assert (
        "- **Total:** floor +0 instance-hours per 30 days (USD 0.00); ceiling +720 ml.p5e.48xlarge instance-hours "
        "per 30 days (+USD 29,160.00)"
    ) in markdown


def test_with_the_shipped_table_the_usd_delta_is_unknown_never_0(default_base: Path, third_instance: Path) -> None:
    result = cost_report(default_base, third_instance)
    assert result.cost is not None and result.cost.prices == "USD from the price table each synth used"
    (change,) = result.cost.changes
    assert change.usd_delta("ceiling_hours") is None
    text = render_text(result)
    assert "ceiling +720 ml.p5e.48xlarge instance-hours per 30 days (USD unknown: no price for ml.p5e.48xlarge)" in text
    assert (
        "ceiling +720 ml.p5e.48xlarge instance-hours per 30 days (USD unknown: no price for SageMakerLlm/Chat)" in text
    )
    assert "+USD 0.00" not in text and "(USD unknown" in render_markdown(result)


def test_the_dashboard_change_shows_where_the_instance_range_differs(default_base: Path, third_instance: Path) -> None:
    (line,) = [
        row
        for row in render_text(cost_report(default_base, third_instance)).splitlines()
        if "DashboardBody::" in row and "instances" in row
    ]
    before, after = line.split(" -> ")
    assert "0-[-2-] instances" in before and "0-{+3+} instances" in after


def test_a_base_without_a_cost_file_is_compared_from_the_templates(
    tmp: Path, default_base: Path, third_instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    older = tmp / "default-older"
    shutil.copytree(default_base, older)
    (older / COST_FILE).unlink()
    result = cost_report(older, third_instance, prices={INSTANCE: P5E_USD})
    assert result.cost is not None and result.cost.source.startswith(
        "the templates, as the base has no cost-model.json"
    )
    (change,) = result.cost.changes
    assert (change.item.subject, change.item.kind) == ("SageMakerLlm/Chat", "endpoint")
    assert change.hours("ceiling_hours") == (Decimal(1440), Decimal(2160))
    assert change.usd_delta("ceiling_hours") == Decimal("29160.00")
    assert change_report.main([str(older), str(third_instance)]) == 0
    printed = capsys.readouterr().out
    assert "from the templates, as the base has no cost-model.json" in printed
    assert "EAGLE loop and benchmark schedules not compared" in printed
    assert (
        "ceiling +720 ml.p5e.48xlarge instance-hours per 30 days (USD unknown: no price for ml.p5e.48xlarge)" in printed
    )
    assert change_report.main([str(older), str(third_instance), "--markdown"]) == 0
    assert "_From the templates, as the base has no cost-model.json" in capsys.readouterr().out


def test_an_endpoint_added_is_a_whole_new_line_and_removed_a_whole_line_gone(
    default_base: Path, code_endpoint: Path
) -> None:
    added = cost_report(default_base, code_endpoint, prices={INSTANCE: P5E_USD})
    assert added.cost is not None
    (new,) = added.cost.changes
    assert (new.kind, new.base, new.item.subject) == ("added", None, "SageMakerLlm/Code")
    assert new.usd_delta("floor_hours") == new.usd_delta("ceiling_hours") == Decimal("29160.00")
    text = render_text(added)
    assert (
        "  + endpoint SageMakerLlm/Code (new): floor +720 ml.p5e.48xlarge instance-hours per 30 days "
        "(+USD 29,160.00); ceiling +720 ml.p5e.48xlarge instance-hours per 30 days (+USD 29,160.00)"
    ) in text
    removed = cost_report(code_endpoint, default_base)
    assert removed.cost is not None
    (gone,) = removed.cost.changes
    assert (gone.kind, gone.head, gone.item.subject) == ("removed", None, "SageMakerLlm/Code")
    text = render_text(removed)
    assert (
        "  - endpoint SageMakerLlm/Code (removed): floor -720 ml.p5e.48xlarge instance-hours per 30 days "
        "(USD unknown: no price for ml.p5e.48xlarge)"
    ) in text
    assert "Total: floor -720 ml.p5e.48xlarge instance-hours per 30 days (USD unknown" in text
    assert "- - endpoint SageMakerLlm/Code (removed)" in render_markdown(removed)


def test_a_bigger_plan_says_the_prepaid_fee_it_would_commit(plan_changed: Report) -> None:
    """The test assemblies carry no cost file: the cost is read from the templates, the plan's fee included."""
    assert plan_changed.cost is not None
    (plan,) = [c for c in plan_changed.cost.changes if c.item.kind == "plan"]
    assert plan.prepaid_delta == Decimal("150000") and plan_changed.cost.committed == [plan]
    text = render_text(plan_changed)
    assert "Prepaid plan fees this change would commit: up to USD 150,000.00, one-off and never refunded" in text
    assert "**Prepaid plan fees this change would commit:** up to USD 150,000.00" in render_markdown(plan_changed)


def test_no_cost_change_says_so(copies_changed: Report) -> None:
    assert copies_changed.cost is not None and not copies_changed.cost.changes
    assert "  Total: no change to the floor or the ceiling (2 line(s) compared)" in render_text(copies_changed)


# ------------------------------------------------------------------ strings shown where they differ
def _shows_first_difference(excerpt: str, text: str, at: int) -> bool:
    """``excerpt`` (``...`` where cut) is a piece of ``text`` holding its character ``at`` (or its end)."""
    core = excerpt.removeprefix("...").removesuffix("...")
    start = text.find(core)
    return start >= 0 and start <= at <= start + len(core) and (at == len(text) or at < start + len(core))


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_long_strings_that_differ_are_cut_around_their_first_difference(where: str) -> None:
    words = " ".join(f"word{i}" for i in range(60))
    at = {"start": 2, "middle": len(words) // 2, "end": len(words) - 3}[where]
    old, new = words, words[:at] + "#" + words[at + 1 :]
    a, b = excerpts(old, new)
    assert a != b and len(a) <= 70 and len(b) <= 70
    assert first_difference(old, new) == at
    assert _shows_first_difference(a, old, at) and _shows_first_difference(b, new, at)
    shown = first_difference(a, b)  # both excerpts start at the same place: they part where the strings do
    assert (a[shown], b[shown]) == (old[at], "#")


def test_a_dashboard_text_whose_instance_range_changes_shows_the_range() -> None:
    def text_widget(shape: str) -> dict[str, Any]:
        body = json.dumps(
            {
                "widgets": [
                    {
                        "type": "text",
                        "properties": {
                            "markdown": (
                                "## Endpoint SageMakerLlm/Chat\nml.p5e.48xlarge, "
                                + shape
                                + ", models: SageMakerLlm-qwen3-32b, "
                                "SageMakerLlm-qwen3-32b-lora; alarms: copies above 95% for 30 minutes, raise max_copies"
                            )
                        },
                    }
                ]
            }
        )
        return {"Type": "AWS::CloudWatch::Dashboard", "Properties": {"DashboardBody": body}}

    result = compare(stacks({"Dash": text_widget("1-2 instances")}), stacks({"Dash": text_widget("1-3 instances")}))
    (line,) = [row for row in render_text(result).splitlines() if "DashboardBody::" in row]
    before, after = line.split(" -> ")
    assert "1-[-2-] instances" in before and "1-{+3+} instances" in after


def test_two_long_values_differing_in_the_middle_never_show_identical_excerpts() -> None:
    """A widget (a dict, not a string) whose text differs in the middle: both sides show the difference."""

    def widget(shape: str) -> dict[str, Any]:
        return {
            "title": "Endpoint SageMakerLlm/Chat and everything it serves",
            "body": f"ml.p5e.48xlarge, {shape}",
            "tail": "models: SageMakerLlm-qwen3-32b, SageMakerLlm-qwen3-32b-lora, alarms and more",
        }

    text = change_report._property_text(change_report.PropertyChange("Widget", widget("1-2"), widget("1-3")))
    before, after = text.removeprefix("Widget: ").split(" -> ")
    assert before != after and '1-2"' in before and '1-3"' in after
