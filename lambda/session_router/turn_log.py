"""Each completed front-door turn, as one chat-completions JSON line, to Kinesis Data Firehose.

The second EAGLE dataset source (``TurnLog`` construct; ``source: front_door``): it does not depend on
Data Capture, and every record names the inference component that answered, so adapter traffic never
trains a base model's head. Called once per completed turn (``record_turn``); it never fails or slows
the turn beyond one ``PutRecord``: a turn it cannot log is counted (metric ``TurnsNotLogged`` with the
reason in the log) and the answer goes back as usual.

Record (one line, UTF-8, ``\\n``-terminated)::

    {"component": "<inference component>", "messages": [{"role": "system"|"user"|"assistant",
     "content": "..."}, ..., {"role": "assistant", "content": "<the answer>"}], "created_at": "<ISO time>"}

Turns whose request is not an OpenAI-style ``messages`` list of text turns, or whose reply carries no
text (``choices[0].message.content``, ``choices[0].text`` or ``generated_text``), are not logged.
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


def _answer(reply: Any) -> str | None:
    if isinstance(reply, list) and len(reply) == 1:
        reply = reply[0]
    if not isinstance(reply, dict):
        return None
    choices = reply.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return _text(message.get("content"))
        text = choices[0].get("text")
        return text if isinstance(text, str) else None
    generated = reply.get("generated_text")
    return generated if isinstance(generated, str) else None


def chat_record(
    component: str, request: Any, reply: Any, now: datetime | None = None
) -> tuple[dict[str, Any] | None, str]:
    """``(record, "")`` for a loggable turn, else ``(None, reason)``."""
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list) or not messages:
        return None, "request_not_chat"
    turns = []
    for message in messages:
        named = message.get("role") if isinstance(message, dict) else None
        role = _ROLES.get(named) if isinstance(named, str) else None  # a list or object is no role (unhashable)
        text = _text(message.get("content")) if role else None
        if role is None or text is None or message.get("tool_calls") or message.get("function_call"):
            return None, "request_not_text_chat"
        turns.append({"role": role, "content": text})
    if not any(turn["role"] == "user" for turn in turns):
        return None, "request_not_text_chat"
    answer = _answer(reply)
    if answer is None or not answer.strip():
        return None, "reply_without_text"
    turns.append({"role": "assistant", "content": answer})
    stamp = (now or datetime.now(UTC)).isoformat().replace("+00:00", "Z")
    return {"component": component, "messages": turns, "created_at": stamp}, ""


def record_turn(component: str, request: Any, reply: Any) -> bool:
    """Put one completed turn on the stream; True when it was accepted. Never raises."""
    stream = env.Environment().raw("TURN_LOG_STREAM")
    if not stream:
        return False
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
            return True
        except (ClientError, BotoCoreError) as error:
            reason = (
                f"firehose_error:{getattr(error, 'response', {}).get('Error', {}).get('Code', type(error).__name__)}"
            )
    logger.warning("turn not logged for EAGLE", extra={"reason": reason, "component": component})
    metrics.add_metric(name="TurnsNotLogged", unit=MetricUnit.Count, value=1)
    return False
