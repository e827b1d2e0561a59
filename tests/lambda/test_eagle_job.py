"""Tests for lambda/eagle_job: ``start`` (CreateOptimizationJob) and ``record`` (results, record, promotion)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import boto3
import botocore.session
import pytest
import regex
from botocore.awsrequest import AWSResponse
from botocore.stub import Stubber
from conftest import load_handler_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from support.aws_model import assert_valid_request, create_runs_table
from support.properties import examples

ACCOUNT = "123456789012"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/eagle-job"
OUTPUT = "s3://eagle-output/jobs"
DATA_BUCKET = "eagle-data"
MODEL_URI = "s3://eagle-models/qwen3-32b/"
DATA_URI = f"s3://{DATA_BUCKET}/datasets/run-1/"
PLAN_ARN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/eagle-plan-p5e"
KMS_ARN = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"

CORE = load_handler_module("eagle_job", "eagle_job_core")
_SAGEMAKER_MODEL = botocore.session.get_session().get_service_model("sagemaker")
JOB_NAME_SHAPE = _SAGEMAKER_MODEL.shape_for("EntityName")
TAG_VALUE_SHAPE = _SAGEMAKER_MODEL.shape_for("TagValue")
TAG_KEY_SHAPE = _SAGEMAKER_MODEL.shape_for("TagKey")


def assert_valid_sagemaker(operation: str, params: dict[str, Any]) -> None:
    """assert_valid_request, plus Tags checked with the ``regex`` module: the shared helper uses ``re``,
    which cannot compile botocore's ``\\p{L}`` tag patterns."""
    params = dict(params)
    tags = params.pop("Tags", None)
    assert_valid_request("sagemaker", operation, params)
    for tag in tags or []:
        assert set(tag) == {"Key", "Value"}
        assert 1 <= len(tag["Key"]) <= TAG_KEY_SHAPE.metadata["max"]
        assert regex.fullmatch(TAG_KEY_SHAPE.metadata["pattern"], tag["Key"]), tag
        assert len(tag["Value"]) <= TAG_VALUE_SHAPE.metadata["max"]
        assert regex.fullmatch(TAG_VALUE_SHAPE.metadata["pattern"], tag["Value"]), tag


class SageMakerStub:
    """Stubber on the handler's client; every expected request is validated against the model."""

    def __init__(self, client):
        self.client = client
        self.stubber = Stubber(client)

    def ok(self, operation: str, response: dict[str, Any], params: dict[str, Any]) -> None:
        assert_valid_sagemaker(operation, params)
        self.stubber.add_response(_snake(operation), response, params)

    def error(self, operation: str, code: str, message: str, params: dict[str, Any], status: int = 400) -> None:
        assert_valid_sagemaker(operation, params)
        self.stubber.add_client_error(
            _snake(operation),
            service_error_code=code,
            service_message=message,
            http_status_code=status,
            expected_params=params,
        )


def _snake(operation: str) -> str:
    return {"CreateOptimizationJob": "create_optimization_job", "DescribeOptimizationJob": "describe_optimization_job"}[
        operation
    ]


# --------------------------------------------------------------------------------------------
# start
# --------------------------------------------------------------------------------------------


def start_event(**overrides: Any) -> dict[str, Any]:
    event = {
        "model_name": "qwen3-32b",
        "model_s3_uri": MODEL_URI,
        "architecture": "Qwen3ForCausalLM",
        "deployment_instance_type": "ml.p5e.48xlarge",
        "max_instance_count": 1,
        "training_data": {"s3_uri": DATA_URI, "s3_data_type": "S3Prefix"},
        "run_id": "run-2026-11-30",
        "dataset_summary": {"records": 1200, "format": "openai-chat"},
    }
    event.update(overrides)
    return event


@pytest.fixture
def start_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLE_ARN", ROLE_ARN)
    monkeypatch.setenv("OUTPUT_S3_URI", OUTPUT)
    monkeypatch.setenv("MAX_RUNTIME_SECONDS", "432000")
    for name in ("KMS_KEY_ARN", "SUBNET_IDS", "SECURITY_GROUP_IDS", "TRAINING_PLAN_ARNS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def dataset():
    """moto S3 with the dataset bucket; one dataset object under DATA_URI."""
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=DATA_BUCKET)
        s3.put_object(Bucket=DATA_BUCKET, Key="datasets/run-1/part-0000.jsonl", Body=b"{}\n")
        yield s3


@pytest.fixture
def handler(start_env, dataset, load_handler):
    return load_handler("eagle_job")


@pytest.fixture
def core(load_handler):
    return load_handler("eagle_job", "eagle_job_core")


@pytest.fixture
def sagemaker(handler):
    stub = SageMakerStub(handler._sagemaker())
    with stub.stubber:
        yield stub
        stub.stubber.assert_no_pending_responses()


def expected_request(name: str, **extra: Any) -> dict[str, Any]:
    request = {
        "OptimizationJobName": name,
        "RoleArn": ROLE_ARN,
        "ModelSource": {"S3": {"S3Uri": MODEL_URI}},
        "DeploymentInstanceType": "ml.p5e.48xlarge",
        "MaxInstanceCount": 1,
        "OptimizationConfigs": [
            {
                "ModelSpeculativeDecodingConfig": {
                    "Technique": "EAGLE",
                    "TrainingDataSource": {"S3Uri": DATA_URI, "S3DataType": "S3Prefix"},
                }
            }
        ],
        "OutputConfig": {"S3OutputLocation": f"{OUTPUT}/{name}/"},
        "StoppingCondition": {"MaxRuntimeInSeconds": 432000},
        "Tags": [
            {"Key": "eagle:run-id", "Value": "run-2026-11-30"},
            {"Key": "eagle:model-name", "Value": "qwen3-32b"},
        ],
    }
    request.update(extra)
    return request


def name_for(core, event: dict[str, Any]) -> str:
    return core.job_name(
        model_name=event["model_name"],
        model_s3_uri=event["model_s3_uri"],
        dataset_s3_uri=event["training_data"]["s3_uri"],
        instance_type=event["deployment_instance_type"],
        run_id=event["run_id"],
    )


def job_arn(name: str) -> str:
    return f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:optimization-job/{name}"


def describe_response(name: str, model_uri: str = MODEL_URI, status: str = "INPROGRESS") -> dict[str, Any]:
    return {
        "OptimizationJobArn": job_arn(name),
        "OptimizationJobStatus": status,
        "CreationTime": datetime(2026, 11, 30, 8, 0, tzinfo=UTC),
        "LastModifiedTime": datetime(2026, 11, 30, 8, 5, tzinfo=UTC),
        "OptimizationJobName": name,
        "ModelSource": {"S3": {"S3Uri": model_uri}},
        "DeploymentInstanceType": "ml.p5e.48xlarge",
        "OptimizationConfigs": [
            {
                "ModelSpeculativeDecodingConfig": {
                    "Technique": "EAGLE",
                    "TrainingDataSource": {"S3Uri": DATA_URI, "S3DataType": "S3Prefix"},
                }
            }
        ],
        "OutputConfig": {"S3OutputLocation": f"{OUTPUT}/{name}/"},
        "RoleArn": ROLE_ARN,
        "StoppingCondition": {"MaxRuntimeInSeconds": 432000},
    }


def test_start_creates_the_eagle_job(handler, core, sagemaker, lambda_context):
    event = start_event()
    name = name_for(core, event)
    sagemaker.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, expected_request(name))

    out = handler.start(event, lambda_context)

    assert name.startswith("eagle-qwen3-32b-")
    assert out["job_name"] == name
    assert out["job_arn"] == job_arn(name)
    assert out["eagle_version"] == "eagle3"
    assert out["output_s3_uri"] == f"{OUTPUT}/{name}/"
    assert out["draft_model_s3_uri"] == f"{OUTPUT}/{name}/draft/"
    assert out["results_s3_uri"] == f"{OUTPUT}/{name}/results/"
    assert out["run_id"] == event["run_id"] and out["dataset_summary"] == event["dataset_summary"]
    assert datetime.fromisoformat(out["started_at"].replace("Z", "+00:00")).tzinfo is not None


def test_qwen3_next_gets_eagle_2(handler, core, sagemaker, lambda_context):
    event = start_event(architecture="Qwen3NextForCausalLM")
    name = name_for(core, event)
    sagemaker.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, expected_request(name))
    assert handler.start(event, lambda_context)["eagle_version"] == "eagle2"


def test_retried_start_reuses_the_name_and_continues_with_the_existing_job(handler, core, sagemaker, lambda_context):
    event = start_event()
    name = name_for(core, event)
    sagemaker.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, expected_request(name))
    sagemaker.error(
        "CreateOptimizationJob", "ResourceInUse", f"Optimization job {name} already exists", expected_request(name)
    )
    sagemaker.ok("DescribeOptimizationJob", describe_response(name), {"OptimizationJobName": name})

    first = handler.start(copy.deepcopy(event), lambda_context)
    second = handler.start(copy.deepcopy(event), lambda_context)

    assert second["job_name"] == first["job_name"] == name
    assert second["job_arn"] == first["job_arn"]
    assert second.keys() == first.keys()
    assert {k: v for k, v in second.items() if k != "started_at"} == {
        k: v for k, v in first.items() if k != "started_at"
    }
    assert second["started_at"] == "2026-11-30T08:00:00Z"  # the existing job's CreationTime


def test_existing_job_from_other_inputs_is_a_conflict(handler, core, sagemaker, lambda_context):
    event = start_event()
    name = name_for(core, event)
    sagemaker.error("CreateOptimizationJob", "ResourceInUse", "exists", expected_request(name))
    sagemaker.ok(
        "DescribeOptimizationJob", describe_response(name, model_uri="s3://other/model/"), {"OptimizationJobName": name}
    )
    with pytest.raises(handler.OptimizationJobConflictError, match="use a new run_id"):
        handler.start(event, lambda_context)


def test_resource_limit_is_raised_as_the_named_error(handler, core, sagemaker, lambda_context):
    event = start_event()
    name = name_for(core, event)
    sagemaker.error(
        "CreateOptimizationJob", "ResourceLimitExceeded", "account-level service limit exceeded", expected_request(name)
    )
    with pytest.raises(handler.ResourceLimitExceededError) as raised:
        handler.start(event, lambda_context)
    assert type(raised.value).__name__ == "ResourceLimitExceededError"  # what Step Functions Retry matches
    assert "quota" in str(raised.value) and "ml.p5e.48xlarge" in str(raised.value)


def test_other_client_errors_propagate(handler, core, sagemaker, lambda_context):
    event = start_event()
    sagemaker.error("CreateOptimizationJob", "AccessDeniedException", "no", expected_request(name_for(core, event)))
    with pytest.raises(handler.ClientError, match="AccessDenied"):
        handler.start(event, lambda_context)


def test_clients_use_adaptive_retries(handler):
    for getter in (handler._sagemaker, handler._s3, handler._dynamodb, handler._ssm):
        assert getter().meta.config.retries == {"mode": "adaptive", "total_max_attempts": 9}


class _Body:
    def __init__(self, body: bytes):
        self.body = body

    def stream(self, **_: Any):
        yield self.body


def test_throttled_create_is_retried_by_the_client(start_env, load_handler, lambda_context, monkeypatch):
    """A real botocore retry: the first CreateOptimizationJob answer is a throttling error."""
    handler = load_handler("eagle_job")
    core_module = load_handler("eagle_job", "eagle_job_core")
    monkeypatch.setattr("botocore.endpoint.time.sleep", lambda seconds: None)
    event = start_event()
    name = name_for(core_module, event)
    s3 = Stubber(handler._s3())
    s3.add_response(
        "list_objects_v2",
        {"KeyCount": 1, "Contents": [{"Key": "datasets/run-1/part-0000.jsonl"}]},
        {"Bucket": DATA_BUCKET, "Prefix": "datasets/run-1/", "MaxKeys": 1},
    )
    sent: list[dict[str, Any]] = []

    def fake_send(request, **_: Any):
        sent.append(json.loads(request.body))
        if len(sent) == 1:
            body = b'{"__type": "ThrottlingException", "message": "Rate exceeded"}'
            return AWSResponse(request.url, 400, {}, _Body(body))
        return AWSResponse(request.url, 200, {}, _Body(json.dumps({"OptimizationJobArn": job_arn(name)}).encode()))

    handler._sagemaker().meta.events.register("before-send.sagemaker.CreateOptimizationJob", fake_send)
    with s3:
        out = handler.start(event, lambda_context)
    assert out["job_arn"] == job_arn(name)
    assert len(sent) == 2 and sent[0] == sent[1]
    assert_valid_sagemaker("CreateOptimizationJob", sent[0])


def test_unsupported_architecture(handler, sagemaker, lambda_context):
    with pytest.raises(handler.UnsupportedArchitectureError) as raised:
        handler.start(start_event(architecture="MistralForCausalLM"), lambda_context)
    message = str(raised.value)
    assert "MistralForCausalLM" in message
    for supported in (
        "LlamaForCausalLM",
        "Qwen3ForCausalLM",
        "Qwen3MoeForCausalLM",
        "Qwen2ForCausalLM",
        "GptOssForCausalLM",
        "Qwen3NextForCausalLM",
    ):
        assert supported in message


@pytest.mark.parametrize(
    "model_id", ["Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B-Instruct", "https://huggingface.co/Qwen/Qwen3-8B"]
)
def test_hugging_face_hub_ids_are_rejected(handler, sagemaker, lambda_context, model_id):
    with pytest.raises(handler.UnsupportedModelSourceError, match="Hugging Face.*S3"):
        handler.start(start_event(model_s3_uri=model_id), lambda_context)


def test_unsupported_instance_type(handler, sagemaker, lambda_context):
    with pytest.raises(handler.UnsupportedInstanceTypeError, match="ml.m5.large.*ml.p5e.48xlarge"):
        handler.start(start_event(deployment_instance_type="ml.m5.large"), lambda_context)


def test_missing_dataset(handler, sagemaker, lambda_context):
    event = start_event(training_data={"s3_uri": f"s3://{DATA_BUCKET}/datasets/run-404/", "s3_data_type": "S3Prefix"})
    with pytest.raises(handler.DatasetMissingError, match="no objects under .*run-404"):
        handler.start(event, lambda_context)


def test_missing_dataset_bucket(handler, sagemaker, lambda_context):
    event = start_event(training_data={"s3_uri": "s3://no-such-bucket-eagle/data/", "s3_data_type": "S3Prefix"})
    with pytest.raises(handler.DatasetMissingError, match="does not exist"):
        handler.start(event, lambda_context)


@pytest.mark.parametrize("summary", [{"records": 0}, {"records": 0, "empty": True}, {"empty": True}])
def test_empty_dataset_marker(handler, sagemaker, lambda_context, summary):
    with pytest.raises(handler.EmptyDatasetError, match="0 records"):
        handler.start(start_event(dataset_summary=summary), lambda_context)


def test_manifest_dataset_is_found_by_its_key(handler, core, sagemaker, dataset, lambda_context):
    dataset.put_object(Bucket=DATA_BUCKET, Key="manifests/run-1.manifest", Body=b"[]")
    uri = f"s3://{DATA_BUCKET}/manifests/run-1.manifest"
    event = start_event(training_data={"s3_uri": uri, "s3_data_type": "ManifestFile"})
    name = name_for(core, event)
    request = expected_request(name)
    request["OptimizationConfigs"][0]["ModelSpeculativeDecodingConfig"]["TrainingDataSource"] = {
        "S3Uri": uri,
        "S3DataType": "ManifestFile",
    }
    sagemaker.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, request)
    assert handler.start(event, lambda_context)["training_data"]["s3_data_type"] == "ManifestFile"


def test_invalid_event_names_the_field(handler, sagemaker, lambda_context):
    event = start_event()
    del event["training_data"]
    with pytest.raises(handler.InvalidEventError, match="training_data"):
        handler.start(event, lambda_context)


def test_vpc_kms_and_training_plan_are_sent_only_when_configured(
    start_env, dataset, load_handler, lambda_context, monkeypatch
):
    monkeypatch.setenv("SUBNET_IDS", "subnet-0a1b2c3d, subnet-0e1f2a3b")
    monkeypatch.setenv("SECURITY_GROUP_IDS", "sg-0123456789abcdef0")
    monkeypatch.setenv("TRAINING_PLAN_ARNS", PLAN_ARN)
    monkeypatch.setenv("KMS_KEY_ARN", KMS_ARN)
    handler = load_handler("eagle_job")
    core_module = load_handler("eagle_job", "eagle_job_core")
    event = start_event()
    name = name_for(core_module, event)
    request = expected_request(
        name,
        VpcConfig={"Subnets": ["subnet-0a1b2c3d", "subnet-0e1f2a3b"], "SecurityGroupIds": ["sg-0123456789abcdef0"]},
        TrainingPlanArns=[PLAN_ARN],
    )
    request["OutputConfig"]["KmsKeyId"] = KMS_ARN
    stub = SageMakerStub(handler._sagemaker())
    stub.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, request)
    with stub.stubber:
        handler.start(event, lambda_context)
        stub.stubber.assert_no_pending_responses()


def test_unconfigured_request_has_no_optional_members(core):
    settings_ = core.settings_from_env({"ROLE_ARN": ROLE_ARN, "OUTPUT_S3_URI": OUTPUT, "MAX_RUNTIME_SECONDS": "3600"})
    request = core.build_create_request(
        name="eagle-x-0123456789ab",
        settings=settings_,
        model_s3_uri=MODEL_URI,
        instance_type="ml.g6e.12xlarge",
        max_instance_count=2,
        training_data_uri=DATA_URI,
        training_data_type="S3Prefix",
        model_name="x",
        run_id="r",
    )
    assert "VpcConfig" not in request and "TrainingPlanArns" not in request
    assert "KmsKeyId" not in request["OutputConfig"]
    assert_valid_sagemaker("CreateOptimizationJob", request)


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"SUBNET_IDS": "subnet-1"}, "set together"),
        ({"SECURITY_GROUP_IDS": "sg-1"}, "set together"),
        ({"TRAINING_PLAN_ARNS": f"{PLAN_ARN},{PLAN_ARN}-2"}, "at most 1 training plan"),
        ({"MAX_RUNTIME_SECONDS": "soon"}, "MAX_RUNTIME_SECONDS"),
        ({"OUTPUT_S3_URI": "bucket/prefix"}, "OUTPUT_S3_URI"),
        ({"ROLE_ARN": ""}, "ROLE_ARN"),
    ],
)
def test_bad_configuration_is_reported(core, env, problem):
    base = {"ROLE_ARN": ROLE_ARN, "OUTPUT_S3_URI": OUTPUT, "MAX_RUNTIME_SECONDS": "3600"}
    with pytest.raises(core.ConfigurationError, match=problem):
        core.settings_from_env({**base, **env})


_any_text = st.text(min_size=0, max_size=120)


@settings(max_examples=examples(300), deadline=None)
@given(model_name=_any_text, model_uri=_any_text, dataset_uri=_any_text, instance_type=_any_text, run_id=_any_text)
def test_job_name_is_always_valid_and_deterministic(model_name, model_uri, dataset_uri, instance_type, run_id):
    core_module = CORE
    kwargs = dict(
        model_name=model_name,
        model_s3_uri=model_uri,
        dataset_s3_uri=dataset_uri,
        instance_type=instance_type,
        run_id=run_id,
    )
    name = core_module.job_name(**kwargs)
    assert 1 <= len(name) <= JOB_NAME_SHAPE.metadata["max"]
    assert regex.fullmatch(JOB_NAME_SHAPE.metadata["pattern"], name)
    assert_valid_request("sagemaker", "DescribeOptimizationJob", {"OptimizationJobName": name})
    assert core_module.job_name(**kwargs) == name
    assert core_module.job_name(**{**kwargs, "run_id": run_id + "-retry"}) != name


@settings(max_examples=examples(200), deadline=None)
@given(value=st.text(max_size=400))
def test_tag_values_always_match_the_tag_pattern(value):
    cleaned = CORE.tag_value(value)
    assert len(cleaned) <= 256
    assert regex.fullmatch(TAG_VALUE_SHAPE.metadata["pattern"], cleaned)


# --------------------------------------------------------------------------------------------
# results parsing (pure)
# --------------------------------------------------------------------------------------------

# Rows shaped like the AWS launch post's benchmark table (qwen3-32B).
BLOG_ROWS = [
    ("No EAGLE", 4, 168.04, 86.76),
    ("No EAGLE", 8, 219.53, 156.46),
    ("Base EAGLE", 1, 89.76, 45.87),
    ("Base EAGLE", 8, 154.44, 381.86),
    ("Trained EAGLE", 1, 83.6, 57.63),
    ("Trained EAGLE", 4, 133.11, 214.27),
    ("Trained EAGLE", 8, 151.19, 412.25),
]


def test_parser_reads_table_rows_and_pairs_by_concurrency(core):
    doc = [
        {"Configuration": c, "Concurrency": n, "TTFT (ms)": ttft, "Output Throughput (tokens/sec)": tput}
        for c, n, ttft, tput in BLOG_ROWS
    ]
    summary = core.summarize_results([("benchmarks.json", doc)], ["benchmarks.json"])
    assert summary.status == "parsed"
    assert [level["concurrency"] for level in summary.per_concurrency] == [4, 8]
    # headline = the weakest common concurrency: 214.27 / 86.76
    assert summary.speedup == round(214.27 / 86.76, 4)
    assert (summary.base_throughput, summary.optimized_throughput, summary.concurrency) == (86.76, 214.27, 4)
    assert summary.base_latency == {"ttft_ms": 168.04} and summary.optimized_latency == {"ttft_ms": 133.11}
    assert summary.reference_rows == 2


def vllm_result(throughput: float, ttft: float, concurrency: int = 8) -> dict[str, Any]:
    return {
        "max_concurrency": concurrency,
        "request_throughput": 0.2,
        "output_throughput": throughput,
        "total_token_throughput": throughput * 3,
        "mean_ttft_ms": ttft,
        "mean_tpot_ms": 20.0,
        "mean_itl_ms": 50.0,
        "generated_texts": ["never read"],
    }


@pytest.mark.parametrize(
    ("base_file", "eagle_file"),
    [("baseline.json", "trained_eagle.json"), ("no_eagle/result.json", "eagle3/result.json")],
)
def test_parser_reads_benchmark_serving_files_named_by_role(core, base_file, eagle_file):
    docs = [(base_file, vllm_result(100.0, 200.0)), (eagle_file, vllm_result(250.0, 150.0))]
    summary = core.summarize_results(docs, [base_file, eagle_file, "README.txt"])
    assert (summary.status, summary.throughput_metric, summary.speedup) == ("parsed", "output_throughput", 2.5)
    assert summary.base_latency == {"ttft_ms": 200.0, "tpot_ms": 20.0, "itl_ms": 50.0}


@pytest.mark.parametrize(
    "document",
    [
        {"baseline": {"throughput": 80}, "optimized": {"throughput": 200}},
        {"results": {"base_model": {"tokens_per_second": 80}, "eagle": {"tokens_per_second": 200}}},
        {"baseline_output_throughput": 80, "eagle_output_throughput": 200},
        [
            {"speculative_decoding": False, "output_throughput": 80},
            {"speculative_decoding": True, "output_throughput": 200},
        ],
    ],
)
def test_parser_accepts_nested_wide_and_flag_layouts(core, document):
    summary = core.summarize_results([("results.json", document)], ["results.json"])
    assert (summary.status, summary.base_throughput, summary.optimized_throughput, summary.speedup) == (
        "parsed",
        80,
        200,
        2.5,
    )


@pytest.mark.parametrize(
    ("docs", "reason"),
    [
        ([("metrics.json", {"loss": 0.3, "acceptance_rate": 0.7})], "no base .* and optimized"),
        ([("eagle.json", vllm_result(250.0, 1.0))], "no base"),
        (
            [("baseline.json", vllm_result(100.0, 1.0, 4)), ("eagle.json", vllm_result(250.0, 1.0, 8))],
            "different concurrency",
        ),
        (
            [
                ("baseline.json", vllm_result(100.0, 1.0)),
                ("baseline-2.json", vllm_result(90.0, 1.0)),
                ("eagle.json", vllm_result(250.0, 1.0)),
            ],
            "conflicting base",
        ),
        ([("r.json", {"baseline": {"output_throughput": 1}, "eagle": {"total_throughput": 2}})], "different metric"),
    ],
)
def test_parser_refuses_to_guess(core, docs, reason):
    summary = core.summarize_results(docs, [name for name, _ in docs])
    assert summary.status == "results_unparsed" and summary.speedup is None
    assert regex.search(reason, summary.reason), summary.reason


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.sampled_from(
                [
                    "baseline",
                    "eagle",
                    "optimized",
                    "output_throughput",
                    "throughput",
                    "concurrency",
                    "configuration",
                    "No EAGLE",
                    "Trained EAGLE",
                    "mean_ttft_ms",
                    "x",
                ]
            )
            | st.text(max_size=15),
            children,
            max_size=6,
        )
    ),
    max_leaves=40,
)


def _numbers_in(value: Any) -> set[float]:
    if isinstance(value, bool):
        return set()
    if isinstance(value, (int, float)):
        return {float(value)}
    if isinstance(value, str):
        try:
            return {float(value.strip())}
        except ValueError:
            return set()
    if isinstance(value, dict):
        return set().union(*(_numbers_in(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_numbers_in(v) for v in value)) if value else set()
    return set()


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_json, name=st.sampled_from(["results.json", "baseline.json", "eagle.json", "x.jsonl"]))
def test_parser_never_invents_numbers(document, name):
    core_module = CORE
    summary = core_module.summarize_results([(name, document)], [name])
    assert summary.status in {"parsed", "results_unparsed"}
    if summary.status == "parsed":
        seen = _numbers_in(document)
        assert summary.base_throughput in seen and summary.optimized_throughput in seen
        assert summary.speedup == round(summary.optimized_throughput / summary.base_throughput, 4)
    else:
        assert summary.speedup is None and summary.reason


def test_parse_json_documents_tolerates_bad_files(core):
    assert core.parse_json_documents("a.json", b"\xff\xfe not json") == []
    assert core.parse_json_documents("a.json", b"{not json") == []
    assert core.parse_json_documents("a.jsonl", b'{"a": 1}\nbroken\n\n{"b": 2}\n') == [{"a": 1}, {"b": 2}]


# --------------------------------------------------------------------------------------------
# record
# --------------------------------------------------------------------------------------------

TABLE = "eagle-runs"
REPORT_BUCKET = "eagle-reports"
PARAMETER = "/eagle/qwen3-32b/approved-draft"
OUT_BUCKET = "eagle-output"
PLACEHOLDER = "none"  # the value PromotionParameter creates the parameter with


@pytest.fixture
def aws_record(monkeypatch):
    monkeypatch.setenv("RUNS_TABLE", TABLE)
    monkeypatch.setenv("REPORT_S3_URI", f"s3://{REPORT_BUCKET}/eagle")
    monkeypatch.setenv("PROMOTION_PARAMETER", PARAMETER)
    monkeypatch.setenv("SPEEDUP_THRESHOLD", "1.5")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=REPORT_BUCKET)
        s3.create_bucket(Bucket=OUT_BUCKET)
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        create_runs_table(ddb, TABLE)
        ssm = boto3.client("ssm", region_name="us-east-1")
        ssm.put_parameter(Name=PARAMETER, Value=PLACEHOLDER, Type="String")
        yield {"s3": s3, "ddb": ddb, "ssm": ssm}


@pytest.fixture
def recorder(aws_record, load_handler):
    return load_handler("eagle_job")


def run_event(run_id: str = "run-1", status: str = "COMPLETED", ended: str = "2026-11-30T14:00:00Z", **job: Any):
    name = f"eagle-qwen3-32b-{run_id}"
    output = f"s3://{OUT_BUCKET}/jobs/{name}/"
    return {
        "model_name": "qwen3-32b",
        "model_s3_uri": MODEL_URI,
        "architecture": "Qwen3ForCausalLM",
        "deployment_instance_type": "ml.p5e.48xlarge",
        "max_instance_count": 1,
        "training_data": {"s3_uri": DATA_URI, "s3_data_type": "S3Prefix"},
        "run_id": run_id,
        "dataset_summary": {"records": 1200, "sources": {"captured": 1000, "seed": 200}},
        "job_name": name,
        "job_arn": job_arn(name),
        "eagle_version": "eagle3",
        "output_s3_uri": output,
        "started_at": "2026-11-30T08:00:00Z",
        "draft_model_s3_uri": f"{output}draft/",
        "results_s3_uri": f"{output}results/",
        "job": {
            "OptimizationJobArn": job_arn(name),
            "OptimizationJobStatus": status,
            "CreationTime": "2026-11-30T08:00:00Z",
            "OptimizationStartTime": "2026-11-30T08:02:00Z",
            "OptimizationEndTime": ended,
            "LastModifiedTime": ended,
            "OptimizationJobName": name,
            **job,
        },
    }


def put_outputs(s3, event: dict[str, Any], results: dict[str, Any] | None, draft: bool = True) -> None:
    prefix = event["output_s3_uri"].split(f"s3://{OUT_BUCKET}/", 1)[1]
    if draft:
        s3.put_object(Bucket=OUT_BUCKET, Key=f"{prefix}draft/model.safetensors", Body=b"weights")
        s3.put_object(Bucket=OUT_BUCKET, Key=f"{prefix}draft/config.json", Body=b"{}")
    for name, body in (results or {}).items():
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        s3.put_object(Bucket=OUT_BUCKET, Key=f"{prefix}results/{name}", Body=data)


def speed_results(base: float, trained: float) -> dict[str, Any]:
    return {"baseline.json": vllm_result(base, 200.0), "trained_eagle.json": vllm_result(trained, 150.0)}


def parameter(aws) -> str:
    """The promotion parameter's value: a plain draft head URI (CloudFormation serves it) or "none"."""
    return aws["ssm"].get_parameter(Name=PARAMETER)["Parameter"]["Value"]


def stored(aws, run_id: str) -> dict[str, Any]:
    from boto3.dynamodb.types import TypeDeserializer

    item = aws["ddb"].get_item(TableName=TABLE, Key={"model_name": {"S": "qwen3-32b"}, "run_id": {"S": run_id}})["Item"]
    return {k: TypeDeserializer().deserialize(v) for k, v in item.items()}


def emitted_metrics(capsys) -> list[dict[str, Any]]:
    out = []
    for line in capsys.readouterr().out.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "_aws" in doc:
            names = [m["Name"] for m in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
            assert doc["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "SageMakerLlmTest"
            assert any("ModelName" in dims for dims in doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"])
            out.append({k: (v[0] if k in names and isinstance(v, list) and len(v) == 1 else v) for k, v in doc.items()})
    return out


def test_record_promotes_above_threshold(recorder, aws_record, lambda_context, capsys):
    event = run_event()
    put_outputs(aws_record["s3"], event, speed_results(100.0, 250.0))

    result = recorder.record(event, lambda_context)

    assert result["decision"] == "promoted" and result["speedup"] == 2.5
    assert result["reason"] == "speedup 2.5x >= threshold 1.5x"
    assert (
        parameter(aws_record) == event["draft_model_s3_uri"] == f"s3://{OUT_BUCKET}/jobs/eagle-qwen3-32b-run-1/draft/"
    )
    item = stored(aws_record, "run-1")
    assert item["draft_model_s3_uri"] == event["draft_model_s3_uri"] and item["decision"] == "promoted"
    assert item["eagle_version"] == "eagle3" and item["job_arn"] == event["job_arn"]
    assert item["ended_at"] == "2026-11-30T14:00:00Z" and item["promotion_parameter"] == PARAMETER
    assert item["base_throughput"] == 100 and item["trained_throughput"] == 250
    assert item["base_latency"]["ttft_ms"] == 200 and item["trained_latency"]["ttft_ms"] == 150
    assert item["duration_seconds"] == 6 * 3600 - 120
    assert item["status"] == "COMPLETED" and item["dataset_summary"]["records"] == 1200
    report = json.loads(
        aws_record["s3"].get_object(Bucket=REPORT_BUCKET, Key="eagle/qwen3-32b/run-1.json")["Body"].read()
    )
    assert report["speedup"] == 2.5 and report["results"]["per_concurrency"][0]["concurrency"] == 8
    assert "never read" not in json.dumps(report)  # benchmark texts are not copied
    [emf] = emitted_metrics(capsys)
    assert emf["EagleSpeedup"] == 2.5 and emf["EagleJobSucceeded"] == 1.0 and emf["ModelName"] == "qwen3-32b"
    assert "EagleJobFailed" not in emf


def test_promoting_runs_record_the_head_a_rollback_returns_to(recorder, aws_record, lambda_context):
    first = run_event("run-1", ended="2026-11-30T14:00:00Z")
    put_outputs(aws_record["s3"], first, speed_results(100.0, 250.0))
    assert recorder.record(first, lambda_context)["previous_head"] == "none"
    second = run_event("run-2", ended="2026-12-01T14:00:00Z")
    put_outputs(aws_record["s3"], second, speed_results(100.0, 300.0))
    result = recorder.record(second, lambda_context)
    assert result["decision"] == "promoted" and result["previous_head"] == first["draft_model_s3_uri"]
    assert stored(aws_record, "run-2")["previous_head"] == first["draft_model_s3_uri"]
    below = run_event("run-3", ended="2026-12-02T14:00:00Z")
    put_outputs(aws_record["s3"], below, speed_results(100.0, 110.0))
    assert recorder.record(below, lambda_context)["previous_head"] is None  # nothing promoted, nothing to return to


def test_record_keeps_parameter_below_threshold(recorder, aws_record, lambda_context, capsys):
    event = run_event()
    put_outputs(aws_record["s3"], event, speed_results(100.0, 120.0))

    result = recorder.record(event, lambda_context)

    assert result["decision"] == "not_promoted"
    assert result["reason"] == "speedup below threshold: 1.2x < 1.5x"
    assert aws_record["ssm"].get_parameter(Name=PARAMETER)["Parameter"]["Value"] == PLACEHOLDER
    [emf] = emitted_metrics(capsys)
    assert emf["EagleSpeedup"] == 1.2


def test_record_failed_job(recorder, aws_record, lambda_context, capsys):
    event = run_event(status="FAILED", FailureReason="ClientError: training data has no valid records")
    result = recorder.record(event, lambda_context)
    assert result["decision"] == "not_promoted"
    assert result["reason"] == "job FAILED: ClientError: training data has no valid records"
    assert result["results_status"] == "not_read" and result["speedup"] is None
    assert aws_record["ssm"].get_parameter(Name=PARAMETER)["Parameter"]["Value"] == PLACEHOLDER
    [emf] = emitted_metrics(capsys)
    assert emf["EagleJobFailed"] == 1.0 and "EagleSpeedup" not in emf and "EagleJobSucceeded" not in emf


def test_record_unparsed_results(recorder, aws_record, lambda_context, capsys):
    event = run_event()
    put_outputs(
        aws_record["s3"],
        event,
        {"training_metrics.json": {"loss": 0.41, "acceptance_length": 3.1}, "summary.csv": b"a,b\n1,2\n"},
    )
    result = recorder.record(event, lambda_context)
    assert result["results_status"] == "results_unparsed"
    assert result["results_files"] == ["summary.csv", "training_metrics.json"]
    assert result["decision"] == "not_promoted" and result["speedup"] is None
    assert result["reason"].startswith("results unparsed under") and "training_metrics.json" in result["reason"]
    assert aws_record["ssm"].get_parameter(Name=PARAMETER)["Parameter"]["Value"] == PLACEHOLDER
    [emf] = emitted_metrics(capsys)
    assert "EagleSpeedup" not in emf and emf["EagleJobSucceeded"] == 1.0
    assert emf["EagleResultsUnparsed"] == 1.0
    # the raw listing of everything the job wrote is kept beside the verdict
    assert result["results_unparsed"] is True
    assert [(e["key"], e["size"]) for e in result["output_listing"]] == [
        ("draft/config.json", 2),
        ("draft/model.safetensors", 7),
        ("results/summary.csv", 8),
        ("results/training_metrics.json", 40),
    ]
    assert all(e["last_modified"].endswith("Z") for e in result["output_listing"])
    assert (result["output_listing_count"], result["output_listing_truncated"]) == (4, False)
    item = stored(aws_record, "run-1")
    assert item["output_listing"] == result["output_listing"] and item["results_unparsed"] is True
    report = json.loads(
        aws_record["s3"].get_object(Bucket=REPORT_BUCKET, Key="eagle/qwen3-32b/run-1.json")["Body"].read()
    )
    assert [e["key"] for e in report["output_listing"]] == [e["key"] for e in result["output_listing"]]


def test_record_parsed_results_are_not_flagged_and_the_listing_is_bounded(
    recorder, aws_record, lambda_context, capsys, monkeypatch
):
    monkeypatch.setattr(recorder.job_outputs, "MAX_LISTING_OBJECTS", 3)
    event = run_event()
    put_outputs(aws_record["s3"], event, speed_results(100.0, 250.0))
    result = recorder.record(event, lambda_context)
    assert result["results_unparsed"] is False and result["decision"] == "promoted"
    assert (result["output_listing_count"], result["output_listing_truncated"]) == (3, True)
    [emf] = emitted_metrics(capsys)
    assert "EagleResultsUnparsed" not in emf


def test_failed_job_is_not_flagged_as_unparsed(recorder, aws_record, lambda_context, capsys):
    result = recorder.record(run_event(status="FAILED", FailureReason="x"), lambda_context)
    assert result["results_unparsed"] is False and result["output_listing"] == []


def test_record_without_draft_head_does_not_promote(recorder, aws_record, lambda_context):
    event = run_event()
    put_outputs(aws_record["s3"], event, speed_results(100.0, 250.0), draft=False)
    result = recorder.record(event, lambda_context)
    assert result["decision"] == "not_promoted" and "no draft head objects" in result["reason"]
    assert aws_record["ssm"].get_parameter(Name=PARAMETER)["Parameter"]["Value"] == PLACEHOLDER


def test_re_recording_is_idempotent_and_never_demotes(recorder, aws_record, lambda_context, capsys):
    newer = run_event("run-2", ended="2026-12-02T10:00:00Z")
    older = run_event("run-1", ended="2026-11-30T14:00:00Z")
    weak = run_event("run-3", ended="2026-12-03T10:00:00Z")
    put_outputs(aws_record["s3"], newer, speed_results(100.0, 200.0))
    put_outputs(aws_record["s3"], older, speed_results(100.0, 300.0))
    put_outputs(aws_record["s3"], weak, speed_results(100.0, 110.0))

    first = recorder.record(copy.deepcopy(newer), lambda_context)
    promoted = parameter(aws_record)
    capsys.readouterr()
    second = recorder.record(copy.deepcopy(newer), lambda_context)

    assert first == second
    assert stored(aws_record, "run-2") == json.loads(json.dumps(first), parse_float=Decimal)
    assert first["decision"] == "promoted" and first["speedup"] == 2.0
    assert parameter(aws_record) == promoted
    assert emitted_metrics(capsys) == []  # a repeated record publishes no metrics twice

    late = recorder.record(older, lambda_context)  # an older run replayed after a newer promotion
    assert late["decision"] == "not_promoted" and "is newer" in late["reason"]
    recorder.record(weak, lambda_context)  # a newer run below the threshold
    assert parameter(aws_record) == promoted == newer["draft_model_s3_uri"]


def test_record_refuses_a_running_job(recorder, aws_record, lambda_context):
    with pytest.raises(recorder.JobNotTerminalError, match="INPROGRESS"):
        recorder.record(run_event(status="INPROGRESS"), lambda_context)


def test_record_configuration_errors(recorder, aws_record, lambda_context, monkeypatch):
    monkeypatch.setenv("SPEEDUP_THRESHOLD", "fast")
    monkeypatch.delenv("RUNS_TABLE")
    with pytest.raises(recorder.ConfigurationError, match="RUNS_TABLE.*SPEEDUP_THRESHOLD"):
        recorder.record(run_event(), lambda_context)


def test_a_newer_run_replaces_the_promoted_head_only_when_it_beats_it(recorder, aws_record, lambda_context):
    """Promotion compares with the served head's recorded speedup, not only with the base model."""
    older = run_event("run-1", ended="2026-11-30T14:00:00Z")
    slower = run_event("run-2", ended="2026-12-02T10:00:00Z")
    faster = run_event("run-3", ended="2026-12-03T10:00:00Z")
    put_outputs(aws_record["s3"], older, speed_results(100.0, 300.0))
    put_outputs(aws_record["s3"], slower, speed_results(100.0, 200.0))
    put_outputs(aws_record["s3"], faster, speed_results(100.0, 320.0))
    assert recorder.record(older, lambda_context)["decision"] == "promoted"
    kept = recorder.record(slower, lambda_context)
    assert kept["decision"] == "not_promoted"
    assert kept["reason"] == (
        "speedup 2x >= threshold 1.5x, but it does not beat the served promoted head: 2x <= 3x (run record run-1)"
    )
    assert kept["comparison_basis"]["served_head"] == "promoted" and kept["comparison_basis"]["speedup"] == 3.0
    assert parameter(aws_record) == older["draft_model_s3_uri"]
    replaced = recorder.record(faster, lambda_context)
    assert replaced["decision"] == "promoted" and "beats the served promoted head: 3.2x > 3x" in replaced["reason"]
    assert parameter(aws_record) == faster["draft_model_s3_uri"]


def test_a_head_trained_on_other_weights_neither_sets_the_bar_nor_blocks(recorder, aws_record, lambda_context):
    """After the base weights changed, the old head is not served (the serving model leaves it out): the first head
    trained on the new weights is compared with the base model, not with the old head's speedup or completion."""
    old_weights = run_event("run-1", ended="2026-12-05T10:00:00Z")
    old_weights["model_s3_uri"] = "s3://my-weights/qwen3-32b-v1/"
    new_weights = run_event("run-2", ended="2026-12-03T10:00:00Z")
    put_outputs(aws_record["s3"], old_weights, speed_results(100.0, 300.0))
    put_outputs(aws_record["s3"], new_weights, speed_results(100.0, 200.0))
    assert recorder.record(old_weights, lambda_context)["decision"] == "promoted"
    promoted = recorder.record(new_weights, lambda_context)
    assert promoted["decision"] == "promoted", promoted["reason"]
    assert promoted["comparison_basis"]["served_head"] == "none"
    assert parameter(aws_record) == new_weights["draft_model_s3_uri"]


@pytest.mark.parametrize("current", ["none", "NONE", " none\n"])
def test_no_head_marker_is_replaced(recorder, aws_record, lambda_context, current):
    aws_record["ssm"].put_parameter(Name=PARAMETER, Value=current, Type="String", Overwrite=True)
    event = run_event()
    put_outputs(aws_record["s3"], event, speed_results(100.0, 250.0))
    assert recorder.record(event, lambda_context)["decision"] == "promoted"
    assert parameter(aws_record) == event["draft_model_s3_uri"]


def test_missing_parameter_is_created(recorder, aws_record, lambda_context):
    aws_record["ssm"].delete_parameter(Name=PARAMETER)
    event = run_event()
    put_outputs(aws_record["s3"], event, speed_results(100.0, 250.0))
    assert recorder.record(event, lambda_context)["decision"] == "promoted"
    assert parameter(aws_record) == event["draft_model_s3_uri"]


def test_legacy_json_value_is_understood(recorder, aws_record, lambda_context):
    newer = run_event("run-2", ended="2026-12-02T10:00:00Z")
    older = run_event("run-1", ended="2026-11-30T14:00:00Z")
    put_outputs(aws_record["s3"], newer, speed_results(100.0, 200.0))
    put_outputs(aws_record["s3"], older, speed_results(100.0, 300.0))
    recorder.record(copy.deepcopy(newer), lambda_context)
    legacy = json.dumps({"draft_model_s3_uri": newer["draft_model_s3_uri"], "run_id": "run-2"})
    aws_record["ssm"].put_parameter(Name=PARAMETER, Value=legacy, Type="String", Overwrite=True)

    assert recorder.record(copy.deepcopy(newer), lambda_context)["decision"] == "promoted"  # already holds it
    assert parameter(aws_record) == legacy  # nothing to write
    late = recorder.record(older, lambda_context)
    assert late["decision"] == "not_promoted" and "run 'run-2'" in late["reason"]


def test_a_head_set_by_hand_is_replaced(recorder, aws_record, lambda_context):
    """A URI no recorded run promoted (set by an operator) carries no completion time: a good run replaces it."""
    aws_record["ssm"].put_parameter(Name=PARAMETER, Value="s3://elsewhere/heads/manual/", Type="String", Overwrite=True)
    event = run_event()
    put_outputs(aws_record["s3"], event, speed_results(100.0, 250.0))
    assert recorder.record(event, lambda_context)["decision"] == "promoted"
    assert parameter(aws_record) == event["draft_model_s3_uri"]


def test_accepted_licence_of_a_gated_model_reaches_model_access_config(
    start_env, dataset, load_handler, lambda_context
):
    """A gated JumpStart model (accept_eula in config): CreateOptimizationJob carries
    ModelSource.S3.ModelAccessConfig.AcceptEula, checked against botocore's model; the output keeps the flag."""
    handler = load_handler("eagle_job")
    core_module = load_handler("eagle_job", "eagle_job_core")
    event = start_event(accept_eula=True)
    name = name_for(core_module, event)
    request = expected_request(name)
    request["ModelSource"]["S3"]["ModelAccessConfig"] = {"AcceptEula": True}
    stub = SageMakerStub(handler._sagemaker())
    stub.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, request)
    with stub.stubber:
        assert handler.start(event, lambda_context)["accept_eula"] is True
        stub.stubber.assert_no_pending_responses()


def test_no_model_access_config_without_accepted_licence(core):
    settings_ = core.settings_from_env({"ROLE_ARN": ROLE_ARN, "OUTPUT_S3_URI": OUTPUT, "MAX_RUNTIME_SECONDS": "3600"})
    request = core.build_create_request(
        name="eagle-x-0123456789ab",
        settings=settings_,
        model_s3_uri=MODEL_URI,
        instance_type="ml.g6e.12xlarge",
        max_instance_count=1,
        training_data_uri=DATA_URI,
        training_data_type="S3Prefix",
        model_name="x",
        run_id="r",
    )
    assert request["ModelSource"] == {"S3": {"S3Uri": MODEL_URI}}


# --------------------------------------------------------------------------------------------
# start: the capture watermark moves with the job (claim, create, commit in one invocation)
# --------------------------------------------------------------------------------------------

WATERMARK = "/sagemaker-llm/eagle/qwen3-32b/watermark"
BEFORE = '{"v":1,"after":{"ep/AllTraffic/":"2026/11/30/08/00-00-000-a.jsonl"}}'
AFTER = '{"v":1,"after":{"ep/AllTraffic/":"2026/11/30/10/00-00-000-b.jsonl"}}'


def commit(**overrides: Any) -> dict[str, Any]:
    return {"parameter": WATERMARK, "stored": BEFORE, "previous": BEFORE, "value": AFTER, **overrides}


@pytest.fixture
def ssm(handler):
    """moto SSM behind the handler's client; every request it sends is checked against botocore's model first.
    ``ssm.writes`` lists the values PutParameter wrote, in order."""
    client = handler._ssm()
    writes: list[str] = []

    def check(params: dict[str, Any], model: Any, **_: Any) -> None:
        assert_valid_request("ssm", model.name, params)
        if model.name == "PutParameter":
            writes.append(params["Value"])

    client.meta.events.register("provide-client-params.ssm.*", check)
    client.put_parameter(Name=WATERMARK, Value=BEFORE, Type="String")
    writes.clear()
    client.writes = writes
    yield client
    client.meta.events.unregister("provide-client-params.ssm.*", check)


def watermark_now(ssm) -> str:
    return ssm.get_parameter(Name=WATERMARK)["Parameter"]["Value"]


def claim_for(core, name: str, **fields: Any) -> str:
    return core.claim_value(
        core.WatermarkClaim(
            **{
                "job": name,
                "run_id": "run-2026-11-30",
                "claimed_at": "2026-11-30T12:00:00Z",
                "previous": BEFORE,
                "value": AFTER,
                **fields,
            }
        )
    )


def test_start_claims_the_window_creates_the_job_then_moves_the_watermark(
    handler, core, sagemaker, ssm, lambda_context
):
    event = start_event(watermark=commit())
    name = name_for(core, event)
    sagemaker.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, expected_request(name))
    out = handler.start(event, lambda_context)
    assert out["watermark_committed"] is True and out["watermark"] == commit()
    assert len(ssm.writes) == 2 and ssm.writes[1] == AFTER and watermark_now(ssm) == AFTER
    claim = core.decode_claim(ssm.writes[0])
    assert (claim.job, claim.run_id, claim.previous, claim.value) == (name, event["run_id"], BEFORE, AFTER)


def test_start_without_a_watermark_never_touches_ssm(handler, core, sagemaker, ssm, lambda_context):
    """A user dataset (or a run whose window does not move) has no watermark commit: SSM is left alone."""
    event = start_event(watermark=None)
    name = name_for(core, event)
    sagemaker.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, expected_request(name))
    assert handler.start(event, lambda_context)["watermark_committed"] is False
    assert ssm.writes == [] and watermark_now(ssm) == BEFORE


def test_a_watermark_moved_since_plan_starts_nothing(handler, core, sagemaker, ssm, lambda_context):
    ssm.put_parameter(Name=WATERMARK, Value=AFTER, Type="String", Overwrite=True)
    ssm.writes.clear()
    with pytest.raises(handler.WatermarkConflictError, match="changed after run run-2026-11-30 planned its dataset"):
        handler.start(
            start_event(watermark=commit(value='{"v":1,"after":{"ep/AllTraffic/":"2026/12"}}')), lambda_context
        )
    assert ssm.writes == [] and watermark_now(ssm) == AFTER  # and no CreateOptimizationJob (nothing stubbed)


def test_a_failed_create_puts_the_watermark_back_and_the_retry_trains_the_window_once(
    handler, core, sagemaker, ssm, lambda_context
):
    """ResourceLimitExceededError is retried by Step Functions for hours: between attempts the watermark is where
    plan found it, so an abort in that wait skips nothing; the attempt that creates the job moves it."""
    event = start_event(watermark=commit())
    name = name_for(core, event)
    sagemaker.error("CreateOptimizationJob", "ResourceLimitExceeded", "limit", expected_request(name))
    with pytest.raises(handler.ResourceLimitExceededError):
        handler.start(copy.deepcopy(event), lambda_context)
    assert watermark_now(ssm) == BEFORE and ssm.writes[-1] == BEFORE
    sagemaker.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, expected_request(name))
    assert handler.start(copy.deepcopy(event), lambda_context)["watermark_committed"] is True
    assert watermark_now(ssm) == AFTER


def test_a_retry_finds_its_own_claim_and_goes_on(handler, core, sagemaker, ssm, lambda_context):
    """The invocation ended between claim and create (a crash, a timeout): the retry creates and commits."""
    event = start_event(watermark=commit())
    name = name_for(core, event)
    ssm.put_parameter(Name=WATERMARK, Value=claim_for(core, name), Type="String", Overwrite=True)
    ssm.writes.clear()
    sagemaker.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, expected_request(name))
    handler.start(event, lambda_context)
    assert ssm.writes == [AFTER]


def test_a_retry_after_the_commit_writes_nothing(handler, core, sagemaker, ssm, lambda_context):
    event = start_event(watermark=commit())
    name = name_for(core, event)
    ssm.put_parameter(Name=WATERMARK, Value=AFTER, Type="String", Overwrite=True)
    ssm.writes.clear()
    sagemaker.ok("DescribeOptimizationJob", describe_response(name), {"OptimizationJobName": name})
    sagemaker.error(
        "CreateOptimizationJob", "ResourceInUse", f"Optimization job {name} already exists", expected_request(name)
    )
    sagemaker.ok("DescribeOptimizationJob", describe_response(name), {"OptimizationJobName": name})
    assert handler.start(event, lambda_context)["watermark_committed"] is True
    assert ssm.writes == [] and watermark_now(ssm) == AFTER


def test_the_windows_end_without_this_job_means_another_run_trained_on_it(
    handler, core, sagemaker, ssm, lambda_context
):
    event = start_event(watermark=commit())
    name = name_for(core, event)
    ssm.put_parameter(Name=WATERMARK, Value=AFTER, Type="String", Overwrite=True)
    sagemaker.error("DescribeOptimizationJob", "ResourceNotFound", "no such job", {"OptimizationJobName": name})
    with pytest.raises(handler.WatermarkConflictError, match="another run trained on these captures"):
        handler.start(event, lambda_context)
    assert watermark_now(ssm) == AFTER


def test_a_fresh_claim_of_another_run_is_left_to_it(handler, core, sagemaker, ssm, lambda_context, monkeypatch):
    other = claim_for(core, "eagle-qwen3-32b-000000000000", run_id="run-0", claimed_at="2026-11-30T11:55:00Z")
    ssm.put_parameter(Name=WATERMARK, Value=other, Type="String", Overwrite=True)
    monkeypatch.setattr(handler.job_watermark, "datetime", _frozen(datetime(2026, 11, 30, 12, 0, tzinfo=UTC)))
    with pytest.raises(handler.WatermarkConflictError, match="claimed by run run-0 .* starting its job now"):
        handler.start(start_event(watermark=commit(stored=other)), lambda_context)
    assert watermark_now(ssm) == other


def test_a_stale_claim_whose_job_exists_is_committed_for_it_and_this_run_trains_nothing(
    handler, core, sagemaker, ssm, lambda_context
):
    """That job trains on the claim's window, which this run's plan read again: this run starts nothing and moves
    the watermark to the end of that job's window, so the next run starts there."""
    other_job = "eagle-qwen3-32b-000000000000"
    other = claim_for(core, other_job, run_id="run-0", claimed_at="2026-11-29T11:00:00Z")
    ssm.put_parameter(Name=WATERMARK, Value=other, Type="String", Overwrite=True)
    sagemaker.ok("DescribeOptimizationJob", describe_response(other_job), {"OptimizationJobName": other_job})
    with pytest.raises(handler.WatermarkConflictError, match="run run-0 started job .* the next run plans from there"):
        handler.start(
            start_event(watermark=commit(stored=other, value='{"v":1,"after":{"x/":"2026/12"}}')), lambda_context
        )
    assert watermark_now(ssm) == AFTER


def test_a_stale_claim_whose_job_never_started_is_claimed_over(handler, core, sagemaker, ssm, lambda_context):
    other_job = "eagle-qwen3-32b-000000000000"
    other = claim_for(core, other_job, run_id="run-0", claimed_at="2026-11-29T11:00:00Z")
    ssm.put_parameter(Name=WATERMARK, Value=other, Type="String", Overwrite=True)
    event = start_event(watermark=commit(stored=other))
    name = name_for(core, event)
    sagemaker.error("DescribeOptimizationJob", "ResourceNotFound", "no such job", {"OptimizationJobName": other_job})
    sagemaker.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, expected_request(name))
    handler.start(event, lambda_context)
    assert watermark_now(ssm) == AFTER


def test_a_failed_create_puts_a_stale_claim_back_as_plan_read_it(handler, core, sagemaker, ssm, lambda_context):
    other_job = "eagle-qwen3-32b-000000000000"
    other = claim_for(core, other_job, run_id="run-0", claimed_at="2026-11-29T11:00:00Z")
    ssm.put_parameter(Name=WATERMARK, Value=other, Type="String", Overwrite=True)
    event = start_event(watermark=commit(stored=other))
    name = name_for(core, event)
    sagemaker.error("DescribeOptimizationJob", "ResourceNotFound", "no such job", {"OptimizationJobName": other_job})
    sagemaker.error("CreateOptimizationJob", "ResourceLimitExceeded", "limit", expected_request(name))
    with pytest.raises(handler.ResourceLimitExceededError):
        handler.start(event, lambda_context)
    assert watermark_now(ssm) == other


def test_a_commit_over_another_writer_is_reported(handler, core, sagemaker, ssm, lambda_context, monkeypatch):
    event = start_event(watermark=commit())
    name = name_for(core, event)
    sagemaker.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, expected_request(name))
    create = handler._create_job

    def create_while_another_writes(*args: Any) -> Any:
        ssm.put_parameter(Name=WATERMARK, Value="another-writer", Type="String", Overwrite=True)
        return create(*args)

    monkeypatch.setattr(handler, "_create_job", create_while_another_writes)
    with pytest.raises(handler.WatermarkConflictError, match="was started, but SSM parameter .* no longer holds"):
        handler.start(event, lambda_context)
    assert watermark_now(ssm) == "another-writer"


def test_a_missing_parameter_is_the_empty_watermark(handler, core, sagemaker, ssm, lambda_context):
    ssm.delete_parameter(Name=WATERMARK)
    event = start_event(watermark=commit(stored=None, previous=None))
    name = name_for(core, event)
    sagemaker.error("CreateOptimizationJob", "ResourceLimitExceeded", "limit", expected_request(name))
    with pytest.raises(handler.ResourceLimitExceededError):
        handler.start(copy.deepcopy(event), lambda_context)
    assert watermark_now(ssm) == core.EMPTY_WATERMARK
    sagemaker.ok("CreateOptimizationJob", {"OptimizationJobArn": job_arn(name)}, expected_request(name))
    handler.start(copy.deepcopy(event), lambda_context)
    assert watermark_now(ssm) == AFTER


@pytest.mark.parametrize(
    ("watermark", "match"),
    [
        (commit(parameter="not a name"), r"watermark\.parameter: got 'not a name'"),
        (commit(value=""), r"watermark\.value: got ''; allowed: at least 1 character"),
        (commit(value="v" * 4097), r"watermark\.value: got 'v+\.\.\.; allowed: at most 4096 characters"),
        (commit(stored=""), r"watermark\.stored: got ''; allowed: at least 1 character"),
        (commit(previous="p" * 4097), r"watermark\.previous: got 'p+\.\.\.; allowed: at most 4096 characters"),
        ({k: v for k, v in commit().items() if k != "value"}, r"watermark\.value: required field is missing"),
        ({k: v for k, v in commit().items() if k != "parameter"}, r"watermark\.parameter: required field is missing"),
        (commit(extra=1), r"watermark\.extra"),
        ("s3://x", r"watermark: got 's3://x'"),
    ],
    ids=[
        "parameter-name",
        "empty-value",
        "long-value",
        "empty-stored",
        "long-previous",
        "no-value",
        "no-parameter",
        "unknown-field",
        "not-an-object",
    ],
)
def test_watermark_commit_rules(handler, sagemaker, ssm, lambda_context, watermark, match):
    with pytest.raises(handler.InvalidEventError, match=match):
        handler.start(start_event(watermark=watermark), lambda_context)
    assert ssm.writes == []


def _frozen(now: datetime) -> Any:
    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return now

    return Frozen
