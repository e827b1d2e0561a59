"""Streams of the session front door's client: SageMaker's event stream read, parsed and assembled, and its errors.

Needs nothing but the standard library. :mod:`sagemaker_llm_cdk.client` re-exports every public name here; import
them from there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = [
    "SESSION_GONE_WORDS",
    "FrontDoorError",
    "StreamedReply",
    "iter_stream_events",
    "parse_stream",
    "session_gone",
    "stream_error",
    "text_of",
]

SESSION_GONE_WORDS = ("not found", "expired", "invalid", "unknown", "does not exist", "no longer", "closed")
"""Words that, next to "session", mark SageMaker's answer for a session it no longer has (as the router)."""


class FrontDoorError(Exception):
    """The front door, SageMaker or the network on the way refused or failed a request.

    ``status`` is the HTTP status (None when no HTTP answer arrived), ``code`` the error code
    (e.g. ``InvalidField``, ``ComponentConflict``, ``Throttled``, ``ModelRejectedRequest``,
    ``TimeBudgetExceeded``, ``SessionStoreThrottled``, or SageMaker's code for a stream), ``message``
    the explanation, ``field`` the offending request field when there is one, ``retry_after`` the
    seconds the answer's ``Retry-After`` asked to wait before sending the request again (None: it gave none).
    """

    def __init__(
        self,
        status: int | None,
        code: str,
        message: str,
        *,
        field: str | None = None,
        model_status: int | None = None,
        retry_after: float | None = None,
    ):
        super().__init__(f"{status} {code}: {message}" if status is not None else f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.model_status = model_status
        self.retry_after = retry_after


# --- streaming ------------------------------------------------------------------------------------------
def iter_stream_events(event_stream: Iterable[Any]) -> Iterator[bytes]:
    """The ``PayloadPart.Bytes`` of an ``InvokeEndpointWithResponseStream`` body, in order.

    A ``ModelStreamError`` or ``InternalStreamFailure`` event raises FrontDoorError (botocore may also
    raise its own ``EventStreamError`` for them, which is passed on as FrontDoorError too).
    """
    try:
        for event in event_stream:
            if "PayloadPart" in event:
                data = event["PayloadPart"].get("Bytes", b"")
                if data:
                    yield data
                continue
            for name in ("ModelStreamError", "InternalStreamFailure"):
                if name in event:
                    detail = event[name] or {}
                    raise FrontDoorError(
                        None,
                        name,
                        str(detail.get("Message", "the stream failed")),
                        model_status=_int_or_none(detail.get("ErrorCode")),
                    )
    except FrontDoorError:
        raise
    except Exception as exc:  # botocore.exceptions.EventStreamError
        raise stream_error(exc) from None


def parse_stream(chunks: Iterable[bytes]) -> Iterator[Any]:
    """Lines of a streamed reply, parsed: PayloadPart boundaries may split a line anywhere.

    Server-sent events (``data: {...}``, OpenAI-style) and JSON lines (LMI's ``{"token": ...}``) both
    give one JSON value per line; ``data: [DONE]``, blank lines and SSE comments are skipped; a line
    that is not JSON is yielded as text.
    """
    pending = b""
    for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            event = _parse_line(line)
            if event is not None:
                yield event
    event = _parse_line(pending)
    if event is not None:
        yield event


def _parse_line(raw: bytes) -> Any:
    line = raw.decode("utf-8", errors="replace").strip()
    if not line or line.startswith(":") or line.startswith(("event:", "id:", "retry:")):
        return None
    if line.startswith("data:"):
        line = line[5:].strip()
        if line == "[DONE]" or not line:
            return None
    try:
        return json.loads(line)
    except ValueError:
        return line


def text_of(event: Any) -> str:
    """The generated text in one streamed event: OpenAI chat (``choices[0].delta.content``) or completion
    (``choices[0].text``) chunks, LMI/TGI tokens (``token.text``), or the event itself when it is text."""
    if isinstance(event, str):
        return event
    if not isinstance(event, dict):
        return ""
    candidates: list[Any] = []
    choices = event.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        choice = choices[0]
        for part, key in ((choice.get("delta"), "content"), (choice, "text"), (choice.get("message"), "content")):
            if isinstance(part, dict):
                candidates.append(part.get(key))
    token = event.get("token")
    if isinstance(token, dict):
        candidates.append(token.get("text"))
    candidates.append(event.get("generated_text"))
    return next((c for c in candidates if isinstance(c, str)), "")


class StreamedReply:
    """A streamed reply assembled, event by event (:meth:`add`), into one chat completion (:meth:`completion`).

    OpenAI chat chunks (``choices[0].delta``) give the text (``content``), the thinking (``reasoning``, or
    ``reasoning_content`` as older vLLM names it) and tool calls, whose pieces are joined by ``index`` (the id,
    the name and the ``arguments`` text); their ``finish_reason``, ``usage``, ``id`` and ``model`` are kept. Any
    other event adds its text (:func:`text_of`: completion chunks, LMI/TGI tokens, plain text).
    """

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.extra: dict[str, Any] = {}

    def add(self, event: Any) -> None:
        if isinstance(event, dict):
            for key in ("id", "model", "usage"):
                if event.get(key) is not None:
                    self.extra[key] = event[key]
        choices = event.get("choices") if isinstance(event, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        if choice is not None and isinstance(choice.get("finish_reason"), str):
            self.finish_reason = choice["finish_reason"]
        delta = choice.get("delta") if choice is not None else None
        if not isinstance(delta, dict):
            if choices != []:  # a usage-only chunk has an empty choices list and no text
                self.content.append(text_of(event))
            return
        if isinstance(delta.get("content"), str):
            self.content.append(delta["content"])
        thought = next((delta[k] for k in ("reasoning", "reasoning_content") if isinstance(delta.get(k), str)), "")
        if thought:
            self.reasoning.append(thought)
        for position, piece in enumerate(delta.get("tool_calls") or []):
            if isinstance(piece, dict):
                self._add_call(piece, position)

    def _add_call(self, piece: dict[str, Any], position: int) -> None:
        index = piece.get("index", position)
        call = self.calls.setdefault(
            index if isinstance(index, int) else position, {"id": None, "name": "", "args": ""}
        )
        call["id"] = call["id"] or piece.get("id")
        function: dict[str, Any] = piece["function"] if isinstance(piece.get("function"), dict) else {}
        if isinstance(function.get("name"), str):
            call["name"] += function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call["args"] += arguments
        elif arguments is not None:
            call["args"] += json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))

    def completion(self) -> dict[str, Any]:
        """The reply as a chat completion: ``content`` null beside tool calls when the stream sent no text."""
        text = "".join(self.content)
        message: dict[str, Any] = {"role": "assistant", "content": text or (None if self.calls else "")}
        if self.reasoning:
            message["reasoning"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [
                {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["args"]}}
                for _, call in sorted(self.calls.items())
            ]
        choice = {"index": 0, "message": message, "finish_reason": self.finish_reason}
        completion: dict[str, Any] = {"object": "chat.completion"}
        completion.update({k: self.extra[k] for k in ("id", "model") if k in self.extra})
        completion["choices"] = [choice]
        if "usage" in self.extra:
            completion["usage"] = self.extra["usage"]
        return completion


def session_gone(exc: Exception) -> bool:
    """Whether ``exc`` (a botocore ``ClientError`` of ``InvokeEndpointWithResponseStream``, matched by shape) is
    SageMaker's answer for a session it no longer has: the turn should go through the front door, which reopens it."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return False
    error = response.get("Error", {})
    message = " ".join(str(p) for p in (error.get("Message"), response.get("OriginalMessage")) if p).lower()
    if "session" not in message or not any(word in message for word in SESSION_GONE_WORDS):
        return False
    if error.get("Code") == "ModelError":
        original = response.get("OriginalStatusCode")
        return isinstance(original, int) and 400 <= original < 500 and original != 429
    return bool(error.get("Code") == "ValidationError")


def stream_error(exc: Exception) -> FrontDoorError:
    """A failed stream call (botocore's error, matched by shape) as the FrontDoorError callers catch."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return FrontDoorError(
            status,
            str(error.get("Code", "StreamError")),
            str(error.get("Message", exc)),
            model_status=_int_or_none(response.get("OriginalStatusCode")),
        )
    return FrontDoorError(None, type(exc).__name__, str(exc))


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
