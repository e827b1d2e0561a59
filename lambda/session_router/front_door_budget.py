"""The invocation's time budget, and the clocks it is measured with.

The function has a fixed timeout (300 s); a turn makes up to four SageMaker calls (open, turn, and after a lost
session: reopen, turn) plus DynamoDB reads/writes. botocore cannot bound its retries by a deadline, so botocore
makes one attempt per call and the router retries throttling itself, starting an attempt only when its worst case
(connect + read timeout, plus one DynamoDB write after it) still fits in what is left of the invocation minus a
margin (``ensure``). Otherwise it answers 504 TimeBudgetExceeded before Lambda would kill the invocation (a killed
invocation answers the caller a bare 502). ``start`` sets the deadline from the Lambda context on every request;
``now`` is the wall clock that session expiries are written in.
"""

from __future__ import annotations

import random
import time
from typing import Any

import front_door_answers as answers
from front_door_answers import HttpError

MODEL_CONNECT_TIMEOUT = 3
MODEL_READ_TIMEOUT = 65  # InvokeEndpoint's 60 s model limit plus margin
MODEL_ATTEMPT_WORST = MODEL_CONNECT_TIMEOUT + MODEL_READ_TIMEOUT
MODEL_MAX_ATTEMPTS = 3  # per SageMaker call, for throttling / model still loading / unreachable
DYNAMODB_CONNECT_TIMEOUT = 2
DYNAMODB_READ_TIMEOUT = 3
DYNAMODB_MAX_ATTEMPTS = 3
DYNAMODB_WORST = DYNAMODB_MAX_ATTEMPTS * (DYNAMODB_CONNECT_TIMEOUT + DYNAMODB_READ_TIMEOUT) + 1
BUDGET_MARGIN_SECONDS = 3.0  # to serialize and return the answer
DEFAULT_REMAINING_SECONDS = 300.0  # when the context cannot say (never in Lambda)

_deadline: float | None = None  # _monotonic() value by which the answer must be on its way


def _monotonic() -> float:
    return time.monotonic()


def sleep(seconds: float) -> None:
    time.sleep(seconds)


def start(context: Any) -> None:
    global _deadline
    try:
        remaining = float(context.get_remaining_time_in_millis()) / 1000.0
    except (AttributeError, TypeError, ValueError):
        remaining = DEFAULT_REMAINING_SECONDS
    _deadline = _monotonic() + remaining - BUDGET_MARGIN_SECONDS


def seconds_left() -> float:
    return float("inf") if _deadline is None else _deadline - _monotonic()


def ensure(needed: float, what: str) -> None:
    """504 unless ``needed`` seconds (the worst case of the next step) fit in the invocation's budget."""
    left = seconds_left()
    if left >= needed:
        return
    answers.count("TimeBudgetExceeded")
    raise HttpError(
        504,
        "TimeBudgetExceeded",
        f"the turn ran out of time before {what}: {max(left, 0):.0f} s of the front door's time budget are left "
        f"and one model call may take up to {MODEL_ATTEMPT_WORST} s (the function's timeout bounds the whole "
        "request). Nothing further was sent to the model and the conversation is kept: retry the turn, or send "
        "a smaller request.",
        headers={"Retry-After": "1"},
    )


def backoff(attempt: int) -> float:
    return min(0.25 * 2**attempt, 2.0) * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not crypto


def now() -> int:
    return int(time.time())
