"""Session-aware front door (Lambda Function URL) that maps chat conversations to SageMaker stateful sessions.

A chat app calls this function's URL (auth type AWS_IAM, so every request is SigV4-signed for service
``lambda``). ``POST /open`` opens a conversation: a SageMaker stateful session on the chosen inference
component, stored in DynamoDB under a conversation id the server issues. Every later turn names that id,
so the front door adds the session id and SageMaker routes the turn to the instance holding the session
(session-aware / sticky routing). Without a ``conversation_id`` a turn is passed straight to the endpoint
(load-aware routing picks the instance).

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
ALLOWED_COMPONENTS   Optional comma-separated inference component names a caller may choose, added to
                     those in ``allowed_components.json`` next to this module (``{"components": [...]}``,
                     packaged by the construct, so the list may hold thousands of adapters without
                     meeting Lambda's 4 KB environment limit); DEFAULT_COMPONENT is always allowed.
OWNER_MODE           ``session`` (default), ``role`` or ``cognito_identity``: who owns a conversation (see
                     caller_owner).
IDENTITY_POOLS       OWNER_MODE=cognito_identity: comma-separated Cognito identity pool ids whose identities
                     may own conversations (required in that mode; a caller of another pool gets 403).
MAX_BODY_BYTES       Largest accepted HTTP request body in bytes (default 1048576 = 1 MiB; at most
                     6291456, the InvokeEndpoint limit).
POWERTOOLS_SERVICE_NAME / POWERTOOLS_METRICS_NAMESPACE  Logger service and metrics namespace.

Event: Lambda Function URL request (API Gateway HTTP API payload format 2.0). The Content-Type header is
not interpreted: every body must be a JSON object (base64 when Lambda marked it so).

POST /open    body ``{"component"?: str}`` (``{}`` for the base) -> 200 ``{"conversation_id": str,
              "session_id": str, "component": str, "endpoint_name": str, "expires_at": epoch seconds}``. The conversation id is
              ``secrets.token_urlsafe(24)`` (192 random bits); the session id may be used for
              InvokeEndpointWithResponseStream by a caller allowed to (a stream cannot open a session).
POST /invoke  body ``{"conversation_id"?: str 1-128 of [A-Za-z0-9._:-], "component"?: str,
              "body": {...JSON object passed to the model...}, "content_type"?: "application/json"}``
    200 ``{"conversation_id": str|null, "session_id"?: str, "component": str,
    "body": <model response JSON, or text>}``; header ``X-Session-Reopened: true`` when the session
    was lost (expired, closed by the container, instance replaced) and a new one was opened, so
    context cached in the old session is gone and the chat app should resend the history.
POST /close   body ``{"conversation_id": str}`` -> 200 ``{"conversation_id", "session_id",
              "component", "closed": true, "session_was_open": bool}``.

Errors: ``{"error": {"code", "message", "field"?, "model_status"?}}`` with status 400 (invalid request:
bad JSON, nesting deeper than 64, unpaired surrogates, unknown component), 403 (no IAM caller in the
request context: CallerUnknown; a caller whose identity the owner mode does not accept: CallerNotAllowed), 404 (unknown route; a conversation id that is unknown, expired and removed, or
another caller's: one answer for all), 409 (component switch inside a live session, concurrent update),
413 (body over MAX_BODY_BYTES), 424 (the model container answered 4xx), 429 (SageMaker or the model
container throttled after retries), 502/503 (endpoint failures), 503 SessionStoreThrottled (the
conversation table throttled, see below), 504 (the model timed out, or TimeBudgetExceeded: the rest of
the invocation's time could not fit another model call), 500 (bug or misconfiguration only). Answers
that a retry may cure (429 Throttled, 503 SessionStoreThrottled, 504 TimeBudgetExceeded) carry
``Retry-After`` (seconds). Prompts, completions and request bodies are never logged.

Throttling of the conversation table. DynamoDB answers a request over the table's or the account's
throughput with ProvisionedThroughputExceededException, ThrottlingException or RequestLimitExceeded;
botocore retries it (DYNAMODB_MAX_ATTEMPTS in all), and one that still fails is answered 503
``SessionStoreThrottled`` with ``Retry-After`` (DYNAMODB_RETRY_AFTER_SECONDS), counted as ``Throttled``
and not as ``ServerErrors``: it is back-pressure, not a failure of the front door, so the front door's
errors alarm does not count it. The request may be sent again as it was: a throttled /open or /invoke
has not run the turn (a session opened for it is closed again), and /close may be repeated.

Conversation ownership: every conversation is bound to the caller that opened it, ``caller_owner`` of
``requestContext.authorizer.iam`` (Lambda fills it from the verified SigV4 signature: accessKey,
accountId, callerId, cognitoIdentity, principalOrgId, userArn, userId; no source identity). By default
(OWNER_MODE=session) the owner is the full caller: an assumed-role session including its session name (one
person per SSO sign-in), the Cognito identity id for identity-pool credentials, an IAM user's ARN; that is
sound only where the role's trust policy fixes session names (docs/sessions-trust.md). OWNER_MODE=role
makes every session of a role one owner, for backends whose session names rotate. OWNER_MODE=cognito_identity
serves only Cognito identities of IDENTITY_POOLS. Federated users (GetFederationToken, whose name the
calling IAM user chooses) are refused (403 CallerNotAllowed) in every mode, as is a caller that the mode
does not accept; nothing is read or written for a refused caller. A turn or /close
naming a conversation the caller does not own gets the same 404 ``ConversationNotFound`` as an
unknown id, after the same single GetItem, and nothing is written or sent to SageMaker. Rows without
an owner (older versions let clients choose ids) are never adopted. The request context is only
trustworthy when the function is invoked through its URL: a principal allowed ``lambda:InvokeFunction``
on the function itself can send any event; grant callers ``lambda:InvokeFunction`` only with
``lambda:InvokedViaFunctionUrl`` = true (see the README). Logs carry the owner (not secret), never prompts.

Time budget: each invocation answers before the function's timeout. A SageMaker call is attempted only
when its worst case (connect + read timeout, plus a DynamoDB write) fits in the remaining time
(``context.get_remaining_time_in_millis()``) minus a margin; throttling is retried (at most 3 attempts)
within that budget; otherwise the answer is 504 TimeBudgetExceeded and the conversation is kept.

Session protocol (LMI/DJL ``OPTION_ENABLE_STATEFUL_SESSIONS`` and the SageMaker model-hosting container
standard): ``InvokeEndpoint(SessionId="NEW_SESSION", Body={"requestType": "NEW_SESSION"})`` opens a
session and returns ``NewSessionId = "<id>; Expires=<UTC ISO time>"`` without running the model;
``InvokeEndpoint(SessionId=<id>, Body={"requestType": "CLOSE"})`` closes it (``ClosedSessionId``).
"""

from __future__ import annotations

import base64
import binascii
import calendar
import contextlib
import functools
import json
import os
import random
import re
import secrets
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any, Literal

import turn_log
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from llm_cdk_shared import clients, env

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response
    from aws_lambda_powertools.event_handler.exceptions import NotFoundError
    from pydantic import BaseModel

    # classes that _models() builds on first use: Any for annotations
    CloseRequest: TypeAlias = Any
    InvokeRequest: TypeAlias = Any
    OpenRequest: TypeAlias = Any

logger = Logger()
metrics = Metrics()
# The resolver (Powertools' event handler) and the request models (pydantic) are built on the first request
# (``_app``, ``_models``), not at import: a cold start pays only for what this module needs to load.

# --- limits and patterns (from botocore's sagemaker-runtime 2017-05-13 model) -----------------------
INVOKE_BODY_MAX_BYTES = 6_291_456  # InvokeEndpoint Body max
DEFAULT_MAX_BODY_BYTES = 1_048_576
DEFAULT_SESSION_TTL_SECONDS = 1200
CONVERSATION_ID_RE = r"^[A-Za-z0-9._:-]{1,128}$"
COMPONENT_NAME_RE = re.compile(r"^[a-zA-Z0-9]([\-a-zA-Z0-9]*[a-zA-Z0-9])?$")  # InferenceComponentName
COMPONENT_NAME_MAX = 63
ENDPOINT_NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$")
SESSION_ID_MAX = 256
ALLOWED_COMPONENTS_FILE = "allowed_components.json"  # {"components": [...]}, packaged by the construct
SHOWN_COMPONENTS = 20  # component names an UnknownComponent message lists
MAX_JSON_DEPTH = 64  # nesting levels a request body may have (chat payloads need a handful)
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
FEDERATED_USER_ARN_RE = re.compile(  # GetFederationToken: the calling IAM user names the federated user
    r"^arn:[a-z0-9-]+:sts::[0-9]{12}:federated-user/"
)
OWNER_MODES = ("session", "role", "cognito_identity")
IDENTITY_POOL_RE = re.compile(
    r"^[a-z]{2}(-[a-z]+)+-[0-9]:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)
CONVERSATION_ID_BYTES = 24  # secrets.token_urlsafe(24): 192 random bits, 32 characters of [A-Za-z0-9_-]
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
    owner_mode: str = "session"
    identity_pools: tuple[str, ...] = ()


PACKAGED_COMPONENTS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), ALLOWED_COMPONENTS_FILE)


def _packaged_components(problems: list[str]) -> list[str]:
    """Component names from ALLOWED_COMPONENTS_FILE next to this module (written by the construct)."""
    path = PACKAGED_COMPONENTS_PATH
    if not os.path.isfile(path):
        return []
    try:
        with open(path, encoding="utf-8") as handle:
            names = json.load(handle)["components"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise TypeError("components is not a list of strings")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problems.append(f"{ALLOWED_COMPONENTS_FILE} is unreadable ({type(exc).__name__}); redeploy the front door")
        return []
    return [n.strip() for n in names if n.strip()]


@functools.cache
def _settings() -> Settings:
    """Read and validate the environment once; every problem is reported in one error."""
    environment = env.Environment()
    endpoint = environment.raw("ENDPOINT_NAME")
    if not endpoint or len(endpoint) > 63 or not ENDPOINT_NAME_RE.fullmatch(endpoint):
        environment.add(
            "ENDPOINT_NAME",
            endpoint,
            "a SageMaker endpoint name (1-63 chars, [a-zA-Z0-9-], no leading/trailing hyphen)",
        )
    table = environment.text("SESSIONS_TABLE", required=True, allowed="the DynamoDB table name")
    default = environment.text("DEFAULT_COMPONENT", required=True, allowed="the base inference component name")
    allowed_raw = environment.csv("ALLOWED_COMPONENTS")
    allowed_raw.extend(_packaged_components(environment.problems))
    allowed = tuple(dict.fromkeys([default, *allowed_raw])) if default else tuple(dict.fromkeys(allowed_raw))
    for name in allowed:
        if len(name) > COMPONENT_NAME_MAX or not COMPONENT_NAME_RE.fullmatch(name):
            environment.add(
                "DEFAULT_COMPONENT/ALLOWED_COMPONENTS",
                name,
                "inference component names (1-63 chars, [a-zA-Z0-9-], no leading/trailing hyphen)",
            )
    ttl = environment.integer("SESSION_TTL_SECONDS", DEFAULT_SESSION_TTL_SECONDS, minimum=1, maximum=7 * 24 * 3600)
    max_body = environment.integer("MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, minimum=1, maximum=INVOKE_BODY_MAX_BYTES)
    owner_mode = environment.text("OWNER_MODE", default="session", choices=OWNER_MODES) or "session"
    pools = tuple(environment.csv("IDENTITY_POOLS"))
    for pool in pools:
        if not IDENTITY_POOL_RE.fullmatch(pool):
            environment.add("IDENTITY_POOLS", pool, "Cognito identity pool ids <region>:<GUID>")
    if owner_mode == "cognito_identity" and not pools:
        environment.add("IDENTITY_POOLS", "", "at least one identity pool id with OWNER_MODE=cognito_identity")
    environment.check(ConfigurationError, "session router misconfigured")
    return Settings(endpoint, table, ttl, default, allowed, max_body, owner_mode, pools)


# --- AWS clients (lazy, so tests can stub them) -------------------------------------------------------
# Time budget. The function has a fixed timeout (300 s); a turn makes up to four SageMaker calls (open,
# turn, and after a lost session: reopen, turn) plus DynamoDB reads/writes. botocore cannot bound its
# retries by a deadline, so botocore makes one attempt per call and the router retries throttling itself,
# starting an attempt only when its worst case (connect + read timeout, plus one DynamoDB write after it)
# still fits in what is left of the invocation minus a margin. Otherwise it answers 504 TimeBudgetExceeded
# before Lambda would kill the invocation (a killed invocation answers the caller a bare 502).
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
RETRYABLE_UPSTREAM_CODES = THROTTLING_CODES | {"ServiceUnavailable", "InternalFailure"}
DYNAMODB_THROTTLING_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "Throttling"}
)
"""DynamoDB's throttling error codes (botocore's standard retry mode retries these same codes)."""
DYNAMODB_RETRY_AFTER_SECONDS = 1  # DynamoDB throttles for a second or so; botocore has already backed off


_sagemaker_runtime = clients.client_getter(
    "sagemaker-runtime",
    retries={"mode": "standard", "total_max_attempts": 1},  # retried in _invoke, within the budget
    connect_timeout=MODEL_CONNECT_TIMEOUT,
    read_timeout=MODEL_READ_TIMEOUT,
)
_dynamodb = clients.client_getter(
    "dynamodb",
    retries={"mode": "standard", "total_max_attempts": DYNAMODB_MAX_ATTEMPTS},
    connect_timeout=DYNAMODB_CONNECT_TIMEOUT,
    read_timeout=DYNAMODB_READ_TIMEOUT,
)


_deadline: float | None = None  # _monotonic() value by which the answer must be on its way


def _monotonic() -> float:
    return time.monotonic()


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def _start_budget(context: Any) -> None:
    global _deadline
    try:
        remaining = float(context.get_remaining_time_in_millis()) / 1000.0
    except (AttributeError, TypeError, ValueError):
        remaining = DEFAULT_REMAINING_SECONDS
    _deadline = _monotonic() + remaining - BUDGET_MARGIN_SECONDS


def _budget_left() -> float:
    return float("inf") if _deadline is None else _deadline - _monotonic()


def _ensure_budget(needed: float, what: str) -> None:
    """504 unless ``needed`` seconds (the worst case of the next step) fit in the invocation's budget."""
    left = _budget_left()
    if left >= needed:
        return
    _count("TimeBudgetExceeded")
    raise HttpError(
        504,
        "TimeBudgetExceeded",
        f"the turn ran out of time before {what}: {max(left, 0):.0f} s of the front door's time budget are left "
        f"and one model call may take up to {MODEL_ATTEMPT_WORST} s (the function's timeout bounds the whole "
        "request). Nothing further was sent to the model and the conversation is kept: retry the turn, or send "
        "a smaller request.",
        headers={"Retry-After": "1"},
    )


def _backoff(attempt: int) -> float:
    return min(0.25 * 2**attempt, 2.0) * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not crypto


def _now() -> int:
    return int(time.time())


# --- caller identity ----------------------------------------------------------------------------------
class CallerNotAllowed(Exception):
    """A verified caller whose identity the owner mode does not accept (403 CallerNotAllowed); the message says why."""


def caller_owner(
    iam: Mapping[str, Any] | None, mode: str = "session", identity_pools: tuple[str, ...] = ()
) -> str | None:
    """The owner of a conversation for the Function URL's ``requestContext.authorizer.iam``.

    - A Cognito identity (``cognitoIdentity.identityId``, set when the caller signed with credentials from
      an identity pool) -> ``cognito-identity/<identityPoolId>/<identityId>``, in every mode: all users of
      one pool share one role and even one session name (``CognitoIdentityCredentials``), so only the
      identity id tells people apart. A ``cognitoIdentity`` without an identity id -> None.
    - mode ``session`` (default): the caller ARN as is. For an assumed role that is
      ``arn:<p>:sts::<acct>:assumed-role/<Role>/<session>``: the session name is part of the owner, so
      each person signed in through one SSO permission set (session name = the user) is an owner of
      their own. Sound only when the role's trust fixes session names (docs/sessions-trust.md).
    - mode ``role``: an assumed-role session -> ``arn:<p>:iam::<acct>:role/<Role>``, for backends whose
      session names rotate (a Lambda function or ECS task per request): every session of the role is one
      owner, so the backend must keep its users apart itself.
    - mode ``cognito_identity``: only a Cognito identity of one of ``identity_pools``; any other caller
      raises CallerNotAllowed (an assumed-role session of the pool's role without a Cognito identity, as
      role chaining gives, included).
    - IAM users and the root user: their ARN as is. Federated users (``GetFederationToken``) raise
      CallerNotAllowed in every mode: the IAM user that calls it chooses the name, and no trust policy
      can fix it.
    None when there is no usable caller (no IAM authorizer). Pure: no I/O, no environment.
    """
    if not isinstance(iam, Mapping):
        return None
    cognito = iam.get("cognitoIdentity")
    if cognito is not None:
        if not isinstance(cognito, Mapping):
            return None
        identity, pool = cognito.get("identityId"), cognito.get("identityPoolId")
        if not isinstance(identity, str) or not identity.strip():
            return None
        pool_id = pool.strip() if isinstance(pool, str) and pool.strip() else "-"
        if mode == "cognito_identity" and pool_id not in identity_pools:
            raise CallerNotAllowed(
                f"the Cognito identity is of identity pool {pool_id}, which this front door "
                "does not serve (IDENTITY_POOLS)"
            )
        return f"cognito-identity/{pool_id}/{identity.strip()}"
    arn = iam.get("userArn")
    if not isinstance(arn, str) or not arn.strip():
        return None
    arn = arn.strip()
    if mode == "cognito_identity":
        raise CallerNotAllowed(
            "this front door serves only Cognito identity-pool credentials (OWNER_MODE="
            "cognito_identity); the request was signed without a Cognito identity"
        )
    if FEDERATED_USER_ARN_RE.match(arn):
        raise CallerNotAllowed(
            "federated users (GetFederationToken) are not served: the IAM user that calls it "
            "chooses the federated user's name, so it cannot own a conversation; sign in "
            "through a role"
        )
    match = ASSUMED_ROLE_ARN_RE.fullmatch(arn)
    if match is not None and mode == "role":
        return f"arn:{match['partition']}:iam::{match['account']}:role/{match['role']}"
    return arn


def new_conversation_id() -> str:
    """A server-issued conversation id: 192 random bits (``secrets``), URL-safe, so it cannot be guessed."""
    return secrets.token_urlsafe(CONVERSATION_ID_BYTES)


# --- request models -----------------------------------------------------------------------------------
@functools.cache
def _models() -> SimpleNamespace:
    """The request models, built on the first request that has a body to check (pydantic is not imported on a
    cold start)."""
    from pydantic import BaseModel, ConfigDict, Field, StringConstraints

    ConversationId = Annotated[str, StringConstraints(pattern=CONVERSATION_ID_RE)]

    class InvokeRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

        conversation_id: ConversationId | None = None
        component: str | None = None
        body: dict[str, Any]
        content_type: Literal["application/json"] = "application/json"

    class OpenRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

        component: str | None = None

    class CloseRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

        conversation_id: ConversationId = Field(...)

    return SimpleNamespace(
        ConversationId=ConversationId, InvokeRequest=InvokeRequest, OpenRequest=OpenRequest, CloseRequest=CloseRequest
    )


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
        backpressure: bool = False,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.model_status = model_status
        self.headers = headers or {}
        self.backpressure = backpressure
        """A 5xx that says "busy, retry" rather than "failed": counted as Throttled, never as ServerErrors."""


class SessionGone(Exception):
    """SageMaker or the container no longer knows the session (expired, closed, instance replaced)."""


def _json_response(status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Response[str]:
    from aws_lambda_powertools.event_handler import Response

    return Response(
        status_code=status,
        content_type="application/json",
        body=json.dumps(payload, ensure_ascii=False, separators=(",", ":")),
        headers=headers,
    )


def _count(name: str) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


def _handle_http_error(error: HttpError) -> Response[str]:
    # ServerErrors feeds the front door's errors alarm: back-pressure is counted as Throttled instead.
    _count("Throttled" if error.backpressure else "ClientErrors" if error.status < 500 else "ServerErrors")
    logger.info("request rejected", extra={"status": error.status, "error_code": error.code, "field": error.field})
    payload: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.field:
        payload["field"] = error.field
    if error.model_status is not None:
        payload["model_status"] = error.model_status
    return _json_response(error.status, {"error": payload}, error.headers)


def _handle_not_found(_: NotFoundError) -> Response[str]:
    event = _app().current_event
    return _handle_http_error(
        HttpError(
            404,
            "RouteNotFound",
            f"no route for {_quoted(event.http_method)} {_quoted(event.path)}; use POST /open, POST /invoke or POST /close",
        )
    )


def _quoted(text: str) -> str:
    """``text`` as the caller sent it when it is short printable ASCII, else its ``repr`` cut to 80 characters: an
    answer never echoes a huge path, control characters or a lone surrogate (which has no UTF-8 form)."""
    if len(text) <= 80 and text.isascii() and text.isprintable():
        return text
    shown = repr(text)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _handle_configuration_error(error: ConfigurationError) -> Response[str]:
    logger.error("configuration error", extra={"detail": str(error)})
    return _handle_http_error(HttpError(500, "Misconfigured", str(error)))


def _handle_unexpected(error: Exception) -> Response[str]:
    # Never log the exception text: it may quote request data. Type and location are enough to debug.
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb else "?"
    logger.error("unhandled error", extra={"error_type": type(error).__name__, "where": where})
    return _handle_http_error(HttpError(500, "InternalError", "internal error; see the function's logs"))


# --- caller -------------------------------------------------------------------------------------------
def _caller(settings: Settings) -> str:
    """The owner (see caller_owner) of the current request; 403 when the request names no IAM caller
    (CallerUnknown) or one the owner mode does not accept (CallerNotAllowed, counted as CallersRefused)."""
    context = _app().current_event.raw_event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    try:
        owner = caller_owner(
            authorizer.get("iam") if isinstance(authorizer, Mapping) else None,
            settings.owner_mode,
            settings.identity_pools,
        )
    except CallerNotAllowed as refused:
        _count("CallersRefused")
        raise HttpError(403, "CallerNotAllowed", str(refused)) from None
    if owner is None:
        raise HttpError(
            403,
            "CallerUnknown",
            "the request carries no IAM caller (requestContext.authorizer.iam."
            "userArn, or cognitoIdentity.identityId); the function URL must use auth type AWS_IAM and requests must be "
            "SigV4-signed",
        )
    logger.append_keys(owner=owner)
    return owner


# --- request parsing ----------------------------------------------------------------------------------
def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _raw_body(settings: Settings) -> bytes:
    """The request body as bytes. Lambda sets ``isBase64Encoded`` for non-text content types; anything odd
    in the event (a non-string body, a flag that is not a boolean, text that is not UTF-8) is the caller's
    request, so it is a 400, never a crash."""
    raw_event = _app().current_event.raw_event
    body = raw_event.get("body")
    if body is None:
        body = ""
    if not isinstance(body, str):
        raise HttpError(400, "InvalidBody", "request body must be text (JSON) or base64 text")
    flag = raw_event.get("isBase64Encoded", False)
    if flag not in (True, False):
        raise HttpError(400, "InvalidBody", "isBase64Encoded must be true or false")
    if flag:
        try:
            raw = base64.b64decode(body.encode("ascii"), validate=True)
        except (binascii.Error, ValueError, UnicodeEncodeError):
            raise HttpError(400, "InvalidBody", "request body is not valid base64") from None
    else:
        try:
            raw = body.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate in the event text
            raise HttpError(400, "InvalidBody", "request body is not valid UTF-8 text") from None
    if len(raw) > settings.max_body_bytes:
        raise HttpError(
            413,
            "PayloadTooLarge",
            f"request body is {len(raw)} bytes; the limit is {settings.max_body_bytes} bytes (MAX_BODY_BYTES). "
            "Send less context per turn: the session keeps earlier turns on the instance.",
        )
    return raw


def _too_deep() -> HttpError:
    return HttpError(
        400,
        "InvalidJson",
        f"request body nests arrays/objects more than {MAX_JSON_DEPTH} levels deep; send a flatter JSON object",
    )


def _check_json_tree(data: Any) -> None:
    """Reject what JSON allows but the rest of the path cannot carry, without recursion.

    - nesting deeper than MAX_JSON_DEPTH (re-encoding or validating it would recurse past Python's limit);
    - strings or keys with an unpaired UTF-16 surrogate (``"\\ud800"`` is valid JSON, but such text has no
      UTF-8 form, so it could never be sent to the model).
    """
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            _check_text(value)
            continue
        if isinstance(value, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise _too_deep()
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    _check_text(key)
                stack.append((item, depth + 1))


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise HttpError(
            400,
            "InvalidJson",
            "request body has a string with an unpaired UTF-16 surrogate "
            "(e.g. \\ud800 without its pair); such text has no UTF-8 form: send valid Unicode",
        ) from None


def _parse(model: type[BaseModel], settings: Settings) -> Any:
    from pydantic import ValidationError

    raw = _raw_body(settings)
    if not raw.strip():
        raise HttpError(400, "InvalidJson", "request body is empty; send a JSON object")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except RecursionError:
        raise _too_deep() from None
    except (UnicodeDecodeError, ValueError) as exc:
        position = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise HttpError(400, "InvalidJson", f"request body is not valid UTF-8 JSON{position}") from None
    if not isinstance(data, dict):
        raise HttpError(400, "InvalidJson", f"request body must be a JSON object, got {type(data).__name__}")
    _check_json_tree(data)
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
    if name not in _allowed_set(settings.allowed_components):
        shown = name if len(name) <= 80 else name[:77] + "..."
        listed = ", ".join(settings.allowed_components[:SHOWN_COMPONENTS])
        more = len(settings.allowed_components) - SHOWN_COMPONENTS
        raise HttpError(
            400,
            "UnknownComponent",
            f"component {shown!r} is not served by this front door; allowed components: {listed}"
            + (f" and {more} more" if more > 0 else ""),
            field="component",
        )
    return name


@functools.cache
def _allowed_set(names: tuple[str, ...]) -> frozenset[str]:
    return frozenset(names)


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
        raise HttpError(
            413,
            "PayloadTooLarge",
            f"model body is {len(data)} bytes; InvokeEndpoint accepts at most {INVOKE_BODY_MAX_BYTES}",
            field="body",
        )
    return data


# --- SageMaker calls ----------------------------------------------------------------------------------
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
    _count("UpstreamErrors")
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


def _invoke(settings: Settings, component: str, body: bytes, session_id: str | None, content_type: str) -> ModelReply:
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
        _ensure_budget(MODEL_ATTEMPT_WORST + DYNAMODB_WORST, what)
        try:
            response = _sagemaker_runtime().invoke_endpoint(**params)
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
        pause = _backoff(attempt)
        if (
            not retryable
            or attempt >= MODEL_MAX_ATTEMPTS
            or _budget_left() - pause < MODEL_ATTEMPT_WORST + DYNAMODB_WORST
        ):
            raise _upstream_error(failure, settings, component) from None
        _count("UpstreamRetries")
        _sleep(pause)
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
        _invoke(
            settings, record.component, json.dumps(CLOSE_SESSION_BODY).encode(), record.session_id, "application/json"
        )
    except (HttpError, SessionGone) as exc:
        logger.warning("could not close unused session", extra={"error_type": type(exc).__name__})


# --- DynamoDB mapping ---------------------------------------------------------------------------------
def _conversation_not_found(conversation_id: str) -> HttpError:
    # One answer for "no row", "a row without owner" and "another principal's row", after the same single
    # GetItem: the caller cannot learn which it was from the status, the body or the number of AWS calls.
    return HttpError(
        404,
        "ConversationNotFound",
        f"conversation {conversation_id!r} has no open session for "
        "this caller (never opened by it, already closed, or expired and removed); open a new "
        "conversation with POST /open",
        field="conversation_id",
    )


def _concurrent_update(conversation_id: str) -> HttpError:
    return HttpError(
        409,
        "ConcurrentUpdate",
        f"conversation {conversation_id!r} is being changed by concurrent requests; retry the turn",
    )


def _is_condition_failure(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def _is_table_throttling(error: ClientError) -> bool:
    code = error.response.get("Error", {}).get("Code", "")
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in DYNAMODB_THROTTLING_CODES or status == 429


@contextlib.contextmanager
def _table_call(what: str) -> Iterator[None]:
    """Around one DynamoDB call: a throttle that outlasted botocore's retries is 503 SessionStoreThrottled.

    Any other DynamoDB error (a failed condition included) propagates unchanged to the caller's handling.
    """
    try:
        yield
    except ClientError as exc:
        if not _is_table_throttling(exc):
            raise
        code = exc.response.get("Error", {}).get("Code", "throttled")
        raise HttpError(
            503,
            "SessionStoreThrottled",
            f"the conversation table is throttling requests ({code}) while {what}; the turn did not run: send "
            "the same request again after Retry-After seconds, with backoff",
            headers={"Retry-After": str(DYNAMODB_RETRY_AFTER_SECONDS)},
            backpressure=True,
        ) from None


def _get_item(settings: Settings, conversation_id: str) -> dict[str, Any] | None:
    with _table_call("reading the conversation"):
        return (
            _dynamodb()
            .get_item(
                TableName=settings.table_name,
                Key={"conversation_id": {"S": conversation_id}},
                ConsistentRead=True,
            )
            .get("Item")
            or None
        )


def _to_record(item: dict[str, Any]) -> SessionRecord:
    return SessionRecord(
        conversation_id=item["conversation_id"]["S"],
        session_id=item["session_id"]["S"],
        component=item["component"]["S"],
        expires_at=int(item["expires_at"]["N"]),
        owner=item["owner"]["S"] if "owner" in item else None,
    )


def _owned_record(settings: Settings, conversation_id: str, owner: str) -> SessionRecord:
    """The conversation's row when ``owner`` owns it; else 404 ConversationNotFound.

    Rows without an owner (written by versions that let clients choose ids) are never adopted: their ids
    may have been guessed, so they answer 404 like any unknown id and expire through the table's TTL.
    """
    item = _get_item(settings, conversation_id)
    record = _to_record(item) if item is not None else None
    if record is None or record.owner != owner:
        if record is not None:
            _count("ForeignConversationRequests")
            logger.warning("conversation owned by another principal or by none; answered as not found")
        raise _conversation_not_found(conversation_id)
    return record


def _item(record: SessionRecord, now: int, created_at: int | None = None) -> dict[str, Any]:
    return {
        "conversation_id": {"S": record.conversation_id},
        "session_id": {"S": record.session_id},
        "component": {"S": record.component},
        "expires_at": {"N": str(record.expires_at)},
        "owner": {"S": str(record.owner)},
        "created_at": {"N": str(now if created_at is None else created_at)},
        "updated_at": {"N": str(now)},
    }


def _store_new(settings: Settings, owner: str, opened: SessionRecord) -> SessionRecord:
    """Store ``opened`` under a fresh server-issued conversation id (a new id on the 2^-192 collision)."""
    for _attempt in range(3):
        record = replace(opened, conversation_id=new_conversation_id(), owner=owner)
        try:
            with _table_call("storing the new conversation"):
                _dynamodb().put_item(
                    TableName=settings.table_name,
                    Item=_item(record, _now()),
                    ConditionExpression="attribute_not_exists(conversation_id)",
                )
            return record
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
    raise HttpError(409, "ConcurrentUpdate", "could not store a new conversation id; retry POST /open")


def _claim(settings: Settings, conversation_id: str, owner: str, opened: SessionRecord, replaces: str) -> SessionRecord:
    """Replace the conversation's session ``replaces`` by ``opened`` unless another invocation got there first.

    The conditional write makes concurrent reopens safe: the loser gets the winner's row back and must use
    it (and close the session it opened itself). Only a row of ``owner`` is ever replaced; a row closed or
    taken meanwhile makes this a 404 (see _owned_record).
    """
    now = _now()
    record = SessionRecord(conversation_id, opened.session_id, opened.component, opened.expires_at, owner)
    for _attempt in range(3):
        try:
            with _table_call("storing the conversation's new session"):
                _dynamodb().put_item(
                    TableName=settings.table_name,
                    Item=_item(record, now),
                    ConditionExpression="session_id = :old AND #owner = :owner",
                    ExpressionAttributeNames=OWNER_ATTRIBUTE_NAMES,
                    ExpressionAttributeValues={":old": {"S": replaces}, ":owner": {"S": owner}},
                )
            return record
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
        winner = _owned_record(settings, conversation_id, owner)  # 404 if closed or another principal's
        if winner.expires_at > now and winner.session_id != replaces:
            return winner
        replaces = winner.session_id
    raise _concurrent_update(conversation_id)


# --- routes -------------------------------------------------------------------------------------------
def _open_for(settings: Settings, conversation_id: str, owner: str, component: str, replaces: str) -> SessionRecord:
    opened = _open_session(settings, component)
    try:
        record = _claim(settings, conversation_id, owner, opened, replaces)
    except HttpError:
        _close_session_quietly(settings, opened)  # e.g. the conversation was closed meanwhile
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
        f"component, so it cannot switch to {asked!r}. Omit component, or POST /close and POST /open a new "
        "conversation on the other component.",
        field="component",
    )


def open_conversation() -> Response[str]:
    """Open a conversation: a SageMaker session on the component, stored under a server-issued id."""
    settings = _settings()
    owner = _caller(settings)
    request: OpenRequest = _parse(_models().OpenRequest, settings)
    component = _check_component(request.component, settings) or settings.default_component
    logger.append_keys(component=component)
    opened = _open_session(settings, component)
    try:
        record = _store_new(settings, owner, opened)
    except Exception:
        _close_session_quietly(settings, opened)
        raise
    logger.append_keys(conversation_id=record.conversation_id)
    _count("ConversationsOpened")
    logger.info("conversation opened")
    return _json_response(200, _session_payload(record, settings))


def _session_payload(record: SessionRecord, settings: Settings) -> dict[str, Any]:
    # endpoint_name, component and session_id are what InvokeEndpointWithResponseStream needs to stream a
    # turn on this session directly (the front door itself answers buffered).
    return {
        "conversation_id": record.conversation_id,
        "session_id": record.session_id,
        "component": record.component,
        "endpoint_name": settings.endpoint_name,
        "expires_at": record.expires_at,
    }


def invoke() -> Response[str]:
    settings = _settings()
    owner = _caller(settings)
    request: InvokeRequest = _parse(_models().InvokeRequest, settings)
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
    row = _owned_record(settings, conversation_id, owner)  # 404 unless the caller opened it
    reopened = False
    if row.expires_at > _now():
        if asked is not None and asked != row.component:
            logger.append_keys(component=row.component)
            raise _component_conflict(conversation_id, row.component, asked)
        record = row
    else:
        # The stored session passed its expiry: open a new one (the turn may pick any allowed component,
        # since the old session and its context are gone).
        component = asked or row.component
        logger.append_keys(component=component)
        reopened = True
        record = _open_for(settings, conversation_id, owner, component, row.session_id)
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
            raise HttpError(
                502,
                "SessionUnavailable",
                f"component {record.component!r} rejected a session it had just opened; retry the turn",
            ) from None
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


def close() -> Response[str]:
    settings = _settings()
    owner = _caller(settings)
    request: CloseRequest = _parse(_models().CloseRequest, settings)
    conversation_id = request.conversation_id
    logger.append_keys(conversation_id=conversation_id)
    row = _owned_record(settings, conversation_id, owner)  # 404 unless the caller opened it
    logger.append_keys(component=row.component)
    was_open = True
    try:
        reply = _invoke(
            settings, row.component, json.dumps(CLOSE_SESSION_BODY).encode(), row.session_id, "application/json"
        )
        if reply.closed_session not in (None, row.session_id):
            logger.warning("container closed a different session id than requested")
    except SessionGone:
        was_open = False  # already expired/closed on the instance: the goal state holds
    # Throttling and endpoint errors propagate (HttpError) and keep the row, so the caller can retry (a
    # throttled delete too: the retry finds the session gone and deletes the row).
    # Delete only the row that was closed: a row reopened meanwhile (new session id) stays.
    try:
        with _table_call("removing the closed conversation"):
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


@functools.cache
def _app() -> LambdaFunctionUrlResolver:
    """The Function URL resolver with its routes and error handlers, built on the first request (Powertools'
    event handler is not imported on a cold start, nor for an event that is not a Function URL request)."""
    from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver

    resolver = LambdaFunctionUrlResolver()
    resolver.exception_handler(HttpError)(_handle_http_error)
    resolver.not_found(_handle_not_found)
    resolver.exception_handler(ConfigurationError)(_handle_configuration_error)
    resolver.exception_handler(Exception)(_handle_unexpected)
    resolver.post("/open")(open_conversation)
    resolver.post("/invoke")(invoke)
    resolver.post("/close")(close)
    return resolver


_LAZY_NAMES = ("ConversationId", "InvokeRequest", "OpenRequest", "CloseRequest")


def __getattr__(name: str) -> Any:
    """``app`` (the resolver) and the request models as module attributes (PEP 562), built on first access."""
    if name == "app":
        return _app()
    if name in _LAZY_NAMES:
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.LAMBDA_FUNCTION_URL, clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    _start_budget(context)
    problem = _event_problem(event)
    if problem is not None:
        # Not a Function URL event (only a direct Invoke can send one): answered, never a crash.
        _count("ClientErrors")
        logger.info("request rejected", extra={"status": 400, "error_code": "InvalidEvent"})
        return {
            "statusCode": 400,
            "headers": {"Content-Type": "application/json"},
            "isBase64Encoded": False,
            "body": json.dumps({"error": {"code": "InvalidEvent", "message": problem}}),
        }
    return _app().resolve(event, context)


def _event_problem(event: Any) -> str | None:
    """Why ``event`` is not a Lambda Function URL (payload 2.0) event the resolver can route, or None."""
    if not isinstance(event, Mapping):
        return "the event is not a JSON object; invoke this function through its function URL"
    context = event.get("requestContext")
    http = context.get("http") if isinstance(context, Mapping) else None
    if not isinstance(http, Mapping) or not isinstance(http.get("method"), str):
        return "the event has no requestContext.http.method; invoke this function through its function URL"
    if not isinstance(context, Mapping) or not isinstance(
        context.get("stage"), str
    ):  # Powertools reads it to route (a Function URL sends "$default")
        return "the event has no requestContext.stage; invoke this function through its function URL"
    if not isinstance(event.get("rawPath"), str):
        return "the event has no rawPath; invoke this function through its function URL"
    headers = event.get("headers", {})
    if headers is not None and (
        not isinstance(headers, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
    ):
        return "the event's headers are not a map of strings"
    for name in ("cookies", "queryStringParameters", "pathParameters", "stageVariables"):
        value = event.get(name)
        if value is not None and not isinstance(value, (Mapping, list)):
            return f"the event's {name} is malformed"
    return None
