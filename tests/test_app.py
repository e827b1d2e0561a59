"""The team's app on the default config: synthesizes, passes cdk-nag and cfn-lint, matches its snapshot."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from aws_cdk import App, Environment
from aws_cdk.assertions import Template
from syrupy.extensions.json import JSONSnapshotExtension

from sagemaker_llm_cdk import load_config
from stacks import LlmPlatformStack, attach_checks
from tools.lint_templates import lint_folder

ROOT = Path(__file__).resolve().parents[1]


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
    (component,) = [c for c in template.find_resources("AWS::SageMaker::InferenceComponent").values()
                    if "BaseInferenceComponentName" not in c["Properties"]["Specification"]]
    assert component["Properties"]["Specification"]["DataCacheConfig"] == {"EnableCaching": True}
    targets = template.find_resources("AWS::ApplicationAutoScaling::ScalableTarget")
    assert any(t["Properties"]["ScalableDimension"] == "sagemaker:inference-component:DesiredCopyCount"
               for t in targets.values())


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
    role.add_to_policy(iam.PolicyStatement(actions=["s3:*"], resources=["*"]))
    attach_checks(app)
    with pytest.raises(Exception, match=r"(?s)ValidationFailed: .*AwsSolutions-IAM5\[Action::s3:\*\]"):
        app.synth()


def test_readme_diagram_is_generated_from_this_app(synthesized):
    from tools.diagram import END, START, render

    _, _, out = synthesized
    readme = (ROOT / "README.md").read_text()
    current = readme.split(START, 1)[1].split(END, 1)[0].strip()
    assert current == render(out), "run `make diagram` and commit README.md"
