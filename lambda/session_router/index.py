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
              "session_id": str, "component": str, "endpoint_name": str, "expires_at": epoch seconds}``.
              The conversation id is ``secrets.token_urlsafe(24)`` (192 random bits); the session id may be used for
              InvokeEndpointWithResponseStream by a caller allowed to (a stream cannot open a session).
POST /invoke  body ``{"conversation_id"?: str 1-128 of [A-Za-z0-9._:-], "component"?: str,
              "body": {...JSON object passed to the model...}, "content_type"?: "application/json"}``
    200 ``{"conversation_id": str|null, "session_id"?: str, "component": str,
    "body": <model response JSON, or text>}``; header ``X-Session-Reopened: true`` when the session
    was lost (expired, closed by the container, instance replaced) and a new one was opened, so
    context cached in the old session is gone and the chat app should resend the history.
POST /close   body ``{"conversation_id": str}`` -> 200 ``{"conversation_id", "session_id",
              "component", "closed": true, "session_was_open": bool}``.
POST /log     body ``{"conversation_id": str, "session_id": str, "body": {...the chat request streamed...},
              "reply": {...the streamed reply assembled as a chat completion...}}`` -> 200 ``{"conversation_id",
              "component", "logged": bool, "reason"?: "turn_log_off"}``: a turn the caller streamed with
              InvokeEndpointWithResponseStream on the conversation's session, written to the turn log as a buffered
              turn is (``turn_log.log_turn``, under the row's component). Only the conversation's owner may log
              (404 otherwise, as for a turn), only on its current session (409 SessionMismatch), bounded by
              MAX_BODY_BYTES and Firehose's record size (413); a turn no record can hold is 400 TurnNotLoggable
              naming the reason, a Firehose failure 503 TurnLogUnavailable; each is counted as TurnsNotLogged.
              ``/open`` answers ``"turn_log": true`` when turns are logged (TURN_LOG_STREAM set).

Errors: ``{"error": {"code", "message", "field"?, "model_status"?}}`` with status 400 (invalid request:
bad JSON, nesting deeper than 64, unpaired surrogates, unknown component), 403 (no IAM caller in the
request context: CallerUnknown; a caller whose identity the owner mode does not accept: CallerNotAllowed),
404 (unknown route; a conversation id that is unknown, expired and removed, or another caller's: one answer
for all), 409 (component switch inside a live session, concurrent update),
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

Code: this module is the entry point (the resolver and its routes, the function's clients and settings); each
concept has a module of its own: ``front_door_conversations`` (what the routes do), ``front_door_settings`` (the
environment), ``front_door_callers`` (owners), ``front_door_requests`` (event, body and request models),
``front_door_endpoint`` (SageMaker calls and sessions), ``front_door_table`` (the conversation table),
``front_door_budget`` (the time budget), ``front_door_answers`` (answers, errors and counts) and ``turn_log`` (the
EAGLE turn log).
"""

from __future__ import annotations

import functools
import json
import os
from typing import TYPE_CHECKING, Any

import front_door_answers as answers
import front_door_budget as budget
import front_door_conversations as conversations
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths

# A name imported as itself (``X as X``) is re-exported: the handler's users and tests reach it through this module.
from front_door_answers import HttpError as HttpError
from front_door_answers import (
    answer_configuration_error,
    answer_http_error,
    answer_route_not_found,
    answer_unexpected,
)
from front_door_budget import BUDGET_MARGIN_SECONDS as BUDGET_MARGIN_SECONDS
from front_door_budget import DYNAMODB_CONNECT_TIMEOUT as DYNAMODB_CONNECT_TIMEOUT
from front_door_budget import DYNAMODB_MAX_ATTEMPTS as DYNAMODB_MAX_ATTEMPTS
from front_door_budget import DYNAMODB_READ_TIMEOUT as DYNAMODB_READ_TIMEOUT
from front_door_budget import DYNAMODB_WORST as DYNAMODB_WORST
from front_door_budget import MODEL_ATTEMPT_WORST as MODEL_ATTEMPT_WORST
from front_door_budget import MODEL_CONNECT_TIMEOUT as MODEL_CONNECT_TIMEOUT
from front_door_budget import MODEL_MAX_ATTEMPTS as MODEL_MAX_ATTEMPTS
from front_door_budget import MODEL_READ_TIMEOUT as MODEL_READ_TIMEOUT
from front_door_callers import CallerNotAllowed as CallerNotAllowed
from front_door_callers import caller
from front_door_callers import caller_owner as caller_owner
from front_door_endpoint import ModelReply as ModelReply
from front_door_endpoint import SessionGone as SessionGone
from front_door_requests import _models as _models
from front_door_requests import event_problem, parse
from front_door_settings import ALLOWED_COMPONENTS_FILE, read_settings
from front_door_settings import ConfigurationError as ConfigurationError
from front_door_settings import Settings as Settings
from front_door_table import DYNAMODB_THROTTLING_CODES as DYNAMODB_THROTTLING_CODES
from front_door_table import SessionRecord as SessionRecord
from front_door_table import new_conversation_id as new_conversation_id
from llm_cdk_shared import clients

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response
    from aws_lambda_powertools.event_handler.exceptions import NotFoundError

logger = Logger()
metrics = Metrics()
# The resolver (Powertools' event handler) and the request models (pydantic) are built on the first request
# (``_app``, ``_models``), not at import: a cold start pays only for what this module needs to load.

PACKAGED_COMPONENTS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), ALLOWED_COMPONENTS_FILE)


@functools.cache
def _settings() -> Settings:
    """Read and validate the environment once; every problem is reported in one error."""
    return read_settings(PACKAGED_COMPONENTS_PATH)


# The function's clients (lazy, so tests can stub them), handed to the modules that call AWS. botocore makes one
# attempt per SageMaker call: front_door_endpoint retries throttling itself, within the time budget.
_sagemaker_runtime = clients.client_getter(
    "sagemaker-runtime",
    retries={"mode": "standard", "total_max_attempts": 1},  # retried in front_door_endpoint.invoke, within the budget
    connect_timeout=MODEL_CONNECT_TIMEOUT,
    read_timeout=MODEL_READ_TIMEOUT,
)
_dynamodb = clients.client_getter(
    "dynamodb",
    retries={"mode": "standard", "total_max_attempts": DYNAMODB_MAX_ATTEMPTS},
    connect_timeout=DYNAMODB_CONNECT_TIMEOUT,
    read_timeout=DYNAMODB_READ_TIMEOUT,
)


def _accepted(model: str) -> tuple[Settings, str, Any]:
    """The current request checked for a route: the settings, the caller's owner (see front_door_callers.caller),
    then the body as the route's request model ``model`` (see front_door_requests.parse)."""
    settings = _settings()
    raw_event = _app().current_event.raw_event
    owner = caller(raw_event, settings)
    return settings, owner, parse(getattr(_models(), model), raw_event, settings)


def open_conversation() -> Response[str]:
    """POST /open (see front_door_conversations.open_conversation)."""
    settings, owner, request = _accepted("OpenRequest")
    return conversations.open_conversation(_sagemaker_runtime, _dynamodb, settings, owner, request)


def invoke() -> Response[str]:
    """POST /invoke (see front_door_conversations.invoke)."""
    settings, owner, request = _accepted("InvokeRequest")
    return conversations.invoke(_sagemaker_runtime, _dynamodb, settings, owner, request)


def log_turn() -> Response[str]:
    """POST /log (see front_door_conversations.log_streamed_turn)."""
    settings, owner, request = _accepted("LogRequest")
    return conversations.log_streamed_turn(_dynamodb, settings, owner, request)


def close() -> Response[str]:
    """POST /close (see front_door_conversations.close)."""
    settings, owner, request = _accepted("CloseRequest")
    return conversations.close(_sagemaker_runtime, _dynamodb, settings, owner, request)


@functools.cache
def _app() -> LambdaFunctionUrlResolver:
    """The Function URL resolver with its routes and error handlers, built on the first request (Powertools'
    event handler is not imported on a cold start, nor for an event that is not a Function URL request)."""
    from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver

    resolver = LambdaFunctionUrlResolver()
    resolver.exception_handler(HttpError)(answer_http_error)
    resolver.not_found(_handle_not_found)
    resolver.exception_handler(ConfigurationError)(answer_configuration_error)
    resolver.exception_handler(Exception)(answer_unexpected)
    resolver.post("/open")(open_conversation)
    resolver.post("/invoke")(invoke)
    resolver.post("/close")(close)
    resolver.post("/log")(log_turn)
    return resolver


def _handle_not_found(_: NotFoundError) -> Response[str]:
    event = _app().current_event
    return answer_route_not_found(event.http_method, event.path)


_LAZY_NAMES = ("ConversationId", "InvokeRequest", "OpenRequest", "CloseRequest", "LogRequest")


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
    budget.start(context)
    problem = event_problem(event)
    if problem is not None:
        # Not a Function URL event (only a direct Invoke can send one): answered, never a crash.
        answers.count("ClientErrors")
        logger.info("request rejected", extra={"status": 400, "error_code": "InvalidEvent"})
        return {
            "statusCode": 400,
            "headers": {"Content-Type": "application/json"},
            "isBase64Encoded": False,
            "body": json.dumps({"error": {"code": "InvalidEvent", "message": problem}}),
        }
    return _app().resolve(event, context)
