"""The image capability table and the rules that read it: default image, AMI pairing, LoRA with EAGLE, accounts."""

from __future__ import annotations

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk.assertions import Template
from sagemaker_llm_cdk import (
    ConfigurationError,
    EagleSettings,
    EndpointOptions,
    LlmEndpoint,
    LoraSettings,
    ModelSpec,
    parse_config,
)
from sagemaker_llm_cdk.core.functions import powertools_layer
from sagemaker_llm_cdk.core.service_model import inference_ami_versions
from sagemaker_llm_cdk.settings import images
from support.stacks import MODEL_URI
from support.stacks import endpoint as support_endpoint

pytestmark = pytest.mark.synth

BOUND = Environment(account="123456789012", region="us-east-1")


def test_the_default_image_serves_lora_sessions_and_eagle_and_needs_the_cuda13_ami():
    default = images.LMI_IMAGES[images.DEFAULT_LMI_TAG]
    assert images.DEFAULT_LMI_TAG == "0.36.0-lmi28.0.0-cu130" and default.vllm == "0.26"
    assert default.lora and default.stateful_sessions and default.speculative_decoding
    assert not default.lora_with_speculative_decoding
    assert default.required_ami == images.CUDA13_AMI == "al2023-ami-sagemaker-inference-gpu-4-1"
    assert ModelSpec(name="m", model_data_s3_uri=MODEL_URI).lmi_tag == images.DEFAULT_LMI_TAG


def test_every_ami_the_table_names_is_one_sagemaker_accepts():
    assert set(images.AMI_CUDA) <= inference_ami_versions()
    assert {i.required_ami for i in images.LMI_IMAGES.values()} - {None} <= inference_ami_versions()
    for image in images.LMI_IMAGES.values():
        assert image.cuda == images.cuda_of_tag(image.tag)
        if image.cuda.startswith("13."):
            assert images.AMI_CUDA[image.required_ami] == "13.0"


def _endpoint(env=None, **kwargs):
    stack = Stack(App(), "S", env=env)
    return stack, support_endpoint(stack, "E", instance_type="ml.g6e.12xlarge", **kwargs)


@pytest.mark.parametrize("env", [None, BOUND], ids=["agnostic", "bound"])
def test_a_cuda13_image_gets_its_ami_by_default(env):
    stack, endpoint = _endpoint(env)
    endpoint.add_model("M", ModelSpec(name="m", model_data_s3_uri=MODEL_URI))
    (config,) = Template.from_stack(stack).find_resources("AWS::SageMaker::EndpointConfig").values()
    assert config["Properties"]["ProductionVariants"][0]["InferenceAmiVersion"] == images.CUDA13_AMI


def test_a_cuda12_image_leaves_the_ami_to_sagemaker():
    stack, endpoint = _endpoint()
    endpoint.add_model("M", ModelSpec(name="m", model_data_s3_uri=MODEL_URI, image="lmi:0.36.0-lmi18.0.0-cu128"))
    (config,) = Template.from_stack(stack).find_resources("AWS::SageMaker::EndpointConfig").values()
    assert "InferenceAmiVersion" not in config["Properties"]["ProductionVariants"][0]


def test_a_cuda13_image_on_another_ami_is_refused_in_code():
    _, endpoint = _endpoint(inference_ami_version="al2-ami-sagemaker-inference-gpu-3-1")
    with pytest.raises(
        ConfigurationError,
        match=r"inference_ami_version: got 'al2-ami-sagemaker-inference-gpu-3-1'; "
        r"allowed: al2023-ami-sagemaker-inference-gpu-4-1 for image \(lmi, tag 0.36.0-lmi28.0.0-cu130\): "
        r"a CUDA 13.0 image needs its driver; al2-ami-sagemaker-inference-gpu-3-1 has CUDA 12.4; fix: set "
        r"inference_ami_version: al2023-ami-sagemaker-inference-gpu-4-1",
    ):
        endpoint.add_model("M", ModelSpec(name="m", model_data_s3_uri=MODEL_URI))


def test_a_cuda13_image_uri_on_another_ami_is_refused_in_the_config():
    data = {
        "endpoints": [
            {
                "name": "Chat",
                "instance_type": "ml.g6e.12xlarge",
                "inference_ami_version": "al2-ami-sagemaker-inference-gpu-2",
                "models": [
                    {
                        "name": "m",
                        "model_data_s3_uri": MODEL_URI,
                        "image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:"
                        "0.36.0-lmi27.0.0-cu130-v1.1",
                    }
                ],
            }
        ]
    }
    with pytest.raises(
        ConfigurationError,
        match=r"endpoints\[0\].inference_ami_version: got "
        r"'al2-ami-sagemaker-inference-gpu-2'; allowed: al2023-ami-sagemaker-inference-gpu-4-1 for "
        r"models\[0\].image",
    ):
        parse_config(data, source="x.yaml")


# ------------------------------------------------------------------- LoRA and EAGLE
EAGLE = EagleSettings()


@pytest.mark.parametrize(
    "image", ["lmi", "lmi:0.36.0-lmi18.0.0-cu128", "lmi:0.35.0-lmi17.0.0-cu128", "lmi:0.36.0-lmi25.0.0-cu130"]
)
def test_lora_and_eagle_on_one_model_is_refused_with_the_reason(image):
    with pytest.raises(
        ConfigurationError,
        match=r"eagle: got 'set together with lora'; allowed: eagle on a model "
        r"without lora: .*cannot serve LoRA adapters and speculative decoding on one model \(vLLM's "
        r"feature matrix marks LoRA with speculative decoding unsupported\).*; fix: keep eagle on q and "
        r"move lora and the adapters to a second model on the same weights \(e.g. name: q-lora\)",
    ):
        ModelSpec(
            name="q",
            model_data_s3_uri=MODEL_URI,
            architecture="Qwen3ForCausalLM",
            image=image,
            lora=LoraSettings(max_rank=16),
            eagle=EAGLE,
        )


def test_lora_and_eagle_on_a_custom_image_is_refused_too():
    with pytest.raises(ConfigurationError, match=r"capabilities unknown"):
        ModelSpec(
            name="q",
            model_data_s3_uri=MODEL_URI,
            architecture="Qwen3ForCausalLM",
            image="111122223333.dkr.ecr.us-east-1.amazonaws.com/my-vllm:1",
            lora=LoraSettings(),
            eagle=EAGLE,
        )


def test_eagle_on_an_image_without_speculative_decoding_is_refused():
    with pytest.raises(
        ConfigurationError,
        match=r"eagle: got 'set'; allowed: an image that serves EAGLE heads "
        r"\(OPTION_SPECULATIVE_CONFIG, from LMI 17\); lmi:0.34.0-lmi16.0.0-cu128",
    ):
        ModelSpec(
            name="q",
            model_data_s3_uri=MODEL_URI,
            architecture="Qwen3ForCausalLM",
            image="lmi:0.34.0-lmi16.0.0-cu128",
            eagle=EAGLE,
        )


def test_eagle_alone_and_lora_alone_pass():
    ModelSpec(name="q", model_data_s3_uri=MODEL_URI, architecture="Qwen3ForCausalLM", eagle=EAGLE)
    ModelSpec(name="q", model_data_s3_uri=MODEL_URI, lora=LoraSettings(max_rank=16))


def test_the_default_config_serves_eagle_and_adapters_on_separate_models():
    from sagemaker_llm_cdk import load_config
    from support.examples import ROOT

    (chat,) = load_config(ROOT / "config" / "default.yaml").endpoints
    for model in chat.models:
        assert not (model.eagle and model.lora), model.name
    assert any(m.eagle for m in chat.models) and any(m.adapters for m in chat.models)


# ----------------------------------------------------------------------------- accounts
@pytest.mark.parametrize(
    "region, account",
    [
        ("us-east-1", "763104351884"),
        ("ap-northeast-3", "364406365360"),
        ("cn-north-1", "727897471807"),
        ("us-gov-west-1", "442386744353"),
    ],
)
def test_the_lmi_image_comes_from_the_regions_registry(region, account):
    stack = Stack(App(), "S", env=Environment(account="123456789012", region=region))
    endpoint = LlmEndpoint(stack, "E", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("M", ModelSpec(name="m", model_data_s3_uri=MODEL_URI))
    (model,) = Template.from_stack(stack).find_resources("AWS::SageMaker::Model").values()
    assert stack.resolve(model["Properties"]["PrimaryContainer"]["Image"])["Fn::Join"][1][0] == f"{account}.dkr.ecr."


def test_a_region_without_a_known_registry_is_refused():
    stack = Stack(App(), "S", env=Environment(account="123456789012", region="mx-central-1"))
    endpoint = LlmEndpoint(stack, "E", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    with pytest.raises(
        ConfigurationError,
        match=r"region: got 'mx-central-1'; allowed: a region where AWS publishes "
        r"the LMI image: .*us-east-1.*; fix: deploy to a listed region, or push the image",
    ):
        endpoint.add_model("M", ModelSpec(name="m", model_data_s3_uri=MODEL_URI))


def test_the_powertools_layer_account_is_per_partition():
    agnostic = Stack(App(), "A")
    arn = agnostic.resolve(powertools_layer(agnostic).layer_version_arn)
    assert {"Fn::FindInMap": ["PowertoolsLayerAccounts", {"Ref": "AWS::Partition"}, "account"]} in arn["Fn::Join"][1]
    bound = Stack(App(), "B", env=BOUND)
    assert ":017000801446:layer:" in "".join(
        str(p) for p in bound.resolve(powertools_layer(bound).layer_version_arn)["Fn::Join"][1]
    )
    for region in ("us-gov-west-1", "cn-north-1"):
        gov = Stack(App(), "G", env=Environment(account="123456789012", region=region))
        with pytest.raises(
            ConfigurationError,
            match=r"partition: got 'aws-(us-gov|cn)'; allowed: a partition where the "
            r"Powertools layer is published: aws",
        ):
            powertools_layer(gov)


def test_speculative_decoding_on_a_lora_model_is_refused_when_eagle_comes_from_the_construct():
    """ModelSpec without eagle but with lora, then EagleOptimization(settings=...): refused at synth too."""
    from sagemaker_llm_cdk import EagleOptimization, PromotionParameter

    app = App()
    promotions, stack = Stack(app, "P"), Stack(app, "S")
    head = PromotionParameter(promotions, "H", model_name="q")
    endpoint = LlmEndpoint(stack, "E", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    model = endpoint.add_model(
        "M",
        ModelSpec(
            name="q", model_data_s3_uri=MODEL_URI, architecture="Qwen3ForCausalLM", lora=LoraSettings(max_rank=16)
        ),
    )
    with pytest.raises(
        ConfigurationError,
        match=r"component\.spec\.lora: got 'set'; allowed: a model without lora for "
        r"speculative decoding: lmi \(0\.36\.0-lmi28\.0\.0-cu130, vLLM 0\.26\) cannot serve LoRA adapters "
        r"and speculative decoding on one model",
    ):
        EagleOptimization(stack, "Eagle", component=model, settings=EagleSettings(), promotion_parameter=head.parameter)
