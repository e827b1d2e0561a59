"""What a SageMaker AI benchmark job wrote: the raw listing of its output and the AIPerf numbers in it.

The output layout of benchmark jobs is not documented (AIPerf writes ``profile_export_aiperf.json``), so the
check reads the JSON files of the output prefix (``profile_export_aiperf`` first, at most ``MAX_FILES_READ``,
none over ``MAX_FILE_BYTES``) and takes only the statistics actually present (``METRICS_READ``); a measurement
without an output-token throughput is not parsed, and nothing is made up. The S3 client is the caller's.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from botocore.exceptions import ClientError

MAX_LISTING = 1000
MAX_LISTING_IN_RECORD = 50
"""Objects of the listing kept in the run record (DynamoDB items hold 400 KB; the count is kept too)."""
MAX_FILES_READ = 20
MAX_FILE_BYTES = 10 * 1024 * 1024
STATISTICS = ("avg", "mean", "value", "p50", "p90", "p99")
METRICS_READ = {
    "output_token_throughput": "tokens/s",
    "request_throughput": "requests/s",
    "request_latency": "ms",
    "time_to_first_token": "ms",
    "inter_token_latency": "ms",
}
"""AIPerf's metric names (its profile export); output_token_throughput is required for a measurement."""


def _split(uri: str) -> tuple[str, str]:
    parsed = urllib.parse.urlparse(uri)
    return parsed.netloc, parsed.path.lstrip("/")


def list_output(s3: Any, uri: str) -> tuple[list[dict[str, Any]], bool]:
    """The raw listing of the job's output (key, size), at most MAX_LISTING objects, and whether it was cut."""
    bucket, prefix = _split(uri)
    listing: list[dict[str, Any]] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            if len(listing) >= MAX_LISTING:
                return listing, True
            listing.append({"key": item["Key"], "size": int(item.get("Size", 0))})
    return listing, False


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value == value and value not in (float("inf"), float("-inf")):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if number == number and abs(number) != float("inf") else None
    return None


def _find(doc: Any, name: str, depth: int = 0) -> Any:
    """The first value under key ``name`` in a nested JSON document (breadth before depth, 4 levels)."""
    if depth > 4:
        return None
    if isinstance(doc, dict):
        if name in doc:
            return doc[name]
        for value in doc.values():
            found = _find(value, name, depth + 1)
            if found is not None:
                return found
    elif isinstance(doc, list):
        for value in doc[:50]:
            found = _find(value, name, depth + 1)
            if found is not None:
                return found
    return None


def read_metrics(doc: Any) -> dict[str, dict[str, Any]]:
    """The AIPerf statistics a results document holds: ``{metric: {"avg": .., "p50": .., "unit": ..}}``; only
    numbers actually present are returned."""
    out: dict[str, dict[str, Any]] = {}
    for name in METRICS_READ:
        value = _find(doc, name)
        stats: dict[str, Any] = {}
        if isinstance(value, dict):
            for statistic in STATISTICS:
                number = _number(value.get(statistic))
                if number is not None:
                    stats["avg" if statistic in ("mean", "value") and "avg" not in stats else statistic] = number
            if isinstance(value.get("unit"), str):
                stats["unit"] = value["unit"][:32]
        else:
            number = _number(value)
            if number is not None:
                stats["avg"] = number
        if any(k != "unit" for k in stats):
            out[name] = stats
    return out


def _results_files(listing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    files = [o for o in listing if o["key"].lower().endswith(".json") and 0 < o["size"] <= MAX_FILE_BYTES]
    files.sort(key=lambda o: (0 if "profile_export_aiperf" in o["key"].lower() else 1, o["key"]))
    return files[:MAX_FILES_READ]


def measure(s3: Any, output_uri: str) -> dict[str, Any]:
    """What the job's output says: listing, files read and their numbers; ``parsed`` only with a throughput."""
    listing, truncated = list_output(s3, output_uri)
    bucket, _ = _split(output_uri)
    read: list[str] = []
    unreadable: list[str] = []
    found: dict[str, dict[str, Any]] = {}
    for obj in _results_files(listing):
        try:
            body = s3.get_object(Bucket=bucket, Key=obj["key"])["Body"].read(MAX_FILE_BYTES + 1)
            doc = json.loads(body.decode("utf-8"))
        except (ClientError, UnicodeDecodeError, ValueError) as error:
            unreadable.append(f"{obj['key']}: {type(error).__name__}")
            continue
        numbers = read_metrics(doc)
        if numbers:
            read.append(obj["key"])
            for name, stats in numbers.items():
                found.setdefault(name, stats)  # the preferred file (profile_export_aiperf) first
        if "output_token_throughput" in found:
            break
    throughput = found.get("output_token_throughput", {}).get("avg")
    return {
        "parsed": throughput is not None,
        "output_token_throughput": throughput,
        "metrics": found,
        "files_read": read,
        "files_unreadable": unreadable[:20],
        "output_listing": listing[:MAX_LISTING_IN_RECORD],
        "output_listing_count": len(listing),
        "output_listing_truncated": truncated or len(listing) > MAX_LISTING_IN_RECORD,
    }
