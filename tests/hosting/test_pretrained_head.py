"""A pre-trained EAGLE head from day one: the lock records the head JumpStart publishes (writer, parser, errors), the
model serves it through the same serving model as a promoted head (bound and environment-agnostic stacks), an EAGLE
loop makes it the baseline a trained head must beat, and every conflicting setting is one clear error."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from aws_cdk import App, Environment, Stack
from aws_cdk.assertions import Annotations, Match, Template
from botocore.stub import Stubber
from sagemaker_llm_cdk import (
    ConfigurationError,
    EagleOptimization,
    EndpointOptions,
    LlmEndpoint,
    ModelSpec,
    PretrainedHead,
    PromotionParameter,
    SpeculativeDecoding,
)
from sagemaker_llm_cdk.hosting.jumpstart import JumpStartLock, SpecError, main, model_from_spec

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "jumpstart"
LOCK = ROOT / "config" / "jumpstart.lock.yaml"
GPT, GPT_VERSION = "openai-reasoning-gpt-oss-20b", "1.0.0"
LLAMA, LLAMA_VERSION = "meta-textgeneration-llama-3-1-8b-instruct", "2.2.1"
HEAD_URI = (
    "s3://jumpstart-cache-prod-us-east-1/openai-reasoning/openai-reasoning-gpt-oss-20b/artifacts/eagle3-draft/v1.0.0/"
)
SPEC_CONFIG = '{"method":"eagle3","model":"/opt/ml/additional-model-data-sources/eagle","num_speculative_tokens":5}'


def gpt_spec() -> dict[str, Any]:
    return json.loads((FIXTURES / "gpt-oss-20b-1.0.0.json").read_text())


def committed() -> JumpStartLock:
    return JumpStartLock.load(LOCK)


def gpt(**overrides: Any) -> ModelSpec:
    fields = dict(
        name="gpt-oss", source="jumpstart", model_id=GPT, version=GPT_VERSION, architecture="GptOssForCausalLM"
    )
    fields.update(overrides)
    return ModelSpec(**fields)


def bound() -> tuple[App, Stack, LlmEndpoint]:
    app = App()
    stack = Stack(app, "Main", env=Environment(account="123456789012", region="us-east-1"))
    return app, stack, LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.2xlarge"))


def gated_lock() -> JumpStartLock:
    """The committed lock plus a gated model whose pre-trained head JumpStart gates too (its own licence)."""
    spec = json.loads((FIXTURES / "llama-3-1-8b-instruct-2.2.1.json").read_text())
    spec["hosting_additional_data_sources"] = {
        "speculative_decoding": [
            {
                "channel_name": "eagle_draft",
                "artifact_version": "v1",
                "provider": {"name": "JumpStart", "classification": "gated"},
                "hosting_eula_key": "fmhMetadata/eula/llama3_1Eula.txt",
                "s3_data_source": {
                    "compression_type": "None",
                    "s3_data_type": "S3Prefix",
                    "s3_uri": "meta-textgeneration/meta-textgeneration-llama-3-1-8b-instruct/artifacts/eagle3/v1/",
                },
            }
        ]
    }
    return committed().with_entry(model_from_spec(spec, region="us-east-1"))


def serving_model(template: Template) -> dict[str, Any]:
    (resource,) = template.find_resources("Custom::EagleServingModel").values()
    return resource


# ---------------------------------------------------------------------- lock: writer and parser
def test_lock_writer_records_the_head_of_the_default_inference_config(tmp_path, capsys):
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    (header,) = [m for m in manifest if m["model_id"] == GPT]
    s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(s3)  # every request checked against botocore's S3 model
    for key, body in (("models_manifest.json", manifest), (header["spec_key"], gpt_spec())):
        stubber.add_response(
            "get_object",
            {"Body": io.BytesIO(json.dumps(body).encode())},
            {"Bucket": "jumpstart-cache-prod-us-east-1", "Key": key},
        )
    lock_file = tmp_path / "jumpstart.lock.yaml"
    with stubber:
        assert (
            main(
                [
                    "lock",
                    "--model-id",
                    GPT,
                    "--version",
                    GPT_VERSION,
                    "--region",
                    "us-east-1",
                    "--lock-file",
                    str(lock_file),
                ],
                s3=s3,
            )
            == 0
        )
        stubber.assert_no_pending_responses()
    assert f"pre-trained eagle draft: {HEAD_URI} (channel draft_model)" in capsys.readouterr().err
    entry = yaml.safe_load(lock_file.read_text())["regions"]["us-east-1"][GPT][GPT_VERSION]
    assert entry["inference_config"] == "lmi-optimized"
    assert entry["pretrained_head"] == {
        "channel_name": "draft_model",
        "artifact_version": "v1",
        "kind": "eagle",
        "s3_uri": HEAD_URI,
        "s3_data_type": "S3Prefix",
        "compression_type": "None",
        "licence": None,
    }
    assert JumpStartLock.load(lock_file).find(GPT, GPT_VERSION, "us-east-1").pretrained_head.s3_uri == HEAD_URI


def test_committed_lock_holds_models_with_and_without_heads():
    lock = committed()
    assert lock.find(GPT, GPT_VERSION, "us-east-1").pretrained_head.kind == "eagle"
    assert lock.find(LLAMA, LLAMA_VERSION, "us-east-1").pretrained_head is None
    assert "pretrained_head: null" in LOCK.read_text()  # a reviewer sees "none published" in the diff


@pytest.mark.parametrize(
    ("provider", "eula", "bucket", "gated"),
    [
        ({"name": "JumpStart", "classification": "ungated"}, None, "jumpstart-cache-prod-us-east-1", False),
        (
            {"name": "JumpStart", "classification": "gated"},
            "fmhMetadata/eula/llama3_2Eula.txt",
            "jumpstart-private-cache-prod-us-east-1",
            True,
        ),
        (None, None, "sagemaker-sd-models-prod-us-east-1", False),  # a draft SageMaker provides
    ],
)
def test_head_key_resolves_into_the_bucket_its_provider_names(provider, eula, bucket, gated):
    spec = gpt_spec()
    source = spec["inference_config_components"]["lmi-optimized"]["hosting_additional_data_sources"][
        "speculative_decoding"
    ][0]
    source.pop("provider")
    if provider:
        source["provider"] = provider
    if eula:
        source["hosting_eula_key"] = eula
    head = model_from_spec(spec, region="us-east-1").pretrained_head
    assert head.s3_uri.startswith(f"s3://{bucket}/openai-reasoning/")
    assert head.gated is gated
    assert (head.licence.name if head.licence else None) == ("llama3_2Eula" if eula else None)


def test_a_spec_without_configs_or_sources_has_no_head_and_other_configs_are_not_read():
    spec = gpt_spec()
    spec["inference_config_rankings"]["overall"]["rankings"] = ["lmi", "lmi-optimized"]
    model = model_from_spec(spec, region="us-east-1")
    assert model.pretrained_head is None and model.inference_config == "lmi"
    assert (
        model_from_spec(
            json.loads((FIXTURES / "qwen2-5-7b-instruct-1.2.0.json").read_text()), region="us-east-1"
        ).pretrained_head
        is None
    )


def test_a_draft_that_is_not_an_eagle_head_is_recorded_as_draft_model():
    spec = gpt_spec()
    source = spec["inference_config_components"]["lmi-optimized"]["hosting_additional_data_sources"][
        "speculative_decoding"
    ][0]
    source["s3_data_source"]["s3_uri"] = "meta-textgeneration/meta-textgeneration-llama-3-2-1b/artifacts/inference/v1/"
    assert model_from_spec(spec, region="us-east-1").pretrained_head.kind == "draft_model"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s["s3_data_source"].pop("s3_uri"), "has no channel_name or s3_data_source.s3_uri"),
        (lambda s: s.pop("channel_name"), "has no channel_name or s3_data_source.s3_uri"),
    ],
)
def test_malformed_spec_source_is_a_spec_error(change, message):
    spec = gpt_spec()
    change(
        spec["inference_config_components"]["lmi-optimized"]["hosting_additional_data_sources"]["speculative_decoding"][
            0
        ]
    )
    with pytest.raises(SpecError, match=message):
        model_from_spec(spec, region="us-east-1")


def test_inference_config_naming_a_missing_component_is_a_spec_error():
    spec = gpt_spec()
    spec["inference_configs"]["lmi-optimized"]["component_names"] = ["gone"]
    with pytest.raises(SpecError, match="inference config lmi-optimized names component gone"):
        model_from_spec(spec, region="us-east-1")


def test_malformed_head_entries_are_every_problem_in_one_error(tmp_path):
    data = yaml.safe_load(LOCK.read_text())
    head = data["regions"]["us-east-1"][GPT][GPT_VERSION]["pretrained_head"]
    head.update(kind="medusa", compression_type="zip", s3_uri="s3://jumpstart-cache-prod-us-east-1/no-slash")
    head.pop("channel_name")
    data["regions"]["us-east-1"][QWEN_ID := "huggingface-llm-qwen2-5-7b-instruct"]["1.2.0"]["pretrained_head"] = "yes"
    path = tmp_path / "jumpstart.lock.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigurationError) as error:
        JumpStartLock.load(path)
    lines = [p.line() for p in error.value.problems]
    where = f"regions.us-east-1.{GPT}.{GPT_VERSION}.pretrained_head"
    fix = f"fix: write it again: make jumpstart-lock MODEL={GPT} VERSION={GPT_VERSION} REGION=us-east-1"
    assert (
        f"{where}.channel_name: got '<missing>'; allowed: 1-64 letters, digits, '.', '-', '_' "
        f"(AdditionalModelDataSource.ChannelName); {fix}" in lines
    )
    assert f"{where}.kind: got 'medusa'; allowed: eagle or draft_model; {fix}" in lines
    assert f"{where}.compression_type: got 'zip'; allowed: None or Gzip; {fix}" in lines
    assert any(
        line.startswith(
            f"{where}.s3_uri: got 's3://jumpstart-cache-prod-us-east-1/no-slash'; allowed: a "
            "prefix ending in '/' with S3Prefix"
        )
        for line in lines
    )
    assert any(
        line.startswith(f"regions.us-east-1.{QWEN_ID}.1.2.0.pretrained_head: got 'yes'; allowed: a mapping")
        for line in lines
    )
    assert str(path) in str(error.value)


# ---------------------------------------------------------------------- served from day one
def test_bound_stack_serves_the_pretrained_head_through_the_serving_model(capsys):
    _, stack, endpoint = bound()
    component = endpoint.add_model("Gpt", gpt(), jumpstart_lock=committed())
    annotations = Annotations.from_stack(stack)  # synthesizes (forced); Template.from_stack then reuses that synth
    template = Template.from_stack(stack)
    resource = serving_model(template)
    assert "Condition" not in resource  # served from day one, not only after a promotion
    container = resource["Properties"]["PrimaryContainer"]
    assert container["AdditionalModelDataSources"] == [
        {
            "ChannelName": "eagle",
            "S3DataSource": {"S3Uri": HEAD_URI, "S3DataType": "S3Prefix", "CompressionType": "None"},
        }
    ]
    assert container["Environment"]["OPTION_SPECULATIVE_CONFIG"] == SPEC_CONFIG
    assert container["Environment"]["OPTION_MAX_MODEL_LEN"] == "32768"  # the lock's environment, as the model's
    serving_id = stack.get_logical_id(component.speculative_decoding.serving_model.node.default_child)
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {"Specification": Match.object_like({"ModelName": {"Fn::GetAtt": [serving_id, "ModelName"]}})},
    )
    assert set(template.find_parameters("*", {"Type": "AWS::SSM::Parameter::Value<String>"})) == {"BootstrapVersion"}
    policies = json.dumps(template.find_resources("AWS::IAM::Policy"))
    assert (
        "jumpstart-cache-prod-us-east-1/openai-reasoning/openai-reasoning-gpt-oss-20b/artifacts/eagle3-draft/"
        "v1.0.0/*" in policies
    )
    assert (
        f"serving the pre-trained EAGLE head of {GPT} {GPT_VERSION} in us-east-1 from day one: {HEAD_URI}"
        in capsys.readouterr().err
    )
    annotations.has_info("*", Match.string_like_regexp("serving the pre-trained EAGLE head"))


def test_eagle_loop_serves_the_pretrained_head_until_a_promotion_and_compares_with_it():
    app, stack, endpoint = bound()
    promos = Stack(app, "Promos", env=Environment(account="123456789012", region="us-east-1"))
    component = endpoint.add_model("Gpt", gpt(), jumpstart_lock=committed())
    head = PromotionParameter(promos, "GptHead", model_name=component.component_name)
    eagle = EagleOptimization(
        stack,
        "GptEagle",
        component=component,
        settings={"dataset": {"source": "s3", "s3_uri": "s3://my-data/chat/"}, "pretrained_head_speedup": 1.8},
        promotion_parameter=head.parameter,
    )
    assert eagle.speculative_decoding is component.speculative_decoding  # one serving model, not two
    template = Template.from_stack(stack)
    assert len(template.find_resources("Custom::EagleServingModel")) == 1
    resource = serving_model(template)
    assert "Condition" not in resource
    condition = stack.resolve(eagle.speculative_decoding.promoted_condition.logical_id)
    parameter = stack.resolve(eagle.speculative_decoding.draft_head_parameter.logical_id)
    assert resource["Properties"]["PrimaryContainer"]["AdditionalModelDataSources"][0]["S3DataSource"] == {
        "Fn::If": [
            condition,
            {"S3Uri": {"Ref": parameter}, "S3DataType": "S3Prefix", "CompressionType": "None"},
            {"S3Uri": HEAD_URI, "S3DataType": "S3Prefix", "CompressionType": "None"},
        ]
    }
    # a promoted head the stack may not serve (another stack's, other weights') gives way to the pre-trained one
    assert resource["Properties"]["PromotedHead"]["Fallback"] == {
        "S3Uri": HEAD_URI,
        "S3DataType": "S3Prefix",
        "CompressionType": "None",
    }
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like(
                    {"PRETRAINED_HEAD_S3_URI": HEAD_URI, "PRETRAINED_HEAD_SPEEDUP": "1.8", "SPEEDUP_THRESHOLD": "1.5"}
                )
            }
        },
    )


def test_gated_head_gets_model_access_config_only_on_its_own_branch():
    app, stack, endpoint = bound()
    promos = Stack(app, "Promos", env=Environment(account="123456789012", region="us-east-1"))
    component = endpoint.add_model(
        "Llama",
        ModelSpec(
            name="llama",
            source="jumpstart",
            model_id=LLAMA,
            version=LLAMA_VERSION,
            accept_eula=True,
            architecture="LlamaForCausalLM",
        ),
        jumpstart_lock=gated_lock(),
    )
    pretrained = component.speculative_decoding.pretrained_head
    assert pretrained.accept_eula and pretrained.s3_uri.startswith("s3://jumpstart-private-cache-prod-us-east-1/")
    EagleOptimization(
        stack,
        "LlamaEagle",
        component=component,
        settings={"dataset": {"source": "s3", "s3_uri": "s3://my-data/chat/"}},
        promotion_parameter=PromotionParameter(promos, "Head", model_name=component.component_name).parameter,
    )
    source = serving_model(Template.from_stack(stack))["Properties"]["PrimaryContainer"]["AdditionalModelDataSources"][
        0
    ]["S3DataSource"]["Fn::If"]
    assert "ModelAccessConfig" not in source[1]  # the promoted head is ours: no licence
    assert source[2]["ModelAccessConfig"] == {"AcceptEula": True}


def agnostic_component() -> tuple[App, Stack, LlmEndpoint, Any]:
    app = App()
    stack = Stack(app, "Agnostic")
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.2xlarge"))
    component = endpoint.add_model(
        "Qwen", ModelSpec(name="qwen", model_data_s3_uri="s3://weights/qwen3/", architecture="Qwen3ForCausalLM")
    )
    return app, stack, endpoint, component


def test_environment_agnostic_stack_serves_a_pretrained_head_given_to_the_construct():
    _, stack, _, component = agnostic_component()
    head = PretrainedHead(s3_uri="s3://heads/qwen3-eagle/", description="our benchmark", speedup=1.7)
    SpeculativeDecoding(stack, "Spec", component=component, pretrained_head=head, num_speculative_tokens=4)
    template = Template.from_stack(stack)
    resource = serving_model(template)
    assert "Condition" not in resource
    container = resource["Properties"]["PrimaryContainer"]
    assert container["AdditionalModelDataSources"][0]["S3DataSource"] == {
        "S3Uri": "s3://heads/qwen3-eagle/",
        "S3DataType": "S3Prefix",
        "CompressionType": "None",
    }
    assert json.loads(container["Environment"]["OPTION_SPECULATIVE_CONFIG"])["num_speculative_tokens"] == 4
    assert ":s3:::heads/qwen3-eagle/*" in json.dumps(template.find_resources("AWS::IAM::Policy"))


def test_environment_agnostic_stack_with_a_promotion_switches_between_both_heads():
    app, stack, _, component = agnostic_component()
    promos = Stack(app, "Promos")
    wiring = SpeculativeDecoding(
        stack, "Spec", component=component, pretrained_head=PretrainedHead(s3_uri="s3://heads/qwen3-eagle/")
    )
    heads = _bucket(stack)
    wiring.add_promotion(
        promotion_parameter_name=PromotionParameter(promos, "H", model_name="qwen").parameter_name,
        draft_bucket=heads,
        num_speculative_tokens=3,
    )
    resource = serving_model(Template.from_stack(stack))
    assert "Condition" not in resource
    source = resource["Properties"]["PrimaryContainer"]["AdditionalModelDataSources"][0]["S3DataSource"]
    assert source["Fn::If"][0] == stack.resolve(wiring.promoted_condition.logical_id)
    assert source["Fn::If"][2]["S3Uri"] == "s3://heads/qwen3-eagle/"
    assert (
        json.loads(resource["Properties"]["PrimaryContainer"]["Environment"]["OPTION_SPECULATIVE_CONFIG"])[
            "num_speculative_tokens"
        ]
        == 3
    )
    with pytest.raises(ConfigurationError, match="one promotion parameter per model"):
        wiring.add_promotion(promotion_parameter_name="/other/head", draft_bucket=heads)


def _bucket(stack: Stack) -> Any:
    from aws_cdk import aws_s3 as s3

    return s3.Bucket.from_bucket_name(stack, "Heads", "eagle-heads")


# ---------------------------------------------------------------------- opt out and conflicts
def test_pretrained_head_false_serves_no_head_and_says_so(capsys):
    _, stack, endpoint = bound()
    component = endpoint.add_model("Gpt", gpt(pretrained_head=False), jumpstart_lock=committed())
    assert component.speculative_decoding is None
    assert Template.from_stack(stack).find_resources("Custom::EagleServingModel") == {}
    assert "not served (pretrained_head: false)" in capsys.readouterr().err


def test_unset_switch_warns_and_serves_nothing_when_the_head_cannot_be_served(capsys):
    _, stack, endpoint = bound()
    component = endpoint.add_model("Gpt", gpt(architecture=None), jumpstart_lock=committed())
    assert component.speculative_decoding is None
    assert "architecture: one of" in capsys.readouterr().err
    Annotations.from_stack(stack).has_warning("*", Match.string_like_regexp("pre-trained EAGLE head .* not served"))


@pytest.mark.parametrize(
    ("spec", "lock", "message"),
    [
        (dict(architecture=None), committed, r"architecture: got None; allowed: one of .*GptOssForCausalLM"),
        (
            dict(model_id="huggingface-llm-qwen2-5-7b-instruct", version="1.2.0", architecture="Qwen2ForCausalLM"),
            committed,
            r"pretrained_head: got True; allowed: a model whose lock entry has a pre-trained head; JumpStart "
            r"publishes none for huggingface-llm-qwen2-5-7b-instruct 1.2.0 in us-east-1",
        ),
    ],
)
def test_pretrained_head_true_makes_each_obstacle_an_error(spec, lock, message):
    _, stack, endpoint = bound()
    with pytest.raises(ConfigurationError, match=message):
        endpoint.add_model("Gpt", gpt(pretrained_head=True, **spec), jumpstart_lock=lock())
    assert Template.from_stack(stack).find_resources("Custom::EagleServingModel") == {}


def test_gated_head_without_acceptance_is_an_error_when_required():
    lock = gated_lock()
    model = lock.find(LLAMA, LLAMA_VERSION, "us-east-1")
    ungated_model = lock.with_entry(type(model)(**{**model.__dict__, "licence": None}))  # only the head is gated
    _, _, endpoint = bound()
    with pytest.raises(
        ConfigurationError,
        match=r"accept_eula: got False; allowed: true: the pre-trained head of "
        rf"{LLAMA} 2.2.1 in us-east-1 is gated; its licence llama3_1Eula",
    ):
        endpoint.add_model(
            "Llama",
            ModelSpec(
                name="llama",
                source="jumpstart",
                model_id=LLAMA,
                version=LLAMA_VERSION,
                architecture="LlamaForCausalLM",
                pretrained_head=True,
            ),
            jumpstart_lock=ungated_model,
        )


def test_draft_model_kind_is_refused_when_required():
    spec = gpt_spec()
    source = spec["inference_config_components"]["lmi-optimized"]["hosting_additional_data_sources"][
        "speculative_decoding"
    ][0]
    source["s3_data_source"]["s3_uri"] = "meta-textgeneration/llama-3-2-1b/artifacts/inference/v1/"
    lock = committed().with_entry(model_from_spec(spec, region="us-east-1"))
    _, _, endpoint = bound()
    with pytest.raises(ConfigurationError, match=r"is a draft_model \(a separate small model, channel draft_model\)"):
        endpoint.add_model("Gpt", gpt(pretrained_head=True), jumpstart_lock=lock)


def test_lora_with_a_required_pretrained_head_is_refused():
    with pytest.raises(
        ConfigurationError,
        match=r"pretrained_head: got True; allowed: not with lora: vLLM cannot serve "
        r"LoRA adapters and a speculative-decoding head on one model",
    ):
        gpt(pretrained_head=True, lora={"max_gpu_adapters": 2, "max_cpu_adapters": 4, "max_rank": 16})


def test_lora_with_the_unset_switch_keeps_the_head_off_with_a_warning(capsys):
    _, _, endpoint = bound()
    component = endpoint.add_model(
        "Gpt", gpt(lora={"max_gpu_adapters": 2, "max_cpu_adapters": 4, "max_rank": 16}), jumpstart_lock=committed()
    )
    assert component.speculative_decoding is None
    assert "not served: lora:" in capsys.readouterr().err


def test_pretrained_head_on_an_own_model_is_refused():
    with pytest.raises(ConfigurationError, match=r"pretrained_head: got True; allowed: only with source: jumpstart"):
        ModelSpec(name="qwen", model_data_s3_uri="s3://weights/qwen3/", pretrained_head=True)


def test_pretrained_head_speedup_without_a_pretrained_head_is_refused():
    app, stack, endpoint = bound()
    promos = Stack(app, "Promos", env=Environment(account="123456789012", region="us-east-1"))
    component = endpoint.add_model("Gpt", gpt(pretrained_head=False), jumpstart_lock=committed())
    with pytest.raises(
        ConfigurationError,
        match=r"settings.pretrained_head_speedup: got 1.8; allowed: only on a model "
        r"that serves a pre-trained EAGLE head",
    ):
        EagleOptimization(
            stack,
            "GptEagle",
            component=component,
            settings={"dataset": {"source": "s3", "s3_uri": "s3://my-data/chat/"}, "pretrained_head_speedup": 1.8},
            promotion_parameter=PromotionParameter(promos, "H", model_name=component.component_name).parameter,
        )


@pytest.mark.parametrize(
    ("head", "message"),
    [
        (PretrainedHead(s3_uri="heads/qwen/"), r"pretrained_head.s3_uri: got 'heads/qwen/'"),
        (PretrainedHead(s3_uri="s3://heads/qwen"), r"a prefix ending in '/' with S3Prefix"),
        (PretrainedHead(s3_uri="s3://heads/qwen/", compression_type="zip"), r"compression_type: got 'zip'"),
    ],
)
def test_construct_level_head_is_checked(head, message):
    stack = Stack(App(), "Agnostic")
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.2xlarge"))
    component = endpoint.add_model(
        "Qwen", ModelSpec(name="qwen", model_data_s3_uri="s3://weights/qwen3/", architecture="Qwen3ForCausalLM")
    )
    with pytest.raises(ConfigurationError, match=message):
        SpeculativeDecoding(stack, "Spec", component=component, pretrained_head=head)


def test_neither_a_parameter_nor_a_head_is_refused():
    stack = Stack(App(), "Agnostic")
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.2xlarge"))
    component = endpoint.add_model(
        "Qwen", ModelSpec(name="qwen", model_data_s3_uri="s3://weights/qwen3/", architecture="Qwen3ForCausalLM")
    )
    with pytest.raises(
        ConfigurationError,
        match=r"promotion_parameter_name: got None; allowed: a promotion parameter "
        r"name, a pretrained_head, or both",
    ):
        SpeculativeDecoding(stack, "Spec", component=component)


def test_copy_of_spec_keeps_the_switch():
    assert copy.deepcopy(gpt(pretrained_head=False)).pretrained_head is False


def test_jumpstart_example_serves_the_pretrained_head_and_its_loop_compares_with_it():
    from sagemaker_llm_cdk import load_config

    from stacks import LlmPlatformStack

    path = ROOT / "config" / "examples" / "eagle-jumpstart.yaml"
    config = load_config(path)
    stack = LlmPlatformStack(
        App(), config.stack_name, config=config, config_dir=path.parent, env=Environment(region="us-east-1")
    )
    template = Template.from_stack(stack)
    source = serving_model(template)["Properties"]["PrimaryContainer"]["AdditionalModelDataSources"][0]["S3DataSource"]
    assert source["Fn::If"][2] == {"S3Uri": HEAD_URI, "S3DataType": "S3Prefix", "CompressionType": "None"}
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like({"PRETRAINED_HEAD_S3_URI": HEAD_URI, "PRETRAINED_HEAD_SPEEDUP": "1.6"})
            }
        },
    )


def write_config(tmp_path: Path, model: dict[str, Any]) -> Path:
    (tmp_path / "jumpstart.lock.yaml").write_text(LOCK.read_text())
    config = {
        "stack_name": "Js",
        "target": {"region": "us-east-1"},
        "endpoints": [{"name": "Chat", "instance_type": "ml.g6e.2xlarge", "models": [model]}],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_config_problems_of_the_head_come_with_file_and_path(tmp_path):
    from sagemaker_llm_cdk import load_config

    path = write_config(
        tmp_path,
        {
            "name": "qwen",
            "source": "jumpstart",
            "model_id": "huggingface-llm-qwen2-5-7b-instruct",
            "version": "1.2.0",
            "pretrained_head": True,
            "architecture": "Qwen2ForCausalLM",
            "eagle": {"pretrained_head_speedup": 1.5},
        },
    )
    with pytest.raises(ConfigurationError) as error:
        load_config(path)
    lines = [p.line() for p in error.value.problems]
    assert (
        "endpoints[0].models[0].pretrained_head: got True; allowed: a model whose lock entry has a pre-trained "
        "head; JumpStart publishes none for huggingface-llm-qwen2-5-7b-instruct 1.2.0 in us-east-1; fix: remove "
        "pretrained_head"
    ) in lines
    assert (
        "endpoints[0].models[0].eagle.pretrained_head_speedup: got 1.5; allowed: only on a model that serves a "
        "pre-trained EAGLE head; fix: remove pretrained_head_speedup"
    ) in lines
    assert "config.yaml" in str(error.value)


def test_config_required_head_needs_an_eagle_architecture(tmp_path):
    from sagemaker_llm_cdk import load_config

    path = write_config(
        tmp_path,
        {"name": "gpt", "source": "jumpstart", "model_id": GPT, "version": GPT_VERSION, "pretrained_head": True},
    )
    with pytest.raises(
        ConfigurationError,
        match=r"endpoints\[0\].models\[0\].architecture: got None; allowed: one of "
        r".* to serve the pre-trained head",
    ):
        load_config(path)
