"""The OpenAI chat-completions shapes LMI's messages API speaks, read and written without any framework.

vLLM answers tool calls as ``message.tool_calls`` (``arguments`` a JSON string) when the model was served with
a tool-call parser (``tools:`` in the model's settings), and the model's thinking as ``reasoning`` (in the
message, and in each stream delta; vLLM 0.26's name, ``reasoning_content`` in older vLLM, which for a while sent
both with the same text) when served with a reasoning parser (``reasoning:``). Both connectors read them here, so
they agree on every edge: arguments that are not JSON, a stream that splits a call over many chunks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

GENERATION_KEYS = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "seed",
    "n",
    "presence_penalty",
    "frequency_penalty",
    "logprobs",
    "top_logprobs",
    "response_format",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "stream_options",
    "top_k",
    "min_p",
    "repetition_penalty",
    "chat_template_kwargs",
    "skip_special_tokens",
)
"""Request fields a connector passes on to the model (OpenAI's, and vLLM's extra sampling fields)."""


@dataclass
class ToolCall:
    """One tool call: ``arguments`` parsed, or ``error`` saying why the text did not parse."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str
    error: str | None = None


@dataclass
class Reply:
    """What the model said in one completion (or a stream, merged)."""

    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] | None = None
    model: str | None = None
    id: str | None = None


REASONING_KEYS = ("reasoning", "reasoning_content")
"""Where vLLM puts the model's thinking: ``reasoning`` (vLLM 0.26), ``reasoning_content`` (older vLLM)."""


def reasoning_of(message: Mapping[str, Any]) -> str | None:
    """``reasoning`` (vLLM 0.26's name), else ``reasoning_content`` (older vLLM's), whichever the message has."""
    for key in REASONING_KEYS:
        value = message.get(key)
        if isinstance(value, str):
            return value
    return None


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as a dict, and None; or ``{}`` and why they are not a JSON object."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or raw == "":
        return {}, None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as exc:
        return {}, f"arguments are not JSON: {exc}"
    if not isinstance(value, dict):
        return {}, f"arguments are JSON but not an object: {type(value).__name__}"
    return value, None


def tool_call(call: Mapping[str, Any], index: int) -> ToolCall:
    function = call.get("function") or {}
    raw = function.get("arguments", "")
    arguments, error = parse_arguments(raw)
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    return ToolCall(
        id=str(call.get("id") or f"call_{index}"),
        name=str(function.get("name") or ""),
        arguments=arguments,
        raw_arguments=text,
        error=error,
    )


def usage_of(completion: Mapping[str, Any]) -> dict[str, int] | None:
    usage = completion.get("usage")
    if not isinstance(usage, dict):
        return None
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {key: int(usage[key]) for key in keys if isinstance(usage.get(key), int)}


def read_completion(completion: Mapping[str, Any]) -> Reply:
    """The first choice of a chat completion."""
    choice = completion["choices"][0]
    message = choice.get("message") or {}
    content = message.get("content")
    return Reply(
        content=content if isinstance(content, str) else "",
        reasoning=reasoning_of(message),
        tool_calls=[tool_call(c, i) for i, c in enumerate(message.get("tool_calls") or [])],
        finish_reason=choice.get("finish_reason"),
        usage=usage_of(completion),
        model=completion.get("model"),
        id=completion.get("id"),
    )


@dataclass
class StreamDelta:
    """One chunk's part: text, reasoning, tool-call pieces (``index``, ``id``, ``name``, ``arguments`` text)."""

    content: str = ""
    reasoning: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] | None = None


def read_chunk(chunk: Mapping[str, Any]) -> StreamDelta:
    delta = StreamDelta(usage=usage_of(chunk))
    choices = chunk.get("choices") or []
    if not choices:
        return delta
    choice = choices[0]
    part = choice.get("delta") or {}
    content = part.get("content")
    delta.content = content if isinstance(content, str) else ""
    delta.reasoning = reasoning_of(part) or ""
    for position, call in enumerate(part.get("tool_calls") or []):
        function = call.get("function") or {}
        arguments = function.get("arguments")
        delta.tool_calls.append(
            {
                "index": call.get("index", position),
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": arguments
                if isinstance(arguments, str)
                else (json.dumps(arguments, ensure_ascii=False) if arguments is not None else ""),
            }
        )
    delta.finish_reason = choice.get("finish_reason")
    return delta


def merge_stream(deltas: Iterable[StreamDelta]) -> Reply:
    """A whole reply from its stream: text joined, each tool call's pieces joined by ``index``."""
    reply = Reply()
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for delta in deltas:
        reply.content += delta.content
        if delta.reasoning:
            reasoning.append(delta.reasoning)
        for piece in delta.tool_calls:
            call = calls.setdefault(piece["index"], {"id": None, "name": "", "arguments": ""})
            call["id"] = call["id"] or piece["id"]
            call["name"] += piece["name"] or ""
            call["arguments"] += piece["arguments"] or ""
        reply.finish_reason = delta.finish_reason or reply.finish_reason
        reply.usage = delta.usage or reply.usage
    reply.reasoning = "".join(reasoning) if reasoning else None
    reply.tool_calls = [
        tool_call({"id": c["id"], "function": {"name": c["name"], "arguments": c["arguments"]}}, i)
        for i, c in sorted(calls.items())
    ]
    return reply


def openai_tool_choice(choice: Any, tool_names: list[str]) -> Any:
    """A framework's ``tool_choice`` in OpenAI's terms: ``auto``, ``none``, ``required`` or one named function.

    ``any`` and ``True`` (LangChain's "call some tool") become ``required``; a tool's name becomes
    ``{"type": "function", "function": {"name": ...}}``.
    """
    if choice is None or choice == "auto":
        return None if choice is None else "auto"
    if choice in ("any", "required", True):
        return "required"
    if choice in ("none", False):
        return "none"
    if isinstance(choice, str):
        if tool_names and choice not in tool_names:
            raise ValueError(f"tool_choice {choice!r} names no bound tool ({', '.join(tool_names)})")
        return {"type": "function", "function": {"name": choice}}
    if isinstance(choice, dict):
        return choice
    raise ValueError(f"tool_choice {choice!r}: give auto, none, any/required, or a tool's name")


def request_body(
    messages: list[dict[str, Any]], parameters: Mapping[str, Any], extra_body: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The chat-completions body: the messages, the known generation fields that are set, then ``extra_body``."""
    body: dict[str, Any] = {"messages": messages}
    for key in GENERATION_KEYS:
        value = parameters.get(key)
        if value is not None:
            body[key] = value
    body.update(extra_body or {})
    return body
