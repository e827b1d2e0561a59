"""The routes' work on a conversation: open it, run a turn in it, log a turn streamed on it, close it.

``/open`` opens a SageMaker session and stores it under a server-issued conversation id; ``/invoke`` runs a turn
stateless (no conversation id) or on the conversation's session, opening a new one when the stored session
expired or was lost (``X-Session-Reopened``), never switching components inside a live session; ``/close`` closes
the session and deletes its row; ``/log`` writes a turn the client streamed on the conversation's session to the
turn log (``log_streamed_turn``). Each route gets the request already checked (settings, owner, body model) and the
handler's client getters; every completed turn goes to the turn log.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import front_door_answers as answers
import front_door_budget as budget
import front_door_endpoint as endpoint
import front_door_table as table
import turn_log
from aws_lambda_powertools import Logger
from front_door_answers import HttpError, json_response
from front_door_endpoint import CLOSE_SESSION_BODY, SessionGone
from front_door_requests import check_component, model_body

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    from aws_lambda_powertools.event_handler import Response
    from front_door_settings import Settings
    from front_door_table import SessionRecord

    # classes that front_door_requests._models() builds on first use: Any for annotations
    CloseRequest: TypeAlias = Any
    InvokeRequest: TypeAlias = Any
    LogRequest: TypeAlias = Any
    OpenRequest: TypeAlias = Any

logger = Logger()


def _open_for(
    sagemaker_runtime: Callable[[], Any],
    dynamodb: Callable[[], Any],
    settings: Settings,
    conversation_id: str,
    owner: str,
    component: str,
    replaces: str,
) -> SessionRecord:
    opened = endpoint.open_session(sagemaker_runtime, settings, component)
    try:
        record = table.claim(dynamodb, settings, conversation_id, owner, opened, replaces)
    except HttpError:
        # e.g. the conversation was closed meanwhile
        endpoint.close_session_quietly(sagemaker_runtime, settings, opened)
        raise
    if record.session_id != opened.session_id:
        endpoint.close_session_quietly(sagemaker_runtime, settings, opened)
        logger.info("lost race for conversation; using the stored session")
        if record.component != component:
            raise _component_conflict(conversation_id, record.component, component)
    return record


def _component_conflict(conversation_id: str, pinned: str, asked: str) -> HttpError:
    answers.count("ComponentConflicts")
    return HttpError(
        409,
        "ComponentConflict",
        f"conversation {conversation_id!r} has a live session on component {pinned!r}; a session lives on one "
        f"component, so it cannot switch to {asked!r}. Omit component, or POST /close and POST /open a new "
        "conversation on the other component.",
        field="component",
    )


def open_conversation(
    sagemaker_runtime: Callable[[], Any],
    dynamodb: Callable[[], Any],
    settings: Settings,
    owner: str,
    request: OpenRequest,
) -> Response[str]:
    """Open a conversation: a SageMaker session on the component, stored under a server-issued id."""
    component = check_component(request.component, settings) or settings.default_component
    logger.append_keys(component=component)
    opened = endpoint.open_session(sagemaker_runtime, settings, component)
    try:
        record = table.store_new(dynamodb, settings, owner, opened)
    except Exception:
        endpoint.close_session_quietly(sagemaker_runtime, settings, opened)
        raise
    logger.append_keys(conversation_id=record.conversation_id)
    answers.count("ConversationsOpened")
    logger.info("conversation opened")
    return json_response(200, _session_payload(record, settings))


def _session_payload(record: SessionRecord, settings: Settings) -> dict[str, Any]:
    # endpoint_name, component and session_id are what InvokeEndpointWithResponseStream needs to stream a
    # turn on this session directly (the front door itself answers buffered); turn_log (only when turns are
    # logged) tells the client to send each streamed reply to POST /log.
    payload: dict[str, Any] = {
        "conversation_id": record.conversation_id,
        "session_id": record.session_id,
        "component": record.component,
        "endpoint_name": settings.endpoint_name,
        "expires_at": record.expires_at,
    }
    if turn_log.enabled():
        payload["turn_log"] = True
    return payload


def invoke(
    sagemaker_runtime: Callable[[], Any],
    dynamodb: Callable[[], Any],
    settings: Settings,
    owner: str,
    request: InvokeRequest,
) -> Response[str]:
    """Run one turn: stateless without a conversation id, else on the conversation's session (reopened when lost)."""
    asked = check_component(request.component, settings)
    body = model_body(request)

    if request.conversation_id is None:
        component = asked or settings.default_component
        logger.append_keys(component=component)
        reply = endpoint.invoke(sagemaker_runtime, settings, component, body, None, request.content_type)
        answers.count("StatelessInvocations")
        logger.info("stateless turn completed")
        turn_log.record_turn(component, request.body, reply.body)  # EAGLE source front_door; never raises
        return json_response(200, {"conversation_id": None, "component": component, "body": reply.body})

    conversation_id = request.conversation_id
    logger.append_keys(conversation_id=conversation_id)
    row = table.owned_record(dynamodb, settings, conversation_id, owner)  # 404 unless the caller opened it
    reopened = False
    if row.expires_at > budget.now():
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
        record = _open_for(sagemaker_runtime, dynamodb, settings, conversation_id, owner, component, row.session_id)
    logger.append_keys(component=record.component)

    try:
        reply = endpoint.invoke(
            sagemaker_runtime, settings, record.component, body, record.session_id, request.content_type
        )
    except SessionGone:
        logger.info("session lost; reopening")
        record = _open_for(
            sagemaker_runtime, dynamodb, settings, conversation_id, owner, record.component, record.session_id
        )
        reopened = True
        try:
            reply = endpoint.invoke(
                sagemaker_runtime, settings, record.component, body, record.session_id, request.content_type
            )
        except SessionGone:
            raise HttpError(
                502,
                "SessionUnavailable",
                f"component {record.component!r} rejected a session it had just opened; retry the turn",
            ) from None
    if reopened:
        answers.count("SessionsReopened")
    answers.count("SessionTurns")
    logger.info("session turn completed", extra={"session_reopened": reopened})
    turn_log.record_turn(record.component, request.body, reply.body)  # EAGLE source front_door; never raises
    headers = {"X-Session-Reopened": "true"} if reopened else None
    return json_response(
        200,
        {
            "conversation_id": conversation_id,
            "session_id": record.session_id,
            "component": record.component,
            "body": reply.body,
        },
        headers,
    )


#: Why ``turn_log.log_turn`` refused a streamed turn -> (status, code, field, how to fix it).
_LOG_REFUSALS = {
    "request_not_chat": (400, "body", "body must be the chat request the stream answered: a non-empty messages list"),
    "request_not_text_chat": (
        400,
        "body",
        "body.messages must be text turns (system, developer, user, assistant, tool) with at least one user turn",
    ),
    "request_malformed_tool_call": (
        400,
        "body",
        "every assistant tool call needs an id and a function name, every tool result a tool_call_id; legacy "
        "function_call and function messages cannot be logged",
    ),
    "reply_malformed_tool_call": (
        400,
        "reply",
        "reply.choices[0].message.tool_calls must each have an id, type function and a function name",
    ),
    "reply_without_answer": (
        400,
        "reply",
        "reply must be a chat completion whose choices[0].message has text content or tool_calls",
    ),
    "not_utf8": (400, "reply", "the turn must be valid Unicode text"),
    "too_large": (413, "reply", f"the record must fit Firehose's {turn_log.MAX_RECORD_BYTES} bytes; it is not logged"),
}


def log_streamed_turn(
    dynamodb: Callable[[], Any], settings: Settings, owner: str, request: LogRequest
) -> Response[str]:
    """Write a turn the caller streamed on its conversation's session to the turn log, checked as a buffered turn's
    reply is, under the component of the conversation's row (never one the caller names)."""
    conversation_id = request.conversation_id
    logger.append_keys(conversation_id=conversation_id)
    row = table.owned_record(dynamodb, settings, conversation_id, owner)  # 404 unless the caller opened it
    logger.append_keys(component=row.component)
    if request.session_id != row.session_id:
        answers.count("TurnsNotLogged")
        raise HttpError(
            409,
            "SessionMismatch",
            f"session_id {request.session_id[:80]!r} is not the session of conversation {conversation_id!r} (its "
            "session was reopened since); log only a turn streamed on the session /open returned, and send a turn "
            "after a reopened session through POST /invoke, which logs it",
            field="session_id",
        )
    reason = turn_log.log_turn(row.component, request.body, request.reply)
    if reason in ("", "turn_log_off"):
        if not reason:
            answers.count("StreamedTurnsLogged")
        answer = {"conversation_id": conversation_id, "component": row.component, "logged": reason == ""}
        if reason:
            answer["reason"] = reason
        return json_response(200, answer)
    if reason.startswith("firehose_error:"):
        raise HttpError(
            503,
            "TurnLogUnavailable",
            f"the turn log's stream refused the record ({reason.split(':', 1)[1]}); the turn is not logged",
            headers={"Retry-After": "1"},
            backpressure=True,
        )
    status, field, fix = _LOG_REFUSALS.get(reason, (400, "reply", "send a chat completion"))
    raise HttpError(status, "TurnNotLoggable", f"the turn cannot be logged ({reason}): {fix}", field=field)


def close(
    sagemaker_runtime: Callable[[], Any],
    dynamodb: Callable[[], Any],
    settings: Settings,
    owner: str,
    request: CloseRequest,
) -> Response[str]:
    """Close the conversation's session and remove its row."""
    conversation_id = request.conversation_id
    logger.append_keys(conversation_id=conversation_id)
    row = table.owned_record(dynamodb, settings, conversation_id, owner)  # 404 unless the caller opened it
    logger.append_keys(component=row.component)
    was_open = True
    try:
        reply = endpoint.invoke(
            sagemaker_runtime,
            settings,
            row.component,
            json.dumps(CLOSE_SESSION_BODY).encode(),
            row.session_id,
            "application/json",
        )
        if reply.closed_session not in (None, row.session_id):
            logger.warning("container closed a different session id than requested")
    except SessionGone:
        was_open = False  # already expired/closed on the instance: the goal state holds
    # Throttling and endpoint errors propagate (HttpError) and keep the row, so the caller can retry (a
    # throttled delete too: the retry finds the session gone and deletes the row).
    # Delete only the row that was closed: a row reopened meanwhile (new session id) stays.
    table.delete_closed(dynamodb, settings, conversation_id, row.session_id, owner)
    answers.count("SessionsClosed")
    logger.info("session closed", extra={"session_was_open": was_open})
    return json_response(
        200,
        {
            "conversation_id": conversation_id,
            "session_id": row.session_id,
            "component": row.component,
            "closed": True,
            "session_was_open": was_open,
        },
    )
