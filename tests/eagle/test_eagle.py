"""EagleOptimization and its speculative-decoding wiring: state machine, roles, triggers, serving, validation,
cdk-nag."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks
from sagemaker_llm_cdk import ConfigurationError, DataCapture, EndpointOptions, LlmEndpoint, ModelSpec
from sagemaker_llm_cdk.capacity.capacity_plan import encrypted_alarm_topic
from sagemaker_llm_cdk.core.settings import validated
from sagemaker_llm_cdk.eagle.optimization import EagleOptimization, run_timeout, start_retry_hours
from sagemaker_llm_cdk.hosting.speculative_decoding import DRAFT_PATH, PromotionParameter, speculative_config
from sagemaker_llm_cdk.settings.eagle import EagleSettings
from support.eagle import INSTANCE, MODEL, PARAMETER_NAME, PLAN_ARN, USER_DATA, WEIGHTS, Built, build, lid, render
from support.stacks import endpoint as support_endpoint

pytestmark = pytest.mark.synth


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def capture() -> Built:
    """Default settings: captured traffic, weekly schedule, 1.5x threshold, new notification topic."""
    return build(settings=EagleSettings())


@pytest.fixture(scope="module")
def user_data() -> Built:
    """Own dataset, EAGLE 2 architecture, VPC, capacity plan, given alarm topic, no schedule."""
    app = App()
    promos = Stack(app, "Promos")
    stack = Stack(app, "Main")
    network = ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id="vpc-0abc12345def67890", availability_zones=["a"])
    llm = LlmEndpoint(
        stack,
        "Chat",
        settings=EndpointOptions(instance_type=INSTANCE),
        vpc=network,
        vpc_subnets=ec2.SubnetSelection(
            subnets=[
                ec2.Subnet.from_subnet_attributes(
                    stack, "S0", subnet_id="subnet-0abc12345def67890", availability_zone="us-east-1a"
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
            architecture="Qwen3NextForCausalLM",
            accelerators=2,
        ),
    )
    head = PromotionParameter(promos, "QwenHead", model_name=MODEL)
    eagle = EagleOptimization(
        stack,
        "QwenEagle",
        component=component,
        promotion_parameter=head.parameter,
        settings={
            "schedule": None,
            "dataset": {"source": "s3", "s3_uri": USER_DATA},
            "num_speculative_tokens": 3,
            "max_runtime_hours": 12,
        },
        capacity_plan=SimpleNamespace(training_plan_arns=[PLAN_ARN], instance_type=INSTANCE),
        alarm_topic=encrypted_alarm_topic(stack, "Alarms", description="platform alarms"),
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    template = Template.from_stack(stack)
    resources = template.to_json()["Resources"]
    (machine,) = [r for r in resources.values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    definition = json.loads(render(machine["Properties"]["DefinitionString"]))
    return Built(app, promos, stack, llm, component, eagle, template, resources, definition)


# --------------------------------------------------------------------------- state machine: capture source


def test_capture_loop_has_every_state(capture):
    assert set(capture.states()) == {
        "Prepare",
        "PlanDataset",
        "AnyNewCaptures?",
        "NoNewCaptures",
        "ConvertCaptures",
        "FinalizeDataset",
        "EnoughNewRecords?",
        "NotEnoughRecords",
        "SummarizeDataset",
        "StartJob",
        "WaitForJob",
        "DescribeJob",
        "JobFinished?",
        "RecordRun",
        "JobSucceeded?",
        "NotifyJobFailed",
        "JobFailed",
        "NotifyResultsUnparsed",
        "ResultsUnparsed",
        "NotifyFailure",
        "RunFailed",
        "Done",
    }
    assert capture.definition["StartAt"] == "Prepare"


def test_run_id_is_the_execution_name_and_the_input_is_ignored(capture):
    prepare = capture.states()["Prepare"]
    assert prepare["Parameters"] == {"run": {"run_id.$": "$$.Execution.Name", "started_at.$": "$$.Execution.StartTime"}}
    assert "InputPath" not in prepare and "ResultPath" not in prepare  # output is built from the context only
    assert capture.states()["PlanDataset"]["Parameters"]["run_id.$"] == "$.run.run_id"


def test_plan_reads_this_endpoints_captures_and_writes_to_the_artifacts_bucket(capture):
    plan = capture.states()["PlanDataset"]
    eagle = capture.eagle
    assert plan["Parameters"] == {
        "capture_bucket": capture.ref(capture.endpoint.data_capture_bucket),
        "capture_prefix": "data-capture/" + capture.ref(capture.endpoint.cfn_endpoint, "EndpointName") + "/",
        "output_bucket": capture.ref(eagle.artifacts_bucket),
        "output_prefix": "datasets",
        "run_id.$": "$.run.run_id",
        "watermark_parameter": eagle.watermark_parameter.parameter_name,
    }
    assert plan["Resource"] == capture.ref(eagle.plan_function, "Arn")
    assert plan["ResultPath"] == "$.plan"
    choice = capture.states()["AnyNewCaptures?"]
    assert choice["Choices"] == [{"Variable": "$.plan.object_count", "NumericEquals": 0, "Next": "NoNewCaptures"}]
    assert choice["Default"] == "ConvertCaptures"
    assert capture.states()["NoNewCaptures"]["Next"] == "Done"


def test_distributed_map_reads_the_plan_batches_to_convert_and_writes_results_to_s3(capture):
    convert = capture.states()["ConvertCaptures"]
    bucket = capture.ref(capture.eagle.artifacts_bucket)
    assert convert["Type"] == "Map"
    assert convert["ItemReader"] == {
        "Resource": "arn:${AWS::Partition}:states:::s3:getObject",
        "ReaderConfig": {"InputType": "JSON"},
        "Parameters": {"Bucket": bucket, "Key.$": "$.plan.manifest_key"},
    }
    assert convert["ItemBatcher"]["MaxItemsPerBatch"] == 25
    assert convert["ItemBatcher"]["BatchInput"]["run_id.$"] == "$.run.run_id"
    assert convert["ItemBatcher"]["BatchInput"]["output_prefix"] == "datasets"
    assert convert["ResultWriter"] == {
        "Resource": "arn:${AWS::Partition}:states:::s3:putObject",
        "Parameters": {"Bucket": bucket, "Prefix": "map-results"},
    }
    assert convert["ToleratedFailurePercentage"] == 5
    assert convert["ResultPath"] == "$.map"
    processor = convert["ItemProcessor"]
    assert processor["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    batch = processor["States"][processor["StartAt"]]
    assert batch["Resource"] == capture.ref(capture.eagle.convert_function, "Arn")
    assert "Parameters" not in batch  # the batch ({"Items", "BatchInput"}) is the event
    assert convert["Next"] == "FinalizeDataset"


def test_finalize_gets_the_plan_and_the_result_writer_manifest(capture):
    finalize = capture.states()["FinalizeDataset"]
    assert finalize["Parameters"] == {
        "plan.$": "$.plan",
        "results.$": "$.map.ResultWriterDetails",
        "target_component": MODEL,
    }
    assert finalize["ResultPath"] == "$.dataset"


def test_threshold_skips_small_datasets_and_leaves_the_watermark_where_it_was(capture):
    """Nothing before StartJob writes the watermark, so a run below the threshold has nothing to undo."""
    states = capture.states()
    enough = states["EnoughNewRecords?"]
    assert enough["Choices"] == [
        {
            "Or": [
                {"Variable": "$.dataset.empty", "BooleanEquals": True},
                {"Variable": "$.dataset.records", "NumericLessThan": 1000},
            ],
            "Next": "NotEnoughRecords",
        }
    ]
    assert enough["Default"] == "SummarizeDataset"
    reason = states["NotEnoughRecords"]["Parameters"]["reason.$"]
    assert reason.startswith("States.Format(") and "min_new_records 1000" in reason
    assert states["NotEnoughRecords"]["Next"] == "Done"


def test_only_the_start_function_writes_the_watermark(capture):
    """The watermark moves with the job (StartJob's invocation): no state, and no other function, may write it."""
    eagle = capture.eagle
    watermark = render(capture.stack.resolve(eagle.watermark_parameter.parameter_arn))
    writers = []
    for resource in capture.resources.values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        for statement in render(resource["Properties"]["PolicyDocument"]["Statement"]):
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement.get("Resource", [])
            if "ssm:PutParameter" in actions and watermark in (
                resources if isinstance(resources, list) else [resources]
            ):
                writers.append(resource["Properties"]["Roles"])
    loop = {
        lid(capture.stack, role): name
        for name, role in [
            ("start", eagle.start_function.role),
            ("plan", eagle.plan_function.role),
            ("convert", eagle.convert_function.role),
            ("finalize", eagle.finalize_function.role),
            ("record", eagle.record_function.role),
            ("state machine", eagle.state_machine.role),
        ]
    }
    # (the deploy-time resource that creates the parameter writes it too; no other part of the loop may)
    assert [loop[role["Ref"]] for roles in writers for role in roles if role["Ref"] in loop] == ["start"]
    assert not any(
        str(state.get("Resource", "")).endswith(":ssm:putParameter")
        for state in _all_states(capture.definition).values()
    )


def test_start_job_gets_the_dataset_and_model_and_retries_quota_errors_for_hours(capture):
    start = capture.states()["StartJob"]
    assert start["Resource"] == capture.ref(capture.eagle.start_function, "Arn")
    assert start["Parameters"] == {
        "model_name": MODEL,
        "model_s3_uri": WEIGHTS,
        "architecture": "Qwen3ForCausalLM",
        "deployment_instance_type": INSTANCE,
        "max_instance_count": 1,
        "training_data": {"s3_uri.$": "$.dataset.training_data_s3_uri", "s3_data_type.$": "$.dataset.s3_data_type"},
        "run_id.$": "$.run.run_id",
        "dataset_summary.$": "$.dataset.summary",
        "watermark.$": "$.dataset.watermark_commit",  # the start moves the watermark with the job
    }
    retries = {tuple(r["ErrorEquals"]): r for r in start["Retry"]}
    assert retries[("ResourceLimitExceededError",)] == {
        "ErrorEquals": ["ResourceLimitExceededError"],
        "IntervalSeconds": 1800,
        "MaxAttempts": 6,
        "BackoffRate": 2,
        "MaxDelaySeconds": 4 * 3600,
    }
    lambda_errors = next(r for errors, r in retries.items() if "Lambda.ServiceException" in errors)
    assert "Lambda.TooManyRequestsException" in lambda_errors["ErrorEquals"]
    assert start["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "NotifyFailure"}]
    assert start["ResultPath"] == "$.start" and start["Next"] == "WaitForJob"


def test_failures_are_published_with_error_and_cause_then_fail(capture):
    notify = capture.states()["NotifyFailure"]
    assert notify["Resource"] == "arn:${AWS::Partition}:states:::sns:publish"
    assert notify["Parameters"]["TopicArn"] == capture.ref(capture.eagle.topic)
    assert notify["Parameters"]["Message"] == {
        "model_name": MODEL,
        "run_id.$": "$$.Execution.Name",
        "execution.$": "$$.Execution.Id",
        "error.$": "$.error.Error",
        "cause.$": "$.error.Cause",
    }
    assert notify["Next"] == "RunFailed"
    assert capture.states()["RunFailed"] == {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"}


def _all_states(machine: dict[str, Any]) -> dict[str, Any]:
    """Every state of an ASL definition by name, those inside Map (ItemProcessor / Iterator) and Parallel
    (Branches) states included, at any depth."""
    found: dict[str, Any] = {}
    for name, state in machine["States"].items():
        found[name] = state
        for inner in [state.get("ItemProcessor"), state.get("Iterator"), *state.get("Branches", [])]:
            if inner:
                found.update(_all_states(inner))
    return found


TRANSIENT = {  # resource (as rendered) -> an error of that service that must be retried
    "arn:${AWS::Partition}:states:::lambda:invoke": "Lambda.TooManyRequestsException",
    "arn:${AWS::Partition}:states:::sns:publish": "SNS.ThrottledException",
    "arn:${AWS::Partition}:states:::aws-sdk:sagemaker:describeOptimizationJob": "SageMaker.ThrottlingException",
    "arn:${AWS::Partition}:states:::states:startExecution": "StepFunctions.ExecutionLimitExceededException",
}


@pytest.mark.parametrize("fixture", ["capture", "user_data"])
def test_every_task_retries_its_services_transient_errors(fixture, request):
    """Every Task, the SNS notifications and the Distributed Map's worker included, has a Retry with errors its
    service documents as transient (never a bare States.ALL), so no outcome is lost to throttling."""
    built = request.getfixturevalue(fixture)
    tasks = {name: state for name, state in _all_states(built.definition).items() if state["Type"] == "Task"}
    assert {"NotifyFailure", "NotifyJobFailed", "NotifyResultsUnparsed", "StartJob", "RecordRun"} <= set(tasks)
    if fixture == "capture":
        assert "ConvertBatch" in tasks  # the Distributed Map's ItemProcessor is walked
    problems = []
    for name, state in tasks.items():
        retried = [error for retry in state.get("Retry", []) for error in retry["ErrorEquals"]]
        resource = state["Resource"]
        if resource.startswith("arn:${AWS::Partition}:lambda:") or resource.startswith("${"):
            resource = "arn:${AWS::Partition}:states:::lambda:invoke"  # payload-only Lambda tasks name the function
        if resource not in TRANSIENT:
            problems.append(f"{name}: no rule for {resource}")
        elif TRANSIENT[resource] not in retried or "States.ALL" in retried:
            problems.append(f"{name}: retries {retried}")
    assert not problems, problems


def test_notifications_retry_throttling_and_internal_errors_under_both_spellings(capture):
    """Step Functions names an SNS error after the SDK exception class: ``SNS.`` (optimized integration) and
    ``Sns.`` (AWS SDK integration); botocore's Publish lists InternalErrorException and KMSThrottlingException."""
    from sagemaker_llm_cdk.eagle.state_machine import SNS_RETRY_ERRORS

    for name in ("NotifyFailure", "NotifyJobFailed", "NotifyResultsUnparsed"):
        (retry,) = capture.states()[name]["Retry"]
        assert retry == {"ErrorEquals": SNS_RETRY_ERRORS, "IntervalSeconds": 2, "MaxAttempts": 6, "BackoffRate": 2}
    assert {
        "SNS.ThrottledException",
        "SNS.InternalErrorException",
        "SNS.KMSThrottlingException",
        "Sns.ThrottledException",
        "Sns.InternalErrorException",
        "Sns.KmsThrottlingException",
    } <= set(SNS_RETRY_ERRORS)
    import botocore.session

    publish = botocore.session.get_session().get_service_model("sns").operation_model("Publish")
    modelled = {shape.name for shape in publish.error_shapes}
    assert {"InternalErrorException", "KMSThrottlingException"} <= modelled


def test_every_task_sends_its_errors_to_sns(capture):
    tasks = [
        name
        for name, state in capture.states().items()
        if state["Type"] in ("Task", "Map") and not name.startswith("Notify")
    ]
    assert len(tasks) == 6  # plan, the convert map, finalize, start, describe, record: no state writes the watermark
    for name in tasks:
        catches = capture.states()[name]["Catch"]
        assert catches == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "NotifyFailure"}], name


def test_wait_and_describe_loop_until_a_terminal_status(capture):
    states = capture.states()
    assert states["WaitForJob"] == {"Type": "Wait", "Seconds": 300, "Next": "DescribeJob"}
    describe = states["DescribeJob"]
    assert describe["Resource"] == "arn:${AWS::Partition}:states:::aws-sdk:sagemaker:describeOptimizationJob"
    assert describe["Parameters"] == {"OptimizationJobName.$": "$.start.job_name"}
    assert describe["ResultPath"] == "$.start.job"
    assert "SageMaker.ThrottlingException" in describe["Retry"][0]["ErrorEquals"]
    finished = states["JobFinished?"]
    assert finished["Choices"] == [
        {
            "Or": [
                {"Variable": "$.start.job.OptimizationJobStatus", "StringEquals": status}
                for status in ("COMPLETED", "FAILED", "STOPPED")
            ],
            "Next": "RecordRun",
        }
    ]
    assert finished["Default"] == "WaitForJob"


def test_record_gets_the_start_output_with_the_job_and_failed_jobs_are_published(capture):
    states = capture.states()
    record = states["RecordRun"]
    assert record["InputPath"] == "$.start" and record["ResultPath"] == "$.record"
    assert record["Resource"] == capture.ref(capture.eagle.record_function, "Arn")
    assert states["JobSucceeded?"]["Choices"] == [
        {
            "And": [
                {"Variable": "$.start.job.OptimizationJobStatus", "StringEquals": "COMPLETED"},
                {"Variable": "$.record.results_unparsed", "BooleanEquals": True},
            ],
            "Next": "NotifyResultsUnparsed",
        },
        {"Variable": "$.start.job.OptimizationJobStatus", "StringEquals": "COMPLETED", "Next": "Done"},
    ]
    assert states["JobSucceeded?"]["Default"] == "NotifyJobFailed"
    message = states["NotifyJobFailed"]["Parameters"]["Message"]
    assert message["failure_reason.$"] == "$.record.failure_reason"
    assert message["status.$"] == "$.start.job.OptimizationJobStatus"
    assert states["JobFailed"]["Error"] == "OptimizationJobFailed"


def test_unreadable_results_are_published_to_sns_and_the_run_fails(capture):
    states = capture.states()
    notify = states["NotifyResultsUnparsed"]
    assert notify["Resource"] == "arn:${AWS::Partition}:states:::sns:publish"
    assert notify["Parameters"]["TopicArn"] == capture.ref(capture.eagle.topic)
    message = notify["Parameters"]["Message"]
    assert message["output_objects.$"] == "$.record.output_listing_count"
    assert message["results_files.$"] == "$.record.results_files" and message["report.$"] == "$.record.report_s3_uri"
    assert notify["Next"] == "ResultsUnparsed" and states["ResultsUnparsed"]["Type"] == "Fail"
    assert states["ResultsUnparsed"]["Error"] == "ResultsUnparsed"
    assert notify["Catch"][0]["Next"] == "NotifyFailure"
    metric = capture.eagle.metric_results_unparsed()
    assert (metric.metric_name, metric.namespace, metric.statistic) == ("EagleResultsUnparsed", "SageMakerLlm", "Sum")
    assert metric.dimensions == {"ModelName": MODEL, "service": "eagle_job"}  # what the record function emits


def test_timeout_covers_the_job_limit_dataset_and_start_retries(capture):
    assert start_retry_hours() == pytest.approx(0.5 + 1 + 2 + 4 + 4 + 4)
    assert capture.definition["TimeoutSeconds"] == (24 + 6 + 16 + 1) * 3600
    assert run_timeout(24).to_hours() == 47


def test_state_machine_logs_and_traces(capture):
    capture.template.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "LoggingConfiguration": {
                "Level": "ALL",
                "IncludeExecutionData": False,
                "Destinations": [Match.any_value()],
            },
            "TracingConfiguration": {"Enabled": True},
        },
    )


# --------------------------------------------------------------------------- roles


def test_only_the_start_function_may_pass_the_job_role_and_only_to_sagemaker(capture):
    eagle = capture.eagle
    job_role = capture.ref(eagle.job_role, "Arn")
    passing = [
        (construct_id, statement)
        for construct_id, resource in capture.resources.items()
        if resource["Type"] == "AWS::IAM::Policy"
        for statement in render(resource["Properties"]["PolicyDocument"]["Statement"])
        if "iam:PassRole" in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
        and statement["Resource"] == job_role
    ]
    assert len(passing) == 1
    _, statement = passing[0]
    assert statement["Condition"] == {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}
    assert any(s.get("Sid") == "PassJobRole" for s in capture.statements(eagle.start_function.role))


def test_start_function_grants(capture):
    eagle = capture.eagle
    jobs = "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:optimization-job/eagle-*"
    grants = capture.grants(eagle.start_function.role)
    assert grants["sagemaker:CreateOptimizationJob"] == grants["sagemaker:AddTags"] == [jobs]
    assert grants["sagemaker:DescribeOptimizationJob"] == [jobs]
    assert grants["iam:PassRole"] == [capture.ref(eagle.job_role, "Arn")]
    listing = next(s for s in capture.statements(eagle.start_function.role) if s.get("Sid") == "FindDataset")
    assert listing["Resource"] == "arn:${AWS::Partition}:s3:::" + capture.ref(eagle.artifacts_bucket)
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["datasets/*"]}}
    watermark = render(capture.stack.resolve(eagle.watermark_parameter.parameter_arn))
    assert grants["ssm:GetParameter"] == grants["ssm:PutParameter"] == [watermark]  # this one parameter only
    assert set(grants) == {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "sagemaker:CreateOptimizationJob",
        "sagemaker:DescribeOptimizationJob",
        "sagemaker:AddTags",
        "iam:PassRole",
        "s3:ListBucket",
        "ssm:GetParameter",
        "ssm:PutParameter",
    }


def test_job_role_reads_model_and_dataset_writes_only_its_output(capture):
    eagle = capture.eagle
    trust = capture.resources[lid(capture.stack, eagle.job_role)]["Properties"]["AssumeRolePolicyDocument"]
    assert render(trust["Statement"]) == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Condition": {
                "StringEquals": {"aws:SourceAccount": "${AWS::AccountId}"},  # confused deputy
                "ArnLike": {"aws:SourceArn": "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:*"},
            },
        }
    ]
    artifacts = capture.ref(eagle.artifacts_bucket, "Arn")
    grants = capture.grants(eagle.job_role)
    assert grants["s3:GetObject"] == sorted(
        ["arn:${AWS::Partition}:s3:::my-weights/qwen3-32b/*", f"{artifacts}/datasets/*"]
    )
    assert grants["s3:PutObject"] == grants["s3:AbortMultipartUpload"] == [f"{artifacts}/jobs/*"]
    assert not [
        a
        for a in grants
        if a.startswith("s3:") and a not in {"s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:ListBucket"}
    ]
    listings = {
        s["Sid"]: s["Condition"]["StringLike"]["s3:prefix"]
        for s in capture.statements(eagle.job_role)
        if s["Action"] == "s3:ListBucket"
    }
    assert listings == {"ListModel": ["qwen3-32b/*"], "ListDataset": ["datasets/*"], "ListJobOutput": ["jobs/*"]}
    assert grants["kms:Decrypt"] == grants["kms:GenerateDataKey"] == [capture.ref(eagle.key, "Arn")]
    assert "ManagedPolicyArns" not in capture.resources[lid(capture.stack, eagle.job_role)]["Properties"]
    assert not [a for a in grants if a.startswith("ec2:")]  # no VPC here


def test_dataset_functions_read_only_this_endpoints_captures(capture):
    eagle = capture.eagle
    capture_objects = (
        capture.ref(capture.endpoint.data_capture_bucket, "Arn")
        + "/data-capture/"
        + capture.ref(capture.endpoint.cfn_endpoint, "EndpointName")
        + "/*"
    )
    datasets = capture.ref(eagle.artifacts_bucket, "Arn") + "/datasets/*"
    convert = capture.grants(eagle.convert_function.role)
    assert convert["s3:GetObject"] == [capture_objects]
    assert convert["s3:PutObject"] == [datasets]
    assert convert["kms:Decrypt"] == sorted([capture.ref(capture.endpoint.key, "Arn"), capture.ref(eagle.key, "Arn")])
    plan = capture.grants(eagle.plan_function.role)
    assert "s3:GetObject" not in plan and plan["s3:PutObject"] == [datasets]
    finalize = capture.grants(eagle.finalize_function.role)
    assert finalize["s3:GetObject"] == [capture.ref(eagle.artifacts_bucket, "Arn") + "/map-results/*"]
    assert not any(action.startswith("ssm:") for action in finalize)  # finalize only says where it moves
    assert "ssm:PutParameter" not in plan


def test_training_set_is_written_under_the_key_the_job_role_may_decrypt_with(capture):
    eagle = capture.eagle
    key = capture.ref(eagle.key, "Arn")
    bucket = capture.resources[lid(capture.stack, eagle.artifacts_bucket)]["Properties"]
    rule = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert (rule["SSEAlgorithm"], render(rule["KMSMasterKeyID"])) == ("aws:kms", key)
    for function in (eagle.plan_function, eagle.convert_function, eagle.finalize_function):
        env = capture.resources[lid(capture.stack, function)]["Properties"]["Environment"]["Variables"]
        assert render(env["DATASET_KMS_KEY_ARN"]) == key  # every write names it (lambda/eagle_dataset)
    job = capture.grants(eagle.job_role)
    assert key in job["kms:Decrypt"]
    assert f"{capture.ref(eagle.artifacts_bucket, 'Arn')}/datasets/*" in job["s3:GetObject"]


def test_unnamed_capture_records_go_to_the_model_only_when_it_is_alone_on_the_endpoint(capture):
    env = capture.resources[lid(capture.stack, capture.eagle.convert_function)]["Properties"]["Environment"][
        "Variables"
    ]
    assert env["UNNAMED_RECORDS_COMPONENT"] == MODEL  # one model, no LoRA: nothing else can be captured
    app = App()
    promos, stack = Stack(app, "Promos"), Stack(app, "Main")
    llm = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type=INSTANCE))
    qwen = llm.add_model(
        "Qwen", ModelSpec(name=MODEL, model_data_s3_uri=WEIGHTS, architecture="Qwen3ForCausalLM", accelerators=2)
    )
    eagle = EagleOptimization(
        stack,
        "QwenEagle",
        component=qwen,
        promotion_parameter=PromotionParameter(promos, "H", model_name=MODEL).parameter,
    )
    llm.add_model("Other", ModelSpec(name="other-model", model_data_s3_uri=WEIGHTS, accelerators=2))  # added later
    variables = Template.from_stack(stack).to_json()["Resources"][lid(stack, eagle.convert_function)]["Properties"][
        "Environment"
    ]["Variables"]
    assert variables["UNNAMED_RECORDS_COMPONENT"] == ""  # two components: unnamed records are kept apart


def test_record_function_grants(capture):
    eagle = capture.eagle
    artifacts = capture.ref(eagle.artifacts_bucket, "Arn")
    grants = capture.grants(eagle.record_function.role)
    assert grants["s3:GetObject"] == [f"{artifacts}/jobs/*/results/*"]
    assert grants["s3:PutObject"] == [f"{artifacts}/reports/*"]
    assert grants["dynamodb:PutItem"] == grants["dynamodb:Query"] == [capture.ref(eagle.runs_table, "Arn")]
    parameter = f"arn:${{AWS::Partition}}:ssm:${{AWS::Region}}:${{AWS::AccountId}}:parameter{PARAMETER_NAME}"
    assert grants["ssm:GetParameter"] == grants["ssm:PutParameter"] == [parameter]


def test_state_machine_cannot_write_outside_map_results(capture):
    deny = [s for s in capture.statements(capture.eagle.state_machine.role) if s["Effect"] == "Deny"]
    assert deny == [
        {
            "Action": "s3:PutObject",
            "Effect": "Deny",
            "Sid": "WriteOnlyMapResults",
            "NotResource": capture.ref(capture.eagle.artifacts_bucket, "Arn") + "/map-results/*",
        }
    ]


def test_endpoint_role_reads_draft_heads_only(capture):
    statements = {s.get("Sid"): s for s in capture.statements(capture.endpoint.role)}
    artifacts = capture.ref(capture.eagle.artifacts_bucket, "Arn")
    assert statements["ReadEagleDraftHeads"]["Resource"] == f"{artifacts}/jobs/*/draft/*"
    assert statements["ReadEagleDraftHeads"]["Action"] == "s3:GetObject"
    assert statements["ListEagleDraftHeads"]["Condition"] == {"StringLike": {"s3:prefix": ["jobs/*"]}}
    assert statements["DecryptEagleDraftHeads"]["Resource"] == capture.ref(capture.eagle.key, "Arn")


# --------------------------------------------------------------------------- storage, env, triggers


def test_runs_table_is_keyed_by_model_and_run_with_pitr_and_kms(capture):
    capture.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [
                {"AttributeName": "model_name", "KeyType": "HASH"},
                {"AttributeName": "run_id", "KeyType": "RANGE"},
            ],
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": {
                "SSEEnabled": True,
                "SSEType": "KMS",
                "KMSMasterKeyId": {"Fn::GetAtt": [lid(capture.stack, capture.eagle.key), "Arn"]},
            },
        },
    )


def test_start_and_record_environment(capture):
    eagle = capture.eagle
    start = capture.resources[lid(capture.stack, eagle.start_function)]["Properties"]["Environment"]["Variables"]
    start = render(start)
    assert start["ROLE_ARN"] == capture.ref(eagle.job_role, "Arn")
    assert start["OUTPUT_S3_URI"] == "s3://" + capture.ref(eagle.artifacts_bucket) + "/jobs"
    assert start["MAX_RUNTIME_SECONDS"] == "86400"
    assert start["KMS_KEY_ARN"] == capture.ref(eagle.key, "Arn")
    assert "SUBNET_IDS" not in start and "TRAINING_PLAN_ARNS" not in start
    record = render(
        capture.resources[lid(capture.stack, eagle.record_function)]["Properties"]["Environment"]["Variables"]
    )
    assert record["RUNS_TABLE"] == capture.ref(eagle.runs_table)
    assert record["REPORT_S3_URI"] == "s3://" + capture.ref(eagle.artifacts_bucket) + "/reports"
    assert record["PROMOTION_PARAMETER"] == PARAMETER_NAME
    assert record["SPEEDUP_THRESHOLD"] == "1.5"
    handler = capture.resources[lid(capture.stack, eagle.record_function)]["Properties"]["Handler"]
    assert handler == "index.record"


def test_watermark_starts_empty_in_the_dataset_builders_format(capture):
    capture.template.has_resource_properties(
        "Custom::SageMakerLlmRunTimeParameter",
        {"ParameterName": f"/sagemaker-llm/state/eagle/{MODEL}/watermark", "InitialValue": '{"v":1,"after":{}}'},
    )


def test_schedule_starts_this_state_machine_with_an_empty_input(capture):
    machine = capture.ref(capture.eagle.state_machine)
    (schedule,) = [r for r in capture.resources.values() if r["Type"] == "AWS::Scheduler::Schedule"]
    props = render(schedule["Properties"])
    assert props["ScheduleExpression"] == "rate(7 days)"
    assert props["Target"]["Arn"] == machine and props["Target"]["Input"] == "{}"
    assert props["Target"]["RoleArn"] == capture.ref(capture.eagle.schedule_role, "Arn")
    assert capture.grants(capture.eagle.schedule_role) == {"states:StartExecution": [machine]}


def test_timed_out_and_aborted_runs_are_published(capture):
    capture.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {
                "source": ["aws.states"],
                "detail-type": ["Step Functions Execution Status Change"],
                "detail": {
                    "status": ["TIMED_OUT", "ABORTED"],
                    "stateMachineArn": [{"Ref": lid(capture.stack, capture.eagle.state_machine)}],
                },
            },
            "Targets": [Match.object_like({"Arn": {"Ref": lid(capture.stack, capture.eagle.topic)}})],
        },
    )
    capture.template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})


def test_metrics_match_what_the_record_function_publishes(capture):
    speedup = capture.eagle.metric_speedup()
    assert (speedup.namespace, speedup.metric_name, speedup.statistic) == ("SageMakerLlm", "EagleSpeedup", "Maximum")
    assert speedup.dimensions == {"ModelName": MODEL, "service": "eagle_job"}
    failed = capture.eagle.metric_job_failed()
    assert (failed.metric_name, failed.statistic) == ("EagleJobFailed", "Sum")


# --------------------------------------------------------------------------- speculative decoding wiring


def test_draft_head_is_an_ssm_stack_parameter_resolved_on_every_deploy(capture):
    parameters = {k: v for k, v in capture.template.to_json()["Parameters"].items() if k != "BootstrapVersion"}
    ((name, parameter),) = parameters.items()
    assert parameter["Type"] == "AWS::SSM::Parameter::Value<String>"
    assert parameter["Default"] == PARAMETER_NAME
    assert "[cdk:skip]" not in parameter["Description"]  # the CLI must never skip deploying this stack
    conditions = capture.template.to_json()["Conditions"]
    assert conditions == {
        lid(capture.stack, capture.eagle.speculative_decoding.promoted_condition): {
            "Fn::Not": [{"Fn::Equals": [{"Ref": name}, "none"]}]
        }
    }


def test_inference_component_serves_the_serving_model_only_while_a_head_is_promoted(capture):
    wiring = capture.eagle.speculative_decoding
    component = capture.resources[lid(capture.stack, capture.component.cfn_inference_component)]
    served = {
        "Fn::If": [
            lid(capture.stack, wiring.promoted_condition),
            {"Fn::GetAtt": [lid(capture.stack, wiring.serving_model), "ModelName"]},
            {"Fn::GetAtt": [lid(capture.stack, capture.component.cfn_model), "ModelName"]},
        ]
    }
    assert component["Properties"]["Specification"]["ModelName"] == served
    assert capture.stack.resolve(capture.component.served_model_name) == served  # for DeploymentCheck


def test_serving_model_adds_the_draft_channel_and_speculative_config(capture):
    wiring = capture.eagle.speculative_decoding
    serving = capture.resources[lid(capture.stack, wiring.serving_model)]
    assert serving["Type"] == "Custom::EagleServingModel"
    assert serving["Condition"] == lid(capture.stack, wiring.promoted_condition)
    container = serving["Properties"]["PrimaryContainer"]
    parameter = lid(capture.stack, wiring.draft_head_parameter)
    assert container["AdditionalModelDataSources"] == [
        {
            "ChannelName": "eagle",
            "S3DataSource": {"S3Uri": {"Ref": parameter}, "S3DataType": "S3Prefix", "CompressionType": "None"},
        }
    ]
    assert container["ModelDataSource"] == {
        "S3DataSource": {"S3Uri": WEIGHTS, "S3DataType": "S3Prefix", "CompressionType": "None"}
    }
    env = container["Environment"]
    assert json.loads(env["OPTION_SPECULATIVE_CONFIG"]) == {
        "method": "eagle3",
        "model": "/opt/ml/additional-model-data-sources/eagle",
        "num_speculative_tokens": 5,
    }
    assert env["OPTION_MODEL_ID"] == "/opt/ml/model" and env["OPTION_TENSOR_PARALLEL_DEGREE"] == "2"
    base = capture.resources[lid(capture.stack, capture.component.cfn_model)]["Properties"]["PrimaryContainer"]
    assert container["Image"] == base["Image"]
    assert "OPTION_SPECULATIVE_CONFIG" not in base["Environment"]  # the component's own model stays as it is
    assert render(serving["Properties"]["ExecutionRoleArn"]) == capture.ref(capture.endpoint.role, "Arn")
    assert serving["Properties"]["ModelNamePrefix"] == "qwen3-32b-eagle"
    assert "VpcConfig" not in serving["Properties"]


def test_serving_model_function_manages_only_its_models(capture):
    wiring = capture.eagle.speculative_decoding
    grants = capture.grants(wiring.function.role)
    models = "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:model/qwen3-32b-eagle-*"
    assert grants["sagemaker:CreateModel"] == grants["sagemaker:DeleteModel"] == [models]
    passing = next(s for s in capture.statements(wiring.function.role) if s.get("Sid") == "PassEndpointRole")
    assert passing["Resource"] == capture.ref(capture.endpoint.role, "Arn")
    assert passing["Condition"] == {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}


def test_serving_model_is_told_which_heads_this_stack_may_serve(capture):
    """The handler serves the promoted head only under the artifacts bucket's jobs/ (what the endpoint role reads)
    and trained on the weights served now, which it asks the head's optimization job."""
    wiring = capture.eagle.speculative_decoding
    serving = capture.resources[lid(capture.stack, wiring.serving_model)]
    assert render(serving["Properties"]["PromotedHead"]) == {
        "S3Uri": "${" + lid(capture.stack, wiring.draft_head_parameter) + "}",
        "ReadablePrefix": "s3://" + capture.ref(capture.eagle.artifacts_bucket) + "/jobs/",
    }
    heads = next(s for s in capture.statements(capture.endpoint.role) if s.get("Sid") == "ReadEagleDraftHeads")
    assert heads["Resource"] == capture.ref(capture.eagle.artifacts_bucket, "Arn") + "/jobs/*/draft/*"
    grants = capture.grants(wiring.function.role)
    assert grants["sagemaker:DescribeOptimizationJob"] == [
        "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:optimization-job/eagle-*"
    ]


def test_promotion_parameter_lives_in_the_companion_stack_deployed_first(capture):
    Template.from_stack(capture.promos).has_resource_properties(
        "Custom::SageMakerLlmRunTimeParameter",
        {
            "ParameterName": PARAMETER_NAME,
            "InitialValue": "none",
            "SeedFrom": f"/sagemaker-llm/eagle/{MODEL}/draft-head",
        },
    )
    assert capture.promos in capture.stack.dependencies


@pytest.mark.parametrize("removal", ["retain", "destroy"])
def test_the_platforms_promotion_parameters_follow_the_configs_removal(removal):
    """destroy: the promotion parameter goes with the stack, as the bucket whose head it names does; a stack
    deployed again then starts from none. retain keeps it (the serving model then leaves the old head out)."""
    from pathlib import Path

    from sagemaker_llm_cdk import load_config

    from stacks import LlmPlatformStack

    root = Path(__file__).resolve().parents[2]
    config = load_config(root / "config/examples/eagle-builtin-dataset.yaml").model_copy(update={"removal": removal})
    stack = LlmPlatformStack(App(), config.stack_name, config=config, config_dir=root / "config/examples")
    assert stack.promotions is not None
    (parameter,) = Template.from_stack(stack.promotions).find_resources("Custom::SageMakerLlmRunTimeParameter").values()
    assert parameter["Properties"]["Removal"] == removal
    assert parameter["Properties"]["ParameterName"].endswith("/draft-head")


def test_speculative_config_method_names():
    assert json.loads(speculative_config("EAGLE2", 3)) == {
        "method": "eagle",
        "model": DRAFT_PATH,
        "num_speculative_tokens": 3,
    }
    assert json.loads(speculative_config("EAGLE3", 5))["method"] == "eagle3"


# --------------------------------------------------------------------------- own dataset, VPC, plan, given topic


def test_user_dataset_is_validated_then_trained_on_directly(user_data):
    states = user_data.states()
    assert set(states) == {
        "Prepare",
        "ValidateDataset",
        "UseDataset",
        "StartJob",
        "WaitForJob",
        "DescribeJob",
        "JobFinished?",
        "RecordRun",
        "JobSucceeded?",
        "NotifyJobFailed",
        "JobFailed",
        "NotifyResultsUnparsed",
        "ResultsUnparsed",
        "NotifyFailure",
        "RunFailed",
        "Done",
    }
    assert states["Prepare"]["Next"] == "ValidateDataset"
    assert states["ValidateDataset"]["Parameters"] == {"s3_uri": USER_DATA, "s3_data_type": "S3Prefix"}
    assert states["UseDataset"]["Parameters"]["training_data_s3_uri"] == USER_DATA
    assert states["UseDataset"]["Parameters"]["summary"]["format.$"] == "$.validation.format"
    assert states["UseDataset"]["Next"] == "StartJob"
    assert user_data.definition["TimeoutSeconds"] == (12 + 6 + 16 + 1) * 3600


def test_user_dataset_prefix_is_what_the_job_and_start_may_read(user_data):
    eagle = user_data.eagle
    job = user_data.grants(eagle.job_role)
    assert "arn:${AWS::Partition}:s3:::team-datasets/chat/v3/*" in job["s3:GetObject"]
    validate = user_data.grants(eagle.validate_function.role)
    assert validate["s3:GetObject"] == ["arn:${AWS::Partition}:s3:::team-datasets/chat/v3/*"]
    listing = next(s for s in user_data.statements(eagle.start_function.role) if s.get("Sid") == "FindDataset")
    assert listing["Resource"] == "arn:${AWS::Partition}:s3:::team-datasets"
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["chat/v3/*"]}}


def test_vpc_and_capacity_plan_reach_the_start_function_and_job_role(user_data):
    eagle = user_data.eagle
    env = render(
        user_data.resources[lid(user_data.stack, eagle.start_function)]["Properties"]["Environment"]["Variables"]
    )
    assert env["SUBNET_IDS"] == "subnet-0abc12345def67890"
    assert env["SECURITY_GROUP_IDS"] == "sg-0abc12345def67890"
    assert env["TRAINING_PLAN_ARNS"] == PLAN_ARN
    assert env["MAX_RUNTIME_SECONDS"] == str(12 * 3600)
    grants = user_data.grants(eagle.job_role)
    assert "ec2:CreateNetworkInterface" in grants and grants["ec2:DescribeSubnets"] == ["*"]
    serving = user_data.resources[lid(user_data.stack, eagle.speculative_decoding.serving_model)]["Properties"]
    assert serving["VpcConfig"] == {
        "SecurityGroupIds": ["sg-0abc12345def67890"],
        "Subnets": ["subnet-0abc12345def67890"],
    }


def test_eagle2_architecture_serves_with_vllm_method_eagle(user_data):
    serving = user_data.resources[lid(user_data.stack, user_data.eagle.speculative_decoding.serving_model)]
    config = json.loads(serving["Properties"]["PrimaryContainer"]["Environment"]["OPTION_SPECULATIVE_CONFIG"])
    assert config == {"method": "eagle", "model": DRAFT_PATH, "num_speculative_tokens": 3}
    assert user_data.eagle.eagle_version == "EAGLE2"


def test_given_topic_is_used_and_no_schedule_is_made(user_data):
    assert user_data.eagle.schedule is None
    user_data.template.resource_count_is("AWS::Scheduler::Schedule", 0)
    user_data.template.resource_count_is("AWS::SNS::Topic", 1)  # only the given one
    notify = user_data.states()["NotifyFailure"]
    assert notify["Parameters"]["TopicArn"] == user_data.ref(user_data.eagle.topic)
    assert user_data.eagle.topic.node.path == "Main/Alarms"
    key_policy = user_data.resources[lid(user_data.stack, user_data.eagle.topic.master_key)]["Properties"]["KeyPolicy"]
    assert {
        "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
        "Effect": "Allow",
        "Resource": "*",
        "Principal": {"Service": "events.amazonaws.com"},
        "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}},
    } in key_policy["Statement"]  # EventBridge may publish timed-out runs to the given encrypted topic


# --------------------------------------------------------------------------- cdk-nag


def test_cdk_nag_reports_no_errors(capture, user_data):
    """Both fixtures synthesize their app with the AwsSolutions pack attached (``app.synth()`` raises on any
    unacknowledged finding), so building them is the assertion; here only that both carry EAGLE resources."""
    for built in (capture, user_data):
        built.template.resource_count_is("AWS::StepFunctions::StateMachine", 1)
        built.template.resource_count_is("Custom::EagleServingModel", 1)


def test_cdk_nag_still_flags_an_unreviewed_wildcard_on_the_job_role():
    app = App()
    promos, stack = Stack(app, "Promos"), Stack(app, "Main")
    llm = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type=INSTANCE))
    component = llm.add_model(
        "Qwen", ModelSpec(name=MODEL, physical_name=MODEL, model_data_s3_uri=WEIGHTS, architecture="Qwen3ForCausalLM")
    )
    eagle = EagleOptimization(
        stack,
        "QwenEagle",
        component=component,
        promotion_parameter=PromotionParameter(promos, "Head", model_name=MODEL).parameter,
    )
    eagle.job_role.add_to_principal_policy(
        iam.PolicyStatement(actions=["s3:GetObject"], resources=["arn:aws:s3:::other-bucket/*"])
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(Exception, match=r"AwsSolutions-IAM5\[Resource::arn:aws:s3:::other-bucket/\*\]"):
        app.synth()


# --------------------------------------------------------------------------- validation


def _component(
    stack: Stack | None = None,
    *,
    architecture: str | None = "Qwen3ForCausalLM",
    instance_type: str = INSTANCE,
    **endpoint_kwargs: Any,
):
    stack = stack or Stack(App(), "Main")
    llm = support_endpoint(stack, "Chat", instance_type=instance_type, **endpoint_kwargs)
    return stack, llm.add_model(
        "Qwen", ModelSpec(name=MODEL, physical_name=MODEL, model_data_s3_uri=WEIGHTS, architecture=architecture)
    )


def _head(stack: Stack) -> ssm.IStringParameter:
    return PromotionParameter(Stack(stack.node.root, "Promos"), "Head", model_name=MODEL).parameter


def test_unsupported_architecture_names_the_supported_list():
    stack, component = _component(architecture="MistralForCausalLM")
    with pytest.raises(
        ConfigurationError,
        match=r"(?s)component\.spec\.architecture: got 'MistralForCausalLM'; "
        r"allowed: one of LlamaForCausalLM \(EAGLE3\).*Qwen3NextForCausalLM "
        r"\(EAGLE2\)",
    ):
        EagleOptimization(stack, "E", component=component, promotion_parameter=_head(stack))


def test_missing_architecture_is_refused():
    stack, component = _component(architecture=None)
    with pytest.raises(ConfigurationError, match=r"component\.spec\.architecture: got None"):
        EagleOptimization(stack, "E", component=component, promotion_parameter=_head(stack))


def test_builtin_dataset_needs_its_location():
    stack, component = _component()
    with pytest.raises(
        ConfigurationError,
        match=r"dataset\.s3_uri: got None; allowed: an s3:// prefix with source "
        r"builtin",
    ):
        EagleOptimization(
            stack,
            "E",
            component=component,
            promotion_parameter=_head(stack),
            settings={"dataset": {"source": "builtin", "builtin_name": "gsm8k"}},
        )


def test_promotion_parameter_in_the_components_stack_is_refused():
    stack, component = _component()
    same = PromotionParameter(stack, "Head", model_name=MODEL).parameter
    with pytest.raises(
        ConfigurationError,
        match=r"(?s)promotion_parameter: got 'Main/Head/Resource'; allowed: a "
        r"parameter created in a stack other than Main.*companion stack",
    ):
        EagleOptimization(stack, "E", component=component, promotion_parameter=same)


def test_missing_promotion_parameter_says_how_to_make_one():
    stack, component = _component()
    with pytest.raises(
        ConfigurationError,
        match=r"(?s)promotion_parameter: got None.*deployed before Main.*"
        r"PromotionParameter\(promotions, 'EHead', model_name='qwen3-32b'\)",
    ):
        EagleOptimization(stack, "E", component=component)


def test_promotion_parameter_needs_a_fixed_name():
    stack, component = _component()
    other = Stack(stack.node.root, "Other")
    generated = ssm.StringParameter(other, "P", string_value="none")
    with pytest.raises(
        ConfigurationError,
        match=r"promotion_parameter: got 'Other/P'; allowed: a parameter with a "
        r"fixed name",
    ):
        EagleOptimization(stack, "E", component=component, promotion_parameter=generated)


def test_imported_parameter_by_name_is_accepted():
    stack, component = _component()
    imported = ssm.StringParameter.from_string_parameter_name(stack, "Imported", PARAMETER_NAME)
    eagle = EagleOptimization(stack, "E", component=component, promotion_parameter=imported)
    assert eagle.promotion_parameter_name == PARAMETER_NAME


def test_eagle_must_be_in_the_components_stack():
    stack, component = _component()
    elsewhere = Stack(stack.node.root, "Elsewhere")
    with pytest.raises(
        ConfigurationError,
        match=r"scope: got 'Elsewhere'; allowed: a construct in the component's "
        r"stack \(Main\)",
    ):
        EagleOptimization(elsewhere, "E", component=component, promotion_parameter=_head(stack))


def test_capture_source_needs_data_capture():
    stack, component = _component(data_capture=DataCapture(enabled=False))
    with pytest.raises(
        ConfigurationError,
        match=r"settings\.dataset\.source: got 'capture'; allowed: s3 or builtin "
        r"while the endpoint's data capture is off",
    ):
        EagleOptimization(stack, "E", component=component, promotion_parameter=_head(stack))


def test_endpoint_instance_type_must_run_optimization_jobs_or_job_instance_type_is_set():
    stack, component = _component(instance_type="ml.m5.4xlarge")
    with pytest.raises(
        ConfigurationError,
        match=r"settings\.job_instance_type: got 'ml\.m5\.4xlarge'.*set "
        r"job_instance_type",
    ):
        EagleOptimization(stack, "E", component=component, promotion_parameter=_head(stack))


def test_capacity_plan_must_match_the_job_instance_type():
    stack, component = _component()
    plan = SimpleNamespace(training_plan_arns=[PLAN_ARN], instance_type="ml.p5en.48xlarge")
    with pytest.raises(
        ConfigurationError,
        match=r"capacity_plan: got 'ml\.p5en\.48xlarge'; allowed: a plan for "
        r"ml\.p5e\.48xlarge",
    ):
        EagleOptimization(stack, "E", component=component, promotion_parameter=_head(stack), capacity_plan=plan)


def test_promotion_parameter_model_name_is_checked():
    with pytest.raises(ConfigurationError, match=r"model_name: got 'qwen_3'"):
        PromotionParameter(Stack(App(), "P"), "Head", model_name="qwen_3")


# --------------------------------------------------------------------------- the job's capacity


def test_a_capacity_plan_bought_for_endpoints_cannot_be_given_to_the_job():
    from sagemaker_llm_cdk import CapacityPlan

    stack, component = _component()
    plan = CapacityPlan.from_plan_arn(stack, "Plan", plan_arn=PLAN_ARN, instance_type=INSTANCE, instance_count=2)
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "capacity_plan: got 'chat-p5e'; allowed: a training plan meant for jobs (target training-job); capacity "
            "plans target endpoints and SageMaker refuses them in an optimization job's TrainingPlanArns"
        ),
    ):
        EagleOptimization(stack, "E", component=component, promotion_parameter=_head(stack), capacity_plan=plan)


def test_use_capacity_plan_is_refused_with_the_reason():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "use_capacity_plan: got True; allowed: false: a capacity plan bought for endpoints (target endpoint) "
            "cannot be given to an optimization job"
        ),
    ):
        validated(EagleSettings, {"use_capacity_plan": True}, where="eagle")


@pytest.mark.parametrize(
    "env", [None, Environment(account="123456789012", region="us-east-1")], ids=["agnostic", "bound"]
)
@pytest.mark.parametrize(
    ("plan", "expected"),
    [
        ("job-plan-p5e", "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:training-plan/job-plan-p5e"),
        (
            "arn:aws:sagemaker:us-east-1:123456789012:training-plan/jobs",
            "arn:aws:sagemaker:us-east-1:123456789012:training-plan/jobs",
        ),
    ],
)
def test_a_training_plan_for_jobs_reaches_the_start_function(env, plan, expected):
    app = App()
    stack = Stack(app, "Main", env=env)
    _, component = _component(stack)
    eagle = EagleOptimization(
        stack,
        "E",
        component=component,
        promotion_parameter=_head(stack),
        settings={"training_plan": plan, "job_instance_type": "ml.p5en.48xlarge", "max_instance_count": 2},
    )
    resources = Template.from_stack(stack).to_json()["Resources"]
    variables = resources[lid(stack, eagle.start_function)]["Properties"]["Environment"]["Variables"]
    rendered = render(variables["TRAINING_PLAN_ARNS"])
    if env is not None and not plan.startswith("arn:"):
        expected = expected.replace("${AWS::Region}", "us-east-1").replace("${AWS::AccountId}", "123456789012")
    assert rendered == expected
    assert eagle.job_instance_type == "ml.p5en.48xlarge"


@pytest.mark.parametrize("plan", ["job_plan", "x" * 65, "arn:aws:sagemaker:us-east-1:1:training-plan/p"])
def test_training_plan_must_be_an_arn_or_a_name(plan):
    with pytest.raises(
        ConfigurationError, match=re.escape(f"training_plan: got '{plan}'; allowed: a training plan ARN")
    ):
        validated(EagleSettings, {"training_plan": plan}, where="eagle")


def test_the_cost_table_says_what_one_run_costs_at_most():
    from sagemaker_llm_cdk.operations.cost import cost_ceiling_table

    stack, component = _component()
    EagleOptimization(
        stack,
        "E",
        component=component,
        promotion_parameter=_head(stack),
        settings={"max_runtime_hours": 6, "max_instance_count": 2},
    )
    table = cost_ceiling_table(stack)
    (line,) = [x for x in table.splitlines() if x.startswith(f"  eagle {MODEL}")]
    # 5 weekly runs fit in 30 days, each at most 12 instance-hours: 0-60 on demand; unknown price, never 0.
    assert line.split()[2:] == [
        INSTANCE,
        "2",
        "per",
        "run",
        "0-60",
        "0",
        "unknown",
        "USD",
        "0.00",
        "unknown",
        "none",
        "(on-demand)",
    ]
    assert (
        f"Main/E: one optimization run uses at most 6 h x 2 {INSTANCE} = 12 instance-hours on demand; scheduled "
        "rate(7 days) (5 runs counted in 30 days)"
    ) in table


# --------------------------------------------------------------------------- new-records check (threshold trigger)


@pytest.fixture(scope="module")
def checked() -> Built:
    """Captured traffic with the new-records check every hour."""
    return build(settings=EagleSettings(dataset={"records_check": "rate(1 hour)", "min_new_records": 500}))


def test_records_check_runs_on_its_schedule_and_knows_the_threshold(checked):
    eagle = checked.eagle
    schedule = checked.resources[lid(checked.stack, eagle.records_check)]["Properties"]
    assert schedule["ScheduleExpression"] == "rate(1 hour)"
    assert render(schedule["Target"]["Arn"]) == checked.ref(eagle.check_function, "Arn")
    assert render(schedule["Target"]["RoleArn"]) == checked.ref(eagle.records_check_role, "Arn")
    assert schedule["Target"]["Input"] == "{}"
    function = checked.resources[lid(checked.stack, eagle.check_function)]["Properties"]
    env = {k: render(v) for k, v in function["Environment"]["Variables"].items()}
    assert env["STATE_MACHINE_ARN"] == checked.ref(eagle.state_machine)
    assert env["MIN_NEW_RECORDS"] == "500" and env["WATERMARK_PARAMETER"] == eagle.watermark_parameter.parameter_name
    assert env["CAPTURE_PREFIX"] == "data-capture/" + checked.ref(checked.endpoint.cfn_endpoint, "EndpointName") + "/"
    assert function["Handler"] == "index.check" and function["ReservedConcurrentExecutions"] == 1
    trust = checked.resources[lid(checked.stack, eagle.records_check_role)]["Properties"]["AssumeRolePolicyDocument"]
    assert trust["Statement"][0]["Principal"] == {"Service": "scheduler.amazonaws.com"}


def test_records_check_may_read_captures_and_start_only_this_state_machine(checked):
    eagle = checked.eagle
    grants = checked.grants(eagle.check_function.role)
    machine = checked.ref(eagle.state_machine)
    assert grants["states:StartExecution"] == grants["states:ListExecutions"] == [machine]
    capture_objects = (
        checked.ref(checked.endpoint.data_capture_bucket, "Arn")
        + "/data-capture/"
        + checked.ref(checked.endpoint.cfn_endpoint, "EndpointName")
        + "/*"
    )
    assert grants["s3:GetObject"] == [capture_objects]
    assert grants["kms:Decrypt"] == [checked.ref(checked.endpoint.key, "Arn")]
    assert "s3:PutObject" not in grants and "ssm:PutParameter" not in grants
    (parameter_arn,) = grants["ssm:GetParameter"]
    assert parameter_arn.endswith(":parameter" + eagle.watermark_parameter.parameter_name) and ":ssm:" in parameter_arn
    invoke = [s for s in checked.statements(eagle.records_check_role) if s["Action"] == "lambda:InvokeFunction"]
    assert invoke and all(checked.ref(eagle.check_function, "Arn") in str(s["Resource"]) for s in invoke)


def test_no_records_check_unless_asked(capture):
    assert capture.eagle.check_function is None and capture.eagle.records_check is None
    assert not [
        r
        for r in capture.resources.values()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler") == "index.check"
    ]


def test_records_check_needs_captured_traffic():
    stack, component = _component()
    with pytest.raises(
        ConfigurationError,
        match=r"dataset\.records_check: got 'rate\(1 hour\)'; allowed: only with "
        r"source capture or front_door .*; fix: remove records_check",
    ):
        EagleOptimization(
            stack,
            "E",
            component=component,
            promotion_parameter=_head(stack),
            settings={"dataset": {"source": "s3", "s3_uri": USER_DATA, "records_check": "rate(1 hour)"}},
        )


def test_records_check_must_be_a_schedule_expression():
    stack, component = _component()
    with pytest.raises(
        ConfigurationError,
        match=r"dataset\.records_check: got 'hourly'; allowed: rate\(value unit\) "
        r".*fix: the expression starts with none of rate\(, cron\( or at\(",
    ):
        EagleOptimization(
            stack,
            "E",
            component=component,
            promotion_parameter=_head(stack),
            settings={"dataset": {"records_check": "hourly"}},
        )


# ------------------------------------------------------------------------ source front_door (turn log through Firehose)


@pytest.fixture(scope="module")
def turns() -> Built:
    """Front-door source: the session front door logs every turn to a TurnLog; the loop reads it."""
    from sagemaker_llm_cdk import SessionFrontDoor, TurnLog

    app = App()
    promos = Stack(app, "Promos", env=ENV)
    stack = Stack(app, "Main", env=ENV)
    llm = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type=INSTANCE))
    component = llm.add_model(
        "Qwen",
        ModelSpec(name=MODEL, model_data_s3_uri=WEIGHTS, architecture="Qwen3ForCausalLM", accelerators=2, sessions={}),
    )
    front_door = SessionFrontDoor(stack, "FrontDoor", endpoint=llm, default_component=component)
    turn_log = TurnLog(stack, "Turns")
    front_door.log_turns(turn_log)
    eagle = EagleOptimization(
        stack,
        "QwenEagle",
        component=component,
        turn_log=turn_log,
        promotion_parameter=PromotionParameter(promos, "QwenHead", model_name=MODEL).parameter,
        settings={"dataset": {"source": "front_door", "records_check": "rate(1 hour)"}},
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    template = Template.from_stack(stack)
    resources = template.to_json()["Resources"]
    (machine,) = [r for r in resources.values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    definition = json.loads(render(machine["Properties"]["DefinitionString"]))
    built = Built(app, promos, stack, llm, component, eagle, template, resources, definition)
    built.front_door, built.turn_log = front_door, turn_log  # type: ignore[attr-defined]
    return built


ENV = __import__("aws_cdk").Environment(account="123456789012", region="us-east-1")


def test_turn_log_stream_is_kms_encrypted_buffered_gzip_with_an_error_prefix(turns):
    log = turns.turn_log
    stream = turns.resources[lid(turns.stack, log.cfn_delivery_stream)]["Properties"]
    assert stream["DeliveryStreamType"] == "DirectPut"
    assert stream["DeliveryStreamEncryptionConfigurationInput"] == {
        "KeyType": "CUSTOMER_MANAGED_CMK",
        "KeyARN": {"Fn::GetAtt": [lid(turns.stack, log.key), "Arn"]},
    }
    s3 = stream["ExtendedS3DestinationConfiguration"]
    assert s3["Prefix"] == "front-door/!{timestamp:yyyy/MM/dd/HH}/"
    assert s3["ErrorOutputPrefix"] == "front-door-errors/!{firehose:error-output-type}/!{timestamp:yyyy/MM/dd/HH}/"
    assert s3["BufferingHints"] == {"IntervalInSeconds": 300, "SizeInMBs": 64} and s3["CompressionFormat"] == "GZIP"
    assert render(s3["EncryptionConfiguration"]["KMSEncryptionConfig"]["AWSKMSKeyARN"]) == turns.ref(
        log.bucket.encryption_key, "Arn"
    )
    assert render(s3["RoleARN"]) == turns.ref(log.role, "Arn") and s3["CloudWatchLoggingOptions"]["Enabled"] is True
    key = turns.resources[lid(turns.stack, log.key)]["Properties"]
    assert key["EnableKeyRotation"] is True


def test_turn_log_roles_are_narrow(turns):
    log = turns.turn_log
    trust = turns.resources[lid(turns.stack, log.role)]["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "firehose.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"sts:ExternalId": "123456789012"}}
    grants = turns.grants(log.role)
    bucket = turns.ref(log.bucket, "Arn")
    assert grants["s3:PutObject"] == sorted([f"{bucket}/front-door/*", f"{bucket}/front-door-errors/*"])
    assert not [a for a in grants if a in ("s3:DeleteObject", "s3:GetObject", "s3:*")]
    writer = turns.grants(turns.front_door.function.role)
    stream_arn = turns.ref(log.cfn_delivery_stream, "Arn")
    assert writer["firehose:PutRecord"] == writer["firehose:PutRecordBatch"] == [stream_arn]
    env = turns.resources[lid(turns.stack, turns.front_door.function)]["Properties"]["Environment"]["Variables"]
    assert env["TURN_LOG_STREAM"] == {"Ref": lid(turns.stack, log.cfn_delivery_stream)}


def test_front_door_source_reads_the_turn_log_like_captures(turns):
    eagle, log = turns.eagle, turns.turn_log
    states = turns.states()
    batch = states["ConvertCaptures"]["ItemBatcher"]["BatchInput"]
    assert batch["source"] == "front_door" and batch["capture_prefix"] == "front-door/"
    assert batch["capture_bucket"] == turns.ref(log.bucket)
    assert states["PlanDataset"]["Parameters"]["capture_prefix"] == "front-door/"
    assert states["SummarizeDataset"]["Parameters"]["source"] == "front_door"
    convert = turns.grants(eagle.convert_function.role)
    assert convert["s3:GetObject"] == [f"{turns.ref(log.bucket, 'Arn')}/front-door/*"]
    assert turns.ref(log.bucket.encryption_key, "Arn") in convert["kms:Decrypt"]
    check = turns.grants(eagle.check_function.role)
    assert check["s3:GetObject"] == [f"{turns.ref(log.bucket, 'Arn')}/front-door/*"]


def test_front_door_source_needs_a_turn_log():
    stack, component = _component()
    with pytest.raises(
        ConfigurationError,
        match=r"turn_log: got None; allowed: a TurnLog with dataset source "
        r"front_door; fix: create TurnLog",
    ):
        EagleOptimization(
            stack,
            "E",
            component=component,
            promotion_parameter=_head(stack),
            settings={"dataset": {"source": "front_door"}},
        )


def test_front_door_source_needs_sessions_in_the_config():
    from sagemaker_llm_cdk.core.settings import validated

    with pytest.raises(
        ConfigurationError,
        match=r"eagle\.dataset\.source: got 'front_door'; allowed: front_door "
        r"only on a model with sessions .*; fix: add `sessions: \{\}`",
    ):
        validated(
            ModelSpec,
            {
                "name": MODEL,
                "model_data_s3_uri": WEIGHTS,
                "architecture": "Qwen3ForCausalLM",
                "eagle": {"dataset": {"source": "front_door"}},
            },
            where="config.yaml",
        )


@pytest.mark.parametrize("expression", ["rate(1 hours)", "rate(0 minutes)", "cron(0 * * * *)"])
def test_records_check_follows_the_scheduler_grammar(expression):
    """The records check is an EventBridge Scheduler schedule too: what Scheduler refuses is refused at synth."""
    with pytest.raises(
        ConfigurationError, match=r"dataset\.records_check: got '" + re.escape(expression) + "'; allowed: "
    ):
        validated(EagleSettings, {"dataset": {"records_check": expression}}, where="eagle")
