"""lambda/eagle_job ``record`` while the model serves a pre-trained EAGLE head: a trained head is promoted only when
it beats that head (its own rows in the job's benchmark, or ``PRETRAINED_HEAD_SPEEDUP``), and the run record says
what it was compared with. One flow goes through ``botocore.stub.Stubber`` (every request checked against botocore's
model, and enums, lengths and patterns by ``support.aws_model``); the variations use moto for S3/DynamoDB/SSM."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from conftest import load_handler_module
from moto import mock_aws
from support.aws_model import assert_valid_request, create_runs_table

TABLE = "eagle-runs"
REPORT_BUCKET = "eagle-reports"
OUT_BUCKET = "eagle-output"
PARAMETER = "/sagemaker-llm/eagle/gpt-oss/draft-head"
PRETRAINED = (
    "s3://jumpstart-cache-prod-us-east-1/openai-reasoning/openai-reasoning-gpt-oss-20b/artifacts/eagle3-draft/v1.0.0/"
)
CORE = load_handler_module("eagle_job", "eagle_job_core")


def bench(throughput: float, concurrency: int = 8) -> dict[str, Any]:
    return {"max_concurrency": concurrency, "output_throughput": throughput, "mean_ttft_ms": 100.0}


def results(base: float, trained: float, pretrained: float | None) -> dict[str, Any]:
    files = {"baseline.json": bench(base), "trained_eagle.json": bench(trained)}
    if pretrained is not None:
        files["pretrained_eagle.json"] = bench(pretrained)
    return files


def run_event(run_id: str = "run-1") -> dict[str, Any]:
    name = f"eagle-gpt-oss-{run_id}"
    output = f"s3://{OUT_BUCKET}/jobs/{name}/"
    return {
        "model_name": "gpt-oss",
        "model_s3_uri": "s3://jumpstart-cache-prod-us-east-1/openai-reasoning/m/",
        "architecture": "GptOssForCausalLM",
        "deployment_instance_type": "ml.g6e.2xlarge",
        "max_instance_count": 1,
        "training_data": {"s3_uri": "s3://eagle-data/datasets/run-1/", "s3_data_type": "S3Prefix"},
        "run_id": run_id,
        "dataset_summary": {"records": 1200},
        "job_name": name,
        "job_arn": f"arn:aws:sagemaker:us-east-1:123456789012:optimization-job/{name}",
        "eagle_version": "eagle3",
        "output_s3_uri": output,
        "started_at": "2026-11-30T08:00:00Z",
        "draft_model_s3_uri": f"{output}draft/",
        "results_s3_uri": f"{output}results/",
        "job": {
            "OptimizationJobStatus": "COMPLETED",
            "CreationTime": "2026-11-30T08:00:00Z",
            "OptimizationStartTime": "2026-11-30T08:02:00Z",
            "OptimizationEndTime": "2026-11-30T14:00:00Z",
        },
    }


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("RUNS_TABLE", TABLE)
    monkeypatch.setenv("REPORT_S3_URI", f"s3://{REPORT_BUCKET}/reports")
    monkeypatch.setenv("PROMOTION_PARAMETER", PARAMETER)
    monkeypatch.setenv("SPEEDUP_THRESHOLD", "1.5")
    monkeypatch.setenv("PRETRAINED_HEAD_S3_URI", PRETRAINED)


# ------------------------------------------------------------------------------ pure decision
def test_reference_rows_give_the_pretrained_heads_speedup_per_concurrency():
    documents = [
        ("baseline.json", [bench(100.0, 1), bench(400.0, 8)]),
        ("trained_eagle.json", [bench(260.0, 1), bench(900.0, 8)]),
        ("pretrained_eagle.json", [bench(200.0, 1), bench(1000.0, 8)]),
    ]
    summary = CORE.summarize_results(documents, [name for name, _ in documents])
    assert summary.speedup == 2.25  # the trained head's lowest: at concurrency 8
    assert summary.reference_speedup == 2.0  # the pre-trained head's lowest: at concurrency 1
    assert summary.as_dict()["reference_speedup"] == 2.0


def test_no_reference_rows_leave_its_speedup_unknown():
    documents = [("baseline.json", bench(100.0)), ("trained_eagle.json", bench(250.0))]
    summary = CORE.summarize_results(documents, [n for n, _ in documents])
    assert summary.reference_speedup is None and summary.reference_throughput is None


@pytest.mark.parametrize(
    ("trained", "reference", "configured", "promote", "reason"),
    [
        (2.5, 2.2, None, True, "beats the served pretrained head: 2.5x > 2.2x (job results: pre-trained EAGLE rows)"),
        (
            2.0,
            2.2,
            None,
            False,
            "does not beat the served pretrained head: 2x <= 2.2x (job results: pre-trained EAGLE rows)",
        ),
        (2.2, 2.2, None, False, "2.2x <= 2.2x"),  # a tie keeps the served head
        (2.5, 2.2, 2.6, False, "2.5x <= 2.6x (eagle.pretrained_head_speedup)"),  # the higher figure is the bar
        (2.5, None, 2.0, True, "2.5x > 2x (eagle.pretrained_head_speedup)"),
        (2.5, None, None, False, "speedup is unknown"),
        (1.4, 1.1, None, False, "speedup below threshold: 1.4x < 1.5x"),  # the threshold still applies first
    ],
)
def test_promotion_beats_the_pretrained_head_not_only_the_base_model(trained, reference, configured, promote, reason):
    summary = CORE.ResultsSummary(status="parsed", speedup=trained, reference_speedup=reference)
    incumbent = CORE.pretrained_incumbent(PRETRAINED, summary, configured)
    decision = CORE.decide(
        status="COMPLETED",
        failure_reason=None,
        results=summary,
        threshold=1.5,
        results_uri="s3://o/results/",
        incumbent=incumbent,
    )
    assert decision.promote is promote
    assert reason in decision.reason


# ------------------------------------------------------------------------------ Stubber flow
def test_record_promotes_over_the_pretrained_head_with_stubbed_clients(env, lambda_context):
    handler = load_handler_module("eagle_job")
    event = run_event()
    s3, ddb, ssm = handler._s3(), handler._dynamodb(), handler._ssm()
    stubs = [Stubber(s3), Stubber(ddb), Stubber(ssm)]
    s3_stub, ddb_stub, ssm_stub = stubs
    prefix = "jobs/eagle-gpt-oss-run-1/"
    files = results(100.0, 250.0, 200.0)
    s3_stub.add_response(
        "list_objects_v2",
        {"KeyCount": 3, "Contents": [{"Key": f"{prefix}results/{name}", "Size": 100} for name in files]},
        {"Bucket": OUT_BUCKET, "Prefix": f"{prefix}results/"},
    )
    for name, body in files.items():
        s3_stub.add_response(
            "get_object",
            {"Body": io.BytesIO(json.dumps(body).encode())},
            {"Bucket": OUT_BUCKET, "Key": f"{prefix}results/{name}"},
        )
    s3_stub.add_response(
        "list_objects_v2",
        {"KeyCount": 1, "Contents": [{"Key": f"{prefix}draft/model.safetensors", "Size": 9}]},
        {"Bucket": OUT_BUCKET, "Prefix": prefix},
    )
    s3_stub.add_response(
        "list_objects_v2", {"KeyCount": 1}, {"Bucket": OUT_BUCKET, "Prefix": f"{prefix}draft/", "MaxKeys": 1}
    )
    ddb_stub.add_response(
        "get_item",
        {},
        {"TableName": TABLE, "ConsistentRead": True, "Key": {"model_name": {"S": "gpt-oss"}, "run_id": {"S": "run-1"}}},
    )
    none = {"Parameter": {"Name": PARAMETER, "Value": "none", "Type": "String"}}
    for _ in range(3):  # the incumbent, the head a rollback returns to, and the check before writing
        ssm_stub.add_response("get_parameter", none, {"Name": PARAMETER})
    put = {"Name": PARAMETER, "Value": event["draft_model_s3_uri"], "Type": "String", "Overwrite": True}
    assert_valid_request("ssm", "PutParameter", put)
    ssm_stub.add_response("put_parameter", {"Version": 2}, put)
    ddb_stub.add_response("put_item", {}, {"TableName": TABLE, "Item": ANY})
    s3_stub.add_response(
        "put_object",
        {},
        {"Bucket": REPORT_BUCKET, "Key": "reports/gpt-oss/run-1.json", "Body": ANY, "ContentType": "application/json"},
    )
    for stub in stubs:
        stub.activate()
    try:
        record = handler.record(event, lambda_context)
        for stub in stubs:
            stub.assert_no_pending_responses()
    finally:
        for stub in stubs:
            stub.deactivate()
    assert record["decision"] == "promoted"
    assert record["reason"] == (
        "speedup 2.5x >= threshold 1.5x and beats the served pretrained head: 2.5x > 2x "
        "(job results: pre-trained EAGLE rows)"
    )
    assert record["pretrained_speedup"] == 2.0
    assert record["comparison_basis"] == {
        "served_head": "pretrained",
        "s3_uri": PRETRAINED,
        "speedup": 2.0,
        "source": "job results: pre-trained EAGLE rows",
        "figures": [{"source": "job results: pre-trained EAGLE rows", "speedup": 2.0}],
        "note": None,
    }
    assert record["previous_head"] == "none"  # a rollback to none serves the pre-trained head again


# ------------------------------------------------------------------------------ moto variations
@pytest.fixture
def aws(env):
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=REPORT_BUCKET)
        s3.create_bucket(Bucket=OUT_BUCKET)
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        create_runs_table(ddb, TABLE)
        ssm = boto3.client("ssm", region_name="us-east-1")
        ssm.put_parameter(Name=PARAMETER, Value="none", Type="String")
        yield {"s3": s3, "ssm": ssm}


def put_outputs(s3, event: dict[str, Any], files: dict[str, Any]) -> None:
    prefix = event["output_s3_uri"].split(f"s3://{OUT_BUCKET}/", 1)[1]
    s3.put_object(Bucket=OUT_BUCKET, Key=f"{prefix}draft/model.safetensors", Body=b"weights")
    for name, body in files.items():
        s3.put_object(Bucket=OUT_BUCKET, Key=f"{prefix}results/{name}", Body=json.dumps(body).encode())


def head(aws) -> str:
    return aws["ssm"].get_parameter(Name=PARAMETER)["Parameter"]["Value"]


def test_a_head_slower_than_the_pretrained_one_is_not_promoted(aws, lambda_context):
    handler = load_handler_module("eagle_job")
    event = run_event()
    put_outputs(aws["s3"], event, results(100.0, 200.0, 220.0))  # 2.0x trained vs 2.2x pre-trained
    record = handler.record(event, lambda_context)
    assert record["decision"] == "not_promoted"
    assert "does not beat the served pretrained head: 2x <= 2.2x" in record["reason"]
    assert head(aws) == "none"  # the pre-trained head stays served


def test_without_any_pretrained_figure_no_head_replaces_it(aws, lambda_context):
    handler = load_handler_module("eagle_job")
    event = run_event()
    put_outputs(aws["s3"], event, results(100.0, 300.0, None))
    record = handler.record(event, lambda_context)
    assert record["decision"] == "not_promoted"
    assert "set eagle.pretrained_head_speedup to its measured speedup" in record["reason"]
    assert record["comparison_basis"]["served_head"] == "pretrained" and record["comparison_basis"]["speedup"] is None


def test_configured_pretrained_speedup_is_the_bar_without_reference_rows(aws, lambda_context, monkeypatch):
    monkeypatch.setenv("PRETRAINED_HEAD_SPEEDUP", "1.8")
    handler = load_handler_module("eagle_job")
    event = run_event()
    put_outputs(aws["s3"], event, results(100.0, 190.0, None))
    record = handler.record(event, lambda_context)
    assert record["decision"] == "promoted" and "1.9x > 1.8x (eagle.pretrained_head_speedup)" in record["reason"]
    assert head(aws) == event["draft_model_s3_uri"]
    # the next run must beat the promoted head (1.9x), no longer the pre-trained one
    second = run_event("run-2")
    second["job"]["OptimizationEndTime"] = "2026-12-07T14:00:00Z"
    put_outputs(aws["s3"], second, results(100.0, 185.0, 300.0))
    later = handler.record(second, lambda_context)
    assert later["decision"] == "not_promoted"
    assert later["comparison_basis"]["served_head"] == "promoted"
    assert "1.85x <= 1.9x (run record run-1)" in later["reason"]


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"PRETRAINED_HEAD_SPEEDUP": "fast"}, "PRETRAINED_HEAD_SPEEDUP 'fast' must be a measured speedup >= 1"),
        ({"PRETRAINED_HEAD_SPEEDUP": "0.5"}, "PRETRAINED_HEAD_SPEEDUP '0.5' must be a measured speedup >= 1"),
        ({"PRETRAINED_HEAD_S3_URI": "jumpstart/head/"}, "PRETRAINED_HEAD_S3_URI 'jumpstart/head/' must be the s3://"),
    ],
)
def test_bad_pretrained_settings_are_a_configuration_error(aws, lambda_context, monkeypatch, variables, message):
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    handler = load_handler_module("eagle_job")
    event = run_event()
    put_outputs(aws["s3"], event, results(100.0, 250.0, 200.0))
    with pytest.raises(handler.ConfigurationError, match=message):
        handler.record(event, lambda_context)
