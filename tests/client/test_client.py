"""Tests for constructs/sagemaker_llm_cdk/client.py against a local fake front door on 127.0.0.1.

The fake server re-computes every request's SigV4 signature (service ``lambda``) with botocore and
answers 403 like a Function URL with auth type AWS_IAM would when it does not match; it routes
POST /invoke and POST /close like the session router Lambda.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib.util
import itertools
import json
import re
import socket
import sys
import threading
from dataclasses import dataclass, field
from datetime import UTC
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

pytestmark = pytest.mark.synth

REGION = "us-east-1"
BASE = "qwen3-32b-base"
ADAPTER = "qwen3-32b-sql-lora"
ENDPOINT = "llm-prod-endpoint"
KEYS = {"AKIDCLIENTTEST": "client-test-secret", "testing": "testing"}  # "testing": conftest's env credentials
CONVERSATION_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def _load_client_module():
    # The package's __init__ is lazy: importing the client loads neither CDK nor jsii (checked below).
    return importlib.import_module("sagemaker_llm_cdk.client")


client_mod = _load_client_module()
SessionClient = client_mod.SessionClient
FrontDoorError = client_mod.FrontDoorError


def sigv4_problem(method: str, path: str, headers: dict[str, str], body: bytes) -> str | None:
    """None if the request carries a valid SigV4 signature for service lambda in REGION, else why not."""
    auth = headers.get("authorization")
    if not auth:
        return "missing Authorization header"
    match = re.fullmatch(
        r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)"
        r"/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=(?P<sig>[0-9a-f]{64})",
        auth,
    )
    if not match:
        return f"malformed Authorization header {auth!r}"
    if match["service"] != "lambda" or match["region"] != REGION:
        return f"signed for {match['service']}/{match['region']}, expected lambda/{REGION}"
    if match["key"] not in KEYS:
        return "unknown access key"
    signed = match["signed"].split(";")
    if not {"host", "x-amz-date"} <= set(signed):
        return f"host and x-amz-date must be signed, got {signed}"
    amz_date = headers.get("x-amz-date", "")
    if amz_date[:8] != match["date"]:
        return "x-amz-date does not match the credential scope"
    if headers.get("x-amz-content-sha256", hashlib.sha256(body).hexdigest()) != hashlib.sha256(body).hexdigest():
        return "x-amz-content-sha256 does not match the body"
    request = AWSRequest(
        method=method,
        url=f"http://{headers['host']}{path}",
        data=body,
        headers={name: headers[name] for name in signed if name != "host"},
    )
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(
        Credentials(match["key"], KEYS[match["key"]], headers.get("x-amz-security-token")), "lambda", REGION
    )
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    if not hmac.compare_digest(expected, match["sig"]):
        return "signature mismatch"
    return None


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any


@dataclass
class FrontDoorState:
    conversations: dict[str, dict[str, str]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    reopen_next: bool = False
    session_ids: Any = field(default_factory=lambda: (f"sess-{n}" for n in itertools.count(1)))
    conversation_ids: Any = field(default_factory=lambda: itertools.count(1))
    busy: list[tuple[int, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    """Answers (status, JSON, headers) given to the next requests, one each, before they are routed."""


def make_handler(state: FrontDoorState):
    class FakeFrontDoor(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def _answer(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, code: str, message: str, field_name: str | None = None) -> None:
            error = {"code": code, "message": message}
            if field_name:
                error["field"] = field_name
            self._answer(status, {"error": error})

        def do_POST(self) -> None:  # noqa: N802 - http.server API
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {name.lower(): value for name, value in self.headers.items()}
            problem = sigv4_problem("POST", self.path, headers, body)
            if problem:
                self._answer(403, {"Message": "Forbidden"})
                return
            try:
                payload = json.loads(body)
            except ValueError:
                self._error(400, "InvalidJson", "request body is not valid JSON")
                return
            state.requests.append(Recorded(self.path, headers, body, payload))
            if state.busy:
                self._answer(*state.busy.pop(0))
                return
            if self.path == "/open":
                self._open(payload)
            elif self.path == "/invoke":
                self._invoke(payload)
            elif self.path == "/close":
                self._close(payload)
            else:
                self._error(404, "RouteNotFound", f"no route for POST {self.path}")

        def _open(self, payload: dict[str, Any]) -> None:
            if set(payload) - {"component"}:
                self._error(400, "InvalidField", "unknown field", sorted(set(payload) - {"component"})[0])
                return
            conversation_id = f"issued-{next(state.conversation_ids)}"
            row = {"session_id": next(state.session_ids), "component": payload.get("component") or BASE}
            state.conversations[conversation_id] = row
            self._answer(
                200, {"conversation_id": conversation_id, **row, "endpoint_name": ENDPOINT, "expires_at": 1_900_000_000}
            )

        def _invoke(self, payload: dict[str, Any]) -> None:
            if not isinstance(payload.get("body"), dict):
                self._error(400, "InvalidField", "body is required", "body")
                return
            conversation_id = payload.get("conversation_id")
            component = payload.get("component")
            if conversation_id is None:
                self._answer(
                    200, {"conversation_id": None, "component": component or BASE, "body": {"echo": payload["body"]}}
                )
                return
            if not CONVERSATION_ID.fullmatch(conversation_id):
                self._error(400, "InvalidField", "conversation_id must be ...", "conversation_id")
                return
            row = state.conversations.get(conversation_id)
            headers = {}
            if row is None:
                self._error(404, "ConversationNotFound", "open a new conversation with POST /open", "conversation_id")
                return
            if component is not None and component != row["component"]:
                self._error(409, "ComponentConflict", "a session lives on one component", "component")
                return
            if state.reopen_next:
                state.reopen_next = False
                row["session_id"] = next(state.session_ids)
                headers["X-Session-Reopened"] = "true"
            self._answer(
                200,
                {
                    "conversation_id": conversation_id,
                    "session_id": row["session_id"],
                    "component": row["component"],
                    "body": {"echo": payload["body"]},
                },
                headers,
            )

        def _close(self, payload: dict[str, Any]) -> None:
            row = state.conversations.pop(payload.get("conversation_id"), None)
            if row is None:
                self._error(404, "ConversationNotFound", "no open session", "conversation_id")
                return
            self._answer(
                200,
                {
                    "conversation_id": payload["conversation_id"],
                    "session_id": row["session_id"],
                    "component": row["component"],
                    "closed": True,
                    "session_was_open": True,
                },
            )

    return FakeFrontDoor


@pytest.fixture
def front_door():
    state = FrontDoorState()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def client(front_door):
    return SessionClient(
        front_door.url,
        region=REGION,
        timeout=10,
        credentials=Credentials("AKIDCLIENTTEST", "client-test-secret", "session-token-1"),
    )


def prompt(text: str = "hello") -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def test_stateless_invoke_is_sigv4_signed_for_lambda(client, front_door):
    answer = client.invoke(prompt())

    assert answer == {"conversation_id": None, "component": BASE, "body": {"echo": prompt()}, "session_reopened": False}
    sent = front_door.requests[0]
    assert sent.path == "/invoke"
    assert sent.json == {"body": prompt()}
    assert sent.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDCLIENTTEST/")
    assert "/us-east-1/lambda/aws4_request" in sent.headers["authorization"]
    assert sent.headers["x-amz-security-token"] == "session-token-1"
    assert "x-amz-security-token" in sent.headers["authorization"]  # the token is signed too


def test_default_credential_chain_is_used_when_none_given(front_door):
    client = SessionClient(front_door.url, region=REGION, timeout=10)  # conftest sets AWS_* env credentials

    client.invoke(prompt(), component=ADAPTER)

    assert "Credential=testing/" in front_door.requests[0].headers["authorization"]
    assert front_door.requests[0].json == {"body": prompt(), "component": ADAPTER}


def test_conversation_opens_on_first_turn_keeps_one_session_and_closes_on_exit(client, front_door):
    with client.conversation(component=ADAPTER) as chat:
        assert chat.conversation_id is None  # nothing opened before the first turn
        first = chat.send(prompt("one"))
        second = chat.send(prompt("two"))
        conversation_id = chat.conversation_id

    assert conversation_id == "issued-1"  # issued by the front door, never chosen by the client
    assert first["session_id"] == second["session_id"] == chat.session_id == "sess-1"
    assert second["component"] == ADAPTER and second["body"] == {"echo": prompt("two")}
    assert [r.path for r in front_door.requests] == ["/open", "/invoke", "/invoke", "/close"]
    assert front_door.requests[0].json == {"component": ADAPTER}
    assert {r.json.get("conversation_id") for r in front_door.requests[1:]} == {conversation_id}
    assert front_door.conversations == {}
    assert chat.closed and chat.endpoint_name == ENDPOINT


def test_open_returns_what_streaming_needs(client, front_door):
    opened = client.open()

    assert opened == {
        "conversation_id": "issued-1",
        "session_id": "sess-1",
        "component": BASE,
        "endpoint_name": ENDPOINT,
        "expires_at": 1_900_000_000,
    }
    assert front_door.requests[0].json == {}


def test_conversation_ids_are_issued_per_conversation(client):
    assert client.conversation().open().conversation_id != client.conversation().open().conversation_id


def test_conversation_removed_by_the_front_door_is_opened_anew(client, front_door):
    chat = client.conversation()
    chat.send(prompt())
    front_door.conversations.clear()  # expired and removed by the table's TTL

    answer = chat.send(prompt())

    assert answer["session_reopened"] is True and chat.reopened
    assert chat.conversation_id == "issued-2" and chat.session_id == "sess-2"
    assert [r.path for r in front_door.requests] == ["/open", "/invoke", "/invoke", "/open", "/invoke"]


def test_continued_conversation_is_used_and_reopened_when_gone(client, front_door):
    kept = client.open()["conversation_id"]
    chat = client.conversation(kept)
    assert chat.send(prompt())["session_reopened"] is False and chat.conversation_id == kept

    gone = client.conversation("issued-99")  # an id the front door removed long ago (or never issued)
    answer = gone.send(prompt())

    assert answer["session_reopened"] is True and gone.conversation_id != "issued-99"
    with pytest.raises(FrontDoorError) as raised:
        client.invoke(prompt(), conversation_id="issued-99")  # the low-level call does not hide the 404
    assert (raised.value.status, raised.value.code) == (404, "ConversationNotFound")


def test_conversation_is_closed_when_the_block_raises(client, front_door):
    with pytest.raises(ValueError, match="app failure"), client.conversation() as chat:
        chat.send(prompt())
        raise ValueError("app failure")

    assert front_door.requests[-1].path == "/close"
    assert front_door.conversations == {}


def test_reopened_session_is_reported(client, front_door):
    chat = client.conversation()
    chat.send(prompt())
    front_door.reopen_next = True

    answer = chat.send(prompt())

    assert answer["session_reopened"] is True and chat.reopened
    assert chat.session_id == "sess-2"
    chat.send(prompt())
    assert chat.reopened is False


def test_component_conflict_raises_front_door_error(client, front_door):
    conversation_id = client.open()["conversation_id"]

    with pytest.raises(FrontDoorError) as raised:
        client.invoke(prompt(), conversation_id=conversation_id, component=ADAPTER)

    assert (raised.value.status, raised.value.code, raised.value.field) == (409, "ComponentConflict", "component")
    assert "one component" in raised.value.message


def test_validation_error_carries_field(client):
    with pytest.raises(FrontDoorError) as raised:
        client.invoke(prompt(), conversation_id="not a valid id!")

    assert (raised.value.status, raised.value.code, raised.value.field) == (400, "InvalidField", "conversation_id")


def test_close_unknown_conversation_raises_404_but_conversation_close_is_silent(client):
    with pytest.raises(FrontDoorError) as raised:
        client.close("never-opened")
    assert (raised.value.status, raised.value.code) == (404, "ConversationNotFound")

    chat = client.conversation()
    chat.close()  # nothing was sent, the front door has no session: not an error
    assert chat.closed
    with pytest.raises(FrontDoorError, match="closed"):
        chat.send(prompt())


def test_wrong_secret_is_forbidden(front_door):
    client = SessionClient(
        front_door.url, region=REGION, timeout=10, credentials=Credentials("AKIDCLIENTTEST", "not-the-secret")
    )

    with pytest.raises(FrontDoorError) as raised:
        client.invoke(prompt())

    assert (raised.value.status, raised.value.code) == (403, "Forbidden")
    assert front_door.requests == []


def test_signature_check_detects_a_tampered_body(client, front_door):
    client.invoke(prompt("original"))
    sent = front_door.requests[0]
    assert sigv4_problem("POST", sent.path, sent.headers, sent.body) is None

    tampered = json.dumps({"body": prompt("tampered")}).encode()
    assert sigv4_problem("POST", sent.path, sent.headers, tampered) is not None
    headers = dict(sent.headers, **{"x-amz-content-sha256": hashlib.sha256(tampered).hexdigest()})
    assert sigv4_problem("POST", sent.path, headers, tampered) == "signature mismatch"


def test_unreachable_front_door_raises_connection_error():
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = SessionClient(
        f"http://127.0.0.1:{port}/",
        region=REGION,
        timeout=5,
        credentials=Credentials("AKIDCLIENTTEST", "client-test-secret"),
    )

    with pytest.raises(FrontDoorError) as raised:
        client.invoke(prompt())

    assert raised.value.status is None and raised.value.code == "ConnectionError"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"url": "lambda-url.example", "region": REGION}, "url"),
        ({"url": "https://x.lambda-url.us-east-1.on.aws/", "region": ""}, "region"),
        ({"url": "https://x.lambda-url.us-east-1.on.aws/", "region": REGION, "timeout": 0}, "timeout"),
        ({"url": "https://x.lambda-url.us-east-1.on.aws/", "region": REGION, "max_retries": -1}, "max_retries"),
        ({"url": "https://x.lambda-url.us-east-1.on.aws/", "region": REGION, "max_retries": 1.5}, "max_retries"),
        ({"url": "https://x.lambda-url.us-east-1.on.aws/", "region": REGION, "max_retry_wait": -1}, "max_retry_wait"),
        (
            {"url": "https://x.lambda-url.us-east-1.on.aws/", "region": REGION, "max_retry_wait": float("nan")},
            "max_retry_wait",
        ),
    ],
)
def test_constructor_rejects_bad_arguments(kwargs, match):
    url = kwargs.pop("url")
    with pytest.raises(ValueError, match=match):
        SessionClient(url, credentials=Credentials("a", "b"), **kwargs)


def test_body_must_be_a_dict(client, front_door):
    with pytest.raises(TypeError, match="dict"):
        client.invoke("hello")  # type: ignore[arg-type]
    assert front_door.requests == []


# --------------------------------------------------------------------------- retries of 429 and 503
STORE_THROTTLED = (
    503,
    {"error": {"code": "SessionStoreThrottled", "message": "the conversation table is throttling"}},
    {"Retry-After": "1"},
)
MODEL_THROTTLED = (429, {"error": {"code": "Throttled", "message": "the endpoint is throttling"}}, {"Retry-After": "2"})
LAMBDA_THROTTLED = (429, {"Message": "Rate Exceeded."}, {})  # the Function URL's own answer: no Retry-After


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The waits the client takes between attempts (not slept in tests)."""
    taken: list[float] = []
    monkeypatch.setattr(client_mod, "_sleep", taken.append)
    return taken


def test_a_throttled_request_is_sent_again_after_retry_after(client, front_door, waits):
    front_door.busy += [STORE_THROTTLED, MODEL_THROTTLED]

    answer = client.invoke(prompt())

    assert answer["body"] == {"echo": prompt()}
    assert waits == [1.0, 2.0]  # each answer's own Retry-After
    assert [r.path for r in front_door.requests] == ["/invoke"] * 3


def test_retries_are_bounded_and_the_last_answer_is_raised(client, front_door, waits):
    front_door.busy += [STORE_THROTTLED] * 4

    with pytest.raises(FrontDoorError) as raised:
        client.open()

    assert (raised.value.status, raised.value.code, raised.value.retry_after) == (503, "SessionStoreThrottled", 1.0)
    assert len(front_door.requests) == 3 and waits == [1.0, 1.0]  # max_retries=2
    assert front_door.busy == [STORE_THROTTLED]


def test_a_retry_after_beyond_the_bound_is_raised_at_once_never_retried_sooner(client, front_door, waits):
    front_door.busy.append((503, STORE_THROTTLED[1], {"Retry-After": "30"}))

    with pytest.raises(FrontDoorError) as raised:
        client.close("issued-1")

    assert raised.value.retry_after == 30.0
    assert len(front_door.requests) == 1 and waits == []


def test_an_answer_without_retry_after_is_retried_after_a_jittered_backoff(client, front_door, waits):
    front_door.busy += [LAMBDA_THROTTLED, LAMBDA_THROTTLED]

    assert client.invoke(prompt())["body"] == {"echo": prompt()}

    assert len(waits) == 2 and 0.25 <= waits[0] <= 0.5 and 0.5 <= waits[1] <= 1.0


@pytest.mark.parametrize("status", [500, 502, 504])
def test_other_errors_are_not_retried(client, front_door, waits, status):
    """A 504 may follow a model call that ran; 500 and 502 are failures, not back-pressure."""
    front_door.busy.append(
        (status, {"error": {"code": "TimeBudgetExceeded", "message": "out of time"}}, {"Retry-After": "1"})
    )

    with pytest.raises(FrontDoorError) as raised:
        client.invoke(prompt())

    assert raised.value.status == status and raised.value.retry_after == 1.0
    assert len(front_door.requests) == 1 and waits == []


def test_max_retries_zero_never_retries(front_door, waits):
    client = SessionClient(
        front_door.url,
        region=REGION,
        timeout=10,
        max_retries=0,
        credentials=Credentials("AKIDCLIENTTEST", "client-test-secret"),
    )
    front_door.busy.append(STORE_THROTTLED)

    with pytest.raises(FrontDoorError, match=r"^503 SessionStoreThrottled: "):
        client.invoke(prompt())
    assert waits == []


def test_a_conversation_turn_is_retried_too(client, front_door, waits):
    with client.conversation() as chat:
        chat.open()
        front_door.busy.append(STORE_THROTTLED)
        assert chat.send(prompt())["body"] == {"echo": prompt()}
    assert waits == [1.0]
    assert [r.path for r in front_door.requests] == ["/open", "/invoke", "/invoke", "/close"]


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("0", 0.0),
        ("7", 7.0),
        (" 3 ", 3.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past: now
        (None, None),
        ("", None),
        ("-1", None),
        ("1.5", None),
        ("soon", None),
        ("Wed, 21 Oct 2015 07:28:00", None),
    ],
)
def test_retry_after_is_delta_seconds_or_an_http_date(header, seconds):
    assert client_mod._retry_after(header) == seconds


def test_retry_after_as_a_future_http_date():
    from datetime import datetime, timedelta
    from email.utils import format_datetime

    later = format_datetime(datetime.now(UTC) + timedelta(seconds=6), usegmt=True)
    assert 4.0 <= client_mod._retry_after(later) <= 6.0


# --------------------------------------------------------------------------- streaming (direct to SageMaker)
def _header(name: str, value: str) -> bytes:
    encoded = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + len(encoded).to_bytes(2, "big") + encoded


def event_stream_message(event_type: str, payload: bytes, *, message_type: str = "event") -> bytes:
    """One message in AWS's binary event-stream framing (what SageMaker sends), CRCs included."""
    import zlib

    headers = (
        (_header(":event-type", event_type) if message_type == "event" else _header(":exception-type", event_type))
        + _header(":message-type", message_type)
        + _header(":content-type", "application/octet-stream" if message_type == "event" else "application/json")
    )
    total = 12 + len(headers) + len(payload) + 4
    prelude = total.to_bytes(4, "big") + len(headers).to_bytes(4, "big")
    prelude += zlib.crc32(prelude).to_bytes(4, "big")
    message = prelude + headers + payload
    return message + zlib.crc32(message).to_bytes(4, "big")


class RawStream:
    """What botocore reads a streamed HTTP body from: chunks cut at arbitrary places."""

    def __init__(self, data: bytes, cut: int = 7):
        self.data, self.cut = data, cut

    def stream(self, **_: Any):
        for start in range(0, len(self.data), self.cut):
            yield self.data[start : start + self.cut]

    def close(self) -> None:
        pass


class StreamingRuntime:
    """A real botocore sagemaker-runtime client whose HTTP layer answers with a recorded event stream.

    The request goes through botocore's own validation and serializer; its parameters are also checked
    against the service model (support.aws_model); the answer goes through botocore's event-stream parser.
    """

    def __init__(self):
        import botocore.session
        from botocore.awsrequest import AWSResponse

        self.client = botocore.session.get_session().create_client(
            "sagemaker-runtime",
            region_name=REGION,
            aws_access_key_id="AKIDCLIENTTEST",
            aws_secret_access_key="client-test-secret",
        )
        self.sent: list[dict[str, Any]] = []
        self.answers: list[tuple[int, bytes, dict[str, str]]] = []
        self.client.meta.events.register(
            "provide-client-params.sagemaker-runtime.*", lambda params, **_: self.sent.append(dict(params))
        )

        def send(request, **_):
            status, data, headers = self.answers.pop(0)
            return AWSResponse(request.url, status, {"x-amzn-requestid": "r-1", **headers}, RawStream(data))

        self.client.meta.events.register("before-send.sagemaker-runtime.*", send)

    def stream(self, *events: bytes) -> None:
        self.answers.append(
            (
                200,
                b"".join(events),
                {
                    "content-type": "application/vnd.amazon.eventstream",
                    "x-amzn-sagemaker-content-type": "text/event-stream",
                },
            )
        )

    def error(self, status: int, body: dict[str, Any]) -> None:
        self.answers.append(
            (
                status,
                json.dumps(body).encode(),
                {"content-type": "application/x-amz-json-1.1", "x-amzn-errortype": body["__type"]},
            )
        )


def sse(event: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(event).encode() + b"\n\n"


def chunk(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


@pytest.fixture
def runtime():
    return StreamingRuntime()


@pytest.fixture
def streaming_client(front_door, runtime):
    return SessionClient(
        front_door.url,
        region=REGION,
        timeout=10,
        runtime_client=runtime.client,
        credentials=Credentials("AKIDCLIENTTEST", "client-test-secret"),
    )


def test_stream_uses_the_open_session_and_parses_payload_parts(streaming_client, front_door, runtime):
    from support.aws_model import assert_valid_request

    runtime.stream(
        event_stream_message("PayloadPart", sse(chunk("Hel"))[:9]),  # a line split across parts
        event_stream_message("PayloadPart", sse(chunk("Hel"))[9:] + sse(chunk("lo"))),
        event_stream_message("PayloadPart", b"data: [DONE]\n\n"),
    )

    with streaming_client.conversation(component=ADAPTER) as chat:
        events = list(chat.stream(prompt()))

    assert [client_mod.text_of(e) for e in events] == ["Hel", "lo"]
    assert [r.path for r in front_door.requests] == ["/open", "/close"]  # the turn itself bypassed the front door
    sent = runtime.sent[0]
    assert {k: v for k, v in sent.items() if k != "Body"} == {
        "EndpointName": ENDPOINT,
        "InferenceComponentName": ADAPTER,
        "SessionId": "sess-1",
        "ContentType": "application/json",
    }
    assert json.loads(sent["Body"]) == {**prompt(), "stream": True}
    params = dict(sent)
    params.pop("ContentType")  # \p{ASCII}* is not a Python pattern (see tests/lambda/test_session_router.py)
    assert_valid_request("sagemaker-runtime", "InvokeEndpointWithResponseStream", params)


def test_stream_of_json_lines_and_text(streaming_client, runtime):
    runtime.stream(
        event_stream_message("PayloadPart", b'{"token": {"text": "A"}}\n{"tok'),
        event_stream_message("PayloadPart", b'en": {"text": "B"}}\nplain tail'),
    )

    events = list(streaming_client.conversation().stream(prompt(), stream_field=False))

    assert events == [{"token": {"text": "A"}}, {"token": {"text": "B"}}, "plain tail"]
    assert json.loads(runtime.sent[0]["Body"]) == prompt()


def test_stream_on_a_lost_session_falls_back_to_the_front_door(streaming_client, front_door, runtime):
    runtime.error(400, {"__type": "ValidationError", "message": "Session sess-1 is invalid or has expired."})
    chat = streaming_client.conversation()

    events = list(chat.stream(prompt()))

    assert events == [{"echo": prompt()}]  # the whole reply of the buffered turn, once
    assert chat.reopened
    assert [r.path for r in front_door.requests] == ["/open", "/invoke"]


def test_stream_errors_become_front_door_errors(streaming_client, runtime):
    runtime.error(424, {"__type": "ModelError", "message": "boom", "OriginalStatusCode": 500})
    runtime.stream(
        event_stream_message("PayloadPart", sse(chunk("x"))),
        event_stream_message(
            "ModelStreamError",
            json.dumps({"Message": "CUDA OOM", "ErrorCode": "500"}).encode(),
            message_type="exception",
        ),
    )
    chat = streaming_client.conversation()

    with pytest.raises(FrontDoorError) as before_start:
        list(chat.stream(prompt()))
    assert (before_start.value.status, before_start.value.code) == (424, "ModelError")

    events = []
    with pytest.raises(FrontDoorError) as mid_stream:
        for event in chat.stream(prompt()):
            events.append(event)
    assert events == [chunk("x")]
    assert mid_stream.value.code == "ModelStreamError" and "CUDA OOM" in mid_stream.value.message


@pytest.mark.parametrize(
    ("event", "text"),
    [
        (chunk("a"), "a"),
        ({"choices": [{"text": "b"}]}, "b"),
        ({"token": {"text": "c"}}, "c"),
        ("d", "d"),
        ({"choices": [{"delta": {}}]}, ""),
        ({"choices": []}, ""),
        (42, ""),
        ({"generated_text": "e"}, "e"),
    ],
)
def test_text_of(event, text):
    assert client_mod.text_of(event) == text


# --------------------------------------------------------------------------- the client without CDK
IMPORT_WITHOUT_CDK = r"""
import importlib.abc, json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class NoCdk(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"aws_cdk", "jsii", "constructs", "cdk_nag", "pydantic", "yaml"}:
            raise ImportError(f"{name} is blocked: the client must work with boto3 alone")
        return None

sys.meta_path.insert(0, NoCdk())

class Door(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        signed = self.headers.get("Authorization", "").startswith("AWS4-HMAC-SHA256 Credential=AKIDX/")
        answer = {"/open": {"conversation_id": "c1", "session_id": "s1", "component": "base",
                            "endpoint_name": "e", "expires_at": 1},
                  "/invoke": {"conversation_id": "c1", "session_id": "s1", "component": "base",
                              "body": {"signed": signed, "got": body.get("body")}},
                  "/close": {"closed": True}}[self.path]
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

server = ThreadingHTTPServer(("127.0.0.1", 0), Door)
threading.Thread(target=server.serve_forever, daemon=True).start()

from botocore.credentials import Credentials
from sagemaker_llm_cdk.client import SessionClient

client = SessionClient(f"http://127.0.0.1:{server.server_address[1]}/", region="us-east-1",
                       credentials=Credentials("AKIDX", "secret"))
with client.conversation() as chat:
    reply = chat.send({"prompt": "hi"})
server.shutdown()
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {"aws_cdk", "jsii", "constructs", "sagemaker_llm_cdk"})
print(json.dumps({"reply": reply["body"], "loaded": loaded}))
"""


def test_client_works_where_aws_cdk_cannot_be_imported(tmp_path):
    import os
    import subprocess

    package_root = Path(__file__).resolve().parents[2] / "constructs"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(package_root)
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_WITHOUT_CDK], capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path
    )

    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["reply"] == {"signed": True, "got": {"prompt": "hi"}}
    assert outcome["loaded"] == ["sagemaker_llm_cdk", "sagemaker_llm_cdk.client", "sagemaker_llm_cdk.client_streams"]


def test_package_names_still_resolve_lazily():
    import sagemaker_llm_cdk

    assert "LlmEndpoint" in sagemaker_llm_cdk.__all__ and "LlmEndpoint" in dir(sagemaker_llm_cdk)
    assert all(getattr(sagemaker_llm_cdk, name) is not None for name in sagemaker_llm_cdk.__all__)
    from sagemaker_llm_cdk.sessions.front_door import SessionFrontDoor

    assert sagemaker_llm_cdk.SessionFrontDoor is SessionFrontDoor
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        sagemaker_llm_cdk.Nope  # noqa: B018


def test_make_docs_renders_the_client_with_curl_and_javascript_examples(tmp_path):
    import pdoc
    import pdoc.render  # pdoc is a dev requirement: the API reference is part of CI, never skipped

    from tools.build_site import API_MODULES

    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert "-m tools.build_site --api docs/api" in makefile  # make docs renders API_MODULES
    assert "sagemaker_llm_cdk.client" in API_MODULES
    pdoc.render.configure(docformat="restructuredtext", show_source=False)
    pdoc.pdoc("sagemaker_llm_cdk.client", output_directory=tmp_path)
    page = (tmp_path / "sagemaker_llm_cdk" / "client.html").read_text(encoding="utf-8")
    assert "--aws-sigv4" in page and "x-amz-security-token" in page and "SignatureV4" in page
    for name in ("SessionClient", "Conversation", "FrontDoorError", "text_of"):
        assert f'id="{name}"' in page


def test_log_turn_gives_up_after_its_own_timeout_through_urllib_and_is_never_retried(monkeypatch):
    """A turn log that does not answer must not hold the stream's caller for the turn's own timeout: ``/log``
    waits at most LOG_TIMEOUT_SECONDS (here made short), through the real urllib socket, once."""
    seen: list[str] = []
    release = threading.Event()

    class SlowLog(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            seen.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            release.wait(5)  # longer than the client waits
            with contextlib.suppress(OSError):
                self.send_response(200)
                self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowLog)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    monkeypatch.setattr(client_mod, "LOG_TIMEOUT_SECONDS", 0.3)
    client = SessionClient(
        f"http://127.0.0.1:{server.server_address[1]}/",
        region=REGION,
        timeout=30,
        credentials=Credentials("AKIDCLIENTTEST", "client-test-secret", "session-token-1"),
    )
    try:
        with pytest.raises(FrontDoorError) as raised:
            client.log_turn("issued-1", "sess-1", prompt(), {"choices": [{"message": {"content": "hi"}}]})
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert raised.value.code == "ConnectionError" and "timed out" in str(raised.value)
    assert seen == ["/log"]
