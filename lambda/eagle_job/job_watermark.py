"""The capture watermark moves with the job: ``start``'s claim, commit and release of the watermark parameter.

The parameter holds the dataset builder's watermark (``lambda/eagle_dataset``: where the captures consumed so far
end). While ``start`` creates a job it holds a claim instead, ``{"v":1,"claim":{...}}``, naming the job and its
window ``previous`` -> ``value``; once the job exists it holds ``value``; a failed create puts back what plan read
(``index`` describes the steps). The claim's value format is shared with the dataset builder, which plans a
claimed parameter from the claim's ``previous``. The SSM and SageMaker clients are the caller's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import job_sagemaker
from botocore.exceptions import ClientError
from job_errors import WatermarkConflictError
from job_times import iso, parse_time
from llm_cdk_shared.aws_errors import not_found

if TYPE_CHECKING:  # names in annotations only
    from typing import TypeAlias

    WatermarkCommit: TypeAlias = Any  # job_events.models().WatermarkCommit, built on first use

EMPTY_WATERMARK = '{"v":1,"after":{}}'
"""The dataset builder's watermark with nothing consumed yet (what the parameter is created with)."""
CLAIM_EXPIRY_SECONDS = 900
"""A claim older than this was written by an invocation that has ended: Lambda runs 900 s at most."""


@dataclass(frozen=True)
class WatermarkClaim:
    """``start``'s note in the watermark parameter while it creates a job: the window ``previous`` -> ``value``
    belongs to job ``job`` of run ``run_id`` once that job exists, and to nobody if it never does."""

    job: str
    run_id: str
    claimed_at: str
    previous: str | None
    value: str


def claim_value(claim: WatermarkClaim) -> str:
    """The parameter value holding ``claim``: compact JSON ``{"v": 1, "claim": {...}}``, keys in a fixed order."""
    return json.dumps(
        {
            "v": 1,
            "claim": {
                "job": claim.job,
                "run_id": claim.run_id,
                "claimed_at": claim.claimed_at,
                "previous": claim.previous,
                "value": claim.value,
            },
        },
        separators=(",", ":"),
    )


def decode_claim(value: str | None) -> WatermarkClaim | None:
    """The claim a parameter value holds, or None for a plain watermark (or anything else)."""
    if not value or not value.startswith('{"v":1,"claim":'):
        return None
    try:
        claim = json.loads(value)["claim"]
        fields = {name: claim[name] for name in ("job", "run_id", "claimed_at", "value")}
        previous = claim["previous"]
    except (ValueError, KeyError, TypeError):
        return None
    if not all(isinstance(item, str) for item in fields.values()) or not isinstance(previous, (str, type(None))):
        return None
    return WatermarkClaim(previous=previous, **fields)


def _read_parameter(ssm: Any, name: str) -> str | None:
    try:
        return str(ssm.get_parameter(Name=name)["Parameter"]["Value"])
    except ClientError as exc:
        if not_found(exc, "ssm"):
            return None
        raise


def _put_parameter(ssm: Any, name: str, value: str) -> None:
    ssm.put_parameter(Name=name, Value=value, Type="String", Overwrite=True)


def claim_window(ssm: Any, sagemaker: Any, watermark: WatermarkCommit, job: str, run_id: str) -> str | None:
    """Step 1 of the watermark move (``index``'s docstring): the claim value this invocation holds, or None when an
    earlier attempt already committed ``watermark.value`` with this job. Raises WatermarkConflictError, having
    created nothing, when the parameter is not where this run's plan found it."""
    current = _read_parameter(ssm, watermark.parameter)
    held = decode_claim(current)
    if held is not None and held.job == job and held.previous == watermark.previous and held.value == watermark.value:
        return current  # this run's own claim, from an attempt that did not get to commit
    if current == watermark.value and not _unchanged(current, watermark.stored):
        if job_sagemaker.job_exists(sagemaker, job):
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
        age = datetime.now(UTC) - (parse_time(held.claimed_at) or datetime.min.replace(tzinfo=UTC))
        if age.total_seconds() <= CLAIM_EXPIRY_SECONDS:
            raise WatermarkConflictError(
                f"SSM parameter {watermark.parameter} is claimed by run {held.run_id} (job {held.job!r}), which is "
                f"starting its job now. Nothing was started; run again later."
            )
        if job_sagemaker.job_exists(sagemaker, held.job):
            _put_parameter(ssm, watermark.parameter, held.value)
            raise WatermarkConflictError(
                f"run {held.run_id} started job {held.job!r} on part of run {run_id}'s window and stopped before it "
                f"moved the watermark: SSM parameter {watermark.parameter} now holds the end of that job's window. "
                "Nothing was started; the next run plans from there, so no capture is trained on twice."
            )
    claim = WatermarkClaim(
        job=job,
        run_id=run_id,
        claimed_at=iso(datetime.now(UTC)) or "",
        previous=watermark.previous,
        value=watermark.value,
    )
    value = claim_value(claim)
    _put_parameter(ssm, watermark.parameter, value)
    return value


def _unchanged(current: str | None, stored: str | None) -> bool:
    """The parameter holds what plan read (a missing parameter and the empty watermark are the same place)."""
    return current == stored or (stored is None and current == EMPTY_WATERMARK)


def release_window(ssm: Any, watermark: WatermarkCommit, claim: str) -> None:
    """A create failed: the parameter goes back to what plan read, if it still holds this invocation's claim
    (a retry of this start then claims again from there)."""
    if _read_parameter(ssm, watermark.parameter) == claim:
        _put_parameter(ssm, watermark.parameter, watermark.stored or EMPTY_WATERMARK)


def commit_window(ssm: Any, watermark: WatermarkCommit, claim: str, job: str) -> None:
    """Step 3: the job exists; the parameter goes from this invocation's claim to the window's end."""
    current = _read_parameter(ssm, watermark.parameter)
    if current == claim:
        _put_parameter(ssm, watermark.parameter, watermark.value)
        return
    if current == watermark.value:
        return
    raise WatermarkConflictError(
        f"job {job!r} was started, but SSM parameter {watermark.parameter} no longer holds its claim (another "
        "writer changed it): the watermark was left as that writer set it. Make sure only one run per watermark "
        "parameter executes at a time."
    )
