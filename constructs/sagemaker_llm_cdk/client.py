"""Client for the session-aware front door (the session router Lambda Function URL, auth type AWS_IAM).

A chat app keeps one :class:`Conversation` per chat; every turn goes to the same SageMaker instance
through the front door, which maps the conversation to a SageMaker stateful session::

    client = SessionClient("https://abc.lambda-url.us-east-1.on.aws/", region="us-east-1")
    with client.conversation() as chat:
        reply = chat.send({"messages": [{"role": "user", "content": "Hi"}]})
        if reply["session_reopened"]:
            ...  # the session was lost and reopened: resend the history the model no longer has

Requests are signed with SigV4 for service ``lambda`` (the caller needs ``lambda:InvokeFunctionUrl``
on the function). Only the standard library and botocore are used.
"""
from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
import uuid
from types import TracebackType
from typing import Any, Optional

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

__all__ = ["Conversation", "FrontDoorError", "SessionClient"]

REOPENED_HEADER = "x-session-reopened"  # compared lower-case: HTTP header names are case-insensitive


class FrontDoorError(Exception):
    """The front door (or the network on the way) refused or failed a request.

    ``status`` is the HTTP status (None when no HTTP answer arrived), ``code`` the front door's error code
    (e.g. ``InvalidField``, ``ComponentConflict``, ``Throttled``, ``ModelRejectedRequest``), ``message``
    its explanation, ``field`` the offending request field when there is one.
    """

    def __init__(self, status: Optional[int], code: str, message: str, *, field: Optional[str] = None,
                 model_status: Optional[int] = None):
        super().__init__(f"{status} {code}: {message}" if status is not None else f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.model_status = model_status


class SessionClient:
    """Signs and sends requests to the front door.

    :param url: the Function URL, e.g. ``https://<id>.lambda-url.<region>.on.aws/``.
    :param region: region of the function (part of the SigV4 scope).
    :param credentials: botocore credentials; default: botocore's default chain (environment,
        shared config/SSO, container or instance role). Refreshable credentials are refreshed per request.
    :param timeout: seconds to wait for an answer (a model turn can take up to the endpoint's 60 s).
    """

    def __init__(self, url: str, *, region: str, credentials: Any = None, timeout: float = 75.0):
        if not url.startswith(("https://", "http://")):
            raise ValueError(f"url {url!r} must be the function URL, starting with https://")
        if not region:
            raise ValueError("region is required (the function's AWS region, e.g. 'us-east-1')")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive seconds, got {timeout!r}")
        if credentials is None:
            credentials = botocore.session.get_session().get_credentials()
            if credentials is None:
                raise ValueError("no AWS credentials found in botocore's default chain; pass credentials=")
        self.url = url.rstrip("/")
        self.region = region
        self.timeout = timeout
        self._credentials = credentials

    # --- public API ---------------------------------------------------------------------------------
    def invoke(self, body: dict[str, Any], *, conversation_id: Optional[str] = None,
               component: Optional[str] = None) -> dict[str, Any]:
        """Send one turn; returns the front door's answer plus ``session_reopened`` (bool).

        The answer is ``{"conversation_id", "session_id"?, "component", "body", "session_reopened"}``,
        ``body`` being the model's JSON (or text) response. Without ``conversation_id`` the call is
        stateless.
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

    def conversation(self, conversation_id: Optional[str] = None, *,
                     component: Optional[str] = None) -> "Conversation":
        """A new conversation (random id unless given) pinned to ``component`` (default: the base)."""
        return Conversation(self, conversation_id or f"conv-{uuid.uuid4().hex}", component=component)

    # --- transport ----------------------------------------------------------------------------------
    def _post(self, path: str, payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
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
        credentials = self._credentials
        if hasattr(credentials, "get_frozen_credentials"):
            credentials = credentials.get_frozen_credentials()
        SigV4Auth(credentials, "lambda", self.region).add_auth(signed)
        request = urllib.request.Request(url, data=data, method="POST", headers=dict(signed.headers.items()))
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - URL is https
                headers = {name.lower(): value for name, value in response.headers.items()}
                return _decode(response.status, response.read()), headers
        except urllib.error.HTTPError as exc:
            raise _error_from(exc.code, exc.read()) from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise FrontDoorError(None, "ConnectionError", f"could not reach {url}: {reason}") from None


class Conversation:
    """One chat: turns share a SageMaker session; closing frees it. Usable as a context manager."""

    def __init__(self, client: SessionClient, conversation_id: str, *, component: Optional[str] = None):
        self.client = client
        self.conversation_id = conversation_id
        self.component = component
        self.session_id: Optional[str] = None
        self.reopened = False
        self.closed = False

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send a turn; ``reopened`` becomes True if the front door had to open a new session."""
        if self.closed:
            raise FrontDoorError(None, "ConversationClosed", f"conversation {self.conversation_id!r} was closed")
        answer = self.client.invoke(body, conversation_id=self.conversation_id, component=self.component)
        self.session_id = answer.get("session_id")
        self.component = answer.get("component", self.component)
        self.reopened = bool(answer["session_reopened"])
        return answer

    def close(self) -> None:
        """Close the session; a conversation that never sent a turn (or is already gone) closes silently."""
        if self.closed:
            return
        self.closed = True
        try:
            self.client.close(self.conversation_id)
        except FrontDoorError as exc:
            if exc.status != 404:
                raise

    def __enter__(self) -> "Conversation":
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
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


def _error_from(status: int, raw: bytes) -> FrontDoorError:
    text = raw.decode("utf-8", errors="replace")
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        error = payload["error"]
        return FrontDoorError(status, str(error.get("code", "Error")), str(error.get("message", "")),
                              field=error.get("field"), model_status=error.get("model_status"))
    if isinstance(payload, dict) and "Message" in payload:  # Lambda URL's own answers, e.g. 403 Forbidden
        code = {403: "Forbidden", 413: "PayloadTooLarge", 429: "Throttled"}.get(status, "HttpError")
        return FrontDoorError(status, code, str(payload["Message"]))
    return FrontDoorError(status, "HttpError", text[:500] or f"HTTP {status}")
