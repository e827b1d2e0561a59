"""LlmEndpoint: the endpoint config, endpoint, role, key, data capture, imports, grants, metrics."""

from __future__ import annotations

import re

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template
from sagemaker_llm_cdk import (
    ConfigurationError,
    DataCapture,
    EndpointOptions,
    InstancePool,
    InstanceRequirements,
    InstanceScaling,
    LlmEndpoint,
    ModelSpec,
    Routing,
)
from support.stacks import MODEL_URI, endpoint_stack, new_stack, only
from support.stacks import endpoint as support_endpoint

pytestmark = pytest.mark.synth


@pytest.fixture(scope="module")
def default() -> tuple[Stack, LlmEndpoint, Template]:
    stack, endpoint = endpoint_stack()
    return stack, endpoint, Template.from_stack(stack)


def test_variant_names_no_model_and_scales_instances(default):
    _, _, template = default
    config = only(template, "AWS::SageMaker::EndpointConfig")["Properties"]
    (variant,) = config["ProductionVariants"]
    assert "ModelName" not in variant
    assert variant["VariantName"] == "AllTraffic"
    assert variant["InstanceType"] == "ml.g6e.12xlarge"
    assert variant["InitialInstanceCount"] == 1
    assert variant["ManagedInstanceScaling"] == {"Status": "ENABLED", "MinInstanceCount": 1, "MaxInstanceCount": 1}
    assert variant["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}


def test_endpoint_config_has_execution_role_and_no_fixed_name(default):
    _, _, template = default
    config = only(template, "AWS::SageMaker::EndpointConfig")["Properties"]
    assert "EndpointConfigName" not in config
    assert config["ExecutionRoleArn"]["Fn::GetAtt"][1] == "Arn"
    role_id = config["ExecutionRoleArn"]["Fn::GetAtt"][0]
    role = template.find_resources("AWS::IAM::Role")[role_id]
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "sagemaker.amazonaws.com"
    }
    assert "ManagedPolicyArns" not in role["Properties"]


def test_endpoint_uses_generated_config_name_and_a_stable_endpoint_name(default):
    _, _, template = default
    endpoint = only(template, "AWS::SageMaker::Endpoint")["Properties"]
    assert endpoint["EndpointConfigName"]["Fn::GetAtt"][1] == "EndpointConfigName"
    name = endpoint["EndpointName"]
    assert name.startswith("Test-Endpoint-") and len(name) <= 63
    assert re.fullmatch(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*", name)


def test_default_endpoint_name_fits_sagemaker_for_long_paths():
    stack, _ = endpoint_stack()
    deep = LlmEndpoint(
        stack, "A_Very_Long_Construct_Id_" * 4, settings=EndpointOptions(instance_type="ml.g6e.12xlarge")
    )
    name = stack.resolve(deep.cfn_endpoint.endpoint_name)
    assert len(name) <= 63 and re.fullmatch(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*", name), name


def test_explicit_endpoint_name_is_used():
    stack, _ = endpoint_stack(endpoint_name="chat-prod")
    Template.from_stack(stack).has_resource_properties("AWS::SageMaker::Endpoint", {"EndpointName": "chat-prod"})


def test_scale_to_zero_starts_with_one_instance():
    stack, _ = endpoint_stack(scaling=InstanceScaling(min_instances=0, max_instances=4))
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "InitialInstanceCount": 1,
                        "ManagedInstanceScaling": {"Status": "ENABLED", "MinInstanceCount": 0, "MaxInstanceCount": 4},
                    }
                )
            ]
        },
    )


@pytest.mark.parametrize(
    "routing, expected",
    [
        (Routing.random(), {"RoutingStrategy": "RANDOM"}),
        (
            Routing.prefix_aware(prefix_length=2048, concurrency_threshold=16),
            {
                "RoutingStrategy": "PREFIX_AWARE",
                "PrefixAwareRoutingConfig": {"PrefixLength": 2048, "ConcurrencyThreshold": 16},
            },
        ),
    ],
)
def test_routing_strategies(routing, expected):
    stack, _ = endpoint_stack(routing=routing)
    config = only(Template.from_stack(stack), "AWS::SageMaker::EndpointConfig")["Properties"]
    assert config["ProductionVariants"][0]["RoutingConfig"] == expected


def test_ami_version_volume_and_timeout():
    stack, _ = endpoint_stack(
        instance_type="ml.g6e.12xlarge",
        inference_ami_version="al2-ami-sagemaker-inference-gpu-3-1",
        instance_provision_timeout_seconds=3600,
        models=[ModelSpec(name="m", model_data_s3_uri=MODEL_URI, image="lmi:0.36.0-lmi18.0.0-cu128")],
    )
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "InferenceAmiVersion": "al2-ami-sagemaker-inference-gpu-3-1",
                        "VariantInstanceProvisionTimeoutInSeconds": 3600,
                    }
                )
            ]
        },
    )
    stack, _ = endpoint_stack(instance_type="ml.inf2.xlarge", volume_size_gb=200)
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::EndpointConfig", {"ProductionVariants": [Match.object_like({"VolumeSizeInGB": 200})]}
    )


def test_kms_key_on_volume_only_without_local_nvme():
    nvme_stack, _ = endpoint_stack(instance_type="ml.p5e.48xlarge")
    nvme = only(Template.from_stack(nvme_stack), "AWS::SageMaker::EndpointConfig")["Properties"]
    assert "KmsKeyId" not in nvme  # SageMaker refuses a volume key on instances with local NVMe
    ebs_stack, _ = endpoint_stack(instance_type="ml.inf2.xlarge")
    ebs = only(Template.from_stack(ebs_stack), "AWS::SageMaker::EndpointConfig")["Properties"]
    assert ebs["KmsKeyId"]["Fn::GetAtt"][1] == "Arn"


def test_key_rotates_and_is_retained(default):
    _, _, template = default
    template.has_resource(
        "AWS::KMS::Key",
        {
            "Properties": Match.object_like({"EnableKeyRotation": True}),
            "DeletionPolicy": "Retain",
        },
    )


def test_data_capture_defaults(default):
    _, _, template = default
    capture = only(template, "AWS::SageMaker::EndpointConfig")["Properties"]["DataCaptureConfig"]
    assert capture["EnableCapture"] is True
    assert capture["InitialSamplingPercentage"] == 10
    assert capture["CaptureOptions"] == [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}]
    assert capture["CaptureContentTypeHeader"] == {"JsonContentTypes": ["application/json"]}
    assert capture["KmsKeyId"]["Fn::GetAtt"][1] == "Arn"
    assert capture["DestinationS3Uri"]["Fn::Join"][1][-1] == "/data-capture"


def test_data_capture_settings_and_off():
    stack, _ = endpoint_stack(
        data_capture=DataCapture(
            sampling_percentage=50,
            capture_output=False,
            json_content_types=("application/json", "application/jsonlines"),
        )
    )
    capture = only(Template.from_stack(stack), "AWS::SageMaker::EndpointConfig")["Properties"]["DataCaptureConfig"]
    assert capture["InitialSamplingPercentage"] == 50
    assert capture["CaptureOptions"] == [{"CaptureMode": "Input"}]
    assert capture["CaptureContentTypeHeader"]["JsonContentTypes"] == ["application/json", "application/jsonlines"]
    stack, endpoint = endpoint_stack(data_capture=DataCapture(enabled=False))
    template = Template.from_stack(stack)
    assert "DataCaptureConfig" not in only(template, "AWS::SageMaker::EndpointConfig")["Properties"]
    assert endpoint.data_capture_bucket is None
    assert template.find_resources("AWS::S3::Bucket") == {}


def test_capture_bucket_is_secure(default):
    _, _, template = default
    buckets = template.find_resources("AWS::S3::Bucket")
    assert len(buckets) == 2  # capture bucket + its access-log bucket
    capture = [b for b in buckets.values() if "LoggingConfiguration" in b["Properties"]]
    assert len(capture) == 1
    props = capture[0]["Properties"]
    assert capture[0]["DeletionPolicy"] == "Retain"
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    sse = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert sse["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    policies = template.find_resources("AWS::S3::BucketPolicy")
    assert len(policies) == 2
    for policy in policies.values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements
        )


def test_role_can_write_only_capture_prefix(default):
    _, _, template = default
    policy = only(template, "AWS::IAM::Policy")["Properties"]["PolicyDocument"]["Statement"]
    write = next(s for s in policy if s.get("Sid") == "WriteCapturedData")
    assert write["Action"] == ["s3:PutObject", "s3:AbortMultipartUpload"]
    assert write["Resource"]["Fn::Join"][1][-1] == "/data-capture/*"
    actions = {a for s in policy for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert not any(a.endswith("*") for a in actions), actions
    metrics = next(s for s in policy if s.get("Sid") == "PublishSageMakerMetrics")
    assert metrics["Condition"] == {"StringLike": {"cloudwatch:namespace": ["/aws/sagemaker/*", "AWS/SageMaker"]}}


def test_vpc_placement():
    stack = new_stack()
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"), vpc=vpc)
    endpoint.add_model("m", ModelSpec(name="m1", model_data_s3_uri=MODEL_URI))
    template = Template.from_stack(stack)
    config = only(template, "AWS::SageMaker::EndpointConfig")["Properties"]
    assert len(config["VpcConfig"]["Subnets"]) == 2
    assert len(config["VpcConfig"]["SecurityGroupIds"]) == 1
    model = only(template, "AWS::SageMaker::Model")["Properties"]
    assert model["VpcConfig"] == config["VpcConfig"]
    statements = only(template, "AWS::IAM::Policy")["Properties"]["PolicyDocument"]["Statement"]
    eni = next(s for s in statements if s.get("Sid") == "ManageEndpointNetworkInterfaces")
    assert "ec2:CreateNetworkInterface" in eni["Action"]


def test_import_by_name_and_arn_and_grant():
    stack = new_stack()
    by_name = LlmEndpoint.from_endpoint_name(stack, "ByName", "chat-prod")
    by_arn = LlmEndpoint.from_endpoint_arn(stack, "ByArn", "arn:aws:sagemaker:us-east-1:123456789012:endpoint/other")
    assert by_arn.endpoint_name == "other"
    role = iam.Role(stack, "Caller", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    by_name.grant_invoke(role)
    statement = only(Template.from_stack(stack), "AWS::IAM::Policy")["Properties"]["PolicyDocument"]["Statement"][0]
    assert statement["Action"] == ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"]
    assert statement["Resource"]["Fn::Join"][1][-1] == ":endpoint/chat-prod"
    assert stack.resolve(by_name.metric_invocations().dimensions) == {
        "EndpointName": "chat-prod",
        "VariantName": "AllTraffic",
    }


def test_import_by_bad_arn_is_refused():
    with pytest.raises(ConfigurationError, match=r"endpoint_arn: got 'arn:aws:s3:::bucket'.*endpoint/<name>"):
        LlmEndpoint.from_endpoint_arn(new_stack(), "Bad", "arn:aws:s3:::bucket")


def test_grant_invoke_names_this_endpoint():
    stack, endpoint = endpoint_stack()
    role = iam.Role(stack, "Caller", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    endpoint.grant_invoke(role)
    policy = next(
        p
        for p in Template.from_stack(stack).find_resources("AWS::IAM::Policy").values()
        if p["Properties"]["Roles"] == [{"Ref": stack.get_logical_id(role.node.default_child)}]
    )
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Resource"] == {"Ref": stack.get_logical_id(endpoint.cfn_endpoint)}


@pytest.mark.parametrize(
    "method, namespace, name, statistic",
    [
        ("metric_invocations", "AWS/SageMaker", "Invocations", "Sum"),
        ("metric_model_latency", "AWS/SageMaker", "ModelLatency", "p90"),
        ("metric_overhead_latency", "AWS/SageMaker", "OverheadLatency", "p90"),
        ("metric_invocation_4xx_errors", "AWS/SageMaker", "Invocation4XXErrors", "Sum"),
        ("metric_invocation_5xx_errors", "AWS/SageMaker", "Invocation5XXErrors", "Sum"),
        ("metric_gpu_utilization", "/aws/sagemaker/Endpoints", "GPUUtilization", "Average"),
        ("metric_gpu_memory_utilization", "/aws/sagemaker/Endpoints", "GPUMemoryUtilization", "Average"),
    ],
)
def test_endpoint_metrics(default, method, namespace, name, statistic):
    stack, endpoint, _ = default
    metric = getattr(endpoint, method)()
    assert (metric.namespace, metric.metric_name, metric.statistic) == (namespace, name, statistic)
    dims = stack.resolve(metric.dimensions)
    assert set(dims) == {"EndpointName", "VariantName"}
    assert dims["VariantName"] == "AllTraffic"


def test_no_capacity_metric_sums_models():
    stack, endpoint = endpoint_stack(
        models=[ModelSpec(name="a", model_data_s3_uri=MODEL_URI), ModelSpec(name="b", model_data_s3_uri=MODEL_URI)]
    )
    expression = endpoint.metric_no_capacity_invocation_failures()
    assert expression.expression == "m0+m1"
    assert {m.metric_name for m in expression.using_metrics.values()} == {"NoCapacityInvocationFailures"}


def test_no_capacity_metric_without_models_is_refused():
    stack, endpoint = endpoint_stack(models=[])
    with pytest.raises(ConfigurationError, match="models: got \\[\\]; allowed: at least one model"):
        endpoint.metric_no_capacity_invocation_failures()


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"instance_type": "ml.p5e.48xlarg"},
            r"instance_type: got 'ml.p5e.48xlarg'; allowed: an instance type SageMaker "
            r"accepts for endpoints.*did you mean ml.p5e.48xlarge",
        ),
        (
            {"scaling": InstanceScaling.model_construct(min_instances=3, max_instances=2)},
            r"scaling.min_instances: got 3; allowed: at most max_instances \(2\)",
        ),
        ({"inference_ami_version": "al2-latest"}, r"inference_ami_version: got 'al2-latest'; allowed: one of "),
        (
            {"instance_type": "ml.p5e.48xlarge", "volume_size_gb": 100},
            r"volume_size_gb: got 100; allowed: nothing for ml.p5e.48xlarge: it has local NVMe",
        ),
        (
            {"instance_provision_timeout_seconds": 60},
            r"instance_provision_timeout_seconds: got 60; allowed: at least 300",
        ),
        (
            {"instance_provision_timeout_seconds": 7200},
            r"instance_provision_timeout_seconds: got 7200; allowed: at most 3600",
        ),
    ],
)
def test_endpoint_validation(kwargs, message):
    with pytest.raises(ConfigurationError, match=message) as info:
        support_endpoint(new_stack(), "Endpoint", **kwargs)
    assert "Test/Endpoint" in str(info.value)


def test_endpoint_validation_reports_every_problem_at_once():
    with pytest.raises(ConfigurationError) as info:
        LlmEndpoint(
            new_stack(),
            "Endpoint",
            settings=EndpointOptions(
                instance_type="ml.nope.large",
                inference_ami_version="x",
                scaling=InstanceScaling.model_construct(min_instances=5, max_instances=1),
            ),
        )
    assert len(info.value.problems) == 3


def test_subnets_without_vpc_are_refused():
    with pytest.raises(ConfigurationError, match="vpc_subnets: got 'given'; allowed: only together with vpc"):
        LlmEndpoint(
            new_stack(),
            "Endpoint",
            settings=EndpointOptions(instance_type="ml.g6e.12xlarge"),
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
        )


def test_role_writes_only_its_own_log_group(default):
    stack, endpoint, template = default
    statements = only(template, "AWS::IAM::Policy")["Properties"]["PolicyDocument"]["Statement"]
    logs = next(s for s in statements if s.get("Sid") == "WriteEndpointLogs")
    tails = [r["Fn::Join"][1][-1] for r in logs["Resource"]]
    name = endpoint.physical_name
    assert tails == [
        f":log-group:/aws/sagemaker/Endpoints/{name}",
        f":log-group:/aws/sagemaker/Endpoints/{name}:log-stream:*",
    ]


def test_endpoint_in_a_vpc_passes_cdk_nag():
    from aws_cdk import App, Validations
    from cdk_nag import AwsSolutionsChecks

    app = App()
    stack = Stack(app, "VpcNag")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"), vpc=vpc)
    endpoint.add_model("m", ModelSpec(name="m1", model_data_s3_uri=MODEL_URI))
    from sagemaker_llm_cdk.core.nag import acknowledge

    acknowledge(vpc, "AwsSolutions-VPC7", "test VPC: flow logs are the VPC owner's concern, not the endpoint's")
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged finding


# --------------------------------------------------------------- instance pools
POOLS = [
    InstancePool(instance_type="ml.g6e.12xlarge", priority=1),
    InstancePool(instance_type="ml.g6.12xlarge", priority=2),
]


@pytest.mark.parametrize(
    "env", [None, Environment(account="123456789012", region="us-east-1")], ids=["agnostic", "bound"]
)
def test_instance_pools_variant_and_one_specification_per_type(env):
    stack = Stack(App(), "Pools", env=env)
    endpoint = LlmEndpoint(
        stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge", instance_pools=POOLS)
    )
    endpoint.add_model(
        "m",
        ModelSpec(
            name="m",
            model_data_s3_uri=MODEL_URI,
            accelerators=2,
            min_memory_mb=65536,
            instance_requirements=[InstanceRequirements(instance_type="ml.g6.12xlarge", min_memory_mb=32768)],
        ),
    )
    template = Template.from_stack(stack)
    (variant,) = only(template, "AWS::SageMaker::EndpointConfig")["Properties"]["ProductionVariants"]
    assert "InstanceType" not in variant  # InstancePools replaces it
    assert variant["InstancePools"] == [
        {"InstanceType": "ml.g6e.12xlarge", "Priority": 1},
        {"InstanceType": "ml.g6.12xlarge", "Priority": 2},
    ]
    component = only(template, "AWS::SageMaker::InferenceComponent")["Properties"]
    assert "Specification" not in component
    specs = component["Specifications"]
    assert [s["InstanceType"] for s in specs] == ["ml.g6e.12xlarge", "ml.g6.12xlarge"]
    assert [s["ComputeResourceRequirements"] for s in specs] == [
        {"NumberOfAcceleratorDevicesRequired": 2, "MinMemoryRequiredInMb": 65536},
        {"NumberOfAcceleratorDevicesRequired": 2, "MinMemoryRequiredInMb": 32768},
    ]
    assert all(
        s["ModelName"]["Fn::GetAtt"][1] == "ModelName" and s["SchedulingConfig"]["PlacementStrategy"] == "SPREAD"
        for s in specs
    )


def test_each_model_is_checked_against_every_pool_type():
    endpoint = LlmEndpoint(
        new_stack(),
        "Endpoint",
        settings=EndpointOptions(
            instance_type="ml.g6e.48xlarge",
            instance_pools=[
                InstancePool(instance_type="ml.g6e.48xlarge", priority=1),
                InstancePool(instance_type="ml.g6e.12xlarge", priority=2),
            ],
        ),
    )
    with pytest.raises(ConfigurationError) as info:
        endpoint.add_model("m", ModelSpec(name="m", model_data_s3_uri=MODEL_URI, accelerators=8, min_memory_mb=500_000))
    message = str(info.value)
    assert (
        "accelerators: got 8; allowed: at most 4, the accelerators of one ml.g6e.12xlarge (on pool type "
        "ml.g6e.12xlarge); fix: lower accelerators or use a larger instance type (or set instance_requirements "
        "for ml.g6e.12xlarge)"
    ) in message
    assert (
        "min_memory_mb: got 500000; allowed: at most 393216, the memory of one ml.g6e.12xlarge in MB (on pool"
        in message
    )
    assert "ml.g6e.48xlarge" not in message.split("allowed")[0].replace("ml.g6e.12xlarge", "")


def test_a_per_type_requirement_is_named_where_it_was_set():
    from sagemaker_llm_cdk.settings.hosting import InstanceRequirements

    endpoint = LlmEndpoint(
        new_stack(),
        "Endpoint",
        settings=EndpointOptions(
            instance_type="ml.g6e.48xlarge",
            instance_pools=[
                InstancePool(instance_type="ml.g6e.48xlarge", priority=1),
                InstancePool(instance_type="ml.g6e.12xlarge", priority=2),
            ],
        ),
    )
    with pytest.raises(
        ConfigurationError,
        match=(
            r"instance_requirements\[0\].min_memory_mb: got 500000; allowed: at most 393216, the memory of one "
            r"ml.g6e.12xlarge in MB; fix: lower it or use a larger instance type"
        ),
    ):
        endpoint.add_model(
            "m",
            ModelSpec(
                name="m",
                model_data_s3_uri=MODEL_URI,
                instance_requirements=[InstanceRequirements(instance_type="ml.g6e.12xlarge", min_memory_mb=500_000)],
            ),
        )


def test_a_config_names_pool_fit_problems_in_the_first_round():
    """Checked while the config loads, with the config's other problems, not only once the stack is built."""
    from sagemaker_llm_cdk.config.loading import parse_config

    data = {
        "endpoints": [
            {
                "name": "Chat",
                "instance_type": "ml.g6e.48xlarge",
                "instance_pools": [
                    {"instance_type": "ml.g6e.48xlarge", "priority": 1},
                    {"instance_type": "ml.g6e.12xlarge", "priority": 2},
                ],
                "models": [
                    {
                        "name": "m",
                        "model_data_s3_uri": MODEL_URI,
                        "accelerators": 8,
                        "instance_requirements": [{"instance_type": "ml.g5.2xlarge", "min_memory_mb": 1024}],
                    }
                ],
            }
        ],
        "removal": "delete",
    }
    with pytest.raises(ConfigurationError) as info:
        parse_config(data, source="chat.yaml")
    message = str(info.value)
    assert "3 problem(s) in chat.yaml" in message
    assert (
        "endpoints[0].models[0].accelerators: got 8; allowed: at most 4, the accelerators of one ml.g6e.12xlarge"
        in message
    )
    assert "endpoints[0].models[0].instance_requirements[0].instance_type: got 'ml.g5.2xlarge'" in message
    assert "removal: got 'delete'" in message


def test_memory_is_checked_on_a_single_instance_type_too():
    with pytest.raises(
        ConfigurationError,
        match=r"min_memory_mb: got 400000; allowed: at most 393216, the memory of one ml.g6e.12xlarge",
    ):
        endpoint_stack(models=[ModelSpec(name="m", model_data_s3_uri=MODEL_URI, min_memory_mb=400_000)])


@pytest.mark.parametrize(
    "pools, message",
    [
        (
            [{"instance_type": "ml.g6e.12xlarge", "priority": 1}],
            r"instance_pools: got \['ml.g6e.12xlarge'\]; allowed: 2-5 pools",
        ),
        (
            [{"instance_type": "ml.g6e.12xlarge", "priority": 1}, {"instance_type": "ml.g6e.12xlarge", "priority": 2}],
            r"instance_pools\[1\].instance_type: got 'ml.g6e.12xlarge'; allowed: "
            r"a type not used by instance_pools\[0\]",
        ),
        (
            [{"instance_type": "ml.g6e.12xlarge", "priority": 1}, {"instance_type": "ml.g6.12xlarge", "priority": 1}],
            r"instance_pools\[1\].priority: got 1; allowed: a priority not used by instance_pools\[0\]",
        ),
        (
            [{"instance_type": "ml.g6.12xlarge", "priority": 1}, {"instance_type": "ml.g6e.12xlarge", "priority": 2}],
            r"instance_type: got 'ml.g6e.12xlarge'; allowed: the priority-1 pool's type \(ml.g6.12xlarge\)",
        ),
        (
            [{"instance_type": "ml.g6e.12xlarge", "priority": 1}, {"instance_type": "ml.m5.4xlarge", "priority": 2}],
            r"instance_pools: got \['ml.g6e.12xlarge', 'ml.m5.4xlarge'\]; allowed: "
            r"types that all have local NVMe storage, or none",
        ),
        (
            [{"instance_type": "ml.g6e.12xlarge", "priority": 1}, {"instance_type": "ml.g6e.nope", "priority": 2}],
            r"instance_pools\[1\].instance_type: got 'ml.g6e.nope'; allowed: an instance type SageMaker accepts",
        ),
        (
            [{"instance_type": "ml.g6e.12xlarge", "priority": 1}, {"instance_type": "ml.g6.12xlarge", "priority": 6}],
            r"instance_pools\[1\].priority: got 6",
        ),
    ],
)
def test_instance_pool_rules(pools, message):
    from sagemaker_llm_cdk.core.settings import validated
    from sagemaker_llm_cdk.settings.hosting import EndpointOptions

    with pytest.raises(ConfigurationError, match=message):
        validated(EndpointOptions, {"instance_type": "ml.g6e.12xlarge", "instance_pools": pools}, where="test")


def test_pool_timeout_is_at_most_an_hour():
    with pytest.raises(
        ConfigurationError, match=r"instance_provision_timeout_seconds: got 5400; allowed: at most 3600"
    ):
        LlmEndpoint(
            new_stack(),
            "Endpoint",
            settings=EndpointOptions(
                instance_type="ml.g6e.12xlarge", instance_pools=POOLS, instance_provision_timeout_seconds=5400
            ),
        )
    endpoint = LlmEndpoint(
        new_stack(),
        "Endpoint",
        settings=EndpointOptions(
            instance_type="ml.g6e.12xlarge", instance_pools=POOLS, instance_provision_timeout_seconds=300
        ),
    )  # AWS's minimum, refused before
    assert endpoint.options.instance_provision_timeout_seconds == 300


def test_requirements_for_a_type_the_endpoint_does_not_have_are_refused():
    stack, endpoint = endpoint_stack(models=[], instance_pools=POOLS)
    with pytest.raises(
        ConfigurationError,
        match=r"instance_requirements\[0\].instance_type: got 'ml.p5.48xlarge'; "
        r"allowed: one of the endpoint's instance_pools types",
    ):
        endpoint.add_model(
            "m",
            ModelSpec(
                name="m",
                model_data_s3_uri=MODEL_URI,
                instance_requirements=[{"instance_type": "ml.p5.48xlarge", "min_memory_mb": 1024}],
            ),
        )
    single_stack, single = endpoint_stack(models=[])
    with pytest.raises(
        ConfigurationError, match=r"allowed: one of the endpoint's instance_pools types: the endpoint has no pools"
    ):
        single.add_model(
            "m",
            ModelSpec(
                name="m", model_data_s3_uri=MODEL_URI, instance_requirements=[{"instance_type": "ml.g6e.12xlarge"}]
            ),
        )


def test_lmi_accelerators_cannot_differ_per_type():
    from sagemaker_llm_cdk.core.settings import validated

    with pytest.raises(
        ConfigurationError,
        match=r"instance_requirements\[0\].accelerators: got 1; allowed: the model's "
        r"accelerators \(2\) for the LMI container",
    ):
        validated(
            ModelSpec,
            {
                "name": "m",
                "model_data_s3_uri": MODEL_URI,
                "accelerators": 2,
                "instance_requirements": [{"instance_type": "ml.g6.12xlarge", "accelerators": 1}],
            },
            where="t",
        )


def test_eagle_on_pools_is_refused_with_the_reason():
    stack, endpoint = endpoint_stack(models=[], instance_pools=POOLS)
    with pytest.raises(
        ConfigurationError, match=r"eagle: got 'set'; allowed: no EAGLE on an endpoint with instance_pools"
    ):
        endpoint.add_model(
            "m", ModelSpec(name="m", model_data_s3_uri=MODEL_URI, architecture="Qwen3ForCausalLM", eagle={})
        )


def test_pools_with_a_capacity_plan_are_refused_in_config():
    from sagemaker_llm_cdk import parse_config

    with pytest.raises(
        ConfigurationError,
        match=r"endpoints\[0\].capacity_plan: got 'a capacity plan with instance_pools'; "
        r"allowed: one or the other",
    ):
        parse_config(
            {
                "capacity_plans": [
                    {
                        "existing_plan_arn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p",
                        "name": "p",
                        "mode": "existing",
                        "instance_type": "ml.p5e.48xlarge",
                        "instance_count": 1,
                    }
                ],
                "endpoints": [
                    {
                        "name": "Chat",
                        "instance_type": "ml.p5e.48xlarge",
                        "capacity_plan": "p",
                        "instance_pools": [
                            {"instance_type": "ml.p5e.48xlarge", "priority": 1},
                            {"instance_type": "ml.p5.48xlarge", "priority": 2},
                        ],
                        "models": [{"name": "m", "model_data_s3_uri": MODEL_URI}],
                    }
                ],
            }
        )


@pytest.mark.parametrize(
    "env", [None, Environment(account="123456789012", region="us-east-1")], ids=["agnostic", "bound"]
)
def test_pools_from_a_config_synthesize_nag_and_lint_clean(env, tmp_path):
    import json

    from sagemaker_llm_cdk import parse_config

    from stacks import LlmPlatformStack, attach_checks
    from tools.lint_templates import lint_folder

    config = parse_config(
        {
            "budget": {"max_usd_per_month": 1_000_000, "notify_alarm_topic": True},  # 2 GPUs pass 1,000 h
            "endpoints": [
                {
                    "name": "Chat",
                    "instance_type": "ml.g6e.12xlarge",
                    "scaling": {"min_instances": 1, "max_instances": 2},
                    "instance_pools": [
                        {"instance_type": "ml.g6e.12xlarge", "priority": 1},
                        {"instance_type": "ml.g6.12xlarge", "priority": 2},
                    ],
                    "models": [
                        {
                            "name": "m",
                            "model_data_s3_uri": MODEL_URI,
                            "accelerators": 4,
                            "min_memory_mb": 65536,
                            "copies": {"min_copies": 1, "max_copies": 2},
                        }
                    ],
                }
            ],
        }
    )
    app = App(outdir=str(tmp_path))
    stack = LlmPlatformStack(app, "Pools", config=config, env=env)
    attach_checks(app)
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [v for p in report.get("pluginReports", []) for v in p.get("violations", [])] == []
    assert lint_folder(tmp_path) == 0
    (variant,) = only(Template.from_stack(stack), "AWS::SageMaker::EndpointConfig")["Properties"]["ProductionVariants"]
    assert [p["InstanceType"] for p in variant["InstancePools"]] == ["ml.g6e.12xlarge", "ml.g6.12xlarge"]
    assert variant["ManagedInstanceScaling"] == {"Status": "ENABLED", "MinInstanceCount": 1, "MaxInstanceCount": 2}


def test_pools_with_a_capacity_plan_are_refused_in_the_library():
    from sagemaker_llm_cdk import CapacityPlan, CapacityPlanSpec

    stack = new_stack()
    plan = CapacityPlan(
        stack,
        "Plan",
        settings=CapacityPlanSpec(
            existing_plan_arn="arn:aws:sagemaker:us-east-1:123456789012:training-plan/p",
            instance_type="ml.p5e.48xlarge",
            instance_count=1,
        ),
    )
    with pytest.raises(
        ConfigurationError,
        match=r"capacity_plan: got 'a capacity plan with instance_pools'; allowed: "
        r"one or the other: a plan reserves one instance type",
    ):
        LlmEndpoint(
            stack,
            "Endpoint",
            settings=EndpointOptions(
                instance_type="ml.p5e.48xlarge",
                instance_pools=[
                    InstancePool(instance_type="ml.p5e.48xlarge", priority=1),
                    InstancePool(instance_type="ml.p5.48xlarge", priority=2),
                ],
            ),
            capacity_plan=plan,
        )


# ------------------------------------------------------------------ settings object
def _endpoint_template(**kwargs) -> dict:
    stack = new_stack()
    LlmEndpoint(stack, "Chat", endpoint_name="chat", **kwargs)
    return Template.from_stack(stack).to_json()


@pytest.mark.parametrize(
    ("keyword", "value", "message"),
    [
        (
            "instance_type",
            "ml.g6e.12xlarge",
            r"instance_type: got 'ml.g6e.12xlarge'; allowed: a field of settings: LlmEndpoint takes the endpoint's "
            r"settings in one argument; fix: pass settings=EndpointOptions\(instance_type=\.\.\., \.\.\.\)",
        ),
        ("scaling", None, r"scaling: got None; allowed: a field of settings.*settings=EndpointOptions\(scaling="),
        ("options", {}, r"options: got 'given'; allowed: settings=; fix: rename options= to settings="),
        ("instance_typ", "x", r"instance_typ: got 'x'; allowed: one of settings, endpoint_name, role, key, vpc"),
    ],
)
def test_a_setting_given_beside_settings_is_refused_with_the_field_to_use(keyword, value, message):
    stack = new_stack()
    with pytest.raises(ConfigurationError, match=message):
        LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"), **{keyword: value})
    assert stack.node.try_find_child("Chat") is None  # nothing half-created


def test_an_endpoint_without_settings_says_what_to_pass():
    with pytest.raises(
        ConfigurationError, match=r"settings: got nothing .*; fix: pass settings=EndpointOptions\(instance_type="
    ):
        LlmEndpoint(new_stack(), "Chat")


def test_every_setting_given_on_its_own_is_named_in_one_round():
    with pytest.raises(ConfigurationError) as info:
        LlmEndpoint(new_stack(), "Chat", instance_type="ml.g6e.12xlarge", routing=Routing())  # type: ignore[call-arg]
    assert [p.path for p in info.value.problems] == ["instance_type", "routing"]


def test_a_mapping_of_settings_builds_the_same_endpoint_as_the_model():
    settings = dict(
        instance_type="ml.g6e.12xlarge",
        scaling=InstanceScaling(min_instances=1, max_instances=3),
        routing=Routing(strategy="RANDOM"),
        data_capture=DataCapture(sampling_percentage=5),
    )
    assert _endpoint_template(settings=EndpointOptions(**settings)) == _endpoint_template(settings=settings)


def test_instance_type_is_required():
    with pytest.raises(
        ConfigurationError, match=r"instance_type: got nothing \(the field is missing\); allowed: a value"
    ):
        LlmEndpoint(new_stack(), "Chat", settings={})


def test_a_config_endpoint_is_its_own_options():
    """The stack passes the config's EndpointSpec as settings: no unpacking, no second validation."""
    from sagemaker_llm_cdk import parse_config

    config = parse_config(
        {
            "endpoints": [
                {
                    "name": "chat",
                    "instance_type": "ml.g6e.12xlarge",
                    "models": [{"name": "qwen3-8b", "model_data_s3_uri": MODEL_URI}],
                }
            ]
        }
    )
    spec = config.endpoints[0]
    endpoint = LlmEndpoint(new_stack(), "Chat", settings=spec)
    assert endpoint.options is spec
