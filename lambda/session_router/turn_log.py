"""Each completed front-door turn, as one chat-completions JSON line, to Kinesis Data Firehose.

The second EAGLE dataset source (``TurnLog`` construct; ``source: front_door``): it does not depend on
Data Capture, and every record names the inference component that answered, so adapter traffic never
trains a base model's head. Called once per completed turn (``record_turn``); it never fails or slows
the turn beyond one ``PutRecord``: a turn it cannot log is counted (metric ``TurnsNotLogged`` with the
reason in the log) and the answer goes back as usual.

Record (one line, UTF-8, ``\\n``-terminated)::

    {"component": "<inference component>", "messages": [{"role": "system"|"user"|"assistant",
     "content": "..."}, ..., {"role": "assistant", "content": "<the answer>"}], "created_at": "<ISO time>"}

Agent turns keep their tool calls in the OpenAI chat-completions shape the EAGLE dataset builder writes: an
assistant message ``{"role": "assistant", "content": <text or null>, "tool_calls": [{"id", "type": "function",
"function": {"name", "arguments": <JSON text>}}]}`` (the request's history, and the reply's
``choices[0].message.tool_calls`` as vLLM returns them) and tool results ``{"role": "tool", "tool_call_id",
"content"}``. What a logged record leaves out is named in its ``"dropped"`` list (``tool_definitions``: the
request's ``tools``; ``reasoning_content``: the reply's reasoning), which the dataset builder counts.

A turn is not logged (reason in the log, metric ``TurnsNotLogged``) when its request is not an OpenAI-style
``messages`` list (``request_not_chat``), holds non-text content, unknown roles or no user turn
(``request_not_text_chat``), a tool call or tool result the record cannot hold (legacy ``function_call``, no id,
no function name: ``request_malformed_tool_call``), or when the reply holds such a tool call
(``reply_malformed_tool_call``) or neither text nor tool calls (``reply_without_answer``; text is read from
``choices[0].message.content``, ``choices[0].text`` or ``generated_text``).

Streamed turns go from the client straight to ``InvokeEndpointWithResponseStream``; the client then sends the
reply it assembled from the stream (a chat completion: text, reasoning, tool calls) to ``POST /log``, which checks
it with this same code (``log_turn``) and writes the same record shape, so the dataset builder sees one kind of
record. A buffered turn that cannot be logged is still answered; a ``/log`` that cannot be logged answers why.
Environment: ``TURN_LOG_STREAM`` (the delivery stream's name; unset = logging off).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError
from llm_cdk_shared import clients, env

logger = Logger(child=True)
metrics = Metrics()

#: Firehose's largest record (1,000 KiB), less nothing: a larger turn is not logged.
MAX_RECORD_BYTES = 1000 * 1024
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


# One quick retry: the turn's answer waits for this call.
_firehose = clients.client_getter(
    "firehose", retries={"mode": "standard", "max_attempts": 2}, connect_timeout=2, read_timeout=5
)


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if (
                isinstance(part, dict)
                and part.get("type") in ("text", "input_text")
                and isinstance(part.get("text"), str)
            ):
                parts.append(part["text"])
            else:
                return None  # images, audio, tool parts: not a text turn
        return "\n".join(parts)
    return None


def _tool_calls(calls: Any) -> list[dict[str, Any]] | None:
    """OpenAI ``tool_calls`` -> ``[{"id", "type": "function", "function": {"name", "arguments"}}]``; None when
    one is not a function call with an id, a name and JSON-text (or object) arguments."""
    if not isinstance(calls, list) or not calls:
        return None
    result = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or call.get("type", "function") != "function":
            return None
        name, arguments, ident = function.get("name"), function.get("arguments", ""), call.get("id")
        if isinstance(arguments, (dict, list)):
            arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        if not (isinstance(name, str) and name and isinstance(arguments, str) and isinstance(ident, str) and ident):
            return None
        result.append({"id": ident, "type": "function", "function": {"name": name, "arguments": arguments}})
    return result


def _message(message: Any) -> tuple[dict[str, Any] | None, str]:
    """One request message -> ``(its record message, "")``, or ``(None, reason)``."""
    named = message.get("role") if isinstance(message, dict) else None
    if not isinstance(named, str):
        return None, "request_not_text_chat"
    content = message.get("content")
    if message.get("function_call") or named == "function":  # legacy functions: no call id to pair results with
        return None, "request_malformed_tool_call"
    if named == "tool":
        ident, text = message.get("tool_call_id"), _text(content)
        if not isinstance(ident, str) or not ident:
            return None, "request_malformed_tool_call"
        if text is None:
            return None, "request_not_text_chat"
        return {"role": "tool", "tool_call_id": ident, "content": text}, ""
    role = _ROLES.get(named)
    if role == "assistant" and message.get("tool_calls"):
        calls = _tool_calls(message["tool_calls"])
        text = None if content is None or content == "" else _text(content)
        if calls is None:
            return None, "request_malformed_tool_call"
        if text is None and content not in (None, ""):
            return None, "request_not_text_chat"
        return {"role": "assistant", "content": text, "tool_calls": calls}, ""
    text = _text(content) if role else None
    if role is None or text is None or message.get("tool_calls"):
        return None, "request_not_text_chat"
    return {"role": role, "content": text}, ""


def _answer(reply: Any) -> tuple[dict[str, Any] | None, str, bool]:
    """The reply -> ``(its assistant message, "", whether it reasoned)``, or ``(None, reason, False)``."""
    if isinstance(reply, list) and len(reply) == 1:
        reply = reply[0]
    if not isinstance(reply, dict):
        return None, "reply_without_answer", False
    text: str | None = None
    calls: list[dict[str, Any]] | None = None
    reasoned = False
    choices = reply.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            if message.get("function_call"):
                return None, "reply_malformed_tool_call", False
            text = _text(message.get("content"))
            if message.get("tool_calls"):
                calls = _tool_calls(message["tool_calls"])
                if calls is None:
                    return None, "reply_malformed_tool_call", False
            reasoned = bool(message.get("reasoning") or message.get("reasoning_content"))
        elif isinstance(choices[0].get("text"), str):
            text = choices[0]["text"]
    elif isinstance(reply.get("generated_text"), str):
        text = reply["generated_text"]
    if calls:
        return {"role": "assistant", "content": text or None, "tool_calls": calls}, "", reasoned
    if text is None or not text.strip():
        return None, "reply_without_answer", False
    return {"role": "assistant", "content": text}, "", reasoned


def chat_record(
    component: str, request: Any, reply: Any, now: datetime | None = None
) -> tuple[dict[str, Any] | None, str]:
    """``(record, "")`` for a loggable turn, else ``(None, reason)``."""
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list) or not messages:
        return None, "request_not_chat"
    turns = []
    for message in messages:
        turn, reason = _message(message)
        if turn is None:
            return None, reason
        turns.append(turn)
    if not any(turn["role"] == "user" for turn in turns):
        return None, "request_not_text_chat"
    answer, reason, reasoned = _answer(reply)
    if answer is None:
        return None, reason
    turns.append(answer)
    stamp = (now or datetime.now(UTC)).isoformat().replace("+00:00", "Z")
    record: dict[str, Any] = {"component": component, "messages": turns, "created_at": stamp}
    dropped = [
        name
        for name, left_out in (("tool_definitions", request.get("tools")), ("reasoning_content", reasoned))
        if left_out
    ]
    if dropped:
        record["dropped"] = dropped
    return record, ""


def enabled() -> bool:
    """Whether turns are logged (``TURN_LOG_STREAM`` set)."""
    return bool(env.Environment().raw("TURN_LOG_STREAM"))


def log_turn(component: str, request: Any, reply: Any) -> str:
    """Put one completed turn on the stream: ``""`` when it was accepted, else why not (``turn_log_off`` when
    logging is off; any other reason is counted as ``TurnsNotLogged`` and logged as a warning). Never raises."""
    stream = env.Environment().raw("TURN_LOG_STREAM")
    if not stream:
        return "turn_log_off"
    record, reason = chat_record(component, request, reply)
    data = b""
    if record is not None:
        try:
            data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        except (UnicodeEncodeError, ValueError):  # lone surrogates
            record, reason = None, "not_utf8"
        if len(data) > MAX_RECORD_BYTES:
            record, reason = None, "too_large"
    if record is not None:
        try:
            _firehose().put_record(DeliveryStreamName=stream, Record={"Data": data})
            return ""
        except (ClientError, BotoCoreError) as error:
            reason = (
                f"firehose_error:{getattr(error, 'response', {}).get('Error', {}).get('Code', type(error).__name__)}"
            )
    logger.warning("turn not logged for EAGLE", extra={"reason": reason, "component": component})
    metrics.add_metric(name="TurnsNotLogged", unit=MetricUnit.Count, value=1)
    return reason


def record_turn(component: str, request: Any, reply: Any) -> bool:
    """Put one completed buffered turn on the stream; True when it was accepted. Never raises."""
    return log_turn(component, request, reply) == ""
