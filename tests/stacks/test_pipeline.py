"""Tests for stacks/pipeline.py: the optional CDK Pipelines stack synthesizes offline, passes cdk-nag and
cfn-lint, runs the synth check first, deploys in waves and waits for an approval before production."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App
from sagemaker_llm_cdk import ConfigurationError
from support.examples import cli_context, synthesize_in_process

from stacks import attach_checks
from stacks.pipeline import PipelineStack, attach_pipeline, load_pipeline_settings

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
PIPELINE_CONFIG = ROOT / "config" / "pipeline.yaml"
CONNECTION = "arn:aws:codeconnections:us-east-1:333333333333:connection/00000000-0000-0000-0000-000000000000"


@dataclass
class Synthesized:
    outdir: Path

    def template(self, relative: str = "SageMakerLlmPipeline.template.json") -> dict[str, Any]:
        return json.loads((self.outdir / relative).read_text())

    def pipeline(self) -> dict[str, Any]:
        (pipeline,) = [r for r in self.template()["Resources"].values() if r["Type"] == "AWS::CodePipeline::Pipeline"]
        return pipeline["Properties"]

    def stage(self, name: str) -> list[dict[str, Any]]:
        (stage,) = [s for s in self.pipeline()["Stages"] if s["Name"] == name]
        return stage["Actions"]

    def buildspec(self, action: dict[str, Any]) -> str:
        project = action["Configuration"]["ProjectName"]["Ref"]
        return self.template()["Resources"][project]["Properties"]["Source"]["BuildSpec"]


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> Synthesized:
    """What `make synth PIPELINE=config/pipeline.yaml` synthesizes: app.py with -c pipeline=config/pipeline.yaml and
    the context `cdk synth` passes (cdk.json's feature flags, which change ARNs that acknowledgements name), run
    in this interpreter. app.py attaches cdk-nag AwsSolutions on the pipeline and every stage and exits non-zero
    on a finding, which fails this fixture. Stage config paths in pipeline.yaml are relative to the repository root."""
    outdir = tmp_path_factory.mktemp("pipeline")
    context = {**cli_context(ROOT), "pipeline": str(PIPELINE_CONFIG.relative_to(ROOT))}
    synthesize_in_process(ROOT / "app.py", outdir, context=context)
    return Synthesized(outdir)


def test_stages_in_order_source_check_synth_selfupdate_assets_then_waves(synthesized):
    assert [s["Name"] for s in synthesized.pipeline()["Stages"]] == [
        "Source",
        "Build",
        "UpdatePipeline",
        "Assets",
        "Dev",
        "Prod",
    ]
    (source,) = synthesized.stage("Source")
    assert source["ActionTypeId"]["Provider"] == "CodeStarSourceConnection"
    assert source["Configuration"]["ConnectionArn"] == CONNECTION
    assert source["Configuration"]["FullRepositoryId"] == "my-org/sagemaker-llm-cdk"
    assert source["Configuration"]["BranchName"] == "main"


def test_the_pull_request_synth_check_runs_first_and_gates_the_synth(synthesized):
    check, synth = sorted(synthesized.stage("Build"), key=lambda a: a["RunOrder"])
    assert (check["Name"], check["RunOrder"], synth["Name"], synth["RunOrder"]) == ("SynthCheck", 1, "Synth", 2)
    assert "make check" in synthesized.buildspec(check)
    assert "make synth PIPELINE=config/pipeline.yaml" in synthesized.buildspec(synth)
    assert "make check" not in synthesized.buildspec(synth)


def test_dev_deploys_without_approval_to_the_dev_account(synthesized):
    actions = synthesized.stage("Dev")
    assert not [a for a in actions if a["ActionTypeId"]["Category"] == "Approval"]
    assert {a["Configuration"]["StackName"] for a in actions} == {"Dev-SageMakerLlm"}
    assert all("111111111111" in json.dumps(a["RoleArn"]) for a in actions)


def test_prod_waits_for_a_manual_approval_then_deploys_both_regions_in_parallel(synthesized):
    actions = synthesized.stage("Prod")
    approvals = [a for a in actions if a["ActionTypeId"]["Category"] == "Approval"]
    deploys = [a for a in actions if a["ActionTypeId"]["Category"] == "Deploy"]
    assert [(a["Name"], a["RunOrder"]) for a in approvals] == [("ApproveProd", 1)]
    assert "ProdUsEast1 (222222222222/us-east-1)" in approvals[0]["Configuration"]["CustomData"]
    assert min(a["RunOrder"] for a in deploys) > 1
    # Each region: the capacity stack (prod binds an existing plan: it only watches it, never buys) before the platform.
    assert {a["Configuration"]["StackName"] for a in deploys} == {
        "ProdUsEast1-SageMakerLlm",
        "ProdUsWest2-SageMakerLlm",
        "ProdUsEast1-SageMakerLlmCapacity",
        "ProdUsWest2-SageMakerLlmCapacity",
    }
    for region in ("ProdUsEast1", "ProdUsWest2"):
        order = {
            a["Configuration"]["StackName"]: a["RunOrder"]
            for a in deploys
            if a["Configuration"]["StackName"].startswith(region)
            and a["Configuration"].get("ActionMode") == "CHANGE_SET_REPLACE"
        }
        assert order[f"{region}-SageMakerLlmCapacity"] < order[f"{region}-SageMakerLlm"]
    regions = {a["Name"].split(".")[0]: a.get("Region") for a in deploys}
    assert regions["ProdUsWest2"] == "us-west-2"
    for a in deploys:
        assert "222222222222" in json.dumps(a["RoleArn"])


def test_each_stage_is_the_platform_stack_from_its_environment_config(synthesized):
    manifest = json.loads((synthesized.outdir / "manifest.json").read_text())
    nested = {
        name: artifact for name, artifact in manifest["artifacts"].items() if artifact["type"] == "cdk:cloud-assembly"
    }
    assert set(nested) == {
        "assembly-SageMakerLlmPipeline-Dev",
        "assembly-SageMakerLlmPipeline-ProdUsEast1",
        "assembly-SageMakerLlmPipeline-ProdUsWest2",
    }
    expected = {
        "Dev": ("ml.g6e.12xlarge", "aws://111111111111/us-east-1"),
        "ProdUsEast1": ("ml.p5e.48xlarge", "aws://222222222222/us-east-1"),
        "ProdUsWest2": ("ml.p5e.48xlarge", "aws://222222222222/us-west-2"),
    }
    for stage, (instance_type, environment) in expected.items():
        folder = synthesized.outdir / f"assembly-SageMakerLlmPipeline-{stage}"
        stage_manifest = json.loads((folder / "manifest.json").read_text())
        (stack,) = [
            a
            for a in stage_manifest["artifacts"].values()
            if a["type"] == "aws:cloudformation:stack" and a["properties"].get("stackName") == f"{stage}-SageMakerLlm"
        ]
        assert stack["environment"] == environment
        template = json.loads((folder / stack["properties"]["templateFile"]).read_text())
        (config,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::EndpointConfig"]
        assert config["Properties"]["ProductionVariants"][0]["InstanceType"] == instance_type


def test_the_pipeline_templates_pass_cfn_lint(synthesized):
    from tools.lint_templates import lint_folder

    assert lint_folder(synthesized.outdir) == 0


def test_checkov_passes_on_the_pipeline_and_every_stage_template(synthesized):
    """The whole gate on what the pipeline deploys: the stages' templates carry the library's checkov skips
    (Aspects do not cross Stage boundaries, and build_pipeline() synthesizes stages early)."""
    from tools.run_checkov import CheckovError, find_checkov, run_checkov, summary_lines, templates_in

    try:
        checkov = find_checkov()
    except CheckovError as missing:
        pytest.skip(str(missing))
    templates = templates_in(synthesized.outdir)
    stage_templates = [t for t in templates if t.parent.name.startswith("assembly-")]
    assert {t.parent.name for t in stage_templates} == {
        "assembly-SageMakerLlmPipeline-Dev",
        "assembly-SageMakerLlmPipeline-ProdUsEast1",
        "assembly-SageMakerLlmPipeline-ProdUsWest2",
    }
    result = run_checkov(templates, checkov=checkov)
    assert result.ok, "\n".join(summary_lines(result))
    stage_names = {t.name for t in stage_templates}
    assert {s.check_id for s in result.skipped if s.template in stage_names} >= {"CKV_AWS_115", "CKV_AWS_158"}
    assert "CKV_AWS_370" not in {s.check_id for s in result.skipped}, "models are network-isolated, not skipped"


def test_the_pipelines_artifact_buckets_are_versioned_and_expire_replaced_artifacts(synthesized):
    buckets = [
        r
        for name in ("SageMakerLlmPipeline.template.json", "cross-region-stack-333333333333_us-west-2.template.json")
        for r in synthesized.template(name)["Resources"].values()
        if r["Type"] == "AWS::S3::Bucket"
    ]
    assert len(buckets) == 2
    for bucket in buckets:
        assert bucket["Properties"]["VersioningConfiguration"] == {"Status": "Enabled"}
        (rule,) = bucket["Properties"]["LifecycleConfiguration"]["Rules"]
        assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 30}
        skips = {s["id"]: s["comment"] for s in bucket["Metadata"]["checkov"]["skip"]}
        assert "CloudTrail" in skips["CKV_AWS_18"]


def test_a_star_grant_in_a_stage_fails_the_synth(tmp_path):
    """The wildcard guard reaches into stages: a stage's role may not gain an action on '*'."""
    from aws_cdk import aws_iam as iam

    import stacks.pipeline as pipeline_module

    original = pipeline_module.LlmPlatformStack

    class Widened(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            role = self.endpoints["Chat"].role
            role.add_to_principal_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))

    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        pipeline_module.LlmPlatformStack = Widened
        app = App(outdir=str(tmp_path), context=json.loads((ROOT / "cdk.json").read_text())["context"])
        with pytest.raises(
            RuntimeError,
            match=r"Dev/SageMakerLlm/Chat/ExecutionRole/DefaultPolicy/Resource\) "
            r"PolicyDocument\.Statement\[\d+\]: allows \['s3:GetObject'\] on '\*'",
        ):
            attach_pipeline(app, PIPELINE_CONFIG.relative_to(ROOT))
            attach_checks(app)
            app.synth()
    finally:
        pipeline_module.LlmPlatformStack = original
        os.chdir(cwd)


def test_connection_arn_from_context_overrides_the_file(tmp_path):
    other = CONNECTION.replace("00000000-0000-0000-0000-000000000000", "11111111-2222-3333-4444-555555555555")
    assert load_pipeline_settings(PIPELINE_CONFIG, connection_arn=other).source.connection_arn == other


def write_pipeline(tmp_path: Path, **changes: Any) -> Path:
    import yaml

    data = yaml.safe_load(PIPELINE_CONFIG.read_text())
    data.update(changes)
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_connection_arn_is_required(tmp_path):
    path = write_pipeline(tmp_path, source={"repository": "my-org/repo"})
    with pytest.raises(ConfigurationError, match=r"source.connection_arn: got None.*pass -c connection_arn=ARN"):
        load_pipeline_settings(path)


def test_a_malformed_connection_arn_is_refused(tmp_path):
    path = write_pipeline(tmp_path, source={"repository": "my-org/repo", "connection_arn": "arn:aws:s3:::bucket"})
    with pytest.raises(ConfigurationError, match=r"source.connection_arn: .*arn:aws:codeconnections"):
        load_pipeline_settings(path)


def test_stage_names_are_unique_across_waves(tmp_path):
    stage = {"name": "Dev", "config": "config/dev.yaml", "account": "111111111111", "region": "us-east-1"}
    path = write_pipeline(tmp_path, waves=[{"name": "A", "stages": [stage]}, {"name": "B", "stages": [stage]}])
    with pytest.raises(
        ConfigurationError, match=r"waves\[1\].stages\[0\].name: got 'Dev'; allowed: a name not used by"
    ):
        load_pipeline_settings(path)


def test_a_stage_config_for_another_account_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    stage = {"name": "Dev", "config": "config/prod.yaml", "account": "111111111111", "region": "us-east-1"}
    settings = load_pipeline_settings(write_pipeline(tmp_path, waves=[{"name": "Dev", "stages": [stage]}]))
    with pytest.raises(ConfigurationError) as error:
        PipelineStack(App(), "P", settings=settings)
    message = str(error.value)
    assert "waves[0].stages[0]" in message and "target.account: got '222222222222'" in message
    assert "111111111111, the account of pipeline stage Dev" in message


def test_a_missing_stage_config_is_the_stages_config_field_with_a_fix_for_the_pipeline_file(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    stage = {"name": "Dev", "config": "config/no-such-stage.yaml", "account": "111111111111", "region": "us-east-1"}
    settings = load_pipeline_settings(write_pipeline(tmp_path, waves=[{"name": "Dev", "stages": [stage]}]))
    with pytest.raises(
        ConfigurationError,
        match=(
            r"waves\[0\].stages\[0\].config: got '[^']*config/no-such-stage.yaml'; allowed: a readable YAML file; "
            r"fix: check the path \(No such file or directory\); or correct waves\[0\].stages\[0\].config in the "
            r"pipeline file"
        ),
    ) as error:
        PipelineStack(App(), "P", settings=settings)
    assert "-c config=PATH" not in str(error.value)  # -c config chooses the app's config, not a stage's


def test_app_attaches_the_pipeline_only_when_asked(synthesized):
    """app.py with -c pipeline=...: the pipeline stack only (the platform stacks are in its stages)."""
    if "attach_pipeline" not in (ROOT / "app.py").read_text():
        pytest.skip("app.py does not attach the pipeline yet (-c pipeline=config/pipeline.yaml)")
    manifest = json.loads((synthesized.outdir / "manifest.json").read_text())
    stacks = [n for n, a in manifest["artifacts"].items() if a["type"] == "aws:cloudformation:stack"]
    assert "SageMakerLlmPipeline" in stacks and "SageMakerLlm" not in stacks


def test_a_stage_config_is_checked_against_the_jumpstart_lock_for_the_stages_region(tmp_path):
    """A stage's config sets no target.region (the stage gives it): its JumpStart model must be locked for the
    stage's region, reported with the config's other problems and their lines, before anything is built."""
    import shutil

    shutil.copyfile(ROOT / "config" / "jumpstart.lock.yaml", tmp_path / "jumpstart.lock.yaml")
    config = tmp_path / "west.yaml"
    config.write_text(
        "endpoints:\n  - name: Chat\n    instance_type: ml.g6e.2xlarge\n    data_capture: {enabled: false}\n"
        "    models:\n      - name: gpt-oss-20b\n        source: jumpstart\n"
        '        model_id: openai-reasoning-gpt-oss-20b\n        version: "1.0.0"\n'
        "        copies: {max_copies: two}\n"
    )
    stage = {"name": "West", "config": str(config), "account": "111111111111", "region": "us-west-2"}
    settings = load_pipeline_settings(write_pipeline(tmp_path, waves=[{"name": "Dev", "stages": [stage]}]))
    with pytest.raises(ConfigurationError) as error:
        PipelineStack(App(), "P", settings=settings)
    lines = str(error.value).splitlines()[1:]
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"  - waves[0].stages[0] ({config}).endpoints[0].models[0].copies.max_copies: got 'two'")
    assert lines[1].startswith(
        f"  - waves[0].stages[0] ({config}).endpoints[0].models[0].model_id: got "
        "'openai-reasoning-gpt-oss-20b 1.0.0 in us-west-2'; allowed: a model id, version and region"
    )
    assert lines[1].endswith(f"where: {config} line 8")


def test_a_problem_found_while_building_a_stage_names_the_stage_the_config_path_and_its_line(tmp_path):
    config = tmp_path / "many.yaml"
    config.write_text(
        "endpoints:\n  - name: Chat\n    instance_type: ml.g6e.12xlarge\n    data_capture: {enabled: false}\n"
        "    models:\n      - name: qwen3-8b\n        model_data_s3_uri: s3://my-weights/qwen3-8b/\n"
        "        lora: {max_gpu_adapters: 2, max_cpu_adapters: 8, max_rank: 16}\n        environment:\n"
        + "".join(f"          VAR_{i}: x\n" for i in range(95))
    )
    stage = {"name": "Dev", "config": str(config), "account": "111111111111", "region": "us-east-1"}
    settings = load_pipeline_settings(write_pipeline(tmp_path, waves=[{"name": "Dev", "stages": [stage]}]))
    with pytest.raises(ConfigurationError) as error:
        PipelineStack(App(), "P", settings=settings)
    (problem,) = error.value.problems
    assert problem.path == (
        f"waves[0].stages[0] ({config}, found while building P/Dev/SageMakerLlm/Chat/qwen3-8b)"
        ".endpoints[0].models[0].environment"
    )
    assert problem.value == "101 variables (95 configured, 6 set by features, the last OPTION_MAX_LORA_RANK)"
    assert problem.where == f"{config} line 10"


def test_the_pipeline_allows_nothing_with_resource_level_permissions_on_star(synthesized):
    """CDK Pipelines writes KMS, CodeBuild, CloudFormation and S3 statements on '*'; each names its resources now
    (stacks/pipeline.py PIPELINE_WILDCARDS lists what keeps a wildcard, and why)."""
    from stacks.pipeline import PIPELINE_WILDCARDS

    statements = {
        (logical_id, i): s
        for logical_id, r in synthesized.template()["Resources"].items()
        if r["Type"] == "AWS::IAM::Policy"
        for i, s in enumerate(r["Properties"]["PolicyDocument"]["Statement"])
    }
    on_star = [
        (k, s["Action"])
        for k, s in statements.items()
        if "*" in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    ]
    assert on_star == []
    (keys,) = [s for s in statements.values() if "kms:Encrypt" in s["Action"] and "Condition" in s]
    assert keys["Condition"]["ForAnyValue:StringEquals"]["kms:ResourceAliases"][0].startswith("alias/")
    from sagemaker_llm_cdk.core.policy_guard import render

    assert [render(r).split(":", 2)[2] for r in keys["Resource"]] == ["kms:us-west-2:333333333333:key/*"]
    builds = [s for s in statements.values() if "codebuild:StartBuild" in s["Action"]]
    assert builds and all(
        "Fn::GetAtt" in r
        for s in builds
        for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    )
    (listing,) = [s for s in statements.values() if s["Action"] == "s3:ListBucket"]
    assert {render(r).split(":", 2)[2] for r in listing["Resource"]} >= {
        "s3:::cdk-*-assets-111111111111-us-east-1",
        "s3:::cdk-*-assets-222222222222-us-west-2",
    }
    (describe,) = [s for s in statements.values() if s["Action"] == "cloudformation:DescribeStacks"]
    assert "cloudformation:us-east-1:111111111111:stack/Dev-SageMakerLlm/*" in [
        render(r).split(":", 2)[2] for r in describe["Resource"]
    ]
    assert len(PIPELINE_WILDCARDS) == 3 and all(
        "https://docs.aws.amazon.com/" in why for why in PIPELINE_WILDCARDS.values()
    )
