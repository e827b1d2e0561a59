"""The EAGLE loop trains each captured record exactly once, whichever state fails or where a run is aborted.

Runs are driven through the rendered state machine's capture path (``PlanDataset`` -> ``ConvertCaptures`` ->
``FinalizeDataset`` -> ``EnoughNewRecords?`` -> ``SummarizeDataset`` -> ``StartJob``), each Lambda task's
``Parameters`` resolved from the run's state as Step Functions does, on the real handlers with moto S3/SSM and a
SageMaker fake whose requests are checked against botocore's model. A state fails (after its retries) or the
execution is aborted after any state; then a clean run follows. Over all runs, every record of the settled
capture objects is in the training data of exactly one created job, and the watermark ends after the last object.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError
from conftest import FakeLambdaContext, load_handler_module
from moto import mock_aws
from sagemaker_llm_cdk.settings.eagle import EagleSettings
from support.aws_model import assert_valid_request
from support.eagle import build

pytestmark = [pytest.mark.synth, pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")]
CAPTURE, OUT, PARAM = "capture-bucket", "out-bucket", "/sagemaker-llm/eagle/qwen3-32b/watermark"
EP = "data-capture/chat/AllTraffic"
CONTEXT = FakeLambdaContext()


class Aborted(Exception):
    """The execution was aborted (StopExecution) after a state: nothing after it runs."""


class SageMaker:
    """CreateOptimizationJob / DescribeOptimizationJob: requests checked against botocore's model; jobs kept."""

    def __init__(self) -> None:
        self.jobs: dict[str, dict[str, Any]] = {}

    def create_optimization_job(self, **request: Any) -> dict[str, Any]:
        tags = request.pop("Tags")
        assert_valid_request("sagemaker", "CreateOptimizationJob", request)
        name = request["OptimizationJobName"]
        if name in self.jobs:
            raise ClientError(
                {"Error": {"Code": "ResourceInUse", "Message": f"job {name} already exists"}}, "CreateOptimizationJob"
            )
        self.jobs[name] = {**request, "Tags": tags}
        return {"OptimizationJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:optimization-job/{name}"}

    def describe_optimization_job(self, **request: Any) -> dict[str, Any]:
        assert_valid_request("sagemaker", "DescribeOptimizationJob", request)
        job = self.jobs.get(request["OptimizationJobName"])
        if job is None:
            raise ClientError(
                {"Error": {"Code": "ResourceNotFound", "Message": "not found"}}, "DescribeOptimizationJob"
            )
        return {
            "OptimizationJobArn": "arn:aws:sagemaker:us-east-1:123456789012:optimization-job/x",
            "ModelSource": job["ModelSource"],
            "CreationTime": datetime(2026, 11, 30, 12, tzinfo=UTC),
        }

    @property
    def meta(self) -> Any:  # _check_instance_type reads the model's enum
        import boto3

        return boto3.client("sagemaker", region_name="us-east-1").meta


@pytest.fixture(scope="module")
def machine() -> dict[str, Any]:
    return build(settings=EagleSettings(dataset={"min_new_records": 1})).definition


def _value(state: dict[str, Any], path: str) -> Any:
    assert path.startswith("$."), path
    value: Any = state
    for key in path[2:].split("."):
        value = value[key]
    return value


def _parameters(template: Any, state: dict[str, Any]) -> Any:
    """A state's ``Parameters``: ``key.$`` paths resolved from the state input (the ones these states use)."""
    if isinstance(template, dict):
        return {
            (k[:-2] if k.endswith(".$") else k): (_value(state, v) if k.endswith(".$") else _parameters(v, state))
            for k, v in template.items()
        }
    return template


def _put(state: dict[str, Any], path: str, value: Any) -> None:
    keys = path[2:].split(".")
    for key in keys[:-1]:
        state = state.setdefault(key, {})
    state[keys[-1]] = value


class Loop:
    """The capture path of the rendered definition on the real handlers."""

    def __init__(self, machine: dict[str, Any], s3: Any, sagemaker: SageMaker, monkeypatch: pytest.MonkeyPatch) -> None:
        self.states, self.s3 = machine["States"], s3
        self.dataset = load_handler_module("eagle_dataset")
        self.job = load_handler_module("eagle_job")
        monkeypatch.setattr(self.job, "_sagemaker", lambda: sagemaker)
        monkeypatch.setenv("UNNAMED_RECORDS_COMPONENT", "qwen3-32b")
        monkeypatch.setenv("SETTLE_SECONDS", "0")
        for name, value in {
            "ROLE_ARN": "arn:aws:iam::123456789012:role/job",
            "OUTPUT_S3_URI": f"s3://{OUT}/jobs",
            "MAX_RUNTIME_SECONDS": "3600",
        }.items():
            monkeypatch.setenv(name, value)

    def task(self, name: str, state: dict[str, Any], handler: Any, fail: str | None) -> None:
        definition = self.states[name]
        if fail == name:
            raise RuntimeError(f"{name} failed after its retries")  # the Catch: NotifyFailure, RunFailed
        event = _parameters(definition["Parameters"], state)
        event = json.loads(json.dumps(event))  # what Step Functions passes: JSON
        _put(state, definition["ResultPath"], handler(event, CONTEXT))

    def run(
        self, run_id: str, *, fail: str | None = None, abort_after: str | None = None, crash_in_start: bool = False
    ) -> str:
        """One execution; returns how it ended (``Done``, ``NotEnoughRecords``, ``failed``, ``aborted``)."""
        state: dict[str, Any] = {"run": {"run_id": run_id}}
        steps = ["PlanDataset", "ConvertCaptures", "FinalizeDataset", "SummarizeDataset", "StartJob"]
        assert self.states["Prepare"]["Next"] == "PlanDataset"
        assert self.states["ConvertCaptures"]["Next"] == "FinalizeDataset"
        assert self.states["FinalizeDataset"]["Next"] == "EnoughNewRecords?"
        assert self.states["SummarizeDataset"]["Next"] == "StartJob"
        try:
            for step in steps:
                if step == "PlanDataset":
                    # the rendered Refs (buckets, endpoint name, parameter name) become this test's names
                    names = {
                        "capture_bucket": CAPTURE,
                        "capture_prefix": "data-capture/",
                        "output_bucket": OUT,
                        "watermark_parameter": PARAM,
                    }
                    self.task(step, state, lambda e, c, names=names: self.dataset.plan({**e, **names}, c), fail)
                    if state["plan"]["object_count"] == 0:
                        return "NoNewCaptures"
                elif step == "ConvertCaptures":
                    if fail == step:
                        raise RuntimeError("the Distributed Map failed")
                    state["map"] = {"ResultWriterDetails": self._map(state["plan"])}
                elif step == "FinalizeDataset":
                    self.task(step, state, self.dataset.finalize, fail)
                    choice = self.states["EnoughNewRecords?"]["Choices"][0]
                    assert choice["Next"] == "NotEnoughRecords"
                    if state["dataset"]["empty"] or state["dataset"]["records"] < 1:
                        return "NotEnoughRecords"
                elif step == "SummarizeDataset":
                    state["dataset"]["summary"] = _parameters(self.states[step]["Parameters"], state)
                else:
                    handler = self.job.start
                    if crash_in_start:  # the invocation dies after its claim, before CreateOptimizationJob

                        def handler(event: Any, context: Any) -> Any:
                            original = self.job._create_job
                            self.job._create_job = lambda *a: (_ for _ in ()).throw(RuntimeError("Sandbox.Timedout"))
                            try:
                                return self.job.start(event, context)
                            finally:
                                self.job._create_job = original

                    self.task(step, state, handler, fail)
                if abort_after == step:
                    raise Aborted(step)
        except Aborted:
            return "aborted"
        except Exception as error:  # noqa: BLE001 - the state's Catch: the run fails
            self.error = error
            return "failed"
        return "Done"

    def _map(self, plan: dict[str, Any]) -> dict[str, str]:
        """The Distributed Map: every planned object to convert (batches of 25), ResultWriter files to S3."""
        items = json.loads(self.s3.get_object(Bucket=OUT, Key=plan["manifest_key"])["Body"].read())
        entries = []
        for start in range(0, len(items), 25):
            batch = {
                "Items": items[start : start + 25],
                "BatchInput": {
                    "capture_bucket": CAPTURE,
                    "capture_prefix": "data-capture/",
                    "output_bucket": OUT,
                    "output_prefix": "datasets",
                    "run_id": plan["run_id"],
                    "source": "capture",
                },
            }
            entries.append({"Output": json.dumps(self.dataset.convert(batch, CONTEXT)), "Status": "SUCCEEDED"})
        prefix = f"map-results/{plan['run_id']}"
        self.s3.put_object(Bucket=OUT, Key=f"{prefix}/SUCCEEDED_0.json", Body=json.dumps(entries).encode())
        manifest = {
            "DestinationBucket": OUT,
            "ResultFiles": {"FAILED": [], "PENDING": [], "SUCCEEDED": [{"Key": f"{prefix}/SUCCEEDED_0.json"}]},
        }
        self.s3.put_object(Bucket=OUT, Key=f"{prefix}/manifest.json", Body=json.dumps(manifest).encode())
        return {"Bucket": OUT, "Key": f"{prefix}/manifest.json"}


def _capture(s3: Any, minute: int, prompt: str) -> None:
    line = {
        "captureData": {
            "endpointInput": {
                "observedContentType": "application/json",
                "mode": "INPUT",
                "encoding": "JSON",
                "data": json.dumps({"messages": [{"role": "user", "content": prompt}]}),
            },
            "endpointOutput": {
                "observedContentType": "application/json",
                "mode": "OUTPUT",
                "encoding": "JSON",
                "data": json.dumps({"choices": [{"message": {"role": "assistant", "content": "ok"}}]}),
            },
        },
        "eventMetadata": {"eventId": prompt, "inferenceTime": "2026-11-30T10:00:00Z"},
        "eventVersion": "0",
    }
    s3.put_object(
        Bucket=CAPTURE,
        Key=f"{EP}/2026/11/30/10/{minute:02d}-00-000-{prompt}.jsonl",
        Body=json.dumps(line).encode() + b"\n",
    )


def _trained(s3: Any, sagemaker: SageMaker) -> list[str]:
    """Every prompt in the training data of every created job (one entry per time it was trained on)."""
    prompts = []
    for job in sagemaker.jobs.values():
        uri = job["OptimizationConfigs"][0]["ModelSpeculativeDecodingConfig"]["TrainingDataSource"]["S3Uri"]
        bucket, prefix = uri[5:].split("/", 1)
        for item in s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", []):
            for line in s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read().splitlines():
                prompts.append(json.loads(line)["messages"][0]["content"])
    return sorted(prompts)


FAILURES = [
    ("PlanDataset", {"fail": "PlanDataset"}),
    ("ConvertCaptures", {"fail": "ConvertCaptures"}),
    ("FinalizeDataset", {"fail": "FinalizeDataset"}),
    ("StartJob", {"fail": "StartJob"}),
    ("StartJob-crash-after-claim", {"crash_in_start": True}),
    *[
        (f"aborted-after-{step}", {"abort_after": step})
        for step in ("PlanDataset", "ConvertCaptures", "FinalizeDataset", "SummarizeDataset", "StartJob")
    ],
]


@pytest.mark.parametrize(("case", "how"), FAILURES, ids=[case for case, _ in FAILURES])
def test_a_failed_or_aborted_run_leaves_every_record_to_be_trained_exactly_once(machine, monkeypatch, case, how):
    with mock_aws():
        import boto3

        s3 = boto3.client("s3", region_name="us-east-1")
        ssm = boto3.client("ssm", region_name="us-east-1")
        for bucket in (CAPTURE, OUT):
            s3.create_bucket(Bucket=bucket)
        ssm.put_parameter(Name=PARAM, Value='{"v":1,"after":{}}', Type="String")
        sagemaker = SageMaker()
        loop = Loop(machine, s3, sagemaker, monkeypatch)
        for minute, prompt in enumerate(["a", "b", "c"]):
            _capture(s3, minute, prompt)

        first = loop.run("run-1", **how)
        assert first == ("aborted" if "abort_after" in how else "failed")
        after_first = ssm.get_parameter(Name=PARAM)["Parameter"]["Value"]
        if sagemaker.jobs:  # the job exists: the watermark moved with it
            assert json.loads(after_first)["after"] == {f"{EP}/": "2026/11/30/10/02-00-000-c.jsonl"}
        else:  # no job: the watermark is where it was (or the start's claim, read as where it was)
            assert loop.dataset._decode_watermark(after_first) == ({}, None)

        for minute, prompt in enumerate(["d", "e"], start=3):
            _capture(s3, minute, prompt)
        if how.get("crash_in_start"):  # the claim is settled once no invocation can still hold it
            monkeypatch.setattr(loop.job.job_watermark, "CLAIM_EXPIRY_SECONDS", -1)
        outcomes = [loop.run("run-2")]
        if outcomes[0] == "failed":  # a stale claim whose job existed: committed for it, then the next run trains
            outcomes.append(loop.run("run-3"))
        assert outcomes[-1] == "Done"

        assert _trained(s3, sagemaker) == ["a", "b", "c", "d", "e"]
        final = json.loads(ssm.get_parameter(Name=PARAM)["Parameter"]["Value"])
        assert final == {"v": 1, "after": {f"{EP}/": "2026/11/30/10/04-00-000-e.jsonl"}}
        assert loop.run("run-9") == "NoNewCaptures"  # nothing is left to train twice


def test_a_retried_start_after_its_job_and_commit_trains_nothing_again(machine, monkeypatch):
    """Step Functions retries StartJob when the invocation's answer is lost (Lambda.ServiceException): the retry
    finds the job and the moved watermark and starts no second job."""
    with mock_aws():
        import boto3

        s3 = boto3.client("s3", region_name="us-east-1")
        boto3.client("ssm", region_name="us-east-1").put_parameter(
            Name=PARAM, Value='{"v":1,"after":{}}', Type="String"
        )
        for bucket in (CAPTURE, OUT):
            s3.create_bucket(Bucket=bucket)
        sagemaker = SageMaker()
        loop = Loop(machine, s3, sagemaker, monkeypatch)
        _capture(s3, 0, "a")
        calls = []
        original = loop.job.start

        def answer_lost_once(event: Any, context: Any) -> Any:
            calls.append(1)
            out = original(event, context)
            if len(calls) == 1:
                return original(json.loads(json.dumps(event)), context)  # the retry, same input
            return out

        monkeypatch.setattr(loop.job, "start", answer_lost_once)
        assert loop.run("run-1") == "Done", getattr(loop, "error", None)
        assert len(sagemaker.jobs) == 1 and _trained(s3, sagemaker) == ["a"]
