"""Planning a run: the settled capture objects after the watermark, at most ``max_objects`` of them, written as
the Distributed Map's item manifest (a JSON array of ``{"key": ...}``) under ``<output_prefix>/<run id>/plan/``,
with where the watermark would move to once the run's job exists (``watermark_value``). The window must fit in
the claim the job's start writes to the watermark parameter, or the run is refused before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from dataset_capture_listing import capture_folders, settled_keys
from dataset_errors import WatermarkTooLargeError, access_error
from dataset_keys import join_key
from dataset_objects import encryption
from dataset_watermark import (
    WATERMARK_MAX_CHARS,
    claim_chars,
    claimed_previous,
    decode_watermark,
    encode_watermark,
    read_watermark,
)

if TYPE_CHECKING:
    from dataset_events import PlanEvent


def plan_run(
    request: PlanEvent, *, max_objects: int, cutoff: datetime, s3: Callable[[], Any], ssm: Callable[[], Any]
) -> tuple[dict[str, Any], int]:
    """The plan's output for ``request`` (its manifest written), and how many capture folders were listed."""
    stored_value = read_watermark(ssm, request.watermark_parameter)
    previous_value = claimed_previous(stored_value)
    folders_after, legacy_after = decode_watermark(previous_value)
    try:
        folders = capture_folders(s3, request.capture_bucket, request.capture_prefix)
    except ClientError as error:
        raise access_error(error, f"Listing s3://{request.capture_bucket}/{request.capture_prefix}") from error

    keys: list[str] = []
    new_after = dict(folders_after)
    truncated = False
    for folder, key in settled_keys(s3, request.capture_bucket, folders, folders_after, legacy_after, cutoff):
        if len(keys) >= max_objects:
            truncated = True
            break
        keys.append(key)
        new_after[folder] = key

    watermark_value = encode_watermark(new_after) if new_after else previous_value
    _check_claim_fits(request, previous_value, watermark_value, len(new_after))
    manifest_key = join_key(request.output_prefix, request.run_id, "plan", "items.json")
    body = ("[" + ",".join(json.dumps({"key": key}) for key in keys) + "]").encode("utf-8")
    s3().put_object(
        Bucket=request.output_bucket, Key=manifest_key, Body=body, ContentType="application/json", **encryption()
    )

    previous_keys = list(folders_after.values()) + ([legacy_after] if legacy_after else [])
    new_watermark = max(keys + previous_keys) if keys or previous_keys else None
    output = {
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
    return output, len(folders)


def _check_claim_fits(
    request: PlanEvent, previous_value: str | None, watermark_value: str | None, folders: int
) -> None:
    """Refuse a window whose claim (the watermark's start and end, written by the job's start while its job
    starts) would not fit in an SSM String parameter."""
    # the claim the job's start writes holds both ends of the window: it must fit as well
    needed = claim_chars(previous_value, watermark_value, request.run_id) if watermark_value else 0
    if needed > WATERMARK_MAX_CHARS:
        raise WatermarkTooLargeError(
            f"The watermark for {folders} capture folders needs {needed} characters (the claim that holds the "
            f"window's start and end while its job starts); an SSM String "
            f"parameter holds {WATERMARK_MAX_CHARS}. Narrow capture_prefix to one endpoint "
            f"(s3://{request.capture_bucket}/{request.capture_prefix}<endpoint-name>/) and run one pipeline per "
            "endpoint."
        )
