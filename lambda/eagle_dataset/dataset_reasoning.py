"""The model's reasoning in a training record: written inside the think tags its chat template renders, or left out.

A reasoning model served with a reasoning parser answers with ``reasoning_content`` (or ``reasoning``) beside
``content``: the text it generated between its think tags, which the parser moved out of the content. The draft
head is trained to predict what the model generates, and for such a model most generated tokens are reasoning, so a
record without it trains the head on a small share of the output. The optimization job's records ("OpenAI Chat
Completions", ``ModelSpeculativeDecodingConfig.TrainingDataSource``) have no documented reasoning field, so with
``REASONING_TAGS`` set (``<open>|<close>``, the construct sets it for the parsers whose tags it knows) the reasoning
is written back where the model generated it: at the start of the assistant's content, as the model's chat template
renders a last assistant turn (``<think>\\n`` reasoning ``\\n</think>\\n\\n`` content, Qwen3 and DeepSeek-R1 alike).
Unset, it is left out and counted (``dropped.reasoning_content``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dataset_responses import stream_lines

ENV = "REASONING_TAGS"
_FIELDS = ("reasoning_content", "reasoning")


def tags_from(value: str | None) -> tuple[str, str] | None:
    """``<think>|</think>`` -> ``("<think>", "</think>")``; None when unset or not two non-empty tags."""
    if not value:
        return None
    opening, _, closing = value.partition("|")
    if not opening or not closing or "|" in closing:
        raise ValueError(f"{ENV} must be '<open>|<close>', two non-empty tags, got {value!r}")
    return opening, closing


def _of_message(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    for name in _FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def reasoning_of(response: Any, *, is_json: bool, loads: Callable[[str], Any]) -> str:
    """The reasoning of one captured response: a chat completion's message, or a stream's deltas joined ("" when
    it holds none, or is not a shape that carries it)."""
    if is_json:
        if isinstance(response, list) and len(response) == 1:
            response = response[0]
        choices = response.get("choices") if isinstance(response, dict) else None
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            return _of_message(choices[0].get("message"))
        return ""
    if not isinstance(response, str) or "reasoning" not in response:
        return ""  # the common case, without a parse
    pieces: list[str] = []
    for line in stream_lines(response):
        payload = line[5:].lstrip() if line.startswith("data:") else line
        if not payload.startswith("{"):
            continue
        try:
            chunk = loads(payload)
        except (ValueError, RecursionError):
            return ""
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            pieces.append(_of_message(choices[0].get("delta")))
    return "".join(pieces)


def with_reasoning(content: str | None, reasoning: str, tags: tuple[str, str]) -> str:
    """``content`` with ``reasoning`` before it, inside ``tags``, as a chat template renders the last turn."""
    opening, closing = tags
    return f"{opening}\n{reasoning.strip(chr(10))}\n{closing}\n\n{(content or '').lstrip(chr(10))}"
