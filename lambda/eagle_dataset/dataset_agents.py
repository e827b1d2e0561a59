"""Agent turns: tool calls and tool results. Agents send OpenAI chat messages with assistant ``tool_calls`` and
``tool`` results, and the model answers tool calls (vLLM's tool-call parser) instead of text. The optimization
job takes "OpenAI Chat Completions" records (ModelSpeculativeDecodingConfig.TrainingDataSource), a format that
holds both, so such a turn is written in that form: ``{"role": "assistant", "content": <text or null>,
"tool_calls": [{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}]}`` and ``{"role":
"tool", "tool_call_id", "content"}``. Two parts of the traffic are not written, and each run counts them per
component (``dropped`` in summary.json): the request's ``tools`` definitions (AWS documents records as
``messages`` only) and the model's reasoning (``reasoning_content`` / ``reasoning``: no documented field).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dataset_messages import ROLE_MAP, content_text
from dataset_records import one_line
from dataset_responses import is_error, stream_lines
from dataset_skips import Skip

#: What a tool-calling record drops, counted per component: ``dropped.<name>`` in summary.json.
DROPPED_PARTS: tuple[str, ...] = ("tool_definitions", "reasoning_content")


def _tool_calls(calls: Any) -> list[dict[str, Any]]:
    """OpenAI ``tool_calls``, normalised to ``{"id", "type": "function", "function": {"name", "arguments"}}``."""
    if not isinstance(calls, list) or not calls:
        raise Skip("unsupported_message_role")
    result = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or call.get("type", "function") != "function":
            raise Skip("unsupported_message_role")
        name, arguments, ident = function.get("name"), function.get("arguments", ""), call.get("id")
        if isinstance(arguments, (dict, list)):
            arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        if not isinstance(name, str) or not name or not isinstance(arguments, str) or not isinstance(ident, str):
            raise Skip("unsupported_message_role")
        result.append({"id": ident, "type": "function", "function": {"name": name, "arguments": arguments}})
    return result


def agent_messages(messages: Any) -> list[dict[str, Any]]:
    """Chat messages that may hold assistant ``tool_calls`` and ``tool`` results -> the record's messages.

    Text content is kept as :func:`chat_messages` keeps it; an assistant message's reasoning is not written.
    Raises ``Skip`` for what no training record can hold (legacy ``function_call``, unknown roles, a tool
    result without its call id, non-text content).
    """
    if not isinstance(messages, list) or not messages:
        raise Skip("unsupported_request_shape")
    result: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict):
            raise Skip("unsupported_request_shape")
        name = message.get("role")
        if not isinstance(name, str):
            raise Skip("unsupported_request_shape")
        if message.get("function_call"):
            raise Skip("unsupported_message_role")
        if name == "tool":
            ident = message.get("tool_call_id")
            if not isinstance(ident, str) or not ident:
                raise Skip("unsupported_message_role")
            result.append({"role": "tool", "tool_call_id": ident, "content": content_text(message.get("content"))})
            continue
        role = ROLE_MAP.get(name)
        if role is None:
            raise Skip("unsupported_message_role")
        if role == "assistant" and message.get("tool_calls"):
            content = message.get("content")
            text = None if content is None or content == "" else content_text(content)
            result.append({"role": "assistant", "content": text, "tool_calls": _tool_calls(message["tool_calls"])})
            continue
        result.append({"role": role, "content": content_text(message.get("content"))})
    if not any(m["role"] == "user" for m in result):
        raise Skip("unsupported_request_shape")
    return result


def _stream_reply(text: str, loads: Callable[[str], Any]) -> tuple[str, list[dict[str, Any]], str]:
    """A streamed chat completion -> (text, tool calls joined by index, the streamed reasoning joined)."""
    lines = stream_lines(text)
    payloads = []
    for line in lines:
        if line.startswith("data:"):
            line = line[5:].lstrip()
        if line and line != "[DONE]" and line[0] != ":" and not line.startswith(("event:", "id:", "retry:")):
            payloads.append(line)
    try:
        chunks = loads("[" + ",".join(payloads) + "]") if payloads else []
    except (ValueError, RecursionError):
        raise Skip("unsupported_response_shape") from None
    if not chunks or len(chunks) != len(payloads):
        raise Skip("unsupported_response_shape")
    pieces: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    reasoning: list[str] = []
    for chunk in chunks:
        if not isinstance(chunk, dict) or not isinstance(chunk.get("choices"), list):
            raise Skip("unsupported_response_shape")
        if chunk.get("error") or chunk.get("object") == "error":
            raise Skip("error_response")
        if not chunk["choices"]:
            continue  # the usage chunk
        delta = chunk["choices"][0].get("delta") if isinstance(chunk["choices"][0], dict) else None
        if not isinstance(delta, dict):
            raise Skip("unsupported_response_shape")
        if isinstance(delta.get("content"), str):
            pieces.append(delta["content"])
        piece = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(piece, str):
            reasoning.append(piece)
        for position, piece in enumerate(delta.get("tool_calls") or []):
            if not isinstance(piece, dict):
                raise Skip("unsupported_message_role")
            index = piece.get("index", position)
            found = piece.get("function")
            function: dict[str, Any] = found if isinstance(found, dict) else {}
            call = calls.setdefault(
                index if isinstance(index, int) else position,
                {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
            )
            call["id"] = call["id"] or piece.get("id")
            for key in ("name", "arguments"):
                if isinstance(function.get(key), str):
                    call["function"][key] += function[key]
    return "".join(pieces), [calls[i] for i in sorted(calls)], "".join(reasoning)


def agent_reply(
    response: Any, *, is_json: bool, loads: Callable[[str], Any] = json.loads
) -> tuple[dict[str, Any], str]:
    """A chat completion (or its stream) that may call tools -> (the assistant message, its reasoning: "" when none).

    The message has ``content`` (text, or None beside tool calls) and ``tool_calls`` when the model called
    tools. Raises ``Skip`` when the answer is neither text nor tool calls.
    """
    if is_json:
        if isinstance(response, list) and len(response) == 1:
            response = response[0]
        if not isinstance(response, dict):
            raise Skip("unsupported_response_shape")
        if is_error(response):
            raise Skip("error_response")
        choices = response.get("choices")
        if not isinstance(choices, list) or not choices:
            raise Skip("empty_response" if choices == [] else "unsupported_response_shape")
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            raise Skip("unsupported_response_shape")
        if message.get("function_call"):
            raise Skip("unsupported_message_role")
        content = message.get("content")
        text = "" if content is None else content_text(content)
        raw_calls = message.get("tool_calls") or []
        calls = _tool_calls(raw_calls) if raw_calls else []
        found = message.get("reasoning_content") or message.get("reasoning")
        reasoning = found if isinstance(found, str) else ""
    else:
        if not response.strip():
            raise Skip("empty_response")
        text, calls, reasoning = _stream_reply(response, loads)
        calls = _tool_calls(calls) if calls else []
    if calls:
        return {"role": "assistant", "content": text or None, "tool_calls": calls}, reasoning
    if not text.strip():
        raise Skip("empty_response")
    return {"role": "assistant", "content": text}, reasoning


def encode_agent_record(messages: list[dict[str, Any]]) -> bytes:
    """``{"messages": [...]}`` of a tool-calling turn, one line (the same writer on both paths)."""
    try:
        line = json.dumps({"messages": messages}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        raise Skip("invalid_unicode") from None
    return one_line(line + b"\n")
