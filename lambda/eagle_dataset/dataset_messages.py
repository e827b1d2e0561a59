"""Chat messages of a request: OpenAI-style ``messages`` lists read as ``(role, content)`` turns of text
(:func:`chat_messages`, and :func:`plain_chat` for the common request, as the output's message objects), with
the roles a training record may hold (``ROLE_MAP``) and the text of a message's content (:func:`content_text`).
"""

from __future__ import annotations

from typing import Any

from dataset_skips import Skip

#: One chat turn while converting: (role, content). Written out as {"role", "content"}.
Message = tuple[str, str]

ROLE_MAP = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
_TEXT_PART_TYPES = frozenset(("text", "input_text", "output_text"))


def _is_text_part(kind: Any) -> bool:
    # only a str can be one of them; a list or object would raise TypeError (unhashable) in the set
    return isinstance(kind, str) and kind in _TEXT_PART_TYPES


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and _is_text_part(part.get("type")) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                raise Skip("non_text_content")
        return "\n".join(texts)
    raise Skip("unsupported_request_shape")


def chat_messages(messages: Any) -> list[Message]:
    if not isinstance(messages, list) or not messages:
        raise Skip("unsupported_request_shape")
    result: list[Message] = []
    for message in messages:
        if not isinstance(message, dict):
            raise Skip("unsupported_request_shape")
        name = message.get("role")
        role = ROLE_MAP.get(name) if isinstance(name, str) else None  # a list or object is unhashable: no TypeError
        if role is None or message.get("tool_calls") or message.get("function_call"):
            raise Skip("unsupported_message_role" if isinstance(name, str) else "unsupported_request_shape")
        result.append((role, content_text(message.get("content"))))
    if not any(role == "user" for role, _ in result):
        raise Skip("unsupported_request_shape")
    return result


def plain_chat(messages: Any) -> list[dict[str, str]] | None:
    """:func:`chat_messages` for the common request, as the output's message objects: every message an
    object with a known role, text ``content`` and no tool call, one of them the user's. Anything else
    returns None and :func:`chat_messages` decides (the same result or the same skip reason)."""
    if messages.__class__ is not list or not messages:
        return None
    result: list[dict[str, str]] = []
    append = result.append
    user = False
    for message in messages:
        if message.__class__ is not dict:
            return None
        role = message.get("role")
        content = message.get("content")
        if role.__class__ is not str or content.__class__ is not str:
            return None
        role = ROLE_MAP.get(role)
        if role is None or message.get("tool_calls") or message.get("function_call"):
            return None
        if role == "user":
            user = True
        append({"role": role, "content": content})
    return result if user else None
