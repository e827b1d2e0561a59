"""Start a SageMaker EAGLE optimization job (``start``) and record/promote its results (``record``).

Both handlers are steps of a Step Functions state machine: build dataset -> ``start`` -> Wait +
``DescribeOptimizationJob`` (SDK integration) until terminal -> ``record``. This module takes each event in
and hands the answer back; it makes the clients (one per service) and hands them to the module of each step:
``job_events`` (the events), ``job_settings`` (the environment), ``job_request`` and ``job_start_checks`` (the
job ``start`` asks for), ``job_watermark`` (the watermark move), ``job_sagemaker`` (the job in SageMaker),
``job_status``, ``job_outputs`` and ``job_results`` (how the job ended and what it wrote), ``job_decision`` and
``job_promotion`` (the promotion) and ``job_run_record`` (the run record and report). ``eagle_job_core`` names
the pure logic in one namespace.

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

  A Step Functions abort does not stop a running invocation, so an aborted run either started its job and moved the
  watermark, or did neither. A claim left by an invocation that died between 1 and 3 is settled by the next run's
  start once it is older than any invocation (``job_watermark.CLAIM_EXPIRY_SECONDS``): it commits the claim's
  ``value`` when the claimed job exists (and fails with WatermarkConflictError: that run planned from ``previous``,
  so it trains nothing; the run after it starts at ``value``), and claims over it when the job does not. The
  dataset builder plans a claimed parameter from the claim's ``previous``. Retries are idempotent: an attempt finds
  its own claim, or the value it committed with its job.

``record(event, context)``
  Environment:
    RUNS_TABLE           DynamoDB table, partition key ``model_name`` (S), sort key ``run_id`` (S).
    REPORT_S3_URI        s3:// prefix; the report goes to ``<REPORT_S3_URI>/<model>/<run_id>.json``.
    PROMOTION_PARAMETER  SSM String parameter holding the approved draft head (see below).
    SPEEDUP_THRESHOLD    float > 0, e.g. 1.5; promote when speedup >= threshold.
    PRETRAINED_HEAD_S3_URI  optional; the pre-trained head the model serves while the parameter holds ``none``.
    PRETRAINED_HEAD_SPEEDUP optional, float >= 1; that head's measured speedup (``eagle.pretrained_head_speedup``).
    PRICE_LIST_LOOKUP    ``1``: read the instance's on-demand price with pricing:GetProducts (``job_prices``).
    SHIPPED_HOURLY_USD, SHIPPED_PRICE_DATE  optional; the shipped table's figure, the fallback.
    CAPACITY_PLAN_HOURLY_USD  optional; a plan-bound endpoint's effective hourly rate (wins when set).
    CAPACITY_PLAN_MAX_UPFRONT_FEE_USD, CAPACITY_PLAN_INSTANCE_HOURS  optional, together; a plan the app buys: its
        price cap over its instance-hours is the hourly rate, at most (the construct sets them for such a plan).
    CAPACITY_PLAN_BOUND  ``1`` when the endpoint runs on a capacity plan (an on-demand price is then noted).
  Event (``RecordEvent``): the ``start`` output plus ``"job"``: the final DescribeOptimizationJob
  response (``OptimizationJobStatus``, ``FailureReason``, ``OptimizationStartTime``,
  ``OptimizationEndTime``, ``CreationTime``, ``LastModifiedTime``; other keys ignored).
  Returns the run record written to DynamoDB (``decision`` is "promoted" or "not_promoted", with
  ``reason``; ``usd_per_million_output_tokens``: base and EAGLE per concurrency, with the price's source).
  ``output_listing`` is the raw listing of the job's output prefix (first 200 objects;
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

import os
from typing import TYPE_CHECKING, Any

import job_events
import job_outputs
import job_prices
import job_promotion
import job_request
import job_run_record
import job_sagemaker
import job_settings
import job_start_checks
import job_status
import job_watermark
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import ClientError as ClientError  # re-exported: what an unexpected AWS error raises
from job_errors import (  # re-exported: Step Functions matches these class names
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
from llm_cdk_shared import clients

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    from job_results import ResultsSummary

    # classes that _models() builds on first use: Any for annotations
    RecordEvent: TypeAlias = Any
    StartEvent: TypeAlias = Any

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

# Throttling and transient errors are retried by botocore (clients.DEFAULT_RETRIES: adaptive, 9 attempts).
_sagemaker = clients.client_getter("sagemaker")
_s3 = clients.client_getter("s3")
_dynamodb = clients.client_getter("dynamodb")
_ssm = clients.client_getter("ssm")
# the Price List API per partition's endpoint region; few retries: a failure falls back to the shipped price
_pricing = {
    region: clients.client_getter(
        "pricing", retries={"mode": "standard", "max_attempts": 3}, region_name=region, connect_timeout=5
    )
    for region in job_prices.PRICE_LIST_REGION.values()
}


def _pricing_client(region: str) -> Any:
    """The Price List client of ``region`` (us-east-1 for the commercial partition)."""
    return _pricing[region]()


_models = job_events.models
"""The event models, built on the first event (``job_events.models``)."""


def __getattr__(name: str) -> Any:
    """The event models (``StartEvent``, ``RecordEvent``, ...) as module attributes (PEP 562), built on first access."""
    if name in job_events.MODEL_NAMES:
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------------------------
# start
# --------------------------------------------------------------------------------------------


@logger.inject_lambda_context(log_event=False)
def start(event: dict[str, Any], context: Any) -> dict[str, Any]:
    settings = job_settings.settings_from_env(os.environ)
    request_event: StartEvent = job_events.parse_event(event, _models().StartEvent)
    logger.append_keys(model_name=request_event.model_name, run_id=request_event.run_id)

    eagle_version = job_request.eagle_version_for(request_event.architecture)
    job_request.check_model_source(request_event.model_s3_uri)
    job_request.parse_s3_uri(request_event.training_data.s3_uri, what="training_data.s3_uri")
    job_start_checks.check_instance_type(_sagemaker(), request_event.deployment_instance_type)
    job_start_checks.check_dataset(_s3(), request_event)

    name = job_request.job_name(
        model_name=request_event.model_name,
        model_s3_uri=request_event.model_s3_uri,
        dataset_s3_uri=request_event.training_data.s3_uri,
        instance_type=request_event.deployment_instance_type,
        run_id=request_event.run_id,
    )
    request = job_request.build_create_request(
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
    claim = (
        job_watermark.claim_window(_ssm(), _sagemaker(), watermark, name, request_event.run_id)
        if watermark is not None
        else None
    )
    try:
        job_arn, started_at = _create_job(request, name, request_event)
    except Exception:
        if watermark is not None and claim is not None:
            job_watermark.release_window(_ssm(), watermark, claim)
        raise
    if watermark is not None and claim is not None:
        job_watermark.commit_window(_ssm(), watermark, claim, name)
        logger.info("capture watermark moved with the job", extra={"job_name": name})

    output_uri = job_request.job_output_uri(settings, name)
    result = _models().StartOutput(
        **request_event.model_dump(),
        watermark_committed=watermark is not None,
        job_name=name,
        job_arn=job_arn,
        eagle_version=eagle_version,
        output_s3_uri=output_uri,
        started_at=started_at,
        draft_model_s3_uri=job_request.join_s3(output_uri, "draft") + "/",
        results_s3_uri=job_request.join_s3(output_uri, "results") + "/",
    )
    return result.model_dump()


def _create_job(request: dict[str, Any], name: str, request_event: StartEvent) -> tuple[str, str]:
    """CreateOptimizationJob, or the job of that name an earlier attempt made: (arn, start time)."""
    return job_sagemaker.create_job(_sagemaker(), request, name, request_event)


# --------------------------------------------------------------------------------------------
# record
# --------------------------------------------------------------------------------------------


@metrics.log_metrics
@logger.inject_lambda_context(log_event=False)
def record(event: dict[str, Any], context: Any) -> dict[str, Any]:
    table, report_uri, parameter, threshold = job_settings.record_settings()
    job_settings.pretrained_settings()  # a bad configuration fails before any read
    run: RecordEvent = job_events.parse_event(event, _models().RecordEvent)
    logger.append_keys(model_name=run.model_name, run_id=run.run_id, job_name=run.job_name)
    status = job_status.terminal_status(run)

    results = job_outputs.read_results(_s3(), run.results_s3_uri) if status == "COMPLETED" else None
    listing, listing_truncated = job_outputs.list_output(_s3(), run.output_s3_uri)
    unparsed = status == "COMPLETED" and (results is None or results.status != "parsed" or results.speedup is None)
    previous = job_run_record.read_previous(_dynamodb(), table, run.model_name, run.run_id)
    promotion = job_promotion.decide_and_promote(
        ssm=_ssm(),
        dynamodb=_dynamodb(),
        s3=_s3(),
        parameter=parameter,
        table=table,
        threshold=threshold,
        run=run,
        status=status,
        results=results,
        previous=previous,
    )

    costs = (
        job_prices.run_costs(
            _pricing_client,
            results,
            instance_type=run.deployment_instance_type,
            instance_count=run.max_instance_count,
        )
        if results is not None and results.status == "parsed"
        else None
    )
    report_bucket, report_key = job_run_record.report_key(report_uri, run.model_name, run.run_id)
    item = job_run_record.run_item(
        run,
        status=status,
        results=results,
        listing=listing,
        listing_truncated=listing_truncated,
        unparsed=unparsed,
        threshold=threshold,
        parameter=parameter,
        promotion=promotion,
        report_s3_uri=f"s3://{report_bucket}/{report_key}",
        costs=costs,
    )
    repeated = job_run_record.write(
        _dynamodb(),
        _s3(),
        table=table,
        item=item,
        previous=previous,
        report=job_run_record.report_document(item, run, results, listing, listing_truncated),
        report_bucket=report_bucket,
        report_key=report_key,
    )
    _publish_metrics(run.model_name, results, status=status, unparsed=unparsed, repeated=repeated, costs=costs)
    logger.info(
        "run recorded",
        extra={
            "status": status,
            "decision": item["decision"],
            "speedup": item["speedup"],
            "reason": promotion.decision.reason,
            "usd_per_million_output_tokens": costs and {k: costs[k] for k in ("base", "eagle", "source")},
        },
    )
    return item


def _publish_metrics(
    model_name: str,
    results: ResultsSummary | None,
    *,
    status: str,
    unparsed: bool,
    repeated: bool,
    costs: dict[str, Any] | None = None,
) -> None:
    """The run's metrics: its speedup, whether its results were unparsed, and whether the job succeeded; not
    again for a record an earlier attempt wrote with the same outcome."""
    if repeated:
        logger.info("run already recorded with the same outcome; metrics not published again")
        return
    metrics.add_dimension(name="ModelName", value=model_name)
    if results and results.speedup is not None:
        metrics.add_metric(name="EagleSpeedup", unit=MetricUnit.NoUnit, value=results.speedup)
    for side, name in (("base", "EagleBaseUsdPerMillionOutputTokens"), ("eagle", "EagleUsdPerMillionOutputTokens")):
        if costs and costs.get(side) is not None:  # at the headline (lowest-speedup) concurrency
            metrics.add_metric(name=name, unit=MetricUnit.NoUnit, value=costs[side])
    if unparsed:  # the state machine also publishes these runs to the alarm topic
        metrics.add_metric(name="EagleResultsUnparsed", unit=MetricUnit.Count, value=1)
    if status == "COMPLETED":
        metrics.add_metric(name="EagleJobSucceeded", unit=MetricUnit.Count, value=1)
    else:
        metrics.add_metric(name="EagleJobFailed", unit=MetricUnit.Count, value=1)
