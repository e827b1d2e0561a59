"""The capacity guard carries the endpoint config as rendered: a change of any create-only property of
``AWS::SageMaker::EndpointConfig`` (the config is then replaced) changes the guard's properties, so the guard
checks the plan again; a change that leaves the config alone does not."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack, Tags
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template
from sagemaker_llm_cdk import CopyScaling, EndpointOptions, InstanceScaling, LlmEndpoint, LlmMonitoring, ModelSpec
from sagemaker_llm_cdk.capacity.capacity_plan import CapacityPlan
from sagemaker_llm_cdk.capacity.guard import ENDPOINT_CONFIG_CREATE_ONLY, GUARD_REFERENCE, inputs_of

pytestmark = pytest.mark.synth

INSTANCE = "ml.p5e.48xlarge"
PLAN = {
    "existing_plan_arn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/chat-p5e",
    "instance_type": INSTANCE,
    "instance_count": 4,
}
ENVS = {"agnostic": None, "bound": Environment(account="123456789012", region="us-east-1")}
CUDA_12_8 = "lmi:0.36.0-lmi18.0.0-cu128"
CUDA_13_0 = "lmi:0.36.0-lmi28.0.0-cu130"

Change = Callable[[LlmEndpoint], None]


def build(
    env: Environment | None,
    change: Change | None = None,
    *,
    image: str = CUDA_12_8,
    when_not_active: str = "fail",
    max_instances: int = 2,
    role: bool = False,
    copies: int = 1,
) -> tuple[Stack, LlmEndpoint, dict[str, Any]]:
    """The serving stack ``S`` with one bound endpoint and its model, ``change`` applied before the synth."""
    app = App()
    capacity = Stack(app, "Capacity", env=env)
    serving = Stack(app, "S", env=env)
    plan = CapacityPlan(capacity, "Plan", settings={**PLAN, "when_not_active": when_not_active}, name_prefix="S")
    endpoint = LlmEndpoint(
        serving,
        "Chat",
        settings=EndpointOptions(
            instance_type=INSTANCE, scaling=InstanceScaling(min_instances=1, max_instances=max_instances)
        ),
        capacity_plan=plan,
        role=iam.Role(serving, "OtherRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
        if role
        else None,
    )
    endpoint.add_model(
        "Qwen",
        ModelSpec(
            name="qwen3-32b",
            model_data_s3_uri="s3://my-weights/qwen3-32b/",
            accelerators=2,
            image=image,
            copies=CopyScaling(min_copies=copies, max_copies=copies),
        ),
    )
    if change is not None:
        change(endpoint)
    return serving, endpoint, Template.from_stack(serving).to_json()["Resources"]


def guard_inputs(built: tuple[Stack, LlmEndpoint, dict[str, Any]]) -> list[Any]:
    stack, endpoint, resources = built
    assert endpoint.capacity_guard is not None
    return resources[stack.resolve(endpoint.capacity_guard.node.default_child.logical_id)]["Properties"][
        "EndpointConfigInputs"
    ]


def config_properties(built: tuple[Stack, LlmEndpoint, dict[str, Any]]) -> dict[str, Any]:
    stack, endpoint, resources = built
    return resources[stack.resolve(endpoint.cfn_endpoint_config.logical_id)]["Properties"]


@pytest.fixture(scope="module")
def base() -> dict[str, tuple[Stack, LlmEndpoint, dict[str, Any]]]:
    return {name: build(env) for name, env in ENVS.items()}


# ----------------------------------------------------------------------------- the create-only list


def test_the_create_only_list_is_cloudformations():
    schema = pytest.importorskip("cfnlint.schema")
    from sagemaker_llm_cdk.core import regions

    checked = 0
    for region in sorted(regions.schema_regions()):
        try:
            found = schema.PROVIDER_SCHEMA_MANAGER.get_resource_schema(region, "AWS::SageMaker::EndpointConfig").schema
        except schema.ResourceNotFoundError:
            continue
        pointers = found["createOnlyProperties"]
        assert all(p.startswith("/properties/") and p.count("/") == 2 for p in pointers)
        assert sorted(p.split("/")[2] for p in pointers) == sorted(ENDPOINT_CONFIG_CREATE_ONLY), region
        checked += 1
    assert checked > 20


# ----------------------------------------------------------------------------- each create-only property

OVERRIDES: dict[str, tuple[str, Any]] = {
    "AsyncInferenceConfig": ("AsyncInferenceConfig", {"OutputConfig": {"S3OutputPath": "s3://my-weights/async/"}}),
    "DataCaptureConfig": ("DataCaptureConfig.InitialSamplingPercentage", 50),
    "EnableNetworkIsolation": ("EnableNetworkIsolation", True),
    "EndpointConfigName": ("EndpointConfigName", "chat-config"),
    "ExecutionRoleArn": ("ExecutionRoleArn", "arn:aws:iam::123456789012:role/other"),
    "ExplainerConfig": (
        "ExplainerConfig",
        {"ClarifyExplainerConfig": {"ShapConfig": {"ShapBaselineConfig": {"MimeType": "text/csv"}}}},
    ),
    "KmsKeyId": ("KmsKeyId", "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"),
    "MetricsConfig": ("MetricsConfig", {"EnableEnhancedMetrics": True}),
    "ProductionVariants": ("ProductionVariants.0.VolumeSizeInGB", 200),
    "ShadowProductionVariants": (
        "ShadowProductionVariants",
        [{"VariantName": "Shadow", "InstanceType": "ml.g5.xlarge", "InitialInstanceCount": 1}],
    ),
    "VpcConfig": ("VpcConfig", {"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0123456789abcdef0"]}),
}
"""A change of each create-only property, through the escape hatch (``cfn_endpoint_config.add_property_override``)."""


def test_every_create_only_property_has_a_change():
    assert set(OVERRIDES) == set(ENDPOINT_CONFIG_CREATE_ONLY)


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("name", ENDPOINT_CONFIG_CREATE_ONLY)
def test_a_change_of_each_create_only_property_changes_the_guard(base, env, name):
    path, value = OVERRIDES[name]
    changed = build(ENVS[env], lambda e: e.cfn_endpoint_config.add_property_override(path, value))
    assert config_properties(changed) != config_properties(base[env])  # the override reached the template
    assert config_properties(changed).get(name) != config_properties(base[env]).get(name)
    assert guard_inputs(changed) != guard_inputs(base[env])
    assert guard_inputs(changed)[0] != guard_inputs(base[env])[0]  # the digest itself


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize(
    ("what", "kwargs"),
    [
        ("a model's image from CUDA 12.8 to 13.0 (InferenceAmiVersion)", {"image": CUDA_13_0}),
        ("the most instances (ManagedInstanceScaling)", {"max_instances": 3}),
        ("when_not_active (CapacityReservationConfig under a condition)", {"when_not_active": "on_demand"}),
    ],
)
def test_a_change_of_the_config_through_the_settings_changes_the_guard(base, env, what, kwargs):
    changed = build(ENVS[env], **kwargs)
    assert config_properties(changed)["ProductionVariants"] != config_properties(base[env])["ProductionVariants"]
    assert guard_inputs(changed)[0] != guard_inputs(base[env])[0], what


@pytest.mark.parametrize("env", ENVS)
def test_a_new_image_that_needs_another_ami_is_seen(base, env):
    variant = config_properties(build(ENVS[env], image=CUDA_13_0))["ProductionVariants"][0]
    assert "InferenceAmiVersion" in variant
    assert "InferenceAmiVersion" not in config_properties(base[env])["ProductionVariants"][0]


@pytest.mark.parametrize("env", ENVS)
def test_a_replaced_role_is_passed_to_cloudformation_as_itself(base, env):
    changed = build(ENVS[env], role=True)
    role_arn = config_properties(changed)["ExecutionRoleArn"]
    assert role_arn != config_properties(base[env])["ExecutionRoleArn"]
    assert role_arn in guard_inputs(changed) and role_arn not in guard_inputs(base[env])


# ----------------------------------------------------------------------------- changes that leave it alone


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize(
    ("what", "change", "kwargs"),
    [
        (
            "a tag on the endpoint config (Tags is updatable)",
            lambda e: Tags.of(e.cfn_endpoint_config).add("team", "x"),
            {},
        ),
        ("a model's copy count (its inference component only)", None, {"copies": 2}),
        (
            "the endpoint's rollout (its DeploymentConfig only)",
            lambda e: LlmMonitoring(Stack.of(e), "Monitoring").monitor_endpoint(e),
            {},
        ),
    ],
)
def test_a_change_outside_the_endpoint_config_leaves_the_guard_alone(base, env, what, change, kwargs):
    changed = build(ENVS[env], change, **kwargs)
    assert guard_inputs(changed) == guard_inputs(base[env]), what


@pytest.mark.parametrize("env", ENVS)
def test_a_second_build_is_the_same(base, env):
    assert guard_inputs(build(ENVS[env])) == guard_inputs(base[env])


# ----------------------------------------------------------------------------- no cycle, and what is passed


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("when_not_active", ["fail", "on_demand"])
def test_the_guard_never_reads_its_own_reservation_arn(env, when_not_active):
    built = build(ENVS[env], when_not_active=when_not_active)
    stack, endpoint, _ = built
    assert endpoint.capacity_guard is not None
    guard_id = stack.resolve(endpoint.capacity_guard.node.default_child.logical_id)
    assert guard_id in json.dumps(config_properties(built))  # the config reads the guard ...
    assert guard_id not in json.dumps(guard_inputs(built))  # ... and the guard not itself


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("when_not_active", ["fail", "on_demand"])
def test_the_rendered_properties_are_the_templates(env, when_not_active):
    built = build(
        ENVS[env],
        lambda e: e.cfn_endpoint_config.add_property_override(*OVERRIDES["ProductionVariants"]),
        when_not_active=when_not_active,
    )
    assert built[1].cfn_endpoint_config.rendered_properties() == config_properties(built)


def test_inputs_pass_deploy_time_values_once_and_digest_their_place():
    role = {"Fn::GetAtt": ["Role", "Arn"]}
    key = {"Fn::GetAtt": ["Key", "Arn"]}
    properties = {
        "ExecutionRoleArn": role,
        "KmsKeyId": key,
        "Tags": [{"Key": "a", "Value": "b"}],
        "DataCaptureConfig": {"KmsKeyId": key, "DestinationS3Uri": {"Fn::Join": ["", ["s3://", {"Ref": "B"}]]}},
        "ProductionVariants": [
            {
                "VariantName": "AllTraffic",
                "CapacityReservationConfig": {
                    "Fn::If": [
                        "Active",
                        {"MlReservationArn": {"Fn::GetAtt": ["Guard", "MlReservationArn"]}},
                        {"Ref": "AWS::NoValue"},
                    ]
                },
            }
        ],
    }
    digest, *passed = inputs_of(properties, guard_logical_id="Guard")
    # in the order of ENDPOINT_CONFIG_CREATE_ONLY: DataCaptureConfig's key and URI, then the role (the key once)
    assert passed == [key, {"Fn::Join": ["", ["s3://", {"Ref": "B"}]]}, role]
    assert digest.startswith("sha256:")
    untagged = inputs_of({k: v for k, v in properties.items() if k != "Tags"}, guard_logical_id="Guard")
    assert untagged == [digest, *passed]
    swapped = inputs_of({**properties, "ExecutionRoleArn": key, "KmsKeyId": role}, guard_logical_id="Guard")
    assert swapped[0] != digest  # the same values in other places
    assert GUARD_REFERENCE not in passed
