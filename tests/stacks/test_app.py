"""The team's app on the default config: synthesizes, passes cdk-nag and cfn-lint, matches its snapshot."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from aws_cdk import App, Environment
from aws_cdk.assertions import Template
from sagemaker_llm_cdk import load_config
from syrupy.extensions.json import JSONSnapshotExtension

from stacks import LlmPlatformStack, attach_checks
from tools.lint_templates import lint_folder

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    out = tmp_path_factory.mktemp("cdk.out")
    app = App(outdir=str(out), context={"aws:cdk:enable-path-metadata": True})  # as the CLI synthesizes
    config = load_config(ROOT / "config" / "default.yaml")
    stack = LlmPlatformStack(app, config.stack_name, config=config, env=Environment())
    attach_checks(app)
    assembly = app.synth()  # raises if any cdk-nag rule reports an unacknowledged error
    return stack, assembly, out


def test_default_app_has_zero_nag_errors(synthesized):
    _, _, out = synthesized
    report = json.loads((out / "validation-report.json").read_text())
    failures = [v for plugin in report.get("pluginReports", []) for v in plugin.get("violations", [])]
    assert failures == [], json.dumps(failures, indent=1)[:3000]


def test_default_app_passes_cfn_lint(synthesized, capsys):
    _, _, out = synthesized
    assert lint_folder(out) == 0, capsys.readouterr().out


def test_default_app_is_environment_agnostic(synthesized):
    stack, _, _ = synthesized
    assert stack.resolve(stack.account) == {"Ref": "AWS::AccountId"}
    assert stack.resolve(stack.region) == {"Ref": "AWS::Region"}


def test_default_endpoint_as_promised(synthesized):
    stack, _, _ = synthesized
    template = Template.from_stack(stack)
    (config,) = template.find_resources("AWS::SageMaker::EndpointConfig").values()
    (variant,) = config["Properties"]["ProductionVariants"]
    assert "ModelName" not in variant
    assert variant["InstanceType"] == "ml.p5e.48xlarge"
    assert variant["RoutingConfig"]["RoutingStrategy"] == "LEAST_OUTSTANDING_REQUESTS"
    assert variant["ManagedInstanceScaling"]["Status"] == "ENABLED"
    assert "ExecutionRoleArn" in config["Properties"]
    assert config["Properties"]["DataCaptureConfig"]["EnableCapture"] is True
    bases = [
        c
        for c in template.find_resources("AWS::SageMaker::InferenceComponent").values()
        if "BaseInferenceComponentName" not in c["Properties"]["Specification"]
    ]
    assert sorted(c["Properties"]["InferenceComponentName"] for c in bases) == [
        "SageMakerLlm-qwen3-32b",
        "SageMakerLlm-qwen3-32b-lora",
    ]
    for component in bases:
        assert component["Properties"]["Specification"]["DataCacheConfig"] == {"EnableCaching": True}
    targets = template.find_resources("AWS::ApplicationAutoScaling::ScalableTarget")
    assert any(
        t["Properties"]["ScalableDimension"] == "sagemaker:inference-component:DesiredCopyCount"
        for t in targets.values()
    )


def _normalized(template: dict) -> dict:
    """The template with asset hashes replaced, so a handler edit does not churn the snapshot."""
    text = json.dumps(template, sort_keys=True)
    text = re.sub(r"[0-9a-f]{64}(\.zip|\.json)?", "<asset-hash>", text)
    return json.loads(text)


def test_default_stack_snapshot(synthesized, snapshot):
    stack, _, _ = synthesized
    template = Template.from_stack(stack).to_json()
    assert _normalized(template) == snapshot(extension_class=JSONSnapshotExtension)


def test_checks_fail_on_an_unacknowledged_finding(tmp_path):
    """The non-compliant case: the same checks refuse a wildcard nobody acknowledged."""
    from aws_cdk import Stack
    from aws_cdk import aws_iam as iam

    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Bad")
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    role.add_to_policy(iam.PolicyStatement(actions=["s3:*"], resources=["arn:aws:s3:::bucket/*"]))
    attach_checks(app)
    with pytest.raises(Exception, match=r"(?s)ValidationFailed: .*AwsSolutions-IAM5\[Action::s3:\*\]"):
        app.synth()


def test_architecture_diagram_is_generated_from_this_app(synthesized):
    from tools.diagram import END, START, render

    _, _, out = synthesized
    page = (ROOT / "docs" / "architecture.md").read_text()
    current = page.split(START, 1)[1].split(END, 1)[0].strip()
    assert current == render(out), "run `make diagram` and commit docs/architecture.md"


# ------------------------------------------------ what the project promises of the deployed app
def _all_resources(out: Path) -> dict[str, dict]:
    resources: dict[str, dict] = {}
    for template in out.glob("*.template.json"):
        for logical_id, resource in json.loads(template.read_text())["Resources"].items():
            resources[f"{template.name}:{logical_id}"] = resource
    return resources


def _of_type(resources: dict[str, dict], cfn_type: str) -> list[dict]:
    return [r for r in resources.values() if r["Type"] == cfn_type]


def _statements(resources: dict[str, dict]) -> list[dict]:
    found = []
    for policy in _of_type(resources, "AWS::IAM::Policy") + _of_type(resources, "AWS::IAM::ManagedPolicy"):
        found.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return found


def _actions(statement: dict) -> list[str]:
    action = statement.get("Action", [])
    return [action] if isinstance(action, str) else action


def test_default_app_serves_two_adapters_on_the_named_base(synthesized):
    *_, out = synthesized
    components = _of_type(_all_resources(out), "AWS::SageMaker::InferenceComponent")
    adapters = [c for c in components if "BaseInferenceComponentName" in c["Properties"]["Specification"]]
    # Names are <stack name>-<config name>: two stacks of one config in one account and region never collide.
    assert sorted(a["Properties"]["InferenceComponentName"] for a in adapters) == [
        "SageMakerLlm-qwen3-32b-sql",
        "SageMakerLlm-qwen3-32b-support",
    ]
    for adapter in adapters:
        spec = adapter["Properties"]["Specification"]
        assert spec["BaseInferenceComponentName"] == "SageMakerLlm-qwen3-32b-lora"
        assert spec["Container"]["ArtifactUrl"].endswith(".tar.gz")
        assert "ComputeResourceRequirements" not in spec and "VariantName" not in adapter["Properties"]


def test_default_app_has_a_session_table_and_a_front_door_limited_to_this_endpoint(synthesized):
    stack, _, out = synthesized
    resources = _all_resources(out)
    (table,) = [
        t for t in _of_type(resources, "AWS::DynamoDB::Table") if t["Properties"].get("TimeToLiveSpecification")
    ]  # the other table holds EAGLE run records
    assert table["Properties"]["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert table["Properties"]["KeySchema"] == [{"AttributeName": "conversation_id", "KeyType": "HASH"}]
    (url,) = _of_type(resources, "AWS::Lambda::Url")
    assert url["Properties"]["AuthType"] == "AWS_IAM"
    invokes = [s for s in _statements(resources) if "sagemaker:InvokeEndpoint" in _actions(s)]
    assert invokes, "no function may invoke the endpoint"
    (endpoint_id,) = Template.from_stack(stack).find_resources("AWS::SageMaker::Endpoint")
    for statement in invokes:
        targets = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        assert {"Ref": endpoint_id} in targets  # this endpoint, and beyond it only its own components
        others = [t for t in targets if t != {"Ref": endpoint_id}]
        assert others and all("InferenceComponentArn" in json.dumps(t) for t in others), targets


def test_default_app_buys_nothing_and_runs_on_demand(synthesized):
    stack, _, out = synthesized
    resources = _all_resources(out)
    (config,) = _of_type(resources, "AWS::SageMaker::EndpointConfig")
    assert "CapacityReservationConfig" not in config["Properties"]["ProductionVariants"][0]
    for kind in (
        "Custom::SageMakerCapacityPlan",
        "Custom::SageMakerCapacityPlanExtension",
        "Custom::SageMakerCapacityPlanGuard",
    ):
        assert not _of_type(resources, kind)
    assert stack.capacity is None and not (out / "SageMakerLlmCapacity.template.json").exists()
    text = json.dumps(resources)
    assert "sagemaker:CreateTrainingPlan" not in text and "sagemaker:ExtendTrainingPlan" not in text


def test_default_app_runs_the_eagle_loop(synthesized):
    *_, out = synthesized
    resources = _all_resources(out)
    machines = _of_type(resources, "AWS::StepFunctions::StateMachine")
    assert any("optimizationjob" in json.dumps(m["Properties"]).lower() for m in machines)
    schedules = _of_type(resources, "AWS::Scheduler::Schedule")
    assert [s["Properties"]["ScheduleExpression"] for s in schedules] == ["rate(7 days)"]
    assert any("sagemaker:CreateOptimizationJob" in _actions(s) for s in _statements(resources))


def test_default_app_monitors_and_rolls_back(synthesized):
    *_, out = synthesized
    resources = _all_resources(out)
    assert _of_type(resources, "AWS::CloudWatch::Dashboard")
    alarms = _of_type(resources, "AWS::CloudWatch::Alarm")
    assert len(alarms) >= 7
    bases = [
        c
        for c in _of_type(resources, "AWS::SageMaker::InferenceComponent")
        if "BaseInferenceComponentName" not in c["Properties"]["Specification"]
    ]
    assert len(bases) == 2
    for base in bases:
        rollback = base["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
        assert rollback and all("AlarmName" in alarm for alarm in rollback)
