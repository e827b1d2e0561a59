"""LoRA adapters: adapter inference components, container settings, artifact access, manifests, stack split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_cdk import App, Aws, Environment, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks
from moto import mock_aws
from sagemaker_llm_cdk import ConfigurationError, EndpointOptions, LlmEndpoint, ModelComponent, ModelSpec
from sagemaker_llm_cdk.adapters import lora_adapter as lora_module
from sagemaker_llm_cdk.adapters.adapter_stack import (
    STACK_RESOURCE_LIMIT,
    AdapterStack,
    adapter_stacks,
    add_adapters,
    resource_count,
)
from sagemaker_llm_cdk.adapters.lora_adapter import (
    LoraAdapter,
    adapter_names,
    apply_lora_settings,
    artifact_arn,
    artifact_policies,
)
from sagemaker_llm_cdk.adapters.manifest import adapters_from, load_adapter_manifest
from sagemaker_llm_cdk.core.settings import validated
from sagemaker_llm_cdk.settings.adapters import AdapterSpec, LoraSettings
from support.principals import people

pytestmark = pytest.mark.synth

MODEL_URI = "s3://my-weights/qwen3-8b/"
ARTIFACT = "s3://my-adapters/support-bot.tar.gz"
LORA = LoraSettings(max_gpu_adapters=4, max_cpu_adapters=32, max_rank=64)


def lora_model(name: str = "qwen3-8b", **changes: Any) -> ModelSpec:
    return ModelSpec(**{"name": name, "model_data_s3_uri": MODEL_URI, "lora": LORA, **changes})


def base_in(stack: Stack, spec: ModelSpec | None = None) -> ModelComponent:
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    return endpoint.add_model("Base", spec or lora_model())


def new_base(spec: ModelSpec | None = None, env: Environment | None = None) -> tuple[App, Stack, ModelComponent]:
    app = App()
    stack = Stack(app, "Adapters", env=env)
    return app, stack, base_in(stack, spec)


def logical_id(stack: Stack, construct: Any) -> str:
    return stack.resolve(
        construct.logical_id if hasattr(construct, "logical_id") else construct.node.default_child.logical_id
    )


def ic_named(template: Template, name: str, stack_name: str = "Adapters") -> tuple[str, dict[str, Any]]:
    """The inference component of config name ``name`` (named <stack name>-<name>)."""
    found = template.find_resources(
        "AWS::SageMaker::InferenceComponent", {"Properties": {"InferenceComponentName": f"{stack_name}-{name}"}}
    )
    assert len(found) == 1, f"expected one inference component named {name}, found {len(found)}"
    return next(iter(found.items()))


# ---------------------------------------------------------------- one adapter, one stack


@pytest.fixture(scope="module")
def single() -> dict[str, Any]:
    app, stack, base = new_base()
    adapter = LoraAdapter(
        base, "SupportBot", base=base, settings=AdapterSpec(name="support-bot", artifact_s3_uri=ARTIFACT)
    )
    second = LoraAdapter(
        stack, "Second", base=base, settings={"name": "legal", "artifact_s3_uri": "s3://my-adapters/legal.tar.gz"}
    )
    caller = iam.Role(stack, "Caller", assumed_by=people(stack))
    adapter.grant_invoke(caller)
    return {
        "app": app,
        "stack": stack,
        "base": base,
        "adapter": adapter,
        "second": second,
        "caller": caller,
        "template": Template.from_stack(stack),
    }


def test_adapter_is_an_inference_component_on_the_base(single):
    _, component = ic_named(single["template"], "support-bot")
    props = component["Properties"]
    assert props["Specification"] == {
        "BaseInferenceComponentName": "Adapters-qwen3-8b",  # the base's physical name
        "Container": {"ArtifactUrl": ARTIFACT},
    }
    assert props["EndpointName"] == {
        "Fn::GetAtt": [logical_id(single["stack"], single["base"].endpoint.cfn_endpoint), "EndpointName"]
    }


def test_adapter_has_no_compute_variant_or_copy_count(single):
    single["template"].has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {
            "InferenceComponentName": "Adapters-support-bot",
            "VariantName": Match.absent(),
            "RuntimeConfig": Match.absent(),
            "Specification": {
                "BaseInferenceComponentName": "Adapters-qwen3-8b",
                "Container": Match.any_value(),
                "ComputeResourceRequirements": Match.absent(),
                "ModelName": Match.absent(),
            },
        },
    )


def test_adapter_is_created_after_its_base_and_its_read_permission(single):
    stack = single["stack"]
    _, component = ic_named(single["template"], "support-bot")
    base_id, _ = ic_named(single["template"], "qwen3-8b")
    assert base_id in component["DependsOn"]
    assert logical_id(stack, single["adapter"].artifact_policy) in component["DependsOn"]


def test_base_container_gets_lora_variables(single):
    single["template"].has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": Match.object_like(
                {
                    "Environment": {
                        "OPTION_MODEL_ID": "/opt/ml/model",
                        "OPTION_TENSOR_PARALLEL_DEGREE": "1",
                        "OPTION_ENABLE_LORA": "true",
                        "OPTION_MAX_LORAS": "4",
                        "OPTION_MAX_CPU_LORAS": "32",
                        "OPTION_MAX_LORA_RANK": "64",
                    }
                }
            )
        },
    )


def test_role_may_read_exactly_each_artifact_object(single):
    stack, base = single["stack"], single["base"]
    policies = single["template"].find_resources("AWS::IAM::ManagedPolicy")
    assert len(policies) == 1, "both adapters' artifacts fit in one policy"
    props = next(iter(policies.values()))["Properties"]
    assert props["Roles"] == [{"Ref": logical_id(stack, base.endpoint.role)}]
    assert props["PolicyDocument"]["Statement"] == [
        {
            "Action": "s3:GetObject",
            # Bucket names are global: only artifacts in the deploying account's buckets.
            "Condition": {"StringEquals": {"s3:ResourceAccount": {"Ref": "AWS::AccountId"}}},
            "Effect": "Allow",
            "Resource": [
                {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::my-adapters/support-bot.tar.gz"]]},
                {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::my-adapters/legal.tar.gz"]]},
            ],
        }
    ]


def test_grant_invoke_names_the_endpoint_and_this_adapter_only(single):
    stack, adapter = single["stack"], single["adapter"]
    adapter_id = logical_id(stack, adapter.cfn_inference_component)
    single["template"].has_resource_properties(
        "AWS::IAM::Policy",
        {
            "Roles": [{"Ref": logical_id(stack, single["caller"])}],
            "PolicyDocument": {
                "Statement": [
                    {
                        "Action": ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
                        "Effect": "Allow",
                        "Resource": [
                            {"Ref": logical_id(stack, adapter.endpoint.cfn_endpoint)},
                            {"Fn::GetAtt": [adapter_id, "InferenceComponentArn"]},
                        ],
                    }
                ],
                "Version": "2012-10-17",
            },
        },
    )


def test_attributes_and_registry(single):
    adapter, base = single["adapter"], single["base"]
    assert adapter.component_name == "Adapters-support-bot"  # <stack name>-<name>
    assert adapter.base is base and adapter.endpoint is base.endpoint
    assert adapter.node.default_child is adapter.cfn_inference_component
    assert adapter.node.path.endswith("/Base/SupportBot")
    assert adapter_names(base.endpoint) == {"Adapters-support-bot", "Adapters-legal"}
    assert artifact_policies(base.endpoint) == (adapter.artifact_policy,)


def test_metrics_use_the_adapter_dimension(single):
    metric = single["adapter"].metric_invocations()
    assert metric.namespace == "AWS/SageMaker"
    assert metric.dimensions == {"InferenceComponentName": "Adapters-support-bot"}
    assert single["adapter"].metric_model_latency().statistic == "p90"


def test_cdk_nag_reports_no_errors():
    app, stack, base = new_base()
    adapter = LoraAdapter(base, "A", base=base, settings=AdapterSpec(name="a", artifact_s3_uri=ARTIFACT))
    adapter.grant_invoke(iam.Role(stack, "Caller", assumed_by=people(stack)))
    add_adapters(base, [AdapterSpec(name=f"t-{i}", artifact_s3_uri=f"s3://my-adapters/t-{i}.tar.gz") for i in range(3)])
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged finding, nested stacks included


# ------------------------------------------------------------------- container settings


def test_max_rank_is_set_in_the_container():
    _, stack, base = new_base()
    LoraAdapter(base, "A", base=base, settings=AdapterSpec(name="a", artifact_s3_uri=ARTIFACT))
    environment = Template.from_stack(stack).find_resources("AWS::SageMaker::Model")
    env = next(iter(environment.values()))["Properties"]["PrimaryContainer"]["Environment"]
    assert env["OPTION_MAX_LORAS"] == "4" and env["OPTION_MAX_CPU_LORAS"] == "32"
    assert env["OPTION_MAX_LORA_RANK"] == "64"


def test_max_rank_is_left_to_the_container_only_without_adapters():
    _, stack, base = new_base(lora_model(lora=LoraSettings()))
    env = next(iter(Template.from_stack(stack).find_resources("AWS::SageMaker::Model").values()))
    assert "OPTION_MAX_LORA_RANK" not in env["Properties"]["PrimaryContainer"]["Environment"]
    with pytest.raises(
        ConfigurationError,
        match=r"base\.spec\.lora\.max_rank: got None; allowed: one of 1, 8, 16, 32, "
        r"64, 128, 256, 320, 512 when adapters are declared: the container's default \(16\) refuses "
        r"adapters of a higher rank; fix: set max_rank",
    ):
        LoraAdapter(base, "A", base=base, settings=AdapterSpec(name="a", artifact_s3_uri=ARTIFACT))


def test_adapters_declared_on_a_model_need_max_rank():
    with pytest.raises(ConfigurationError, match=r"lora\.max_rank: got None; allowed: one of 1, 8, 16"):
        lora_model(lora=LoraSettings(), adapters=(AdapterSpec(name="a", artifact_s3_uri=ARTIFACT),))


@pytest.mark.parametrize(
    "rank, fix",
    [(24, "use 32, the smallest accepted rank at least 24"), (0, "use 1"), (600, "use the smallest listed value")],
)
def test_max_rank_takes_only_the_ranks_vllm_accepts(rank, fix):
    with pytest.raises(
        ConfigurationError,
        match=rf"max_rank: got {rank}; allowed: one of 1, 8, 16, 32, 64, 128, 256, "
        rf"320, 512 \(the ranks vLLM accepts\); fix: {fix}",
    ):
        LoraSettings(max_rank=rank)


def test_apply_lora_settings_is_idempotent_and_skips_models_without_lora():
    _, _, base = new_base()
    first = apply_lora_settings(base)
    assert apply_lora_settings(base) == first
    assert base.environment["OPTION_ENABLE_LORA"] == "true"
    _, _, plain = new_base(ModelSpec(name="plain", model_data_s3_uri=MODEL_URI))
    assert apply_lora_settings(plain) == {}
    assert "OPTION_ENABLE_LORA" not in plain.environment


def test_custom_image_gets_a_warning_not_variables():
    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/my-server:1.0"
    _, stack, base = new_base(lora_model(image=image))
    LoraAdapter(base, "A", base=base, settings=AdapterSpec(name="a", artifact_s3_uri=ARTIFACT))
    assert "OPTION_ENABLE_LORA" not in base.environment
    Annotations.from_stack(stack).has_warning("*", Match.string_like_regexp("not the LMI container"))


def test_user_variable_that_contradicts_lora_is_an_error():
    # ModelComponent applies the lora settings itself, so the contradiction stops the base model.
    with pytest.raises(
        ConfigurationError, match=r"environment\.OPTION_MAX_LORAS: got '8'; allowed: '4'.*remove OPTION_MAX_LORAS"
    ):
        new_base(lora_model(environment={"OPTION_MAX_LORAS": "8"}))


def test_artifact_key_grants_decrypt_to_the_endpoint_role():
    _, stack, base = new_base()
    key = kms.Key(stack, "AdapterKey", enable_key_rotation=True)
    LoraAdapter(base, "A", base=base, settings=AdapterSpec(name="a", artifact_s3_uri=ARTIFACT), artifact_key=key)
    template = Template.from_stack(stack)
    policy = template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"Roles": [{"Ref": logical_id(stack, base.endpoint.role)}]}}
    )
    statements = next(iter(policy.values()))["Properties"]["PolicyDocument"]["Statement"]
    assert {
        "Action": "kms:Decrypt",
        "Effect": "Allow",
        "Resource": {"Fn::GetAtt": [logical_id(stack, key), "Arn"]},
    } in statements


def test_artifact_arn_escapes_iam_wildcards():
    assert artifact_arn("s3://b-1/a*b?$.tar.gz", partition="aws") == "arn:aws:s3:::b-1/a${*}b${?}${$}.tar.gz"


# ---------------------------------------------------------------------------- validation


def adapter_error(spec: dict[str, Any], base_spec: ModelSpec | None = None, *, before: list[str] = ()) -> str:
    _, stack, base = new_base(base_spec)
    for name in before:
        LoraAdapter(base, name, base=base, settings={"name": name, "artifact_s3_uri": ARTIFACT})
    with pytest.raises(ConfigurationError) as caught:
        LoraAdapter(stack, "New", base=base, settings=spec)
    return str(caught.value)


def test_name_longer_than_63_characters():
    message = adapter_error({"name": "a" * 64, "artifact_s3_uri": ARTIFACT})
    assert "Adapters/New" in message
    assert "settings.name: got 'aaaa" in message and "1-63 characters" in message


def test_name_with_other_characters():
    assert "settings.name: got 'support_bot'; allowed: 1-63 characters: letters, digits and hyphens" in adapter_error(
        {"name": "support_bot", "artifact_s3_uri": ARTIFACT}
    )


def test_name_of_the_base_model_is_taken():
    message = adapter_error({"name": "qwen3-8b", "artifact_s3_uri": ARTIFACT})
    assert "settings.name: got 'qwen3-8b'" in message and "model Adapters/Endpoint/Base has it" in message


def test_name_of_another_adapter_on_the_endpoint_is_taken():
    message = adapter_error({"name": "legal", "artifact_s3_uri": ARTIFACT}, before=["legal"])
    assert "settings.name: got 'legal'" in message and "adapter Adapters/Endpoint/Base/legal has it" in message


def test_same_name_on_another_endpoint_is_allowed():
    _, stack, base = new_base()
    other = LlmEndpoint(stack, "Other", settings=EndpointOptions(instance_type="ml.g6e.12xlarge")).add_model(
        "B", lora_model("other-base")
    )
    LoraAdapter(base, "A", base=base, settings={"name": "shared", "artifact_s3_uri": ARTIFACT})
    LoraAdapter(other, "A", base=other, settings={"name": "shared", "artifact_s3_uri": ARTIFACT})


def test_artifact_must_be_a_tar_gz():
    message = adapter_error({"name": "a", "artifact_s3_uri": "s3://my-adapters/support-bot/"})
    assert (
        "settings.artifact_s3_uri: got 's3://my-adapters/support-bot/'; allowed: an S3 object ending in '.tar.gz'"
        in message
    )
    assert "tar -czf adapter.tar.gz -C dir ." in message


def test_artifact_url_longer_than_sagemaker_accepts():
    message = adapter_error({"name": "a", "artifact_s3_uri": "s3://my-adapters/" + "k" * 1010 + ".tar.gz"})
    assert "settings.artifact_s3_uri" in message and "at most 1024 characters" in message


def test_base_without_lora():
    message = adapter_error(
        {"name": "a", "artifact_s3_uri": ARTIFACT}, ModelSpec(name="plain", model_data_s3_uri=MODEL_URI)
    )
    assert "base.spec.lora: got None; allowed: lora settings on model plain" in message
    assert "set lora on model plain" in message


def test_base_must_be_a_model_component():
    _, stack, base = new_base()
    first = LoraAdapter(base, "A", base=base, settings={"name": "a", "artifact_s3_uri": ARTIFACT})
    with pytest.raises(ConfigurationError, match=r"base: got 'LoraAdapter'; allowed: a ModelComponent"):
        LoraAdapter(stack, "OnAdapter", base=first, settings={"name": "b", "artifact_s3_uri": ARTIFACT})  # type: ignore[arg-type]


def test_every_problem_is_reported_at_once():
    message = adapter_error(
        {"name": "bad_name", "artifact_s3_uri": "s3://my-adapters/x"},
        ModelSpec(name="plain", model_data_s3_uri=MODEL_URI),
    )
    assert message.startswith("3 problem(s) in Adapters/New:")
    assert "settings.name" in message and "settings.artifact_s3_uri" in message and "base.spec.lora" in message


def test_gpu_slots_above_cpu_slots_contradict():
    with pytest.raises(ConfigurationError, match=r"max_cpu_adapters: got 4; allowed: at least max_gpu_adapters \(8\)"):
        validated(LoraSettings, {"max_gpu_adapters": 8, "max_cpu_adapters": 4}, where="lora")
    _, stack, _ = new_base()
    endpoint = LlmEndpoint(stack, "Second", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    with pytest.raises(ConfigurationError, match=r"lora\.max_cpu_adapters: got 4.*raise max_cpu_adapters"):
        endpoint.add_model(
            "M",
            {
                "name": "m",
                "model_data_s3_uri": MODEL_URI,  # type: ignore[arg-type]
                "lora": {"max_gpu_adapters": 8, "max_cpu_adapters": 4},
            },
        )


def test_more_policies_than_iam_allows_per_role(monkeypatch):
    monkeypatch.setattr(lora_module, "POLICY_CHARACTERS", 400)  # 3 ARNs per policy
    _, stack, base = new_base()
    specs = [AdapterSpec(name=f"t-{i}", artifact_s3_uri=f"s3://my-adapters/tenant-{i:04d}.tar.gz") for i in range(80)]
    with pytest.raises(ConfigurationError, match=r"managed policies.*spread them over more endpoints"):
        for spec in specs:
            LoraAdapter(base, spec.name, base=base, settings=spec)
    assert len(artifact_policies(base.endpoint)) == lora_module.POLICIES_PER_ROLE_MAX
    Annotations.from_stack(stack).has_warning("*", Match.string_like_regexp("Managed policies per role"))


# ------------------------------------------------------------------------------ manifest


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_manifest_list_in_yaml(tmp_path):
    write(
        tmp_path,
        "adapters.yaml",
        "- {name: a, artifact_s3_uri: 's3://my-adapters/a.tar.gz'}\n"
        "- {name: b, artifact_s3_uri: 's3://my-adapters/b.tar.gz'}\n",
    )
    adapters = load_adapter_manifest("adapters.yaml", base_dir=tmp_path)
    assert [a.name for a in adapters] == ["a", "b"]
    assert all(isinstance(a, AdapterSpec) for a in adapters)


def test_manifest_mapping_in_json(tmp_path):
    write(tmp_path, "m.json", json.dumps({"adapters": [{"name": "a", "artifact_s3_uri": "s3://my-adapters/a.tar.gz"}]}))
    assert load_adapter_manifest(str(tmp_path / "m.json"), base_dir="/elsewhere")[0].name == "a"


def test_manifest_item_problems_are_reported_together_with_paths(tmp_path):
    write(
        tmp_path,
        "m.yaml",
        """\
adapters:
  - {name: ok, artifact_s3_uri: 's3://my-adapters/ok.tar.gz'}
  - {name: bad_name, artifact_s3_uri: 's3://my-adapters/x.tar.gz'}
  - {name: c, artifact_s3_uri: 's3://my-adapters/c/'}
  - {name: ok, artifact_s3_uri: 's3://my-adapters/ok2.tar.gz'}
  - {name: d, artifact_uri: 's3://my-adapters/d.tar.gz'}
  - just-a-string
""",
    )
    with pytest.raises(ConfigurationError) as caught:
        load_adapter_manifest("m.yaml", base_dir=tmp_path)
    error = caught.value
    assert error.source == str(tmp_path / "m.yaml")
    assert [p.path for p in error.problems] == [
        "adapters_manifest[1].name",
        "adapters_manifest[2].artifact_s3_uri",
        "adapters_manifest[3].name",
        "adapters_manifest[4].artifact_s3_uri",
        "adapters_manifest[4].artifact_uri",
        "adapters_manifest[5]",
    ]
    assert "a name not used by adapters_manifest[0]" in str(error)
    assert "did you mean 'artifact_s3_uri'?" in str(error)


def test_manifest_of_the_wrong_shape():
    with pytest.raises(ConfigurationError, match=r"adapters_manifest: got \['items'\]; allowed: a list of"):
        adapters_from({"items": []}, source="m.yaml")
    with pytest.raises(ConfigurationError, match=r"adapters_manifest: got 'str'"):
        adapters_from("a", source="m.yaml")


def test_missing_manifest_file(tmp_path):
    with pytest.raises(
        ConfigurationError,
        match=r"adapters_manifest: got 'nope.yaml'; allowed: a readable JSON or YAML "
        r"file \(looked for .*nope.yaml: No such file",
    ):
        load_adapter_manifest("nope.yaml", base_dir=tmp_path)


def test_manifest_syntax_errors(tmp_path):
    write(tmp_path, "bad.yaml", "- {name: a\n")
    with pytest.raises(ConfigurationError, match=r"adapters_manifest \(line \d+, column \d+\).*valid YAML"):
        load_adapter_manifest("bad.yaml", base_dir=tmp_path)
    write(tmp_path, "dup.json", '[{"name": "a", "name": "b", "artifact_s3_uri": "s3://my-adapters/a.tar.gz"}]')
    with pytest.raises(ConfigurationError, match=r"key 'name' is given twice.*valid JSON"):
        load_adapter_manifest("dup.json", base_dir=tmp_path)


@mock_aws
def test_manifest_in_s3():
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="my-manifests")
    s3.put_object(
        Bucket="my-manifests",
        Key="team/adapters.yaml",
        Body=b"- {name: a, artifact_s3_uri: 's3://my-adapters/a.tar.gz'}\n",
    )
    adapters = load_adapter_manifest("s3://my-manifests/team/adapters.yaml", base_dir=".")
    assert adapters == (AdapterSpec(name="a", artifact_s3_uri="s3://my-adapters/a.tar.gz"),)


@mock_aws
def test_missing_s3_manifest_names_the_aws_error_and_the_fix():
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="my-manifests")
    with pytest.raises(ConfigurationError) as caught:
        load_adapter_manifest("s3://my-manifests/nope.yaml", base_dir=".")
    message = str(caught.value)
    assert caught.value.source == "s3://my-manifests/nope.yaml"
    assert "AWS said: NoSuchKey" in message
    assert (
        "aws s3 cp s3://my-manifests/nope.yaml adapters.yaml" in message
        and "point adapters_manifest at the file" in message
    )


def test_s3_manifest_without_credentials(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    import boto3

    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # another test's session may hold cached credentials
    with pytest.raises(
        ConfigurationError, match=r"AWS said: NoCredentialsError: Unable to locate credentials.*download it"
    ):
        load_adapter_manifest("s3://my-manifests/adapters.yaml", base_dir=".")


def test_s3_manifest_location_must_name_an_object():
    with pytest.raises(ConfigurationError, match=r"s3://bucket/key of one object"):
        load_adapter_manifest("s3://my-manifests/folder/", base_dir=".")


# -------------------------------------------------------------------- many adapters, many stacks


@pytest.fixture(scope="module")
def many() -> dict[str, Any]:
    app, stack, base = new_base()
    specs = [
        AdapterSpec(name=f"tenant-{i:04d}", artifact_s3_uri=f"s3://my-adapters/tenants/tenant-{i:04d}.tar.gz")
        for i in range(600)
    ]
    adapters = add_adapters(base, specs[:500])
    adapters += add_adapters(base, specs[500:])  # a second call continues the last stack
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # nag over every stack, nested ones included
    return {
        "app": app,
        "stack": stack,
        "base": base,
        "adapters": adapters,
        "assembly": assembly,
        "template": Template.from_stack(stack),
    }


def test_600_adapters_fill_nested_stacks_in_order(many):
    stacks = adapter_stacks(many["base"])
    assert [len(s.adapters) for s in stacks] == [400, 200]
    assert all(isinstance(s, AdapterStack) for s in stacks)
    assert many["adapters"][0].node.scope is stacks[0] and many["adapters"][400].node.scope is stacks[1]
    names = [a.component_name for s in stacks for a in s.adapters]
    assert names == [f"Adapters-tenant-{i:04d}" for i in range(600)]


def test_every_stack_stays_under_the_resource_limit(many):
    templates = [many["template"]] + [Template.from_stack(s) for s in adapter_stacks(many["base"])]
    counts = [len(t.to_json()["Resources"]) for t in templates]
    assert all(count < STACK_RESOURCE_LIMIT for count in counts), counts
    assert counts[1:] == [400, 200]
    assert resource_count(many["stack"]) == counts[0]
    nested = [t.find_resources("AWS::SageMaker::InferenceComponent") for t in templates[1:]]
    assert sum(len(n) for n in nested) == 600


def test_every_nested_adapter_depends_on_its_base_and_read_policies(many):
    stack, base = many["stack"], many["base"]
    base_id = logical_id(stack, base.cfn_inference_component)
    policy_ids = {logical_id(stack, p) for p in artifact_policies(base.endpoint)}
    nested = many["template"].find_resources("AWS::CloudFormation::Stack")
    assert len(nested) == 2
    for adapter_stack in adapter_stacks(base):
        resource = nested[stack.resolve(adapter_stack.nested_stack_resource.logical_id)]
        own_policies = {logical_id(stack, a.artifact_policy) for a in adapter_stack.adapters}
        assert set(resource["DependsOn"]) == {base_id} | own_policies
        assert own_policies <= policy_ids
        assert list(resource["Properties"]["Parameters"].values()) == [
            {"Fn::GetAtt": [logical_id(stack, base.endpoint.cfn_endpoint), "EndpointName"]}
        ]


def test_nested_adapters_get_the_endpoint_name_as_a_parameter(many):
    first = Template.from_stack(adapter_stacks(many["base"])[0])
    (parameter,) = first.to_json()["Parameters"]
    _, component = ic_named(first, "tenant-0000")
    assert component["Properties"]["EndpointName"] == {"Ref": parameter}
    assert component["Properties"]["Specification"]["BaseInferenceComponentName"] == "Adapters-qwen3-8b"


def test_artifact_policies_stay_within_iam_size(many):
    policies = many["template"].find_resources("AWS::IAM::ManagedPolicy")
    arns = 0
    for policy in policies.values():
        resources = policy["Properties"]["PolicyDocument"]["Statement"][0]["Resource"]
        arns += len(resources)
        # What IAM counts: the document with the partition filled in, whitespace removed.
        document = json.dumps(policy["Properties"]["PolicyDocument"], separators=(",", ":"))
        rendered = document.replace('{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},"', '"arn:aws-us-gov').replace(
            '"]]}', '"'
        )
        assert len(rendered) <= lora_module.POLICY_CHARACTERS
    assert arns == 600
    assert len(policies) <= lora_module.POLICIES_PER_ROLE_DEFAULT


def test_adapter_in_a_sibling_stack_depends_on_the_base_stack():
    app, stack, base = new_base()
    sibling = Stack(app, "Tenants")
    LoraAdapter(sibling, "A", base=base, settings={"name": "a", "artifact_s3_uri": ARTIFACT})
    _, component = ic_named(Template.from_stack(sibling), "a")
    assert stack in sibling.dependencies  # known once the app is synthesized
    assert "Fn::ImportValue" in component["Properties"]["EndpointName"]


def test_add_adapters_checks_everything_first():
    _, _, base = new_base()
    LoraAdapter(base, "Existing", base=base, settings={"name": "existing", "artifact_s3_uri": ARTIFACT})
    specs = [
        {"name": "a", "artifact_s3_uri": ARTIFACT},
        {"name": "a", "artifact_s3_uri": ARTIFACT},
        {"name": "existing", "artifact_s3_uri": ARTIFACT},
        {"name": "b", "artifact_s3_uri": "s3://my-adapters/b.zip"},
        "not-a-mapping",
        {"name": "c", "artifact_s3_uri": "s3://my-adapters/" + "k" * 1010 + ".tar.gz"},
    ]
    with pytest.raises(ConfigurationError) as caught:
        add_adapters(base, specs, max_per_stack=501)  # type: ignore[arg-type]
    assert [p.path for p in caught.value.problems] == [
        "max_per_stack",
        "adapters[1].name",
        "adapters[2].name",
        "adapters[3].artifact_s3_uri",
        "adapters[4]",
        "adapters[5].artifact_s3_uri",
    ]
    assert adapter_stacks(base) == ()  # nothing was created


def test_add_adapters_needs_a_base_with_lora():
    _, _, plain = new_base(ModelSpec(name="plain", model_data_s3_uri=MODEL_URI))
    with pytest.raises(ConfigurationError, match=r"base.spec.lora: got None.*set lora on model plain"):
        add_adapters(plain, [{"name": "a", "artifact_s3_uri": ARTIFACT}])


def test_add_adapters_keeps_one_max_per_stack_per_model():
    _, _, base = new_base()
    add_adapters(base, [{"name": "a", "artifact_s3_uri": ARTIFACT}], max_per_stack=10)
    with pytest.raises(ConfigurationError, match=r"max_per_stack: got 20; allowed: 10, the value an earlier call"):
        add_adapters(base, [{"name": "b", "artifact_s3_uri": ARTIFACT}], max_per_stack=20)


# --------------------------------------------------- the artifact policy's ARNs are read when CDK renders it
@pytest.mark.parametrize(
    "env", [None, Environment(account="123456789012", region="us-east-1")], ids=["agnostic", "bound"]
)
def test_an_adapter_added_after_the_policy_was_rendered_is_in_its_next_rendering(env):
    """The statement's resources are a token resolved at each rendering (uncached): none is frozen early."""
    _, stack, base = new_base(env=env)
    LoraAdapter(base, "One", base=base, settings={"name": "one", "artifact_s3_uri": "s3://my-adapters/one.tar.gz"})
    (policy,) = artifact_policies(base.endpoint)
    cfn = policy.node.default_child
    (first,) = stack.resolve(cfn.policy_document)["Statement"]
    one = first["Resource"]  # a single resource renders as itself, not a list
    assert "my-adapters/one.tar.gz" in json.dumps(one) and not isinstance(one, list)
    LoraAdapter(base, "Two", base=base, settings={"name": "two", "artifact_s3_uri": "s3://my-adapters/two.tar.gz"})
    (statement,) = stack.resolve(cfn.policy_document)["Statement"]
    two = json.loads(json.dumps(one).replace("one.tar.gz", "two.tar.gz"))
    own = {"StringEquals": {"s3:ResourceAccount": stack.resolve(Aws.ACCOUNT_ID)}}
    assert statement == {"Action": "s3:GetObject", "Condition": own, "Effect": "Allow", "Resource": [one, two]}
    Template.from_stack(stack).has_resource_properties(
        "AWS::IAM::ManagedPolicy", {"PolicyDocument": {"Statement": [statement]}}
    )


def test_component_arn_is_the_inference_components_arn_attribute_read_on_first_use():
    _, stack, base = new_base()
    adapter = LoraAdapter(
        base, "One", base=base, settings={"name": "one", "artifact_s3_uri": "s3://my-adapters/one.tar.gz"}
    )
    assert stack.resolve(adapter.component_arn) == {
        "Fn::GetAtt": [logical_id(stack, adapter.cfn_inference_component), "InferenceComponentArn"]
    }
    assert adapter.component_arn is adapter.component_arn, "read once"
    adapter.component_arn = "arn:aws:sagemaker:us-east-1:123456789012:inference-component/x"  # still assignable
    assert adapter.component_arn.endswith("/x")


def test_an_adapter_stack_built_by_hand_holds_its_settings_in_order():
    _, _, base = new_base()
    group = AdapterStack(
        base,
        "Tenants",
        base=base,
        settings=[
            AdapterSpec(name="b-tenant", artifact_s3_uri="s3://my-adapters/b.tar.gz"),
            {"name": "a-tenant", "artifact_s3_uri": "s3://my-adapters/a.tar.gz"},
        ],
    )
    assert [a.node.id for a in group.adapters] == ["b-tenant", "a-tenant"]


@pytest.mark.parametrize(
    ("keyword", "message"),
    [
        ("specs", r"specs: got 'given'; allowed: settings=; fix: rename specs= to settings= \(the same AdapterSpec"),
        ("adapter", r"adapter: got \[\]; allowed: one of base, settings, description; fix: remove adapter="),
    ],
)
def test_an_adapter_stack_refuses_a_keyword_it_does_not_take(keyword, message):
    _, stack, base = new_base()
    with pytest.raises(ConfigurationError, match=message):
        AdapterStack(base, "Tenants", base=base, **{keyword: []})
    assert base.node.try_find_child("Tenants") is None  # nothing half-created
