"""Model containers without network: EnableNetworkIsolation on by default, an opt-out, no checkov skip."""

from __future__ import annotations

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk.assertions import Match, Template
from sagemaker_llm_cdk import ConfigurationError, EndpointOptions, LlmEndpoint, ModelSpec
from sagemaker_llm_cdk.core.checkov import CHECKOV_REASONS, checkov_defaults
from sagemaker_llm_cdk.core.settings import validated

pytestmark = pytest.mark.synth

MODEL_URI = "s3://my-weights/qwen3-8b/"


def model_template(env: Environment | None = None, **spec) -> Template:
    app = App()
    stack = Stack(app, "Isolation", env=env)
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("m", ModelSpec(name="qwen3-8b", model_data_s3_uri=MODEL_URI, **spec))
    checkov_defaults(app)
    return Template.from_stack(stack)


@pytest.mark.parametrize(
    "env", [None, Environment(account="123456789012", region="us-east-1")], ids=["agnostic", "bound"]
)
def test_models_have_no_network_by_default_and_no_checkov_skip(env):
    template = model_template(env)
    template.has_resource(
        "AWS::SageMaker::Model",
        {
            "Properties": Match.object_like({"EnableNetworkIsolation": True}),
            "Metadata": Match.absent(),
        },
    )
    assert "CKV_AWS_370" not in CHECKOV_REASONS


def test_opting_out_turns_isolation_off_and_leaves_the_finding_to_the_owner():
    template = model_template(network_isolation=False)
    (model,) = template.find_resources("AWS::SageMaker::Model").values()
    assert model["Properties"].get("EnableNetworkIsolation") is False
    skips = model.get("Metadata", {}).get("checkov", {}).get("skip", [])
    assert [s for s in skips if s["id"] == "CKV_AWS_370"] == [], "whoever opts out acknowledges CKV_AWS_370 themselves"


@pytest.mark.parametrize("variable", ["HF_MODEL_ID", "OPTION_MODEL_ID"])
def test_a_hub_download_under_isolation_is_refused(variable):
    with pytest.raises(
        ConfigurationError,
        match=rf"environment\.{variable}: got 'Qwen/Qwen3-8B'; allowed: a local path "
        r"\(e\.g\. /opt/ml/model\) while network_isolation is on: the container "
        r"has no network; fix: serve the weights from model_data_s3_uri, or set "
        r"network_isolation: false for this model",
    ):
        validated(
            ModelSpec,
            {"name": "qwen3-8b", "model_data_s3_uri": MODEL_URI, "environment": {variable: "Qwen/Qwen3-8B"}},
            where="config/default.yaml",
        )
    # Allowed without isolation, and a local path is allowed with it.
    validated(
        ModelSpec,
        {
            "name": "qwen3-8b",
            "model_data_s3_uri": MODEL_URI,
            "environment": {variable: "Qwen/Qwen3-8B"},
            "network_isolation": False,
        },
        where="config/default.yaml",
    )
    validated(
        ModelSpec,
        {"name": "qwen3-8b", "model_data_s3_uri": MODEL_URI, "environment": {variable: "/opt/ml/model"}},
        where="config/default.yaml",
    )


def test_the_eagle_serving_model_is_isolated_like_its_base_model():
    """The draft head is mounted through AdditionalModelDataSources: the serving model keeps isolation."""
    from support.eagle import build

    built = build()
    (serving,) = [r for r in built.resources.values() if r["Type"] == "Custom::EagleServingModel"]
    assert serving["Properties"]["EnableNetworkIsolation"] == "true"
    assert serving["Properties"]["PrimaryContainer"]["AdditionalModelDataSources"][0]["ChannelName"]
    (model,) = [r for r in built.resources.values() if r["Type"] == "AWS::SageMaker::Model"]
    assert model["Properties"]["EnableNetworkIsolation"] is True
