"""Session-aware front door (Lambda Function URL) that maps chat conversations to SageMaker stateful sessions.

A chat app calls this function's URL (auth type AWS_IAM, so every request is SigV4-signed for service
``lambda``). Without a ``conversation_id`` a turn is passed straight to the endpoint (load-aware routing
picks the instance). With one, the first turn opens a SageMaker stateful session on the chosen inference
component, the mapping conversation -> session is kept in DynamoDB, and every later turn carries the
session id so SageMaker routes it to the same instance (session-aware / sticky routing).

Environment variables
---------------------
ENDPOINT_NAME        SageMaker endpoint hosting the inference components (required).
SESSIONS_TABLE       DynamoDB table: partition key ``conversation_id`` (S); TTL attribute ``expires_at``
                     (epoch seconds). Items: conversation_id, session_id, component, expires_at,
                     owner, created_at, updated_at (required).
SESSION_TTL_SECONDS  Longest time a mapping is trusted (default 1200, the LMI default of
                     OPTION_SESSIONS_EXPIRATION). The row expires at min(now + this, the Expires time the
                     container returned with the session id).
DEFAULT_COMPONENT    Base inference component used when a request names none (required).
ALLOWED_COMPONENTS   Comma-separated inference component names a caller may choose (base + LoRA adapter
                     components); DEFAULT_COMPONENT is always allowed.
MAX_BODY_BYTES       Largest accepted HTTP request body in bytes (default 1048576 = 1 MiB; at most
                     6291456, the InvokeEndpoint limit).
POWERTOOLS_SERVICE_NAME / POWERTOOLS_METRICS_NAMESPACE  Logger service and metrics namespace.

Event: Lambda Function URL request (API Gateway HTTP API payload format 2.0).

POST /invoke  body ``{"conversation_id"?: str 1-128 of [A-Za-z0-9._:-], "component"?: str,
              "body": {...JSON object passed to the model...}, "content_type"?: "application/json"}``
    200 ``{"conversation_id": str|null, "session_id"?: str, "component": str,
    "body": <model response JSON, or text>}``; header ``X-Session-Reopened: true`` when the session
    was lost (expired, closed by the container, instance replaced) and a new one was opened, so
    context cached in the old session is gone and the chat app should resend the history.
POST /close   body ``{"conversation_id": str}`` -> 200 ``{"conversation_id", "session_id",
              "component", "closed": true, "session_was_open": bool}``; 404 for an unknown conversation.

Errors: ``{"error": {"code", "message", "field"?, "model_status"?}}`` with status 400 (invalid request,
unknown component), 403 (no IAM caller in the request context), 404 (unknown route, or a conversation
unknown to / owned by another principal than the caller), 409 (component switch inside a live session,
concurrent update), 413 (body over MAX_BODY_BYTES), 424 (the model container answered 4xx),
429 (throttled after the client's adaptive retries), 502/503/504 (endpoint failures), 500 (bug or
misconfiguration). Prompts, completions and request bodies are never logged.

Conversation ownership: every conversation is bound to the IAM principal that opened it. The owner is
derived from the Function URL's ``requestContext.authorizer.iam.userArn`` by ``caller_owner``: an
assumed-role session ``arn:<partition>:sts::<acct>:assumed-role/<Role>/<session>`` is owned by the role
``arn:<partition>:iam::<acct>:role/<Role>`` (the session name changes per Lambda/ECS task, so it is not
part of the owner; the role path is not in the caller ARN, so it is not either); an IAM user, root or
federated user by its ARN as is. The row stores it as ``owner``. A turn or /close naming a conversation
whose row has another owner gets the same 404 ``ConversationNotFound`` as an unknown conversation, and
nothing is written or sent to SageMaker (conversation ids should still be unguessable, e.g. UUIDs: on
/invoke an unknown id opens a session while a foreign one is refused). An expired row keeps its owner
until DynamoDB's TTL removes it, so another principal cannot take the id over meanwhile. Rows written
before owners existed (no ``owner`` attribute) are adopted by the first caller that reads them: a
PutItem conditioned on ``attribute_not_exists(owner)`` and the same session id binds the row to that
caller (the losing caller of a race then sees the winner's owner); so the function needs no permission
beyond GetItem/PutItem/DeleteItem. A request without IAM authorizer context (impossible with AWS_IAM)
gets 403 ``CallerUnknown`` and nothing is done. Logs carry the owner ARN (not secret), never prompts.

Session protocol (LMI/DJL ``OPTION_ENABLE_STATEFUL_SESSIONS`` and the SageMaker model-hosting container
standard): ``InvokeEndpoint(SessionId="NEW_SESSION", Body={"requestType": "NEW_SESSION"})`` opens a
session and returns ``NewSessionId = "<id>; Expires=<UTC ISO time>"`` without running the model;
``InvokeEndpoint(SessionId=<id>, Body={"requestType": "CLOSE"})`` closes it (``ClosedSessionId``).
"""
from __future__ import annotations

import base64
import binascii
import calendar
import functools
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal, Optional

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, ReadTimeoutError
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

import turn_log

logger = Logger()
metrics = Metrics()
app = LambdaFunctionUrlResolver()

# --- limits and patterns (from botocore's sagemaker-runtime 2017-05-13 model) -----------------------
INVOKE_BODY_MAX_BYTES = 6_291_456  # InvokeEndpoint Body max
DEFAULT_MAX_BODY_BYTES = 1_048_576
DEFAULT_SESSION_TTL_SECONDS = 1200
CONVERSATION_ID_RE = r"^[A-Za-z0-9._:-]{1,128}$"
COMPONENT_NAME_RE = re.compile(r"^[a-zA-Z0-9]([\-a-zA-Z0-9]*[a-zA-Z0-9])?$")  # InferenceComponentName
COMPONENT_NAME_MAX = 63
ENDPOINT_NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$")
SESSION_ID_MAX = 256
NEW_SESSION_HEADER_RE = re.compile(  # NewSessionId: "<id>; Expires=YYYY-MM-DDTHH:MM:SSZ"
    r"^(?P<id>[a-zA-Z0-9](?:-*[a-zA-Z0-9])*);\s"
    r"Expires=(?P<expires>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z)$"
)
OPEN_SESSION_BODY = {"requestType": "NEW_SESSION"}
CLOSE_SESSION_BODY = {"requestType": "CLOSE"}
RESERVED_BODY_KEYS = ("requestType",)  # session control keys the container intercepts

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
ASSUMED_ROLE_ARN_RE = re.compile(  # the caller ARN of an STS role session
    r"^arn:(?P<partition>[a-z0-9-]+):sts::(?P<account>[0-9]{12}):assumed-role/(?P<role>[^/]+)/(?P<session>.+)$"
)
OWNER_ATTRIBUTE_NAMES = {"#owner": "owner"}  # OWNER is a DynamoDB reserved word
# Words that, next to "session", identify a lost session in an error message (see _is_session_gone).
SESSION_GONE_WORDS = ("not found", "expired", "invalid", "unknown", "does not exist", "no longer", "closed")


# --- configuration ------------------------------------------------------------------------------------
class ConfigurationError(RuntimeError):
    """The function's environment is wrong (a deployment problem, not the caller's)."""


@dataclass(frozen=True)
class Settings:
    endpoint_name: str
    table_name: str
    session_ttl_seconds: int
    default_component: str
    allowed_components: tuple[str, ...]
    max_body_bytes: int


def _int_env(name: str, default: int, *, minimum: int, maximum: int, problems: list[str]) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        problems.append(f"{name}={raw!r} is not an integer; set it to a whole number {minimum}-{maximum}")
        return default
    if not minimum <= value <= maximum:
        problems.append(f"{name}={value} is out of range; allowed {minimum}-{maximum}")
    return value


@functools.cache
def _settings() -> Settings:
    """Read and validate the environment once; every problem is reported in one error."""
    problems: list[str] = []
    endpoint = os.environ.get("ENDPOINT_NAME", "").strip()
    if not endpoint or len(endpoint) > 63 or not ENDPOINT_NAME_RE.fullmatch(endpoint):
        problems.append(
            f"ENDPOINT_NAME={endpoint!r} is not a SageMaker endpoint name (1-63 chars, [a-zA-Z0-9-], "
            "no leading/trailing hyphen)"
        )
    table = os.environ.get("SESSIONS_TABLE", "").strip()
    if not table:
        problems.append("SESSIONS_TABLE is not set; set it to the DynamoDB table name")
    default = os.environ.get("DEFAULT_COMPONENT", "").strip()
    allowed_raw = [c.strip() for c in os.environ.get("ALLOWED_COMPONENTS", "").split(",") if c.strip()]
    allowed = tuple(dict.fromkeys([default, *allowed_raw])) if default else tuple(dict.fromkeys(allowed_raw))
    if not default:
        problems.append("DEFAULT_COMPONENT is not set; set it to the base inference component name")
    for name in allowed:
        if len(name) > COMPONENT_NAME_MAX or not COMPONENT_NAME_RE.fullmatch(name):
            problems.append(
                f"component {name!r} (DEFAULT_COMPONENT/ALLOWED_COMPONENTS) is not an inference component "
                "name (1-63 chars, [a-zA-Z0-9-], no leading/trailing hyphen)"
            )
    ttl = _int_env(
        "SESSION_TTL_SECONDS", DEFAULT_SESSION_TTL_SECONDS, minimum=1, maximum=7 * 24 * 3600, problems=problems
    )
    max_body = _int_env(
        "MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, minimum=1, maximum=INVOKE_BODY_MAX_BYTES, problems=problems
    )
    if problems:
        raise ConfigurationError("session router misconfigured: " + "; ".join(problems))
    return Settings(endpoint, table, ttl, default, allowed, max_body)


# --- AWS clients (lazy, so tests can stub them) -------------------------------------------------------
@functools.cache
def _sagemaker_runtime():
    # Adaptive retries back off and rate-limit on throttling; reads allow the 60 s model limit + margin.
    return boto3.client(
        "sagemaker-runtime",
        config=Config(
            retries={"mode": "adaptive", "max_attempts": 4},
            connect_timeout=5,
            read_timeout=70,
        ),
    )


@functools.cache
def _dynamodb():
    return boto3.client("dynamodb", config=Config(retries={"mode": "standard", "max_attempts": 5}))


def _now() -> int:
    return int(time.time())


# --- caller identity ----------------------------------------------------------------------------------
def caller_owner(iam: Mapping[str, Any] | None) -> str | None:
    """The stable owner of a conversation for the Function URL's ``requestContext.authorizer.iam``.

    ``arn:<p>:sts::<acct>:assumed-role/<Role>/<session>`` -> ``arn:<p>:iam::<acct>:role/<Role>`` (every
    session of a role is the same owner); any other caller ARN (IAM user, root, federated user) as is.
    None when there is no usable ``userArn`` (no IAM caller). Pure: no I/O, no environment.
    """
    if not isinstance(iam, Mapping):
        return None
    arn = iam.get("userArn")
    if not isinstance(arn, str) or not arn.strip():
        return None
    arn = arn.strip()
    match = ASSUMED_ROLE_ARN_RE.fullmatch(arn)
    if match is not None:
        return f"arn:{match['partition']}:iam::{match['account']}:role/{match['role']}"
    return arn


# --- request models -----------------------------------------------------------------------------------
ConversationId = Annotated[str, StringConstraints(pattern=CONVERSATION_ID_RE)]


class InvokeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    conversation_id: Optional[ConversationId] = None
    component: Optional[str] = None
    body: dict[str, Any]
    content_type: Literal["application/json"] = "application/json"


class CloseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    conversation_id: ConversationId = Field(...)


_FIELD_HINTS = {
    "conversation_id": "conversation_id must be a string of 1-128 characters from A-Z a-z 0-9 . _ : -",
    "component": "component must be a string naming an allowed inference component",
    "body": "body is required and must be a JSON object (the request passed to the model)",
    "content_type": "content_type must be 'application/json' (the only type this front door sends)",
}


# --- errors -------------------------------------------------------------------------------------------
class HttpError(Exception):
    """An error answered to the caller as ``{"error": {...}}`` with an HTTP status."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        model_status: int | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.model_status = model_status
        self.headers = headers or {}


class SessionGone(Exception):
    """SageMaker or the container no longer knows the session (expired, closed, instance replaced)."""


def _json_response(status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=status,
        content_type="application/json",
        body=json.dumps(payload, ensure_ascii=False, separators=(",", ":")),
        headers=headers,
    )


def _count(name: str) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


@app.exception_handler(HttpError)
def _handle_http_error(error: HttpError) -> Response:
    _count("ClientErrors" if error.status < 500 else "ServerErrors")
    logger.info("request rejected", extra={"status": error.status, "error_code": error.code, "field": error.field})
    payload: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.field:
        payload["field"] = error.field
    if error.model_status is not None:
        payload["model_status"] = error.model_status
    return _json_response(error.status, {"error": payload}, error.headers)


@app.not_found
def _handle_not_found(_: NotFoundError) -> Response:
    event = app.current_event
    return _handle_http_error(
        HttpError(
            404,
            "RouteNotFound",
            f"no route for {event.http_method} {event.path}; use POST /invoke or POST /close",
        )
    )


@app.exception_handler(ConfigurationError)
def _handle_configuration_error(error: ConfigurationError) -> Response:
    logger.error("configuration error", extra={"detail": str(error)})
    return _handle_http_error(HttpError(500, "Misconfigured", str(error)))


@app.exception_handler(Exception)
def _handle_unexpected(error: Exception) -> Response:
    # Never log the exception text: it may quote request data. Type and location are enough to debug.
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb else "?"
    logger.error("unhandled error", extra={"error_type": type(error).__name__, "where": where})
    return _handle_http_error(HttpError(500, "InternalError", "internal error; see the function's logs"))


# --- caller -------------------------------------------------------------------------------------------
def _caller() -> str:
    """The owner (see caller_owner) of the current request; 403 when the request names no IAM caller."""
    context = app.current_event.raw_event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    owner = caller_owner(authorizer.get("iam") if isinstance(authorizer, Mapping) else None)
    if owner is None:
        raise HttpError(403, "CallerUnknown", "the request carries no IAM caller (requestContext.authorizer.iam."
                        "userArn); the function URL must use auth type AWS_IAM and requests must be SigV4-signed")
    logger.append_keys(owner=owner)
    return owner


# --- request parsing ----------------------------------------------------------------------------------
def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _raw_body(settings: Settings) -> bytes:
    event = app.current_event
    body = event.body or ""
    if event.is_base64_encoded:
        try:
            raw = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise HttpError(400, "InvalidBody", "request body is not valid base64") from None
    else:
        raw = body.encode("utf-8")
    if len(raw) > settings.max_body_bytes:
        raise HttpError(
            413,
            "PayloadTooLarge",
            f"request body is {len(raw)} bytes; the limit is {settings.max_body_bytes} bytes (MAX_BODY_BYTES). "
            "Send less context per turn: the session keeps earlier turns on the instance.",
        )
    return raw


def _parse(model: type[BaseModel], settings: Settings) -> Any:
    raw = _raw_body(settings)
    if not raw.strip():
        raise HttpError(400, "InvalidJson", "request body is empty; send a JSON object")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        position = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise HttpError(400, "InvalidJson", f"request body is not valid UTF-8 JSON{position}") from None
    if not isinstance(data, dict):
        raise HttpError(400, "InvalidJson", f"request body must be a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        field = str(first["loc"][0]) if first["loc"] else None
        if first["type"] == "extra_forbidden":
            allowed = ", ".join(model.model_fields)
            message = f"unknown field {field!r}; allowed fields: {allowed}"
        elif first["type"] == "missing":
            message = f"{field} is required. " + _FIELD_HINTS.get(field or "", "")
        else:
            message = _FIELD_HINTS.get(field or "", first["msg"])
        raise HttpError(400, "InvalidField", message.strip(), field=field) from None


def _check_component(name: str | None, settings: Settings) -> str | None:
    if name is None:
        return None
    if name not in settings.allowed_components:
        shown = name if len(name) <= 80 else name[:77] + "..."
        raise HttpError(
            400,
            "UnknownComponent",
            f"component {shown!r} is not served by this front door; allowed components: "
            f"{', '.join(settings.allowed_components)}",
            field="component",
        )
    return name


def _model_body(request: InvokeRequest) -> bytes:
    for key in RESERVED_BODY_KEYS:
        if key in request.body:
            raise HttpError(
                400,
                "ReservedField",
                f"body.{key} is reserved for session control; use POST /close to end a conversation and "
                "omit conversation_id for a stateless call",
                field=f"body.{key}",
            )
    data = json.dumps(request.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(data) > INVOKE_BODY_MAX_BYTES:
        raise HttpError(413, "PayloadTooLarge", f"model body is {len(data)} bytes; InvokeEndpoint accepts at most "
                        f"{INVOKE_BODY_MAX_BYTES}", field="body")
    return data


# --- SageMaker calls ----------------------------------------------------------------------------------
def _is_throttling(error: ClientError) -> bool:
    code = error.response.get("Error", {}).get("Code", "")
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in THROTTLING_CODES or status == 429


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
        _count("UpstreamTimeouts")
        return HttpError(504, "ModelTimeout", f"{where} did not answer in time; retry with a smaller request")
    if isinstance(error, (ConnectTimeoutError, BotoCoreError)) or not isinstance(error, ClientError):
        _count("UpstreamErrors")
        return HttpError(502, "EndpointUnreachable", f"could not reach {where}: {type(error).__name__}")
    code = error.response.get("Error", {}).get("Code", "Unknown")
    text = str(error.response.get("Error", {}).get("Message") or "")[:1000]
    if _is_throttling(error):
        _count("Throttled")
        return HttpError(
            429,
            "Throttled",
            f"{where} is throttling or still loading the model ({code}) after retries; retry with backoff",
            headers={"Retry-After": "2"},
        )
    if code == "ModelError":
        original = error.response.get("OriginalStatusCode")
        original_text = str(error.response.get("OriginalMessage") or text)[:1000]
        _count("ModelErrors")
        if original == 429:
            return HttpError(429, "Throttled", f"the model container on {where} is overloaded (429); retry with "
                             "backoff", model_status=429, headers={"Retry-After": "2"})
        if isinstance(original, int) and 400 <= original < 500:
            return HttpError(424, "ModelRejectedRequest", f"the model container on {where} rejected the request "
                             f"({original}): {original_text}", model_status=original)
        return HttpError(502, "ModelFailed", f"the model container on {where} failed ({original}): {original_text}",
                         model_status=original if isinstance(original, int) else None)
    _count("UpstreamErrors")
    if code == "ServiceUnavailable":
        return HttpError(503, "EndpointUnavailable", f"SageMaker is unavailable for {where}; retry later")
    if code == "ValidationError":
        return HttpError(502, "EndpointRejectedRequest", f"SageMaker rejected the call to {where}: {text}. Check "
                         "ENDPOINT_NAME and ALLOWED_COMPONENTS against the deployed endpoint.")
    return HttpError(502, "EndpointError", f"SageMaker failed for {where} ({code}); retry later")


@dataclass(frozen=True)
class ModelReply:
    body: Any
    new_session: str | None
    closed_session: str | None


def _invoke(settings: Settings, component: str, body: bytes, session_id: str | None, content_type: str) -> ModelReply:
    params: dict[str, Any] = {
        "EndpointName": settings.endpoint_name,
        "InferenceComponentName": component,
        "ContentType": content_type,
        "Body": body,
    }
    if session_id is not None:
        params["SessionId"] = session_id
    try:
        response = _sagemaker_runtime().invoke_endpoint(**params)
    except ClientError as exc:
        if session_id not in (None, "NEW_SESSION") and _is_session_gone(exc):
            raise SessionGone() from None
        raise _upstream_error(exc, settings, component) from None
    except BotoCoreError as exc:
        raise _upstream_error(exc, settings, component) from None
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


@dataclass(frozen=True)
class SessionRecord:
    conversation_id: str
    session_id: str
    component: str
    expires_at: int
    owner: str | None = None  # None only for rows written before owners existed


def _open_session(settings: Settings, component: str) -> SessionRecord:
    """Open a stateful session on ``component`` and return the mapping to store (conversation id blank)."""
    reply = _invoke(settings, component, json.dumps(OPEN_SESSION_BODY).encode(), "NEW_SESSION", "application/json")
    match = NEW_SESSION_HEADER_RE.fullmatch(reply.new_session or "")
    if match is None or len(match["id"]) > SESSION_ID_MAX:
        _count("SessionOpenFailures")
        detail = "no NewSessionId" if not reply.new_session else "a malformed NewSessionId"
        raise HttpError(
            502,
            "SessionsNotSupported",
            f"component {component!r} on endpoint {settings.endpoint_name!r} returned {detail} for "
            "SessionId=NEW_SESSION; the container must support stateful sessions (LMI: "
            "OPTION_ENABLE_STATEFUL_SESSIONS=true) or call without conversation_id",
        )
    container_expiry = calendar.timegm(time.strptime(match["expires"], "%Y-%m-%dT%H:%M:%SZ"))
    expires_at = min(_now() + settings.session_ttl_seconds, container_expiry)
    _count("SessionsOpened")
    return SessionRecord("", match["id"], component, expires_at)


def _close_session_quietly(settings: Settings, record: SessionRecord) -> None:
    """Best effort: free a session this invocation opened but will not use."""
    try:
        _invoke(settings, record.component, json.dumps(CLOSE_SESSION_BODY).encode(), record.session_id,
                "application/json")
    except (HttpError, SessionGone) as exc:
        logger.warning("could not close unused session", extra={"error_type": type(exc).__name__})


# --- DynamoDB mapping ---------------------------------------------------------------------------------
def _conversation_not_found(conversation_id: str) -> HttpError:
    # One answer for "no row" and "another principal's row": the caller must not learn which it was.
    return HttpError(404, "ConversationNotFound", f"conversation {conversation_id!r} has no open session for "
                     "this caller (never opened by it, already closed, or expired and removed); use a new "
                     "conversation_id", field="conversation_id")


def _concurrent_update(conversation_id: str) -> HttpError:
    return HttpError(409, "ConcurrentUpdate", f"conversation {conversation_id!r} is being changed by concurrent "
                     "requests; retry the turn")


def _is_condition_failure(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def _get_item(settings: Settings, conversation_id: str) -> dict[str, Any] | None:
    return _dynamodb().get_item(
        TableName=settings.table_name,
        Key={"conversation_id": {"S": conversation_id}},
        ConsistentRead=True,
    ).get("Item") or None


def _to_record(item: dict[str, Any]) -> SessionRecord:
    return SessionRecord(
        conversation_id=item["conversation_id"]["S"],
        session_id=item["session_id"]["S"],
        component=item["component"]["S"],
        expires_at=int(item["expires_at"]["N"]),
        owner=item["owner"]["S"] if "owner" in item else None,
    )


def _owned_record(settings: Settings, conversation_id: str, owner: str) -> SessionRecord | None:
    """The conversation's row if ``owner`` may use it; None when there is none; 404 when it is another's.

    A row without owner (written before owners existed) is adopted: PutItem of the same row plus
    ``owner``, conditioned on the owner still being absent and the session id unchanged. If that
    condition fails, someone else changed the row first and it is read again.
    """
    for _attempt in range(3):
        item = _get_item(settings, conversation_id)
        if item is None:
            return None
        record = _to_record(item)
        if record.owner == owner:
            return record
        if record.owner is not None:
            _count("ForeignConversationRequests")
            logger.warning("conversation owned by another principal; answered as not found")
            raise _conversation_not_found(conversation_id)
        try:
            _dynamodb().put_item(
                TableName=settings.table_name,
                Item={**item, "owner": {"S": owner}, "updated_at": {"N": str(_now())}},
                ConditionExpression="attribute_not_exists(#owner) AND session_id = :sid",
                ExpressionAttributeNames=OWNER_ATTRIBUTE_NAMES,
                ExpressionAttributeValues={":sid": {"S": record.session_id}},
            )
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
            continue
        _count("ConversationsAdopted")
        logger.info("adopted conversation row written before owners existed")
        return replace(record, owner=owner)
    raise _concurrent_update(conversation_id)


def _claim(
    settings: Settings, conversation_id: str, owner: str, opened: SessionRecord, replaces: str | None
) -> SessionRecord:
    """Store ``opened`` as ``owner``'s session for the conversation unless another invocation got there first.

    ``replaces`` is the session id this invocation saw in the row (None when it saw no row). The
    conditional write makes concurrent first turns / reopens safe: the loser gets the winner's row back
    and must use it (and close the session it opened itself). Only a row of ``owner`` is ever replaced;
    a row another principal wrote in the meantime makes this a 404 (see _owned_record).
    """
    now = _now()
    record = SessionRecord(conversation_id, opened.session_id, opened.component, opened.expires_at, owner)
    item = {
        "conversation_id": {"S": conversation_id},
        "session_id": {"S": record.session_id},
        "component": {"S": record.component},
        "expires_at": {"N": str(record.expires_at)},
        "owner": {"S": owner},
        "created_at": {"N": str(now)},
        "updated_at": {"N": str(now)},
    }
    for _attempt in range(3):
        if replaces is None:
            condition = "attribute_not_exists(conversation_id) OR (expires_at <= :now AND #owner = :owner)"
            values = {":now": {"N": str(now)}, ":owner": {"S": owner}}
        else:
            condition = "session_id = :old AND #owner = :owner"
            values = {":old": {"S": replaces}, ":owner": {"S": owner}}
        try:
            _dynamodb().put_item(
                TableName=settings.table_name,
                Item=item,
                ConditionExpression=condition,
                ExpressionAttributeNames=OWNER_ATTRIBUTE_NAMES,
                ExpressionAttributeValues=values,
            )
            return record
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
        winner = _owned_record(settings, conversation_id, owner)  # 404 if another principal's
        if winner is not None and winner.expires_at > now and winner.session_id != replaces:
            return winner
        replaces = winner.session_id if winner is not None else None
    raise _concurrent_update(conversation_id)


# --- routes -------------------------------------------------------------------------------------------
def _open_for(
    settings: Settings, conversation_id: str, owner: str, component: str, replaces: str | None
) -> SessionRecord:
    opened = _open_session(settings, component)
    try:
        record = _claim(settings, conversation_id, owner, opened, replaces)
    except HttpError:
        _close_session_quietly(settings, opened)  # e.g. another principal claimed the id meanwhile
        raise
    if record.session_id != opened.session_id:
        _close_session_quietly(settings, opened)
        logger.info("lost race for conversation; using the stored session")
        if record.component != component:
            raise _component_conflict(conversation_id, record.component, component)
    return record


def _component_conflict(conversation_id: str, pinned: str, asked: str) -> HttpError:
    _count("ComponentConflicts")
    return HttpError(
        409,
        "ComponentConflict",
        f"conversation {conversation_id!r} has a live session on component {pinned!r}; a session lives on one "
        f"component, so it cannot switch to {asked!r}. Omit component, or POST /close first, or use a new "
        "conversation_id.",
        field="component",
    )


@app.post("/invoke")
def invoke() -> Response:
    settings = _settings()
    owner = _caller()
    request: InvokeRequest = _parse(InvokeRequest, settings)
    asked = _check_component(request.component, settings)
    body = _model_body(request)

    if request.conversation_id is None:
        component = asked or settings.default_component
        logger.append_keys(component=component)
        reply = _invoke(settings, component, body, None, request.content_type)
        _count("StatelessInvocations")
        logger.info("stateless turn completed")
        turn_log.record_turn(component, request.body, reply.body)  # EAGLE source front_door; never raises
        return _json_response(200, {"conversation_id": None, "component": component, "body": reply.body})

    conversation_id = request.conversation_id
    logger.append_keys(conversation_id=conversation_id)
    row = _owned_record(settings, conversation_id, owner)
    reopened = False
    if row is not None and row.expires_at > _now():
        if asked is not None and asked != row.component:
            logger.append_keys(component=row.component)
            raise _component_conflict(conversation_id, row.component, asked)
        record = row
    else:
        # No live session: first turn, or the stored one passed its expiry (then the turn may pick any
        # allowed component, since the old session and its context are gone).
        component = asked or settings.default_component
        logger.append_keys(component=component)
        reopened = row is not None
        record = _open_for(settings, conversation_id, owner, component, row.session_id if row else None)
    logger.append_keys(component=record.component)

    try:
        reply = _invoke(settings, record.component, body, record.session_id, request.content_type)
    except SessionGone:
        logger.info("session lost; reopening")
        record = _open_for(settings, conversation_id, owner, record.component, record.session_id)
        reopened = True
        try:
            reply = _invoke(settings, record.component, body, record.session_id, request.content_type)
        except SessionGone:
            raise HttpError(502, "SessionUnavailable", f"component {record.component!r} rejected a session it had "
                            "just opened; retry the turn") from None
    if reopened:
        _count("SessionsReopened")
    _count("SessionTurns")
    logger.info("session turn completed", extra={"session_reopened": reopened})
    turn_log.record_turn(record.component, request.body, reply.body)  # EAGLE source front_door; never raises
    headers = {"X-Session-Reopened": "true"} if reopened else None
    return _json_response(
        200,
        {
            "conversation_id": conversation_id,
            "session_id": record.session_id,
            "component": record.component,
            "body": reply.body,
        },
        headers,
    )


@app.post("/close")
def close() -> Response:
    settings = _settings()
    owner = _caller()
    request: CloseRequest = _parse(CloseRequest, settings)
    conversation_id = request.conversation_id
    logger.append_keys(conversation_id=conversation_id)
    row = _owned_record(settings, conversation_id, owner)  # 404 if another principal's
    if row is None:
        raise _conversation_not_found(conversation_id)
    logger.append_keys(component=row.component)
    was_open = True
    try:
        reply = _invoke(settings, row.component, json.dumps(CLOSE_SESSION_BODY).encode(), row.session_id,
                        "application/json")
        if reply.closed_session not in (None, row.session_id):
            logger.warning("container closed a different session id than requested")
    except SessionGone:
        was_open = False  # already expired/closed on the instance: the goal state holds
    # Throttling and endpoint errors propagate (HttpError) and keep the row, so the caller can retry.
    # Delete only the row that was closed: a row reopened meanwhile (new session id) stays.
    try:
        _dynamodb().delete_item(
            TableName=settings.table_name,
            Key={"conversation_id": {"S": conversation_id}},
            ConditionExpression="session_id = :sid AND #owner = :owner",
            ExpressionAttributeNames=OWNER_ATTRIBUTE_NAMES,
            ExpressionAttributeValues={":sid": {"S": row.session_id}, ":owner": {"S": owner}},
        )
    except ClientError as exc:
        if not _is_condition_failure(exc):
            raise
        logger.info("conversation row changed or vanished before delete; left as is")
    _count("SessionsClosed")
    logger.info("session closed", extra={"session_was_open": was_open})
    return _json_response(
        200,
        {
            "conversation_id": conversation_id,
            "session_id": row.session_id,
            "component": row.component,
            "closed": True,
            "session_was_open": was_open,
        },
    )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.LAMBDA_FUNCTION_URL, clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
