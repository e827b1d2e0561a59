"""The formats a user-supplied EAGLE dataset may be in (ShareGPT, OpenAI chat, OpenAI completions JSONL), and
which one a record is in or what is wrong with it (:func:`detect_dataset_format`).
"""

from __future__ import annotations

from typing import Any

from dataset_messages import content_text
from dataset_skips import Skip

DATASET_FORMATS: dict[str, str] = {
    "sharegpt": '{"conversations": [{"from": "human"|"gpt"|"system", "value": "..."}]}',
    "openai_chat": '{"messages": [{"role": "system"|"user"|"assistant", "content": "..."}]}',
    "openai_completions": '{"prompt": "...", "completion": "..."}',
}


def detect_dataset_format(record: Any) -> tuple[str | None, str]:
    """Return ``(format, "")`` for a valid training record, else ``(None, problem)``."""
    if not isinstance(record, dict):
        return None, f"a JSON {type(record).__name__} instead of an object"
    if "conversations" in record:
        turns = record["conversations"]
        if not isinstance(turns, list) or not turns:
            return None, '"conversations" must be a non-empty list'
        for index, turn in enumerate(turns):
            if (
                not isinstance(turn, dict)
                or not isinstance(turn.get("from"), str)
                or not isinstance(turn.get("value"), str)
            ):
                return None, f'"conversations"[{index}] must be an object with string "from" and "value"'
        return "sharegpt", ""
    if "messages" in record:
        messages = record["messages"]
        if not isinstance(messages, list) or not messages:
            return None, '"messages" must be a non-empty list'
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") not in ("system", "developer", "user", "assistant"):
                return None, f'"messages"[{index}] must have "role" system, user or assistant'
            try:
                content_text(message.get("content"))
            except Skip:
                return None, f'"messages"[{index}]."content" must be a string or a list of text parts'
        return "openai_chat", ""
    if "prompt" in record or "completion" in record:
        if not isinstance(record.get("prompt"), str) or not isinstance(record.get("completion"), str):
            return None, '"prompt" and "completion" must both be strings'
        return "openai_completions", ""
    return None, 'an object without "conversations", "messages" or "prompt"/"completion"'
