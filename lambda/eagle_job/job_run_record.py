"""The run record: the DynamoDB item ``record`` writes for each run, and the S3 report beside it.

The item (runs table: partition key ``model_name``, sort key ``run_id``) holds what the job was asked to do,
how it ended, what its results said (``results_unparsed``: a completed job whose results gave no numbers), the
decision with its reason and comparison basis, and the first ``MAX_LISTING_IN_RECORD`` objects of the job's
output; the report (``<REPORT_S3_URI>/<model>/<run_id>.json``) holds the same plus the whole dataset summary,
the parsed results and the listing of up to ``job_outputs.MAX_LISTING_OBJECTS`` objects. Writing the same
record again (a retry) is noticed, so its metrics are not published twice. The clients are the caller's.
"""

from __future__ import annotations

import functools
import json
import urllib.parse
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from job_request import parse_s3_uri
from job_status import began, ended
from job_times import iso

if TYPE_CHECKING:  # names in annotations only
    from typing import TypeAlias

    from job_promotion import Promotion
    from job_results import ResultsSummary

    RecordEvent: TypeAlias = Any  # job_events.models().RecordEvent, built on first use

MAX_SUMMARY_BYTES_IN_RECORD = 32 * 1024
MAX_LISTING_IN_RECORD = 200


def to_dynamo(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` in DynamoDB's attribute form (numbers as Decimal; anything JSON cannot hold as its str)."""
    from boto3.dynamodb.types import TypeSerializer  # only the record path needs it: not on the cold start

    plain = json.loads(json.dumps(item, default=str), parse_float=Decimal)
    serializer = TypeSerializer()
    return {key: serializer.serialize(value) for key, value in plain.items()}


def from_dynamo(item: dict[str, Any]) -> dict[str, Any]:
    """An item in DynamoDB's attribute form as plain values."""
    from boto3.dynamodb.types import TypeDeserializer

    deserializer = TypeDeserializer()
    return {key: deserializer.deserialize(value) for key, value in item.items()}


def report_key(report_uri: str, model_name: str, run_id: str) -> tuple[str, str]:
    """(bucket, key) of the run's report: ``<REPORT_S3_URI>/<model>/<run_id>.json``, both names URL-quoted."""
    bucket, prefix = parse_s3_uri(report_uri, what="REPORT_S3_URI")
    safe = functools.partial(urllib.parse.quote, safe="-_.")
    key = "/".join(part for part in (prefix.strip("/"), safe(model_name), f"{safe(run_id)}.json") if part)
    return bucket, key


def read_previous(dynamodb: Any, table: str, model_name: str, run_id: str) -> dict[str, Any] | None:
    """The item an earlier attempt of this run wrote (DynamoDB's attribute form), if any."""
    return dynamodb.get_item(
        TableName=table,
        Key={"model_name": {"S": model_name}, "run_id": {"S": run_id}},
        ConsistentRead=True,
    ).get("Item")


def run_item(
    run: RecordEvent,
    *,
    status: str,
    results: ResultsSummary | None,
    listing: list[dict[str, Any]],
    listing_truncated: bool,
    unparsed: bool,
    threshold: float,
    parameter: str,
    promotion: Promotion,
    report_s3_uri: str,
    costs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The run record of ``run``, as plain values (``costs``: ``job_prices.run_costs``)."""
    job = run.job
    end, begin = ended(job), began(job)
    summary_json = json.dumps(run.dataset_summary, sort_keys=True, default=str)
    decision = promotion.decision
    return {
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
        "created_at": iso(job.CreationTime),
        "started_at": iso(begin),
        "ended_at": iso(end),
        "duration_seconds": int((end - begin).total_seconds()) if end and begin else None,
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
        "usd_per_million_output_tokens": costs,
        "comparison_basis": promotion.incumbent.as_dict(),
        "decision": "promoted" if decision.promote else "not_promoted",
        "reason": decision.reason,
        "promotion_parameter": parameter,
        "previous_head": promotion.previous_head,
        "report_s3_uri": report_s3_uri,
    }


def report_document(
    item: dict[str, Any],
    run: RecordEvent,
    results: ResultsSummary | None,
    listing: list[dict[str, Any]],
    listing_truncated: bool,
) -> dict[str, Any]:
    """The S3 report: the run record with the whole dataset summary, the parsed results and the whole listing."""
    return {
        **item,
        "dataset_summary": run.dataset_summary,
        "results": results.as_dict() if results else None,
        "output_listing": listing,
        "output_listing_truncated": listing_truncated,
    }


def write(
    dynamodb: Any,
    s3: Any,
    *,
    table: str,
    item: dict[str, Any],
    previous: dict[str, Any] | None,
    report: dict[str, Any],
    report_bucket: str,
    report_key: str,
) -> bool:
    """Put the run record, then the report; True when the record is the one an earlier attempt wrote."""
    serialized = to_dynamo(item)
    repeated = previous is not None and from_dynamo(previous) == from_dynamo(serialized)
    dynamodb.put_item(TableName=table, Item=serialized)
    s3.put_object(
        Bucket=report_bucket,
        Key=report_key,
        Body=json.dumps(report, sort_keys=True, indent=2, default=str).encode(),
        ContentType="application/json",
    )
    return repeated
