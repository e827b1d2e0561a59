"""The watermark: the SSM String parameter that says, per capture folder, which object the last trained run
read up to. Its value is ``{"v":1,"after":{folder: rest of the last key}}`` (or a plain object key); the job's
start writes a claim ``{"v":1,"claim":{..., "previous", "value"}}`` while it creates its job, which reads as its
``previous``. Nothing here writes the parameter: :func:`watermark_commit` says where the job's start moves it
once its job exists.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from llm_cdk_shared.aws_errors import not_found

if TYPE_CHECKING:
    from dataset_events import PlanOutput

WATERMARK_MAX_CHARS = 4096  # SSM standard-tier String parameter


def read_watermark(ssm: Callable[[], Any], name: str) -> str | None:
    try:
        return ssm().get_parameter(Name=name)["Parameter"]["Value"]
    except ClientError as error:
        if not_found(error, "ssm"):
            return None
        raise


def claimed_previous(value: str | None) -> str | None:
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


def claim_chars(previous: str | None, value: str, run_id: str) -> int:
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


def decode_watermark(value: str | None) -> tuple[dict[str, str], str | None]:
    """SSM value -> (folder -> last key, legacy single key). Both empty when unset; a claim reads as its previous."""
    value = claimed_previous(value)
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


def encode_watermark(folders: dict[str, str]) -> str:
    return json.dumps(
        {"v": 1, "after": {folder: key[len(folder) :] for folder, key in sorted(folders.items())}},
        separators=(",", ":"),
    )


def watermark_commit(plan_output: PlanOutput, complete: bool) -> dict[str, Any] | None:
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
