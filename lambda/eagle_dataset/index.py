"""Builds EAGLE training datasets (chat-completions JSONL) from SageMaker endpoint Data Capture.

Entry points (one Lambda function each, same code asset):

* ``index.plan``      - lists new capture objects after the watermark, writes a Distributed Map
                        item manifest (JSON array of ``{"key": ...}``).
* ``index.convert``   - Distributed Map batch worker: streams capture objects, writes
                        bounded-size JSONL shards per inference component.
* ``index.finalize``  - reads the Distributed Map ``ResultWriter`` output, writes the summary and
                        a SageMaker ``ManifestFile`` per component, and says where the watermark moves
                        (``watermark_commit``). No function here writes the watermark: the job's start
                        moves it with the job (``lambda/eagle_job``), so a run that trains nothing, fails
                        or is aborted before its job exists leaves it where it was.
* ``index.validate_user_dataset`` - samples a user-supplied dataset and reports its format.
* ``index.check``     - (scheduled) counts captured records after the watermark without converting
                        them and starts a run of the state machine once enough arrived.

Each handler parses its event (``dataset_events``), hands the work to the module of its concept
(``dataset_planning``, ``dataset_conversion``, ``dataset_results`` and ``dataset_run_summary``,
``dataset_threshold``, ``dataset_validation``; ``eagle_dataset_core`` names the conversion logic, which
does not talk to AWS), and logs and counts what was done. The AWS clients (``_s3``, ``_ssm``, ``_sfn``)
and the clock (``_now``) are this module's and are handed to those modules on each call.

Environment variables (all optional):

* ``POWERTOOLS_SERVICE_NAME``, ``POWERTOOLS_METRICS_NAMESPACE``, ``POWERTOOLS_LOG_LEVEL`` - Powertools.
* ``MAX_OBJECTS_PER_RUN`` (plan, default 100000) - cap on objects one run takes; the rest
  stay after the watermark for the next run.
* ``SETTLE_SECONDS`` (plan, default 900) - capture objects whose key time (from the
  ``yyyy/mm/dd/hh/MM-SS-...`` key) is newer than now minus this are left for the next run, so
  files still being delivered are not skipped past by the watermark.
* ``SHARD_MAX_BYTES`` (convert, default 16 MiB) - size at which a shard file is written.
* ``BUFFER_BUDGET_BYTES`` (convert, default 32 MiB) - all shard buffers together; when
  reached the largest buffer is written early.
* ``MAX_LINE_BYTES`` (convert, default 8 MiB) - longer capture lines are skipped unread.
* ``READ_CHUNK_BYTES`` (convert, default 1 MiB) - S3 read size.
* ``DEDUP_MAX_ENTRIES`` (convert, default 500000) - digests kept for duplicate detection.
* ``MAX_COMPONENTS`` (convert, default 64) - distinct inference components per batch.
* ``DATASET_KMS_KEY_ARN`` (plan, convert, finalize, default unset) - KMS key every written object
  (plan, shards, manifests, summary) is encrypted with; the optimization job's role may decrypt
  with it. Unset: the output bucket's default encryption.
* ``UNNAMED_RECORDS_COMPONENT`` (convert, default unset) - component a record belongs to when
  neither the record (``eventMetadata.inferenceComponentName``) nor its key names one. Unset,
  such records are counted as ``unattributed_component`` under ``_unattributed`` and kept out of
  every training set: AWS does not document that inference-component endpoints name the
  component, and adapter traffic must never train the base model's head. Set it only when the
  endpoint serves one component and no adapters.
* ``REASONING_TAGS`` (convert, default unset) - ``<open>|<close>``: a reply's reasoning
  (``reasoning_content``) is written into its content inside these tags, where the model generated it
  (``dataset_reasoning``). Unset, it is left out and counted as ``dropped.reasoning_content``.
* ``TARGET_COMPONENT`` (finalize, default ``base``) - component whose data is returned as the
  training input (an inference component name, or ``base`` for endpoints without one).
* ``VALIDATE_SAMPLE_LINES`` (validate, default 100), ``VALIDATE_MAX_OBJECTS`` (default 3).

Events (JSON):

* plan in:  ``{"capture_bucket", "capture_prefix", "output_bucket", "output_prefix", "run_id",
  "watermark_parameter", "settle_seconds"?, "max_objects"?}``
  plan out: ``{"manifest_bucket", "manifest_key", "object_count", "new_watermark",
  "previous_watermark", "watermark_value", "watermark_previous_value", "watermark_stored_value",
  "watermark_parameter", "truncated", "capture_bucket", "capture_prefix", "output_bucket", "output_prefix",
  "run_id"}``. ``watermark_stored_value`` is the parameter's value as read (null: no parameter);
  ``watermark_previous_value`` the watermark the window starts after: the same, except that a claim
  (``{"v":1,"claim":{...}}``, written by the job's start while it creates its job) is planned from its
  ``previous``; ``watermark_value`` where the window ends.
* convert in:  ``{"Items": [{"key"}...], "BatchInput": {"capture_bucket", "capture_prefix"?,
  "output_bucket", "output_prefix", "run_id", "source"?: "capture"|"front_door"}}``. With
  ``front_door`` the objects are the session front door's turn log (``TurnLog``: one
  ``{"component", "messages", "created_at"}`` line per turn, gzip by Firehose) under
  ``capture_prefix``; plan, finalize, the watermark and the counts work as for Data Capture.
  convert out: ``{"batch_id", "objects", "objects_missing", "records_in", "converted",
  "duplicates", "skipped": {reason: n}, "dedup_saturated", "components": {name: {...counts,
  "shards": [file names], "bytes"}}}``
* finalize in:  ``{"plan": <plan out>, "results": {"results_bucket", "results_manifest_key"}
  (or Step Functions' ``ResultWriterDetails`` ``{"Bucket", "Key"}``; null when the map did not
  run), "target_component"?}``
  finalize out: ``{"training_data_s3_uri", "s3_data_type": "S3Prefix", "manifest_s3_uri",
  "records", "empty", "reason", "component", "requested_component", "complete", "failed_batches",
  "summary_key", "summary_s3_uri", "component_uris": {name: uri}, "component_records": {name: n},
  "unattributed", "skipped": {reason: n}, "watermark_commit"}``. ``component`` is ``target_component``
  (default env ``TARGET_COMPONENT``); records that named no component are counted in ``unattributed`` and
  never in it. ``watermark_commit`` is
  ``{"parameter", "stored", "previous", "value"}`` (the plan's ``watermark_parameter``,
  ``watermark_stored_value``, ``watermark_previous_value`` and ``watermark_value``): the job's start moves
  the parameter from ``stored`` to ``value`` once its job exists. It is null when nothing moves: no new
  capture objects, or batches the Distributed Map tolerated as failed (``complete`` false: the dataset holds
  the other batches and those objects are converted again next run).
* ``output_prefix`` (plan, convert, finalize) is the folder the dataset is written under, as given: a
  ``..`` or ``.`` segment, a leading ``/``, an empty segment (``a//b``), control characters or more than
  512 UTF-8 bytes is an ``InvalidEventError`` before any AWS call; one trailing ``/`` and ``""`` (the
  bucket's top level) are fine.
* validate in: ``{"s3_uri", "s3_data_type"?: "S3Prefix"|"ManifestFile"}``
  validate out: ``{"format", "s3_uri", "objects_checked", "lines_checked"}``

* check in: ignored (EventBridge Scheduler sends ``{}``). Environment: ``STATE_MACHINE_ARN``,
  ``WATERMARK_PARAMETER``, ``CAPTURE_BUCKET``, ``CAPTURE_PREFIX``, ``MIN_NEW_RECORDS``,
  ``SETTLE_SECONDS`` (default 900). Records are counted as lines of the settled capture objects
  after the watermark (compression read from the bytes); reading stops at ``MIN_NEW_RECORDS``.
  check out: ``{"started", "reason", "records_counted", "objects_read", "execution_arn"?,
  "execution_name"?}``. Nothing starts while a run is in progress; the execution name is derived
  from the watermark and how many ``MIN_NEW_RECORDS`` steps arrived, so two checks never start two
  runs for the same data (see ``dataset_threshold.execution_name``). Reading stops at 10 steps.

Errors a state machine can match: ``InvalidEventError``, ``CaptureAccessDeniedError``,
``WatermarkTooLargeError``, ``MapRunIncompleteError``,
``ResultsFormatError``, ``DatasetFormatError``; AWS failures after retries surface as
``ClientError``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import dataset_conversion as conversion
import dataset_events as events
import dataset_planning as planning
import dataset_results as map_results
import dataset_run_summary as run_summary
import dataset_threshold as threshold
import dataset_validation as validation
import dataset_watermark as watermark
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from dataset_errors import CaptureAccessDeniedError as CaptureAccessDeniedError
from dataset_errors import DatasetFormatError as DatasetFormatError
from dataset_errors import InvalidEventError as InvalidEventError
from dataset_errors import MapRunIncompleteError as MapRunIncompleteError
from dataset_errors import ResultsFormatError as ResultsFormatError
from dataset_errors import WatermarkTooLargeError as WatermarkTooLargeError
from dataset_skips import DEFAULT_COMPONENT
from dataset_threshold import CHECK_MAX_STEPS as CHECK_MAX_STEPS
from llm_cdk_shared import clients, env

if TYPE_CHECKING:  # the event models' names, for annotations: the classes are built on the first event
    from dataset_events import ConvertEvent, FinalizeEvent, PlanEvent, ValidateEvent

logger = Logger()
metrics = Metrics()

_s3 = clients.client_getter("s3")
_ssm = clients.client_getter("ssm")
_sfn = clients.client_getter("stepfunctions")

_models = events.models
"""The event models, built on the first event: pydantic is not imported on a cold start."""
_parse = events.parse_event

# Steps of the handlers that their tests call on this module.
_agent_totals = run_summary.agent_totals
_claim_chars = watermark.claim_chars
_claimed_previous = watermark.claimed_previous
_decode_watermark = watermark.decode_watermark
_execution_name = threshold.execution_name


def _now() -> datetime:
    return datetime.now(UTC)


def __getattr__(name: str) -> Any:
    """The event models (``PlanEvent``, ``ConvertEvent``, ...) as module attributes (PEP 562), built on first access."""
    if name in events.MODEL_NAMES:
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------------------------
# plan
# ---------------------------------------------------------------------------------------------


@metrics.log_metrics(raise_on_empty_metrics=False)
@logger.inject_lambda_context(clear_state=True)
def plan(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request: PlanEvent = _parse(_models().PlanEvent, event)
    max_objects = request.max_objects or env.integer("MAX_OBJECTS_PER_RUN", 100_000, error=InvalidEventError)
    settle = (
        request.settle_seconds
        if request.settle_seconds is not None
        else env.integer("SETTLE_SECONDS", 900, minimum=0, error=InvalidEventError)
    )
    cutoff = _now() - timedelta(seconds=settle)
    logger.append_keys(run_id=request.run_id)

    output, folders = planning.plan_run(request, max_objects=max_objects, cutoff=cutoff, s3=_s3, ssm=_ssm)
    metrics.add_metric(name="CaptureObjectsPlanned", unit=MetricUnit.Count, value=output["object_count"])
    logger.info(
        "plan written",
        extra={"object_count": output["object_count"], "folders": folders, "truncated": output["truncated"]},
    )
    return output


# ---------------------------------------------------------------------------------------------
# convert
# ---------------------------------------------------------------------------------------------


@metrics.log_metrics(raise_on_empty_metrics=False)
@logger.inject_lambda_context(clear_state=True)
def convert(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request: ConvertEvent = _parse(_models().ConvertEvent, event)
    batch = request.batch_input
    keys = [item.key for item in request.items]
    batch_id = conversion.batch_id(batch.run_id, keys)
    logger.append_keys(run_id=batch.run_id, batch_id=batch_id)

    converted = conversion.convert_batch(_s3, batch, keys, batch_id)
    read, missing, summary = converted.read, converted.missing, converted.summary
    metrics.add_metric(name="CaptureObjectsRead", unit=MetricUnit.Count, value=read)
    metrics.add_metric(name="RecordsIn", unit=MetricUnit.Count, value=summary["records_in"])
    metrics.add_metric(name="RecordsConverted", unit=MetricUnit.Count, value=summary["converted"])
    metrics.add_metric(name="RecordsDuplicate", unit=MetricUnit.Count, value=summary["duplicates"])
    metrics.add_metric(name="RecordsSkipped", unit=MetricUnit.Count, value=sum(summary["skipped"].values()))
    logger.info(
        "batch converted",
        extra={
            "objects": read,
            "objects_missing": len(missing),
            "counts": {k: summary[k] for k in ("records_in", "converted", "duplicates", "skipped")},
        },
    )
    return {
        "batch_id": batch_id,
        "objects": read,
        "objects_missing": len(missing),
        "objects_missing_sample": missing[:10],
        **summary,
    }


# ---------------------------------------------------------------------------------------------
# finalize
# ---------------------------------------------------------------------------------------------


@metrics.log_metrics(raise_on_empty_metrics=False)
@logger.inject_lambda_context(clear_state=True)
def finalize(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request: FinalizeEvent = _parse(_models().FinalizeEvent, event)
    plan_output = request.plan
    target = request.target_component or env.Environment().raw("TARGET_COMPONENT") or DEFAULT_COMPONENT
    logger.append_keys(run_id=plan_output.run_id)
    outputs, failed_batches, failed_objects = (
        map_results.collect_results(_s3, request.results) if request.results else ([], 0, 0)
    )
    tally = run_summary.tally_results(plan_output, outputs, failed_batches, failed_objects)
    manifests = run_summary.write_manifests(_s3, plan_output, tally.components)
    if tally.unattributed:
        logger.warning("records without a component name kept apart", extra={"unattributed": tally.unattributed})
        metrics.add_metric(name="RecordsUnattributed", unit=MetricUnit.Count, value=tally.unattributed)
    summary_key = run_summary.write_summary(_s3, plan_output, tally, manifests, target, created_at=_now().isoformat())
    # Only a complete run moves the watermark: objects of failed batches are converted again next run.
    commit = watermark.watermark_commit(plan_output, tally.complete)
    if not tally.complete:
        logger.warning("map run had failed batches; watermark left in place", extra={"failed_batches": failed_batches})
        metrics.add_metric(name="FailedBatches", unit=MetricUnit.Count, value=failed_batches)

    records = tally.records(target)
    metrics.add_metric(name="DatasetRecords", unit=MetricUnit.Count, value=records)
    logger.info(
        "dataset finalized",
        extra={"records": records, "components": len(tally.components), "watermark_moves": commit is not None},
    )
    return run_summary.finalize_output(plan_output, tally, manifests, target, summary_key, commit)


# ---------------------------------------------------------------------------------------------
# check (threshold trigger)
# ---------------------------------------------------------------------------------------------


@metrics.log_metrics(raise_on_empty_metrics=False)
@logger.inject_lambda_context(clear_state=True)
def check(event: Any, context: Any) -> dict[str, Any]:
    environment = env.Environment()
    state_machine = environment.text(
        "STATE_MACHINE_ARN", required=True, allowed="the EAGLE pipeline's state machine ARN"
    )
    parameter = environment.text("WATERMARK_PARAMETER", required=True, allowed="the watermark's SSM parameter name")
    bucket = environment.text("CAPTURE_BUCKET", required=True, allowed="the data capture bucket's name")
    prefix = environment.raw("CAPTURE_PREFIX").lstrip("/")
    needed = environment.integer("MIN_NEW_RECORDS", 1000)
    settle = environment.integer("SETTLE_SECONDS", 900, minimum=0)
    environment.check(InvalidEventError, "invalid function environment")
    cutoff = _now() - timedelta(seconds=settle)

    if threshold.run_in_progress(_sfn, state_machine):
        return {"started": False, "reason": "a run is in progress", "records_counted": 0, "objects_read": 0}

    stored = watermark.read_watermark(_ssm, parameter)
    counted, objects = threshold.count_new_records(_s3, bucket, prefix, stored, cutoff, limit=needed * CHECK_MAX_STEPS)
    metrics.add_metric(name="NewCaptureRecordsCounted", unit=MetricUnit.Count, value=counted)
    result: dict[str, Any] = {"records_counted": counted, "objects_read": objects}
    if counted < needed:
        return {**result, "started": False, "reason": f"{counted} new records, fewer than {needed}"}
    name = _execution_name(stored, min(counted // needed, CHECK_MAX_STEPS))
    started = threshold.start_run(_sfn, state_machine, name)
    if started is None:
        return {
            **result,
            "started": False,
            "execution_name": name,
            "reason": f"a run for these records was already started ({name}); the next starts after "
            f"another {needed} records arrive or the watermark moves",
        }
    logger.info("run started: enough new records", extra={"records": counted, "execution": name})
    return {
        **result,
        "started": True,
        "reason": f"at least {needed} new records",
        "execution_name": name,
        "execution_arn": started["executionArn"],
    }


# ---------------------------------------------------------------------------------------------
# validate_user_dataset
# ---------------------------------------------------------------------------------------------


@metrics.log_metrics(raise_on_empty_metrics=False)
@logger.inject_lambda_context(clear_state=True)
def validate_user_dataset(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request: ValidateEvent = _parse(_models().ValidateEvent, event)
    sample_lines = env.integer("VALIDATE_SAMPLE_LINES", 100, error=InvalidEventError)
    objects = validation.dataset_objects(_s3, request)
    detected, lines_checked = validation.dataset_format(_s3, request.s3_uri, objects, sample_lines)
    logger.info("dataset validated", extra={"format": detected, "objects": len(objects), "lines": lines_checked})
    return {
        "format": detected,
        "s3_uri": request.s3_uri,
        "objects_checked": [f"s3://{b}/{k}" for b, k in objects],
        "lines_checked": lines_checked,
    }
