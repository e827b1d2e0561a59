"""Hostile inputs against every Step Functions / EventBridge Scheduler task handler: one clear, named error.

The task handlers (``eagle_dataset`` plan / convert / finalize / validate_user_dataset / check, ``eagle_job``
start / record, ``eagle_job.benchmark`` start / check / serving, ``capacity_plan_expiry``) get the valid input
of their own tests with every field dropped or given each wrong JSON type (``support.hostile``), and inputs
that are no JSON object. For each:

* a dropped required field, a ``null`` for a required one, or a value of another JSON type must be refused
  before any AWS call with the handler's own named error (``InvalidEventError``, or another documented error
  of the handler) whose message names the field;
* any other change (a string for a string, an optional field dropped) may be accepted, when the handler goes
  on to its first AWS call (a ``Stubber`` with nothing queued answers ``UnStubbedResponseError``), or refused
  the same way.

Timestamps may be numbers (epoch seconds, as some SDK integrations pass them); ``true`` / ``false`` is never a
count. Handlers that do not read their input (the scheduled checks) behave the same for every input. Every
wrong outcome is listed before the test fails; one loaded module per handler serves the whole test module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import FakeLambdaContext, load_handler_module
from support import hostile
from support.hostile import DROP, outcome, stub_clients

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
CONTEXT = FakeLambdaContext()
HEAD = "s3://eagle-artifacts/jobs/eagle-qwen3-32b-abc/draft/"
ENV = {
    "ROLE_ARN": "arn:aws:iam::123456789012:role/eagle-job",
    "OUTPUT_S3_URI": "s3://eagle-output/jobs",
    "MAX_RUNTIME_SECONDS": "432000",
    "RUNS_TABLE": "EagleRuns",
    "REPORT_S3_URI": "s3://eagle-reports/eagle",
    "PROMOTION_PARAMETER": "/sagemaker-llm/eagle/qwen3-32b/draft-head",
    "SPEEDUP_THRESHOLD": "1.5",
    "ENDPOINT_NAME": "chat-endpoint",
    "COMPONENT_NAME": "qwen3-32b",
    "WORKLOAD_CONFIG_NAME": "eagle-qwen3-32b-w",
    "SERVING_MODEL_PREFIX": "qwen3-32b-eagle",
    "MODEL_NAME": "qwen3-32b",
    "MAX_SECONDS": "14400",
    "SLOWDOWN_TOLERANCE": "0.05",
    "STACK_NAME": "Platform",
    "DEPLOY_CHECKS": "3",
    "TRAINING_PLAN_NAMES": "llm-p5e-2026q1",
    "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:eagle",
    "WATERMARK_PARAMETER": "/eagle/watermark",
    "CAPTURE_BUCKET": "capture-bucket",
}


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    for name in ("KMS_KEY_ARN", "SUBNET_IDS", "SECURITY_GROUP_IDS", "TRAINING_PLAN_ARNS", "STATUS_PARAMETERS"):
        monkeypatch.delenv(name, raising=False)


_MODULES: dict[tuple[str, str], Any] = {}


def handler_module(folder: str, module: str = "index") -> Any:
    """One loaded module per handler for this test module, every client behind a Stubber with nothing queued."""
    if (folder, module) not in _MODULES:
        _MODULES[folder, module] = stub_clients(load_handler_module(folder, module))
    return _MODULES[folder, module]


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object", type(None): "null"}[type(value)]


def check_task(
    handler: Callable[[Any, Any], Any],
    errors: tuple[type[Exception], ...],
    valid: dict[str, Any],
    *,
    optional: set[tuple[str | int, ...]] = frozenset(),
    free: tuple[str, ...] = (),
    timestamps: set[tuple[str | int, ...]] = frozenset(),
) -> int:
    """Send every hostile input; fail listing every wrong outcome. ``optional``: fields that may be dropped or
    null; ``free``: free-form fields whose content is the handler's to judge; ``timestamps``: date-time fields."""
    failures, tried = [], 0
    for event in hostile.NOT_OBJECTS:
        kind, found = outcome(lambda event=event: handler(event, CONTEXT))
        tried += 1
        if not (kind == "raised" and isinstance(found, errors) and "event" in str(found)):
            failures.append(f"input {event!r}: {kind} {type(found).__name__}: {found}"[:300])
    for mutation in hostile.mutations(valid):
        kind, found = outcome(lambda mutation=mutation: handler(mutation.event, CONTEXT))
        tried += 1
        path, value = mutation.path, mutation.replacement
        original: Any = valid
        for key in path:
            original = original[key]
        if path[:1] and path[0] in free:
            must_refuse = False
        elif value is DROP or value is None:
            must_refuse = path not in optional
        else:
            must_refuse = _kind(value) != _kind(original) and not (path in timestamps and _kind(value) == "number")
        if kind == "raised":
            if not isinstance(found, errors):
                failures.append(f"{mutation}: {type(found).__name__} (not a named error): {found}"[:400])
            elif mutation.field not in str(found) or len(str(found)) > 4000:
                failures.append(f"{mutation}: the message does not name {mutation.field}: {found}"[:400])
        elif must_refuse:
            failures.append(f"{mutation}: accepted ({kind}), should be refused before any AWS call")
    assert not failures, hostile.report(failures, tried)
    return tried


# ------------------------------------------------------------------ eagle_dataset
PARAM = "/sagemaker-llm/eagle/watermark"
PLAN = {
    "capture_bucket": "capture-bucket",
    "capture_prefix": "datacapture/",
    "output_bucket": "out-bucket",
    "output_prefix": "eagle/datasets",
    "run_id": "run-1",
    "watermark_parameter": PARAM,
    "settle_seconds": 60,
    "max_objects": 10,
}
CONVERT = {
    "Items": [{"key": "datacapture/ep/AllTraffic/2026/11/30/09/05-00-001-aaa.jsonl"}],
    "BatchInput": {
        "capture_bucket": "capture-bucket",
        "capture_prefix": "datacapture/",
        "output_bucket": "out-bucket",
        "output_prefix": "p",
        "run_id": "r1",
        "source": "capture",
    },
}
FINALIZE = {
    "plan": {
        "output_bucket": "out-bucket",
        "output_prefix": "",
        "run_id": "r",
        "watermark_parameter": PARAM,
        "object_count": 0,
        "watermark_value": "a",
        "watermark_previous_value": "b",
        "watermark_stored_value": "b",
        "new_watermark": "c",
        "capture_bucket": "capture-bucket",
        "capture_prefix": "d/",
    },
    "results": {"Bucket": "out-bucket", "Key": "results/manifest.json"},
    "target_component": "base",
}
VALIDATE = {"s3_uri": "s3://data-bucket/datasets/x/", "s3_data_type": "S3Prefix"}


@pytest.mark.parametrize(
    ("entry", "valid", "optional"),
    [
        ("plan", PLAN, {("capture_prefix",), ("output_prefix",), ("settle_seconds",), ("max_objects",)}),
        (
            "convert",
            CONVERT,
            {("BatchInput", "capture_prefix"), ("BatchInput", "output_prefix"), ("BatchInput", "source")},
        ),
        (
            "finalize",
            FINALIZE,
            {
                ("plan", "output_prefix"),
                ("plan", "watermark_value"),
                ("plan", "watermark_previous_value"),
                ("plan", "watermark_stored_value"),
                ("plan", "new_watermark"),
                ("plan", "capture_bucket"),
                ("plan", "capture_prefix"),
                ("results",),
                ("target_component",),
            },
        ),
        ("validate_user_dataset", VALIDATE, {("s3_data_type",)}),
    ],
)
def test_eagle_dataset_steps_refuse_every_malformed_input_by_name(entry, valid, optional):
    module = handler_module("eagle_dataset")
    tried = check_task(getattr(module, entry), (module.InvalidEventError,), valid, optional=optional)
    assert tried > 30


@pytest.mark.parametrize(
    ("entry", "event", "message"),
    [
        (
            "plan",
            {**PLAN, "max_objects": True},
            "PlanEvent event is invalid: max_objects: got True; allowed: a whole "
            "number (true and false are not numbers)",
        ),
        (
            "finalize",
            {**FINALIZE, "plan": {**FINALIZE["plan"], "output_prefix": "p" * 513}},
            "FinalizeEvent event is "
            "invalid: plan.output_prefix: got '" + "p" * 76 + "...; allowed: at most 512 characters",
        ),
        (
            "finalize",
            {**FINALIZE, "results": {"Bucket": "out-bucket", "Key": "k" * 1025}},
            "FinalizeEvent event is invalid: results.Key: got '" + "k" * 76 + "...; allowed: at most 1024 characters",
        ),
    ],
    ids=["count-true", "prefix-too-long", "manifest-key-too-long"],
)
def test_eagle_dataset_input_errors_are_exact(entry, event, message):
    """Before: ``max_objects: true`` planned one object; a plan output_prefix or a results key longer than S3
    allows was only refused by S3 after the batch results were read."""
    module = handler_module("eagle_dataset")
    with pytest.raises(module.InvalidEventError) as raised:
        getattr(module, entry)(event, CONTEXT)
    assert str(raised.value) == message


def _with_output_prefix(entry: str, prefix: str) -> dict[str, Any]:
    """The valid event of ``entry`` (plan, convert, finalize) with ``prefix`` as its output_prefix."""
    if entry == "plan":
        return {**PLAN, "output_prefix": prefix}
    if entry == "convert":
        return {**CONVERT, "BatchInput": {**CONVERT["BatchInput"], "output_prefix": prefix}}
    return {**FINALIZE, "plan": {**FINALIZE["plan"], "output_prefix": prefix}}


_PREFIX_STEPS = ("plan", "convert", "finalize")


@pytest.mark.parametrize("entry", _PREFIX_STEPS)
@pytest.mark.parametrize(
    ("prefix", "match"),
    [
        ("../../x", r"output_prefix: got '\.\./\.\./x', which has a '\.\.' segment"),
        ("eagle/../../x", r"output_prefix: got 'eagle/\.\./\.\./x', which has a '\.\.' segment"),
        ("eagle/./x", r"output_prefix: got 'eagle/\./x', which has a '\.' segment"),
        ("/eagle/datasets", r"output_prefix: got '/eagle/datasets', which starts with '/'"),
        ("eagle//datasets", r"output_prefix: got 'eagle//datasets', which has an empty segment"),
        ("eagle/\x00/datasets", r"output_prefix: got .*, which holds the control character '\\x00'"),
        ("eagle/\n", r"output_prefix: got .*, which holds the control character '\\n'"),
        ("eagle/\ud800", r"output_prefix: got 'eagle/\\ud800'; allowed: a valid string"),  # pydantic's own check
        ("\u00e9" * 257, r"output_prefix: got .*, which is 514 bytes as UTF-8; allowed: at most 512"),
    ],
    ids=[
        "dot-dot",
        "inner-dot-dot",
        "dot",
        "leading-slash",
        "empty-segment",
        "nul",
        "newline",
        "surrogate",
        "over-key-length",
    ],
)
def test_eagle_dataset_refuses_an_output_prefix_keys_cannot_be_written_under(entry, prefix, match):
    """Before: ``output_prefix: '../../x'`` was written as given, keys ``../../x/<run id>/...``; now each such
    prefix is refused by name, before any S3 call (the Stubber has nothing queued)."""
    module = handler_module("eagle_dataset")
    with pytest.raises(module.InvalidEventError, match=match):
        getattr(module, entry)(_with_output_prefix(entry, prefix), CONTEXT)


@pytest.mark.parametrize("entry", _PREFIX_STEPS)
@pytest.mark.parametrize(
    "prefix", ["eagle/datasets", "eagle/datasets/", "datasets", "", "run.v2/x-y_z=1", "\u00e9" * 256]
)
def test_eagle_dataset_keeps_valid_output_prefixes(entry, prefix):
    """The prefixes the library and its users write (``datasets``, ``eagle/datasets``, the bucket's top level)
    go on to the first AWS call."""
    module = handler_module("eagle_dataset")
    assert outcome(lambda: getattr(module, entry)(_with_output_prefix(entry, prefix), CONTEXT))[0] == "aws"


# ------------------------------------------------------------------ eagle_job start / record
START = {
    "model_name": "qwen3-32b",
    "model_s3_uri": "s3://eagle-models/qwen3-32b/",
    "architecture": "Qwen3ForCausalLM",
    "deployment_instance_type": "ml.p5e.48xlarge",
    "max_instance_count": 1,
    "training_data": {"s3_uri": "s3://eagle-data/datasets/run-1/", "s3_data_type": "S3Prefix"},
    "run_id": "run-2026-11-30",
    "dataset_summary": {"records": 1200, "format": "openai-chat"},
    "accept_eula": False,
    "watermark": {
        "parameter": "/sagemaker-llm/eagle/qwen3-32b/watermark",
        "stored": '{"v":1,"after":{}}',
        "previous": '{"v":1,"after":{}}',
        "value": '{"v":1,"after":{"e/":"2026/a"}}',
    },
}
_JOB = "eagle-qwen3-32b-run-1"
_OUT = f"s3://eagle-output/jobs/{_JOB}/"
RECORD = {
    **START,
    "job_name": _JOB,
    "job_arn": f"arn:aws:sagemaker:us-east-1:123456789012:optimization-job/{_JOB}",
    "eagle_version": "eagle3",
    "output_s3_uri": _OUT,
    "started_at": "2026-11-30T08:00:00Z",
    "draft_model_s3_uri": f"{_OUT}draft/",
    "results_s3_uri": f"{_OUT}results/",
    "job": {
        "OptimizationJobArn": "arn:aws:sagemaker:us-east-1:123456789012:optimization-job/x",
        "OptimizationJobStatus": "COMPLETED",
        "FailureReason": "none",
        "CreationTime": "2026-11-30T08:00:00Z",
        "OptimizationStartTime": "2026-11-30T08:02:00Z",
        "OptimizationEndTime": "2026-11-30T14:00:00Z",
        "LastModifiedTime": "2026-11-30T14:00:00Z",
    },
}
_START_OPTIONAL = {
    ("max_instance_count",),
    ("training_data", "s3_data_type"),
    ("dataset_summary",),
    ("accept_eula",),
    ("watermark",),
    ("watermark", "stored"),
    ("watermark", "previous"),
}
_TIMES = {
    ("job", name) for name in ("CreationTime", "OptimizationStartTime", "OptimizationEndTime", "LastModifiedTime")
}


@pytest.mark.parametrize(
    ("entry", "valid", "optional"),
    [
        ("start", START, _START_OPTIONAL),
        ("record", RECORD, _START_OPTIONAL | _TIMES | {("job", "OptimizationJobArn"), ("job", "FailureReason")}),
    ],
)
def test_eagle_job_steps_refuse_every_malformed_input_by_name(entry, valid, optional):
    module = handler_module("eagle_job")
    named = module.InvalidEventError.__mro__[1]  # EagleJobError: every error the job functions raise by name
    tried = check_task(
        getattr(module, entry), (named,), valid, optional=optional, free=("dataset_summary",), timestamps=_TIMES
    )
    assert tried > 100


@pytest.mark.parametrize(
    ("entry", "event", "message"),
    [
        (
            "start",
            {**START, "max_instance_count": True},
            "invalid StartEvent event: max_instance_count: got True; allowed: "
            "a whole number (true and false are not numbers)",
        ),
        (
            "record",
            {**RECORD, "job_name": ""},
            "invalid RecordEvent event: job_name: got ''; allowed: at least 1 character",
        ),
    ],
    ids=["count-true", "no-job-name"],
)
def test_eagle_job_input_errors_are_exact(entry, event, message):
    """Before: ``max_instance_count: true`` started a job on one instance; record read S3 and DynamoDB for a
    run whose job has no name."""
    module = handler_module("eagle_job")
    with pytest.raises(module.InvalidEventError) as raised:
        getattr(module, entry)(event, CONTEXT)
    assert str(raised.value) == message


def test_a_long_job_status_is_shown_cut():
    module = handler_module("eagle_job")
    with pytest.raises(module.JobNotTerminalError) as raised:
        module.record({**RECORD, "job": {**RECORD["job"], "OptimizationJobStatus": hostile.LONG}}, CONTEXT)
    assert str(raised.value).startswith(
        f"optimization job '{_JOB}' has job.OptimizationJobStatus '" + "x" * 76 + "...; record only after it is one of"
    )


# ------------------------------------------------------------------ eagle_job benchmark start / check / serving
_BENCH_JOB = "eagle-qwen3-32b-a-0123456789ab"
BENCH_CHECK = {
    "phase": "after",
    "run_id": "run-1",
    "head": HEAD,
    "served_head": HEAD,
    "skipped": False,
    "job_name": _BENCH_JOB,
    "job_arn": f"arn:aws:sagemaker:us-east-1:123456789012:ai-benchmark-job/{_BENCH_JOB}",
    "output_s3_uri": f"s3://eagle-artifacts/benchmarks/{_BENCH_JOB}/",
    "started_at": "2026-12-01T12:00:00+00:00",
    "stop_requested": True,
}


@pytest.mark.parametrize(
    ("entry", "valid", "optional"),
    [
        ("start", {"phase": "before", "run_id": "run-1", "head": HEAD}, set()),
        ("check", BENCH_CHECK, {("served_head",), ("skipped",), ("job_arn",), ("stop_requested",)}),
        ("serving", {"head": HEAD, "checks": 1}, {("checks",)}),
    ],
)
def test_eagle_benchmark_steps_refuse_every_malformed_input_by_name(entry, valid, optional):
    module = handler_module("eagle_job", "benchmark")
    tried = check_task(
        getattr(module, entry),
        (module.InvalidEventError,),
        valid,
        optional=optional,
        free=("stop_requested",),
        timestamps={("started_at",)},
    )
    assert tried > 30


def test_eagle_benchmark_input_errors_say_field_value_and_what_is_allowed():
    """Before: ``bad ServingEvent: checks: Input should be a valid integer`` (no value), and ``checks: true`` was
    counted as one check."""
    module = handler_module("eagle_job", "benchmark")
    with pytest.raises(module.InvalidEventError) as raised:
        module.serving({"head": "/local/head", "checks": True}, CONTEXT)
    assert str(raised.value) == (
        "bad ServingEvent: head: got '/local/head'; allowed: pattern '^s3://[^/]+/.*$'; checks: got True; allowed: "
        "a whole number (true and false are not numbers)"
    )


# ------------------------------------------------------------------ scheduled checks: the input is not read
@pytest.mark.parametrize(("folder", "entry"), [("capacity_plan_expiry", "handler"), ("eagle_dataset", "check")])
def test_scheduled_checks_do_the_same_whatever_the_input(folder, entry):
    """An EventBridge Scheduler target's input is not read: every hostile input gets exactly what the scheduled
    event gets (here: the first AWS call, answered by the Stubber)."""
    module = handler_module(folder)
    scheduled = {
        "version": "0",
        "id": "e1",
        "detail-type": "Scheduled Event",
        "source": "aws.scheduler",
        "time": "2026-12-01T00:00:00Z",
        "resources": [],
        "detail": {},
    }

    def seen(event: Any) -> str:
        kind, found = outcome(lambda: getattr(module, entry)(event, CONTEXT))
        return f"{kind} {type(found).__name__}"

    baseline = seen(scheduled)
    assert baseline in ("aws NoneType", "raised CapacityPlanExpiryCheckError")
    inputs = [*hostile.NOT_OBJECTS, *(m.event for m in hostile.mutations(scheduled))]
    assert {seen(event) for event in inputs} == {baseline}
