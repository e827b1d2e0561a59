"""A SageMaker runtime and a session front door for the agent connectors' tests, both offline.

``Runtime`` is a pair of real botocore ``sagemaker-runtime`` clients behind one object: ``InvokeEndpoint`` goes
through ``botocore.stub.Stubber`` (each request checked against the expected parameters, the session id
included, and against the service model); ``InvokeEndpointWithResponseStream`` is answered at the HTTP layer
with AWS's binary event-stream framing, so botocore's own event-stream parser reads it (Stubber cannot return
an event stream: it validates a response's ``Body`` as one event).

``FrontDoor`` is a ``SessionClient`` whose transport is the session router's behaviour in miniature: ``/open``
opens a SageMaker session (``SessionId=NEW_SESSION``, body ``{"requestType": "NEW_SESSION"}``, the id read
from ``NewSessionId``; queue it with ``Runtime.open_session``), ``/invoke``
sends the turn with the conversation's session id, ``/close`` closes it; every call goes to ``Runtime``.
"""

from __future__ import annotations

import io
import itertools
import json
import zlib
from typing import Any

import botocore.session
from botocore.awsrequest import AWSResponse
from botocore.credentials import Credentials
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from sagemaker_llm_cdk.client import SessionClient

REGION = "us-east-1"
ENDPOINT = "SageMakerLlm-chat"
COMPONENT = "SageMakerLlm-qwen3-32b"
_IDS = itertools.count(1)


def _client() -> Any:
    return botocore.session.get_session().create_client(
        "sagemaker-runtime", region_name=REGION, aws_access_key_id="AKIDAGENTTEST", aws_secret_access_key="secret"
    )


def _header(name: str, value: str) -> bytes:
    encoded = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + len(encoded).to_bytes(2, "big") + encoded


def event_message(payload: bytes) -> bytes:
    """One ``PayloadPart`` in AWS's event-stream framing, CRCs included."""
    headers = (
        _header(":event-type", "PayloadPart")
        + _header(":message-type", "event")
        + _header(":content-type", "application/octet-stream")
    )
    total = 12 + len(headers) + len(payload) + 4
    prelude = total.to_bytes(4, "big") + len(headers).to_bytes(4, "big")
    prelude += zlib.crc32(prelude).to_bytes(4, "big")
    message = prelude + headers + payload
    return message + zlib.crc32(message).to_bytes(4, "big")


class _RawStream:
    def __init__(self, data: bytes, cut: int = 11) -> None:
        self.data, self.cut = data, cut

    def stream(self, **_: Any) -> Any:
        for start in range(0, len(self.data), self.cut):
            yield self.data[start : start + self.cut]

    def close(self) -> None:
        pass


def completion(
    content: str | None = "",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    reasoning: str | None = None,
    reasoning_key: str = "reasoning",
    finish_reason: str = "stop",
) -> dict[str, Any]:
    """A chat completion as vLLM writes it (``arguments`` a JSON string); the thinking under ``reasoning_key``:
    ``reasoning`` as vLLM 0.26 names it, ``reasoning_content`` as older vLLM did."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning is not None:
        message[reasoning_key] = reasoning
    return {
        "id": f"chatcmpl-{next(_IDS)}",
        "object": "chat.completion",
        "model": "/opt/ml/model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    }


def call(name: str, arguments: dict[str, Any], id: str) -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


class Runtime:
    """``invoke_endpoint`` through Stubber, ``invoke_endpoint_with_response_stream`` through an HTTP stub."""

    def __init__(self) -> None:
        self.stubbed = _client()
        self.stubber = Stubber(self.stubbed)
        self.stubber.activate()
        self.streaming = _client()
        self.streamed: list[dict[str, Any]] = []
        self._streams: list[bytes | tuple[int, str, str]] = []
        self.streaming.meta.events.register(
            "provide-client-params.sagemaker-runtime.*", lambda params, **_: self.streamed.append(dict(params))
        )
        self.streaming.meta.events.register("before-send.sagemaker-runtime.*", self._send)
        self.bodies: list[dict[str, Any]] = []

    def _send(self, request: Any, **_: Any) -> AWSResponse:
        data = self._streams.pop(0)
        if isinstance(data, tuple):  # an error answer: (status, error code, message)
            status, code, message = data
            body = json.dumps({"message": message}).encode()
            headers = {"x-amzn-requestid": "r-1", "x-amzn-errortype": code, "content-type": "application/json"}
            return AWSResponse(request.url, status, headers, _RawStream(body))
        return AWSResponse(
            request.url,
            200,
            {
                "x-amzn-requestid": "r-1",
                "content-type": "application/vnd.amazon.eventstream",
                "x-amzn-sagemaker-content-type": "text/event-stream",
            },
            _RawStream(data),
        )

    # the two operations the connectors call
    def invoke_endpoint(self, **params: Any) -> Any:
        if params.get("Body"):
            self.bodies.append(json.loads(params["Body"]))
        return self.stubbed.invoke_endpoint(**params)

    def invoke_endpoint_with_response_stream(self, **params: Any) -> Any:
        self.bodies.append(json.loads(params["Body"]))
        return self.streaming.invoke_endpoint_with_response_stream(**params)

    # answers
    def answer(
        self,
        reply: dict[str, Any],
        *,
        session: str | None = None,
        new_session: str | None = None,
        component: str = COMPONENT,
    ) -> None:
        """The next ``InvokeEndpoint`` must carry ``session`` (or none) and gets ``reply``."""
        data = json.dumps(reply).encode()
        response: dict[str, Any] = {
            "Body": StreamingBody(io.BytesIO(data), len(data)),
            "ContentType": "application/json",
        }
        if new_session is not None:
            response["NewSessionId"] = f"{new_session}; Expires=2030-01-01T00:00:00Z"
        expected: dict[str, Any] = {
            "EndpointName": ENDPOINT,
            "InferenceComponentName": component,
            "ContentType": "application/json",
            "Body": ANY,
        }
        if session is not None:
            expected["SessionId"] = session
        else:
            expected["Accept"] = "application/json"
        self.stubber.add_response("invoke_endpoint", response, expected)

    def open_session(self, session: str, *, component: str = COMPONENT) -> None:
        """The next ``InvokeEndpoint`` opens a session (``SessionId=NEW_SESSION``) and SageMaker names it
        ``session``."""
        self.answer({}, session="NEW_SESSION", new_session=session, component=component)

    def stream(self, *chunks: dict[str, Any], split: int = 0) -> None:
        """The next ``InvokeEndpointWithResponseStream`` answers these chunks as server-sent events."""
        data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
        cut = split or max(1, len(data) // 3)
        self._streams.append(b"".join(event_message(data[i : i + cut]) for i in range(0, len(data), cut)))

    def lose_session(self, session: str) -> None:
        """The next ``InvokeEndpointWithResponseStream`` is refused as SageMaker refuses a session it no longer
        has (``ValidationError``, "Session ... not found")."""
        self._streams.append((400, "ValidationError", f"Session id {session} not found or expired"))

    def verify(self) -> None:
        self.stubber.assert_no_pending_responses()
        assert not self._streams, "a stream was queued but never read"


class FrontDoor(SessionClient):
    """A ``SessionClient`` wired to the session router's behaviour over ``Runtime`` (no HTTP, no Lambda)."""

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(
            "https://front-door.lambda-url.us-east-1.on.aws/",
            region=REGION,
            credentials=Credentials("AKIDAGENTTEST", "secret"),
            runtime_client=runtime,
        )
        self.runtime = runtime
        self.conversations: dict[str, str] = {}
        self.paths: list[str] = []

    def _post_once(self, path: str, payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        self.paths.append(path)
        component = payload.get("component", COMPONENT)
        if path == "/open":
            opened = self.runtime.invoke_endpoint(
                EndpointName=ENDPOINT,
                InferenceComponentName=component,
                ContentType="application/json",
                SessionId="NEW_SESSION",
                Body=b'{"requestType": "NEW_SESSION"}',
            )
            session = opened["NewSessionId"].split(";")[0]
            conversation = f"conv-{len(self.conversations) + 1}"
            self.conversations[conversation] = session
            return {
                "conversation_id": conversation,
                "session_id": session,
                "component": component,
                "endpoint_name": ENDPOINT,
                "expires_at": 1893456000,
            }, {}
        if path == "/invoke":
            session = self.conversations.get(payload.get("conversation_id", ""))
            params: dict[str, Any] = {
                "EndpointName": ENDPOINT,
                "InferenceComponentName": component,
                "ContentType": "application/json",
                "Body": json.dumps(payload["body"]).encode(),
            }
            if session is not None:
                params["SessionId"] = session
            else:
                params["Accept"] = "application/json"
            reply = json.loads(self.runtime.invoke_endpoint(**params)["Body"].read())
            answer = {"conversation_id": payload.get("conversation_id"), "component": component, "body": reply}
            if session is not None:
                answer["session_id"] = session
            return answer, {}
        if path == "/close":
            self.conversations.pop(payload["conversation_id"], None)
            return {"closed": True}, {}
        raise AssertionError(f"unexpected path {path}")


# ------------------------------------------------------------------ OpenAI stream chunks
def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-7",
        "object": "chat.completion.chunk",
        "model": "/opt/ml/model",
        "choices": choices,
        **extra,
    }


def call_pieces(ident: str, name: str, arguments: str) -> list[dict[str, Any]]:
    """One tool call as vLLM streams it: the id and name first, then the arguments text in two pieces."""
    half = len(arguments) // 2
    first = {"index": 0, "id": ident, "type": "function", "function": {"name": name, "arguments": ""}}
    return [
        chunk({"tool_calls": [first]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[:half]}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]}),
    ]


def capture_line(request: Any, response: Any, *, stream: bool = False, component: str = "chat-qwen3") -> bytes:
    """One Data Capture line (JSON encoding) of ``request`` and ``response`` (a JSON value, or stream text) for
    ``component``, as the EAGLE dataset builder reads it."""
    data = response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)
    return json.dumps(
        {
            "captureData": {
                "endpointInput": {
                    "observedContentType": "application/json",
                    "mode": "INPUT",
                    "data": json.dumps(request, ensure_ascii=False),
                    "encoding": "JSON",
                },
                "endpointOutput": {
                    "observedContentType": "text/event-stream" if stream else "application/json",
                    "mode": "OUTPUT",
                    "data": data,
                    "encoding": "JSON",
                },
            },
            "eventMetadata": {
                "eventId": "e1",
                "inferenceComponentName": component,
                "inferenceTime": "2026-12-01T10:00:00Z",
            },
            "eventVersion": "0",
        },
        ensure_ascii=False,
    ).encode("utf-8")
