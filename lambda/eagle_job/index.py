"""Start a SageMaker EAGLE optimization job (``start``) and record/promote its results (``record``).

Both handlers are steps of a Step Functions state machine: build dataset -> ``start`` -> Wait +
``DescribeOptimizationJob`` (SDK integration) until terminal -> ``record``. Pure logic lives in
``eagle_job_core.py``; this module does the AWS I/O.

``start(event, context)``
  Environment:
    ROLE_ARN             IAM role the optimization job assumes (passed with iam:PassRole).
    OUTPUT_S3_URI        s3:// base prefix; each job writes to ``<OUTPUT_S3_URI>/<job name>/``.
    MAX_RUNTIME_SECONDS  StoppingCondition.MaxRuntimeInSeconds (whole seconds >= 1).
    KMS_KEY_ARN          optional; OutputConfig.KmsKeyId.
    SUBNET_IDS, SECURITY_GROUP_IDS  optional, comma-separated, set together; VpcConfig.
    TRAINING_PLAN_ARNS   optional, comma-separated (the API accepts at most one); TrainingPlanArns.
  Event (``StartEvent``)::
    {"model_name": "qwen3-32b", "model_s3_uri": "s3://bucket/models/qwen3-32b/",
     "architecture": "Qwen3ForCausalLM", "deployment_instance_type": "ml.p5e.48xlarge",
     "max_instance_count": 1,
     "training_data": {"s3_uri": "s3://bucket/eagle/data/run-1/", "s3_data_type": "S3Prefix"},
     "run_id": "run-1", "dataset_summary": {"records": 1200, ...},
     "watermark": {"parameter": "/sagemaker-llm/eagle/qwen3-32b/watermark", "stored": "<value plan read>",
                   "previous": "<window start>", "value": "<window end>"}}   # optional: captured traffic only
    ``dataset_summary.records == 0`` or ``dataset_summary.empty == true`` -> EmptyDatasetError.
  Returns (``StartOutput``; identical keys for a fresh job and for a retry that found the job)::
    {"job_name", "job_arn", "eagle_version": "eagle3"|"eagle2", "output_s3_uri", "started_at",
     "draft_model_s3_uri", "results_s3_uri", "watermark_committed", plus the event's model_name, run_id,
     model_s3_uri, architecture, deployment_instance_type, max_instance_count, training_data, dataset_summary,
     watermark}

  The capture watermark moves with the job, in this one invocation (``watermark`` is FinalizeDataset's
  ``watermark_commit``; nothing before this step writes the parameter):

  1. claim: the parameter must still hold ``stored`` (else WatermarkConflictError, nothing created); it is
     set to a claim ``{"v":1,"claim":{"job","run_id","claimed_at","previous","value"}}`` naming the job;
  2. CreateOptimizationJob (or the job a retry finds);
  3. commit: the parameter becomes ``value``. A failed create puts ``stored`` back before the error is raised.

  A Step Functions abort does not stop a running invocation, so an aborted run either started its job and moved
  the watermark, or did neither. A claim left by an invocation that died between 1 and 3 is settled by the next
  run's start once it is older than any invocation (``CLAIM_EXPIRY_SECONDS``): it commits the claim's ``value``
  when the claimed job exists (and fails with WatermarkConflictError: that run planned from ``previous``, so it
  trains nothing; the run after it starts at ``value``), and claims over it when the job does not. The dataset
  builder plans a claimed parameter from the claim's ``previous``. Retries are idempotent: an attempt finds its
  own claim, or the value it committed with its job.

``record(event, context)``
  Environment:
    RUNS_TABLE           DynamoDB table, partition key ``model_name`` (S), sort key ``run_id`` (S).
    REPORT_S3_URI        s3:// prefix; the report goes to ``<REPORT_S3_URI>/<model>/<run_id>.json``.
    PROMOTION_PARAMETER  SSM String parameter holding the approved draft head (see below).
    SPEEDUP_THRESHOLD    float > 0, e.g. 1.5; promote when speedup >= threshold.
    PRETRAINED_HEAD_S3_URI  optional; the pre-trained head the model serves while the parameter holds ``none``.
    PRETRAINED_HEAD_SPEEDUP optional, float >= 1; that head's measured speedup (``eagle.pretrained_head_speedup``).
  Event (``RecordEvent``): the ``start`` output plus ``"job"``: the final DescribeOptimizationJob
  response (``OptimizationJobStatus``, ``FailureReason``, ``OptimizationStartTime``,
  ``OptimizationEndTime``, ``CreationTime``, ``LastModifiedTime``; other keys ignored).
  Returns the run record written to DynamoDB (``decision`` is "promoted" or "not_promoted", with
  ``reason``). ``output_listing`` is the raw listing of the job's output prefix (first 200 objects;
  the S3 report has up to 1000) and ``results_unparsed`` is true for a completed job whose results
  gave no numbers: such a run is never promoted, and the state machine publishes it to SNS.

  The parameter value is the plain S3 URI of the approved draft head
  (``s3://bucket/.../<job name>/draft/``), or ``none`` while no head is approved: CloudFormation
  reads it as an ``AWS::SSM::Parameter::Value<String>`` stack parameter and serves the head from
  that URI. Everything else about the promoted run (speedup, EAGLE version, job ARN, completion
  time) is in its run record (DynamoDB) and report (S3). A run is not promoted over the run that
  holds the parameter when that run completed later (found by its draft URI in the runs table).

  Promotion beats the served head, not only the base model: a run whose speedup passes the threshold is
  promoted only when it is higher than the speedup of the head served now: the recorded speedup of the run
  that promoted the parameter's head, or, while the parameter holds ``none`` and the model serves a
  pre-trained head (``PRETRAINED_HEAD_S3_URI``), the highest of that head's own rows in this job's results
  and ``PRETRAINED_HEAD_SPEEDUP``; with neither known no run replaces the pre-trained head. A head set by
  hand (no run record) has no figure: the threshold alone decides, as before. The run record's
  ``comparison_basis`` says which head was compared, with which figure and where it came from.

  A head is bound to the weights it was trained on: when the run that promoted the parameter's head trained on
  other weights (its run record's ``model_s3_uri``) than this run, the deploy does not serve that head
  (``lambda/eagle_serving_model``), so it is neither the head to beat nor a newer run that blocks this one: this
  run is compared with the pre-trained head, or with the base model alone.
"""

from __future__ import annotations

import functools
import json
import os
import urllib.parse
from datetime import UTC, datetime
from decimal import Decimal
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any, Literal

import eagle_job_core as core
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import ClientError
from eagle_job_core import (  # re-exported: Step Functions matches these class names
    ConfigurationError,
    DatasetMissingError,
    EmptyDatasetError,
    InvalidEventError,
    JobNotTerminalError,
    OptimizationJobConflictError,
    ResourceLimitExceededError,
    UnsupportedArchitectureError,
    UnsupportedInstanceTypeError,
    UnsupportedModelSourceError,
    WatermarkConflictError,
)
from llm_cdk_shared import clients, env
from llm_cdk_shared.aws_errors import error_code, not_found
from llm_cdk_shared.problems import not_a_boolean
from llm_cdk_shared.problems import problems as validation_problems
from llm_cdk_shared.problems import shown as _shown

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    from pydantic import BaseModel

    # classes that _models() builds on first use: Any for annotations
    RecordEvent: TypeAlias = Any
    StartEvent: TypeAlias = Any
    WatermarkCommit: TypeAlias = Any

__all__ = [
    "start",
    "record",
    "ConfigurationError",
    "DatasetMissingError",
    "EmptyDatasetError",
    "InvalidEventError",
    "JobNotTerminalError",
    "OptimizationJobConflictError",
    "ResourceLimitExceededError",
    "UnsupportedArchitectureError",
    "UnsupportedInstanceTypeError",
    "UnsupportedModelSourceError",
    "WatermarkConflictError",
]

logger = Logger()
metrics = Metrics()

MAX_RESULT_OBJECTS = 1000
MAX_RESULT_FILE_BYTES = 10 * 1024 * 1024
MAX_SUMMARY_BYTES_IN_RECORD = 32 * 1024
MAX_LISTING_OBJECTS = 1000
"""Objects of the job's output prefix listed into the report (the run record keeps the first 200)."""
MAX_LISTING_IN_RECORD = 200
_S3_URI = r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/.*)?$"
_PARAMETER = r"^/?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$"
"""An SSM parameter name (botocore: 1-2048 characters), as the dataset builder checks it."""
_WATERMARK_MAX_CHARS = 4096
"""An SSM standard-tier String parameter's value."""


# Throttling and transient errors are retried by botocore (clients.DEFAULT_RETRIES: adaptive, 9 attempts).
_sagemaker = clients.client_getter("sagemaker")
_s3 = clients.client_getter("s3")
_dynamodb = clients.client_getter("dynamodb")
_ssm = clients.client_getter("ssm")


# --------------------------------------------------------------------------------------------
# Event models
# --------------------------------------------------------------------------------------------


@functools.cache
def _models() -> SimpleNamespace:
    """The event models, built on the first event: pydantic is not imported on a cold start."""
    from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

    WholeNumber = Annotated[int, BeforeValidator(not_a_boolean)]  # true/false is no count

    class TrainingData(BaseModel):
        model_config = ConfigDict(extra="ignore", defer_build=True)

        s3_uri: str = Field(min_length=1, max_length=1024)
        s3_data_type: Literal["S3Prefix", "ManifestFile"] = "S3Prefix"

    class WatermarkCommit(BaseModel):
        """Where the capture watermark is (``stored``, as plan read it), where this run's window starts
        (``previous``; null: nothing consumed yet) and where it ends (``value``)."""

        model_config = ConfigDict(extra="forbid", defer_build=True)

        parameter: str = Field(pattern=_PARAMETER, max_length=2048)
        stored: str | None = Field(default=None, min_length=1, max_length=_WATERMARK_MAX_CHARS)
        previous: str | None = Field(default=None, min_length=1, max_length=_WATERMARK_MAX_CHARS)
        value: str = Field(min_length=1, max_length=_WATERMARK_MAX_CHARS)

    class StartEvent(BaseModel):
        model_config = ConfigDict(extra="ignore", protected_namespaces=(), defer_build=True)

        model_name: str = Field(min_length=1, max_length=256)
        model_s3_uri: str = Field(min_length=1, max_length=1024)
        architecture: str = Field(min_length=1, max_length=256)
        deployment_instance_type: str = Field(min_length=1, max_length=64)
        max_instance_count: WholeNumber = Field(default=1, ge=1)
        training_data: TrainingData
        run_id: str = Field(min_length=1, max_length=256)
        dataset_summary: dict[str, Any] = Field(default_factory=dict)
        accept_eula: bool = False
        """The model's licence was accepted in config (a gated JumpStart model): ModelSource.S3.ModelAccessConfig."""
        watermark: WatermarkCommit | None = None
        """FinalizeDataset's ``watermark_commit``: the capture window this job trains on (captured traffic only)."""

    class StartOutput(StartEvent):
        watermark_committed: bool = False
        """This invocation (or an earlier attempt of it) moved the capture watermark to ``watermark.value``."""
        job_name: str
        job_arn: str
        eagle_version: str
        output_s3_uri: str
        started_at: str
        draft_model_s3_uri: str
        results_s3_uri: str

    class JobDescription(BaseModel):
        """The parts of a DescribeOptimizationJob response that ``record`` uses."""

        model_config = ConfigDict(extra="ignore", defer_build=True)

        OptimizationJobStatus: str
        FailureReason: str | None = None
        OptimizationJobArn: str | None = None
        CreationTime: datetime | None = None
        OptimizationStartTime: datetime | None = None
        OptimizationEndTime: datetime | None = None
        LastModifiedTime: datetime | None = None

    class RecordEvent(StartOutput):
        job: JobDescription
        # Start's output, checked where it is read back: the job's name and the S3 URIs record reads.
        job_name: str = Field(min_length=1, max_length=63, pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
        output_s3_uri: str = Field(pattern=_S3_URI, max_length=1024)
        draft_model_s3_uri: str = Field(pattern=_S3_URI, max_length=1024)
        results_s3_uri: str = Field(pattern=_S3_URI, max_length=1024)

    return SimpleNamespace(
        TrainingData=TrainingData,
        WatermarkCommit=WatermarkCommit,
        StartEvent=StartEvent,
        StartOutput=StartOutput,
        JobDescription=JobDescription,
        RecordEvent=RecordEvent,
    )


_MODEL_NAMES = ("TrainingData", "WatermarkCommit", "StartEvent", "StartOutput", "JobDescription", "RecordEvent")


def __getattr__(name: str) -> Any:
    """The event models (``StartEvent``, ``RecordEvent``, ...) as module attributes (PEP 562), built on first access."""
    if name in _MODEL_NAMES:
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _parse(event: Any, model: type[BaseModel]) -> Any:
    from aws_lambda_powertools.utilities.parser import parse  # imported on first use: not on the cold start
    from pydantic import ValidationError

    try:
        return parse(event=event, model=model)
    except ValidationError as exc:
        raise InvalidEventError(f"invalid {model.__name__} event: {'; '.join(validation_problems(exc))}") from None


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


# --------------------------------------------------------------------------------------------
# start
# --------------------------------------------------------------------------------------------


def _check_instance_type(instance_type: str) -> None:
    allowed = _sagemaker().meta.service_model.shape_for("OptimizationJobDeploymentInstanceType").enum
    if allowed and instance_type not in allowed:
        raise UnsupportedInstanceTypeError(
            f"deployment_instance_type {instance_type!r} is not accepted by CreateOptimizationJob. "
            f"Allowed: {', '.join(allowed)}."
        )


def _check_dataset(event: StartEvent) -> None:
    records = event.dataset_summary.get("records")
    zero = isinstance(records, (int, float)) and not isinstance(records, bool) and records == 0
    if zero or event.dataset_summary.get("empty") is True:
        raise EmptyDatasetError(
            f"the dataset for run {event.run_id!r} has 0 records (dataset_summary records={records!r}, "
            f"empty={event.dataset_summary.get('empty')!r}) at "
            f"{event.training_data.s3_uri}; an EAGLE head cannot be trained on no data. Capture more "
            "traffic or point the run at a dataset with ShareGPT / OpenAI (chat) completions JSONL records."
        )
    bucket, key = core.parse_s3_uri(event.training_data.s3_uri, what="training_data.s3_uri")
    try:
        listing = _s3().list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
    except ClientError as exc:
        if error_code(exc) == "NoSuchBucket":
            raise DatasetMissingError(
                f"training data bucket {bucket!r} of {event.training_data.s3_uri} does not exist; "
                "build the dataset first or fix training_data.s3_uri."
            ) from None
        raise
    if not listing.get("KeyCount", len(listing.get("Contents", []))):
        raise DatasetMissingError(
            f"no objects under training data URI {event.training_data.s3_uri} "
            f"({event.training_data.s3_data_type}); build the dataset first or fix training_data.s3_uri."
        )


def _existing_job(name: str, expected_model_uri: str) -> tuple[str, str]:
    """(arn, creation time) of a job that already has ``name``; refuse one made from other inputs."""
    described = _sagemaker().describe_optimization_job(OptimizationJobName=name)
    existing_uri = (described.get("ModelSource") or {}).get("S3", {}).get("S3Uri")
    if existing_uri is not None and existing_uri != expected_model_uri:
        raise OptimizationJobConflictError(
            f"optimization job {name!r} already exists for model {existing_uri!r}, not {expected_model_uri!r}; "
            "use a new run_id."
        )
    return described["OptimizationJobArn"], _iso(described.get("CreationTime")) or ""


def _read_parameter(name: str) -> str | None:
    try:
        return str(_ssm().get_parameter(Name=name)["Parameter"]["Value"])
    except ClientError as exc:
        if not_found(exc, "ssm"):
            return None
        raise


def _put_parameter(name: str, value: str) -> None:
    _ssm().put_parameter(Name=name, Value=value, Type="String", Overwrite=True)


def _job_exists(name: str) -> bool:
    try:
        _sagemaker().describe_optimization_job(OptimizationJobName=name)
    except ClientError as exc:
        if not_found(exc, "sagemaker"):
            return False
        raise
    return True


def _claim_window(watermark: WatermarkCommit, job: str, run_id: str) -> str | None:
    """Step 1 of the watermark move (module docstring): the claim value this invocation holds, or None when an
    earlier attempt already committed ``watermark.value`` with this job. Raises WatermarkConflictError, having
    created nothing, when the parameter is not where this run's plan found it."""
    current = _read_parameter(watermark.parameter)
    held = core.decode_claim(current)
    if held is not None and held.job == job and held.previous == watermark.previous and held.value == watermark.value:
        return current  # this run's own claim, from an attempt that did not get to commit
    if current == watermark.value and not _unchanged(current, watermark.stored):
        if _job_exists(job):
            return None  # an earlier attempt created the job and committed
        raise WatermarkConflictError(
            f"SSM parameter {watermark.parameter} already holds the end of run {run_id}'s window, but job {job!r} "
            "does not exist: another run trained on these captures. Nothing was started."
        )
    if not _unchanged(current, watermark.stored):
        raise WatermarkConflictError(
            f"SSM parameter {watermark.parameter} changed after run {run_id} planned its dataset (another run "
            "moved or claimed it). Nothing was started and the watermark was left alone; the next run plans "
            "from where it is now. Make sure only one run per watermark parameter executes at a time."
        )
    if held is not None:  # another run's claim, read by this run's plan (which planned from its ``previous``)
        age = datetime.now(UTC) - (_parse_time(held.claimed_at) or datetime.min.replace(tzinfo=UTC))
        if age.total_seconds() <= core.CLAIM_EXPIRY_SECONDS:
            raise WatermarkConflictError(
                f"SSM parameter {watermark.parameter} is claimed by run {held.run_id} (job {held.job!r}), which is "
                f"starting its job now. Nothing was started; run again later."
            )
        if _job_exists(held.job):
            _put_parameter(watermark.parameter, held.value)
            raise WatermarkConflictError(
                f"run {held.run_id} started job {held.job!r} on part of run {run_id}'s window and stopped before it "
                f"moved the watermark: SSM parameter {watermark.parameter} now holds the end of that job's window. "
                "Nothing was started; the next run plans from there, so no capture is trained on twice."
            )
    claim = core.WatermarkClaim(
        job=job,
        run_id=run_id,
        claimed_at=_iso(datetime.now(UTC)) or "",
        previous=watermark.previous,
        value=watermark.value,
    )
    value = core.claim_value(claim)
    _put_parameter(watermark.parameter, value)
    return value


def _unchanged(current: str | None, stored: str | None) -> bool:
    """The parameter holds what plan read (a missing parameter and the empty watermark are the same place)."""
    return current == stored or (stored is None and current == core.EMPTY_WATERMARK)


def _release_window(watermark: WatermarkCommit, claim: str) -> None:
    """A create failed: the parameter goes back to what plan read, if it still holds this invocation's claim
    (a retry of this start then claims again from there)."""
    if _read_parameter(watermark.parameter) == claim:
        _put_parameter(watermark.parameter, watermark.stored or core.EMPTY_WATERMARK)


def _commit_window(watermark: WatermarkCommit, claim: str, job: str) -> None:
    """Step 3: the job exists; the parameter goes from this invocation's claim to the window's end."""
    current = _read_parameter(watermark.parameter)
    if current == claim:
        _put_parameter(watermark.parameter, watermark.value)
        return
    if current == watermark.value:
        return
    raise WatermarkConflictError(
        f"job {job!r} was started, but SSM parameter {watermark.parameter} no longer holds its claim (another "
        "writer changed it): the watermark was left as that writer set it. Make sure only one run per watermark "
        "parameter executes at a time."
    )


@logger.inject_lambda_context(log_event=False)
def start(event: dict[str, Any], context: Any) -> dict[str, Any]:
    settings = core.settings_from_env(os.environ)
    request_event: StartEvent = _parse(event, _models().StartEvent)
    logger.append_keys(model_name=request_event.model_name, run_id=request_event.run_id)

    eagle_version = core.eagle_version_for(request_event.architecture)
    core.check_model_source(request_event.model_s3_uri)
    core.parse_s3_uri(request_event.training_data.s3_uri, what="training_data.s3_uri")
    _check_instance_type(request_event.deployment_instance_type)
    _check_dataset(request_event)

    name = core.job_name(
        model_name=request_event.model_name,
        model_s3_uri=request_event.model_s3_uri,
        dataset_s3_uri=request_event.training_data.s3_uri,
        instance_type=request_event.deployment_instance_type,
        run_id=request_event.run_id,
    )
    request = core.build_create_request(
        name=name,
        settings=settings,
        model_s3_uri=request_event.model_s3_uri,
        instance_type=request_event.deployment_instance_type,
        max_instance_count=request_event.max_instance_count,
        training_data_uri=request_event.training_data.s3_uri,
        training_data_type=request_event.training_data.s3_data_type,
        model_name=request_event.model_name,
        run_id=request_event.run_id,
        accept_eula=request_event.accept_eula,
    )
    watermark = request_event.watermark
    claim = _claim_window(watermark, name, request_event.run_id) if watermark is not None else None
    try:
        job_arn, started_at = _create_job(request, name, request_event)
    except Exception:
        if watermark is not None and claim is not None:
            _release_window(watermark, claim)
        raise
    if watermark is not None and claim is not None:
        _commit_window(watermark, claim, name)
        logger.info("capture watermark moved with the job", extra={"job_name": name})

    output_uri = core.job_output_uri(settings, name)
    result = _models().StartOutput(
        **request_event.model_dump(),
        watermark_committed=watermark is not None,
        job_name=name,
        job_arn=job_arn,
        eagle_version=eagle_version,
        output_s3_uri=output_uri,
        started_at=started_at,
        draft_model_s3_uri=core.join_s3(output_uri, "draft") + "/",
        results_s3_uri=core.join_s3(output_uri, "results") + "/",
    )
    return result.model_dump()


def _create_job(request: dict[str, Any], name: str, request_event: StartEvent) -> tuple[str, str]:
    """CreateOptimizationJob, or the job of that name an earlier attempt made: (arn, start time)."""
    try:
        job_arn = _sagemaker().create_optimization_job(**request)["OptimizationJobArn"]
        logger.info("optimization job created", extra={"job_name": name})
        return job_arn, _iso(datetime.now(UTC)) or ""
    except ClientError as exc:
        code = error_code(exc)
        message = exc.response.get("Error", {}).get("Message", "")
        if code == "ResourceInUse" or (code == "ValidationException" and "already exists" in message.lower()):
            logger.info("optimization job already exists; continuing with it", extra={"job_name": name})
            return _existing_job(name, request_event.model_s3_uri)
        if code == "ResourceLimitExceeded":
            raise ResourceLimitExceededError(
                f"SageMaker refused optimization job {name!r} on {request_event.deployment_instance_type} "
                f"x{request_event.max_instance_count}: an account quota is used up ({message or code}). "
                "Wait for running optimization jobs to finish, or request a higher quota for this instance "
                "type in Service Quotas, then retry."
            ) from None
        raise


# --------------------------------------------------------------------------------------------
# record
# --------------------------------------------------------------------------------------------


def _record_settings() -> tuple[str, str, str, float]:
    environment = env.Environment()
    table = environment.text("RUNS_TABLE", required=True, allowed="the DynamoDB table of EAGLE runs")
    report = environment.text("REPORT_S3_URI", required=True, prefix="s3://", allowed="an s3:// prefix for run reports")
    parameter = environment.text(
        "PROMOTION_PARAMETER", required=True, allowed="the SSM parameter name of the approved draft head"
    )
    threshold = environment.number("SPEEDUP_THRESHOLD", above=0, allowed="a number > 0, e.g. 1.5")
    environment.check(ConfigurationError, "invalid function configuration")
    return table, report, parameter, threshold


def _read_results(results_uri: str) -> core.ResultsSummary:
    bucket, prefix = core.parse_s3_uri(results_uri, what="results URI")
    files: list[str] = []
    documents: list[tuple[str, Any]] = []
    skipped: list[str] = []
    paginator = _s3().get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            if len(files) >= MAX_RESULT_OBJECTS:
                break
            key = item["Key"]
            relative = key[len(prefix) :] or key
            files.append(relative)
            if not key.lower().endswith((".json", ".jsonl")):
                continue
            if item.get("Size", 0) > MAX_RESULT_FILE_BYTES:
                skipped.append(relative)
                continue
            body = _s3().get_object(Bucket=bucket, Key=key)["Body"].read()
            documents.extend((relative, doc) for doc in core.parse_json_documents(key, body))
    summary = core.summarize_results(documents, files)
    if skipped and summary.status != "parsed":
        summary.reason = f"{summary.reason}; skipped files over {MAX_RESULT_FILE_BYTES} bytes: {', '.join(skipped)}"
    logger.info(
        "results read",
        extra={"results_status": summary.status, "files": len(files), "json_documents": len(documents)},
    )
    return summary


def _list_output(output_uri: str) -> tuple[list[dict[str, Any]], bool]:
    """The raw listing of the job's output prefix (key relative to it, size, last modified), and whether it
    was cut at ``MAX_LISTING_OBJECTS``. Kept in the run record because the output layout of optimization
    jobs is not documented: whoever reads an unparsed run sees what the job actually wrote."""
    bucket, prefix = core.parse_s3_uri(output_uri, what="output URI")
    entries: list[dict[str, Any]] = []
    paginator = _s3().get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            if len(entries) >= MAX_LISTING_OBJECTS:
                return entries, True
            modified = item.get("LastModified")
            entries.append(
                {
                    "key": item["Key"][len(prefix) :] or item["Key"],
                    "size": int(item.get("Size", 0)),
                    "last_modified": _iso(modified) if isinstance(modified, datetime) else None,
                }
            )
    return entries, False


def _pretrained_settings() -> tuple[str | None, float | None]:
    """The pre-trained head served while no head is promoted, and its configured speedup (both optional)."""
    env = os.environ
    problems = []
    uri = env.get("PRETRAINED_HEAD_S3_URI", "").strip() or None
    if uri is not None and not uri.startswith("s3://"):
        problems.append(f"PRETRAINED_HEAD_S3_URI {uri!r} must be the s3:// URI of the pre-trained head")
    raw = env.get("PRETRAINED_HEAD_SPEEDUP", "").strip()
    speedup = None
    if raw:
        try:
            speedup = float(raw)
            if not (1.0 <= speedup < float("inf")):
                raise ValueError
        except ValueError:
            problems.append(f"PRETRAINED_HEAD_SPEEDUP {raw!r} must be a measured speedup >= 1, e.g. 1.8")
        if uri is None:
            problems.append("PRETRAINED_HEAD_SPEEDUP is set without PRETRAINED_HEAD_S3_URI (the head it measures)")
    if problems:
        raise ConfigurationError("invalid function configuration: " + "; ".join(problems))
    return uri, speedup


def _incumbent(
    parameter: str, table: str, run: RecordEvent, results: core.ResultsSummary | None, previous: dict[str, Any] | None
) -> core.Incumbent:
    """The head served now, which this run's head must beat (see the module docstring)."""
    pretrained_uri, pretrained_speedup = _pretrained_settings()
    current = _current_head(parameter)
    if current is not None and current == run.draft_model_s3_uri:
        # a retry after this run promoted: compare with what the first attempt compared with
        basis = _from_dynamo(previous).get("comparison_basis") if previous else None
        if isinstance(basis, dict):
            figures = tuple((str(f["source"]), float(f["speedup"])) for f in basis.get("figures") or [])
            return core.Incumbent(
                kind=str(basis.get("served_head", "none")),
                s3_uri=basis.get("s3_uri"),
                figures=figures,
                required=basis.get("served_head") == "pretrained",
                note=basis.get("note"),
            )
        return core.Incumbent()
    holder = (_promoting_run(table, run.model_name, current) or {}) if current is not None else {}
    if current is not None and not _other_weights(holder, run):
        if holder.get("speedup") is not None:
            return core.Incumbent(
                kind="promoted",
                s3_uri=current,
                figures=((f"run record {holder.get('run_id')}", float(holder["speedup"])),),
            )
        return core.Incumbent(kind="promoted", s3_uri=current, note="no run record promoted it (set by hand?)")
    # A head trained on other weights is not served (the serving model leaves it out): what is served is compared.
    if pretrained_uri is not None:
        return core.pretrained_incumbent(pretrained_uri, results, pretrained_speedup)
    return core.Incumbent()


def _other_weights(holder: dict[str, Any], run: RecordEvent) -> bool:
    """True when the run that promoted the served head trained on other weights than this run: the deploy serves no
    head bound to weights the model no longer serves, so that head neither sets the bar nor blocks this one."""
    trained_on = holder.get("model_s3_uri")
    return isinstance(trained_on, str) and trained_on != run.model_s3_uri


def _prefix_has_objects(uri: str) -> bool:
    bucket, prefix = core.parse_s3_uri(uri, what="S3 URI")
    listing = _s3().list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1)
    return bool(listing.get("KeyCount", len(listing.get("Contents", []))))


#: Parameter value meaning "no approved draft head" (the value the parameter is created with).
NO_HEAD = "none"


def _current_head(parameter: str) -> str | None:
    """The draft head URI the parameter holds now; None when it holds none (or does not exist)."""
    try:
        value = _ssm().get_parameter(Name=parameter)["Parameter"]["Value"].strip()
    except ClientError as exc:
        if not_found(exc, "ssm"):
            return None
        raise
    if not value or value.lower() == NO_HEAD:
        return None
    if value.startswith("{"):  # the JSON value written by the first version of this function
        try:
            legacy = json.loads(value)
        except ValueError:
            return None
        uri = legacy.get("draft_model_s3_uri") if isinstance(legacy, dict) else None
        return uri if isinstance(uri, str) and uri else None
    return value


def _promoting_run(table: str, model_name: str, draft_uri: str) -> dict[str, Any] | None:
    """The recorded run of ``model_name`` that promoted ``draft_uri``, if the runs table has one."""
    paginator = _dynamodb().get_paginator("query")
    pages = paginator.paginate(
        TableName=table,
        KeyConditionExpression="#m = :m",
        FilterExpression="#u = :u AND #d = :d",
        ProjectionExpression="#r, #e, #s, #w",
        ExpressionAttributeNames={
            "#m": "model_name",
            "#u": "draft_model_s3_uri",
            "#d": "decision",
            "#r": "run_id",
            "#e": "ended_at",
            "#s": "speedup",
            "#w": "model_s3_uri",
        },
        ExpressionAttributeValues={":m": {"S": model_name}, ":u": {"S": draft_uri}, ":d": {"S": "promoted"}},
        ConsistentRead=True,
    )
    for page in pages:
        for item in page.get("Items", []):
            return _from_dynamo(item)
    return None


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _promote(
    *,
    parameter: str,
    table: str,
    run: RecordEvent,
    speedup: float,
    completed_at: str | None,
    decision: core.Decision,
) -> core.Decision:
    """Write this run's draft head URI to the parameter unless it holds it already, or holds the
    head of a run that completed later (looked up by its draft URI in the runs table)."""
    current = _current_head(parameter)
    if current == run.draft_model_s3_uri:
        logger.info("draft head of this run is already promoted", extra={"parameter": parameter})
        return decision
    if current is not None:
        holder = _promoting_run(table, run.model_name, current) or {}
        holder_done, this_done = _parse_time(holder.get("ended_at")), _parse_time(completed_at)
        if holder_done and this_done and holder_done > this_done and not _other_weights(holder, run):
            return core.Decision(
                False,
                f"{decision.reason}, but run {holder.get('run_id')!r} (completed {holder.get('ended_at')}) "
                "is already promoted and is newer; not replacing it with this older run",
            )
    _ssm().put_parameter(Name=parameter, Value=run.draft_model_s3_uri, Type="String", Overwrite=True)
    logger.info("draft head promoted", extra={"parameter": parameter, "speedup": speedup})
    return decision


def _to_dynamo(item: dict[str, Any]) -> dict[str, Any]:
    from boto3.dynamodb.types import TypeSerializer  # only the record path needs it: not on the cold start

    plain = json.loads(json.dumps(item, default=str), parse_float=Decimal)
    serializer = TypeSerializer()
    return {key: serializer.serialize(value) for key, value in plain.items()}


def _from_dynamo(item: dict[str, Any]) -> dict[str, Any]:
    from boto3.dynamodb.types import TypeDeserializer

    deserializer = TypeDeserializer()
    return {key: deserializer.deserialize(value) for key, value in item.items()}


def _report_key(report_uri: str, model_name: str, run_id: str) -> tuple[str, str]:
    bucket, prefix = core.parse_s3_uri(report_uri, what="REPORT_S3_URI")
    safe = functools.partial(urllib.parse.quote, safe="-_.")
    key = "/".join(part for part in (prefix.strip("/"), safe(model_name), f"{safe(run_id)}.json") if part)
    return bucket, key


@metrics.log_metrics
@logger.inject_lambda_context(log_event=False)
def record(event: dict[str, Any], context: Any) -> dict[str, Any]:
    table, report_uri, parameter, threshold = _record_settings()
    _pretrained_settings()  # a bad configuration fails before any read
    run: RecordEvent = _parse(event, _models().RecordEvent)
    logger.append_keys(model_name=run.model_name, run_id=run.run_id, job_name=run.job_name)
    job = run.job
    status = job.OptimizationJobStatus
    if status not in core.TERMINAL_STATUSES:
        raise JobNotTerminalError(
            f"optimization job {run.job_name!r} has job.OptimizationJobStatus {_shown(status)}; record only after it "
            "is one of "
            f"{sorted(core.TERMINAL_STATUSES)} (the state machine's wait loop should not have exited)."
        )

    results = _read_results(run.results_s3_uri) if status == "COMPLETED" else None
    listing, listing_truncated = _list_output(run.output_s3_uri)
    unparsed = status == "COMPLETED" and (results is None or results.status != "parsed" or results.speedup is None)
    previous = (
        _dynamodb()
        .get_item(
            TableName=table,
            Key={"model_name": {"S": run.model_name}, "run_id": {"S": run.run_id}},
            ConsistentRead=True,
        )
        .get("Item")
    )
    incumbent = _incumbent(parameter, table, run, results, previous)
    decision = core.decide(
        status=status,
        failure_reason=job.FailureReason,
        results=results,
        threshold=threshold,
        results_uri=run.results_s3_uri,
        incumbent=incumbent,
    )
    ended = job.OptimizationEndTime or job.LastModifiedTime
    began = job.OptimizationStartTime or job.CreationTime
    completed_at = _iso(ended)
    if decision.promote and not _prefix_has_objects(run.draft_model_s3_uri):
        decision = core.Decision(False, f"{decision.reason}, but no draft head objects under {run.draft_model_s3_uri}")
    head_before = _current_head(parameter) if decision.promote else None  # what a rollback returns to
    if head_before is not None and head_before == run.draft_model_s3_uri:  # a retry after this run promoted
        stored_before = (previous or {}).get("previous_head", {}).get("S")
        head_before = None if stored_before in (None, NO_HEAD) else stored_before
    if decision.promote:
        assert results is not None and results.speedup is not None
        decision = _promote(
            parameter=parameter,
            table=table,
            run=run,
            speedup=results.speedup,
            completed_at=completed_at,
            decision=decision,
        )

    report_bucket, report_key = _report_key(report_uri, run.model_name, run.run_id)
    summary_json = json.dumps(run.dataset_summary, sort_keys=True, default=str)
    results_dict = results.as_dict() if results else None
    item: dict[str, Any] = {
        "model_name": run.model_name,
        "run_id": run.run_id,
        "job_name": run.job_name,
        "job_arn": run.job_arn,
        "eagle_version": run.eagle_version,
        "architecture": run.architecture,
        "model_s3_uri": run.model_s3_uri,
        "deployment_instance_type": run.deployment_instance_type,
        "max_instance_count": run.max_instance_count,
        "training_data": run.training_data.model_dump(),
        "dataset_summary": run.dataset_summary
        if len(summary_json.encode()) <= MAX_SUMMARY_BYTES_IN_RECORD
        else {"note": "dataset summary too large for the run record; see the report"},
        "status": status,
        "failure_reason": job.FailureReason,
        "created_at": _iso(job.CreationTime),
        "started_at": _iso(began),
        "ended_at": completed_at,
        "duration_seconds": int((ended - began).total_seconds()) if ended and began else None,
        "output_s3_uri": run.output_s3_uri,
        "draft_model_s3_uri": run.draft_model_s3_uri,
        "results_s3_uri": run.results_s3_uri,
        "results_status": results.status if results else "not_read",
        "results_files": (results.files[:100] if results else []),
        "results_unparsed": unparsed,
        "output_listing": listing[:MAX_LISTING_IN_RECORD],
        "output_listing_count": len(listing),
        "output_listing_truncated": listing_truncated or len(listing) > MAX_LISTING_IN_RECORD,
        "throughput_metric": results.throughput_metric if results else None,
        "concurrency": results.concurrency if results else None,
        "base_throughput": results.base_throughput if results else None,
        "trained_throughput": results.optimized_throughput if results else None,
        "base_latency": results.base_latency if results else {},
        "trained_latency": results.optimized_latency if results else {},
        "speedup": results.speedup if results else None,
        "speedup_threshold": threshold,
        "pretrained_speedup": results.reference_speedup if results else None,
        "comparison_basis": incumbent.as_dict(),
        "decision": "promoted" if decision.promote else "not_promoted",
        "reason": decision.reason,
        "promotion_parameter": parameter,
        "previous_head": (head_before or NO_HEAD) if decision.promote else None,
        "report_s3_uri": f"s3://{report_bucket}/{report_key}",
    }

    serialized = _to_dynamo(item)
    repeated = previous is not None and _from_dynamo(previous) == _from_dynamo(serialized)
    _dynamodb().put_item(TableName=table, Item=serialized)

    report = {
        **item,
        "dataset_summary": run.dataset_summary,
        "results": results_dict,
        "output_listing": listing,
        "output_listing_truncated": listing_truncated,
    }
    _s3().put_object(
        Bucket=report_bucket,
        Key=report_key,
        Body=json.dumps(report, sort_keys=True, indent=2, default=str).encode(),
        ContentType="application/json",
    )

    if repeated:
        logger.info("run already recorded with the same outcome; metrics not published again")
    else:
        metrics.add_dimension(name="ModelName", value=run.model_name)
        if results and results.speedup is not None:
            metrics.add_metric(name="EagleSpeedup", unit=MetricUnit.NoUnit, value=results.speedup)
        if unparsed:  # the state machine also publishes these runs to the alarm topic
            metrics.add_metric(name="EagleResultsUnparsed", unit=MetricUnit.Count, value=1)
        if status == "COMPLETED":
            metrics.add_metric(name="EagleJobSucceeded", unit=MetricUnit.Count, value=1)
        else:
            metrics.add_metric(name="EagleJobFailed", unit=MetricUnit.Count, value=1)
    logger.info(
        "run recorded",
        extra={"status": status, "decision": item["decision"], "speedup": item["speedup"], "reason": decision.reason},
    )
    return item
