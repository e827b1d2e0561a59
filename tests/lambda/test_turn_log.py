"""The front door's turn log (lambda/session_router/turn_log.py) and the dataset builder reading it back."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.stub import Stubber
from conftest import load_handler_module
from support.aws_model import assert_valid_request

STREAM = "SageMakerLlm-ChatQwenTurns-AbC123"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def chat(*turns: tuple[str, Any]) -> dict[str, Any]:
    return {"model": "qwen3", "messages": [{"role": r, "content": c} for r, c in turns], "max_tokens": 64}


def reply(text: str) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
    }


@pytest.fixture
def log(monkeypatch):
    monkeypatch.setenv("TURN_LOG_STREAM", STREAM)
    mod = load_handler_module("session_router", "turn_log")
    client = mod._firehose()
    with Stubber(client) as stubber:
        yield mod, stubber


def expect_put(stubber: Stubber, data: bytes, error: str | None = None) -> None:
    params = {"DeliveryStreamName": STREAM, "Record": {"Data": data}}
    assert_valid_request("firehose", "PutRecord", params)
    if error:
        stubber.add_client_error("put_record", service_error_code=error, expected_params=params)
    else:
        stubber.add_response("put_record", {"RecordId": "r-1", "Encrypted": True}, params)


def test_a_completed_turn_is_one_chat_line_naming_its_component(log):
    mod, stubber = log
    record, reason = mod.chat_record(
        "sql-adapter", chat(("system", "Be brief."), ("user", "Größe?")), reply("Groß."), now=NOW
    )
    assert reason == "" and record == {
        "component": "sql-adapter",
        "created_at": "2026-11-30T12:00:00Z",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Größe?"},
            {"role": "assistant", "content": "Groß."},
        ],
    }
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    mod.datetime = type("D", (), {"now": staticmethod(lambda tz=None: NOW)})  # the module's clock
    expect_put(stubber, line)
    assert mod.record_turn("sql-adapter", chat(("system", "Be brief."), ("user", "Größe?")), reply("Groß.")) is True
    stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("request_body", "reply_body", "reason"),
    [
        ({"inputs": "raw prompt"}, reply("x"), "request_not_chat"),
        (chat(("user", [{"type": "image_url", "image_url": {"url": "x"}}])), reply("x"), "request_not_text_chat"),
        (chat(("tool", "result")), reply("x"), "request_malformed_tool_call"),  # no tool_call_id
        (chat(("user", "q"), ("function", "legacy")), reply("x"), "request_malformed_tool_call"),
        (chat(("system", "only a system turn")), reply("x"), "request_not_text_chat"),
        (chat(("user", "q"), ("critic", "x")), reply("x"), "request_not_text_chat"),
        (
            {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [{"id": "c"}]}]},
            reply("x"),
            "request_malformed_tool_call",
        ),
        (
            {"messages": [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "c", "content": None}]},
            reply("x"),
            "request_not_text_chat",
        ),
        (
            chat(("user", "q")),
            {"choices": [{"message": {"content": None, "tool_calls": [{}]}}]},
            "reply_malformed_tool_call",
        ),
        (
            chat(("user", "q")),
            {"choices": [{"message": {"content": "x", "function_call": {"name": "f"}}}]},
            "reply_malformed_tool_call",
        ),
        (chat(("user", "q")), {"choices": [{"message": {"content": "  ", "tool_calls": []}}]}, "reply_without_answer"),
        (chat(("user", "q")), {"error": "overloaded"}, "reply_without_answer"),
    ],
)
def test_turns_no_record_can_hold_are_not_logged_with_their_reason(log, request_body, reply_body, reason):
    mod, stubber = log
    assert mod.chat_record("base", request_body, reply_body)[1] == reason
    assert mod.record_turn("base", request_body, reply_body) is False  # no request made (Stubber has none)


CALL = {
    "id": "chatcmpl-tool-1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}


def test_an_agent_turn_keeps_its_tool_calls_and_results_and_names_what_it_drops(log):
    mod, _ = log
    request = {
        "model": "qwen3",
        "tools": [{"type": "function", "function": {"name": "get_weather"}}],
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
            {"role": "assistant", "content": "", "tool_calls": [{**CALL, "index": 0}], "reasoning": "look it up"},
            {"role": "tool", "tool_call_id": "chatcmpl-tool-1", "name": "get_weather", "content": '{"temp_c": 18}'},
        ],
    }
    vllm = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": "And Lyon:",
                    "reasoning": "one more",
                    "tool_calls": [{"id": "c2", "function": {"name": "get_weather", "arguments": {"city": "Lyon"}}}],
                }
            }
        ]
    }
    record, reason = mod.chat_record("base", request, vllm, now=NOW)
    assert reason == "" and record == {
        "component": "base",
        "created_at": "2026-11-30T12:00:00Z",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "chatcmpl-tool-1", "content": '{"temp_c": 18}'},
            {
                "role": "assistant",
                "content": "And Lyon:",  # text beside a tool call: both kept
                "tool_calls": [
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Lyon"}'},
                    }
                ],
            },
        ],
        "dropped": ["tool_definitions", "reasoning_content"],
    }
    only_call = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [CALL]}}]}
    record, _ = mod.chat_record("base", chat(("user", "q")), only_call, now=NOW)
    assert record["messages"][-1] == {"role": "assistant", "content": None, "tool_calls": [CALL]}
    assert "dropped" not in record


def test_a_text_reply_beside_an_empty_tool_call_list_is_text(log):
    mod, _ = log
    vllm = {"choices": [{"message": {"role": "assistant", "content": "hi", "tool_calls": []}}]}
    assert mod.chat_record("base", chat(("user", "q")), vllm)[0]["messages"][-1] == {
        "role": "assistant",
        "content": "hi",
    }


def test_other_reply_shapes_are_read(log):
    mod, _ = log
    for body in ([{"generated_text": "a"}], {"generated_text": "a"}, {"choices": [{"text": "a"}]}):
        assert mod.chat_record("base", chat(("user", "q")), body)[0]["messages"][-1] == {
            "role": "assistant",
            "content": "a",
        }


def test_a_firehose_failure_never_fails_the_turn(log):
    mod, stubber = log
    record, _ = mod.chat_record("base", chat(("user", "q")), reply("a"))
    mod.chat_record = lambda *a, **k: (record, "")
    expect_put(
        stubber,
        json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n",
        error="ServiceUnavailableException",
    )
    assert mod.record_turn("base", chat(("user", "q")), reply("a")) is False


def test_logging_is_off_without_a_stream(monkeypatch):
    monkeypatch.delenv("TURN_LOG_STREAM", raising=False)
    mod = load_handler_module("session_router", "turn_log")
    assert mod.record_turn("base", chat(("user", "q")), reply("a")) is False


def test_a_turn_past_firehoses_record_limit_is_not_sent(log):
    mod, _ = log
    assert mod.record_turn("base", chat(("user", "q" * (1000 * 1024))), reply("a")) is False


# ------------------------------------------------------------------------ read back as a dataset source


def test_the_dataset_builder_reads_turn_logs_with_exact_counts():
    core = load_handler_module("eagle_dataset", "eagle_dataset_core")
    router_log = load_handler_module("session_router", "turn_log")

    def line(component: str | None, request: Any, answer: str) -> bytes:
        record, _ = router_log.chat_record(component or "x", request, reply(answer), now=NOW)
        if component is None:
            record.pop("component")
        return json.dumps(record, ensure_ascii=False).encode()

    lines = [
        line("qwen3-32b", chat(("user", "one")), "1"),
        line("qwen3-32b", chat(("user", "one")), "1"),  # duplicate
        line("sql-adapter", chat(("user", "select")), "2"),  # another component: its own set
        line(None, chat(("user", "who?")), "3"),  # names none: kept apart
        b'{"captureData": {}}',  # not a turn record
        b"",  # blank
        b"\xff\xfe",  # not UTF-8
    ]
    data = gzip.compress(b"\n".join(lines) + b"\n")  # what Firehose writes
    for fast in (True, False):
        converter = core.BatchConverter(source="front_door", fast=fast)
        out = list(converter.convert_lines(core.iter_bounded_lines(core.iter_object_data([data]), 1 << 20)))
        summary = converter.summary()
        assert [(c, json.loads(b)) for c, b in out] == [
            ("qwen3-32b", {"messages": [{"role": "user", "content": "one"}, {"role": "assistant", "content": "1"}]}),
            (
                "sql-adapter",
                {"messages": [{"role": "user", "content": "select"}, {"role": "assistant", "content": "2"}]},
            ),
        ]
        assert (summary["records_in"], summary["converted"], summary["duplicates"]) == (7, 2, 1)
        assert summary["skipped"] == {
            "unattributed_component": 1,
            "not_a_turn_record": 1,
            "blank_line": 1,
            "not_utf8": 1,
        }
        assert summary["unattributed"] == 1
