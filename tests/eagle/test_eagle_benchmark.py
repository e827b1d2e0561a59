"""EagleBenchmark: the workload config, the before/after state machine, the slower alarm, IAM, settings rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack, Validations
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks
from sagemaker_llm_cdk import ConfigurationError, EndpointOptions, LlmEndpoint, ModelSpec
from sagemaker_llm_cdk.eagle.benchmark import WORKLOAD_TYPE, workload_name
from sagemaker_llm_cdk.eagle.optimization import EagleOptimization
from sagemaker_llm_cdk.hosting.speculative_decoding import PromotionParameter
from sagemaker_llm_cdk.settings.eagle import EagleBenchmarkSettings, EagleSettings
from support.eagle import lid, render

pytestmark = pytest.mark.synth

MODEL = "qwen3-32b"
WEIGHTS = "s3://my-weights/qwen3-32b/"
USER_REQUESTS = "s3://team-datasets/requests/v1/"


def build(env: Environment | None = None, **benchmark: Any):
    app = App()
    promos = Stack(app, "Promos", env=env)
    stack = Stack(app, "Main", env=env)
    llm = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.p5e.48xlarge"))
    component = llm.add_model(
        "Qwen",
        ModelSpec(
            name=MODEL, physical_name=MODEL, model_data_s3_uri=WEIGHTS, architecture="Qwen3ForCausalLM", accelerators=2
        ),
    )
    head = PromotionParameter(promos, "QwenHead", model_name=MODEL)
    settings = EagleSettings(
        dataset={"source": "s3", "s3_uri": "s3://team-datasets/chat/v3/"}, benchmark={"enabled": True, **benchmark}
    )
    eagle = EagleOptimization(
        stack, "QwenEagle", component=component, settings=settings, promotion_parameter=head.parameter
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged cdk-nag finding
    template = Template.from_stack(stack)
    return stack, eagle, template, template.to_json()["Resources"]


@pytest.fixture(scope="module")
def agnostic():
    return build()


@pytest.fixture(scope="module")
def bound():
    return build(Environment(account="123456789012", region="us-east-1"), workload="s3", s3_uri=USER_REQUESTS)


def machines(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        k: json.loads(render(r["Properties"]["DefinitionString"]))
        for k, r in resources.items()
        if r["Type"] == "AWS::StepFunctions::StateMachine"
    }


def statements(resources: dict[str, Any], stack: Stack, role: Any) -> list[dict[str, Any]]:
    role_id = lid(stack, role)
    out = []
    for resource in resources.values():
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in resource["Properties"]["Roles"]:
            out.extend(render(resource["Properties"]["PolicyDocument"]["Statement"]))
    return out


def by_sid(resources, stack, role) -> dict[str, dict[str, Any]]:
    return {s.get("Sid"): s for s in statements(resources, stack, role)}


# --------------------------------------------------------------------------- workload config
def test_inline_workload_config_declares_aiperf_and_the_parameters(agnostic):
    stack, eagle, template, _ = agnostic
    bench = eagle.benchmark
    template.has_resource_properties(
        WORKLOAD_TYPE,
        {
            "AIWorkloadConfigName": bench.workload_name,
            "AIWorkloadConfigs": {
                "WorkloadSpec": {
                    "Inline": json.dumps(
                        {
                            "benchmark": {"type": "aiperf"},
                            "parameters": {"output_tokens_mean": 150, "prompt_input_tokens_mean": 550},
                        },
                        sort_keys=True,
                        separators=(",", ":"),
                    )
                }
            },
            "DatasetConfig": Match.absent(),
        },
    )
    assert bench.workload_name.startswith("eagle-qwen3-32b-") and bench.workload_name == bench.workload_name.lower()


def test_s3_workload_has_the_users_requests_as_its_dataset_channel(bound):
    _, eagle, template, _ = bound
    template.has_resource_properties(
        WORKLOAD_TYPE,
        {
            "DatasetConfig": {
                "InputDataConfig": [
                    {"ChannelName": "dataset", "DataSource": {"S3DataSource": {"S3Uri": USER_REQUESTS}}}
                ]
            }
        },
    )


def test_workload_name_changes_with_its_create_only_properties():
    assert workload_name("Qwen3-32B", "inline", "a") != workload_name("Qwen3-32B", "inline", "b")
    assert workload_name("Qwen3-32B", "inline", "a") == workload_name("Qwen3-32B", "inline", "a")
    assert len(workload_name("m" * 80, "x")) <= 63


def test_region_without_the_workload_type_is_refused_with_the_regions_that_have_it():
    with pytest.raises(
        ConfigurationError,
        match=r"settings\.benchmark\.enabled: got True; allowed: regions whose "
        r"CloudFormation has AWS::SageMaker::AIWorkloadConfig: .*us-east-1.*fix: set "
        r"eagle\.benchmark\.enabled: false in eu-west-3",
    ):
        build(Environment(account="123456789012", region="eu-west-3"))


def test_benchmark_is_off_by_default_and_adds_nothing():
    assert EagleSettings().benchmark.enabled is False
    app = App()
    promos, stack = Stack(app, "P"), Stack(app, "M")
    llm = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.p5e.48xlarge"))
    component = llm.add_model(
        "Qwen",
        ModelSpec(
            name=MODEL, physical_name=MODEL, model_data_s3_uri=WEIGHTS, architecture="Qwen3ForCausalLM", accelerators=2
        ),
    )
    eagle = EagleOptimization(
        stack,
        "E",
        component=component,
        settings=EagleSettings(dataset={"source": "s3", "s3_uri": "s3://team-datasets/chat/v3/"}),
        promotion_parameter=PromotionParameter(promos, "H", model_name=MODEL).parameter,
    )
    template = Template.from_stack(stack)
    template.resource_count_is(WORKLOAD_TYPE, 0)
    template.resource_count_is("AWS::StepFunctions::StateMachine", 1)
    assert eagle.benchmark is None


# --------------------------------------------------------------------------- state machines
@pytest.mark.parametrize("fixture", ["agnostic", "bound"])
def test_promoted_runs_start_the_benchmark_named_after_the_run(fixture, request):
    stack, eagle, _, resources = request.getfixturevalue(fixture)
    loop = machines(resources)[lid(stack, eagle.state_machine)]
    states = loop["States"]
    outcome = states["JobSucceeded?"]["Choices"]
    promoted = [c for c in outcome if c.get("Next") == "StartBenchmark"]
    assert promoted and {"Variable": "$.record.decision", "StringEquals": "promoted"} in promoted[0]["And"]
    start = states["StartBenchmark"]
    assert start["Resource"].endswith(":states:startExecution")
    assert start["Parameters"]["Name.$"] == "$.run.run_id"
    assert start["Parameters"]["Input"] == {"run_id.$": "$.run.run_id", "head.$": "$.record.draft_model_s3_uri"}
    assert start["Parameters"]["StateMachineArn"] == "${" + lid(stack, eagle.benchmark.state_machine) + "}"
    (retry,) = start["Retry"]  # a busy account (too many running executions, KMS throttling) is waited out
    assert {"StepFunctions.ExecutionLimitExceededException", "StepFunctions.KmsThrottlingException"} <= set(
        retry["ErrorEquals"]
    ) and "StepFunctions.ExecutionAlreadyExistsException" not in retry["ErrorEquals"]
    catches = {tuple(c["ErrorEquals"]): c["Next"] for c in start["Catch"]}
    assert catches[("StepFunctions.ExecutionAlreadyExistsException",)] == "Done"
    assert catches[("States.ALL",)] == "NotifyFailure"


def test_benchmark_measures_before_waits_for_the_deploy_then_measures_after(agnostic):
    stack, eagle, _, resources = agnostic
    states = machines(resources)[lid(stack, eagle.benchmark.state_machine)]["States"]
    assert states["Prepare"]["Next"] == "StartBefore"
    assert states["StartBefore"]["Next"] == "BeforeSkipped?"
    assert states["BeforeSkipped?"]["Choices"][0]["Next"] == "WaitForDeploy"
    assert states["WaitBefore"]["Seconds"] == 300 and states["WaitBefore"]["Next"] == "CheckBefore"
    finished = states["BeforeFinished?"]
    assert finished["Choices"][0] == {"Variable": "$.before.finished", "BooleanEquals": False, "Next": "WaitBefore"}
    assert finished["Choices"][1] == {
        "Variable": "$.before.ok",
        "BooleanEquals": False,
        "Next": "NotifyUnreadableBefore",
    }
    assert finished["Default"] == "WaitForDeploy"
    assert states["WaitForDeploy"]["Seconds"] == 3600 and states["WaitForDeploy"]["Next"] == "DeployCheck"
    served = states["HeadServed?"]
    assert served["Choices"][0] == {"Variable": "$.deploy.state", "StringEquals": "serving", "Next": "StartAfter"}
    assert served["Choices"][1]["Next"] == "NotifyNotServed" and served["Default"] == "WaitForDeploy"
    assert states["AfterFinished?"]["Default"] == "Slower?"
    assert states["Slower?"]["Choices"][0] == {
        "Variable": "$.after.slower",
        "BooleanEquals": True,
        "Next": "NotifySlower",
    }
    assert states["PhaseGiven?"]["Choices"][0] == {"Variable": "$.phase", "IsPresent": True, "Next": "OnlyAfter?"}
    assert states["PhaseGiven?"]["Default"] == "Prepare"
    assert states["OnlyAfter?"]["Choices"][0] == {
        "Variable": "$.phase",
        "StringEquals": "after",
        "Next": "PrepareAfter",
    }
    assert states["PrepareAfter"]["Next"] == "StartAfter"
    assert states["UnreadableBefore"]["Type"] == "Fail" and states["UnreadableAfter"]["Type"] == "Fail"
    for name in ("StartBefore", "CheckBefore", "DeployCheck", "StartAfter", "CheckAfter"):
        assert states[name]["Catch"][0]["Next"] == "NotifyFailure", name
    assert states["CheckAfter"]["InputPath"] == "$.after" and "Parameters" not in states["CheckAfter"]
    assert states["CheckAfter"]["Resource"] == "${" + lid(stack, eagle.benchmark.check_function) + ".Arn}"
    assert states["CheckAfter"]["ResultPath"] == "$.after"


def test_slower_notice_carries_the_rollback_commands(agnostic):
    stack, eagle, _, resources = agnostic
    states = machines(resources)[lid(stack, eagle.benchmark.state_machine)]["States"]
    message = states["NotifySlower"]["Parameters"]["Message"]
    assert message["rollback_command.$"] == "$.after.rollback_command"
    assert message["rollback_cli.$"] == "$.after.rollback_cli"
    assert message["job_speedup.$"] == "$.after.comparison.job_speedup"


def test_benchmark_timeout_covers_both_measurements_their_retries_and_the_deploy_wait(agnostic):
    stack, eagle, _, resources = agnostic
    machine = resources[lid(stack, eagle.benchmark.state_machine)]["Properties"]
    # 2 x (4 h limit + 8 h quota retries) + 168 h deploy wait + 2 h
    assert machine["DefinitionString"]  # rendered below
    definition = machines(resources)[lid(stack, eagle.benchmark.state_machine)]
    assert definition["TimeoutSeconds"] == (2 * (4 + 8) + 168 + 2) * 3600
    assert definition["States"]["StartBefore"]["Retry"][1] == {
        "ErrorEquals": ["ResourceLimitExceededError"],
        "IntervalSeconds": 1800,
        "MaxAttempts": 4,
        "BackoffRate": 2,
    }


def test_benchmark_functions_environment(bound):
    stack, eagle, template, _ = bound
    bench = eagle.benchmark
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "benchmark.start",
            "Environment": {
                "Variables": Match.object_like(
                    {
                        "WORKLOAD_CONFIG_NAME": bench.workload_name,
                        "COMPONENT_NAME": MODEL,
                        "SERVING_MODEL_PREFIX": f"{MODEL}-eagle",
                    }
                )
            },
        },
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "benchmark.check",
            "Environment": {
                "Variables": Match.object_like(
                    {
                        "MAX_SECONDS": "14400",
                        "SLOWDOWN_TOLERANCE": "0.05",
                        "MODEL_NAME": MODEL,
                        "PROMOTION_PARAMETER": f"/sagemaker-llm/state/eagle/{MODEL}/draft-head",
                    }
                )
            },
        },
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Handler": "benchmark.serving", "Environment": {"Variables": Match.object_like({"DEPLOY_CHECKS": "168"})}},
    )


def test_slower_alarm_goes_to_the_topic_and_names_the_rollback(agnostic):
    stack, eagle, template, resources = agnostic
    (alarm,) = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Alarm" and r["Properties"].get("MetricName") == "EagleServedSlower"
    ]
    assert alarm["Threshold"] == 1 and alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["TreatMissingData"] == "notBreaching" and alarm["Statistic"] == "Maximum"
    assert {"Name": "ModelName", "Value": MODEL} in alarm["Dimensions"]
    assert alarm["AlarmActions"] == [{"Ref": lid(stack, eagle.topic)}]
    key = resources[lid(stack, eagle.topic.master_key)]["Properties"]["KeyPolicy"]["Statement"]
    (publish,) = [st for st in key if st.get("Sid") == "CloudWatchAlarmsPublish"]
    assert publish["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert publish["Action"] == ["kms:Decrypt", "kms:GenerateDataKey*"]
    description = render(alarm["AlarmDescription"])
    assert (
        f"python -m tools.eagle_rollback --parameter /sagemaker-llm/state/eagle/{MODEL}/draft-head --table "
        "${" + lid(stack, eagle.runs_table) + "} --region ${AWS::Region} && cdk deploy ${AWS::StackName}"
    ) in description


# --------------------------------------------------------------------------- IAM
def test_start_function_may_start_only_eagle_benchmarks_and_pass_only_its_role(bound):
    stack, eagle, _, resources = bound
    bench = eagle.benchmark
    sids = by_sid(resources, stack, bench.start_function.role)
    assert (
        sids["StartBenchmarks"]["Resource"]
        == "arn:${AWS::Partition}:sagemaker:us-east-1:123456789012:ai-benchmark-job/eagle-*"
    )
    assert sorted(sids["StartBenchmarks"]["Action"]) == [
        "sagemaker:AddTags",
        "sagemaker:CreateAIBenchmarkJob",
        "sagemaker:DescribeAIBenchmarkJob",
    ]
    assert (
        f"arn:${{AWS::Partition}}:sagemaker:us-east-1:123456789012:ai-workload-config/{bench.workload_name}"
        in sids["UseWorkloadAndTarget"]["Resource"]
    )
    assert sids["PassBenchmarkRole"]["Resource"] == "${" + lid(stack, bench.job_role) + ".Arn}"
    assert sids["PassBenchmarkRole"]["Condition"] == {
        "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}
    }
    assert (
        sids["SeeServingModel"]["Resource"]
        == f"arn:${{AWS::Partition}}:sagemaker:us-east-1:123456789012:model/{MODEL}-eagle-*"
    )
    assert (
        sids["SeeComponent"]["Resource"]
        == f"arn:${{AWS::Partition}}:sagemaker:us-east-1:123456789012:inference-component/{MODEL}"
    )


def test_check_function_watches_benchmarks_and_updates_run_records_only(bound):
    stack, eagle, _, resources = bound
    sids = by_sid(resources, stack, eagle.benchmark.check_function.role)
    assert sorted(sids["WatchBenchmarks"]["Action"]) == [
        "sagemaker:DescribeAIBenchmarkJob",
        "sagemaker:StopAIBenchmarkJob",
    ]
    assert sorted(sids["RecordBenchmarks"]["Action"]) == ["dynamodb:GetItem", "dynamodb:UpdateItem"]
    assert sids["RecordBenchmarks"]["Resource"] == "${" + lid(stack, eagle.runs_table) + ".Arn}"
    assert sids["ReadBenchmarks"]["Resource"].endswith("/benchmarks/*")
    assert sids["ListBenchmarks"]["Condition"] == {"StringLike": {"s3:prefix": ["benchmarks/*"]}}


def test_job_role_invokes_this_endpoint_reads_the_workload_and_writes_benchmarks(bound):
    stack, eagle, template, resources = bound
    bench = eagle.benchmark
    sids = by_sid(resources, stack, bench.job_role)
    assert "sagemaker:InvokeEndpoint" in sids["InvokeEndpoint"]["Action"]
    assert (
        f"arn:${{AWS::Partition}}:sagemaker:us-east-1:123456789012:inference-component/{MODEL}"
        in sids["InvokeEndpoint"]["Resource"]
    )
    assert sids["ReadWorkload"]["Resource"] == "arn:${AWS::Partition}:s3:::team-datasets/requests/v1/*"
    assert sids["ListWorkload"]["Condition"] == {"StringLike": {"s3:prefix": ["requests/v1/*"]}}
    assert sids["WriteBenchmarks"]["Resource"].endswith("/benchmarks/*")
    trust = resources[lid(stack, bench.job_role)]["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": "123456789012"}


# --------------------------------------------------------------------------- settings rules
def test_s3_workload_needs_its_prefix():
    with pytest.raises(
        ConfigurationError,
        match=r"s3_uri: got None; allowed: an s3:// prefix with workload s3; "
        r"fix: set s3_uri",
    ):
        EagleBenchmarkSettings(enabled=True, workload="s3")


def test_s3_uri_only_with_workload_s3():
    with pytest.raises(
        ConfigurationError, match=r"s3_uri: got 's3://b-ok/p/'; allowed: only with workload s3; fix: remove s3_uri"
    ):
        EagleBenchmarkSettings(s3_uri="s3://b-ok/p/")


def test_s3_uri_must_be_an_s3_prefix():
    with pytest.raises(ConfigurationError, match=r"s3_uri: got 'https://example.com/x'; allowed: an S3 URI"):
        EagleBenchmarkSettings(workload="s3", s3_uri="https://example.com/x")


def test_parameter_names_are_aiperf_names_and_benchmark_is_reserved():
    with pytest.raises(
        ConfigurationError,
        match=r"(?s)parameters\.Bad-Name: got 'Bad-Name'; allowed: a lower-case "
        r"AIPerf parameter name.*parameters\.benchmark: got 'benchmark'",
    ):
        EagleBenchmarkSettings(parameters={"Bad-Name": 1, "benchmark": 2})


def test_parameter_values_are_non_negative_numbers_or_short_strings():
    with pytest.raises(
        ConfigurationError,
        match=r"(?s)parameters\.concurrency: got -1; allowed: a number >= 0 or a "
        r"string.*parameters\.mode: got ''; allowed: a string of 1-256 characters",
    ):
        EagleBenchmarkSettings(parameters={"concurrency": -1, "mode": ""})


def test_at_most_32_parameters():
    with pytest.raises(ConfigurationError, match=r"parameters: got 33; allowed: at most 32 parameters"):
        EagleBenchmarkSettings(parameters={f"p{i}": i for i in range(33)})


def test_front_door_workload_needs_the_front_door_dataset():
    with pytest.raises(
        ConfigurationError,
        match=r"benchmark\.workload: got 'front_door'; allowed: front_door only with "
        r"dataset\.source front_door",
    ):
        EagleSettings(benchmark={"enabled": True, "workload": "front_door"})


@pytest.mark.parametrize(
    "field, value, allowed",
    [
        ("max_hours", 0, "at least 1"),
        ("max_hours", 49, "at most 48"),
        ("deploy_wait_hours", 0, "at least 1"),
        ("slowdown_tolerance", 0.6, "at most 0.5"),
        ("workload", "csv", "one of 'inline', 's3' or 'front_door'"),
    ],
)
def test_ranges_and_choices(field, value, allowed):
    with pytest.raises(ConfigurationError, match=rf"{field}: got {value!r}; allowed: {allowed}"):
        EagleBenchmarkSettings(**{field: value})


# --------------------------------------------------------------------------- front door workload, VPC
def test_front_door_workload_replays_the_turn_log_from_inside_the_endpoints_vpc():
    from aws_cdk import aws_ec2 as ec2
    from sagemaker_llm_cdk import SessionFrontDoor, TurnLog

    env = Environment(account="123456789012", region="us-west-2")
    app = App()
    promos, stack = Stack(app, "Promos", env=env), Stack(app, "Main", env=env)
    network = ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id="vpc-0abc12345def67890", availability_zones=["a"])
    llm = LlmEndpoint(
        stack,
        "Chat",
        settings=EndpointOptions(instance_type="ml.p5e.48xlarge"),
        vpc=network,
        vpc_subnets=ec2.SubnetSelection(
            subnets=[
                ec2.Subnet.from_subnet_attributes(
                    stack, "S0", subnet_id="subnet-0abc12345def67890", availability_zone="us-west-2a"
                )
            ]
        ),
        security_groups=[ec2.SecurityGroup.from_security_group_id(stack, "G0", "sg-0abc12345def67890")],
    )
    component = llm.add_model(
        "Qwen",
        ModelSpec(
            name=MODEL,
            physical_name=MODEL,
            model_data_s3_uri=WEIGHTS,
            architecture="Qwen3ForCausalLM",
            accelerators=2,
            sessions={},
        ),
    )
    front_door = SessionFrontDoor(stack, "FrontDoor", endpoint=llm, default_component=component)
    turn_log = TurnLog(stack, "Turns")
    front_door.log_turns(turn_log)
    eagle = EagleOptimization(
        stack,
        "QwenEagle",
        component=component,
        turn_log=turn_log,
        promotion_parameter=PromotionParameter(promos, "H", model_name=MODEL).parameter,
        settings={"dataset": {"source": "front_door"}, "benchmark": {"enabled": True, "workload": "front_door"}},
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    template = Template.from_stack(stack)
    resources = template.to_json()["Resources"]
    (workload,) = [r["Properties"] for r in resources.values() if r["Type"] == WORKLOAD_TYPE]
    channel = workload["DatasetConfig"]["InputDataConfig"][0]
    assert (
        render(channel["DataSource"]["S3DataSource"]["S3Uri"])
        == "s3://${" + lid(stack, turn_log.bucket) + "}/" + turn_log.prefix
    )
    bench = eagle.benchmark
    sids = by_sid(resources, stack, bench.job_role)
    assert sids["ReadWorkload"]["Resource"] == "${" + lid(stack, turn_log.bucket) + ".Arn}/" + turn_log.prefix + "*"
    assert sids["DecryptWorkload"]["Resource"] == "${" + lid(stack, turn_log.bucket.encryption_key) + ".Arn}"
    assert (
        "arn:${AWS::Partition}:ec2:us-west-2:123456789012:subnet/subnet-0abc12345def67890"
        in sids["ManageNetworkInterfaces"]["Resource"]
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "benchmark.start",
            "Environment": {
                "Variables": Match.object_like(
                    {"SUBNET_IDS": "subnet-0abc12345def67890", "SECURITY_GROUP_IDS": "sg-0abc12345def67890"}
                )
            },
        },
    )
