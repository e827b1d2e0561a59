"""A captured reply's reasoning in the EAGLE training set: written back inside the model's think tags, or left out
and counted. Both converter paths (orjson and the standard library) are run on every case and must agree.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import load_handler_module
from support.agents import capture_line

converter_module = load_handler_module("eagle_dataset", "dataset_converter")
reasoning = load_handler_module("eagle_dataset", "dataset_reasoning")
conversion = load_handler_module("eagle_dataset", "dataset_conversion")

TAGS = ("<think>", "</think>")
THOUGHT = "The user greets me.\nI should greet back."
REQUEST = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 64}


def capture(response: Any, *, stream: bool = False) -> bytes:
    return capture_line(REQUEST, response, stream=stream, component="c")


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", **message}}]}


def sse(deltas: list[dict[str, Any]]) -> str:
    events = [{"choices": [{"index": 0, "delta": d}]} for d in deltas] + [{"choices": [], "usage": {}}]
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def convert(line: bytes, tags: tuple[str, str] | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The written messages and the component's summary, the same on both paths."""
    results = []
    for fast in (True, False):
        converter = converter_module.BatchConverter(fast=fast, reasoning_tags=tags)
        written = list(converter.convert_lines([line]))
        summary = converter.summary()["components"]["c"]
        results.append(([json.loads(out)["messages"] for _, out in written], summary))
    assert results[0] == results[1], "the orjson and standard-library paths differ"
    (messages,), summary = results[0]
    return messages, summary


WITH_TAGS = f"<think>\n{THOUGHT}\n</think>\n\nHello!"


@pytest.mark.parametrize(
    "line",
    [
        capture(completion({"content": "Hello!", "reasoning_content": THOUGHT})),
        capture(completion({"content": "\nHello!", "reasoning": f"\n{THOUGHT}\n"})),
        capture(
            sse(
                [
                    {"role": "assistant", "content": ""},
                    {"reasoning_content": "The user greets me.\n"},
                    {"reasoning_content": "I should greet back."},
                    {"content": "Hello"},
                    {"content": "!"},
                ]
            ),
            stream=True,
        ),
    ],
    ids=["completion", "reasoning-field", "stream"],
)
def test_the_reasoning_is_written_back_inside_the_think_tags(line):
    messages, summary = convert(line, TAGS)
    assert messages[-1] == {"role": "assistant", "content": WITH_TAGS}
    assert summary.get("dropped", {}).get("reasoning_content", 0) == 0


def test_without_tags_the_reasoning_is_left_out_and_counted():
    messages, summary = convert(capture(completion({"content": "Hello!", "reasoning_content": THOUGHT})), None)
    assert messages[-1] == {"role": "assistant", "content": "Hello!"}
    assert summary["dropped"]["reasoning_content"] == 1


def test_a_reply_without_reasoning_is_written_as_it_is():
    messages, summary = convert(capture(completion({"content": "Hello!"})), TAGS)
    assert messages[-1] == {"role": "assistant", "content": "Hello!"}
    assert summary.get("dropped", {}).get("reasoning_content", 0) == 0


def test_a_tool_call_keeps_its_reasoning_in_the_content():
    call = {"id": "call-1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
    line = capture(completion({"content": None, "reasoning_content": THOUGHT, "tool_calls": [call]}))
    converter = converter_module.BatchConverter(fast=False, reasoning_tags=TAGS)
    ((_, out),) = converter.convert_lines([line])
    reply = json.loads(out)["messages"][-1]
    assert reply == {"role": "assistant", "content": f"<think>\n{THOUGHT}\n</think>\n\n", "tool_calls": [call]}
    assert converter.summary()["components"]["c"].get("dropped", {}).get("reasoning_content", 0) == 0


@pytest.mark.parametrize(
    ("value", "tags"),
    [(None, None), ("", None), ("<think>|</think>", TAGS), ("[THINK]|[/THINK]", ("[THINK]", "[/THINK]"))],
)
def test_tags_from_the_environment(value, tags):
    assert reasoning.tags_from(value) == tags


@pytest.mark.parametrize("value", ["<think>", "|</think>", "<think>|", "a|b|c"])
def test_tags_that_are_not_two_are_refused(value, monkeypatch):
    with pytest.raises(ValueError, match="REASONING_TAGS must be '<open>\\|<close>'"):
        reasoning.tags_from(value)
    monkeypatch.setenv("REASONING_TAGS", value)
    with pytest.raises(ValueError, match="REASONING_TAGS must be") as raised:
        conversion._reasoning_tags()
    assert type(raised.value).__name__ == "InvalidEventError"  # the name the state machine matches


def test_a_stream_whose_reasoning_does_not_parse_is_written_without_it():
    broken = sse([{"content": "Hello!"}]).replace("data: [DONE]", 'data: {"reasoning_content": ')
    assert reasoning.reasoning_of(broken, is_json=False, loads=json.loads) == ""
