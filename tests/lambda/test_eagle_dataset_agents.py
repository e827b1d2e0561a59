"""EAGLE dataset builder on agent traffic: tool-calling turns are written, exactly, as OpenAI chat messages.

Captured the way LMI/vLLM answers an agent (a tool-call parser and a reasoning parser on): buffered and
streamed, with and without reasoning content, through Data Capture and the front door's turn log. Every
record is checked byte for byte on both the standard-library and the orjson paths, and every written line is
one line for any JSON Lines reader, including ones that split at U+0085, U+2028 or U+2029 (``str.splitlines``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import load_handler_module
from support.agents import capture_line

core = load_handler_module("eagle_dataset", "eagle_dataset_core")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
HISTORY = [
    {"role": "system", "content": "You are a travel agent."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "I should look it up.",
        "tool_calls": [
            {"id": "call-1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call-1", "content": '{"celsius": 18}'},
]
WRITTEN_HISTORY = [
    {"role": "system", "content": "You are a travel agent."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call-1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call-1", "content": '{"celsius": 18}'},
]


def capture(request: Any, response: Any, *, stream: bool = False) -> bytes:
    return capture_line(request, response, stream=stream)


def reply(content: str | None, *, calls: list[dict] | None = None, reasoning: str | None = None) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls is not None:
        message["tool_calls"] = calls
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return {
        "id": "chatcmpl-7",
        "object": "chat.completion",
        "model": "qwen3",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
    }


def sse(deltas: list[dict], finish: str) -> str:
    chunks = [
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
        for d in deltas
    ]
    chunks.append(
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    )
    chunks.append({"id": "c", "object": "chat.completion.chunk", "choices": [], "usage": {"completion_tokens": 9}})
    return (
        "".join("data: " + json.dumps(c, ensure_ascii=False, separators=(",", ":")) + "\n\n" for c in chunks)
        + "data: [DONE]\n\n"
    )


CALL_2 = {"id": "call-2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'}}


def convert(lines: list[bytes], fast: bool, source: str = "capture") -> tuple[Any, list[bytes]]:
    converter = core.BatchConverter(fast=fast, source=source)
    out = [line for _, line in converter.convert_lines(lines)]
    return converter, out


def expected(messages: list[dict]) -> bytes:
    text = json.dumps({"messages": messages}, ensure_ascii=False, separators=(",", ":"))
    for raw in "\x85\u2028\u2029":  # the line breaks JSON leaves raw: the builder escapes them
        text = text.replace(raw, f"\\u{ord(raw):04x}")
    return (text + "\n").encode("utf-8")


PATHS = pytest.mark.parametrize("fast", [False, True], ids=["stdlib", "orjson"])

CASES = {
    # (request, response, streamed?) -> written messages, dropped parts
    "first turn answers a tool call (buffered)": (
        {"messages": HISTORY[:2], "tools": TOOLS},
        reply(None, calls=[CALL_2]),
        False,
        WRITTEN_HISTORY[:2] + [{"role": "assistant", "content": None, "tool_calls": [CALL_2]}],
        {"tool_definitions": 1},
    ),
    "tool call with text and reasoning (buffered)": (
        {"messages": HISTORY[:2], "tools": TOOLS},
        reply("Let me check.", calls=[CALL_2], reasoning="Lyon, not Paris."),
        False,
        WRITTEN_HISTORY[:2] + [{"role": "assistant", "content": "Let me check.", "tool_calls": [CALL_2]}],
        {"tool_definitions": 1, "reasoning_content": 1},
    ),
    "answer after a tool result (buffered, reasoning)": (
        {"messages": HISTORY, "tools": TOOLS},
        reply("It is 18 C.", reasoning="The tool said 18."),
        False,
        WRITTEN_HISTORY + [{"role": "assistant", "content": "It is 18 C."}],
        {"tool_definitions": 1, "reasoning_content": 1},
    ),
    "answer after a tool result (buffered, no tools sent, no reasoning)": (
        {"messages": HISTORY},
        reply("It is 18 C."),
        False,
        WRITTEN_HISTORY + [{"role": "assistant", "content": "It is 18 C."}],
        {},
    ),
    "streamed tool call split over chunks, with reasoning": (
        {"messages": HISTORY[:2], "tools": TOOLS, "stream": True},
        sse(
            [
                {"role": "assistant", "reasoning_content": "Need "},
                {"reasoning_content": "data."},
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call-2",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"ci'},
                        }
                    ]
                },
                {"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Lyon"}'}}]},
            ],
            "tool_calls",
        ),
        True,
        WRITTEN_HISTORY[:2] + [{"role": "assistant", "content": None, "tool_calls": [CALL_2]}],
        {"tool_definitions": 1, "reasoning_content": 1},
    ),
    "streamed answer after a tool result, no reasoning": (
        {"messages": HISTORY, "stream": True},
        sse([{"role": "assistant", "content": ""}, {"content": "It is "}, {"content": "18 C."}], "stop"),
        True,
        WRITTEN_HISTORY + [{"role": "assistant", "content": "It is 18 C."}],
        {},
    ),
    "two parallel streamed calls": (
        {"messages": HISTORY[:2], "stream": True},
        sse(
            [
                {
                    "tool_calls": [
                        {"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ]
                },
                {
                    "tool_calls": [
                        {"index": 1, "id": "b", "type": "function", "function": {"name": "g", "arguments": '{"x":1}'}}
                    ]
                },
            ],
            "tool_calls",
        ),
        True,
        WRITTEN_HISTORY[:2]
        + [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": '{"x":1}'}},
                ],
            }
        ],
        {},
    ),
}


@PATHS
@pytest.mark.parametrize("case", sorted(CASES))
def test_agent_turns_are_written_exactly(case, fast):
    request, response, streamed, messages, dropped = CASES[case]
    converter, out = convert([capture(request, response, stream=streamed)], fast)
    assert out == [expected(messages)]
    stats = converter.summary()["components"]["chat-qwen3"]
    assert stats["converted"] == 1 and stats["tool_calling"] == 1 and stats["dropped"] == dropped
    assert stats["skipped"] == {}


def test_plain_chat_keeps_its_summary_shape():
    request = {"messages": [{"role": "user", "content": "Hi"}]}
    converter, out = convert([capture(request, reply("Hello."))], fast=False)
    assert out == [expected(request["messages"] + [{"role": "assistant", "content": "Hello."}])]
    assert set(converter.summary()["components"]["chat-qwen3"]) == {"records_in", "converted", "duplicates", "skipped"}


@PATHS
def test_text_beside_a_tool_call_never_loses_the_call(fast):
    # Before agent turns were kept, the text alone was written and the call silently dropped.
    request = {"messages": HISTORY[:2]}
    stream = sse(
        [
            {"content": "Checking."},
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call-2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'},
                    }
                ]
            },
        ],
        "tool_calls",
    )
    _, out = convert(
        [capture(request, reply("Checking.", calls=[CALL_2])), capture(request, stream, stream=True)], fast
    )
    written = WRITTEN_HISTORY[:2] + [{"role": "assistant", "content": "Checking.", "tool_calls": [CALL_2]}]
    assert out == [expected(written)]  # the second is the same record: a duplicate


@PATHS
@pytest.mark.parametrize(
    "request_messages, response, reason",
    [
        ([{"role": "user", "content": "q"}, {"role": "tool", "content": "r"}], reply("a"), "unsupported_message_role"),
        (
            [{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "function_call": {"name": "f"}}],
            reply("a"),
            "unsupported_message_role",
        ),
        (
            [{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}],
            reply("a"),
            "unsupported_message_role",
        ),
        (
            [{"role": "user", "content": "q"}],
            reply(None, calls=[{"id": "1", "type": "function", "function": {}}]),
            "unsupported_message_role",
        ),
        (
            [
                {"role": "user", "content": "q"},
                {"role": "tool", "tool_call_id": "1", "content": [{"type": "image_url"}]},
            ],
            reply("a"),
            "non_text_content",
        ),
        ([{"role": "tool", "tool_call_id": "1", "content": "r"}], reply("a"), "unsupported_request_shape"),
        (
            [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "1", "content": "r"}],
            {"error": "boom", "object": "error"},
            "error_response",
        ),
        (
            [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "1", "content": "r"}],
            reply("  "),
            "empty_response",
        ),
    ],
)
def test_what_no_record_can_hold_is_skipped_with_its_reason(request_messages, response, reason, fast):
    converter, out = convert([capture({"messages": request_messages}, response)], fast)
    assert out == [] and converter.summary()["skipped"] == {reason: 1}


@PATHS
def test_front_door_turns_with_tool_calls(fast):
    turn = {
        "component": "chat-qwen3",
        "created_at": "2026-12-01T10:00:00Z",
        "messages": HISTORY + [{"role": "assistant", "content": "It is 18 C."}],
    }
    call_turn = {
        "component": "chat-qwen3",
        "created_at": "2026-12-01T10:00:01Z",
        "messages": HISTORY[:2] + [{"role": "assistant", "content": None, "tool_calls": [CALL_2]}],
    }
    converter, out = convert([json.dumps(turn).encode(), json.dumps(call_turn).encode()], fast, source="front_door")
    assert out == [
        expected(WRITTEN_HISTORY + [{"role": "assistant", "content": "It is 18 C."}]),
        expected(WRITTEN_HISTORY[:2] + [{"role": "assistant", "content": None, "tool_calls": [CALL_2]}]),
    ]
    assert converter.summary()["tool_calling"] == 2


#: Every character ``str.splitlines`` breaks a line at (``bytes.splitlines`` only at LF and CR).
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@PATHS
@pytest.mark.parametrize("separator", list(LINE_BREAKS), ids=[f"U+{ord(c):04X}" for c in LINE_BREAKS])
def test_every_line_is_one_line_for_readers_that_split_at_unicode_separators(separator, fast):
    text = f"line{separator}break"
    arguments = json.dumps({"note": text}, ensure_ascii=False)
    request = {"messages": [{"role": "user", "content": text}]}
    lines = [
        capture(request, reply(text)),  # plain chat
        capture(
            request,
            reply(None, calls=[{"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}]),
        ),
    ]
    _, out = convert(lines, fast)
    assert len(out) == 2
    for line in out:
        assert separator.encode("utf-8") not in line[:-1]
        decoded = line.decode("utf-8")
        assert len(decoded.splitlines()) == 1 and len(line.splitlines()) == 1 and decoded.endswith("\n")
        record = json.loads(line)
        assert record["messages"][0]["content"] == text
    assert out == convert(lines, not fast)[1]  # the same bytes on the other path
    assert json.loads(json.loads(out[1])["messages"][1]["tool_calls"][0]["function"]["arguments"])["note"] == text


def test_the_run_summary_totals_agent_counts_over_components():
    from collections import Counter

    index = load_handler_module("eagle_dataset", "index")
    components = {
        "chat-qwen3": {"records_in": 3, "tool_calling": 2, "dropped": Counter({"tool_definitions": 2})},
        "chat-lora": {"records_in": 1, "tool_calling": 1, "dropped": Counter({"reasoning_content": 1})},
        "base": {"records_in": 4},
    }
    totals = index._agent_totals(components)
    assert totals["tool_calling"] == 3
    assert totals["dropped"] == {"reasoning_content": 1, "tool_definitions": 2}
    assert "tool definitions" in totals["dropped_note"]
    assert index._agent_totals({"base": {"records_in": 1}}) == {}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_written_agent_record_is_a_chat_record(case):
    request, response, streamed, _, _ = CASES[case]
    _, out = convert([capture(request, response, stream=streamed)], fast=False)
    assert core.is_chat_record(json.loads(out[0]))


CALL = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    "last",
    [
        {"role": "assistant", "content": None, "tool_calls": []},  # no call, no text
        {"role": "assistant", "content": None, "tool_calls": [{**CALL, "extra": 1}]},  # a key the job may not read
        {"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": {"name": "f", "arguments": {}}}]},
        {"role": "assistant", "content": 7, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c", "content": "r"},  # the model did not answer
        {"role": "assistant", "content": "x", "reasoning_content": "y"},
    ],
)
def test_records_in_other_shapes_are_not_chat_records(last):
    assert not core.is_chat_record({"messages": [{"role": "user", "content": "q"}, last]})


# ------------------------------------------------------------------ each front-door conversation once


def turn(messages: list[dict], component: str = "chat-qwen3", **extra: Any) -> bytes:
    return json.dumps(
        {"component": component, "messages": messages, "created_at": "2026-12-01T10:00:00Z", **extra}
    ).encode()


USER = {"role": "user", "content": "Weather in Paris?"}
ASKED = {"role": "assistant", "content": None, "tool_calls": [CALL_2]}
RESULT = {"role": "tool", "tool_call_id": "call-2", "content": "18 C"}
ANSWER = {"role": "assistant", "content": "18 C."}
LONGEST = [USER, ASKED, RESULT, ANSWER]


def counts(converter: Any) -> tuple[int, int, int, dict[str, int]]:
    summary = converter.summary()
    assert summary["records_in"] == summary["converted"] + summary["duplicates"] + sum(summary["skipped"].values())
    return summary["records_in"], summary["converted"], summary["duplicates"], summary["skipped"]


@PATHS
def test_only_the_longest_record_of_a_conversation_is_written_in_either_order(fast):
    lines = [turn([USER, ASKED]), turn(LONGEST)]
    for ordered in (lines, lines[::-1]):
        converter, out = convert(ordered, fast, source="front_door")
        assert out == [expected(LONGEST)]
        assert counts(converter) == (2, 1, 0, {"conversation_prefix": 1})
        assert converter.summary()["tool_calling"] == 1  # counted for written records only


@PATHS
def test_text_conversations_are_kept_once_and_other_conversations_stay(fast):
    system = {"role": "system", "content": "Be brief."}
    one = [system, {"role": "user", "content": "a"}, {"role": "assistant", "content": "A"}]
    two = [*one, {"role": "user", "content": "b"}, {"role": "assistant", "content": "B"}]
    other = [system, {"role": "user", "content": "c"}, {"role": "assistant", "content": "C"}]  # same system prompt
    resent = [*one[:2], {"role": "assistant", "content": "A, differently"}, *two[3:]]  # not a continuation
    lines = [turn(one), turn(other), turn(two), turn(one, component="chat-lora"), turn(resent)]
    converter, out = convert(lines, fast, source="front_door")
    assert out == [expected(other), expected(two), expected(one), expected(resent)]
    assert counts(converter) == (5, 4, 0, {"conversation_prefix": 1})
    assert converter.summary()["components"]["chat-lora"]["converted"] == 1  # another component: its own set


@PATHS
def test_a_resent_tool_call_is_the_same_call_whatever_its_arguments_spacing(fast):
    reformatted = {
        **ASKED,
        "tool_calls": [{**CALL_2, "function": {"name": "get_weather", "arguments": '{"city":"Lyon"}'}}],
    }
    converter, out = convert(
        [turn([USER, ASKED]), turn([USER, reformatted, RESULT, ANSWER])], fast, source="front_door"
    )
    assert len(out) == 1 and counts(converter)[3] == {"conversation_prefix": 1}
    other_call = {
        **ASKED,
        "tool_calls": [{**CALL_2, "function": {"name": "get_weather", "arguments": '{"city":"Nice"}'}}],
    }
    _, out = convert([turn([USER, ASKED]), turn([USER, other_call, RESULT, ANSWER])], fast, source="front_door")
    assert len(out) == 2


@PATHS
def test_the_same_conversation_written_twice_is_a_duplicate(fast):
    spaced = turn(LONGEST).replace(b'"messages": [', b'"messages":[')  # other bytes, the same record
    converter, out = convert([turn(LONGEST), spaced, turn(LONGEST, created_at="later")], fast, source="front_door")
    assert out == [expected(LONGEST)] and counts(converter) == (3, 1, 2, {})


@PATHS
def test_records_leave_the_window_past_its_bound_and_then_stay(fast):
    converter = core.BatchConverter(fast=fast, source="front_door", prefix_window_bytes=1)
    out = [line for _, line in converter.convert_lines([turn([USER, ASKED]), turn(LONGEST)])]
    assert out == [expected([USER, ASKED]), expected(LONGEST)]  # the first was written before the second came
    assert counts(converter) == (2, 2, 0, {})


@PATHS
def test_held_records_wait_for_the_batchs_last_object(fast):
    converter = core.BatchConverter(fast=fast, source="front_door")
    assert list(converter.convert_lines([turn([USER, ASKED])], final=False)) == []
    assert list(converter.convert_lines([turn(LONGEST)], final=False)) == []
    assert list(converter.flush()) == [("chat-qwen3", expected(LONGEST))]
    assert counts(converter) == (2, 1, 0, {"conversation_prefix": 1})


@PATHS
def test_the_prefix_digests_share_the_duplicate_filters_bound(fast):
    converter = core.BatchConverter(fast=fast, source="front_door", dedup_max_entries=1, prefix_window_bytes=1)
    out = [line for _, line in converter.convert_lines([turn(LONGEST), turn([USER, ASKED])])]
    assert out == [expected(LONGEST), expected([USER, ASKED])]  # no digest room: the later prefix is written
    assert converter.summary()["dedup_saturated"] is True


@PATHS
def test_what_the_front_door_dropped_is_counted_for_written_records(fast):
    lines = [
        turn([USER, ASKED], dropped=["tool_definitions", "reasoning_content"]),
        turn(LONGEST, dropped=["tool_definitions", "not-a-part"]),
        turn([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], dropped="x"),
    ]
    converter, _ = convert(lines, fast, source="front_door")
    assert converter.summary()["dropped"] == {"tool_definitions": 1}
