"""The conversation table (DynamoDB): one row per conversation, mapping it to its SageMaker session and owner.

Rows are written only under conditions, so concurrent requests never lose an update: a new conversation under a
fresh server-issued id (``store_new``), a reopened session only over the session it replaces and only for its
owner (``claim``), a delete only of the session just closed (``delete_closed``). A row is read for its owner only
(``owned_record``): no row, a row without an owner and another caller's row all answer the same 404. A throttle
that outlasted botocore's retries is answered 503 SessionStoreThrottled (``_table_call``). The client getter is
the handler's, passed in.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import front_door_answers as answers
import front_door_budget as budget
from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from front_door_answers import HttpError

if TYPE_CHECKING:
    from front_door_settings import Settings

logger = Logger()

CONVERSATION_ID_BYTES = 24  # secrets.token_urlsafe(24): 192 random bits, 32 characters of [A-Za-z0-9_-]
OWNER_ATTRIBUTE_NAMES = {"#owner": "owner"}  # OWNER is a DynamoDB reserved word
DYNAMODB_THROTTLING_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "Throttling"}
)
"""DynamoDB's throttling error codes (botocore's standard retry mode retries these same codes)."""
DYNAMODB_RETRY_AFTER_SECONDS = 1  # DynamoDB throttles for a second or so; botocore has already backed off


@dataclass(frozen=True)
class SessionRecord:
    conversation_id: str
    session_id: str
    component: str
    expires_at: int
    owner: str | None = None  # None only for rows written before owners existed


def new_conversation_id() -> str:
    """A server-issued conversation id: 192 random bits (``secrets``), URL-safe, so it cannot be guessed."""
    return secrets.token_urlsafe(CONVERSATION_ID_BYTES)


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


def _get_item(dynamodb: Callable[[], Any], settings: Settings, conversation_id: str) -> dict[str, Any] | None:
    with _table_call("reading the conversation"):
        return (
            dynamodb()
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


def owned_record(dynamodb: Callable[[], Any], settings: Settings, conversation_id: str, owner: str) -> SessionRecord:
    """The conversation's row when ``owner`` owns it; else 404 ConversationNotFound.

    Rows without an owner (written by versions that let clients choose ids) are never adopted: their ids
    may have been guessed, so they answer 404 like any unknown id and expire through the table's TTL.
    """
    item = _get_item(dynamodb, settings, conversation_id)
    record = _to_record(item) if item is not None else None
    if record is None or record.owner != owner:
        if record is not None:
            answers.count("ForeignConversationRequests")
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


def store_new(dynamodb: Callable[[], Any], settings: Settings, owner: str, opened: SessionRecord) -> SessionRecord:
    """Store ``opened`` under a fresh server-issued conversation id (a new id on the 2^-192 collision)."""
    for _attempt in range(3):
        record = replace(opened, conversation_id=new_conversation_id(), owner=owner)
        try:
            with _table_call("storing the new conversation"):
                dynamodb().put_item(
                    TableName=settings.table_name,
                    Item=_item(record, budget.now()),
                    ConditionExpression="attribute_not_exists(conversation_id)",
                )
            return record
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
    raise HttpError(409, "ConcurrentUpdate", "could not store a new conversation id; retry POST /open")


def claim(
    dynamodb: Callable[[], Any],
    settings: Settings,
    conversation_id: str,
    owner: str,
    opened: SessionRecord,
    replaces: str,
) -> SessionRecord:
    """Replace the conversation's session ``replaces`` by ``opened`` unless another invocation got there first.

    The conditional write makes concurrent reopens safe: the loser gets the winner's row back and must use
    it (and close the session it opened itself). Only a row of ``owner`` is ever replaced; a row closed or
    taken meanwhile makes this a 404 (see owned_record).
    """
    now = budget.now()
    record = SessionRecord(conversation_id, opened.session_id, opened.component, opened.expires_at, owner)
    for _attempt in range(3):
        try:
            with _table_call("storing the conversation's new session"):
                dynamodb().put_item(
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
        winner = owned_record(dynamodb, settings, conversation_id, owner)  # 404 if closed or another principal's
        if winner.expires_at > now and winner.session_id != replaces:
            return winner
        replaces = winner.session_id
    raise _concurrent_update(conversation_id)


def delete_closed(
    dynamodb: Callable[[], Any], settings: Settings, conversation_id: str, session_id: str, owner: str
) -> None:
    """Delete the row of the session just closed: a row reopened meanwhile (new session id) stays."""
    try:
        with _table_call("removing the closed conversation"):
            dynamodb().delete_item(
                TableName=settings.table_name,
                Key={"conversation_id": {"S": conversation_id}},
                ConditionExpression="session_id = :sid AND #owner = :owner",
                ExpressionAttributeNames=OWNER_ATTRIBUTE_NAMES,
                ExpressionAttributeValues={":sid": {"S": session_id}, ":owner": {"S": owner}},
            )
    except ClientError as exc:
        if not _is_condition_failure(exc):
            raise
        logger.info("conversation row changed or vanished before delete; left as is")
