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
  "unattributed", "skipped": {reason: n}, "watermark_commit"}``. ``component`` is ``target_component`` (default env ``TARGET_COMPONENT``);
  records that named no component are counted in ``unattributed`` and never in it. ``watermark_commit`` is
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
  runs for the same data (see ``_execution_name``). Reading stops at 10 steps.

Errors a state machine can match: ``InvalidEventError``, ``CaptureAccessDeniedError``,
``WatermarkTooLargeError``, ``MapRunIncompleteError``,
``ResultsFormatError``, ``DatasetFormatError``; AWS failures after retries surface as
``ClientError``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any, Literal

import eagle_dataset_core as core
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import ClientError
from llm_cdk_shared import clients, env
from llm_cdk_shared.aws_errors import not_found
from llm_cdk_shared.problems import not_a_boolean
from llm_cdk_shared.problems import problems as validation_problems
from llm_cdk_shared.problems import shown as _shown

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    from pydantic import BaseModel

    # classes that _models() builds on first use: Any for annotations
    ConvertEvent: TypeAlias = Any
    FinalizeEvent: TypeAlias = Any
    PlanEvent: TypeAlias = Any
    PlanOutput: TypeAlias = Any
    ResultsLocation: TypeAlias = Any
    ValidateEvent: TypeAlias = Any

logger = Logger()
metrics = Metrics()

_BUCKET = r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$"
_RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9_.=\-]{0,127}$"
_PARAMETER = r"^/?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$"
_YEAR = re.compile(r"\d{4}")
_CAPTURE_REL = re.compile(r"(\d{4})/(\d{2})/(\d{2})/(\d{2})/([^/]+)")
_FILE_TIME = re.compile(r"(\d{2})-(\d{2})-")
_WATERMARK_MAX_CHARS = 4096  # SSM standard-tier String parameter
_ACCESS_DENIED = {"AccessDenied", "AccessDeniedException", "AllAccessDisabled", "KMS.AccessDeniedException"}


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


class InvalidEventError(ValueError):
    """The event does not have the documented shape."""


class CaptureAccessDeniedError(RuntimeError):
    """S3 (or the KMS key behind it) refused access to capture data or outputs."""


class WatermarkTooLargeError(RuntimeError):
    """The per-folder watermark no longer fits in one SSM String parameter."""


class MapRunIncompleteError(RuntimeError):
    """Some Distributed Map batches failed, are pending, or are missing from the results."""


class ResultsFormatError(RuntimeError):
    """The ResultWriter files are not in the format Step Functions documents."""


class DatasetFormatError(ValueError):
    """A user dataset is not ShareGPT, OpenAI chat or OpenAI completions JSONL."""

    def __init__(self, message: str, *, line: int | None = None, s3_uri: str | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.s3_uri = s3_uri


# ---------------------------------------------------------------------------------------------
# Clients and settings
# ---------------------------------------------------------------------------------------------


_s3 = clients.client_getter("s3")
_ssm = clients.client_getter("ssm")
_sfn = clients.client_getter("stepfunctions")


def _now() -> datetime:
    return datetime.now(UTC)


def _encryption() -> dict[str, str]:
    """SSE-KMS with ``DATASET_KMS_KEY_ARN`` (the key the optimization job's role may decrypt with),
    named on every write so the training set is under that key whatever the bucket's default is.
    Unset: the bucket's default encryption applies."""
    key = env.Environment().raw("DATASET_KMS_KEY_ARN")
    return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": key} if key else {}


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


def _parse(model: type[BaseModel], event: Any) -> Any:
    from pydantic import ValidationError

    try:
        return model.model_validate(event)
    except ValidationError as error:
        raise InvalidEventError(f"{model.__name__} event is invalid: {'; '.join(validation_problems(error))}") from None


def _access_error(error: ClientError, what: str) -> Exception:
    code = error.response.get("Error", {}).get("Code", "")
    if code in _ACCESS_DENIED or code.endswith("AccessDeniedException"):
        return CaptureAccessDeniedError(
            f"{what} was refused ({code}). Grant the function's role access to it (and kms:Decrypt / "
            "kms:GenerateDataKey on the bucket's KMS key if it uses one)."
        )
    return error


# ---------------------------------------------------------------------------------------------
# Event models
# ---------------------------------------------------------------------------------------------


def _output_prefix(value: str) -> str:
    """An ``output_prefix`` the dataset keys can be written under as given (``core.output_prefix_problem``):
    refused by name in the event, before any S3 call, rather than written to ``../../x/<run id>/...``."""
    problem = core.output_prefix_problem(value)
    if problem:
        raise ValueError(f"got {_shown(value)}, which {problem}")
    return value


@functools.cache
def _models() -> SimpleNamespace:
    """The event models, built on the first event: pydantic is not imported on a cold start."""
    from pydantic import (
        AfterValidator,
        AliasChoices,
        BaseModel,
        BeforeValidator,
        ConfigDict,
        Field,
        field_validator,
        model_validator,
    )

    WholeNumber = Annotated[int, BeforeValidator(not_a_boolean)]  # true/false is no count
    OutputPrefix = Annotated[str, AfterValidator(_output_prefix)]  # keys are written under it as given

    class _Model(BaseModel):
        model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    class PlanEvent(_Model):
        capture_bucket: str = Field(pattern=_BUCKET)
        capture_prefix: str = Field(default="", max_length=512)
        output_bucket: str = Field(pattern=_BUCKET)
        output_prefix: OutputPrefix = Field(default="", max_length=512)
        run_id: str = Field(pattern=_RUN_ID)
        watermark_parameter: str = Field(pattern=_PARAMETER, max_length=1011)
        settle_seconds: WholeNumber | None = Field(default=None, ge=0)
        max_objects: WholeNumber | None = Field(default=None, ge=1)

        @field_validator("capture_prefix")
        @classmethod
        def _no_date_in_prefix(cls, value: str) -> str:
            if re.search(r"(^|/)\d{4}/\d{2}(/|$)", value):
                raise ValueError(
                    "must stop at or above the endpoint folder (the DataCaptureConfig DestinationS3Uri path, "
                    "optionally plus '<endpoint-name>/'), not inside the yyyy/mm/dd/hh folders"
                )
            return value.lstrip("/")

    class BatchInput(_Model):
        capture_bucket: str = Field(pattern=_BUCKET)
        capture_prefix: str | None = Field(default=None, max_length=512)
        output_bucket: str = Field(pattern=_BUCKET)
        output_prefix: OutputPrefix = Field(default="", max_length=512)
        run_id: str = Field(pattern=_RUN_ID)
        source: Literal["capture", "front_door"] = "capture"

    class BatchItem(_Model):
        key: str = Field(min_length=1, max_length=1024)

    class ConvertEvent(_Model):
        items: list[BatchItem] = Field(alias="Items", min_length=1)
        batch_input: BatchInput = Field(alias="BatchInput")

    class PlanOutput(_Model):
        output_bucket: str = Field(pattern=_BUCKET)
        output_prefix: OutputPrefix = Field(default="", max_length=512)  # as PlanEvent's: plan passes them on
        run_id: str = Field(pattern=_RUN_ID)
        watermark_parameter: str = Field(pattern=_PARAMETER, max_length=1011)
        object_count: WholeNumber = Field(ge=0)
        watermark_value: str | None = None
        watermark_previous_value: str | None = None
        watermark_stored_value: str | None = None
        new_watermark: str | None = None
        capture_bucket: str | None = None
        capture_prefix: str | None = None

    class ResultsLocation(_Model):
        """``{"results_bucket", "results_manifest_key"}``, or the Distributed Map's ResultWriterDetails
        ``{"Bucket", "Key"}``: a problem names the field as the input spelt it."""

        results_bucket: str = Field(pattern=_BUCKET, validation_alias=AliasChoices("results_bucket", "Bucket"))
        results_manifest_key: str = Field(
            min_length=1,
            max_length=1024,  # an S3 key
            validation_alias=AliasChoices("results_manifest_key", "Key"),
        )

        @model_validator(mode="before")
        @classmethod
        def _whole_result_writer_details(cls, value: Any) -> Any:
            if isinstance(value, dict) and ("Bucket" in value) != ("Key" in value):
                raise ValueError(
                    f"got {_shown(value)}; allowed: the Distributed Map's ResultWriterDetails with both "
                    "Bucket and Key (or results_bucket and results_manifest_key)"
                )
            return value

    class FinalizeEvent(_Model):
        plan: PlanOutput
        results: ResultsLocation | None = None
        target_component: str | None = Field(
            default=None, pattern=r"^(base|[a-zA-Z0-9](-*[a-zA-Z0-9])*)$", max_length=63
        )

    class ValidateEvent(_Model):
        s3_uri: str = Field(pattern=r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/.*)?$")
        s3_data_type: Literal["S3Prefix", "ManifestFile"] = "S3Prefix"

    found = locals()
    return SimpleNamespace(**{name: found[name] for name in _MODEL_NAMES})


_MODEL_NAMES = (
    "PlanEvent",
    "BatchInput",
    "BatchItem",
    "ConvertEvent",
    "PlanOutput",
    "ResultsLocation",
    "FinalizeEvent",
    "ValidateEvent",
)


def __getattr__(name: str) -> Any:
    """The event models (``PlanEvent``, ``ConvertEvent``, ...) as module attributes (PEP 562), built on first access."""
    if name in _MODEL_NAMES:
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------------------------
# plan
# ---------------------------------------------------------------------------------------------


def _read_watermark(name: str) -> str | None:
    try:
        return _ssm().get_parameter(Name=name)["Parameter"]["Value"]
    except ClientError as error:
        if not_found(error, "ssm"):
            return None
        raise


def _claimed_previous(value: str | None) -> str | None:
    """The watermark a claim's window starts after (``{"v":1,"claim":{"previous": ...}}``), else ``value``.

    The job's start writes the claim just before it creates its job and replaces it with the window's end
    just after; a claim that is still there was left by an invocation that ended in between. Planning from
    its ``previous`` re-reads the window; the next start settles whether that job exists before anything
    trains on it again (``lambda/eagle_job``)."""
    if value and value.startswith('{"v":1,"claim":'):
        try:
            previous = json.loads(value)["claim"]["previous"]
        except (ValueError, KeyError, TypeError):
            return value
        return previous if isinstance(previous, str) or previous is None else value
    return value


def _claim_chars(previous: str | None, value: str, run_id: str) -> int:
    """Characters of the claim the job's start writes for this window (its longest job name, 63)."""
    return len(
        json.dumps(
            {
                "v": 1,
                "claim": {
                    "job": "j" * 63,
                    "run_id": run_id,
                    "claimed_at": "2026-01-01T00:00:00Z",
                    "previous": previous,
                    "value": value,
                },
            },
            separators=(",", ":"),
        )
    )


def _decode_watermark(value: str | None) -> tuple[dict[str, str], str | None]:
    """SSM value -> (folder -> last key, legacy single key). Both empty when unset; a claim reads as its previous."""
    value = _claimed_previous(value)
    if not value:
        return {}, None
    if value.startswith("{"):
        try:
            decoded = json.loads(value)
            folders = decoded["after"]
            if isinstance(folders, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in folders.items()):
                return {folder: folder + rest for folder, rest in folders.items()}, None
        except (ValueError, KeyError, TypeError):
            pass
    return {}, value  # a plain object key (the format of the first version) or a foreign value


def _encode_watermark(folders: dict[str, str]) -> str:
    return json.dumps(
        {"v": 1, "after": {folder: key[len(folder) :] for folder, key in sorted(folders.items())}},
        separators=(",", ":"),
    )


def _capture_folders(bucket: str, prefix: str, depth: int = 0) -> list[str]:
    """Folders whose children are ``yyyy`` folders (``<endpoint>/<variant>/`` and the like)."""
    children: list[str] = []
    paginator = _s3().get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
        children += [cp["Prefix"] for cp in page.get("CommonPrefixes", [])]
    if prefix.endswith("/") and any(_YEAR.fullmatch(c[len(prefix) :].rstrip("/")) for c in children):
        return [prefix]
    if depth >= 6:
        return []
    folders: list[str] = []
    for child in children:
        folders += _capture_folders(bucket, child, depth + 1)
    return folders


def _key_time(folder: str, key: str) -> datetime | None:
    match = _CAPTURE_REL.fullmatch(key[len(folder) :])
    if not match:
        return None
    year, month, day, hour, name = match.groups()
    try:
        hour_start = datetime(int(year), int(month), int(day), int(hour), tzinfo=UTC)
    except ValueError:
        return None
    file_time = _FILE_TIME.match(name)
    if file_time and int(file_time.group(1)) < 60 and int(file_time.group(2)) < 60:
        return hour_start + timedelta(minutes=int(file_time.group(1)), seconds=int(file_time.group(2)) + 1)
    return hour_start + timedelta(hours=1)  # unknown minute: assume the end of the hour


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

    stored_value = _read_watermark(request.watermark_parameter)
    previous_value = _claimed_previous(stored_value)
    folders_after, legacy_after = _decode_watermark(previous_value)
    try:
        folders = _capture_folders(request.capture_bucket, request.capture_prefix)
    except ClientError as error:
        raise _access_error(error, f"Listing s3://{request.capture_bucket}/{request.capture_prefix}") from error

    keys: list[str] = []
    new_after = dict(folders_after)
    truncated = False
    paginator = _s3().get_paginator("list_objects_v2")
    for folder in sorted(folders):
        start_after = folders_after.get(folder) or legacy_after
        params = {"Bucket": request.capture_bucket, "Prefix": folder}
        if start_after and start_after >= folder:
            params["StartAfter"] = start_after
        done = False
        for page in paginator.paginate(**params):
            for obj in page.get("Contents", []):
                key = obj["Key"]
                key_time = _key_time(folder, key)
                if key_time is None:
                    continue  # not a capture file (folder marker, stray object)
                if key_time > cutoff:
                    done = True  # keys sort by time within a folder: the rest is newer still
                    break
                if len(keys) >= max_objects:
                    done = truncated = True
                    break
                keys.append(key)
                new_after[folder] = key
            if done:
                break
        if truncated:
            break

    watermark_value = _encode_watermark(new_after) if new_after else previous_value
    # the claim the job's start writes holds both ends of the window: it must fit as well
    needed = _claim_chars(previous_value, watermark_value, request.run_id) if watermark_value else 0
    if needed > _WATERMARK_MAX_CHARS:
        raise WatermarkTooLargeError(
            f"The watermark for {len(new_after)} capture folders needs {needed} characters (the claim that holds the "
            f"window's start and end while its job starts); an SSM String "
            f"parameter holds {_WATERMARK_MAX_CHARS}. Narrow capture_prefix to one endpoint "
            f"(s3://{request.capture_bucket}/{request.capture_prefix}<endpoint-name>/) and run one pipeline per endpoint."
        )
    manifest_key = _join(request.output_prefix, request.run_id, "plan", "items.json")
    body = ("[" + ",".join(json.dumps({"key": key}) for key in keys) + "]").encode("utf-8")
    _s3().put_object(
        Bucket=request.output_bucket, Key=manifest_key, Body=body, ContentType="application/json", **_encryption()
    )

    previous_keys = list(folders_after.values()) + ([legacy_after] if legacy_after else [])
    new_watermark = max(keys + previous_keys) if keys or previous_keys else None
    metrics.add_metric(name="CaptureObjectsPlanned", unit=MetricUnit.Count, value=len(keys))
    logger.info("plan written", extra={"object_count": len(keys), "folders": len(folders), "truncated": truncated})
    return {
        "manifest_bucket": request.output_bucket,
        "manifest_key": manifest_key,
        "object_count": len(keys),
        "new_watermark": new_watermark,
        "previous_watermark": max(previous_keys) if previous_keys else None,
        "watermark_value": watermark_value,
        "watermark_previous_value": previous_value,
        "watermark_stored_value": stored_value,
        "watermark_parameter": request.watermark_parameter,
        "truncated": truncated,
        "capture_bucket": request.capture_bucket,
        "capture_prefix": request.capture_prefix,
        "output_bucket": request.output_bucket,
        "output_prefix": request.output_prefix,
        "run_id": request.run_id,
    }


# ---------------------------------------------------------------------------------------------
# convert
# ---------------------------------------------------------------------------------------------


class _ShardWriter:
    """Buffers JSONL lines per component and writes them as bounded-size S3 objects."""

    def __init__(self, bucket: str, data_prefix: str, batch_id: str, shard_max: int, budget: int) -> None:
        self.bucket, self.data_prefix, self.batch_id = bucket, data_prefix, batch_id
        self.shard_max, self.budget = shard_max, budget
        self.buffers: dict[str, list[bytes]] = {}
        self.sizes: dict[str, int] = {}
        self.total = 0
        self.shards: dict[str, list[str]] = defaultdict(list)
        self.bytes_written: Counter[str] = Counter()

    def add(self, component: str, line: bytes) -> None:
        self.buffers.setdefault(component, []).append(line)
        size = self.sizes[component] = self.sizes.get(component, 0) + len(line)
        self.total += len(line)
        if size >= self.shard_max:
            self._flush(component)
        elif self.total >= self.budget:
            self._flush(max(self.sizes, key=self.sizes.__getitem__))

    def close(self) -> None:
        for component in sorted(self.buffers):
            self._flush(component)

    def _flush(self, component: str) -> None:
        lines = self.buffers.pop(component, None)
        size = self.sizes.pop(component, 0)
        self.total -= size
        if not lines:
            return
        name = f"part-{self.batch_id}-{len(self.shards[component]):05d}.jsonl"
        body = b"".join(lines)
        lines.clear()
        key = _join(self.data_prefix, component, name)
        try:
            _s3().put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/jsonl", **_encryption())
        except ClientError as error:
            raise _access_error(error, f"Writing s3://{self.bucket}/{key}") from error
        self.shards[component].append(name)
        self.bytes_written[component] += size


def _object_chunks(bucket: str, key: str, chunk_size: int) -> Generator[bytes | core.UnreadableData, None, None] | None:
    try:
        body = _s3().get_object(Bucket=bucket, Key=key)["Body"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None
        raise _access_error(error, f"Reading s3://{bucket}/{key}") from error

    def chunks() -> Iterator[bytes]:
        try:
            yield from body.iter_chunks(chunk_size)
        finally:
            body.close()

    # Compression is read from the bytes (gzip magic 1f 8b), not the key's suffix; corrupt or
    # unsupported data ends in an UnreadableData marker the converter counts, never an exception.
    return core.iter_object_data(chunks())


@metrics.log_metrics(raise_on_empty_metrics=False)
@logger.inject_lambda_context(clear_state=True)
def convert(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request: ConvertEvent = _parse(_models().ConvertEvent, event)
    batch = request.batch_input
    keys = [item.key for item in request.items]
    batch_id = hashlib.sha256("\n".join([batch.run_id, *keys]).encode("utf-8")).hexdigest()[:16]
    logger.append_keys(run_id=batch.run_id, batch_id=batch_id)

    converter = core.BatchConverter(
        default_component=env.Environment().raw("UNNAMED_RECORDS_COMPONENT") or None,
        source=batch.source,
        dedup_max_entries=env.integer("DEDUP_MAX_ENTRIES", 500_000, error=InvalidEventError),
        max_components=env.integer("MAX_COMPONENTS", 64, error=InvalidEventError),
    )
    writer = _ShardWriter(
        batch.output_bucket,
        _join(batch.output_prefix, batch.run_id, "data"),
        batch_id,
        env.integer("SHARD_MAX_BYTES", 16 << 20, error=InvalidEventError),
        env.integer("BUFFER_BUDGET_BYTES", 32 << 20, error=InvalidEventError),
    )
    max_line = env.integer("MAX_LINE_BYTES", 8 << 20, error=InvalidEventError)
    chunk_size = env.integer("READ_CHUNK_BYTES", 1 << 20, error=InvalidEventError)
    missing: list[str] = []
    read = 0
    for key in keys:
        chunks = _object_chunks(batch.capture_bucket, key, chunk_size)
        if chunks is None:
            missing.append(key)  # removed (e.g. by a lifecycle rule) after plan listed it
            continue
        path_component = (
            core.component_from_key(key, batch.capture_prefix) if batch.capture_prefix is not None else None
        )
        lines = core.iter_bounded_line_views(chunks, max_line)  # parsed in place, no copy per line
        for component, line in converter.convert_lines(lines, path_component=path_component):
            writer.add(component, line)
        read += 1
    writer.close()

    summary = converter.summary()
    for name, stats in summary["components"].items():
        stats["shards"] = writer.shards.get(name, [])
        stats["bytes"] = writer.bytes_written.get(name, 0)
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


def _iter_result_entries(bucket: str, key: str) -> Iterator[Any]:
    body = _s3().get_object(Bucket=bucket, Key=key)["Body"]
    try:
        chunks = body.iter_chunks(1 << 20)
        if key.endswith(".jsonl"):
            for line in core.iter_bounded_lines(chunks, 64 << 20):
                if isinstance(line, core.OversizedLine):
                    raise ResultsFormatError(f"s3://{bucket}/{key} has a line of {line.size} bytes")
                if isinstance(line, core.UnreadableData):  # not from raw chunks; for the reader's full contract
                    raise ResultsFormatError(f"s3://{bucket}/{key} cannot be read ({line.reason})")
                if line.strip():
                    yield json.loads(line)
        else:
            yield from core.iter_json_array(chunks)
    except ValueError as error:
        raise ResultsFormatError(f"s3://{bucket}/{key} is not a Step Functions result file: {error}") from None
    finally:
        body.close()


def _batch_output(entry: Any, where: str) -> dict[str, Any]:
    """One ResultWriter entry (NONE transformation: ``{"Output": "<json>"}``; COMPACT: the output)."""
    output = entry.get("Output") if isinstance(entry, dict) and "Output" in entry else entry
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except ValueError:
            raise ResultsFormatError(f"{where}: an Output is not JSON") from None
    if not isinstance(output, dict) or "batch_id" not in output or not isinstance(output.get("components"), dict):
        raise ResultsFormatError(f"{where}: an entry is not a convert result (no batch_id/components)")
    return output


def _failed_items(entry: Any, where: str) -> int:
    """Capture objects in one FAILED/PENDING child execution (from its ``Input``)."""
    batch = entry.get("Input") if isinstance(entry, dict) else None
    try:
        items = json.loads(batch)["Items"] if isinstance(batch, str) else None
    except (ValueError, KeyError, TypeError):
        items = None
    if not isinstance(items, list):
        raise MapRunIncompleteError(
            f"{where}: a failed batch has no readable Input, so the objects it held cannot be accounted for. "
            "Nothing was published and the watermark was not moved; fix the cause and run again."
        )
    return len(items)


def _collect_results(location: ResultsLocation) -> tuple[list[dict[str, Any]], int, int]:
    """ResultWriter manifest -> (convert outputs of succeeded batches, failed batches, objects in them)."""
    try:
        manifest = json.loads(
            _s3().get_object(Bucket=location.results_bucket, Key=location.results_manifest_key)["Body"].read()
        )
    except ClientError as error:
        raise _access_error(error, f"Reading s3://{location.results_bucket}/{location.results_manifest_key}") from error
    except ValueError:
        raise ResultsFormatError(
            f"s3://{location.results_bucket}/{location.results_manifest_key} is not JSON"
        ) from None
    files = manifest.get("ResultFiles") if isinstance(manifest, dict) else None
    if not isinstance(files, dict):
        raise ResultsFormatError(
            f"s3://{location.results_bucket}/{location.results_manifest_key} has no ResultFiles; pass the manifest.json "
            "that the Distributed Map ResultWriter wrote (ResultWriterDetails.Key)"
        )
    bucket = manifest.get("DestinationBucket") or location.results_bucket

    def entries(status: str) -> Iterator[tuple[Any, str]]:
        for result_file in files.get(status) or []:
            key = result_file.get("Key") if isinstance(result_file, dict) else None
            if not isinstance(key, str):
                raise ResultsFormatError(f"a {status} entry of the result manifest has no Key")
            for entry in _iter_result_entries(bucket, key):
                yield entry, f"s3://{bucket}/{key}"

    outputs: dict[str, dict[str, Any]] = {}
    for entry, where in entries("SUCCEEDED"):
        output = _batch_output(entry, where)
        outputs[output["batch_id"]] = output
    failed_batches = failed_objects = 0
    for status in ("FAILED", "PENDING"):
        for entry, where in entries(status):
            failed_batches += 1
            failed_objects += _failed_items(entry, where)
    return list(outputs.values()), failed_batches, failed_objects


def _watermark_commit(plan_output: PlanOutput, complete: bool) -> dict[str, Any] | None:
    """Where the job's start moves the watermark once its job exists; None when it stays.

    Nothing is written here: a run that trains nothing, or fails or is aborted before its job exists, leaves
    the parameter as it was, so its captures are read again by the next run."""
    new, previous = plan_output.watermark_value, plan_output.watermark_previous_value
    if not complete or not new or new == previous:
        return None
    return {
        "parameter": plan_output.watermark_parameter,
        "stored": plan_output.watermark_stored_value,
        "previous": previous,
        "value": new,
    }


@metrics.log_metrics(raise_on_empty_metrics=False)
@logger.inject_lambda_context(clear_state=True)
def finalize(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request: FinalizeEvent = _parse(_models().FinalizeEvent, event)
    plan_output = request.plan
    target = request.target_component or env.Environment().raw("TARGET_COMPONENT") or core.DEFAULT_COMPONENT
    logger.append_keys(run_id=plan_output.run_id)
    outputs, failed_batches, failed_objects = _collect_results(request.results) if request.results else ([], 0, 0)

    objects = sum(o.get("objects", 0) for o in outputs)
    missing = sum(o.get("objects_missing", 0) for o in outputs)
    if objects + missing + failed_objects < plan_output.object_count:
        raise MapRunIncompleteError(
            f"The plan listed {plan_output.object_count} capture objects but the batch results account for "
            f"{objects + missing + failed_objects}. Pass the ResultWriter manifest of this run's Distributed Map; "
            "the watermark was not moved."
        )
    complete = failed_batches == 0
    totals = {"records_in": 0, "converted": 0, "duplicates": 0}
    skipped: Counter[str] = Counter()
    components: dict[str, dict[str, Any]] = {}
    for output in outputs:
        for name, stats in output["components"].items():
            merged = components.setdefault(
                name, {"records_in": 0, "converted": 0, "duplicates": 0, "skipped": Counter(), "shards": [], "bytes": 0}
            )
            for field in ("records_in", "converted", "duplicates", "bytes"):
                merged[field] += int(stats.get(field, 0))
            merged["skipped"].update(stats.get("skipped", {}))
            merged["shards"] += stats.get("shards", [])
            if stats.get("tool_calling") or stats.get("dropped"):  # agent traffic (eagle_dataset_core.DROPPED_PARTS)
                merged["tool_calling"] = merged.get("tool_calling", 0) + int(stats.get("tool_calling", 0))
                merged.setdefault("dropped", Counter()).update(stats.get("dropped", {}))
    for stats in components.values():
        for field in totals:
            totals[field] += stats[field]
        skipped.update(stats["skipped"])
        if stats["records_in"] != stats["converted"] + stats["duplicates"] + sum(stats["skipped"].values()):
            raise ResultsFormatError("batch counts do not add up (records_in != converted + duplicates + skipped)")

    bucket = plan_output.output_bucket
    run_prefix = _join(plan_output.output_prefix, plan_output.run_id)
    component_uris: dict[str, str] = {}
    manifest_uris: dict[str, str] = {}
    for name, stats in sorted(components.items()):
        if not stats["shards"]:
            continue
        prefix_uri = f"s3://{bucket}/{_join(run_prefix, 'data', name)}/"
        manifest_key = _join(run_prefix, "manifests", f"{name}.json")
        body = json.dumps([{"prefix": prefix_uri}, *sorted(stats["shards"])]).encode("utf-8")
        _s3().put_object(Bucket=bucket, Key=manifest_key, Body=body, ContentType="application/json", **_encryption())
        component_uris[name] = prefix_uri
        manifest_uris[name] = f"s3://{bucket}/{manifest_key}"

    requested = target
    # No fallback to "base": records that name no component are the convert step's to attribute
    # (UNNAMED_RECORDS_COMPONENT) or to keep apart, never finalize's to guess.
    unattributed = sum(stats["skipped"].get("unattributed_component", 0) for stats in components.values())
    records = components.get(target, {}).get("converted", 0)
    training_uri = f"s3://{bucket}/{_join(run_prefix, 'data', target)}/"
    reason = (
        ""
        if records
        else (
            f"No training records for component '{target}' in run {plan_output.run_id}: {plan_output.object_count} capture "
            f"objects, {totals['records_in']} lines, {totals['converted']} converted in all components, skipped "
            f"{dict(skipped) or 'none'}. Capture more traffic, or set target_component to one of {sorted(component_uris) or 'none'}."
            + (
                f" {unattributed} records named no inference component and were kept apart (unattributed_component): "
                "they may be adapter traffic, so they never train a component's head."
                if unattributed
                else ""
            )
        )
    )
    if unattributed:
        logger.warning("records without a component name kept apart", extra={"unattributed": unattributed})
        metrics.add_metric(name="RecordsUnattributed", unit=MetricUnit.Count, value=unattributed)
    summary_key = _join(run_prefix, "summary.json")
    summary = {
        "run_id": plan_output.run_id,
        "created_at": _now().isoformat(),
        "capture": {"bucket": plan_output.capture_bucket, "prefix": plan_output.capture_prefix},
        "objects": objects,
        "objects_missing": missing,
        "batches": len(outputs),
        **totals,
        "skipped": dict(sorted(skipped.items())),
        "unattributed": unattributed,
        "unattributed_note": "records that name no inference component (AWS does not document that Data Capture "
        "records of inference-component endpoints do); counted, never used for training",
        **_agent_totals(components),
        "components": {
            name: {
                **{k: v for k, v in stats.items() if k not in ("shards", "skipped", "dropped")},
                "skipped": dict(sorted(stats["skipped"].items())),
                **({"dropped": dict(sorted(stats["dropped"].items()))} if "dropped" in stats else {}),
                "shard_count": len(stats["shards"]),
                "s3_uri": component_uris.get(name),
                "manifest_s3_uri": manifest_uris.get(name),
            }
            for name, stats in sorted(components.items())
        },
        "dedup_scope": "exact duplicates are removed within each Distributed Map batch and component, not across batches or runs",
        "dedup_saturated_batches": sum(1 for o in outputs if o.get("dedup_saturated")),
        "target_component": target,
        "requested_component": requested,
        "empty": records == 0,
        "complete": complete,
        "failed_batches": failed_batches,
        "failed_objects": failed_objects,
        "watermark": {"parameter": plan_output.watermark_parameter, "new_watermark": plan_output.new_watermark},
    }
    _s3().put_object(
        Bucket=bucket,
        Key=summary_key,
        Body=json.dumps(summary, indent=1).encode("utf-8"),
        ContentType="application/json",
        **_encryption(),
    )
    # Only a complete run moves the watermark: objects of failed batches are converted again next run.
    watermark_commit = _watermark_commit(plan_output, complete)
    if not complete:
        logger.warning("map run had failed batches; watermark left in place", extra={"failed_batches": failed_batches})
        metrics.add_metric(name="FailedBatches", unit=MetricUnit.Count, value=failed_batches)

    metrics.add_metric(name="DatasetRecords", unit=MetricUnit.Count, value=records)
    logger.info(
        "dataset finalized",
        extra={"records": records, "components": len(components), "watermark_moves": watermark_commit is not None},
    )
    return {
        "training_data_s3_uri": training_uri,
        "s3_data_type": "S3Prefix",
        "manifest_s3_uri": manifest_uris.get(target),
        "records": records,
        "empty": records == 0,
        "reason": reason,
        "component": target,
        "requested_component": requested,
        "complete": complete,
        "failed_batches": failed_batches,
        "summary_key": summary_key,
        "summary_s3_uri": f"s3://{bucket}/{summary_key}",
        "component_uris": component_uris,
        "component_records": {name: stats["converted"] for name, stats in sorted(components.items())},
        "unattributed": unattributed,
        "skipped": dict(sorted(skipped.items())),
        "watermark_commit": watermark_commit,
    }


def _agent_totals(components: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``tool_calling`` (records written with tool calls or tool results) and ``dropped`` (what those records
    leave out: the request's tool definitions, the model's reasoning) over all components; nothing when the
    run saw no agent traffic, so other summaries keep their shape."""
    agent = [stats for stats in components.values() if "tool_calling" in stats]
    if not agent:
        return {}
    dropped: Counter[str] = Counter()
    for stats in agent:
        dropped.update(stats.get("dropped", {}))
    return {
        "tool_calling": sum(stats["tool_calling"] for stats in agent),
        "dropped": dict(sorted(dropped.items())),
        "dropped_note": "tool-calling turns are written as OpenAI chat messages (assistant tool_calls, tool "
        "results); the request's tool definitions and the model's reasoning have no field in "
        "the format the optimization job documents, so they are left out and counted here",
    }


# ---------------------------------------------------------------------------------------------
# check (threshold trigger)
# ---------------------------------------------------------------------------------------------


def _count_lines(chunks: Iterator[Any], limit: int) -> int:
    """Lines (records) in an object's data, stopping once ``limit`` is reached. Unreadable data counts nothing."""
    count = 0
    tail = b""
    for chunk in chunks:
        if chunk.__class__ is core.UnreadableData:
            return count
        count += chunk.count(b"\n")
        tail = chunk[-1:] if chunk else tail
        if count >= limit:
            return count
    return count + (1 if tail and tail != b"\n" else 0)


#: The check reads at most this many thresholds' worth of lines after the watermark.
CHECK_MAX_STEPS = 10


def _execution_name(watermark: str | None, step: int) -> str:
    """``records-<watermark hash>-<step>``: one run per watermark and per ``min_new_records`` step of new lines.

    A run that trains moves the watermark (a new name). A run that does not (records that do not convert,
    e.g. unattributed ones) leaves it where it was: the same name comes again and Step Functions refuses
    it (names are unique for 90 days), so the next run waits until another ``min_new_records`` lines arrived.
    """
    digest = hashlib.sha256((watermark or "").encode("utf-8")).hexdigest()[:16]
    return f"records-{digest}-{step}"  # 1-80 characters of [A-Za-z0-9-_]


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

    running = _sfn().list_executions(stateMachineArn=state_machine, statusFilter="RUNNING", maxResults=1)
    if running.get("executions"):
        return {"started": False, "reason": "a run is in progress", "records_counted": 0, "objects_read": 0}

    watermark = _read_watermark(parameter)
    folders_after, legacy_after = _decode_watermark(watermark)
    limit = needed * CHECK_MAX_STEPS
    try:
        folders = _capture_folders(bucket, prefix)
        counted = objects = 0
        paginator = _s3().get_paginator("list_objects_v2")
        for folder in sorted(folders):
            start_after = folders_after.get(folder) or legacy_after
            params = {"Bucket": bucket, "Prefix": folder}
            if start_after and start_after >= folder:
                params["StartAfter"] = start_after
            for page in paginator.paginate(**params):
                for obj in page.get("Contents", []):
                    key_time = _key_time(folder, obj["Key"])
                    if key_time is None:
                        continue
                    if key_time > cutoff:
                        break  # the rest of this folder is newer still (plan leaves it too)
                    chunks = _object_chunks(bucket, obj["Key"], 1 << 20)
                    if chunks is None:
                        continue
                    counted += _count_lines(chunks, limit - counted)
                    chunks.close()
                    objects += 1
                    if counted >= limit:
                        break
                else:
                    continue
                break
            if counted >= limit:
                break
    except ClientError as error:
        raise _access_error(error, f"Reading s3://{bucket}/{prefix}") from error
    metrics.add_metric(name="NewCaptureRecordsCounted", unit=MetricUnit.Count, value=counted)
    result: dict[str, Any] = {"records_counted": counted, "objects_read": objects}
    if counted < needed:
        return {**result, "started": False, "reason": f"{counted} new records, fewer than {needed}"}
    name = _execution_name(watermark, min(counted // needed, CHECK_MAX_STEPS))
    try:
        started = _sfn().start_execution(stateMachineArn=state_machine, name=name, input="{}")
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
            return {
                **result,
                "started": False,
                "execution_name": name,
                "reason": f"a run for these records was already started ({name}); the next starts after "
                f"another {needed} records arrive or the watermark moves",
            }
        raise
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


def _expected_formats() -> str:
    return "; ".join(f"{name} {shape}" for name, shape in core.DATASET_FORMATS.items())


def _sample_objects(uri: str, data_type: str, max_objects: int) -> list[tuple[str, str]]:
    bucket, _, key = uri[len("s3://") :].partition("/")
    if data_type == "ManifestFile":
        body = _s3().get_object(Bucket=bucket, Key=key)["Body"]
        try:
            raw = body.read(16 << 20)
        finally:
            body.close()
        try:
            manifest = json.loads(raw)
            prefix = manifest[0]["prefix"]
            entries = [e for e in manifest[1:] if isinstance(e, str)]
        except (ValueError, LookupError, TypeError):
            raise DatasetFormatError(
                f'{uri} is not a SageMaker manifest file; expected [{{"prefix": "s3://bucket/path/"}}, "relative/key", ...]',
                s3_uri=uri,
            ) from None
        if not isinstance(prefix, str) or not prefix.startswith("s3://"):
            raise DatasetFormatError(f"{uri}: the manifest prefix must be an s3:// URI", s3_uri=uri)
        manifest_bucket, _, manifest_prefix = prefix[len("s3://") :].partition("/")
        return [(manifest_bucket, manifest_prefix + entry) for entry in entries[:max_objects]]
    found: list[tuple[str, str]] = []
    paginator = _s3().get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=key):
        for obj in page.get("Contents", []):
            if not obj["Key"].endswith("/") and obj.get("Size", 0) > 0:
                found.append((bucket, obj["Key"]))
                if len(found) >= max_objects:
                    return found
    return found


_UNREADABLE = {
    "unsupported_compression": "it is compressed in a format other than gzip (bzip2, xz, zstd, zip, ...)",
    "corrupt_compressed_object": "it starts as gzip but does not decompress (cut short or damaged)",
}
"""What an UnreadableData marker of the dataset reader means, in a user's words."""


@metrics.log_metrics(raise_on_empty_metrics=False)
@logger.inject_lambda_context(clear_state=True)
def validate_user_dataset(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request: ValidateEvent = _parse(_models().ValidateEvent, event)
    sample_lines = env.integer("VALIDATE_SAMPLE_LINES", 100, error=InvalidEventError)
    try:
        objects = _sample_objects(
            request.s3_uri, request.s3_data_type, env.integer("VALIDATE_MAX_OBJECTS", 3, error=InvalidEventError)
        )
    except ClientError as error:
        raise _access_error(error, f"Reading {request.s3_uri}") from error
    if not objects:
        raise DatasetFormatError(
            f"No non-empty objects under {request.s3_uri}. Upload JSONL training data there (one record per line): "
            f"{_expected_formats()}.",
            s3_uri=request.s3_uri,
        )
    detected: str | None = None
    lines_checked = 0
    for bucket, key in objects:
        where = f"s3://{bucket}/{key}"
        chunks = _object_chunks(bucket, key, 256 << 10)
        if chunks is None:
            raise DatasetFormatError(f"{where} (listed in {request.s3_uri}) does not exist", s3_uri=where)
        count = 0
        for number, line in enumerate(core.iter_bounded_lines(chunks, 8 << 20), start=1):
            problem = ""
            fmt = None
            if isinstance(line, core.UnreadableData):  # the object's bytes, not a line: raise once for the object
                chunks.close()
                raise DatasetFormatError(
                    f"{where} cannot be read: {_UNREADABLE.get(line.reason, line.reason)}. "
                    f"Upload it as plain JSON Lines (or gzip), every record in one of: {_expected_formats()}.",
                    s3_uri=where,
                )
            if isinstance(line, core.OversizedLine):
                problem = f"is {line.size} bytes long (limit {8 << 20})"
            elif not line.strip():
                continue
            else:
                try:
                    fmt, problem = core.detect_dataset_format(json.loads(line.decode("utf-8")))
                except UnicodeDecodeError:
                    problem = "is not UTF-8 text"
                except (ValueError, RecursionError):
                    problem = "is not a JSON document"
            if fmt is None:
                raise DatasetFormatError(
                    f"Line {number} of {where} {problem if problem.startswith('is') else 'is ' + problem}. "
                    f"Expected JSON Lines, every record in one of: {_expected_formats()}.",
                    line=number,
                    s3_uri=where,
                )
            if detected is None:
                detected = fmt
            elif fmt != detected:
                raise DatasetFormatError(
                    f"Line {number} of {where} is {fmt} but earlier records are {detected}. "
                    "Use one format for the whole dataset.",
                    line=number,
                    s3_uri=where,
                )
            count += 1
            lines_checked += 1
            if count >= sample_lines:
                break
        chunks.close()
    if detected is None:
        raise DatasetFormatError(
            f"{request.s3_uri} holds only blank lines. Expected: {_expected_formats()}.", s3_uri=request.s3_uri
        )
    logger.info("dataset validated", extra={"format": detected, "objects": len(objects), "lines": lines_checked})
    return {
        "format": detected,
        "s3_uri": request.s3_uri,
        "objects_checked": [f"s3://{b}/{k}" for b, k in objects],
        "lines_checked": lines_checked,
    }
