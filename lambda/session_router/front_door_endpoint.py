"""The SageMaker endpoint: InvokeEndpoint calls within the time budget, and the sessions they open and close.

Each call is attempted only when its worst case fits the budget; throttling (and a model still loading) is
retried at most MODEL_MAX_ATTEMPTS times, a read timeout never (the model may have run). Failures become the
caller-facing HttpError (``_upstream_error``); a session the platform or the container no longer knows raises
SessionGone. Session protocol (LMI/DJL and the SageMaker model-hosting container standard):
``SessionId="NEW_SESSION"`` with ``{"requestType": "NEW_SESSION"}`` opens a session and returns ``NewSessionId =
"<id>; Expires=<UTC ISO time>"``; ``{"requestType": "CLOSE"}`` on a session closes it. The client getter is the
handler's, passed in.
"""

from __future__ import annotations

import calendar
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import front_door_answers as answers
import front_door_budget as budget
from aws_lambda_powertools import Logger
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from front_door_answers import HttpError
from front_door_budget import DYNAMODB_WORST, MODEL_ATTEMPT_WORST, MODEL_MAX_ATTEMPTS
from front_door_table import SessionRecord

if TYPE_CHECKING:
    from front_door_settings import Settings

logger = Logger()

SESSION_ID_MAX = 256
NEW_SESSION_HEADER_RE = re.compile(  # NewSessionId: "<id>; Expires=YYYY-MM-DDTHH:MM:SSZ"
    r"^(?P<id>[a-zA-Z0-9](?:-*[a-zA-Z0-9])*);\s"
    r"Expires=(?P<expires>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z)$"
)
OPEN_SESSION_BODY = {"requestType": "NEW_SESSION"}
CLOSE_SESSION_BODY = {"requestType": "CLOSE"}

# Error codes SageMaker Runtime / botocore use for throttling. ModelNotReadyException (429) means the
# model is still loading (e.g. scale from zero); it is surfaced the same way: retry later.
THROTTLING_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ModelNotReadyException",
    }
)
RETRYABLE_UPSTREAM_CODES = THROTTLING_CODES | {"ServiceUnavailable", "InternalFailure"}
# Words that, next to "session", identify a lost session in an error message (see _is_session_gone).
SESSION_GONE_WORDS = ("not found", "expired", "invalid", "unknown", "does not exist", "no longer", "closed")


class SessionGone(Exception):
    """SageMaker or the container no longer knows the session (expired, closed, instance replaced)."""


def _is_throttling(error: ClientError) -> bool:
    code = error.response.get("Error", {}).get("Code", "")
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in THROTTLING_CODES or status == 429


def _is_retryable(error: ClientError) -> bool:
    """Throttling, a model still loading, SageMaker briefly unavailable, or the container's own 429."""
    code = error.response.get("Error", {}).get("Code", "")
    if code == "ModelError":
        return error.response.get("OriginalStatusCode") == 429
    return _is_throttling(error) or code in RETRYABLE_UPSTREAM_CODES


def _is_session_gone(error: ClientError) -> bool:
    """True when SageMaker/the container says the session id is no longer usable.

    What the wire shows (botocore sagemaker-runtime model + container sources):
    - the container rejects an unknown or expired session id with HTTP 400, e.g. the SageMaker
      model-hosting container standard (vLLM/SGLang DLCs) answers ``400 "Bad request: session not found:
      <id>"``; SageMaker relays a container 4xx as ``ModelError`` (HTTP 424) with ``OriginalStatusCode``
      4xx and the container text in ``OriginalMessage`` (also quoted in ``Message``);
    - the platform itself answers ``ValidationError`` (HTTP 400) for a session id it cannot route
      (unknown id, or the instance that held it was replaced or scaled in).
    Both are matched by code and status plus a message that names the session and says it is gone
    (SESSION_GONE_WORDS). Anything else (model failures, throttling) is not treated as a lost session.
    """
    code = error.response.get("Error", {}).get("Code", "")
    message = " ".join(
        str(part)
        for part in (error.response.get("Error", {}).get("Message"), error.response.get("OriginalMessage"))
        if part
    ).lower()
    if "session" not in message or not any(word in message for word in SESSION_GONE_WORDS):
        return False
    if code == "ModelError":
        original = error.response.get("OriginalStatusCode")
        return isinstance(original, int) and 400 <= original < 500 and original != 429
    return code == "ValidationError"


def _upstream_error(error: Exception, settings: Settings, component: str) -> HttpError:
    """Translate a SageMaker Runtime failure into the caller-facing error."""
    where = f"endpoint {settings.endpoint_name!r}, component {component!r}"
    if isinstance(error, ReadTimeoutError):
        answers.count("UpstreamTimeouts")
        return HttpError(504, "ModelTimeout", f"{where} did not answer in time; retry with a smaller request")
    if isinstance(error, (ConnectTimeoutError, BotoCoreError)) or not isinstance(error, ClientError):
        answers.count("UpstreamErrors")
        return HttpError(502, "EndpointUnreachable", f"could not reach {where}: {type(error).__name__}")
    code = error.response.get("Error", {}).get("Code", "Unknown")
    text = str(error.response.get("Error", {}).get("Message") or "")[:1000]
    if _is_throttling(error):
        answers.count("Throttled")
        return HttpError(
            429,
            "Throttled",
            f"{where} is throttling or still loading the model ({code}) after retries; retry with backoff",
            headers={"Retry-After": "2"},
        )
    if code == "ModelError":
        original = error.response.get("OriginalStatusCode")
        original_text = str(error.response.get("OriginalMessage") or text)[:1000]
        answers.count("ModelErrors")
        if original == 429:
            return HttpError(
                429,
                "Throttled",
                f"the model container on {where} is overloaded (429); retry with backoff",
                model_status=429,
                headers={"Retry-After": "2"},
            )
        if isinstance(original, int) and 400 <= original < 500:
            return HttpError(
                424,
                "ModelRejectedRequest",
                f"the model container on {where} rejected the request ({original}): {original_text}",
                model_status=original,
            )
        return HttpError(
            502,
            "ModelFailed",
            f"the model container on {where} failed ({original}): {original_text}",
            model_status=original if isinstance(original, int) else None,
        )
    answers.count("UpstreamErrors")
    if code == "ServiceUnavailable":
        return HttpError(503, "EndpointUnavailable", f"SageMaker is unavailable for {where}; retry later")
    if code == "ValidationError":
        return HttpError(
            502,
            "EndpointRejectedRequest",
            f"SageMaker rejected the call to {where}: {text}. Check "
            "ENDPOINT_NAME and ALLOWED_COMPONENTS against the deployed endpoint.",
        )
    return HttpError(502, "EndpointError", f"SageMaker failed for {where} ({code}); retry later")


@dataclass(frozen=True)
class ModelReply:
    body: Any
    new_session: str | None
    closed_session: str | None


def invoke(
    sagemaker_runtime: Callable[[], Any],
    settings: Settings,
    component: str,
    body: bytes,
    session_id: str | None,
    content_type: str,
) -> ModelReply:
    params: dict[str, Any] = {
        "EndpointName": settings.endpoint_name,
        "InferenceComponentName": component,
        "ContentType": content_type,
        "Body": body,
    }
    if session_id is not None:
        params["SessionId"] = session_id
    what = "opening a session" if session_id == "NEW_SESSION" else "calling the model"
    attempt = 0
    while True:
        attempt += 1
        budget.ensure(MODEL_ATTEMPT_WORST + DYNAMODB_WORST, what)
        try:
            response = sagemaker_runtime().invoke_endpoint(**params)
            break
        except ClientError as exc:
            if session_id not in (None, "NEW_SESSION") and _is_session_gone(exc):
                raise SessionGone() from None
            failure: Exception = exc
            retryable = _is_retryable(exc)
        except (ConnectTimeoutError, EndpointConnectionError) as exc:  # nothing reached the model: safe to retry
            failure, retryable = exc, True
        except BotoCoreError as exc:  # incl. ReadTimeoutError: the model may have run; never run it twice
            raise _upstream_error(exc, settings, component) from None
        pause = budget.backoff(attempt)
        if (
            not retryable
            or attempt >= MODEL_MAX_ATTEMPTS
            or budget.seconds_left() - pause < MODEL_ATTEMPT_WORST + DYNAMODB_WORST
        ):
            raise _upstream_error(failure, settings, component) from None
        answers.count("UpstreamRetries")
        budget.sleep(pause)
    payload = response["Body"]
    data = payload.read() if hasattr(payload, "read") else payload
    return ModelReply(
        body=_decode_model_body(data, response.get("ContentType", "")),
        new_session=response.get("NewSessionId"),
        closed_session=response.get("ClosedSessionId"),
    )


def _decode_model_body(data: bytes, content_type: str) -> Any:
    text = data.decode("utf-8", errors="replace")
    if "json" in content_type.lower() or not content_type:
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def open_session(sagemaker_runtime: Callable[[], Any], settings: Settings, component: str) -> SessionRecord:
    """Open a stateful session on ``component`` and return the mapping to store (conversation id blank)."""
    reply = invoke(
        sagemaker_runtime,
        settings,
        component,
        json.dumps(OPEN_SESSION_BODY).encode(),
        "NEW_SESSION",
        "application/json",
    )
    match = NEW_SESSION_HEADER_RE.fullmatch(reply.new_session or "")
    if match is None or len(match["id"]) > SESSION_ID_MAX:
        answers.count("SessionOpenFailures")
        detail = "no NewSessionId" if not reply.new_session else "a malformed NewSessionId"
        raise HttpError(
            502,
            "SessionsNotSupported",
            f"component {component!r} on endpoint {settings.endpoint_name!r} returned {detail} for "
            "SessionId=NEW_SESSION; the container must support stateful sessions (LMI: "
            "OPTION_ENABLE_STATEFUL_SESSIONS=true) or call without conversation_id",
        )
    container_expiry = calendar.timegm(time.strptime(match["expires"], "%Y-%m-%dT%H:%M:%SZ"))
    expires_at = min(budget.now() + settings.session_ttl_seconds, container_expiry)
    answers.count("SessionsOpened")
    return SessionRecord("", match["id"], component, expires_at)


def close_session_quietly(sagemaker_runtime: Callable[[], Any], settings: Settings, record: SessionRecord) -> None:
    """Best effort: free a session this invocation opened but will not use."""
    try:
        invoke(
            sagemaker_runtime,
            settings,
            record.component,
            json.dumps(CLOSE_SESSION_BODY).encode(),
            record.session_id,
            "application/json",
        )
    except (HttpError, SessionGone) as exc:
        logger.warning("could not close unused session", extra={"error_type": type(exc).__name__})
