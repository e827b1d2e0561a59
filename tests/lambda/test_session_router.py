"""Tests for lambda/session_router: the session-aware front door (Function URL -> SageMaker stateful sessions).

sagemaker-runtime goes through botocore's Stubber (plus the service-model checks in
support.aws_model on every request actually sent); the conversation table is DynamoDB under moto.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
import sys
import time
from types import SimpleNamespace
from typing import Any
from unittest.mock import ANY

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from support.aws_model import assert_valid_request
from support.properties import examples

ENDPOINT = "llm-prod-endpoint"
TABLE = "llm-conversations"
BASE = "qwen3-32b-base"
ADAPTER = "qwen3-32b-sql-lora"
TTL = 600
NOW = 1_900_000_000  # 2030-03-17T17:46:40Z, frozen through the handler's budget.now()
SID_1 = "0b7e6c8a-4f1d-4a57-9d0e-1c2b3a4d5e6f"
SID_2 = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
SID_3 = "1f2e3d4c-5b6a-4978-8a6b-5c4d3e2f1a0b"
PROMPT = "PROMPT-TEXT-do-not-log-4711: what is the capital of Atlantis?"
COMPLETION = "COMPLETION-TEXT-do-not-log-0815: Poseidonia."
ACCOUNT = "123456789012"
CHAT_APP = f"arn:aws:sts::{ACCOUNT}:assumed-role/chat-app/alice@example.com"  # default caller: a role session
CHAT_APP_OWNER = CHAT_APP  # OWNER_MODE=session (default): the session is the owner
CHAT_APP_ROLE = f"arn:aws:iam::{ACCOUNT}:role/chat-app"  # the owner under OWNER_MODE=role
SAME_ROLE_OTHER_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/chat-app/bob@example.com"
OTHER_APP = f"arn:aws:sts::{ACCOUNT}:assumed-role/other-app/i-2"
OTHER_APP_OWNER = OTHER_APP
LEGACY = object()  # Table.put(owner=LEGACY): a row written before owners existed
ISSUED_ID = re.compile(r"^[A-Za-z0-9_-]{32}$")  # secrets.token_urlsafe(24)


def assert_valid_invoke(params: dict[str, Any]) -> None:
    """assert_valid_request for InvokeEndpoint, with ContentType checked here.

    The model gives ContentType the Java pattern ``\\p{ASCII}*``, which Python's ``re`` cannot compile
    (support.aws_model raises re.error on it), so that one member is checked by hand: ASCII, <= 1024.
    """
    params = dict(params)
    content_type = params.pop("ContentType", None)
    if content_type is not None:
        assert isinstance(content_type, str) and content_type.isascii() and len(content_type) <= 1024
    assert_valid_request("sagemaker-runtime", "InvokeEndpoint", params)


def iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


class JsonBody:
    """Stubber matcher: the request Body bytes must decode to this JSON value (key order irrelevant)."""

    def __init__(self, value: Any):
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (bytes, bytearray)) and json.loads(other) == self.value

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __repr__(self) -> str:
        return f"JsonBody({self.value!r})"


def chat(text: str = PROMPT) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], "max_tokens": 64}


def completion(text: str = COMPLETION) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


class RuntimeStub:
    """Queue expected InvokeEndpoint calls; records what the handler really sent."""

    def __init__(self, client):
        self.client = client
        self.stubber = Stubber(client)
        self.sent: list[dict[str, Any]] = []
        client.meta.events.register("provide-client-params.sagemaker-runtime.InvokeEndpoint", self._record)

    def _record(self, params, **_):
        self.sent.append(dict(params))

    def _expected(self, component: str, body: Any, session_id: str | None) -> dict[str, Any]:
        expected: dict[str, Any] = {
            "EndpointName": ENDPOINT,
            "InferenceComponentName": component,
            "ContentType": "application/json",
            "Body": JsonBody(body),
        }
        if session_id is not None:
            expected["SessionId"] = session_id
        assert_valid_invoke(expected)
        return expected

    def turn(
        self,
        *,
        component: str = BASE,
        body: Any = None,
        session_id: str | None = None,
        reply: Any = None,
        content_type: str = "application/json",
        **headers: str,
    ) -> None:
        raw = reply if isinstance(reply, bytes) else json.dumps(completion() if reply is None else reply).encode()
        response: dict[str, Any] = {"Body": StreamingBody(io.BytesIO(raw), len(raw)), "ContentType": content_type}
        response.update(headers)
        self.stubber.add_response(
            "invoke_endpoint", response, self._expected(component, chat() if body is None else body, session_id)
        )

    def open(self, session_id: str, *, component: str = BASE, expires: int = NOW + 1200) -> None:
        self.turn(
            component=component,
            body={"requestType": "NEW_SESSION"},
            session_id="NEW_SESSION",
            reply={"result": f"Session {session_id} created"},
            NewSessionId=f"{session_id}; Expires={iso(expires)}",
        )

    def close(self, session_id: str, *, component: str = BASE) -> None:
        self.turn(
            component=component,
            body={"requestType": "CLOSE"},
            session_id=session_id,
            reply={"result": f"Session {session_id} closed"},
            ClosedSessionId=session_id,
        )

    def error(
        self,
        *,
        code: str,
        message: str,
        status: int,
        component: str = BASE,
        body: Any = None,
        session_id: str | None = None,
        **modeled: Any,
    ) -> None:
        self.stubber.add_client_error(
            "invoke_endpoint",
            service_error_code=code,
            service_message=message,
            http_status_code=status,
            modeled_fields=modeled or None,
            expected_params=self._expected(component, chat() if body is None else body, session_id),
        )


class Table:
    def __init__(self, client):
        self.client = client

    def put(
        self,
        conversation_id: str,
        session_id: str,
        component: str = BASE,
        expires_at: int = NOW + 300,
        owner: Any = CHAT_APP_OWNER,
    ):
        item = {
            "conversation_id": {"S": conversation_id},
            "session_id": {"S": session_id},
            "component": {"S": component},
            "expires_at": {"N": str(expires_at)},
            "created_at": {"N": str(NOW - 60)},
            "updated_at": {"N": str(NOW - 60)},
        }
        if owner is not LEGACY:
            item["owner"] = {"S": owner}
        self.client.put_item(TableName=TABLE, Item=item)

    def get(self, conversation_id: str) -> dict[str, Any] | None:
        item = self.client.get_item(TableName=TABLE, Key={"conversation_id": {"S": conversation_id}}).get("Item")
        if item is None:
            return None
        return {k: (int(v["N"]) if "N" in v else v["S"]) for k, v in item.items()}

    def items(self) -> list[dict[str, Any]]:
        return self.client.scan(TableName=TABLE)["Items"]


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("ENDPOINT_NAME", ENDPOINT)
    monkeypatch.setenv("SESSIONS_TABLE", TABLE)
    monkeypatch.setenv("SESSION_TTL_SECONDS", str(TTL))
    monkeypatch.setenv("DEFAULT_COMPONENT", BASE)
    monkeypatch.setenv("ALLOWED_COMPONENTS", f"{BASE}, {ADAPTER}")
    monkeypatch.setenv("MAX_BODY_BYTES", "4096")


@pytest.fixture(scope="module")
def sessions_table():
    """One moto DynamoDB and sessions table for the module (starting moto and creating the table cost about
    30 ms of CPU, more than most tests here); each test starts from an empty table (``ddb``)."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "conversation_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "conversation_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.update_time_to_live(
            TableName=TABLE, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"}
        )
        yield client


@pytest.fixture
def ddb(env, sessions_table):
    table = Table(sessions_table)
    for item in table.items():  # what an earlier test left
        sessions_table.delete_item(TableName=TABLE, Key={"conversation_id": item["conversation_id"]})
    assert table.items() == []
    yield table


@pytest.fixture
def router(load_handler, ddb, lambda_context, monkeypatch):
    mod = load_handler("session_router")
    monkeypatch.setattr(mod.budget, "now", lambda: NOW)
    runtime = RuntimeStub(mod._sagemaker_runtime())
    runtime.stubber.activate()

    monkeypatch.setattr(mod.budget, "sleep", lambda seconds: None)  # retries back off without waiting in tests
    dynamodb_calls: list[str] = []
    mod._dynamodb().meta.events.register("before-call.dynamodb", lambda model, **_: dynamodb_calls.append(model.name))

    def call(
        path: str,
        body: Any,
        *,
        method: str = "POST",
        b64: bool = False,
        caller: str | None = CHAT_APP,
        authorizer: Any = ...,
        context: Any = None,
    ) -> dict[str, Any]:
        raw = body if isinstance(body, (str, bytes)) else json.dumps(body)
        if b64:
            raw = base64.b64encode(raw if isinstance(raw, bytes) else raw.encode()).decode()
        elif isinstance(raw, bytes):
            raw = raw.decode()
        event = function_url_event(path, raw, method=method, b64=b64, caller=caller, authorizer=authorizer)
        response = mod.handler(event, context or lambda_context)
        response["json"] = json.loads(response["body"]) if response.get("body") else None
        return response

    def open_conversation(
        session_id: str = SID_1, *, component: str | None = None, caller: str = CHAT_APP, expires: int = NOW + 1200
    ) -> str:
        runtime.open(session_id, component=component or BASE, expires=expires)
        response = call("/open", {} if component is None else {"component": component}, caller=caller)
        assert response["statusCode"] == 200, response
        return response["json"]["conversation_id"]

    yield SimpleNamespace(
        mod=mod, runtime=runtime, table=ddb, call=call, open=open_conversation, dynamodb_calls=dynamodb_calls
    )
    runtime.stubber.assert_no_pending_responses()  # every queued call (e.g. closing a loser's session) happened
    runtime.stubber.deactivate()
    # Every request the handler really sent must satisfy the service model's enums/lengths/patterns.
    for params in runtime.sent:
        assert_valid_invoke(params)


def iam_context(caller: str) -> dict[str, str]:
    """requestContext.authorizer.iam as Lambda fills it for a SigV4-signed Function URL request."""
    account = caller.split(":")[4]
    if ":assumed-role/" in caller:
        user_id = "AROAEXAMPLEROLEID0001:" + caller.rsplit("/", 1)[1]
    else:
        user_id = "AIDAEXAMPLEUSERID0001"
    return {
        "accessKey": "ASIAEXAMPLEKEY000001",
        "accountId": account,
        "callerId": user_id,
        "cognitoIdentity": None,
        "principalOrgId": "o-exampleorg1",
        "userArn": caller,
        "userId": user_id,
    }


def function_url_event(
    path: str,
    body: str | None,
    *,
    method: str = "POST",
    b64: bool = False,
    caller: str | None = CHAT_APP,
    authorizer: Any = ...,
) -> dict[str, Any]:
    """A Function URL (payload 2.0) event signed by ``caller``; ``authorizer`` overrides the whole
    requestContext.authorizer (``None`` drops it)."""
    if authorizer is ...:
        authorizer = {"iam": iam_context(caller)} if caller is not None else None
    event = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json", "host": "abc123.lambda-url.us-east-1.on.aws"},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.lambda-url.us-east-1.on.aws",
            "domainPrefix": "abc123",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.9",
                "userAgent": "chat-app",
            },
            "requestId": "8a0b4b3e-0000-4000-8000-000000000001",
            "routeKey": "$default",
            "stage": "$default",
            "time": "17/Mar/2030:17:46:40 +0000",
            "timeEpoch": NOW * 1000,
        },
        "body": body,
        "isBase64Encoded": b64,
    }
    if authorizer is not None:
        event["requestContext"]["authorizer"] = authorizer
    return event


def assert_error(response: dict[str, Any], status: int, code: str, field: str | None = None) -> dict[str, Any]:
    assert response["statusCode"] == status, response
    error = response["json"]["error"]
    assert error["code"] == code
    assert error["message"]
    if field is not None:
        assert error["field"] == field
    return error


# --- stateless ----------------------------------------------------------------------------------------
def test_stateless_call_passes_through_without_session(router):
    router.runtime.turn(component=BASE, session_id=None)

    response = router.call("/invoke", {"body": chat()})

    assert response["statusCode"] == 200
    assert response["json"] == {"conversation_id": None, "component": BASE, "body": completion()}
    assert "SessionId" not in router.runtime.sent[0]
    assert "X-Session-Reopened" not in (response.get("headers") or {})
    assert router.table.items() == []


def test_stateless_call_to_adapter_component_and_text_reply(router):
    router.runtime.turn(component=ADAPTER, reply=b"plain text answer", content_type="text/plain")

    response = router.call("/invoke", {"body": chat(), "component": ADAPTER})

    assert response["statusCode"] == 200
    assert response["json"]["component"] == ADAPTER
    assert response["json"]["body"] == "plain text answer"
    assert router.runtime.sent[0]["InferenceComponentName"] == ADAPTER


def test_base64_encoded_request_body_is_accepted(router):
    router.runtime.turn()

    response = router.call("/invoke", {"body": chat()}, b64=True)

    assert response["statusCode"] == 200


# --- sessions -----------------------------------------------------------------------------------------
def test_open_issues_an_unguessable_id_and_stores_the_session_with_ttl_from_config(router):
    router.runtime.open(SID_1, expires=NOW + 1200)  # container expiry later than NOW + TTL

    response = router.call("/open", {})

    assert response["statusCode"] == 200
    conversation_id = response["json"]["conversation_id"]
    assert ISSUED_ID.fullmatch(conversation_id)
    assert response["json"] == {
        "conversation_id": conversation_id,
        "session_id": SID_1,
        "component": BASE,
        "endpoint_name": ENDPOINT,
        "expires_at": NOW + TTL,
    }
    row = router.table.get(conversation_id)
    assert row["session_id"] == SID_1 and row["component"] == BASE and row["owner"] == CHAT_APP
    assert row["expires_at"] == NOW + TTL
    assert router.runtime.sent[0]["SessionId"] == "NEW_SESSION"


def test_open_ids_never_repeat_and_use_the_secrets_module(router, monkeypatch):
    ids = {router.open(sid) for sid in (SID_1, SID_2, SID_3)}
    assert len(ids) == 3 and all(ISSUED_ID.fullmatch(i) for i in ids)

    calls = []
    monkeypatch.setattr(router.mod.conversations.table.secrets, "token_urlsafe", lambda n: calls.append(n) or "x" * 32)
    assert router.mod.new_conversation_id() == "x" * 32 and calls == [24]  # 24 bytes = 192 random bits


def test_open_retries_on_an_id_collision(router, monkeypatch):
    router.table.put("taken", SID_3, owner=OTHER_APP)
    issued = iter(["taken", "fresh"])
    monkeypatch.setattr(router.mod.conversations.table, "new_conversation_id", lambda: next(issued))

    assert router.open(SID_1) == "fresh"
    assert router.table.get("taken")["owner"] == OTHER_APP and router.table.get("taken")["session_id"] == SID_3


def test_open_ttl_uses_container_expiry_when_earlier(router):
    conversation_id = router.open(SID_1, expires=NOW + 120)

    assert router.table.get(conversation_id)["expires_at"] == NOW + 120


def test_a_turn_never_opens_a_conversation(router):
    response = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})

    assert_error(response, 404, "ConversationNotFound", "conversation_id")
    assert "POST /open" in response["json"]["error"]["message"]
    assert router.runtime.sent == [] and router.table.items() == []


def test_opened_conversation_continues_on_its_session(router):
    conversation_id = router.open(SID_1)
    router.runtime.turn(session_id=SID_1)

    response = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()})

    assert response["statusCode"] == 200
    assert response["json"] == {
        "conversation_id": conversation_id,
        "session_id": SID_1,
        "component": BASE,
        "body": completion(),
    }
    assert "X-Session-Reopened" not in (response.get("headers") or {})


def test_continued_turn_sends_stored_session_id(router):
    router.table.put("chat-42", SID_1, expires_at=NOW + 300)
    router.runtime.turn(session_id=SID_1)

    response = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})

    assert response["statusCode"] == 200
    assert response["json"]["session_id"] == SID_1
    assert [p["SessionId"] for p in router.runtime.sent] == [SID_1]
    assert router.table.get("chat-42")["expires_at"] == NOW + 300  # session expiry is absolute


def test_adapter_conversation_pins_its_component(router):
    conversation_id = router.open(SID_1, component=ADAPTER)
    router.runtime.turn(component=ADAPTER, session_id=SID_1)

    response = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()})  # no component

    assert response["statusCode"] == 200
    assert response["json"]["component"] == ADAPTER
    assert {p["InferenceComponentName"] for p in router.runtime.sent} == {ADAPTER}
    assert router.table.get(conversation_id)["component"] == ADAPTER


def test_open_with_unknown_component_is_400_and_opens_nothing(router):
    assert_error(router.call("/open", {"component": "gpt-9"}), 400, "UnknownComponent", "component")
    assert_error(
        router.call("/open", {"component": BASE, "conversation_id": "mine"}), 400, "InvalidField", "conversation_id"
    )  # ids are issued, never chosen
    assert router.runtime.sent == [] and router.table.items() == []


def test_component_switch_inside_live_session_is_409(router):
    router.table.put("chat-42", SID_1, component=BASE)
    before = router.table.get("chat-42")

    response = router.call("/invoke", {"conversation_id": "chat-42", "component": ADAPTER, "body": chat()})

    error = assert_error(response, 409, "ComponentConflict", "component")
    assert BASE in error["message"] and ADAPTER in error["message"]
    assert router.runtime.sent == []
    assert router.table.get("chat-42") == before


@pytest.mark.parametrize(
    ("code", "status", "message", "modeled"),
    [
        (
            "ModelError",
            424,
            f'Received client error (400) from primary with message "Bad request: session not found: {SID_1}".',
            {"OriginalStatusCode": 400, "OriginalMessage": f"Bad request: session not found: {SID_1}"},
        ),
        ("ValidationError", 400, f"Session {SID_1} is invalid or has expired.", {}),
    ],
    ids=["container-400-session-not-found", "platform-validation-error"],
)
def test_lost_session_is_reopened_transparently(router, code, status, message, modeled):
    router.table.put("chat-42", SID_1, expires_at=NOW + 300)
    router.runtime.error(code=code, status=status, message=message, session_id=SID_1, **modeled)
    router.runtime.open(SID_2, expires=NOW + 1200)
    router.runtime.turn(session_id=SID_2)

    response = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})

    assert response["statusCode"] == 200
    assert response["headers"]["X-Session-Reopened"] == "true"
    assert response["json"]["session_id"] == SID_2
    assert response["json"]["body"] == completion()
    row = router.table.get("chat-42")
    assert row["session_id"] == SID_2 and row["expires_at"] == NOW + TTL


def test_row_past_its_expiry_reopens_without_trying_old_session(router):
    router.table.put("chat-42", SID_1, component=BASE, expires_at=NOW - 1)
    router.runtime.open(SID_2, component=ADAPTER)
    router.runtime.turn(component=ADAPTER, session_id=SID_2)

    # The old session is gone, so the conversation may pick another component.
    response = router.call("/invoke", {"conversation_id": "chat-42", "component": ADAPTER, "body": chat()})

    assert response["statusCode"] == 200
    assert response["headers"]["X-Session-Reopened"] == "true"
    assert SID_1 not in [p.get("SessionId") for p in router.runtime.sent]
    assert router.table.get("chat-42")["session_id"] == SID_2
    assert router.table.get("chat-42")["component"] == ADAPTER


def test_model_error_unrelated_to_session_is_424_and_keeps_mapping(router):
    router.table.put("chat-42", SID_1)
    router.runtime.error(
        code="ModelError",
        status=424,
        session_id=SID_1,
        message='Received client error (400) from primary with message "context too long".',
        OriginalStatusCode=400,
        OriginalMessage="This model's maximum context length is 8192",
    )

    response = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})

    error = assert_error(response, 424, "ModelRejectedRequest")
    assert error["model_status"] == 400
    assert "maximum context length" in error["message"]
    assert router.table.get("chat-42")["session_id"] == SID_1
    assert len(router.runtime.sent) == 1  # no reopen attempted


def test_model_server_error_is_502_with_container_status(router):
    router.runtime.error(
        code="ModelError",
        status=424,
        message="Received server error (500) from primary",
        OriginalStatusCode=500,
        OriginalMessage="CUDA out of memory",
    )

    response = router.call("/invoke", {"body": chat()})

    assert assert_error(response, 502, "ModelFailed")["model_status"] == 500


def test_throttling_is_retried_then_surfaces_as_429(router):
    router.table.put("chat-42", SID_1)
    for _ in range(3):
        router.runtime.error(code="ThrottlingException", status=400, message="Rate exceeded", session_id=SID_1)

    response = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})

    assert_error(response, 429, "Throttled")
    assert response["headers"]["Retry-After"]
    assert len(router.runtime.sent) == 3  # MODEL_MAX_ATTEMPTS
    assert router.table.get("chat-42")["session_id"] == SID_1
    config = router.mod._sagemaker_runtime().meta.config
    assert config.retries["total_max_attempts"] == 1  # botocore never retries behind the budget's back
    assert config.read_timeout == 65 and config.connect_timeout == 3


def test_throttled_attempt_then_success(router):
    router.runtime.error(code="ModelNotReadyException", status=429, message="Model is loading")
    router.runtime.turn()

    assert router.call("/invoke", {"body": chat()})["statusCode"] == 200
    assert len(router.runtime.sent) == 2


def test_model_not_ready_surfaces_as_429(router):
    for _ in range(3):
        router.runtime.error(code="ModelNotReadyException", status=429, message="Model is loading")

    assert_error(router.call("/invoke", {"body": chat()}), 429, "Throttled")


def test_container_without_session_support_is_502_and_writes_nothing(router):
    router.runtime.turn(body={"requestType": "NEW_SESSION"}, session_id="NEW_SESSION", reply={"generated": "x"})

    response = router.call("/open", {})

    error = assert_error(response, 502, "SessionsNotSupported")
    assert "OPTION_ENABLE_STATEFUL_SESSIONS" in error["message"]
    assert router.table.items() == []


# --- concurrency --------------------------------------------------------------------------------------
def _race(router, monkeypatch, winner_component: str) -> None:
    """Make another invocation store SID_1 for chat-42 right after this one opened its own session."""
    endpoint = router.mod.conversations.endpoint
    original = endpoint.open_session

    def open_then_lose(sagemaker_runtime, settings, component):
        opened = original(sagemaker_runtime, settings, component)
        router.table.put("chat-42", SID_1, component=winner_component, expires_at=NOW + 500)
        return opened

    monkeypatch.setattr(endpoint, "open_session", open_then_lose)


def test_concurrent_reopens_loser_uses_winners_session(router, monkeypatch):
    router.table.put("chat-42", SID_3, expires_at=NOW - 1)
    _race(router, monkeypatch, BASE)
    router.runtime.open(SID_2)
    router.runtime.close(SID_2)  # the loser frees the session it opened
    router.runtime.turn(session_id=SID_1)

    response = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})

    assert response["statusCode"] == 200
    assert response["json"]["session_id"] == SID_1
    assert router.table.get("chat-42")["session_id"] == SID_1
    assert router.table.get("chat-42")["expires_at"] == NOW + 500


def test_concurrent_reopen_on_other_component_is_409(router, monkeypatch):
    router.table.put("chat-42", SID_3, expires_at=NOW - 1)
    _race(router, monkeypatch, ADAPTER)
    router.runtime.open(SID_2)
    router.runtime.close(SID_2)

    response = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})

    assert_error(response, 409, "ComponentConflict")
    assert router.table.get("chat-42")["component"] == ADAPTER


def test_conversation_closed_during_reopen_is_404_and_frees_the_session(router, monkeypatch):
    router.table.put("chat-42", SID_3, expires_at=NOW - 1)
    endpoint = router.mod.conversations.endpoint
    original = endpoint.open_session

    def open_then_closed(sagemaker_runtime, settings, component):
        opened = original(sagemaker_runtime, settings, component)
        router.table.client.delete_item(TableName=TABLE, Key={"conversation_id": {"S": "chat-42"}})
        return opened

    monkeypatch.setattr(endpoint, "open_session", open_then_closed)
    router.runtime.open(SID_2)
    router.runtime.close(SID_2)

    assert_error(router.call("/invoke", {"conversation_id": "chat-42", "body": chat()}), 404, "ConversationNotFound")
    assert router.table.items() == []


# --- time budget --------------------------------------------------------------------------------------
class Clock:
    """A monotonic clock the test moves; each SageMaker call the stub answers costs ``per_call`` seconds."""

    def __init__(self, per_call: float = 0.0):
        self.now = 1000.0
        self.per_call = per_call

    def __call__(self) -> float:
        return self.now


def remaining(seconds: float):
    from conftest import FakeLambdaContext

    class Context(FakeLambdaContext):
        def get_remaining_time_in_millis(self) -> int:
            return int(seconds * 1000)

    return Context()


def slow_calls(router, clock: Clock) -> None:
    router.runtime.client.meta.events.register(
        "before-parameter-build.sagemaker-runtime.InvokeEndpoint",
        lambda **_: setattr(clock, "now", clock.now + clock.per_call),
    )


def test_no_model_call_starts_when_its_worst_case_cannot_fit(router):
    response = router.call("/invoke", {"body": chat()}, context=remaining(60))

    error = assert_error(response, 504, "TimeBudgetExceeded")
    assert "68 s" in error["message"] and "retry" in error["message"]
    assert router.runtime.sent == []


def test_lost_session_is_not_reopened_past_the_budget_and_the_row_is_kept(router, monkeypatch):
    clock = Clock(per_call=230.0)  # the first turn hangs for 230 s before the container says "session gone"
    monkeypatch.setattr(router.mod.budget, "_monotonic", clock)
    slow_calls(router, clock)
    router.table.put("chat-42", SID_1)
    router.runtime.error(
        code="ValidationError", status=400, message=f"Session {SID_1} is invalid or has expired.", session_id=SID_1
    )
    before = router.table.items()

    response = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()}, context=remaining(300))

    error = assert_error(response, 504, "TimeBudgetExceeded")
    assert "opening a session" in error["message"]
    assert len(router.runtime.sent) == 1  # 67 s left < 68 s + DynamoDB: no reopen, no second turn
    assert router.table.items() == before


def test_throttling_retries_stop_at_the_budget(router, monkeypatch):
    clock = Clock(per_call=110.0)
    monkeypatch.setattr(router.mod.budget, "_monotonic", clock)
    slow_calls(router, clock)
    router.runtime.error(code="ThrottlingException", status=400, message="Rate exceeded")
    router.runtime.error(code="ThrottlingException", status=400, message="Rate exceeded")

    response = router.call("/invoke", {"body": chat()}, context=remaining(300))

    assert_error(response, 429, "Throttled")  # 297 - 2 x 110 s leaves no room for a third attempt
    assert len(router.runtime.sent) == 2


def test_every_turn_fits_the_function_timeout(router):
    """Worst case of the longest path (turn, session gone, reopen, turn) against the construct's timeout."""
    mod = router.mod
    from sagemaker_llm_cdk.sessions.front_door import TIMEOUT

    worst_call = mod.MODEL_ATTEMPT_WORST + mod.DYNAMODB_WORST
    assert mod.MODEL_READ_TIMEOUT > 60  # InvokeEndpoint lets a model answer for 60 s
    assert TIMEOUT.to_seconds() - mod.BUDGET_MARGIN_SECONDS >= 3 * worst_call  # three calls always fit
    assert mod.DYNAMODB_WORST >= mod.DYNAMODB_MAX_ATTEMPTS * (mod.DYNAMODB_CONNECT_TIMEOUT + mod.DYNAMODB_READ_TIMEOUT)
    config = mod._dynamodb().meta.config
    assert config.retries["total_max_attempts"] == mod.DYNAMODB_MAX_ATTEMPTS
    assert (config.connect_timeout, config.read_timeout) == (mod.DYNAMODB_CONNECT_TIMEOUT, mod.DYNAMODB_READ_TIMEOUT)


# --- close --------------------------------------------------------------------------------------------
def test_close_sends_close_request_and_deletes_mapping(router):
    router.table.put("chat-42", SID_1, component=ADAPTER)
    router.runtime.close(SID_1, component=ADAPTER)

    response = router.call("/close", {"conversation_id": "chat-42"})

    assert response["statusCode"] == 200
    assert response["json"] == {
        "conversation_id": "chat-42",
        "session_id": SID_1,
        "component": ADAPTER,
        "closed": True,
        "session_was_open": True,
    }
    assert router.runtime.sent[0]["SessionId"] == SID_1
    assert json.loads(router.runtime.sent[0]["Body"]) == {"requestType": "CLOSE"}
    assert router.table.get("chat-42") is None


def test_close_of_session_the_container_already_dropped_still_deletes_mapping(router):
    router.table.put("chat-42", SID_1)
    router.runtime.error(
        code="ModelError",
        status=424,
        body={"requestType": "CLOSE"},
        session_id=SID_1,
        message=f"Bad request: session not found: {SID_1}",
        OriginalStatusCode=400,
    )

    response = router.call("/close", {"conversation_id": "chat-42"})

    assert response["statusCode"] == 200
    assert response["json"]["session_was_open"] is False
    assert router.table.get("chat-42") is None


def test_close_throttled_keeps_mapping_for_retry(router):
    router.table.put("chat-42", SID_1)
    for _ in range(3):
        router.runtime.error(
            code="ThrottlingException",
            status=400,
            message="Rate exceeded",
            body={"requestType": "CLOSE"},
            session_id=SID_1,
        )

    assert_error(router.call("/close", {"conversation_id": "chat-42"}), 429, "Throttled")
    assert router.table.get("chat-42")["session_id"] == SID_1


def test_close_unknown_conversation_is_404(router):
    response = router.call("/close", {"conversation_id": "never-opened"})

    assert_error(response, 404, "ConversationNotFound", "conversation_id")
    assert router.runtime.sent == []


# --- throttling of the conversation table -------------------------------------------------------------
DYNAMODB_THROTTLES = ["ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"]


def throttle_table(router, monkeypatch, operation: str, code: str, times: int = 1) -> list[str]:
    """The next ``times`` calls of DynamoDB ``operation`` fail with ``code``, as botocore raises a throttle once
    its own retries are spent (answered before the call is sent, like Stubber); every other call reaches moto.
    Returns the names the handler counts (``answers.count``)."""
    from botocore.awsrequest import AWSResponse

    left = [times]

    def answer(model, **_):
        if model.name != operation or left[0] == 0:
            return None
        left[0] -= 1
        return (
            AWSResponse("https://dynamodb.us-east-1.amazonaws.com/", 400, {}, None),
            {
                "Error": {"Code": code, "Message": "Rate of requests exceeds the allowed throughput."},
                "ResponseMetadata": {"HTTPStatusCode": 400},
            },
        )

    router.mod._dynamodb().meta.events.register(f"before-call.dynamodb.{operation}", answer)
    counted: list[str] = []
    original = router.mod.answers.count
    monkeypatch.setattr(router.mod.answers, "count", lambda name: (counted.append(name), original(name))[1])
    return counted


def assert_table_throttled(response: dict[str, Any], code: str, counted: list[str]) -> None:
    error = assert_error(response, 503, "SessionStoreThrottled")
    assert set(error) == {"code", "message"}
    assert code in error["message"] and "send the same request again" in error["message"]
    assert response["headers"]["Retry-After"] == "1"
    assert response["headers"]["Content-Type"] == "application/json"
    assert "Throttled" in counted and "ServerErrors" not in counted  # the errors alarm does not count it


@pytest.mark.parametrize("code", DYNAMODB_THROTTLES)
def test_a_throttled_read_of_the_conversation_is_503_with_retry_after(router, monkeypatch, code):
    router.table.put("chat-42", SID_1)
    counted = throttle_table(router, monkeypatch, "GetItem", code)

    response = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})

    assert_table_throttled(response, code, counted)
    assert router.runtime.sent == []  # the turn never reached the model
    router.runtime.turn(session_id=SID_1)
    assert router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})["statusCode"] == 200  # the retry


@pytest.mark.parametrize("code", DYNAMODB_THROTTLES)
def test_a_throttled_open_is_503_and_frees_the_session_it_opened(router, monkeypatch, code):
    counted = throttle_table(router, monkeypatch, "PutItem", code)
    router.runtime.open(SID_1)
    router.runtime.close(SID_1)

    assert_table_throttled(router.call("/open", {}), code, counted)
    assert router.table.items() == []


def test_a_throttled_reopen_is_503_frees_the_new_session_and_keeps_the_row(router, monkeypatch):
    router.table.put("chat-42", SID_3, expires_at=NOW - 1)
    counted = throttle_table(router, monkeypatch, "PutItem", "ProvisionedThroughputExceededException")
    router.runtime.open(SID_2)
    router.runtime.close(SID_2)

    response = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})

    assert_table_throttled(response, "ProvisionedThroughputExceededException", counted)
    assert router.table.get("chat-42")["session_id"] == SID_3
    assert [json.loads(sent["Body"]) for sent in router.runtime.sent] == [
        {"requestType": "NEW_SESSION"},
        {"requestType": "CLOSE"},
    ]  # no turn ran


def test_a_throttled_delete_on_close_is_503_and_the_retry_removes_the_row(router, monkeypatch):
    router.table.put("chat-42", SID_1)
    counted = throttle_table(router, monkeypatch, "DeleteItem", "RequestLimitExceeded")
    router.runtime.close(SID_1)

    assert_table_throttled(router.call("/close", {"conversation_id": "chat-42"}), "RequestLimitExceeded", counted)
    assert router.table.get("chat-42")["session_id"] == SID_1
    router.runtime.error(
        code="ModelError",
        status=424,
        body={"requestType": "CLOSE"},
        session_id=SID_1,
        message=f"Bad request: session not found: {SID_1}",
        OriginalStatusCode=400,
    )
    retried = router.call("/close", {"conversation_id": "chat-42"})
    assert retried["statusCode"] == 200 and retried["json"]["session_was_open"] is False
    assert router.table.get("chat-42") is None


def test_other_table_errors_stay_internal_errors(router, monkeypatch):
    """Only throttling is back-pressure: a table the role may not use is a 500 the errors alarm counts."""
    counted = throttle_table(router, monkeypatch, "GetItem", "AccessDeniedException")

    response = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})

    assert_error(response, 500, "InternalError")
    assert "ServerErrors" in counted and "Throttled" not in counted


def test_the_table_throttle_codes_are_the_ones_botocore_retries(router):
    """What reaches the handler is what botocore's standard retry mode gave up on: the same codes."""
    from botocore.retries.standard import ThrottledRetryableChecker

    assert set(DYNAMODB_THROTTLES) <= router.mod.DYNAMODB_THROTTLING_CODES
    assert set(ThrottledRetryableChecker._THROTTLED_ERROR_CODES) >= router.mod.DYNAMODB_THROTTLING_CODES
    assert router.mod._dynamodb().meta.config.retries["mode"] == "standard"


# --- owner binding ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def caller_owner():
    from conftest import load_handler_module

    return load_handler_module("session_router").caller_owner


ROLE_EXAMPLES = [
    (CHAT_APP, CHAT_APP_ROLE),
    (f"arn:aws:sts::{ACCOUNT}:assumed-role/chat-app/botocore-session-1742231200", CHAT_APP_ROLE),
    ("arn:aws-us-gov:sts::111122223333:assumed-role/ecs-task/3f1c2b", "arn:aws-us-gov:iam::111122223333:role/ecs-task"),
    ("arn:aws-cn:sts::111122223333:assumed-role/r@x=y,z.w/s@e.s", "arn:aws-cn:iam::111122223333:role/r@x=y,z.w"),
]
AS_IS = [
    f"arn:aws:iam::{ACCOUNT}:user/alice",
    f"arn:aws:iam::{ACCOUNT}:user/team/alice",
    f"arn:aws:iam::{ACCOUNT}:root",
]
FEDERATED_USER = f"arn:aws:sts::{ACCOUNT}:federated-user/alice@example.com"


@pytest.mark.parametrize(
    ("user_arn", "role"),
    ROLE_EXAMPLES,
    ids=["role-session", "other-session-same-role", "govcloud", "role-name-specials"],
)
def test_caller_owner_of_role_sessions(caller_owner, user_arn, role):
    assert caller_owner(iam_context(user_arn)) == user_arn  # default: the session, session name included
    assert caller_owner(iam_context(user_arn), "session") == user_arn
    assert caller_owner(iam_context(user_arn), "role") == role


@pytest.mark.parametrize("user_arn", AS_IS, ids=["user", "user-with-path", "root"])
@pytest.mark.parametrize("mode", ["session", "role"])
def test_caller_owner_of_users_and_root_is_their_arn(caller_owner, user_arn, mode):
    assert caller_owner(iam_context(user_arn), mode) == user_arn


@pytest.mark.parametrize("mode", ["session", "role", "cognito_identity"])
def test_federated_users_own_nothing_in_any_mode(caller_owner, mode):
    # GetFederationToken(Name=...) lets the calling IAM user name the federated user: anyone allowed to call it
    # could be "alice@example.com". No trust policy can fix the name, so no mode accepts it.
    refused = sys.modules[caller_owner.__module__].CallerNotAllowed
    with pytest.raises(refused, match="federated users|only Cognito"):
        caller_owner(iam_context(FEDERATED_USER), mode, (POOL,))


COGNITO_ROLE = f"arn:aws:sts::{ACCOUNT}:assumed-role/Cognito_ChatAuth_Role/CognitoIdentityCredentials"
POOL = "us-east-1:0f6a8b1c-1111-4222-8333-944455556666"


def cognito_context(identity_id: str, pool: str | None = POOL) -> dict[str, Any]:
    context = iam_context(COGNITO_ROLE)
    context["cognitoIdentity"] = {
        "amr": ["authenticated", "cognito-idp.us-east-1.amazonaws.com/us-east-1_X"],
        "identityId": identity_id,
        "identityPoolId": pool,
    }
    return context


@pytest.mark.parametrize("mode", ["session", "role"])
def test_caller_owner_of_a_cognito_identity_is_the_identity_id(caller_owner, mode):
    alice, bob = "us-east-1:aaaaaaaa-0000-4000-8000-000000000001", "us-east-1:bbbbbbbb-0000-4000-8000-000000000002"

    # One pool role, one session name for everyone: only the identity id tells people apart, in every mode.
    assert caller_owner(cognito_context(alice), mode) == f"cognito-identity/{POOL}/{alice}"
    assert caller_owner(cognito_context(bob), mode) != caller_owner(cognito_context(alice), mode)
    assert caller_owner(cognito_context(alice, pool=None), mode) == f"cognito-identity/-/{alice}"


@pytest.mark.parametrize("cognito", ["us-east-1:x", {}, {"identityId": ""}, {"identityId": 7}, ["x"]])
def test_caller_owner_of_a_malformed_cognito_identity_is_none(caller_owner, cognito):
    context = iam_context(COGNITO_ROLE)
    context["cognitoIdentity"] = cognito

    assert caller_owner(context) is None  # never falls back to the shared pool role


@pytest.mark.parametrize(
    "iam",
    [
        None,
        {},
        "arn:aws:iam::1:user/x",
        {"userArn": ""},
        {"userArn": "  "},
        {"userArn": None},
        {"userArn": 42},
        {"accountId": ACCOUNT, "userId": "AIDA"},
    ],
)
def test_caller_owner_without_user_arn_is_none(caller_owner, iam):
    assert caller_owner(iam) is None


# --- owner per mode: who may act as whom -------------------------------------------------------------
OTHER_POOL = "eu-west-1:0f6a8b1c-1111-4222-8333-944455557777"
ALICE_ID = "us-east-1:aaaaaaaa-0000-4000-8000-000000000001"
REFUSED = "refused"
OWNER_TABLE = [
    # (what signed the request, mode, the owner or REFUSED)
    ("role-session", "session", CHAT_APP),
    ("role-session", "role", CHAT_APP_ROLE),
    ("role-session", "cognito_identity", REFUSED),  # e.g. the pool's role reached by role chaining
    ("iam-user", "session", f"arn:aws:iam::{ACCOUNT}:user/alice"),
    ("iam-user", "role", f"arn:aws:iam::{ACCOUNT}:user/alice"),
    ("iam-user", "cognito_identity", REFUSED),
    ("federated-user", "session", REFUSED),
    ("federated-user", "role", REFUSED),
    ("federated-user", "cognito_identity", REFUSED),
    ("cognito-listed-pool", "session", f"cognito-identity/{POOL}/{ALICE_ID}"),
    ("cognito-listed-pool", "role", f"cognito-identity/{POOL}/{ALICE_ID}"),
    ("cognito-listed-pool", "cognito_identity", f"cognito-identity/{POOL}/{ALICE_ID}"),
    ("cognito-other-pool", "cognito_identity", REFUSED),
    ("cognito-without-pool", "cognito_identity", REFUSED),
]


def signed_by(kind: str) -> dict[str, Any]:
    """requestContext.authorizer.iam for one kind of caller."""
    if kind == "role-session":
        return iam_context(CHAT_APP)
    if kind == "iam-user":
        return iam_context(f"arn:aws:iam::{ACCOUNT}:user/alice")
    if kind == "federated-user":
        return iam_context(FEDERATED_USER)
    pool = {"cognito-listed-pool": POOL, "cognito-other-pool": OTHER_POOL, "cognito-without-pool": None}[kind]
    return cognito_context(ALICE_ID, pool=pool)


@pytest.mark.parametrize(("kind", "mode", "expected"), OWNER_TABLE, ids=[f"{k}-{m}" for k, m, _ in OWNER_TABLE])
def test_owner_per_mode(caller_owner, kind, mode, expected):
    refused = sys.modules[caller_owner.__module__].CallerNotAllowed
    if expected == REFUSED:
        with pytest.raises(refused):
            caller_owner(signed_by(kind), mode, (POOL,))
    else:
        assert caller_owner(signed_by(kind), mode, (POOL,)) == expected


def cognito_mode(router, monkeypatch, pools: str = POOL) -> None:
    router.mod._settings.cache_clear()
    monkeypatch.setenv("OWNER_MODE", "cognito_identity")
    monkeypatch.setenv("IDENTITY_POOLS", pools)


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("role-session", "only Cognito identity-pool credentials"),
        ("iam-user", "only Cognito identity-pool credentials"),
        ("federated-user", "only Cognito identity-pool credentials"),
        ("cognito-other-pool", f"identity pool {OTHER_POOL}"),
        ("cognito-without-pool", "identity pool -"),
    ],
)
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/open", {}),
        ("/invoke", {"body": chat()}),
        ("/invoke", {"conversation_id": "chat-42", "body": chat()}),
        ("/close", {"conversation_id": "chat-42"}),
    ],
    ids=["open", "stateless", "turn", "close"],
)
def test_cognito_mode_refuses_every_other_caller_before_touching_anything(router, monkeypatch, kind, why, path, body):
    cognito_mode(router, monkeypatch)
    router.table.put("chat-42", SID_1, owner=f"cognito-identity/{POOL}/{ALICE_ID}")
    before = router.table.items()
    router.dynamodb_calls.clear()

    response = router.call(path, body, authorizer={"iam": signed_by(kind)})

    error = assert_error(response, 403, "CallerNotAllowed")
    assert why in error["message"]
    assert router.dynamodb_calls == [] and router.runtime.sent == []
    assert router.table.items() == before


def test_cognito_mode_serves_the_listed_pools_identities_as_their_own_owners(router, monkeypatch):
    cognito_mode(router, monkeypatch, pools=f"{OTHER_POOL},{POOL}")
    alice = {"iam": cognito_context(ALICE_ID)}
    bob = {"iam": cognito_context("us-east-1:bbbbbbbb-0000-4000-8000-000000000002")}
    router.runtime.open(SID_1)
    router.runtime.turn(session_id=SID_1)

    conversation_id = router.call("/open", {}, authorizer=alice)["json"]["conversation_id"]
    mine = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()}, authorizer=alice)
    theirs = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()}, authorizer=bob)

    assert mine["statusCode"] == 200
    assert_error(theirs, 404, "ConversationNotFound")
    assert router.table.get(conversation_id)["owner"] == f"cognito-identity/{POOL}/{ALICE_ID}"


@pytest.mark.parametrize("mode", ["session", "role"])
def test_federated_users_are_refused_by_the_router(router, monkeypatch, mode):
    router.mod._settings.cache_clear()
    monkeypatch.setenv("OWNER_MODE", mode)

    response = router.call("/open", {}, caller=FEDERATED_USER)

    assert "GetFederationToken" in assert_error(response, 403, "CallerNotAllowed")["message"]
    assert router.dynamodb_calls == [] and router.runtime.sent == []


@pytest.mark.parametrize(
    ("pools", "expected"),
    [
        ("", "IDENTITY_POOLS: got (not set); allowed: at least one identity pool id with OWNER_MODE=cognito_identity"),
        ("us-east-1:not-a-guid", "IDENTITY_POOLS: got 'us-east-1:not-a-guid'; allowed: Cognito identity pool ids"),
    ],
)
def test_cognito_mode_needs_valid_identity_pools(router, monkeypatch, pools, expected):
    cognito_mode(router, monkeypatch, pools=pools)

    error = assert_error(router.call("/invoke", {"body": chat()}), 500, "Misconfigured")

    assert expected in error["message"]


IAM_NAME = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+=,.@_-", min_size=1, max_size=64
)


@settings(max_examples=examples(200), deadline=None)
@given(
    partition=st.sampled_from(["aws", "aws-cn", "aws-us-gov", "aws-iso", "aws-iso-b"]),
    account=st.from_regex(r"[0-9]{12}", fullmatch=True),
    role=IAM_NAME,
    first=IAM_NAME,
    second=IAM_NAME,
)
def test_role_sessions_are_one_owner_only_in_role_mode(caller_owner, partition, account, role, first, second):
    def owner(session: str, mode: str) -> str | None:
        return caller_owner(
            {"accountId": account, "userArn": f"arn:{partition}:sts::{account}:assumed-role/{role}/{session}"}, mode
        )

    assert owner(first, "role") == owner(second, "role") == f"arn:{partition}:iam::{account}:role/{role}"
    assert (owner(first, "session") == owner(second, "session")) == (first == second)


@settings(max_examples=examples(200), deadline=None)
@given(
    account=st.from_regex(r"[0-9]{12}", fullmatch=True),
    other=st.from_regex(r"[0-9]{12}", fullmatch=True),
    role=IAM_NAME,
    other_role=IAM_NAME,
    session=IAM_NAME,
    mode=st.sampled_from(["session", "role"]),
)
def test_caller_owner_separates_accounts_and_roles_and_keeps_users(
    caller_owner, account, other, role, other_role, session, mode
):
    def owner(acct: str, name: str) -> str | None:
        return caller_owner({"userArn": f"arn:aws:sts::{acct}:assumed-role/{name}/{session}"}, mode)

    assert (owner(account, role) == owner(other, role)) == (account == other)
    assert (owner(account, role) == owner(account, other_role)) == (role == other_role)
    user = f"arn:aws:iam::{account}:user/{role}"
    assert caller_owner({"userArn": user}, mode) == user
    assert caller_owner({"userArn": user}, mode) != owner(account, role)  # a user never collides with a role


def test_two_people_signed_in_through_one_role_are_two_owners(router):
    conversation_id = router.open(SID_1)  # alice, through the chat-app permission set
    before = router.table.items()

    turn = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()}, caller=SAME_ROLE_OTHER_SESSION)
    close = router.call("/close", {"conversation_id": conversation_id}, caller=SAME_ROLE_OTHER_SESSION)

    assert_error(turn, 404, "ConversationNotFound")
    assert_error(close, 404, "ConversationNotFound")
    assert router.table.items() == before and len(router.runtime.sent) == 1  # only alice's open


def test_role_mode_lets_every_session_of_the_role_continue_and_close(router, monkeypatch):
    router.mod._settings.cache_clear()
    monkeypatch.setenv("OWNER_MODE", "role")
    conversation_id = router.open(SID_1)
    router.runtime.turn(session_id=SID_1)
    router.runtime.close(SID_1)

    # The next requests come from other Lambda/ECS tasks of the same role: other session names.
    second = router.call(
        "/invoke",
        {"conversation_id": conversation_id, "body": chat()},
        caller=f"arn:aws:sts::{ACCOUNT}:assumed-role/chat-app/task-7d1e",
    )
    closed = router.call(
        "/close", {"conversation_id": conversation_id}, caller=f"arn:aws:sts::{ACCOUNT}:assumed-role/chat-app/i-9"
    )
    other_role = router.call("/close", {"conversation_id": conversation_id}, caller=OTHER_APP)

    assert second["statusCode"] == closed["statusCode"] == 200
    assert second["json"]["session_id"] == SID_1 and closed["json"]["session_id"] == SID_1
    assert_error(other_role, 404, "ConversationNotFound")
    assert router.table.get(conversation_id) is None


def test_cognito_users_of_one_pool_role_are_two_owners(router):
    alice = {"iam": cognito_context("us-east-1:aaaaaaaa-0000-4000-8000-000000000001")}
    bob = {"iam": cognito_context("us-east-1:bbbbbbbb-0000-4000-8000-000000000002")}
    router.runtime.open(SID_1)
    router.runtime.turn(session_id=SID_1)

    opened = router.call("/open", {}, authorizer=alice)
    conversation_id = opened["json"]["conversation_id"]
    mine = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()}, authorizer=alice)
    theirs = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()}, authorizer=bob)

    assert mine["statusCode"] == 200
    assert_error(theirs, 404, "ConversationNotFound")
    assert router.table.get(conversation_id)["owner"].startswith("cognito-identity/")


@pytest.mark.parametrize(
    "intruder",
    [
        SAME_ROLE_OTHER_SESSION,
        OTHER_APP,
        "arn:aws:sts::210987654321:assumed-role/chat-app/alice@example.com",
        f"arn:aws:iam::{ACCOUNT}:user/mallory",
        f"arn:aws:iam::{ACCOUNT}:root",
    ],
    ids=["same-role-other-person", "other-role", "same-role-name-other-account", "iam-user", "account-root"],
)
@pytest.mark.parametrize("expires_at", [NOW + 300, NOW - 1], ids=["live", "expired"])
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/invoke", {"conversation_id": "chat-42", "body": chat()}),
        ("/invoke", {"conversation_id": "chat-42", "component": ADAPTER, "body": chat()}),
        ("/close", {"conversation_id": "chat-42"}),
    ],
    ids=["invoke", "invoke-other-component", "close"],
)
def test_foreign_and_unknown_ids_get_the_same_answer_and_touch_nothing(router, intruder, expires_at, path, body):
    router.table.put("chat-42", SID_1, expires_at=expires_at)
    router.table.put("chat-43", SID_2, expires_at=expires_at)  # the unknown id below has the same length
    before = router.table.items()

    router.dynamodb_calls.clear()
    foreign = router.call(path, body, caller=intruder)
    foreign_calls = list(router.dynamodb_calls)
    router.dynamodb_calls.clear()
    router.table.client.delete_item(TableName=TABLE, Key={"conversation_id": {"S": "chat-43"}})
    unknown = router.call(path, {**body, "conversation_id": "chat-43"}, caller=intruder)

    assert_error(foreign, 404, "ConversationNotFound", "conversation_id")
    assert SID_1 not in foreign["body"] and CHAT_APP_OWNER not in foreign["body"]
    assert unknown["statusCode"] == foreign["statusCode"]
    assert unknown["body"] == foreign["body"].replace("chat-42", "chat-43")
    assert unknown.get("headers") == foreign.get("headers")
    assert foreign_calls == router.dynamodb_calls == ["GetItem"]  # no timing tell in AWS calls either
    assert router.runtime.sent == []  # the Stubber has nothing queued: any SageMaker call would fail too
    assert [i for i in router.table.items() if i["conversation_id"]["S"] == "chat-42"] == [
        i for i in before if i["conversation_id"]["S"] == "chat-42"
    ]


def test_owner_still_continues_after_a_refused_intruder(router):
    conversation_id = router.open(SID_1)
    router.runtime.turn(session_id=SID_1)

    refused = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()}, caller=OTHER_APP)
    response = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()})

    assert refused["statusCode"] == 404
    assert response["statusCode"] == 200 and response["json"]["session_id"] == SID_1


def test_iam_user_owns_its_conversation(router):
    alice = f"arn:aws:iam::{ACCOUNT}:user/alice"
    conversation_id = router.open(SID_1, caller=alice)

    bob = router.call(
        "/invoke", {"conversation_id": conversation_id, "body": chat()}, caller=f"arn:aws:iam::{ACCOUNT}:user/bob"
    )

    assert router.table.get(conversation_id)["owner"] == alice
    assert_error(bob, 404, "ConversationNotFound")


@pytest.mark.parametrize("path", ["/invoke", "/close"])
def test_rows_without_owner_are_never_adopted(router, path):
    router.table.put("chat-42", SID_1, owner=LEGACY)  # written when clients chose (guessable) ids
    before = router.table.items()
    body = {"conversation_id": "chat-42", "body": chat()} if path == "/invoke" else {"conversation_id": "chat-42"}

    assert_error(router.call(path, body), 404, "ConversationNotFound")
    assert router.table.items() == before and router.runtime.sent == []


def test_owner_mode_must_be_known(router, monkeypatch):
    router.mod._settings.cache_clear()
    monkeypatch.setenv("OWNER_MODE", "person")

    error = assert_error(router.call("/invoke", {"body": chat()}), 500, "Misconfigured")

    assert "OWNER_MODE: got 'person'; allowed: one of session, role, cognito_identity" in error["message"]


@pytest.mark.parametrize(
    "authorizer",
    [
        None,
        {},
        {"iam": None},
        {"iam": {"accountId": ACCOUNT, "userId": "AIDA"}},
        {"iam": {"userArn": ""}},
        {"jwt": {"claims": {"sub": "x"}}},
        "iam",
    ],
    ids=["no-authorizer", "empty-authorizer", "null-iam", "iam-without-arn", "empty-arn", "jwt-only", "not-object"],
)
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/invoke", {"conversation_id": "chat-42", "body": chat()}),
        ("/invoke", {"body": chat()}),
        ("/close", {"conversation_id": "chat-42"}),
        ("/open", {}),
    ],
    ids=["session-turn", "stateless", "close", "open"],
)
def test_request_without_iam_caller_is_403_and_touches_nothing(router, authorizer, path, body):
    router.table.put("chat-42", SID_1)
    before = router.table.items()

    response = router.call(path, body, authorizer=authorizer)

    error = assert_error(response, 403, "CallerUnknown")
    assert "AWS_IAM" in error["message"]
    assert router.runtime.sent == []
    assert router.table.items() == before


# --- validation ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "body", "status", "code", "field"),
    [
        ("/invoke", "{not json", 400, "InvalidJson", None),
        ("/invoke", "", 400, "InvalidJson", None),
        ("/invoke", "[1, 2]", 400, "InvalidJson", None),
        ("/invoke", '{"body": {"x": NaN}}', 400, "InvalidJson", None),
        ("/invoke", {"conversation_id": "chat-42"}, 400, "InvalidField", "body"),
        ("/invoke", {"conversation_id": "chat-42", "body": "hello"}, 400, "InvalidField", "body"),
        ("/invoke", {"conversation_id": "chat 42!", "body": chat()}, 400, "InvalidField", "conversation_id"),
        ("/invoke", {"conversation_id": "", "body": chat()}, 400, "InvalidField", "conversation_id"),
        ("/invoke", {"conversation_id": "x" * 129, "body": chat()}, 400, "InvalidField", "conversation_id"),
        ("/invoke", {"conversation_id": 42, "body": chat()}, 400, "InvalidField", "conversation_id"),
        ("/invoke", {"body": chat(), "content_type": "text/plain"}, 400, "InvalidField", "content_type"),
        ("/invoke", {"body": chat(), "sesion": "typo"}, 400, "InvalidField", "sesion"),
        (
            "/invoke",
            {"conversation_id": "chat-42", "component": "gpt-9", "body": chat()},
            400,
            "UnknownComponent",
            "component",
        ),
        (
            "/invoke",
            {"conversation_id": "chat-42", "body": {"requestType": "CLOSE"}},
            400,
            "ReservedField",
            "body.requestType",
        ),
        ("/invoke", {"conversation_id": "chat-42", "body": {"prompt": "x" * 5000}}, 413, "PayloadTooLarge", None),
        ("/close", "{", 400, "InvalidJson", None),
        ("/close", {}, 400, "InvalidField", "conversation_id"),
        ("/close", {"conversation_id": "a/b"}, 400, "InvalidField", "conversation_id"),
    ],
    ids=[
        "bad-json",
        "empty",
        "not-object",
        "nan",
        "missing-body",
        "body-not-object",
        "bad-conversation-id",
        "empty-conversation-id",
        "long-conversation-id",
        "numeric-conversation-id",
        "bad-content-type",
        "unknown-field",
        "unknown-component",
        "reserved-key",
        "oversized",
        "close-bad-json",
        "close-missing-id",
        "close-bad-id",
    ],
)
def test_bad_input_is_4xx_and_touches_nothing(router, path, body, status, code, field):
    router.table.put("chat-42", SID_1)
    before = router.table.items()

    response = router.call(path, body)

    assert_error(response, status, code, field)
    assert router.runtime.sent == []
    assert router.table.items() == before


def test_packaged_component_list_is_served_and_long_lists_are_shortened_in_messages(router, monkeypatch, tmp_path):
    names = [f"qwen3-32b-a{i:04d}" for i in range(1000)]
    listing = tmp_path / "allowed_components.json"
    listing.write_text(json.dumps({"components": names}))
    monkeypatch.setattr(router.mod, "PACKAGED_COMPONENTS_PATH", str(listing))
    monkeypatch.delenv("ALLOWED_COMPONENTS")
    router.mod._settings.cache_clear()
    router.runtime.turn(component="qwen3-32b-a0999")

    assert router.call("/invoke", {"component": "qwen3-32b-a0999", "body": chat()})["statusCode"] == 200
    error = assert_error(router.call("/invoke", {"component": "gpt-9", "body": chat()}), 400, "UnknownComponent")
    assert "qwen3-32b-a0018" in error["message"] and "qwen3-32b-a0500" not in error["message"]
    assert "and 981 more" in error["message"]  # base + 1000 names, 20 shown


@pytest.mark.parametrize("content", ["{", '{"components": "a,b"}', '{"names": []}', '{"components": [1]}'])
def test_unreadable_component_list_is_a_deployment_error(router, monkeypatch, tmp_path, content):
    listing = tmp_path / "allowed_components.json"
    listing.write_text(content)
    monkeypatch.setattr(router.mod, "PACKAGED_COMPONENTS_PATH", str(listing))
    router.mod._settings.cache_clear()

    error = assert_error(router.call("/invoke", {"body": chat()}), 500, "Misconfigured")
    assert "allowed_components.json is unreadable" in error["message"]


def test_unknown_component_message_names_allowed_components(router):
    error = assert_error(router.call("/invoke", {"component": "gpt-9", "body": chat()}), 400, "UnknownComponent")

    assert BASE in error["message"] and ADAPTER in error["message"] and "gpt-9" in error["message"]


def test_oversized_message_states_size_and_limit(router):
    error = assert_error(router.call("/invoke", {"body": {"prompt": "x" * 5000}}), 413, "PayloadTooLarge")

    assert "4096" in error["message"]


def test_unknown_route_is_json_404(router):
    assert_error(router.call("/sessions", {}, method="POST"), 404, "RouteNotFound")


def test_misconfiguration_is_reported_with_every_problem(router, monkeypatch):
    router.mod._settings.cache_clear()
    monkeypatch.setenv("ENDPOINT_NAME", "-bad-")
    monkeypatch.setenv("SESSION_TTL_SECONDS", "soon")

    error = assert_error(router.call("/invoke", {"body": chat()}), 500, "Misconfigured")

    assert "ENDPOINT_NAME" in error["message"] and "SESSION_TTL_SECONDS" in error["message"]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conversation_id=st.text(max_size=200))
def test_any_invalid_conversation_id_is_rejected(router, conversation_id):
    import re

    assume(re.fullmatch(r"[A-Za-z0-9._:-]{1,128}", conversation_id) is None)

    response = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()})

    assert_error(response, 400, "InvalidField", "conversation_id")
    assert router.runtime.sent == []
    assert router.table.items() == []


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_arbitrary_request_bytes_never_reach_sagemaker_or_the_table(router, raw):
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    assume(not (isinstance(parsed, dict) and isinstance(parsed.get("body"), dict)))

    response = router.call("/invoke", raw, b64=True)

    assert 400 <= response["statusCode"] < 500
    assert set(response["json"]["error"]) >= {"code", "message"}
    assert router.runtime.sent == []
    assert router.table.items() == []


@pytest.mark.parametrize(
    "raw",
    [
        '{"body": ' + "[" * 1900 + "]" * 1900 + "}",  # json.loads: RecursionError
        '{"body": {"x": ' + "[" * 500 + "]" * 500 + "}}",  # parses, but deeper than MAX_JSON_DEPTH
        '{"body": {"messages": [{"role": "user", "content": "\\ud800"}]}}',  # unpaired surrogate in a value
        '{"body": {"\\udfff": 1}}',  # ... in a key
        '{"conversation_id": "c", "component": "\\ud800", "body": {}}',
    ],
    ids=["recursion", "too-deep", "surrogate-value", "surrogate-key", "surrogate-component"],
)
@pytest.mark.parametrize("path", ["/invoke", "/open", "/close"])
def test_hostile_json_is_400_not_500(router, raw, path):
    router.table.put("chat-42", SID_1)
    before = router.table.items()

    response = router.call(path, raw)

    error = assert_error(response, 400, "InvalidJson")
    assert "deep" in error["message"] or "surrogate" in error["message"]
    assert router.runtime.sent == []
    assert router.table.items() == before


@pytest.mark.parametrize(
    ("body", "b64"),
    [
        (123, False),
        ({"body": {}}, False),
        ("e30=", "yes"),
        ("e30=", 2),
        ("\udc80", False),
        ("not base64 at all!", True),
        ("ëñ", True),
    ],
    ids=["number-body", "object-body", "string-flag", "int-flag", "surrogate-text", "bad-base64", "non-ascii-b64"],
)
def test_malformed_event_fields_are_400(router, body, b64, lambda_context):
    event = function_url_event("/invoke", None)
    event["body"] = body
    event["isBase64Encoded"] = b64

    response = router.mod.handler(event, lambda_context)

    assert response["statusCode"] == 400, response
    assert json.loads(response["body"])["error"]["code"] == "InvalidBody"
    assert router.runtime.sent == [] and router.table.items() == []


def _without(event: dict[str, Any], *path: str) -> dict[str, Any]:
    event = json.loads(json.dumps(event))
    target = event
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return event


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: [],
        lambda e: {},
        lambda e: _without(e, "requestContext"),
        lambda e: _without(e, "requestContext", "http"),
        lambda e: {**e, "requestContext": "x"},
        lambda e: {**e, "rawPath": None},
        lambda e: {**e, "headers": ["a"]},
        lambda e: {**e, "headers": {"x": 1}},
        lambda e: {**e, "cookies": "a=b"},
        lambda e: {**e, "queryStringParameters": 7},
    ],
    ids=[
        "list",
        "empty",
        "no-request-context",
        "no-http",
        "context-not-object",
        "no-raw-path",
        "headers-list",
        "header-not-string",
        "cookies-string",
        "query-number",
    ],
)
def test_events_that_are_not_function_url_requests_are_400(router, lambda_context, mutate):
    event = mutate(function_url_event("/invoke", json.dumps({"body": chat()})))

    response = router.mod.handler(event, lambda_context)

    assert response["statusCode"] == 400
    assert json.loads(response["body"])["error"]["code"] == "InvalidEvent"
    assert router.runtime.sent == [] and router.table.items() == []


_JSON_LEAF = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_HOSTILE_TEXT = st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=40)


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    path=st.sampled_from(["/invoke", "/open", "/close", "/", "/invoke/", "/%00", "/x" * 50]),
    method=st.sampled_from(["POST", "GET", "PUT", "DELETE", "OPTIONS"]),
    payload=st.recursive(
        _JSON_LEAF,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_HOSTILE_TEXT, inner, max_size=4),
        max_leaves=30,
    ),
    wrap=st.booleans(),
    depth=st.integers(min_value=0, max_value=3000),
    surrogate=st.booleans(),
    b64=st.sampled_from([True, False, None, "true", 0]),
    headers=st.dictionaries(_HOSTILE_TEXT, _HOSTILE_TEXT, max_size=4),
    content_type=st.sampled_from(
        [
            "application/json",
            "text/plain",
            "application/octet-stream",
            "multipart/form-data; boundary=x",
            "",
            "\x00",
            "application/json; charset=utf-16",
        ]
    ),
)
def test_hostile_requests_never_500_and_write_nothing(
    router, lambda_context, path, method, payload, wrap, depth, surrogate, b64, headers, content_type
):
    value: Any = {"conversation_id": "chat-42", "body": payload} if wrap else payload
    if method == "POST" and depth == 0 and not surrogate and isinstance(value, dict):
        # valid requests that would reach SageMaker (a stateless turn, opening a conversation) are not hostile
        assume(not (path == "/invoke" and "conversation_id" not in value and isinstance(value.get("body"), dict)))
        assume(not (path == "/open" and set(value) <= {"component"}))
    text = json.dumps(value, ensure_ascii=not surrogate)
    if surrogate:
        text = text[:-1] + (', "s": "\\ud83d"}' if text.endswith("}") else "")
    text = "[" * depth + text + "]" * depth
    raw: Any = text
    if b64 is True:
        raw = base64.b64encode(text.encode("utf-8", "surrogatepass")).decode()
    event = function_url_event(path, raw, method=method, b64=bool(b64))
    event["isBase64Encoded"] = b64
    event["headers"] = {**headers, "content-type": content_type}
    before = router.table.items()

    response = router.mod.handler(event, lambda_context)

    assert 400 <= response["statusCode"] < 500, response
    answer = json.loads(response["body"])
    assert set(answer["error"]) >= {"code", "message"}
    assert router.runtime.sent == []
    assert router.table.items() == before


# --- logging ------------------------------------------------------------------------------------------
def test_logs_carry_ids_but_never_prompt_or_completion(router, capsys):
    stream = io.StringIO()
    handler = router.mod.logger.registered_handler
    previous = handler.setStream(stream)
    router.table.put("chat-42", SID_1)
    try:
        router.runtime.turn(session_id=SID_1)
        router.runtime.error(
            code="ModelError",
            status=424,
            session_id=SID_1,
            message=f"Received client error (400): bad prompt {PROMPT}",
            OriginalStatusCode=400,
            OriginalMessage=f"cannot tokenize: {PROMPT}",
        )
        router.runtime.turn(component=ADAPTER)
        ok = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})
        failed = router.call("/invoke", {"conversation_id": "chat-42", "body": chat()})
        stateless = router.call("/invoke", {"component": ADAPTER, "body": chat()})
        router.call("/invoke", '{"body": {"content": "' + PROMPT + '"')  # bad JSON that contains the prompt
    finally:
        handler.setStream(previous)
    captured = stream.getvalue() + capsys.readouterr().out

    assert ok["statusCode"] == 200 and failed["statusCode"] == 424 and stateless["statusCode"] == 200
    assert COMPLETION in ok["body"]  # the caller gets the completion...
    records = [json.loads(line) for line in stream.getvalue().splitlines() if line.startswith("{")]
    assert any(r.get("conversation_id") == "chat-42" and r.get("component") == BASE for r in records)
    assert any(r.get("component") == ADAPTER and "conversation_id" not in r for r in records)
    assert all(r.get("owner") == CHAT_APP_OWNER for r in records if r.get("conversation_id") == "chat-42")
    assert PROMPT not in captured and "Atlantis" not in captured  # ...but no log line has prompt or completion
    assert COMPLETION not in captured and "Poseidonia" not in captured


def _paths(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((*prefix, key))
            found.extend(_paths(item, (*prefix, key)))
    return found


def _changed(event: dict[str, Any], path: tuple[str, ...], replacement: Any) -> dict[str, Any]:
    """``event`` with the field at ``path`` replaced (``...``: removed)."""
    event = json.loads(json.dumps(event))
    parent = event
    for key in path[:-1]:
        parent = parent[key]
    if replacement is ...:
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    return event


def test_an_event_missing_or_mistyping_any_field_is_answered_never_raised(router, lambda_context):
    """Only a direct Invoke can send a malformed Function URL event: every field of a valid event, dropped or
    given a wrong type, gets a 4xx answer (a request that would be refused anyway: nothing reaches AWS)."""
    valid = function_url_event("/invoke", json.dumps({"conversation_id": "no spaces allowed", "body": chat()}))
    assert router.mod.handler(valid, lambda_context)["statusCode"] == 400
    answered, failures = 0, []
    for path in _paths(valid):
        for replacement in (..., None, 7, [], {}, "x"):
            try:
                response = router.mod.handler(_changed(valid, path, replacement), lambda_context)
                assert isinstance(response, dict) and 400 <= response["statusCode"] < 500, response
                assert set(json.loads(response["body"])["error"]) >= {"code", "message"}
            except Exception as error:  # noqa: BLE001 - every failing field is listed at once
                failures.append(f"{'.'.join(path)} = {replacement!r}: {type(error).__name__}: {error}")
            answered += 1
    assert not failures, "\n".join(failures)
    assert answered > 100
    assert router.runtime.sent == [] and router.table.items() == []


# --- who can act as whom: session names chosen by the caller, probed through STS (moto) ---------------
# moto's STS reads no trust policy; support.trust_probe evaluates the role's trust (as moto's IAM holds it)
# before it lets AssumeRole through, and the router gets the ARN STS answered, as Lambda would pass it.
@pytest.fixture
def probe(sessions_table):
    from support.trust_probe import TrustProbe

    return TrustProbe(boto3.client("iam", region_name="us-east-1"), boto3.client("sts", region_name="us-east-1"))


def people_role(
    probe, name: str, pin: str | None, *, extra: tuple[dict[str, Any], ...] = (), set_source_identity: bool = True
) -> str:
    """A role every principal of the account may assume (what iam.AccountRootPrincipal() trusts), pinned or not,
    as grant_invoke_pinned writes it (with sts:SetSourceIdentity beside the Allow under the source_identity pin,
    unless ``set_source_identity`` is false)."""
    from sagemaker_llm_cdk.sessions.trust import pin_statements, with_set_source_identity

    document = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "sts:AssumeRole"},
            *(pin_statements(pin, account=ACCOUNT) if pin else []),
            *extra,
        ],
    }
    if pin == "source_identity" and set_source_identity:
        document = with_set_source_identity(document)
    probe.iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(document))
    return f"arn:aws:iam::{ACCOUNT}:role/{name}"


def denied(call: Any) -> bool:
    from botocore.exceptions import ClientError

    try:
        call()
    except ClientError as error:
        return error.response["Error"]["Code"] == "AccessDenied"
    return False


def test_unpinned_trust_lets_anyone_who_may_assume_the_role_continue_anothers_conversation(router, probe):
    from support.trust_probe import Caller

    role = people_role(probe, "chat-people-unpinned", None)
    alice = probe.assume_role(Caller.iam_user(ACCOUNT, "alice"), role, "alice")
    conversation_id = router.open(SID_1, caller=alice)
    router.runtime.turn(session_id=SID_1)

    bob_as_alice = probe.assume_role(Caller.iam_user(ACCOUNT, "bob"), role, "alice")  # RoleSessionName is bob's pick
    turn = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()}, caller=bob_as_alice)

    # The hole grant_invoke_pinned closes: same role, chosen session name, same owner.
    assert bob_as_alice == alice and turn["statusCode"] == 200


def test_user_name_pin_refuses_the_chosen_name_and_keeps_each_user_to_their_own(router, probe):
    from support.trust_probe import Caller

    role = people_role(probe, "chat-people-user-name", "user_name")
    alice_user, bob_user = Caller.iam_user(ACCOUNT, "alice"), Caller.iam_user(ACCOUNT, "bob")
    alice = probe.assume_role(alice_user, role, "alice")
    conversation_id = router.open(SID_1, caller=alice)

    assert denied(lambda: probe.assume_role(bob_user, role, "alice"))
    assert denied(lambda: probe.assume_role(Caller.role_session(ACCOUNT, "admin", "x"), role, "alice"))  # chaining
    assert denied(lambda: probe.assume_role(Caller.iam_user("210987654321", "alice"), role, "alice"))  # other account
    bob = probe.assume_role(bob_user, role, "bob")
    turn = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()}, caller=bob)

    assert bob == f"arn:aws:sts::{ACCOUNT}:assumed-role/chat-people-user-name/bob"
    assert_error(turn, 404, "ConversationNotFound")
    assert len(router.runtime.sent) == 1  # only alice's open reached SageMaker


def test_source_identity_pin_names_each_session_after_the_identity_its_provider_set(router, probe):
    from support.trust_probe import Caller

    role = people_role(probe, "chat-people-source-identity", "source_identity")
    signed_in = Caller.role_session(ACCOUNT, "sso-people", "s-1", source_identity="alice@example.com")  # via SAML
    mallory = Caller.role_session(ACCOUNT, "sso-people", "s-2", source_identity="mallory@example.com")
    alice = probe.assume_role(signed_in, role, "alice@example.com")
    conversation_id = router.open(SID_1, caller=alice)

    assert denied(lambda: probe.assume_role(mallory, role, "alice@example.com"))
    # An IAM user sets a source identity of its choosing: refused, the session must carry one already.
    assert denied(
        lambda: probe.assume_role(
            Caller.iam_user(ACCOUNT, "bob"), role, "alice@example.com", source_identity="alice@example.com"
        )
    )
    assert denied(lambda: probe.assume_role(Caller.role_session(ACCOUNT, "admin", "x"), role, "alice@example.com"))
    # A session of another account the trust lets in chains in with a source identity it may have set itself:
    # the pin's account condition refuses it.
    partner = {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::210987654321:root"}, "Action": "sts:AssumeRole"}
    shared = people_role(probe, "chat-people-shared", "source_identity", extra=(partner,))
    stranger = Caller.role_session("210987654321", "sso-people", "s-3", source_identity="alice@example.com")
    assert denied(lambda: probe.assume_role(stranger, shared, "alice@example.com"))
    assert probe.assume_role(signed_in, shared, "alice@example.com").endswith("/alice@example.com")
    theirs = probe.assume_role(mallory, role, "mallory@example.com")
    turn = router.call("/invoke", {"conversation_id": conversation_id, "body": chat()}, caller=theirs)

    assert_error(turn, 404, "ConversationNotFound")


def test_without_set_source_identity_in_the_trust_the_source_identity_pin_refuses_everyone(probe):
    from support.trust_probe import Caller

    bare = people_role(probe, "chat-people-no-set-source-identity", "source_identity", set_source_identity=False)
    written = people_role(probe, "chat-people-set-source-identity", "source_identity")
    signed_in = Caller.role_session(ACCOUNT, "sso-people", "s-1", source_identity="alice@example.com")

    assert denied(lambda: probe.assume_role(signed_in, bare, "alice@example.com"))
    assert probe.assume_role(signed_in, written, "alice@example.com").endswith("/alice@example.com")


def test_a_pin_without_its_null_deny_fails_open_for_callers_the_variable_does_not_describe(probe):
    from support.trust_probe import Caller

    half = {
        "Effect": "Deny",
        "Principal": "*",
        "Action": "sts:AssumeRole",
        "Condition": {"StringNotEquals": {"sts:RoleSessionName": "${aws:username}"}},
    }
    role = people_role(probe, "chat-people-half-pinned", None, extra=(half,))

    # A role session has no aws:username: the variable is unresolved, the Deny does not apply, any name passes.
    chained = probe.assume_role(Caller.role_session(ACCOUNT, "admin", "x"), role, "alice")
    assert chained.endswith("/chat-people-half-pinned/alice")
    assert denied(lambda: probe.assume_role(Caller.iam_user(ACCOUNT, "bob"), role, "alice"))


# --- the turn log of an agent (EAGLE source front_door) ------------------------------------------------
TURNS_STREAM = "SageMakerLlm-ChatTurns-AbC123"
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("get_weather", "get_time")
]
AGENT_SYSTEM = {"role": "system", "content": "You are a travel agent."}
AGENT_USER = {"role": "user", "content": "Weather and time in Paris?"}
WEATHER_CALL = {
    "id": "chatcmpl-tool-1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
TIME_CALL = {
    "id": "chatcmpl-tool-2",
    "type": "function",
    "function": {"name": "get_time", "arguments": '{"tz": "CET"}'},
}


def vllm_reply(content: str | None, calls: list[dict[str, Any]] | None = None, reasoning: str | None = None) -> dict:
    """A chat completion as vLLM returns it (tool-call parser on: ``tool_calls`` with JSON-text arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": calls or []}
    if reasoning is not None:
        message["reasoning"] = reasoning
    finish = "tool_calls" if calls else "stop"
    return {
        "id": "chatcmpl-9",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


def test_an_agents_tool_loop_through_the_front_door_becomes_one_tool_calling_training_record(router, monkeypatch):
    """user -> tool call -> tool result -> tool call -> tool result -> answer, three buffered turns of one
    conversation (and one stateless turn): the turn log keeps every tool call and result in order, and the
    dataset builder writes each conversation once, exactly."""
    monkeypatch.setenv("TURN_LOG_STREAM", TURNS_STREAM)
    turn_log = sys.modules["turn_log"]  # the module the handler logs through
    firehose = Stubber(turn_log._firehose())
    sent: list[dict[str, Any]] = []
    turn_log._firehose().meta.events.register(
        "provide-client-params.firehose.PutRecord", lambda params, **_: sent.append(dict(params))
    )
    for _ in range(4):
        firehose.add_response(
            "put_record", {"RecordId": "r"}, {"DeliveryStreamName": TURNS_STREAM, "Record": {"Data": ANY}}
        )
    first = {"role": "assistant", "content": "Let me check.", "tool_calls": [WEATHER_CALL]}  # text and a call
    second = {"role": "assistant", "content": None, "tool_calls": [TIME_CALL]}
    weather = {"role": "tool", "tool_call_id": "chatcmpl-tool-1", "content": '{"temp_c": 18}'}
    clock = {"role": "tool", "tool_call_id": "chatcmpl-tool-2", "content": "14:05"}
    history = [AGENT_SYSTEM, AGENT_USER]
    turns = [
        (history, vllm_reply("Let me check.", [WEATHER_CALL], reasoning="Weather first.")),
        ([*history, first, weather], vllm_reply(None, [TIME_CALL])),
        ([*history, first, weather, second, clock], vllm_reply("18 C and 14:05 in Paris.")),
    ]
    conversation_id = router.open(SID_1)
    with firehose:
        for messages, reply in turns:
            body = {"model": "qwen3", "messages": messages, "tools": TOOLS, "max_tokens": 256}
            router.runtime.turn(session_id=SID_1, body=body, reply=reply)
            response = router.call("/invoke", {"conversation_id": conversation_id, "body": body})
            assert response["statusCode"] == 200 and response["json"]["body"] == reply
        router.runtime.turn(session_id=None, body=chat("Hi"), reply=completion("Hello."))
        assert router.call("/invoke", {"body": chat("Hi")})["statusCode"] == 200
    firehose.assert_no_pending_responses()
    for params in sent:
        assert_valid_request("firehose", "PutRecord", params)
    records = [json.loads(params["Record"]["Data"]) for params in sent]
    assert [r["dropped"] for r in records[:3]] == [
        ["tool_definitions", "reasoning_content"],
        ["tool_definitions"],
        ["tool_definitions"],
    ]
    assert records[0]["messages"][-1] == first  # the reply's text and its tool call, not the text alone
    assert records[1]["messages"][-1] == second

    from conftest import load_handler_module

    core = load_handler_module("eagle_dataset", "eagle_dataset_core")
    data = gzip.compress(b"".join(params["Record"]["Data"] for params in sent))  # one Firehose object
    written_first = {"role": "assistant", "content": "Let me check.", "tool_calls": [WEATHER_CALL]}
    expected = [
        (
            BASE,
            {
                "messages": [
                    AGENT_SYSTEM,
                    AGENT_USER,
                    written_first,
                    weather,
                    second,
                    clock,
                    {"role": "assistant", "content": "18 C and 14:05 in Paris."},
                ]
            },
        ),
        (BASE, {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}),
    ]
    for fast in (False, True):
        converter = core.BatchConverter(source="front_door", fast=fast)
        lines = core.iter_bounded_lines(core.iter_object_data([data]), 1 << 20)
        out = list(converter.convert_lines(lines))
        assert [(component, json.loads(line)) for component, line in out] == expected
        assert all(core.is_chat_record(json.loads(line)) for _, line in out)
        summary = converter.summary()
        assert (summary["records_in"], summary["converted"], summary["duplicates"]) == (4, 2, 0)
        assert summary["skipped"] == {"conversation_prefix": 2}  # the first two turns: prefixes of the third
        assert (summary["tool_calling"], summary["dropped"]) == (1, {"tool_definitions": 1})
