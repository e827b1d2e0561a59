"""ModelComponent: SageMaker model, inference component, NVMe caching, copy autoscaling, grants, metrics."""

from __future__ import annotations

import re

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template
from sagemaker_llm_cdk import (
    ConfigurationError,
    CopyScaling,
    EndpointOptions,
    LlmEndpoint,
    ModelComponent,
    ModelSpec,
    Placement,
)
from sagemaker_llm_cdk.core.settings import validated
from support.stacks import MODEL_URI, endpoint_stack, new_stack, only

pytestmark = pytest.mark.synth

BOUND = Environment(account="123456789012", region="us-east-1")
AUTOSCALED = ModelSpec(
    name="qwen3-8b",
    model_data_s3_uri=MODEL_URI,
    accelerators=2,
    min_memory_mb=32768,
    copies=CopyScaling(min_copies=0, max_copies=4, target_concurrent_requests_per_copy=6),
)


@pytest.fixture(scope="module")
def autoscaled() -> tuple[Stack, ModelComponent, Template]:
    stack, endpoint = endpoint_stack(models=[AUTOSCALED])
    return stack, endpoint.models[0], Template.from_stack(stack)


def test_model_reads_uncompressed_weights_from_s3(autoscaled):
    _, _, template = autoscaled
    model = only(template, "AWS::SageMaker::Model")["Properties"]
    assert "ModelName" not in model
    container = model["PrimaryContainer"]
    assert container["ModelDataSource"] == {
        "S3DataSource": {"S3Uri": MODEL_URI, "S3DataType": "S3Prefix", "CompressionType": "None"}
    }
    assert container["Environment"] == {"OPTION_MODEL_ID": "/opt/ml/model", "OPTION_TENSOR_PARALLEL_DEGREE": "2"}
    assert container["Image"]["Fn::Join"][1][-1].endswith("/djl-inference:0.36.0-lmi28.0.0-cu130")
    # The registry account is the region's (a mapping in an environment-agnostic stack)
    assert container["Image"]["Fn::Join"][1][0] == {
        "Fn::FindInMap": ["LmiImageAccounts", {"Ref": "AWS::Region"}, "account"]
    }


def test_compressed_weights():
    stack, _ = endpoint_stack(models=[ModelSpec(name="m", model_data_s3_uri="s3://b-1/model.tar.gz")])
    source = only(Template.from_stack(stack), "AWS::SageMaker::Model")["Properties"]["PrimaryContainer"][
        "ModelDataSource"
    ]
    assert source["S3DataSource"] == {
        "S3Uri": "s3://b-1/model.tar.gz",
        "S3DataType": "S3Object",
        "CompressionType": "Gzip",
    }


def test_inference_component_spec(autoscaled):
    _, _, template = autoscaled
    component = only(template, "AWS::SageMaker::InferenceComponent")["Properties"]
    assert component["InferenceComponentName"] == "Test-qwen3-8b"  # <stack name>-<name>
    assert component["VariantName"] == "AllTraffic"
    assert component["EndpointName"]["Fn::GetAtt"][1] == "EndpointName"
    spec = component["Specification"]
    assert spec["ModelName"]["Fn::GetAtt"][1] == "ModelName"
    assert spec["ComputeResourceRequirements"] == {
        "NumberOfAcceleratorDevicesRequired": 2,
        "MinMemoryRequiredInMb": 32768,
    }
    assert spec["DataCacheConfig"] == {"EnableCaching": True}
    assert spec["StartupParameters"] == {
        "ModelDataDownloadTimeoutInSeconds": 3600,
        "ContainerStartupHealthCheckTimeoutInSeconds": 3600,
    }
    # Autoscaled: no CopyCount in the template, so an update of the component never resets the copies.
    assert "RuntimeConfig" not in component


@pytest.mark.parametrize("env", [None, BOUND])
def test_update_keeps_autoscaled_copies_unless_pinned(env):
    """CopyCount is write-only and applied on every update: only fixed counts (or a pin) carry one."""
    for copies, expected in (
        (CopyScaling(min_copies=1, max_copies=4), Match.absent()),
        (CopyScaling(min_copies=0, max_copies=4), Match.absent()),
        (CopyScaling(min_copies=2, max_copies=4, pin_copy_count=True), {"CopyCount": 2}),
        (CopyScaling(min_copies=0, max_copies=4, pin_copy_count=True), {"CopyCount": 1}),
        # Autoscaling turned off: the fixed count is applied by the next update, as the user asked.
        (CopyScaling(min_copies=3, max_copies=3), {"CopyCount": 3}),
    ):
        stack = Stack(App(), "Copies", env=env)
        LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge")).add_model(
            "m", ModelSpec(name="m", model_data_s3_uri=MODEL_URI, copies=copies)
        )
        template = Template.from_stack(stack)
        template.has_resource_properties("AWS::SageMaker::InferenceComponent", {"RuntimeConfig": expected})
        if copies.autoscaled:
            template.has_resource_properties(
                "AWS::ApplicationAutoScaling::ScalableTarget", {"MinCapacity": copies.min_copies, "MaxCapacity": 4}
            )


def test_pin_copy_count_only_with_autoscaling():
    with pytest.raises(
        ConfigurationError, match=r"copies.pin_copy_count: got True; allowed: only for autoscaled models"
    ):
        validated(
            ModelSpec,
            {
                "name": "m",
                "model_data_s3_uri": MODEL_URI,
                "copies": {"min_copies": 2, "max_copies": 2, "pin_copy_count": True},
            },
            where="test",
        )


def test_caching_can_be_turned_off():
    stack, _ = endpoint_stack(models=[ModelSpec(name="m", model_data_s3_uri=MODEL_URI, cache_weights=False)])
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {"Specification": Match.object_like({"DataCacheConfig": {"EnableCaching": False}})},
    )


def test_copy_autoscaling_target_and_tracking(autoscaled):
    _, _, template = autoscaled
    target = only(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert target["Properties"] == {
        "ServiceNamespace": "sagemaker",
        "ResourceId": "inference-component/Test-qwen3-8b",
        "ScalableDimension": "sagemaker:inference-component:DesiredCopyCount",
        "MinCapacity": 0,
        "MaxCapacity": 4,
    }
    assert len(target["DependsOn"]) == 1
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": {
                "TargetValue": 6,
                "PredefinedMetricSpecification": {
                    "PredefinedMetricType": "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
                },
                "ScaleInCooldown": 300,
                "ScaleOutCooldown": 60,
            },
        },
    )


def test_scale_from_zero_step_policy_fired_by_alarm(autoscaled):
    _, _, template = autoscaled
    policies = template.find_resources(
        "AWS::ApplicationAutoScaling::ScalingPolicy", {"Properties": {"PolicyType": "StepScaling"}}
    )
    assert len(policies) == 1
    ((step_id, step),) = policies.items()
    assert step["Properties"]["StepScalingPolicyConfiguration"] == {
        "AdjustmentType": "ChangeInCapacity",
        "MetricAggregationType": "Maximum",
        "Cooldown": 60,
        "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}],
    }
    alarm = only(template, "AWS::CloudWatch::Alarm")["Properties"]
    assert alarm["MetricName"] == "NoCapacityInvocationFailures"
    assert alarm["Namespace"] == "AWS/SageMaker"
    assert alarm["Dimensions"] == [{"Name": "InferenceComponentName", "Value": "Test-qwen3-8b"}]
    assert alarm["Threshold"] == 1 and alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["AlarmActions"] == [{"Fn::GetAtt": [step_id, "Arn"]}]


def test_fixed_copies_have_no_autoscaling():
    stack, _ = endpoint_stack(
        models=[ModelSpec(name="m", model_data_s3_uri=MODEL_URI, copies=CopyScaling(min_copies=2, max_copies=2))]
    )
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 0)
    template.has_resource_properties("AWS::SageMaker::InferenceComponent", {"RuntimeConfig": {"CopyCount": 2}})


def test_autoscaling_without_zero_has_no_step_policy():
    stack, _ = endpoint_stack(
        models=[ModelSpec(name="m", model_data_s3_uri=MODEL_URI, copies=CopyScaling(min_copies=1, max_copies=3))]
    )
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalingPolicy", 1)
    template.resource_count_is("AWS::CloudWatch::Alarm", 0)


def test_role_reads_only_the_model_prefix_and_image_repository(autoscaled):
    _, _, template = autoscaled
    statements = only(template, "AWS::IAM::Policy")["Properties"]["PolicyDocument"]["Statement"]
    get = next(s for s in statements if s["Action"] == "s3:GetObject")
    assert get["Resource"]["Fn::Join"][1][-1] == ":s3:::my-weights/qwen3-8b/*"
    # Bucket names are global: only a bucket the deploying account owns is read.
    own = {"StringEquals": {"s3:ResourceAccount": {"Ref": "AWS::AccountId"}}}
    assert get["Condition"] == own
    listing = next(s for s in statements if s["Action"] == "s3:ListBucket")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["qwen3-8b/*"]}, **own}
    ecr = next(s for s in statements if "ecr:BatchGetImage" in s["Action"])
    parts = ecr["Resource"]["Fn::Join"][1]
    assert parts[-2:] == [
        {"Fn::FindInMap": ["LmiImageAccounts", {"Ref": "AWS::Region"}, "account"]},
        ":repository/djl-inference",
    ]


def test_weights_owner_names_the_bucket_account():
    stack, _ = endpoint_stack(
        models=[ModelSpec(name="m", model_data_s3_uri=MODEL_URI, model_data_owner="444455556666")]
    )
    statements = only(Template.from_stack(stack), "AWS::IAM::Policy")["Properties"]["PolicyDocument"]["Statement"]
    reads = [s for s in statements if s["Action"] in ("s3:GetObject", "s3:ListBucket")]
    assert len(reads) == 2
    assert all(s["Condition"]["StringEquals"] == {"s3:ResourceAccount": "444455556666"} for s in reads)


@pytest.mark.parametrize("owner", ["12345678901", "1234567890123", "acct-123456789012", "*"])
def test_weights_owner_is_a_twelve_digit_account(owner):
    with pytest.raises(ValueError, match=r"model_data_owner[\s\S]*pattern"):
        ModelSpec(name="m", model_data_s3_uri=MODEL_URI, model_data_owner=owner)


def test_weights_owner_is_refused_with_jumpstart():
    with pytest.raises(ConfigurationError, match=r"model_data_owner[\s\S]*nothing with source: jumpstart"):
        validated(
            ModelSpec,
            {
                "name": "m",
                "source": "jumpstart",
                "model_id": "meta-textgeneration-llama-3-1-8b-instruct",
                "version": "2.2.1",
                "model_data_owner": "444455556666",
            },
            where="test.yaml",
        )


def test_custom_image_and_model_key():
    stack = new_stack()
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    key = kms.Key(stack, "WeightsKey")
    image = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/my/vllm:1.2"
    ModelComponent(
        stack,
        "M",
        endpoint=endpoint,
        model_data_key=key,
        settings=ModelSpec(name="m", model_data_s3_uri=MODEL_URI, image=image, environment={"X": "1"}),
    )
    template = Template.from_stack(stack)
    container = only(template, "AWS::SageMaker::Model")["Properties"]["PrimaryContainer"]
    assert container["Image"] == image
    assert container["Environment"] == {"X": "1"}  # not LMI: no LMI variables
    statements = only(template, "AWS::IAM::Policy")["Properties"]["PolicyDocument"]["Statement"]
    ecr = next(s for s in statements if "ecr:BatchGetImage" in s["Action"])
    assert ecr["Resource"]["Fn::Join"][1][-1] == ":ecr:eu-west-1:111122223333:repository/my/vllm"
    assert any(s["Action"] == "kms:Decrypt" for s in statements)


def test_add_environment_reaches_the_model_and_refuses_conflicts():
    stack, endpoint = endpoint_stack(
        models=[ModelSpec(name="m", model_data_s3_uri=MODEL_URI, environment={"A": "user"})]
    )
    component = endpoint.models[0]
    component.add_environment("OPTION_ENABLE_LORA", "true")
    env = only(Template.from_stack(stack), "AWS::SageMaker::Model")["Properties"]["PrimaryContainer"]["Environment"]
    assert env["OPTION_ENABLE_LORA"] == "true" and env["A"] == "user"
    with pytest.raises(ConfigurationError, match=r"environment.A: got 'user'; allowed: 'other', which a feature"):
        component.add_environment("A", "other")


def test_grant_invoke_only_this_component():
    stack, endpoint = endpoint_stack(models=[AUTOSCALED])
    role = iam.Role(stack, "Caller", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    endpoint.models[0].grant_invoke(role)
    template = Template.from_stack(stack)
    policy = next(
        p
        for p in template.find_resources("AWS::IAM::Policy").values()
        if p["Properties"]["Roles"] == [{"Ref": stack.get_logical_id(role.node.default_child)}]
    )
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"]
    endpoint_ref, component_ref = statement["Resource"]
    assert endpoint_ref == {"Ref": stack.get_logical_id(endpoint.cfn_endpoint)}
    assert component_ref == {
        "Fn::GetAtt": [stack.get_logical_id(endpoint.models[0].cfn_inference_component), "InferenceComponentArn"]
    }


@pytest.mark.parametrize(
    "method, namespace, name",
    [
        ("metric_invocations", "AWS/SageMaker", "Invocations"),
        ("metric_model_latency", "AWS/SageMaker", "ModelLatency"),
        ("metric_invocation_4xx_errors", "AWS/SageMaker", "Invocation4XXErrors"),
        ("metric_invocation_5xx_errors", "AWS/SageMaker", "Invocation5XXErrors"),
        ("metric_no_capacity_invocation_failures", "AWS/SageMaker", "NoCapacityInvocationFailures"),
        ("metric_concurrent_requests_per_copy", "AWS/SageMaker", "ConcurrentRequestsPerCopy"),
        ("metric_copy_count", "/aws/sagemaker/InferenceComponents", "CopyCount"),
        ("metric_gpu_utilization", "/aws/sagemaker/InferenceComponents", "GPUUtilizationNormalized"),
        ("metric_gpu_memory_utilization", "/aws/sagemaker/InferenceComponents", "GPUMemoryUtilizationNormalized"),
    ],
)
def test_component_metrics(autoscaled, method, namespace, name):
    stack, component, _ = autoscaled
    metric = getattr(component, method)()
    assert (metric.namespace, metric.metric_name) == (namespace, name)
    assert stack.resolve(metric.dimensions) == {"InferenceComponentName": "Test-qwen3-8b"}


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize(
    "fields, message",
    [
        ({"name": "qwen_3.8b"}, r"name: got 'qwen_3.8b'; allowed: 1-63 characters: letters, digits and hyphens"),
        ({"name": "x" * 64}, r"name: got 'x{61}\.\.\.|name: got 'x+'; allowed: 1-63 characters"),
        (
            {"model_data_s3_uri": "Qwen/Qwen3-8B"},
            r"model_data_s3_uri: got 'Qwen/Qwen3-8B'; allowed: an s3:// URI; "
            r"Hugging Face Hub ids are not accepted",
        ),
        ({"model_data_s3_uri": "https://bucket/x/"}, r"allowed: an S3 URI like s3://my-bucket/path/"),
        (
            {"model_data_s3_uri": "s3://bucket/weights"},
            r"allowed: an S3 prefix ending in '/'.*fix: write s3://bucket/weights/",
        ),
        ({"image": "nginx:latest"}, r"image: got 'nginx:latest'; allowed: 'lmi', 'lmi:<tag>' or an ECR image URI"),
        ({"accelerators": 0}, r"accelerators: got 0; allowed: at least 1"),
        (
            {"copies": {"min_copies": 3, "max_copies": 2}},
            r"copies.min_copies: got 3; allowed: at most max_copies \(2\)",
        ),
        ({"copies": {"max_copies": 0}}, r"copies.max_copies: got 0; allowed: at least 1"),
        ({"environment": {"BAD-NAME": "1"}}, r"environment.BAD-NAME: got 'BAD-NAME'; allowed: a variable name"),
        (
            {"model_data_download_timeout_seconds": 10},
            r"model_data_download_timeout_seconds: got 10; allowed: at least 60",
        ),
    ],
)
def test_model_spec_validation(fields, message):
    data = {"name": "m", "model_data_s3_uri": MODEL_URI, **fields}
    stack = new_stack()
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    with pytest.raises(ConfigurationError, match=message) as info:
        ModelComponent(stack, "M", endpoint=endpoint, settings=ModelSpec.model_construct(**data))
    assert "Test/M" in str(info.value)


def test_more_accelerators_than_the_instance_has():
    stack = new_stack()
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    with pytest.raises(
        ConfigurationError, match=r"accelerators: got 8; allowed: at most 4, the accelerators of one ml.g6e.12xlarge"
    ):
        endpoint.add_model("m", ModelSpec(name="m", model_data_s3_uri=MODEL_URI, accelerators=8))


def test_duplicate_component_name_on_one_endpoint():
    stack = new_stack()
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("a", ModelSpec(name="same", model_data_s3_uri=MODEL_URI))
    with pytest.raises(ConfigurationError, match=r"name: got 'same'; allowed: a name no other model or adapter"):
        endpoint.add_model("b", ModelSpec(name="same", model_data_s3_uri=MODEL_URI))


def test_validated_specs_are_reused_and_unchecked_ones_are_checked():
    from sagemaker_llm_cdk.core.settings import validated

    checked = ModelSpec(name="m", model_data_s3_uri=MODEL_URI)
    assert validated(ModelSpec, checked, where="here") is checked
    unchecked = ModelSpec.model_construct(name="bad_name", model_data_s3_uri=MODEL_URI)
    with pytest.raises(ConfigurationError, match=r"here:\n  - name: got 'bad_name'"):
        validated(ModelSpec, unchecked, where="here")


@pytest.mark.parametrize("env", [None, BOUND])
def test_role_writes_the_component_log_group_only_and_passes_cdk_nag(env):
    """Inference-component containers log to /aws/sagemaker/InferenceComponents/<component>: that group, no other."""
    from aws_cdk import Validations
    from cdk_nag import AwsSolutionsChecks

    app = App()
    stack = Stack(app, "Logs", env=env)
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    component = endpoint.add_model("m", ModelSpec(name="qwen3-8b", model_data_s3_uri=MODEL_URI))
    assert component.log_group_name == "/aws/sagemaker/InferenceComponents/Logs-qwen3-8b"
    template = Template.from_stack(stack)
    statements = only(template, "AWS::IAM::Policy")["Properties"]["PolicyDocument"]["Statement"]
    writes = [s for s in statements if "logs:PutLogEvents" in s["Action"]]
    groups = sorted(
        stack.resolve(r)["Fn::Join"][1][-1] if isinstance(stack.resolve(r), dict) else stack.resolve(r)
        for s in writes
        for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    )
    tails = sorted(g.split(":log-group:")[-1] for g in groups)
    assert tails == sorted(
        [
            f"/aws/sagemaker/Endpoints/{endpoint.physical_name}",
            f"/aws/sagemaker/Endpoints/{endpoint.physical_name}:log-stream:*",
            "/aws/sagemaker/InferenceComponents/Logs-qwen3-8b",
            "/aws/sagemaker/InferenceComponents/Logs-qwen3-8b:log-stream:*",
        ]
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged finding


@pytest.mark.parametrize("env", [None, BOUND])
def test_copies_are_spread_over_zones_by_default(env):
    """Default placement keeps a model available when one zone fails: SPREAD, zones balanced."""
    stack = Stack(App(), "Placement", env=env)
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("a", ModelSpec(name="a", model_data_s3_uri=MODEL_URI))
    endpoint.add_model(
        "b", ModelSpec(name="b", model_data_s3_uri=MODEL_URI, placement=Placement.binpack(max_zone_imbalance=3))
    )
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {
            "InferenceComponentName": "Placement-a",
            "Specification": Match.object_like(
                {
                    "SchedulingConfig": {
                        "PlacementStrategy": "SPREAD",
                        "AvailabilityZoneBalance": {"EnforcementMode": "PERMISSIVE", "MaxImbalance": 1},
                    }
                }
            ),
        },
    )
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {
            "InferenceComponentName": "Placement-b",
            "Specification": Match.object_like(
                {
                    "SchedulingConfig": {
                        "PlacementStrategy": "BINPACK",
                        "AvailabilityZoneBalance": {"EnforcementMode": "PERMISSIVE", "MaxImbalance": 3},
                    }
                }
            ),
        },
    )


def test_placement_rules():
    with pytest.raises(ConfigurationError) as info:
        validated(
            ModelSpec,
            {
                "name": "m",
                "model_data_s3_uri": MODEL_URI,
                "placement": {"strategy": "RANDOM", "max_zone_imbalance": 101},
            },
            where="test",
        )
    message = str(info.value)
    assert "placement.strategy: got 'RANDOM'; allowed: " in message and "SPREAD" in message
    assert "placement.max_zone_imbalance: got 101" in message


# ------------------------------------------------------------------- names
@pytest.mark.parametrize("env", [None, BOUND])
def test_two_stacks_of_one_config_never_share_a_component_name(env):
    """Names come from the stack: dev and prod of one config in one account and region do not collide."""
    names = []
    for stack_name in ("LlmDev", "LlmProd"):
        stack = Stack(App(), stack_name, env=env)
        endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
        model = endpoint.add_model(
            "m", ModelSpec(name="qwen3-8b", model_data_s3_uri=MODEL_URI, copies=CopyScaling(min_copies=0, max_copies=2))
        )
        template = Template.from_stack(stack)
        template.has_resource_properties(
            "AWS::SageMaker::InferenceComponent", {"InferenceComponentName": f"{stack_name}-qwen3-8b"}
        )
        template.has_resource_properties(
            "AWS::ApplicationAutoScaling::ScalableTarget", {"ResourceId": f"inference-component/{stack_name}-qwen3-8b"}
        )
        template.has_resource_properties(
            "AWS::ApplicationAutoScaling::ScalingPolicy", {"PolicyName": f"{stack_name}-qwen3-8b-concurrency"}
        )
        names.append(model.component_name)
    assert names == ["LlmDev-qwen3-8b", "LlmProd-qwen3-8b"]


def test_physical_name_pins_the_exact_name():
    stack, endpoint = endpoint_stack(
        models=[ModelSpec(name="qwen3-8b", physical_name="chat-qwen", model_data_s3_uri=MODEL_URI)]
    )
    assert endpoint.models[0].component_name == "chat-qwen"
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::InferenceComponent", {"InferenceComponentName": "chat-qwen"}
    )


def test_long_names_are_cut_to_63_with_a_stable_hash():
    from sagemaker_llm_cdk.core.name_rules import prefixed_name

    name = prefixed_name("A" * 40 + "-stack", "model-" + "x" * 40)
    assert len(name) == 63 and re.fullmatch(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*", name)
    assert name == prefixed_name("A" * 40 + "-stack", "model-" + "x" * 40)  # deterministic
    assert name != prefixed_name("A" * 40 + "-stack", "model-" + "x" * 39 + "y")
    stack = Stack(App(), "S" * 60)
    model = LlmEndpoint(stack, "E", settings=EndpointOptions(instance_type="ml.g6e.12xlarge")).add_model(
        "m", ModelSpec(name="qwen3-8b", model_data_s3_uri=MODEL_URI)
    )
    assert len(model.component_name) == 63 and model.component_name.startswith("S" * 50)


def test_physical_name_rule():
    with pytest.raises(ConfigurationError, match=r"physical_name: got 'chat_qwen'; allowed: 1-63 characters"):
        validated(ModelSpec, {"name": "m", "physical_name": "chat_qwen", "model_data_s3_uri": MODEL_URI}, where="t")


def test_pinned_name_taken_by_another_model_is_refused():
    with pytest.raises(ConfigurationError, match=r"physical_name: got 'Test-a'; allowed: a name no other model"):
        endpoint_stack(
            models=[
                ModelSpec(name="a", model_data_s3_uri=MODEL_URI),
                ModelSpec(name="b", physical_name="Test-a", model_data_s3_uri=MODEL_URI),
            ]
        )


@pytest.mark.parametrize("env", [None, BOUND], ids=["agnostic", "bound"])
def test_the_containers_whole_environment_stays_within_sagemakers_100_variables(env):
    """The config's own limit counts only its variables; the component counts what the features add too (the LMI
    defaults here, then a feature's add_environment), so the template never carries more than SageMaker takes."""
    endpoint = LlmEndpoint(
        Stack(App(), "Env", env=env), "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge")
    )
    configured = {f"VAR_{i}": "x" for i in range(99)}
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "environment: got '101 variables (99 configured, 2 set by features)'; allowed: at most "
            "100 variables in the container (SageMaker's limit); fix: remove variables from environment"
        ),
    ):
        endpoint.add_model("m", ModelSpec(name="m", model_data_s3_uri=MODEL_URI, environment=configured))
    full = endpoint.add_model(
        "n", ModelSpec(name="n", model_data_s3_uri=MODEL_URI, environment={f"VAR_{i}": "x" for i in range(98)})
    )
    full.add_environment("VAR_0", "x")  # the same variable again: no new one
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "environment: got '101 variables (98 configured, 3 set by features, the last OPTION_ROLLING_BATCH)'; "
            "allowed: at most 100 variables"
        ),
    ):
        full.add_environment("OPTION_ROLLING_BATCH", "lmi-dist")
    container = only(Template.from_stack(Stack.of(endpoint)), "AWS::SageMaker::Model")["Properties"]["PrimaryContainer"]
    assert len(container["Environment"]) == 100
