"""Training records as the builder writes them: ``{"messages": [...]}`` as one UTF-8 JSON line
(:func:`encode_record`, :func:`encode_record_fast`: the same bytes), every character a common line splitter
breaks at escaped so every reader sees one line (:func:`one_line`), and the check that a record is one this
builder would write (:func:`is_chat_record`).
"""

from __future__ import annotations

from json.encoder import encode_basestring  # the C string encoder json.dumps(ensure_ascii=False) uses
from typing import Any

from dataset_fast_json import orjson
from dataset_messages import Message
from dataset_skips import Skip


def encode_record(messages: list[Message]) -> bytes:
    """``[(role, content)...]`` -> ``{"messages":[{"role":..,"content":..}...]}\\n`` (one line, UTF-8).

    Byte for byte what ``json.dumps(record, ensure_ascii=False, separators=(",", ":"))`` writes,
    encoded as UTF-8 with U+0085, U+2028 and U+2029 escaped (:func:`one_line`), and what ``orjson.dumps`` writes
    (:func:`encode_record_fast`). Text with
    lone surrogates is skipped (``invalid_unicode``): it cannot be UTF-8 and strict readers reject it.
    """
    body = ",".join([f'{{"role":"{role}","content":{encode_basestring(content)}}}' for role, content in messages])
    try:
        return one_line(f'{{"messages":[{body}]}}\n'.encode())
    except UnicodeEncodeError:
        raise Skip("invalid_unicode") from None


def encode_record_fast(messages: list[Message]) -> bytes:
    """:func:`encode_record` with orjson (same bytes)."""
    try:
        return one_line(
            orjson.dumps({"messages": [{"role": role, "content": content} for role, content in messages]}) + b"\n"
        )
    except orjson.JSONEncodeError:  # a str with lone surrogates: not UTF-8
        raise Skip("invalid_unicode") from None


def is_chat_record(record: Any) -> bool:
    """True when ``record`` is a chat-completions training record this module would write: text turns, and the
    tool-calling turns :func:`encode_agent_record` writes (assistant ``tool_calls``, ``tool`` results)."""
    if not isinstance(record, dict) or set(record) != {"messages"}:
        return False
    messages = record["messages"]
    if not isinstance(messages, list) or len(messages) < 2:
        return False
    for message in messages:
        if not isinstance(message, dict) or not _is_written_message(message):
            return False
    last = messages[-1]
    answered = bool(last.get("tool_calls")) or (isinstance(last["content"], str) and bool(last["content"].strip()))
    return last["role"] == "assistant" and answered and any(m["role"] == "user" for m in messages)


def _is_written_message(message: dict[str, Any]) -> bool:
    keys, role = set(message), message.get("role")
    if role == "tool":
        return (
            keys == {"role", "tool_call_id", "content"}
            and isinstance(message["tool_call_id"], str)
            and isinstance(message["content"], str)
        )
    if role == "assistant" and "tool_calls" in message:
        calls = message["tool_calls"]
        return (
            keys == {"role", "content", "tool_calls"}
            and (message["content"] is None or isinstance(message["content"], str))
            and isinstance(calls, list)
            and bool(calls)
            and all(
                isinstance(c, dict)
                and set(c) == {"id", "type", "function"}
                and c["type"] == "function"
                and isinstance(c["function"], dict)
                and set(c["function"]) == {"name", "arguments"}
                and isinstance(c["function"]["name"], str)
                and isinstance(c["function"]["arguments"], str)
                for c in calls
            )
        )
    return (
        keys == {"role", "content"} and role in ("system", "user", "assistant") and isinstance(message["content"], str)
    )


#: The line breaks JSON writers leave raw inside strings, as UTF-8, each with its JSON escape. Every other
#: character a common line splitter breaks at is below U+0020 (LF, CR, U+000B, U+000C, U+001C-U+001E), and
#: ``json.dumps`` and orjson always escape those (``\n``, ``\r``, ``\u000b``, ``\f``, ``\u001c``...).
_NEL, _LINE_SEPARATOR, _PARAGRAPH_SEPARATOR = b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9"


def one_line(line: bytes) -> bytes:
    """``line`` with U+0085 (NEL), U+2028 and U+2029 written as ``\\u0085`` / ``\\u2028`` / ``\\u2029``.

    JSON allows them raw inside strings and ``json.dumps(ensure_ascii=False)`` and orjson leave them raw, but
    ``str.splitlines`` breaks a line at all three (and JavaScript before ES2019 at the last two); escaped, the
    record is the same JSON value and one line for every reader. They occur only inside strings, and in valid
    UTF-8 these bytes are only ever those characters (``\\xc2`` and ``\\xe2`` are lead bytes, never inside
    another character). A line without them is returned as it is."""
    if _NEL in line:
        line = line.replace(_NEL, b"\\u0085")
    if b"\xe2\x80" in line:
        line = line.replace(_LINE_SEPARATOR, b"\\u2028").replace(_PARAGRAPH_SEPARATOR, b"\\u2029")
    return line
