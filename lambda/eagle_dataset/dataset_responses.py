"""LLM response shapes read as the generated text: one JSON document (chat completions, completions,
``generated_text``, JumpStart ``generation``) or a stream (server-sent events or JSON lines from TGI, LMI, vLLM
and OpenAI-style servers), with error answers told apart (:func:`response_to_text`); :func:`plain_response` and
:func:`sse_text_fast` read the common shapes in one pass and defer on anything else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from dataset_fast_json import orjson
from dataset_messages import content_text
from dataset_skips import Skip


def is_error(obj: dict[str, Any]) -> bool:
    return (
        bool(obj.get("error")) or obj.get("object") == "error" or ("ErrorCode" in obj and "generated_text" not in obj)
    )


def _failed_generation(obj: dict[str, Any]) -> bool:
    """LMI's answer when generation failed: ``"generated_text": ""`` with ``details.finish_reason`` ``error``
    (the last line of a stream, or the whole response). Only the empty one: text generated before a
    failure is the model's own output and is kept."""
    details = obj.get("details")
    return obj.get("generated_text") == "" and isinstance(details, dict) and details.get("finish_reason") == "error"


def _response_from_object(obj: Any) -> str | None:
    if isinstance(obj, list):
        if len(obj) != 1:
            raise Skip("unsupported_response_shape" if obj else "empty_response")
        obj = obj[0]
    if isinstance(obj, str):
        return obj
    if not isinstance(obj, dict):
        return None
    if is_error(obj):
        raise Skip("error_response")
    choices = obj.get("choices")
    if isinstance(choices, list):
        if not choices:
            raise Skip("empty_response")
        choice = choices[0]
        if not isinstance(choice, dict):
            return None
        message = choice.get("message")
        if isinstance(message, dict):
            content = message.get("content")
            if message.get("tool_calls") or message.get("function_call"):
                raise Skip("unsupported_message_role")  # tool calls, with or without text: agent_reply's
            if content is None:
                raise Skip("empty_response")
            try:
                return content_text(content)
            except Skip:
                return None
        if isinstance(choice.get("text"), str):
            return choice["text"]
        return None
    generated = obj.get("generated_text")
    if isinstance(generated, str):
        if not generated and _failed_generation(obj):
            raise Skip("error_response")
        return generated
    if isinstance(generated, list) and len(generated) == 1 and isinstance(generated[0], str):
        return generated[0]
    generation = obj.get("generation")  # JumpStart Llama 2: [{"generation": "text"}] or a chat message
    if isinstance(generation, str):
        return generation
    if isinstance(generation, dict) and generation.get("role", "assistant") == "assistant":
        content = generation.get("content")
        return content if isinstance(content, str) else None
    return None


def plain_response(obj: Any) -> str | None:
    """:func:`response_to_text` of one JSON document for the common answers (a chat completion, a
    completion, generated text) that are not blank. Anything else returns None and
    :func:`response_to_text` decides (the same text or the same skip reason)."""
    if obj.__class__ is list:
        if len(obj) != 1:
            return None
        obj = obj[0]
    if obj.__class__ is not dict or obj.get("error") or obj.get("object") == "error" or "ErrorCode" in obj:
        return None
    choices = obj.get("choices")
    if choices.__class__ is list:
        if not choices:
            return None
        choice = choices[0]
        if choice.__class__ is not dict:
            return None
        message = choice.get("message")
        if message.__class__ is dict and message.get("tool_calls"):
            return None  # a tool call: response_to_text says so
        text = message.get("content") if message.__class__ is dict else choice.get("text")
    else:
        text = obj.get("generated_text")
        if text.__class__ is list and len(text) == 1:
            text = text[0]
    if text.__class__ is str and text and not text.isspace():  # isspace: what strip() removes, without a copy
        return text
    return None


def stream_lines(text: str) -> list[str]:
    """The non-blank lines of a streamed body, each stripped.

    Lines end at LF, CRLF or a lone CR (the server-sent events terminators; JSON Lines uses LF), never
    at the other line separators ``str.splitlines`` takes (U+2028, U+2029, U+0085): JSON writers (TGI's,
    vLLM's, Python's with ``ensure_ascii=False``) leave those raw inside strings, as only characters
    below U+0020 must be escaped, and a token holding one would cut its event in two."""
    if "\r" in text:  # a raw CR is never inside a JSON string: it ends a line
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return [line for line in map(str.strip, text.split("\n")) if line]


def _response_from_stream(text: str, loads: Callable[[str], Any] = json.loads) -> str | None:
    """Server-sent events or JSON lines from a streaming invocation, joined into one text."""
    lines = stream_lines(text)
    if all(line.startswith("data:") for line in lines):  # plain SSE: the same result, in comprehensions
        payloads = [payload for payload in (line[5:].lstrip() for line in lines) if payload and payload != "[DONE]"]
    else:
        payloads = []
        append = payloads.append
        for line in lines:
            if line.startswith("data:"):
                line = line[5:].lstrip()
                if line and line != "[DONE]":
                    append(line)
            elif line[0] != ":" and not line.startswith(("event:", "id:", "retry:")) and line != "[DONE]":
                append(line)
    if not payloads:
        return None
    try:  # one parse for the whole stream: per-token payloads are tiny and many
        chunks = loads("[" + ",".join(payloads) + "]")
    except (ValueError, RecursionError):
        return None
    if len(chunks) != len(payloads):
        return None  # a payload held several values: not a stream of one document per line
    pieces: list[str] = []
    final: str | None = None
    for chunk in chunks:
        if not isinstance(chunk, dict):
            return None
        if (
            chunk.get("error")
            or chunk.get("object") == "error"
            or ("ErrorCode" in chunk and "generated_text" not in chunk)
        ):
            raise Skip("error_response")  # is_error, inlined: called once per token
        generated = chunk.get("generated_text")
        if isinstance(generated, str):
            if not generated and _failed_generation(chunk):
                raise Skip("error_response")
            final = generated
            continue
        token = chunk.get("token")
        if isinstance(token, dict) and isinstance(token.get("text"), str):
            if not token.get("special"):
                pieces.append(token["text"])
            continue
        choices = chunk.get("choices")
        if isinstance(choices, list):
            if choices and isinstance(choices[0], dict):
                delta = choices[0].get("delta")
                if isinstance(delta, dict) and (delta.get("tool_calls") or delta.get("function_call")):
                    raise Skip("unsupported_message_role")  # a streamed tool call: agent_reply's
                if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                    pieces.append(delta["content"])
                elif isinstance(choices[0].get("text"), str):
                    pieces.append(choices[0]["text"])
            continue
        if "generated_text" not in chunk:
            return None  # LMI/TGI chunks without a token carry "generated_text": null
    return final if final is not None else "".join(pieces)


#: A JSON escape that could spell an ASCII letter, digit or "_" (a key written as "\u0065rror", say).
_LETTER_ESCAPE = re.compile(r"\\u00[4-7][0-9a-fA-F]")


def sse_text_fast(text: str) -> str | None:
    """:func:`_response_from_stream` for plain server-sent events of OpenAI-style chunks (``choices``
    with a ``delta`` or ``text``), with orjson and without per-line Python steps. None: not that
    shape, or not sure; :func:`_response_from_stream` then decides. Never a different text."""
    lines = stream_lines(text)
    if not lines:
        return None
    joined = "\n".join(lines)
    # every line starts with "data:" (lines hold no "\n": each boundary is one "\n"), as all(...) checks
    if not joined.startswith("data:") or joined.count("\ndata:") != len(lines) - 1:
        return None
    payloads = list(map(str.lstrip, joined[5:].split("\ndata:")))  # line[5:].lstrip() of every line
    if payloads[-1] == "[DONE]":
        payloads.pop()
    if not payloads or "" in payloads or "[DONE]" in payloads:
        return None  # the general loop drops those wherever they are
    array = "[" + ",".join(payloads) + "]"  # the same text _response_from_stream parses
    # Keys "error", "ErrorCode", "generated_text", "token", "tool_calls", "function_call" and the value
    # "error" change what a chunk means. Without those strings in the text (as whole JSON strings, so a
    # token " error" does not count) and without escapes that could spell them, none occurs and only
    # "choices" matters.
    if (
        '"error"' in array
        or '"ErrorCode"' in array
        or '"generated_text"' in array
        or '"token"' in array
        or '"tool_calls"' in array
        or '"function_call"' in array
        or _LETTER_ESCAPE.search(array)
    ):
        return None
    try:
        chunks = orjson.loads(array)
    except orjson.JSONDecodeError:
        return None
    if len(chunks) != len(payloads):
        return None
    pieces: list[str] = []
    append = pieces.append
    for chunk in chunks:
        if chunk.__class__ is not dict:
            return None
        choices = chunk.get("choices")
        if choices.__class__ is not list:
            return None
        if choices:
            choice = choices[0]
            if choice.__class__ is dict:
                delta = choice.get("delta")
                if delta.__class__ is dict:
                    content = delta.get("content")
                    if content.__class__ is str:
                        append(content)
                        continue
                piece = choice.get("text")
                if piece.__class__ is str:
                    append(piece)
    return "".join(pieces)


def response_to_text(
    response: Any, *, is_json: bool = True, plain_text_ok: bool = False, loads: Callable[[str], Any] = json.loads
) -> str:
    """Known LLM response shapes -> the generated text. Raises ``Skip`` otherwise.

    ``is_json`` false means ``response`` is payload text that is not one JSON document: a
    stream (server-sent events or JSON lines) or, if ``plain_text_ok``, the text itself.
    """
    if not is_json:
        if not response.strip():  # an empty body (a stream whose output was not captured, say): no text
            raise Skip("empty_response")
        streamed = _response_from_stream(response, loads)
        if streamed is None:
            if not plain_text_ok:
                raise Skip("unsupported_response_shape")
            streamed = response
        text = streamed
    else:
        found = _response_from_object(response)
        if found is None:
            raise Skip("unsupported_response_shape")
        text = found
    if not text.strip():
        raise Skip("empty_response")
    return text
