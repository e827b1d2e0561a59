"""Client for the session front door (the session router's Lambda Function URL, auth type AWS_IAM).

Needs botocore only (``pip install boto3`` is enough): importing it loads neither ``aws_cdk``, jsii nor
Node.js, so a chat application's container can use it. A chat app keeps one :class:`Conversation` per
chat; the front door maps it to a SageMaker stateful session, so every turn reaches the same instance::

    from sagemaker_llm_cdk.client import SessionClient

    client = SessionClient("https://abc.lambda-url.us-east-1.on.aws/", region="us-east-1")
    with client.conversation() as chat:                      # POST /open on the first turn
        reply = chat.send({"messages": history})             # POST /invoke, buffered
        if reply["session_reopened"]:
            ...  # the session was lost and reopened: the model no longer has the earlier context
        for event in chat.stream({"messages": history}):     # tokens as they come (see below)
            print(text_of(event), end="")
    # leaving the block closes the session (POST /close)

Requests to the front door are signed with SigV4 for service ``lambda``; the caller needs what
``SessionFrontDoor.grant_invoke_url`` grants (``lambda:InvokeFunctionUrl`` plus ``lambda:InvokeFunction``
limited to calls through a function URL).

Streaming. The front door answers buffered: Lambda streams responses natively only from its Node.js
managed runtimes (a Python function would need a custom runtime or the Lambda Web Adapter), and the
front door is a Python function. So :meth:`Conversation.stream` asks the front door for the session
(``POST /open`` returns ``endpoint_name``, ``component`` and ``session_id``) and calls SageMaker's
``InvokeEndpointWithResponseStream`` directly with that ``SessionId``, as SageMaker allows for a session
that is open (a stream cannot open one: the front door opens it with a buffered call). The caller needs
``SessionFrontDoor.grant_stream`` (``sagemaker:InvokeEndpointWithResponseStream`` on the endpoint and the
served components). If SageMaker says the session is gone, the turn is sent through the front door
instead, which reopens the session, and its whole reply is yielded as one event.

Streamed turns in the turn log. The front door logs every buffered turn for EAGLE itself; a streamed turn never
passes through it, so when ``/open`` says ``"turn_log": true`` the client logs it: once the stream has ended,
it assembles the reply from the events (:class:`StreamedReply`: text, reasoning, tool calls from the OpenAI
deltas) and sends it with the request to ``POST /log`` (:meth:`SessionClient.log_turn`, one attempt, at most
``LOG_TIMEOUT_SECONDS``). The front door accepts it only from the conversation's owner, for its current session,
and checks it as it checks a buffered reply. Logging never fails the stream: a turn it could not log is counted
in ``SessionClient.turns_not_logged`` and logged as a warning (logger ``sagemaker_llm_cdk.client``); a stream
the caller stops reading early is not logged.

Retries. An answer 429 or 503 from the front door means "busy, try again": SageMaker or the model
container throttled (``Throttled``), the conversation table throttled (``SessionStoreThrottled``),
SageMaker was briefly unavailable, or Lambda throttled the function itself; none of them ran the turn.
The client sends such a request again, at most ``max_retries`` times (default 2), after the
``Retry-After`` the answer gives (seconds or an HTTP date; without one, a backoff of 0.5, 1, 2 ... s
with jitter). It never retries sooner than ``Retry-After`` asks: when that is longer than
``max_retry_wait`` (default 10 s) it raises at once, and :class:`FrontDoorError` carries
``retry_after`` for the caller to schedule the retry. Other errors are not retried (a 504 may
follow a model call that ran).

Other languages. The front door is plain HTTPS with SigV4 (service ``lambda``): ``POST /open`` with
``{}`` or ``{"component": ...}``, ``POST /invoke`` with ``{"conversation_id", "body"}``, ``POST /close``
with ``{"conversation_id"}``, ``POST /log`` with ``{"conversation_id", "session_id", "body", "reply"}`` after
a stream (``reply`` a chat completion). With curl 7.75 or newer (drop the token header for long-term keys)::

    URL=https://<id>.lambda-url.us-east-1.on.aws
    SIGN=(--aws-sigv4 "aws:amz:us-east-1:lambda" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY"
          -H "x-amz-security-token: $AWS_SESSION_TOKEN" -H "content-type: application/json")
    ID=$(curl -s "${SIGN[@]}" -d '{}' "$URL/open" | jq -r .conversation_id)
    curl -s "${SIGN[@]}" -d "{\"conversation_id\": \"$ID\", \"body\": {\"messages\": []}}" "$URL/invoke"
    curl -s "${SIGN[@]}" -d "{\"conversation_id\": \"$ID\"}" "$URL/close"

In JavaScript with ``@smithy/signature-v4`` (the signer inside the AWS SDK v3)::

    import { SignatureV4 } from "@smithy/signature-v4";
    import { Sha256 } from "@aws-crypto/sha256-js";
    import { defaultProvider } from "@aws-sdk/credential-provider-node";

    const signer = new SignatureV4({ service: "lambda", region: "us-east-1",
                                     credentials: defaultProvider(), sha256: Sha256 });
    async function frontDoor(path, payload) {
      const url = new URL(path, "https://<id>.lambda-url.us-east-1.on.aws");
      const body = JSON.stringify(payload);
      const request = await signer.sign({ method: "POST", protocol: url.protocol, hostname: url.hostname,
        path: url.pathname, headers: { host: url.hostname, "content-type": "application/json" }, body });
      const response = await fetch(url, { method: "POST", headers: request.headers, body });
      return response.json();
    }
    const { conversation_id } = await frontDoor("/open", {});
    const reply = await frontDoor("/invoke",
                                  { conversation_id, body: { messages: [{ role: "user", content: "Hi" }] } });
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from .client_streams import (
    FrontDoorError,
    StreamedReply,
    iter_stream_events,
    parse_stream,
    session_gone,
    stream_error,
    text_of,
)

__all__ = [
    "Conversation",
    "FrontDoorError",
    "SessionClient",
    "StreamedReply",
    "iter_stream_events",
    "parse_stream",
    "session_gone",
    "stream_error",
    "text_of",
]

logger = logging.getLogger(__name__)

REOPENED_HEADER = "x-session-reopened"  # compared lower-case: HTTP header names are case-insensitive
RETRY_STATUSES = (429, 503)
"""Statuses the front door (or Lambda in front of it) answers for "busy, try again": sent again, bounded."""
LOG_TIMEOUT_SECONDS = 10.0
"""The longest a ``POST /log`` after a stream waits for its answer: the stream's last step waits for it."""


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


class SessionClient:
    """Signs and sends requests to the front door.

    :param url: the Function URL, e.g. ``https://<id>.lambda-url.<region>.on.aws/``.
    :param region: region of the function (part of the SigV4 scope) and of the endpoint.
    :param credentials: botocore credentials; default: botocore's default chain (environment,
        shared config/SSO, container or instance role). Refreshable credentials are refreshed per request.
    :param timeout: seconds to wait for an answer (a turn can take up to the front door's 300 s, one
        model call up to 60 s). Default: 75.
    :param runtime_client: a botocore ``sagemaker-runtime`` client for :meth:`Conversation.stream`.
        Default: one made on first use in ``region`` with ``credentials`` (or the default chain).
    :param max_retries: how many times a request answered 429 or 503 is sent again (see Retries in the
        module's documentation); 0 never retries. Default: 2.
    :param max_retry_wait: the longest wait before one retry, seconds: an answer whose ``Retry-After``
        asks for longer is raised at once, never retried sooner than it asks. Default: 10.
    """

    def __init__(
        self,
        url: str,
        *,
        region: str,
        credentials: Any = None,
        timeout: float = 75.0,
        runtime_client: Any = None,
        max_retries: int = 2,
        max_retry_wait: float = 10.0,
    ):
        if not url.startswith(("https://", "http://")):
            raise ValueError(f"url {url!r} must be the function URL, starting with https://")
        if not region:
            raise ValueError("region is required (the function's AWS region, e.g. 'us-east-1')")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive seconds, got {timeout!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a whole number of retries, 0 or more, got {max_retries!r}")
        if not max_retry_wait >= 0:
            raise ValueError(f"max_retry_wait must be seconds, 0 or more, got {max_retry_wait!r}")
        import botocore.session

        self._botocore = botocore.session.get_session()
        self._explicit_credentials = credentials is not None
        if credentials is None:
            credentials = self._botocore.get_credentials()
            if credentials is None:
                raise ValueError("no AWS credentials found in botocore's default chain; pass credentials=")
        self.url = url.rstrip("/")
        self.region = region
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = float(max_retry_wait)
        self._credentials = credentials
        self._runtime = runtime_client
        self.turns_not_logged = 0
        """Streamed turns the front door's turn log should have had but did not get (see :meth:`log_turn`)."""
        self._count_lock = threading.Lock()

    # --- public API ---------------------------------------------------------------------------------
    def open(self, *, component: str | None = None) -> dict[str, Any]:
        """Open a conversation (``POST /open``): ``{"conversation_id", "session_id", "component",
        "endpoint_name", "expires_at"}``. The id is issued by the front door and owned by the caller."""
        answer, _ = self._post("/open", {} if component is None else {"component": component})
        return answer

    def invoke(
        self, body: dict[str, Any], *, conversation_id: str | None = None, component: str | None = None
    ) -> dict[str, Any]:
        """Send one turn; returns the front door's answer plus ``session_reopened`` (bool).

        The answer is ``{"conversation_id", "session_id"?, "component", "body", "session_reopened"}``,
        ``body`` being the model's JSON (or text) response. Without ``conversation_id`` the call is
        stateless; with one, it must come from :meth:`open` (an unknown id answers 404).
        """
        if not isinstance(body, dict):
            raise TypeError(f"body must be a dict (the JSON object sent to the model), got {type(body).__name__}")
        request: dict[str, Any] = {"body": body}
        if conversation_id is not None:
            request["conversation_id"] = conversation_id
        if component is not None:
            request["component"] = component
        answer, headers = self._post("/invoke", request)
        answer["session_reopened"] = headers.get(REOPENED_HEADER, "").lower() == "true"
        return answer

    def close(self, conversation_id: str) -> dict[str, Any]:
        """Close the conversation's session; raises FrontDoorError(404, ...) for an unknown conversation."""
        answer, _ = self._post("/close", {"conversation_id": conversation_id})
        return answer

    def log_turn(
        self, conversation_id: str, session_id: str, body: dict[str, Any], reply: dict[str, Any]
    ) -> dict[str, Any]:
        """Send a turn streamed on ``session_id`` to the front door's turn log (``POST /log``), once, never retried:
        ``{"conversation_id", "component", "logged": bool, "reason"?}``. ``reply`` is the streamed reply as a chat
        completion (:class:`StreamedReply`). Raises FrontDoorError when the front door refuses it (404 another
        caller's conversation, 409 another session, 400/413 a turn no record can hold, 503 the log unavailable)."""
        answer, _ = self._post_once(
            "/log", {"conversation_id": conversation_id, "session_id": session_id, "body": body, "reply": reply}
        )
        return answer

    def conversation(self, conversation_id: str | None = None, *, component: str | None = None) -> Conversation:
        """A conversation on ``component`` (default: the base). It is opened on its first turn; pass the
        ``conversation_id`` an earlier :meth:`open` returned to continue that one instead."""
        return Conversation(self, conversation_id, component=component)

    def stream(
        self,
        body: dict[str, Any],
        *,
        endpoint_name: str,
        component: str,
        session_id: str,
        content_type: str = "application/json",
        accept: str | None = None,
    ) -> Iterator[bytes]:
        """``InvokeEndpointWithResponseStream`` on an open session: the ``PayloadPart`` bytes as they come."""
        params: dict[str, Any] = {
            "EndpointName": endpoint_name,
            "InferenceComponentName": component,
            "SessionId": session_id,
            "ContentType": content_type,
            "Body": json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
        }
        if accept is not None:
            params["Accept"] = accept
        response = self._runtime_client().invoke_endpoint_with_response_stream(**params)
        return iter_stream_events(response["Body"])

    # --- transport ----------------------------------------------------------------------------------
    def _runtime_client(self) -> Any:
        if self._runtime is None:
            from botocore.config import Config

            keys: dict[str, Any] = {}
            if self._explicit_credentials:  # else the session's own chain, which refreshes itself
                frozen = self._frozen()
                keys = {
                    "aws_access_key_id": frozen.access_key,
                    "aws_secret_access_key": frozen.secret_key,
                    "aws_session_token": frozen.token,
                }
            self._runtime = self._botocore.create_client(
                "sagemaker-runtime",
                region_name=self.region,
                config=Config(
                    read_timeout=max(self.timeout, 65), retries={"mode": "standard", "total_max_attempts": 3}
                ),
                **keys,
            )
        return self._runtime

    def _frozen(self) -> Any:
        credentials = self._credentials
        return credentials.get_frozen_credentials() if hasattr(credentials, "get_frozen_credentials") else credentials

    def _post(self, path: str, payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """One request, sent again after a 429 or 503 as ``Retry-After`` asks, at most ``max_retries`` times."""
        retry = 0
        while True:
            try:
                return self._post_once(path, payload)
            except FrontDoorError as exc:
                if exc.status not in RETRY_STATUSES or retry >= self.max_retries:
                    raise
                wait = exc.retry_after if exc.retry_after is not None else _backoff(retry)
                if wait > self.max_retry_wait:
                    raise  # never sooner than asked: the caller reads retry_after
                retry += 1
                _sleep(wait)

    def _post_once(self, path: str, payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        url = self.url + path
        signed = AWSRequest(
            method="POST",
            url=url,
            data=data,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json",
                "X-Amz-Content-SHA256": hashlib.sha256(data).hexdigest(),
            },
        )
        SigV4Auth(self._frozen(), "lambda", self.region).add_auth(signed)
        request = urllib.request.Request(url, data=data, method="POST", headers=dict(signed.headers.items()))
        timeout = min(self.timeout, LOG_TIMEOUT_SECONDS) if path == "/log" else self.timeout
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - URL is https
                headers = {name.lower(): value for name, value in response.headers.items()}
                return _decode(response.status, response.read()), headers
        except urllib.error.HTTPError as exc:
            raise _error_from(exc.code, exc.read(), retry_after=_retry_after(exc.headers.get("Retry-After"))) from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise FrontDoorError(None, "ConnectionError", f"could not reach {url}: {reason}") from None


class Conversation:
    """One chat: turns share a SageMaker session; closing frees it. Usable as a context manager.

    ``conversation_id``, ``session_id``, ``component`` and ``endpoint_name`` are known once it is open.
    """

    def __init__(self, client: SessionClient, conversation_id: str | None = None, *, component: str | None = None):
        self.client = client
        self.conversation_id = conversation_id
        self.component = component
        self.session_id: str | None = None
        self.endpoint_name: str | None = None
        self.reopened = False
        self.closed = False
        self.turn_log = False
        """Whether the front door logs turns (``/open`` said so): each completed stream is then sent to ``/log``."""

    def open(self) -> Conversation:
        """Open the conversation now (``POST /open``) unless it is open already."""
        self._check_not_closed()
        if self.conversation_id is None:
            self._adopt(self.client.open(component=self.component))
        return self

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send a turn through the front door; ``reopened`` becomes True if a new session had to be opened.

        A conversation the front door no longer knows (expired and removed) is opened anew, once: the
        answer then says ``session_reopened`` and ``conversation_id`` changes.
        """
        self._check_not_closed()
        fresh = self.conversation_id is None
        self.open()
        try:
            answer = self.client.invoke(body, conversation_id=self.conversation_id, component=self.component)
        except FrontDoorError as exc:
            if fresh or exc.status != 404 or exc.code != "ConversationNotFound":
                raise
            self._adopt(self.client.open(component=self.component))
            answer = self.client.invoke(body, conversation_id=self.conversation_id, component=self.component)
            answer["session_reopened"] = True
        self.session_id = answer.get("session_id", self.session_id)
        self.component = answer.get("component", self.component)
        self.reopened = bool(answer["session_reopened"])
        return answer

    def stream(self, body: dict[str, Any], *, stream_field: bool = True, usage: bool = False) -> Iterator[Any]:
        """Stream a turn: each event the model sends, parsed (see :func:`iter_stream_events`).

        Calls ``InvokeEndpointWithResponseStream`` with this conversation's session (opening the
        conversation first if needed). ``stream_field`` adds ``"stream": true`` to the body when it has
        no ``stream`` key (what OpenAI-style chat servers need to stream); ``usage`` sets ``"stream": true``
        and ``stream_options: {include_usage: true}`` (vLLM then ends the stream with a chunk holding ``usage``).
        When SageMaker no longer has the session, the turn goes through the front door (which reopens it and
        logs it) with ``body`` as given, and its ``body`` is yielded as one event; ``reopened`` then becomes True.
        A stream read to its end is sent to the turn log when the front door logs turns (module documentation).
        """
        if not isinstance(body, dict):
            raise TypeError(f"body must be a dict (the JSON object sent to the model), got {type(body).__name__}")
        self.open()
        if self.session_id is None or self.endpoint_name is None:
            # Continued from an id: one buffered turn would fetch the session; ask the front door instead.
            raise FrontDoorError(
                None,
                "SessionUnknown",
                "stream() needs the session this client opened; call "
                "send() for a conversation continued from an id, or open a new conversation",
            )
        request = dict(body)
        if usage:
            request.update(stream=True, stream_options={"include_usage": True})
        elif stream_field:
            request.setdefault("stream", True)
        session_id = self.session_id
        try:
            chunks = self.client.stream(
                request, endpoint_name=self.endpoint_name, component=str(self.component), session_id=session_id
            )
        except Exception as exc:  # botocore ClientError; botocore is imported lazily, so matched by shape
            if not session_gone(exc):
                raise stream_error(exc) from None
            answer = self.send(body)
            self.reopened = True
            yield answer["body"]
            return
        self.reopened = False
        reply = StreamedReply() if self.turn_log else None
        for event in parse_stream(chunks):
            if reply is not None:
                reply.add(event)
            yield event
        if reply is not None:
            self._log_streamed(session_id, body, reply.completion())

    def _log_streamed(self, session_id: str, body: dict[str, Any], reply: dict[str, Any]) -> None:
        """Send a completed stream to the turn log; a failure is counted and logged, never raised."""
        try:
            answer = self.client.log_turn(str(self.conversation_id), session_id, body, reply)
        except Exception as exc:  # FrontDoorError, or botocore failing to sign: the user's stream has ended well
            with self.client._count_lock:
                self.client.turns_not_logged += 1
            logger.warning(
                "streamed turn not logged for EAGLE: %s",
                exc,
                extra={"conversation_id": self.conversation_id, "error_code": getattr(exc, "code", type(exc).__name__)},
            )
            return
        if not answer.get("logged"):
            self.turn_log = False  # the front door no longer logs turns: stop sending them

    def close(self) -> None:
        """Close the session; a conversation that never opened (or is already gone) closes silently."""
        if self.closed:
            return
        self.closed = True
        if self.conversation_id is None:
            return
        try:
            self.client.close(self.conversation_id)
        except FrontDoorError as exc:
            if exc.status != 404:
                raise

    def _adopt(self, opened: dict[str, Any]) -> None:
        self.conversation_id = opened["conversation_id"]
        self.session_id = opened.get("session_id")
        self.component = opened.get("component", self.component)
        self.endpoint_name = opened.get("endpoint_name")
        self.turn_log = opened.get("turn_log") is True

    def _check_not_closed(self) -> None:
        if self.closed:
            raise FrontDoorError(None, "ConversationClosed", f"conversation {self.conversation_id!r} was closed")

    def __enter__(self) -> Conversation:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.close()
        except FrontDoorError:
            if exc is None:
                raise  # do not hide the original error of the with-block


def _decode(status: int, raw: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise FrontDoorError(status, "InvalidResponse", "the front door answered with a non-JSON body") from None
    if not isinstance(answer, dict):
        raise FrontDoorError(status, "InvalidResponse", "the front door answered with JSON that is not an object")
    return answer


def _error_from(status: int, raw: bytes, *, retry_after: float | None = None) -> FrontDoorError:
    text = raw.decode("utf-8", errors="replace")
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        error = payload["error"]
        return FrontDoorError(
            status,
            str(error.get("code", "Error")),
            str(error.get("message", "")),
            field=error.get("field"),
            model_status=error.get("model_status"),
            retry_after=retry_after,
        )
    if isinstance(payload, dict) and "Message" in payload:  # Lambda URL's own answers, e.g. 403 Forbidden
        code = {403: "Forbidden", 413: "PayloadTooLarge", 429: "Throttled"}.get(status, "HttpError")
        return FrontDoorError(status, code, str(payload["Message"]), retry_after=retry_after)
    return FrontDoorError(status, "HttpError", text[:500] or f"HTTP {status}", retry_after=retry_after)


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds from now: delta-seconds or an HTTP date (RFC 9110); None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _backoff(retry: int) -> float:
    """Wait before retry ``retry`` (0-based) when the answer gave no ``Retry-After``: 0.5, 1, 2 ... s, jittered."""
    return min(0.5 * 2.0**retry, 8.0) * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not crypto
