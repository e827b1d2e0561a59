"""The three routes' work on a conversation: open it, run a turn in it, close it.

``/open`` opens a SageMaker session and stores it under a server-issued conversation id; ``/invoke`` runs a turn
stateless (no conversation id) or on the conversation's session, opening a new one when the stored session
expired or was lost (``X-Session-Reopened``), never switching components inside a live session; ``/close`` closes
the session and deletes its row. Each route gets the request already checked (settings, owner, body model) and the
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
    # turn on this session directly (the front door itself answers buffered).
    return {
        "conversation_id": record.conversation_id,
        "session_id": record.session_id,
        "component": record.component,
        "endpoint_name": settings.endpoint_name,
        "expires_at": record.expires_at,
    }


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
