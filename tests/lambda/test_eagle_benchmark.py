"""Tests for lambda/eagle_job/benchmark.py: AI benchmark jobs before and after a promoted head is served.

SageMaker and SSM requests go through Stubber and are checked against botocore's model (enums, lengths,
patterns too); S3 and DynamoDB are moto."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from support.aws_model import assert_valid_request, create_runs_table
from support.properties import examples

ACCOUNT = "123456789012"
ENDPOINT = "chat-endpoint"
COMPONENT = "qwen3-32b"
PREFIX = f"{COMPONENT}-eagle"
SERVING_MODEL = f"{PREFIX}-a1b2c3"
WORKLOAD = "eagle-qwen3-32b-0123456789"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/bench"
BUCKET = "eagle-artifacts"
HEAD = f"s3://{BUCKET}/jobs/eagle-qwen3-32b-abc/draft/"
OLD_HEAD = f"s3://{BUCKET}/jobs/eagle-qwen3-32b-old/draft/"
PARAMETER = f"/sagemaker-llm/eagle/{COMPONENT}/draft-head"
TABLE = "EagleRuns"
RUN = "run-2026-12-01"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "ENDPOINT_NAME": ENDPOINT,
        "COMPONENT_NAME": COMPONENT,
        "WORKLOAD_CONFIG_NAME": WORKLOAD,
        "ROLE_ARN": ROLE,
        "OUTPUT_S3_URI": f"s3://{BUCKET}/benchmarks",
        "SERVING_MODEL_PREFIX": PREFIX,
        "RUNS_TABLE": TABLE,
        "MODEL_NAME": COMPONENT,
        "MAX_SECONDS": "14400",
        "SLOWDOWN_TOLERANCE": "0.05",
        "PROMOTION_PARAMETER": PARAMETER,
        "STACK_NAME": "Platform",
        "DEPLOY_CHECKS": "3",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_METRICS_NAMESPACE": "SageMakerLlm",
        "POWERTOOLS_SERVICE_NAME": "eagle_job",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("SUBNET_IDS", raising=False)
    monkeypatch.delenv("SECURITY_GROUP_IDS", raising=False)


@pytest.fixture
def aws(env):
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        create_runs_table(ddb, TABLE)
        ddb.put_item(
            TableName=TABLE,
            Item={
                "model_name": {"S": COMPONENT},
                "run_id": {"S": RUN},
                "decision": {"S": "promoted"},
                "speedup": {"N": "2.4"},
                "draft_model_s3_uri": {"S": HEAD},
                "previous_head": {"S": OLD_HEAD},
            },
        )
        yield s3, ddb


@pytest.fixture
def bench(aws, load_handler):
    return load_handler("eagle_job", "benchmark")


class Stub:
    """Stubber on one of the handler's clients; every expected request is validated against the model."""

    def __init__(self, client: Any, service: str) -> None:
        self.stubber, self.service = Stubber(client), service

    def ok(self, operation: str, snake: str, params: dict[str, Any], response: dict[str, Any]) -> None:
        assert_valid_request(self.service, operation, params)
        self.stubber.add_response(snake, response, params)

    def error(self, operation: str, snake: str, params: dict[str, Any], code: str) -> None:
        assert_valid_request(self.service, operation, params)
        self.stubber.add_client_error(
            snake, service_error_code=code, service_message=code, http_status_code=400, expected_params=params
        )


@pytest.fixture
def sagemaker(bench):
    stub = Stub(bench._sagemaker(), "sagemaker")
    with stub.stubber:
        yield stub
        stub.stubber.assert_no_pending_responses()


@pytest.fixture
def ssm(bench):
    stub = Stub(bench._ssm(), "ssm")
    with stub.stubber:
        yield stub
        stub.stubber.assert_no_pending_responses()


NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def serves(sagemaker: Stub, head: str | None, status: str = "InService") -> None:
    """The component serves ``head`` (through its serving model) or, with None, its own model."""
    model = SERVING_MODEL if head else "qwen3-32b-model-123"
    sagemaker.ok(
        "DescribeInferenceComponent",
        "describe_inference_component",
        {"InferenceComponentName": COMPONENT},
        {
            "InferenceComponentName": COMPONENT,
            "EndpointName": ENDPOINT,
            "VariantName": "AllTraffic",
            "InferenceComponentArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:inference-component/{COMPONENT}",
            "EndpointArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:endpoint/{ENDPOINT}",
            "Specification": {"ModelName": model},
            "CreationTime": NOW,
            "LastModifiedTime": NOW,
            "InferenceComponentStatus": status,
        },
    )
    if head:
        sagemaker.ok(
            "DescribeModel",
            "describe_model",
            {"ModelName": SERVING_MODEL},
            {
                "ModelName": SERVING_MODEL,
                "CreationTime": NOW,
                "ModelArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:model/{SERVING_MODEL}",
                "PrimaryContainer": {
                    "Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:lmi",
                    "AdditionalModelDataSources": [
                        {
                            "ChannelName": "eagle",
                            "S3DataSource": {"S3Uri": head, "S3DataType": "S3Prefix", "CompressionType": "None"},
                        }
                    ],
                },
            },
        )


def create_request(bench, phase: str, **extra: Any) -> dict[str, Any]:
    name = bench.job_name(COMPONENT, RUN, phase, HEAD)
    return {
        "AIBenchmarkJobName": name,
        "BenchmarkTarget": {"Endpoint": {"Identifier": ENDPOINT, "InferenceComponents": [{"Identifier": COMPONENT}]}},
        "OutputConfig": {"S3OutputLocation": f"s3://{BUCKET}/benchmarks/{name}/"},
        "AIWorkloadConfigIdentifier": WORKLOAD,
        "RoleArn": ROLE,
        "Tags": [{"Key": "eagle-run", "Value": RUN}, {"Key": "eagle-phase", "Value": phase}],
        **extra,
    }


def job_arn(name: str) -> str:
    return f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:ai-benchmark-job/{name}"


# ------------------------------------------------------------------------------------------ start
def test_before_starts_a_benchmark_on_the_endpoint_and_component(bench, sagemaker, lambda_context):
    serves(sagemaker, None)
    request = create_request(bench, "before")
    sagemaker.ok(
        "CreateAIBenchmarkJob",
        "create_ai_benchmark_job",
        request,
        {"AIBenchmarkJobArn": job_arn(request["AIBenchmarkJobName"])},
    )
    out = bench.start({"phase": "before", "run_id": RUN, "head": HEAD}, lambda_context)
    assert out["skipped"] is False and out["served_head"] is None
    assert out["job_name"] == request["AIBenchmarkJobName"] and out["job_arn"] == job_arn(out["job_name"])
    assert out["output_s3_uri"] == f"s3://{BUCKET}/benchmarks/{out['job_name']}/"


def test_before_is_skipped_when_the_head_is_already_served(bench, sagemaker, lambda_context):
    serves(sagemaker, HEAD.rstrip("/"))
    out = bench.start({"phase": "before", "run_id": RUN, "head": HEAD}, lambda_context)
    assert out["skipped"] is True and "already serves" in out["reason"] and "job_name" not in out


def test_after_refuses_while_the_head_is_not_served(bench, sagemaker, lambda_context):
    serves(sagemaker, OLD_HEAD)
    with pytest.raises(bench.HeadNotServedError, match=r"qwen3-32b serves s3://.*old/draft/, not .*abc/draft/: deploy"):
        bench.start({"phase": "after", "run_id": RUN, "head": HEAD}, lambda_context)


def test_after_starts_once_the_head_is_served_in_the_endpoints_vpc(bench, sagemaker, lambda_context, monkeypatch):
    monkeypatch.setenv("SUBNET_IDS", "subnet-0a1b2c3d,subnet-4e5f6a7b")
    monkeypatch.setenv("SECURITY_GROUP_IDS", "sg-0123456789abcdef0")
    serves(sagemaker, HEAD)
    request = create_request(
        bench,
        "after",
        NetworkConfig={
            "VpcConfig": {
                "Subnets": ["subnet-0a1b2c3d", "subnet-4e5f6a7b"],
                "SecurityGroupIds": ["sg-0123456789abcdef0"],
            }
        },
    )
    sagemaker.ok(
        "CreateAIBenchmarkJob",
        "create_ai_benchmark_job",
        request,
        {"AIBenchmarkJobArn": job_arn(request["AIBenchmarkJobName"])},
    )
    out = bench.start({"phase": "after", "run_id": RUN, "head": HEAD}, lambda_context)
    assert out["served_head"] == HEAD and out["phase"] == "after"


def test_a_retried_start_finds_its_job(bench, sagemaker, lambda_context):
    serves(sagemaker, None)
    request = create_request(bench, "before")
    name = request["AIBenchmarkJobName"]
    sagemaker.error("CreateAIBenchmarkJob", "create_ai_benchmark_job", request, "ResourceInUse")
    sagemaker.ok(
        "DescribeAIBenchmarkJob",
        "describe_ai_benchmark_job",
        {"AIBenchmarkJobName": name},
        described(name, "InProgress"),
    )
    assert bench.start({"phase": "before", "run_id": RUN, "head": HEAD}, lambda_context)["job_arn"] == job_arn(name)


def test_a_job_of_that_name_on_another_endpoint_is_a_conflict(bench, sagemaker, lambda_context):
    serves(sagemaker, None)
    request = create_request(bench, "before")
    name = request["AIBenchmarkJobName"]
    sagemaker.error("CreateAIBenchmarkJob", "create_ai_benchmark_job", request, "ResourceInUse")
    sagemaker.ok(
        "DescribeAIBenchmarkJob",
        "describe_ai_benchmark_job",
        {"AIBenchmarkJobName": name},
        described(name, "InProgress", endpoint="other-endpoint"),
    )
    with pytest.raises(bench.BenchmarkConflictError, match="exists for other-endpoint"):
        bench.start({"phase": "before", "run_id": RUN, "head": HEAD}, lambda_context)


def test_quota_errors_are_raised_for_the_state_machine_to_retry(bench, sagemaker, lambda_context):
    serves(sagemaker, None)
    sagemaker.error(
        "CreateAIBenchmarkJob", "create_ai_benchmark_job", create_request(bench, "before"), "ResourceLimitExceeded"
    )
    with pytest.raises(bench.ResourceLimitExceededError):
        bench.start({"phase": "before", "run_id": RUN, "head": HEAD}, lambda_context)


@pytest.mark.parametrize(
    "event, where",
    [
        ({"phase": "during", "run_id": RUN, "head": HEAD}, "phase"),
        ({"phase": "before", "head": HEAD}, "run_id"),
        ({"phase": "before", "run_id": RUN, "head": "/local/head"}, "head"),
        ("not an object", "event"),
    ],
)
def test_bad_events_are_one_clear_error(bench, event, where, lambda_context):
    with pytest.raises(bench.InvalidEventError, match=rf"bad StartEvent: {where}"):
        bench.start(event, lambda_context)


@given(st.text(min_size=1, max_size=120), st.text(min_size=1, max_size=200))
@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_job_names_always_fit_the_api(load_handler, model, run):
    module = (
        load_handler("eagle_job", "benchmark")
        if not hasattr(test_job_names_always_fit_the_api, "m")
        else test_job_names_always_fit_the_api.m
    )
    test_job_names_always_fit_the_api.m = module
    name = module.job_name(model, run, "after", HEAD)
    assert module.JOB_NAME.match(name) and len(name) <= 63
    assert name == module.job_name(model, run, "after", HEAD) != module.job_name(model, run, "before", HEAD)


# ------------------------------------------------------------------------------------------ check
def described(name: str, status: str, *, endpoint: str = ENDPOINT, reason: str | None = None) -> dict[str, Any]:
    out = {
        "AIBenchmarkJobName": name,
        "AIBenchmarkJobArn": job_arn(name),
        "AIBenchmarkJobStatus": status,
        "BenchmarkTarget": {"Endpoint": {"Identifier": endpoint}},
        "OutputConfig": {"S3OutputLocation": f"s3://{BUCKET}/benchmarks/{name}/"},
        "AIWorkloadConfigIdentifier": WORKLOAD,
        "RoleArn": ROLE,
        "CreationTime": NOW,
    }
    if reason:
        out["FailureReason"] = reason
    return out


def check_event(bench, phase: str, *, started: datetime | None = None) -> dict[str, Any]:
    name = bench.job_name(COMPONENT, RUN, phase, HEAD)
    return {
        "phase": phase,
        "run_id": RUN,
        "head": HEAD,
        "served_head": HEAD if phase == "after" else None,
        "skipped": False,
        "job_name": name,
        "job_arn": job_arn(name),
        "output_s3_uri": f"s3://{BUCKET}/benchmarks/{name}/",
        "started_at": (started or datetime.now(UTC)).isoformat(),
    }


def aiperf(throughput: float, latency: float) -> bytes:
    """What AIPerf's profile_export_aiperf.json holds (aggregated statistics per metric)."""
    return json.dumps(
        {
            "request_throughput": {"unit": "requests/sec", "avg": throughput / 150},
            "output_token_throughput": {"unit": "tokens/sec", "avg": throughput},
            "request_latency": {"unit": "ms", "avg": latency, "p50": latency * 0.9, "p99": latency * 2},
            "time_to_first_token": {"unit": "ms", "avg": 85.0},
            "input_config": {"endpoint": {"model_names": [COMPONENT]}},
        }
    ).encode()


def record(ddb) -> dict[str, Any]:
    from boto3.dynamodb.types import TypeDeserializer

    item = ddb.get_item(TableName=TABLE, Key={"model_name": {"S": COMPONENT}, "run_id": {"S": RUN}})["Item"]
    return {k: TypeDeserializer().deserialize(v) for k, v in item.items()}


def test_a_running_job_is_polled_again(bench, sagemaker, aws, lambda_context):
    event = check_event(bench, "before")
    sagemaker.ok(
        "DescribeAIBenchmarkJob",
        "describe_ai_benchmark_job",
        {"AIBenchmarkJobName": event["job_name"]},
        described(event["job_name"], "InProgress"),
    )
    out = bench.check(event, lambda_context)
    assert out["finished"] is False and out["status"] == "InProgress" and "stop_requested" not in out
    assert "benchmark_before" not in record(aws[1])


def test_a_job_over_its_time_limit_is_stopped(bench, sagemaker, lambda_context):
    event = check_event(bench, "before", started=datetime.now(UTC) - timedelta(hours=5))
    name = event["job_name"]
    sagemaker.ok(
        "DescribeAIBenchmarkJob",
        "describe_ai_benchmark_job",
        {"AIBenchmarkJobName": name},
        described(name, "InProgress"),
    )
    sagemaker.ok(
        "StopAIBenchmarkJob",
        "stop_ai_benchmark_job",
        {"AIBenchmarkJobName": name},
        {"AIBenchmarkJobArn": job_arn(name)},
    )
    out = bench.check(event, lambda_context)
    assert out["finished"] is False and out["stop_requested"] is True


def test_completed_before_is_read_from_the_aiperf_export_into_the_run_record(bench, sagemaker, aws, lambda_context):
    s3, ddb = aws
    event = check_event(bench, "before")
    name = event["job_name"]
    s3.put_object(Bucket=BUCKET, Key=f"benchmarks/{name}/aiperf/profile_export_aiperf.json", Body=aiperf(800.0, 1500.0))
    s3.put_object(Bucket=BUCKET, Key=f"benchmarks/{name}/aiperf/profile_export.jsonl", Body=b"{}\n")
    sagemaker.ok(
        "DescribeAIBenchmarkJob",
        "describe_ai_benchmark_job",
        {"AIBenchmarkJobName": name},
        described(name, "Completed"),
    )
    out = bench.check(event, lambda_context)
    assert out["finished"] is True and out["ok"] is True and out["output_token_throughput"] == 800.0
    stored = record(ddb)["benchmark_before"]
    assert stored["parsed"] is True and float(stored["output_token_throughput"]) == 800.0
    assert float(stored["metrics"]["request_latency"]["p99"]) == 3000.0
    assert stored["files_read"] == [f"benchmarks/{name}/aiperf/profile_export_aiperf.json"]
    assert stored["output_listing_count"] == 2 and len(stored["output_listing"]) == 2
    assert record(ddb)["decision"] == "promoted"  # the optimization run's own fields are kept


def test_output_without_a_throughput_is_unreadable_and_claims_no_numbers(bench, sagemaker, aws, lambda_context):
    s3, ddb = aws
    event = check_event(bench, "before")
    name = event["job_name"]
    s3.put_object(Bucket=BUCKET, Key=f"benchmarks/{name}/summary.json", Body=b'{"status": "done", "latency": "n/a"}')
    s3.put_object(Bucket=BUCKET, Key=f"benchmarks/{name}/broken.json", Body=b"\x89PNG not json")
    sagemaker.ok(
        "DescribeAIBenchmarkJob",
        "describe_ai_benchmark_job",
        {"AIBenchmarkJobName": name},
        described(name, "Completed"),
    )
    out = bench.check(event, lambda_context)
    assert out["finished"] is True and out["ok"] is False and out["output_token_throughput"] is None
    assert "no output-token throughput" in out["reason"]
    stored = record(ddb)["benchmark_before"]
    assert stored["parsed"] is False and stored["metrics"] == {} and stored["output_listing_count"] == 2
    assert stored["files_unreadable"] == [f"benchmarks/{name}/broken.json: UnicodeDecodeError"]


def test_a_job_stopped_at_its_limit_says_so(bench, sagemaker, aws, lambda_context):
    event = {**check_event(bench, "after"), "stop_requested": True}
    sagemaker.ok(
        "DescribeAIBenchmarkJob",
        "describe_ai_benchmark_job",
        {"AIBenchmarkJobName": event["job_name"]},
        described(event["job_name"], "Stopped"),
    )
    out = bench.check(event, lambda_context)
    assert out["ok"] is False and out["slower"] is False
    assert out["reason"] == "benchmark job Stopped: no reason given (stopped at the 4 h limit)"
    assert record(aws[1])["benchmark_comparison"]["verdict"] == "not compared: no before measurement with a throughput"


def test_a_large_output_listing_is_cut_in_the_record_and_counted(bench, sagemaker, aws, lambda_context):
    s3, ddb = aws
    event = check_event(bench, "before")
    name = event["job_name"]
    for i in range(60):
        s3.put_object(Bucket=BUCKET, Key=f"benchmarks/{name}/raw/{i:03d}.bin", Body=b"x")
    sagemaker.ok(
        "DescribeAIBenchmarkJob",
        "describe_ai_benchmark_job",
        {"AIBenchmarkJobName": name},
        described(name, "Completed"),
    )
    bench.check(event, lambda_context)
    stored = record(ddb)["benchmark_before"]
    assert stored["output_listing_count"] == 60 and len(stored["output_listing"]) == 50
    assert stored["output_listing_truncated"] is True and stored["parsed"] is False


def test_a_failed_job_is_recorded_with_its_reason(bench, sagemaker, aws, lambda_context):
    event = check_event(bench, "before")
    sagemaker.ok(
        "DescribeAIBenchmarkJob",
        "describe_ai_benchmark_job",
        {"AIBenchmarkJobName": event["job_name"]},
        described(event["job_name"], "Failed", reason="Endpoint is not InService"),
    )
    out = bench.check(event, lambda_context)
    assert out["ok"] is False and out["reason"] == "benchmark job Failed: Endpoint is not InService"
    assert record(aws[1])["benchmark_before"]["status"] == "Failed"


def _after(bench, sagemaker, aws, lambda_context, *, before: float, after: float) -> dict[str, Any]:
    s3, ddb = aws
    for phase, throughput in (("before", before), ("after", after)):
        event = check_event(bench, phase)
        s3.put_object(
            Bucket=BUCKET,
            Key=f"benchmarks/{event['job_name']}/profile_export_aiperf.json",
            Body=aiperf(throughput, 1500.0 * before / throughput),
        )
        sagemaker.ok(
            "DescribeAIBenchmarkJob",
            "describe_ai_benchmark_job",
            {"AIBenchmarkJobName": event["job_name"]},
            described(event["job_name"], "Completed"),
        )
        out = bench.check(event, lambda_context)
    return out


def test_after_slower_than_before_is_flagged_with_the_rollback_commands(bench, sagemaker, aws, lambda_context):
    out = _after(bench, sagemaker, aws, lambda_context, before=800.0, after=600.0)
    assert out["slower"] is True and out["comparison"]["served_speedup"] == pytest.approx(0.75)
    assert out["comparison"]["job_speedup"] == pytest.approx(2.4)
    assert out["rollback_command"] == (
        f"python -m tools.eagle_rollback --parameter {PARAMETER} --table {TABLE} "
        "--region us-east-1 && cdk deploy Platform"
    )
    assert out["rollback_cli"] == (
        f"aws ssm put-parameter --name {PARAMETER} --value {OLD_HEAD} --type String "
        "--overwrite --region us-east-1 && cdk deploy Platform"
    )
    stored = record(aws[1])
    assert stored["benchmark_comparison"]["slower"] is True
    assert float(stored["benchmark_comparison"]["before_throughput"]) == 800.0
    assert float(stored["benchmark_after"]["output_token_throughput"]) == 600.0
    assert float(stored["speedup"]) == 2.4  # the job's own figure stays beside the served one


def test_after_faster_is_recorded_and_not_flagged(bench, sagemaker, aws, lambda_context):
    out = _after(bench, sagemaker, aws, lambda_context, before=800.0, after=1900.0)
    assert out["slower"] is False and out["comparison"]["served_speedup"] == pytest.approx(2.375)
    assert out["comparison"]["latency_ratio"]["request_latency"] == pytest.approx(800 / 1900)


def test_within_the_tolerance_is_not_slower(bench):
    after = {"parsed": True, "output_token_throughput": 770.0, "metrics": {}}
    before = {"parsed": True, "output_token_throughput": 800.0, "metrics": {}}
    assert bench.compare(before, after, tolerance=0.05, job_speedup=None)["slower"] is False
    assert bench.compare(before, after, tolerance=0.01, job_speedup=None)["slower"] is True


def test_without_a_before_measurement_nothing_is_compared(bench):
    comparison = bench.compare(
        None, {"parsed": True, "output_token_throughput": 700.0}, tolerance=0.05, job_speedup=2.0
    )
    assert comparison["served_speedup"] is None and comparison["slower"] is None
    assert comparison["verdict"] == "not compared: no before measurement with a throughput"


@given(
    st.recursive(
        st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=20),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(
                st.sampled_from(["avg", "p99", "unit", "output_token_throughput", "request_latency", "records", "x"]),
                children,
                max_size=4,
            )
        ),
        max_leaves=30,
    )
)
@settings(max_examples=examples(200))
def test_any_json_document_yields_only_numbers_it_holds(document):
    from conftest import load_handler_module

    module = getattr(test_any_json_document_yields_only_numbers_it_holds, "m", None) or load_handler_module(
        "eagle_job", "benchmark"
    )
    test_any_json_document_yields_only_numbers_it_holds.m = module
    found = module.read_metrics(document)
    text = json.dumps(document, default=str)
    for name, stats in found.items():
        assert name in text  # a metric is reported only when the document names it
        for key, value in stats.items():
            if key == "unit":
                assert isinstance(value, str) and len(value) <= 32
            else:
                assert isinstance(value, float) and value == value and abs(value) != float("inf")


def test_slower_publishes_the_metric_the_alarm_watches(bench, sagemaker, aws, lambda_context, capsys):
    _after(bench, sagemaker, aws, lambda_context, before=800.0, after=600.0)
    blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    (emf,) = [b for b in blobs if "EagleServedSlower" in b]
    assert emf["EagleServedSlower"] == [1.0] or emf["EagleServedSlower"] == 1.0
    assert emf["EagleServedSpeedup"] == pytest.approx(0.75) or emf["EagleServedSpeedup"] == [pytest.approx(0.75)]
    assert emf["ModelName"] == COMPONENT and emf["service"] == "eagle_job"
    assert emf["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "SageMakerLlm"


def test_a_bad_start_time_is_an_invalid_event(bench, lambda_context):
    event = {**check_event(bench, "before"), "started_at": "yesterday"}
    with pytest.raises(bench.InvalidEventError, match="bad CheckEvent: started_at"):
        bench.check(event, lambda_context)


# ------------------------------------------------------------------------------------------ serving
def test_a_changed_parameter_supersedes_the_measurement(bench, ssm, lambda_context):
    ssm.ok("GetParameter", "get_parameter", {"Name": PARAMETER}, {"Parameter": {"Name": PARAMETER, "Value": "none"}})
    out = bench.serving({"head": HEAD, "checks": 0}, lambda_context)
    assert out["state"] == "superseded" and out["give_up"] is True and "rolled back or replaced" in out["reason"]


def test_a_served_head_is_ready_to_measure(bench, ssm, sagemaker, lambda_context):
    ssm.ok("GetParameter", "get_parameter", {"Name": PARAMETER}, {"Parameter": {"Name": PARAMETER, "Value": HEAD}})
    serves(sagemaker, HEAD)
    assert bench.serving({"head": HEAD, "checks": 4}, lambda_context) == {
        "state": "serving",
        "served_head": HEAD,
        "checks": 5,
        "give_up": False,
        "reason": None,
    }


def test_waiting_for_the_deploy_gives_up_after_the_configured_checks(bench, ssm, sagemaker, lambda_context):
    for checks, give_up in ((0, False), (2, True)):
        ssm.ok("GetParameter", "get_parameter", {"Name": PARAMETER}, {"Parameter": {"Name": PARAMETER, "Value": HEAD}})
        serves(sagemaker, HEAD, status="Updating")
        out = bench.serving({"head": HEAD, "checks": checks}, lambda_context)
        assert out["state"] == "waiting" and out["give_up"] is give_up and "next cdk deploy" in out["reason"]


def test_missing_environment_is_a_configuration_error(bench, monkeypatch, lambda_context):
    monkeypatch.delenv("DEPLOY_CHECKS")
    with pytest.raises(bench.ConfigurationError, match="DEPLOY_CHECKS is not set"):
        bench.serving({"head": HEAD}, lambda_context)


def test_the_shipped_sdk_knows_every_benchmark_call():
    """The functions run with the SDK layer pinned in lambda/sdk-requirements.txt; the venv's botocore is that
    version (tests/core/test_bundling.py checks it), so these Stubber tests validate against the shipped model."""
    import botocore
    import botocore.session
    from sagemaker_llm_cdk.core.functions import SDK_FOLDERS, sdk_requirements

    assert "eagle_job" in SDK_FOLDERS  # benchmark.py lives there: it gets the layer
    pins = dict(
        line.split("==")
        for line in sdk_requirements().read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    assert pins["botocore"] == botocore.__version__
    operations = botocore.session.get_session().get_service_model("sagemaker").operation_names
    for name in ("CreateAIBenchmarkJob", "DescribeAIBenchmarkJob", "StopAIBenchmarkJob", "DescribeInferenceComponent"):
        assert name in operations
