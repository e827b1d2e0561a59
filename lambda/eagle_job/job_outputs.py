"""What an optimization job wrote under its output prefix: its benchmark results, the raw listing, the draft head.

The layout of a job's output is not documented, so ``record`` reads every JSON/JSONL file under
``<output>/results/`` (up to ``MAX_RESULT_OBJECTS``, none over ``MAX_RESULT_FILE_BYTES``) for ``job_results`` to
parse, keeps the raw listing of the whole prefix for whoever reads an unparsed run, and promotes a head only when
``<output>/draft/`` has objects. The S3 client is the caller's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import job_results
from aws_lambda_powertools import Logger
from job_request import parse_s3_uri
from job_times import iso

logger = Logger()  # the function's logger (Powertools shares one per service)

MAX_RESULT_OBJECTS = 1000
MAX_RESULT_FILE_BYTES = 10 * 1024 * 1024
MAX_LISTING_OBJECTS = 1000
"""Objects of the job's output prefix listed into the report (the run record keeps the first 200)."""


def read_results(s3: Any, results_uri: str) -> job_results.ResultsSummary:
    """The job's benchmark results under ``results_uri``, parsed (``job_results.summarize_results``)."""
    bucket, prefix = parse_s3_uri(results_uri, what="results URI")
    files: list[str] = []
    documents: list[tuple[str, Any]] = []
    skipped: list[str] = []
    paginator = s3.get_paginator("list_objects_v2")
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
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            documents.extend((relative, doc) for doc in job_results.parse_json_documents(key, body))
    summary = job_results.summarize_results(documents, files)
    if skipped and summary.status != "parsed":
        summary.reason = f"{summary.reason}; skipped files over {MAX_RESULT_FILE_BYTES} bytes: {', '.join(skipped)}"
    logger.info(
        "results read",
        extra={"results_status": summary.status, "files": len(files), "json_documents": len(documents)},
    )
    return summary


def list_output(s3: Any, output_uri: str) -> tuple[list[dict[str, Any]], bool]:
    """The raw listing of the job's output prefix (key relative to it, size, last modified), and whether it
    was cut at ``MAX_LISTING_OBJECTS``. Kept in the run record because the output layout of optimization
    jobs is not documented: whoever reads an unparsed run sees what the job actually wrote."""
    bucket, prefix = parse_s3_uri(output_uri, what="output URI")
    entries: list[dict[str, Any]] = []
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            if len(entries) >= MAX_LISTING_OBJECTS:
                return entries, True
            modified = item.get("LastModified")
            entries.append(
                {
                    "key": item["Key"][len(prefix) :] or item["Key"],
                    "size": int(item.get("Size", 0)),
                    "last_modified": iso(modified) if isinstance(modified, datetime) else None,
                }
            )
    return entries, False


def prefix_has_objects(s3: Any, uri: str) -> bool:
    """Whether any object exists under ``uri``."""
    bucket, prefix = parse_s3_uri(uri, what="S3 URI")
    listing = s3.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1)
    return bool(listing.get("KeyCount", len(listing.get("Contents", []))))
