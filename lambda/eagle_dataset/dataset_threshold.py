"""The new-records check (scheduled): captured records after the watermark are counted, without converting them,
as the lines of the settled capture objects (compression read from the bytes), up to
``CHECK_MAX_STEPS`` thresholds' worth; once there are enough, a run of the state machine starts under a name
derived from the watermark and how many thresholds arrived (:func:`execution_name`), so two checks never start
two runs for the same data. Nothing starts while a run is in progress.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError
from dataset_capture_listing import capture_folders, settled_keys
from dataset_errors import access_error
from dataset_objects import object_chunks
from dataset_streams import UnreadableData
from dataset_watermark import decode_watermark

#: The check reads at most this many thresholds' worth of lines after the watermark.
CHECK_MAX_STEPS = 10


def _count_lines(chunks: Iterator[Any], limit: int) -> int:
    """Lines (records) in an object's data, stopping once ``limit`` is reached. Unreadable data counts nothing."""
    count = 0
    tail = b""
    for chunk in chunks:
        if chunk.__class__ is UnreadableData:
            return count
        count += chunk.count(b"\n")
        tail = chunk[-1:] if chunk else tail
        if count >= limit:
            return count
    return count + (1 if tail and tail != b"\n" else 0)


def execution_name(watermark: str | None, step: int) -> str:
    """``records-<watermark hash>-<step>``: one run per watermark and per ``min_new_records`` step of new lines.

    A run that trains moves the watermark (a new name). A run that does not (records that do not convert,
    e.g. unattributed ones) leaves it where it was: the same name comes again and Step Functions refuses
    it (names are unique for 90 days), so the next run waits until another ``min_new_records`` lines arrived.
    """
    digest = hashlib.sha256((watermark or "").encode("utf-8")).hexdigest()[:16]
    return f"records-{digest}-{step}"  # 1-80 characters of [A-Za-z0-9-_]


def run_in_progress(sfn: Callable[[], Any], state_machine: str) -> bool:
    running = sfn().list_executions(stateMachineArn=state_machine, statusFilter="RUNNING", maxResults=1)
    return bool(running.get("executions"))


def count_new_records(
    s3: Callable[[], Any], bucket: str, prefix: str, watermark: str | None, cutoff: datetime, limit: int
) -> tuple[int, int]:
    """(lines counted, objects read) of the settled capture objects after ``watermark``, up to ``limit`` lines."""
    folders_after, legacy_after = decode_watermark(watermark)
    try:
        folders = capture_folders(s3, bucket, prefix)
        counted = objects = 0
        for _, key in settled_keys(s3, bucket, folders, folders_after, legacy_after, cutoff):
            chunks = object_chunks(s3, bucket, key, 1 << 20)
            if chunks is None:
                continue
            counted += _count_lines(chunks, limit - counted)
            chunks.close()
            objects += 1
            if counted >= limit:
                break
    except ClientError as error:
        raise access_error(error, f"Reading s3://{bucket}/{prefix}") from error
    return counted, objects


def start_run(sfn: Callable[[], Any], state_machine: str, name: str) -> dict[str, Any] | None:
    """Start the run ``name``; None when a run of that name was already started."""
    try:
        return sfn().start_execution(stateMachineArn=state_machine, name=name, input="{}")
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
            return None
        raise
