"""EAGLE dataset builder: Data Capture -> chat JSONL (core), and plan/convert/finalize/validate handlers.

Core tests run on capture files generated here in the documented Data Capture line format
(captureData.endpointInput/endpointOutput with JSON, BASE64 or CSV encoding, eventMetadata,
eventVersion). Handler tests run end to end on moto S3/SSM, including the files a Distributed
Map ResultWriter writes (manifest.json + SUCCEEDED_n.json whose entries hold an Output string).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.stub import Stubber
from conftest import load_handler_module
from moto import mock_aws

core = load_handler_module("eagle_dataset", "eagle_dataset_core")

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
CAPTURE = "capture-bucket"
OUT = "output-bucket"
PARAM = "/eagle/demo/watermark"


# ---------------------------------------------------------------------------------------------
# Capture line builders (the documented Data Capture format)
# ---------------------------------------------------------------------------------------------


def _encode(payload: Any, encoding: str) -> str:
    raw = payload if isinstance(payload, (bytes, str)) else json.dumps(payload)
    raw_bytes = raw.encode("utf-8") if isinstance(raw, str) else raw
    if encoding == "BASE64":
        return base64.b64encode(raw_bytes).decode("ascii")
    return raw_bytes.decode("utf-8")


def capture(
    request: Any,
    response: Any,
    *,
    encoding: str = "JSON",
    response_encoding: str | None = None,
    event_id: str = "0c5c7a32-6e0f-4a55-8a8e-7c1f5ad0f0a1",
    component: str | None = None,
    content_type: str = "application/json",
) -> bytes:
    metadata: dict[str, Any] = {"eventId": event_id, "inferenceTime": "2026-11-30T10:15:02Z"}
    if component is not None:
        metadata["inferenceComponentName"] = component
    line = {
        "captureData": {
            "endpointInput": {
                "observedContentType": content_type,
                "mode": "INPUT",
                "data": _encode(request, encoding),
                "encoding": encoding,
            },
            "endpointOutput": {
                "observedContentType": content_type,
                "mode": "OUTPUT",
                "data": _encode(response, response_encoding or encoding),
                "encoding": response_encoding or encoding,
            },
        },
        "eventMetadata": metadata,
        "eventVersion": "0",
    }
    return json.dumps(line).encode("utf-8")


def chat_request(user: str, system: str | None = None) -> dict[str, Any]:
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return {"model": "qwen3", "messages": messages, "max_tokens": 256, "temperature": 0.2}


def chat_response(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def lmi_stream(tokens: list[str]) -> bytes:
    lines = [
        json.dumps({"token": {"id": i, "text": t, "log_prob": -0.1}, "generated_text": None})
        for i, t in enumerate(tokens)
    ]
    lines.append(json.dumps({"token": {"id": 99, "text": "", "log_prob": 0.0}, "generated_text": "".join(tokens)}))
    return ("\n".join(lines) + "\n").encode()


def openai_sse(tokens: list[str]) -> bytes:
    events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    events += [{"choices": [{"index": 0, "delta": {"content": t}}]} for t in tokens]
    events.append({"choices": [], "usage": {"completion_tokens": len(tokens)}})
    return ("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode()


# What vLLM / LMI's OpenAI-compatible server streams: ids, a first chunk with the role, a last one with
# an empty delta and the finish reason, a usage chunk without choices, then [DONE]; UTF-8 as is.
VLLM_SSE = (
    "".join(
        "data: "
        + json.dumps(
            {
                "id": "chatcmpl-9",
                "object": "chat.completion.chunk",
                "created": 1796000000,
                "model": "qwen3",
                "choices": choices,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        + "\n\n"
        for choices in [
            [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}],
            [{"index": 0, "delta": {"content": "Hello"}, "logprobs": None, "finish_reason": None}],
            [{"index": 0, "delta": {"content": ", wörld"}, "logprobs": None, "finish_reason": None}],
            [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}],
            [],
        ]
    )
    + "data: [DONE]\n\n"
).encode("utf-8")


def records(out: list[tuple[str, bytes]], component: str | None = None) -> list[dict[str, Any]]:
    return [json.loads(line) for comp, line in out if component is None or comp == component]


def run(lines: list[bytes], **kwargs: Any) -> tuple[core.BatchConverter, list[tuple[str, bytes]]]:
    """Convert ``lines`` as for an endpoint serving one component ("base") unless told otherwise."""
    kwargs.setdefault("default_component", "base")
    converter = core.BatchConverter(**kwargs)
    data = b"\n".join(lines) + b"\n"
    out = list(converter.convert_lines(core.iter_bounded_lines([data], 1 << 20)))
    return converter, out


def assert_invariant(summary: dict[str, Any]) -> None:
    for stats in [summary, *summary["components"].values()]:
        assert stats["records_in"] == stats["converted"] + stats["duplicates"] + sum(stats["skipped"].values())


# ---------------------------------------------------------------------------------------------
# Core: a realistic capture file with exact counts
# ---------------------------------------------------------------------------------------------


def realistic_capture_file() -> list[bytes]:
    chat_a = capture(chat_request("What is EAGLE?", system="Be brief."), chat_response("A draft head."))
    chat_b_base64 = capture(chat_request("Name a prime."), chat_response("7"), encoding="BASE64", event_id="e2")
    return [
        chat_a,  # 1 converted
        chat_b_base64,  # 2 converted
        capture(
            {
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]}
                ]
            },
            chat_response("Hello!"),
            encoding="BASE64",
        ),  # 3 converted (parts)
        capture(
            {"inputs": "Translate: bonjour", "parameters": {"max_new_tokens": 20}},
            [{"generated_text": "hello"}],
            encoding="BASE64",
        ),  # 4 converted (TGI list)
        capture({"inputs": "Say yes", "parameters": {}}, {"generated_text": "yes"}),  # 5 converted (LMI object)
        capture({"prompt": "1+1=", "max_tokens": 3}, {"choices": [{"text": "2"}]}),  # 6 converted (completions)
        capture(
            {"inputs": "Count", "parameters": {"stream": True}}, lmi_stream(["1", " 2", " 3"]), encoding="BASE64"
        ),  # 7 converted (LMI jsonlines)
        capture(
            chat_request("Stream please"), openai_sse(["Sure", ", ", "done"]), encoding="BASE64"
        ),  # 8 converted (OpenAI SSE)
        chat_a.replace(b"0c5c7a32", b"11111111"),  # duplicate of 1 (other eventId)
        chat_b_base64,  # duplicate of 2
        b"\x00\x9f\x92\x96binary\xff junk",  # not_utf8
        b"PK\x03\x04 not json at all",  # invalid_json_line
        b"",  # blank_line
        json.dumps({"eventMetadata": {"eventId": "x"}, "eventVersion": "0"}).encode(),  # missing_capture_data
        capture({"inputs": [1, 2, 3]}, {"generated_text": "x"}),  # unsupported_request_shape
        capture(chat_request("Hi"), {"error": "CUDA out of memory", "code": 500}),  # error_response
        capture(chat_request("Hi again"), chat_response("   ")),  # empty_response
        capture(chat_request("Hi"), chat_response("ok"), encoding="BASE64").replace(
            b'"encoding": "BASE64"}, "endpointOutput"', b'"encoding": "PARQUET"}, "endpointOutput"'
        ),  # unsupported_encoding
        json.dumps(
            {
                "captureData": {
                    "endpointInput": {"mode": "INPUT", "data": "@@not base64@@", "encoding": "BASE64"},
                    "endpointOutput": {"mode": "OUTPUT", "data": "e30=", "encoding": "BASE64"},
                }
            }
        ).encode(),  # undecodable_base64
        json.dumps(
            {
                "captureData": {
                    "endpointInput": {"mode": "INPUT", "data": _encode(chat_request("x"), "JSON"), "encoding": "JSON"}
                }
            }
        ).encode(),  # missing_response
        capture("just some text", chat_response("x"), encoding="BASE64"),  # request_not_json
        capture(chat_request("Hello"), chat_response("Hi!"))[:-40],  # truncated_line (cut mid-write)
    ]


def test_realistic_capture_file_has_exact_counts_and_chat_records():
    converter, out = run(realistic_capture_file())
    summary = converter.summary()
    assert summary["records_in"] == 22
    assert summary["converted"] == 8
    assert summary["duplicates"] == 2
    assert summary["skipped"] == {
        "blank_line": 1,
        "empty_response": 1,
        "error_response": 1,
        "invalid_json_line": 1,
        "missing_capture_data": 1,
        "missing_response": 1,
        "not_utf8": 1,
        "request_not_json": 1,
        "truncated_line": 1,
        "undecodable_base64": 1,
        "unsupported_encoding": 1,
        "unsupported_request_shape": 1,
    }
    assert_invariant(summary)
    got = records(out)
    assert all(core.is_chat_record(r) for r in got)
    assert got[0] == {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is EAGLE?"},
            {"role": "assistant", "content": "A draft head."},
        ]
    }
    assert [r["messages"][-1]["content"] for r in got] == [
        "A draft head.",
        "7",
        "Hello!",
        "hello",
        "yes",
        "2",
        "1 2 3",
        "Sure, done",
    ]
    assert got[2]["messages"][0] == {"role": "user", "content": "Hi\nthere"}
    # lines that are unreadable carry no component; everything readable here is the default "base"
    assert set(summary["components"]) == {"base", core.UNATTRIBUTED}
    assert summary["components"][core.UNATTRIBUTED]["skipped"] == {
        "blank_line": 1,
        "invalid_json_line": 1,
        "missing_capture_data": 1,
        "not_utf8": 1,
        "truncated_line": 1,
    }


def test_orjson_path_is_what_the_function_runs_and_matches_the_fallback_record_by_record():
    assert core.FAST_JSON_AVAILABLE and core.BatchConverter().fast  # orjson ships in the asset and in dev
    lines = realistic_capture_file() + [
        capture({"inputs": "big", "parameters": {"seed": 2**80}}, [{"generated_text": "int past 64 bits"}]),
        capture(chat_request("nan"), b'{"choices": [{"message": {"content": "x"}}], "score": NaN}', encoding="BASE64"),
        b"\xef\xbb\xbf" + capture(chat_request("bom"), chat_response("b")),
        capture(chat_request("x"), b'{"generated_text": "bad \\ud800 text"}'),
    ]
    fast, fast_out = run(lines, fast=True)
    pure, pure_out = run(lines, fast=False)
    assert fast_out == pure_out and fast.summary() == pure.summary()
    assert len(fast_out) == fast.summary()["converted"] > 8


def test_orjson_path_reads_the_common_shapes_in_place():
    """The shapes most traffic has take the one-pass readers (the properties test that they agree with the general
    ones)."""
    assert core._sse_text_fast(VLLM_SSE.decode()) == "Hello, wörld"
    assert core._sse_text_fast(openai_sse(["o", "k"]).decode()) == "ok"
    assert core._plain_chat(chat_request("q", system="s")["messages"]) == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q"},
    ]
    assert core._plain_response(chat_response("a")) == "a"
    assert core._plain_response([{"generated_text": "b"}]) == "b"
    # and defer on what they do not cover, for the general readers to decide
    assert core._sse_text_fast(lmi_stream(["a"]).decode()) is None
    assert core._plain_chat([{"role": "user", "content": [{"type": "text", "text": "q"}]}]) is None
    assert core._plain_response({"choices": [{"message": {"content": None, "tool_calls": [{}]}}]}) is None


def test_both_paths_agree_record_by_record_on_streams_base64_unicode_junk_and_duplicates():
    text = 'Größe 日本語 😀 "q" \\ \u2028 tab\t'
    lines = [
        capture(chat_request(text, system="s"), VLLM_SSE, encoding="BASE64", response_encoding="BASE64"),
        capture(chat_request(text), openai_sse(["error", " token"]), encoding="BASE64"),
        capture(chat_request("crlf"), VLLM_SSE.replace(b"\n", b"\r\n"), encoding="BASE64"),
        capture(chat_request("lmi"), lmi_stream(["1", " 2"]), encoding="BASE64"),
        capture(
            {
                "messages": [
                    {"role": "developer", "content": "rules"},
                    {"role": "user", "content": text},
                    {"role": "assistant", "content": "Pre"},
                ]
            },
            chat_response("fill"),
        ),
        capture({"inputs": CHATML, "parameters": {"return_full_text": True}}, [{"generated_text": CHATML + " more"}]),
        capture({"inputs": "Q?", "parameters": {"return_full_text": False}}, [{"generated_text": "Q? kept"}]),
        capture(chat_request(text), chat_response(text), encoding="BASE64"),
        capture(chat_request(text), chat_response(text), encoding="BASE64"),  # a duplicate
        capture(chat_request("x"), b'data: {"choices":[{"delta":{"content":"bad \\ud800"}}]}\n\n', encoding="BASE64"),
        capture(chat_request("x"), b'{"choices":[{"message":{"content":"nan"}}],"v":NaN}', encoding="BASE64"),
        capture(chat_request("x"), "data: " + "\u2028", encoding="JSON"),
        capture(chat_request("csv"), "plain answer", encoding="CSV"),
        b"\xff\xfe junk",
        b"{",
        b"[" * 5000,
        b"   ",
        b'{"captureData": 1}',
        capture(chat_request("cut"), chat_response("off"))[:-30],
    ]
    fast, fast_out = run(lines + lines, fast=True)
    pure, pure_out = run(lines + lines, fast=False)
    assert fast_out == pure_out and fast.summary() == pure.summary()
    summary = fast.summary()
    # 11 convert, one of them twice (7 and 8): 10 written; the second round is all duplicates
    assert summary["converted"] == len(fast_out) == 10 and summary["duplicates"] == 1 + 11
    assert summary["skipped"] == {
        "blank_line": 2,
        "invalid_json_line": 2,
        "invalid_unicode": 2,
        "missing_capture_data": 2,
        "not_utf8": 2,
        "truncated_line": 4,
        "unsupported_response_shape": 2,
    }
    answers = [record["messages"][-1]["content"] for record in records(fast_out)]
    assert answers == [
        "Hello, wörld",
        "error token",
        "Hello, wörld",
        "1 2",
        "Prefill",
        " more",
        "Q? kept",
        text,
        "nan",
        "plain answer",
    ]


@pytest.mark.parametrize("fast", [False, True], ids=["stdlib", "orjson"])
def test_output_lines_are_compact_utf8_json_lines_exactly_as_json_dumps_writes_them(fast):
    text = 'Größe? 日本語 😀 "quoted" back\\slash \x00\x1f\x7f tab\t \u2028'
    _, out = run([capture(chat_request(text), chat_response("大きい"), encoding="BASE64")], fast=fast)
    ((component, line),) = out
    assert component == "base"
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    record = json.loads(line)
    written = json.dumps(record, ensure_ascii=False, separators=(",", ":")).replace("\u2028", "\\u2028")
    assert line == (written + "\n").encode("utf-8")  # U+2028/U+2029 escaped: one line for every reader
    assert len(line.decode("utf-8").splitlines()) == 1
    assert record["messages"] == [{"role": "user", "content": text}, {"role": "assistant", "content": "大きい"}]


#: Every character ``str.splitlines`` breaks a line at; ``bytes.splitlines`` breaks only at LF and CR.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def test_the_line_break_list_is_every_character_str_splitlines_breaks_at():
    assert {c for c in map(chr, range(0x110000)) if len(f"a{c}b".splitlines()) == 2} == set(LINE_BREAKS)
    assert {bytes([b]) for b in range(256) if len(bytes([97, b, 98]).splitlines()) == 2} == {b"\n", b"\r"}


@pytest.mark.parametrize("encoding", ["JSON", "BASE64"])
def test_a_record_holding_every_line_break_is_one_line_for_every_reader_and_the_same_bytes_on_both_paths(encoding):
    """U+0085, U+2028 and U+2029 are written as JSON escapes (JSON writers leave them raw in strings); the
    characters below U+0020 already are. Plain chat, a prefilled turn, a stream and a prompt text each hold all
    ten, alone and between letters."""
    text = "a" + "b".join(LINE_BREAKS) + "c" + LINE_BREAKS
    prefill = {"messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "Pre" + text}]}
    lines = [
        capture(chat_request(text, system="s" + text), chat_response(text), encoding=encoding),
        capture(prefill, chat_response("fill" + text), encoding=encoding),
        capture(chat_request("streamed"), openai_sse(["A", text, "B"]), encoding=encoding),
        capture({"inputs": "Q" + text, "parameters": {"return_full_text": False}}, [{"generated_text": text}]),
    ]
    _, pure = run(lines, fast=False)
    _, fast = run(lines, fast=True)
    assert fast == pure and len(pure) == len(lines)
    records = []
    for _, line in pure:
        assert len(line.splitlines()) == 1 and len(line.decode("utf-8").splitlines()) == 1 and line.endswith(b"\n")
        for raw in "\x85\u2028\u2029":
            assert raw.encode("utf-8") not in line
        record = json.loads(line)
        written = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        for raw in "\x85\u2028\u2029":
            written = written.replace(raw, f"\\u{ord(raw):04x}")
        assert line == (written + "\n").encode("utf-8")  # otherwise exactly what json.dumps writes
        records.append(record["messages"])
    assert records == [
        [
            {"role": "system", "content": "s" + text},
            {"role": "user", "content": text},
            {"role": "assistant", "content": text},
        ],
        [{"role": "user", "content": text}, {"role": "assistant", "content": "Pre" + text + "fill" + text}],
        [{"role": "user", "content": "streamed"}, {"role": "assistant", "content": "A" + text + "B"}],
        [{"role": "user", "content": "Q" + text}, {"role": "assistant", "content": text}],
    ]


def test_csv_encoded_plain_text_payloads_are_used_as_prompt_and_answer():
    line = capture("plain prompt", "plain answer", encoding="CSV", content_type="text/plain")
    converter, out = run([line])
    assert records(out) == [
        {"messages": [{"role": "user", "content": "plain prompt"}, {"role": "assistant", "content": "plain answer"}]}
    ]


# ---------------------------------------------------------------------------------------------
# Core: components (inference components, LoRA adapters) and duplicates
# ---------------------------------------------------------------------------------------------


def test_components_from_event_metadata_are_kept_apart_and_deduplicated_separately():
    same = (chat_request("Summarize"), chat_response("Short."))
    lines = [
        capture(*same),  # base
        capture(*same, component="llama-adapter-sql"),  # same text, other component: not a duplicate
        capture(*same, component="llama-adapter-sql"),  # duplicate within the adapter
        capture(chat_request("Other"), chat_response("x"), component="qwen3-base-ic", encoding="BASE64"),
        capture(*same, component="bad_name!"),  # not a SageMaker name
    ]
    converter, out = run(lines)
    summary = converter.summary()
    assert {name: (s["converted"], s["duplicates"]) for name, s in summary["components"].items()} == {
        "base": (1, 0),
        "llama-adapter-sql": (1, 1),
        "qwen3-base-ic": (1, 0),
        core.UNATTRIBUTED: (0, 0),
    }
    assert summary["skipped"] == {"invalid_component_name": 1}
    assert summary["components"][core.UNATTRIBUTED]["skipped"] == {"invalid_component_name": 1}
    assert [c for c, _ in out] == ["base", "llama-adapter-sql", "qwen3-base-ic"]
    assert_invariant(summary)


def test_component_from_key_path_is_used_when_metadata_has_none():
    converter = core.BatchConverter()
    lines = [
        capture(chat_request("a"), chat_response("b")),
        capture(chat_request("c"), chat_response("d"), component="meta-wins"),
    ]
    out = list(converter.convert_lines(iter(lines), path_component="adapter-from-path"))
    assert [c for c, _ in out] == ["adapter-from-path", "meta-wins"]
    garbage = list(converter.convert_lines(iter([b"{{{"]), path_component="adapter-from-path"))
    assert garbage == [] and converter.summary()["components"]["adapter-from-path"]["skipped"] == {
        "invalid_json_line": 1
    }


@pytest.mark.parametrize(
    ("key", "prefix", "expected"),
    [
        ("dc/my-ep/AllTraffic/2026/11/30/10/15-02-123-abc.jsonl", "dc/", None),
        ("dc/my-ep/AllTraffic/adapter-a/2026/11/30/10/15-02-123-abc.jsonl", "dc/", "adapter-a"),
        ("dc/my-ep/AllTraffic/adapter-a/2026/11/30/10/15-02-123-abc.jsonl", "dc", "adapter-a"),
        ("dc/my-ep/AllTraffic/adapter-a/x/11/30/10/f.jsonl", "dc/", None),
        ("other/my-ep/AllTraffic/adapter-a/2026/11/30/10/f.jsonl", "dc/", None),
        ("my-ep/AllTraffic/adapter-a/2026/11/30/10/f.jsonl", "", "adapter-a"),
    ],
)
def test_component_from_key(key, prefix, expected):
    assert core.component_from_key(key, prefix) == expected


def test_too_many_components_are_counted_not_lost_silently():
    lines = [capture(chat_request(str(i)), chat_response("y"), component=f"c{i}") for i in range(4)]
    converter, out = run(lines, max_components=2)
    summary = converter.summary()
    assert summary["converted"] == 2 and summary["skipped"] == {"too_many_components": 2}
    assert_invariant(summary)


def test_dedup_filter_is_bounded_and_reports_saturation():
    lines = [capture(chat_request(str(i % 3)), chat_response("y")) for i in range(6)]
    converter, out = run(lines, dedup_max_entries=2)
    summary = converter.summary()
    # digests of "0" and "1" are held, "2" is not: its second copy cannot be recognised
    assert (summary["converted"], summary["duplicates"], summary["dedup_saturated"]) == (4, 2, True)
    converter, out = run(lines)
    assert (converter.summary()["converted"], converter.summary()["duplicates"]) == (3, 3)


# ---------------------------------------------------------------------------------------------
# Core: request and response shapes
# ---------------------------------------------------------------------------------------------

CHATML = (
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
    "<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nBye?<|im_end|>\n<|im_start|>assistant\n"
)
LLAMA3 = (
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe nice.<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nWhy?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
)
LLAMA2 = "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nWhat is 2+2? [/INST] 4 </s><s>[INST] And 3+3? [/INST]"
"""The Llama 2 chat template (Hugging Face's, as TGI and LMI render it for a text-generation request)."""
MISTRAL = "<s>[INST] Name a colour. [/INST] Blue.</s>[INST] Another? [/INST]"
"""Mistral's: the same [INST] turns, no system part, no <s> between turns."""


@pytest.mark.parametrize(
    ("request_body", "expected"),
    [
        (
            {"messages": [{"role": "developer", "content": "rules"}, {"role": "user", "content": "q"}]},
            [{"role": "system", "content": "rules"}, {"role": "user", "content": "q"}],
        ),
        (
            {"inputs": CHATML, "parameters": {}},
            [
                {"role": "system", "content": "You are helpful."},
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "Bye?"},
            ],
        ),
        ({"inputs": LLAMA3}, [{"role": "system", "content": "Be nice."}, {"role": "user", "content": "Why?"}]),
        (
            {"inputs": LLAMA2, "parameters": {"max_new_tokens": 64}},
            [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is 2+2?"},
                {"role": "assistant", "content": "4"},
                {"role": "user", "content": "And 3+3?"},
            ],
        ),
        (
            {"inputs": MISTRAL},
            [
                {"role": "user", "content": "Name a colour."},
                {"role": "assistant", "content": "Blue."},
                {"role": "user", "content": "Another?"},
            ],
        ),
        # not clean [INST] turns (text after a closed turn, a turn without [/INST], <<SYS>> in a later turn):
        # the prompt stays one user message, as for any other text
        (
            {"inputs": "[INST] Hi [/INST] ok </s> stray"},
            [{"role": "user", "content": "[INST] Hi [/INST] ok </s> stray"}],
        ),
        ({"inputs": "[INST] unclosed"}, [{"role": "user", "content": "[INST] unclosed"}]),
        (
            {"inputs": "[INST] a [/INST] b </s>[INST] <<SYS>>\nS\n<</SYS>> c [/INST]"},
            [{"role": "user", "content": "[INST] a [/INST] b </s>[INST] <<SYS>>\nS\n<</SYS>> c [/INST]"}],
        ),
        ({"inputs": "<|im_start|>user\nunclosed"}, [{"role": "user", "content": "<|im_start|>user\nunclosed"}]),
        ({"prompt": ["only one"]}, [{"role": "user", "content": "only one"}]),
        ({"text_inputs": "hf pipeline"}, [{"role": "user", "content": "hf pipeline"}]),
        (
            {"inputs": {"past_user_inputs": ["a"], "generated_responses": ["b"], "text": "c"}},
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}],
        ),
        ({"inputs": [{"role": "user", "content": "as inputs"}]}, [{"role": "user", "content": "as inputs"}]),
        ('"a bare JSON string"', [{"role": "user", "content": "a bare JSON string"}]),
    ],
)
@pytest.mark.parametrize("fast", [False, True], ids=["stdlib", "orjson"])
def test_request_shapes(request_body, expected, fast):
    _, out = run([capture(request_body, {"generated_text": "ANSWER"}, encoding="BASE64")], fast=fast)
    (record,) = records(out)
    assert record["messages"] == [*expected, {"role": "assistant", "content": "ANSWER"}]


@pytest.mark.parametrize(
    ("request_body", "reason"),
    [
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            "non_text_content",
        ),
        # a tool result is kept (agent turns), but the answer must then be a chat completion
        (
            {"messages": [{"role": "user", "content": "q"}, {"role": "tool", "content": "r", "tool_call_id": "1"}]},
            "unsupported_response_shape",
        ),
        (
            {"messages": [{"role": "user", "content": "q"}, {"role": "tool", "content": "r"}]},
            "unsupported_message_role",
        ),
        (
            {"messages": [{"role": "user", "content": "q"}, {"role": "function", "content": "r", "name": "f"}]},
            "unsupported_message_role",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": None, "tool_calls": [{}]},
                ]
            },
            "unsupported_message_role",
        ),
        ({"messages": [{"role": "system", "content": "only system"}]}, "unsupported_request_shape"),
        ({"messages": []}, "unsupported_request_shape"),
        ({"prompt": [101, 2023, 102]}, "unsupported_request_shape"),
        ({"inputs": ["batch", "of two"]}, "unsupported_request_shape"),
        ({"instances": [[1.0, 2.0]]}, "unsupported_request_shape"),
        ({"inputs": "<|im_start|>tool\nx<|im_end|>"}, "unsupported_message_role"),
        # hostile shapes: a list or an object where a role or a part type goes is unhashable (no TypeError)
        ({"messages": [{"role": ["user"], "content": "q"}]}, "unsupported_request_shape"),
        (
            {"messages": [{"role": "user", "content": "q"}, {"role": {"a": 1}, "content": "r"}]},
            "unsupported_request_shape",
        ),
        ({"messages": [{"role": "user", "content": [{"type": ["text"], "text": "q"}]}]}, "non_text_content"),
        ({"messages": [{"role": "user", "content": [{"type": {}, "text": "q"}]}]}, "non_text_content"),
    ],
)
@pytest.mark.parametrize("fast", [False, True], ids=["stdlib", "orjson"])
def test_unusable_requests_are_skipped_with_reason(request_body, reason, fast):
    converter, out = run([capture(request_body, {"generated_text": "x"})], fast=fast)
    assert out == [] and converter.summary()["skipped"] == {reason: 1}


@pytest.mark.parametrize(
    ("response_body", "encoding", "expected"),
    [
        (chat_response("chat"), "JSON", "chat"),
        (
            {"choices": [{"message": {"role": "assistant", "content": [{"type": "text", "text": "parts"}]}}]},
            "JSON",
            "parts",
        ),
        ({"choices": [{"text": "completion"}]}, "JSON", "completion"),
        ([{"generated_text": "tgi list"}], "BASE64", "tgi list"),
        ({"generated_text": "lmi", "details": {"finish_reason": "eos_token"}}, "JSON", "lmi"),
        ({"generated_text": ["lmi list"]}, "JSON", "lmi list"),
        (lmi_stream(["a", "b"]), "BASE64", "ab"),
        (
            b'data:{"token":{"id":1,"text":"T","special":false},"generated_text":null}\n\n'
            b'data:{"token":{"id":2,"text":"</s>","special":true},"generated_text":"TGI sse"}\n\n',
            "BASE64",
            "TGI sse",
        ),
        (b'{"token":{"text":"x"}}\n{"token":{"text":"y"}}\n', "BASE64", "xy"),
        (openai_sse(["o", "k"]), "BASE64", "ok"),
        (
            b'data: {"choices":[{"text":"c1"}]}\n\ndata: {"choices":[{"text":"c2"}]}\n\ndata: [DONE]\n\n',
            "BASE64",
            "c1c2",
        ),
        ('"a JSON string"', "JSON", "a JSON string"),
        (VLLM_SSE, "BASE64", "Hello, wörld"),
        (VLLM_SSE.replace(b"\n\n", b"\r\n\r\n"), "BASE64", "Hello, wörld"),
        (openai_sse(["error", " token", " generated_text"]), "BASE64", "error token generated_text"),  # words, not keys
        (
            b'data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: [DONE]\n\n'
            b'data: {"choices":[{"delta":{"content":"b"}}]}\n\n',
            "BASE64",
            "ab",
        ),
        (b': keep-alive\n\nevent: message\ndata: {"choices":[{"delta":{"content":"c"}}]}\n\n', "BASE64", "c"),
        (
            b'data: {"choices":[{"delta":{"content":"x"}}]}\n\n'
            b'data: {"token":{"text":"t"},"generated_text":"final"}\n\n',
            "BASE64",
            "final",
        ),
        (
            b'data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata:\n\n'
            b'data: {"choices":[{"delta":{"content":"y"}}]}\n\n',
            "BASE64",
            "xy",
        ),
        # keys that take precedence over "choices" in the same chunk
        (b'data: {"token":{"text":"T"},"choices":[{"delta":{"content":"x"}}]}\n\n', "BASE64", "T"),
        (b'data: {"choices":[{"delta":{"content":"x"}}],"generated_text":"G"}\n\n', "BASE64", "G"),
    ],
)
@pytest.mark.parametrize("fast", [False, True], ids=["stdlib", "orjson"])
def test_response_shapes(response_body, encoding, expected, fast):
    _, out = run([capture(chat_request("q"), response_body, encoding=encoding)], fast=fast)
    assert records(out)[0]["messages"][-1] == {"role": "assistant", "content": expected}


@pytest.mark.parametrize(
    ("response_body", "reason"),
    [
        ({"object": "error", "message": "bad", "code": 400}, "error_response"),
        ({"error": "boom"}, "error_response"),
        (b'data: {"error":"overloaded"}\n\n', "error_response"),
        ({"choices": []}, "empty_response"),
        ([], "empty_response"),
        ({"generated_text": ""}, "empty_response"),
        (
            {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}}]},
            "unsupported_message_role",
        ),
        ({"predictions": [0.3]}, "unsupported_response_shape"),
        ([{"generated_text": "a"}, {"generated_text": "b"}], "unsupported_response_shape"),
        (b"not json, not a stream", "unsupported_response_shape"),
        (b"\xff\xfe\xfd", "not_utf8"),
        (openai_sse([" ", "\n"]), "empty_response"),
        (b'data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: {"\\u0065rror":"overloaded"}\n\n', "error_response"),
        (
            b'data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: {"object":"error","message":"m"}\n\n',
            "error_response",
        ),
        (b'data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: {"ErrorCode":500}\n\n', "error_response"),
        (b'data: {"choices":[{"delta":{"content":"x"}}],"error":{"message":"overloaded"}}\n\n', "error_response"),
        (b'data: {"object":"error","choices":[{"delta":{"content":"x"}}]}\n\n', "error_response"),
        (b'data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: [1, 2]\n\n', "unsupported_response_shape"),
        (b'data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: {"choices": "no"}\n\n', "unsupported_response_shape"),
        (b'data: {"choices":[{"delta":{"content":"x"\n\n', "unsupported_response_shape"),
    ],
)
@pytest.mark.parametrize("fast", [False, True], ids=["stdlib", "orjson"])
def test_unusable_responses_are_skipped_with_reason(response_body, reason, fast):
    converter, out = run([capture(chat_request("q"), response_body, encoding="BASE64")], fast=fast)
    assert out == [] and converter.summary()["skipped"] == {reason: 1}


def test_prompt_echo_is_removed_and_prefill_is_merged():
    echoed = capture({"inputs": "Q: 2+2?\nA:"}, [{"generated_text": "Q: 2+2?\nA: 4"}])
    prefill = capture(
        {"messages": [{"role": "user", "content": "List"}, {"role": "assistant", "content": "1."}]},
        chat_response(" one"),
    )
    qwen3_prefill = capture(
        {"inputs": "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
        {"generated_text": "answer"},
    )
    _, out = run([echoed, prefill, qwen3_prefill])
    got = records(out)
    assert got[0]["messages"][-1]["content"] == " 4"
    assert got[1]["messages"] == [{"role": "user", "content": "List"}, {"role": "assistant", "content": "1. one"}]
    assert got[2]["messages"] == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "<think>\n\n</think>\n\nanswer"},
    ]


def test_lone_surrogates_are_skipped_not_written_as_invalid_utf8():
    line = capture(chat_request("x"), b'{"generated_text": "bad \\ud800 text"}')
    converter, out = run([line])
    assert out == [] and converter.summary()["skipped"] == {"invalid_unicode": 1}


def test_deeply_nested_json_does_not_crash():
    converter, out = run([b"[" * 100_000, capture(chat_request("ok"), chat_response("fine"))])
    assert converter.summary()["skipped"] == {"invalid_json_line": 1} and len(out) == 1


# ---------------------------------------------------------------------------------------------
# Core: streaming helpers
# ---------------------------------------------------------------------------------------------


def test_bounded_lines_match_split_for_every_chunk_boundary():
    data = b"alpha\nbeta\r\n\n" + b"x" * 50 + b"\nlast-without-newline"
    expected = data.split(b"\n")
    for size in range(1, len(data) + 1):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        got = list(core.iter_bounded_lines(chunks, 1000))
        assert got == expected, size


def test_oversized_lines_are_reported_once_and_never_buffered():
    data = b"short\n" + b"L" * 5000 + b"\nafter\n" + b"T" * 3000
    for size in (1, 7, 64, 4096, len(data)):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        got = list(core.iter_bounded_lines(chunks, 100))
        assert [g if isinstance(g, bytes) else ("over", g.size) for g in got] == [
            b"short",
            ("over", 5000),
            b"after",
            ("over", 3000),
        ]


def test_oversized_line_is_counted_as_line_too_long():
    converter = core.BatchConverter()
    lines = core.iter_bounded_lines([capture(chat_request("a" * 500), chat_response("b")) + b"\n"], 100)
    assert list(converter.convert_lines(lines)) == [] and converter.summary()["skipped"] == {"line_too_long": 1}


def test_gunzip_stream_round_trips_in_small_chunks():
    payload = b"".join(capture(chat_request(str(i)), chat_response("y")) + b"\n" for i in range(200))
    packed = gzip.compress(payload)
    chunks = [packed[i : i + 333] for i in range(0, len(packed), 333)]
    assert b"".join(core.iter_gunzip(chunks, out_chunk=1000)) == payload


def test_unnamed_records_are_unattributed_without_a_default_component():
    lines = [
        capture(chat_request("a"), chat_response("x")),
        capture(chat_request("b"), chat_response("y"), component="sql-adapter"),
        capture(chat_request("c"), chat_response("z"), component=""),
    ]
    converter, out = run(lines, default_component=None)
    summary = converter.summary()
    assert [c for c, _ in out] == ["sql-adapter"]
    assert summary["unattributed"] == 2 and summary["skipped"] == {"unattributed_component": 2}
    assert summary["components"][core.UNATTRIBUTED] == {
        "records_in": 2,
        "converted": 0,
        "duplicates": 0,
        "skipped": {"unattributed_component": 2},
    }
    assert_invariant(summary)
    # a key that names the component attributes them
    converter = core.BatchConverter()
    got = list(converter.convert_lines(core.iter_bounded_lines([lines[0] + b"\n"], 1 << 20), path_component="from-key"))
    assert [c for c, _ in got] == ["from-key"] and converter.summary()["unattributed"] == 0


def _lines_of(data: bytes, chunk: int = 97) -> list[Any]:
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    return list(core.iter_bounded_lines(core.iter_object_data(chunks, out_chunk=50), 1 << 20))


def test_every_member_of_a_multi_member_gzip_is_read():
    members = [
        b"".join(capture(chat_request(f"{m}-{i}"), chat_response("y")) + b"\n" for i in range(30)) for m in range(3)
    ]
    data = b"".join(gzip.compress(member) for member in members) + b"\x00" * 16  # padding after the last one
    for size in (1, 13, 4096, len(data)):
        got = _lines_of(data, size)
        assert got == b"".join(members).split(b"\n")[:-1], size
    converter = core.BatchConverter(default_component="base")
    out = list(converter.convert_lines(_lines_of(data)))
    assert len(out) == 90 and converter.summary()["records_in"] == 90


def test_compression_is_detected_from_the_bytes_not_the_key():
    plain = b"".join(capture(chat_request(str(i)), chat_response("y")) + b"\n" for i in range(5))
    assert core.detect_compression(gzip.compress(plain)) == "gzip" and core.detect_compression(plain) is None
    assert _lines_of(plain) == _lines_of(gzip.compress(plain)) == plain.split(b"\n")[:-1]


@pytest.mark.parametrize(
    ("data", "reason", "converted"),
    [
        # mtime=0: the same bytes (and so the same test id) whenever and wherever it is collected (xdist workers)
        (gzip.compress(b"\n".join([b"{}"] * 3), mtime=0)[:-12], "corrupt_compressed_object", 0),  # cut off inside
        (b"\x1f\x8b\x08\x00" + b"garbage that is not deflate data" * 4, "corrupt_compressed_object", 0),
        (b"\x28\xb5\x2f\xfd" + b"\x00" * 40, "unsupported_compression", 0),  # zstd
        (b"BZh91AY&SY" + b"\x00" * 40, "unsupported_compression", 0),  # bzip2
    ],
)
def test_corrupt_or_unsupported_compressed_objects_are_skipped_with_their_reason(data, reason, converted):
    converter = core.BatchConverter(default_component="base")
    out = list(converter.convert_lines(_lines_of(data)))
    summary = converter.summary()
    assert len(out) == converted and summary["skipped"] == {reason: 1} and summary["records_in"] == 1
    assert_invariant(summary)


def test_records_before_a_corrupt_gzip_tail_still_count_and_the_cut_line_is_dropped():
    import random

    rng = random.Random(7)  # text that does not compress to one tiny block
    good = b"".join(
        capture(chat_request(f"{i} {rng.getrandbits(512):x}"), chat_response("y")) + b"\n" for i in range(400)
    )
    packed = gzip.compress(good)
    data = packed[: len(packed) // 2] + b"\xff" * 64  # second half replaced by junk
    converter = core.BatchConverter(default_component="base")
    out = list(converter.convert_lines(_lines_of(data, 64)))
    summary = converter.summary()
    assert summary["skipped"] == {"corrupt_compressed_object": 1}  # no truncated_line for the cut record
    assert summary["converted"] == len(out) > 0 and summary["records_in"] == len(out) + 1


def test_return_full_text_false_keeps_a_response_that_starts_like_the_prompt():
    prompt = "Repeat after me: hello"
    answer = "Repeat after me: hello. Sure!"  # the model's words happen to start with the prompt
    lines = [
        capture({"inputs": prompt, "parameters": {"return_full_text": False}}, [{"generated_text": answer}]),
        capture({"inputs": prompt + " ", "return_full_text": False}, {"generated_text": prompt + " again"}),
        capture(
            {"inputs": prompt + "!", "parameters": {"return_full_text": True}}, [{"generated_text": prompt + "! world"}]
        ),
        capture({"inputs": prompt + "?", "parameters": {"return_full_text": True}}, [{"generated_text": prompt + "?"}]),
        capture({"inputs": prompt + ".."}, [{"generated_text": prompt + ".. guessed echo"}]),  # unsaid: trimmed
    ]
    converter, out = run(lines)
    got = [r["messages"][-1]["content"] for r in records(out)]
    assert got == [answer, prompt + " again", " world", " guessed echo"]
    assert converter.summary()["skipped"] == {"empty_response": 1}  # full text that is only the prompt


def test_json_array_stream_for_every_chunk_boundary():
    value = [{"Output": json.dumps({"a": "ü" * 3, "n": i})} for i in range(5)] + [[1, 2], "s", 3]
    data = ("  " + json.dumps(value, ensure_ascii=False, indent=1) + "\n").encode()
    for size in (1, 2, 3, 5, 17, len(data)):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert list(core.iter_json_array(chunks)) == value, size
    assert list(core.iter_json_array([b"[]"])) == []


@pytest.mark.parametrize("bad", [b'{"a": 1}', b"[1, 2", b"[1] [2]", b'[{"a": ]', b""])
def test_json_array_stream_rejects_malformed_input(bad):
    with pytest.raises(ValueError):
        list(core.iter_json_array([bad]))


# ---------------------------------------------------------------------------------------------
# Core: user dataset formats
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "fmt"),
    [
        ({"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}, "sharegpt"),
        ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}, "openai_chat"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "q"}]}]}, "openai_chat"),
        ({"prompt": "q", "completion": "a"}, "openai_completions"),
        ({"conversations": []}, None),
        ({"conversations": [{"from": "human"}]}, None),
        ({"messages": [{"role": "robot", "content": "q"}]}, None),
        ({"messages": [{"role": "user", "content": 3}]}, None),
        ({"prompt": "q"}, None),
        ({"text": "q"}, None),
        (["not", "an", "object"], None),
    ],
)
def test_detect_dataset_format(record, fmt):
    detected, problem = core.detect_dataset_format(record)
    assert detected == fmt
    assert (problem == "") == (fmt is not None)


# ---------------------------------------------------------------------------------------------
# Handlers (moto S3/SSM)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def aws():
    with mock_aws():
        import boto3

        s3 = boto3.client("s3", region_name="us-east-1")
        for bucket in (CAPTURE, OUT):
            s3.create_bucket(Bucket=bucket)
        yield s3, boto3.client("ssm", region_name="us-east-1")


@pytest.fixture
def handler(aws, load_handler, monkeypatch):
    """The dataset functions of an endpoint serving one component: unnamed records are "base"'s.
    (Tests of endpoints with adapters unset UNNAMED_RECORDS_COMPONENT, as the construct leaves it.)"""
    mod = load_handler("eagle_dataset")
    monkeypatch.setattr(mod, "_now", lambda: NOW)
    monkeypatch.setenv("UNNAMED_RECORDS_COMPONENT", "base")
    return mod


def put_capture(s3, key: str, lines: list[bytes], *, gz: bool = False) -> None:
    body = b"\n".join(lines) + b"\n"
    s3.put_object(Bucket=CAPTURE, Key=key, Body=gzip.compress(body) if gz else body)


def read_json(s3, bucket: str, key: str) -> Any:
    return json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())


def plan_event(**overrides: Any) -> dict[str, Any]:
    event = {
        "capture_bucket": CAPTURE,
        "capture_prefix": "datacapture/",
        "output_bucket": OUT,
        "output_prefix": "eagle/datasets",
        "run_id": "run-1",
        "watermark_parameter": PARAM,
    }
    event.update(overrides)
    return event


def simulate_distributed_map(
    s3,
    mod,
    plan_out,
    ctx,
    *,
    batch_size: int = 2,
    capture_prefix: str | None = "datacapture/",
    transformation: str = "NONE",
    fail: frozenset[int] = frozenset(),
) -> dict[str, str]:
    """Do what the Distributed Map does: read the item manifest, batch, invoke convert, write ResultWriter files."""
    items = read_json(s3, plan_out["manifest_bucket"], plan_out["manifest_key"])
    batch_input = {
        "capture_bucket": CAPTURE,
        "output_bucket": OUT,
        "output_prefix": plan_out["output_prefix"],
        "run_id": plan_out["run_id"],
    }
    if capture_prefix is not None:
        batch_input["capture_prefix"] = capture_prefix
    entries, failed = [], []
    for number, start in enumerate(range(0, len(items), batch_size)):
        batch = {"Items": items[start : start + batch_size], "BatchInput": batch_input}
        if number in fail:  # the child execution failed (e.g. timed out): no Output, Error/Cause instead
            failed.append(
                {
                    "Cause": "Task timed out after 900.00 seconds",
                    "Error": "States.Timeout",
                    "ExecutionArn": f"arn:aws:states:us-east-1:123456789012:execution:sm/Map:{start}",
                    "Input": json.dumps(batch),
                    "InputDetails": {"Included": True},
                    "Name": str(start),
                    "StartDate": "2026-11-30T12:00:00.000Z",
                    "Status": "FAILED",
                    "StopDate": "2026-11-30T12:15:00.000Z",
                    "StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:sm/Map",
                }
            )
            continue
        output = mod.convert(batch, ctx)
        json.dumps(output)  # must be serialisable as a state output
        if transformation == "NONE":
            entries.append(
                {
                    "ExecutionArn": f"arn:aws:states:us-east-1:123456789012:execution:sm/Map:{start}",
                    "Input": json.dumps(batch),
                    "InputDetails": {"Included": True},
                    "Name": str(start),
                    "Output": json.dumps(output),
                    "OutputDetails": {"Included": True},
                    "StartDate": "2026-11-30T12:00:00.000Z",
                    "StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:sm/Map",
                    "Status": "SUCCEEDED",
                    "StopDate": "2026-11-30T12:00:01.000Z",
                }
            )
        else:
            entries.append(output)
    prefix = f"results/{plan_out['run_id']}/0a1b2c3d"
    s3.put_object(Bucket=OUT, Key=f"{prefix}/SUCCEEDED_0.json", Body=json.dumps(entries).encode())
    s3.put_object(Bucket=OUT, Key=f"{prefix}/FAILED_0.json", Body=json.dumps(failed).encode())
    manifest = {
        "DestinationBucket": OUT,
        "MapRunArn": "arn:aws:states:us-east-1:123456789012:mapRun:sm/Map:0a1b2c3d",
        "ResultFiles": {
            "FAILED": [{"Key": f"{prefix}/FAILED_0.json", "Size": 1}] if failed else [],
            "PENDING": [],
            "SUCCEEDED": [{"Key": f"{prefix}/SUCCEEDED_0.json", "Size": 1}] if entries else [],
        },
    }
    s3.put_object(Bucket=OUT, Key=f"{prefix}/manifest.json", Body=json.dumps(manifest).encode())
    return {"results_bucket": OUT, "results_manifest_key": f"{prefix}/manifest.json"}


EP = "datacapture/qwen3-ep/AllTraffic"


def seed_capture(s3) -> None:
    put_capture(
        s3,
        f"{EP}/2026/11/30/09/05-00-001-aaa.jsonl",
        [
            capture(chat_request("one"), chat_response("1")),
            capture(chat_request("two"), chat_response("2"), encoding="BASE64"),
            b"\x89PNG junk",
        ],
    )
    put_capture(
        s3,
        f"{EP}/2026/11/30/09/35-10-002-bbb.jsonl",
        [
            capture(chat_request("one"), chat_response("1")),  # duplicate of the first object's line: same batch
            capture(chat_request("three"), chat_response("3"), component="sql-adapter"),
        ],
    )
    put_capture(
        s3,
        f"{EP}/2026/11/30/10/01-00-003-ccc.jsonl.gz",
        [
            capture({"inputs": "four"}, [{"generated_text": "4"}], encoding="BASE64"),
            capture(chat_request("one"), chat_response("1")),  # duplicate, but in another batch: kept (documented)
        ],
        gz=True,
    )
    put_capture(s3, f"{EP}/2026/11/30/11/55-00-004-ddd.jsonl", [capture(chat_request("too new"), chat_response("x"))])


def test_end_to_end_plan_convert_finalize(aws, handler, lambda_context):
    s3, ssm = aws
    seed_capture(s3)
    plan_out = handler.plan(plan_event(), lambda_context)
    # 11:55 is within the default 15-minute settle window of NOW (12:00)
    assert plan_out["object_count"] == 3
    assert plan_out["manifest_key"] == "eagle/datasets/run-1/plan/items.json"
    assert read_json(s3, OUT, plan_out["manifest_key"]) == [
        {"key": f"{EP}/2026/11/30/09/05-00-001-aaa.jsonl"},
        {"key": f"{EP}/2026/11/30/09/35-10-002-bbb.jsonl"},
        {"key": f"{EP}/2026/11/30/10/01-00-003-ccc.jsonl.gz"},
    ]
    assert plan_out["new_watermark"] == f"{EP}/2026/11/30/10/01-00-003-ccc.jsonl.gz"
    assert plan_out["previous_watermark"] is None and plan_out["watermark_previous_value"] is None

    results = simulate_distributed_map(s3, handler, plan_out, lambda_context, batch_size=2)
    out = handler.finalize({"plan": plan_out, "results": results}, lambda_context)

    assert out["records"] == 4 and out["empty"] is False and out["reason"] == ""
    assert out["training_data_s3_uri"] == "s3://output-bucket/eagle/datasets/run-1/data/base/"
    assert out["s3_data_type"] == "S3Prefix"
    assert out["component_uris"] == {
        "base": "s3://output-bucket/eagle/datasets/run-1/data/base/",
        "sql-adapter": "s3://output-bucket/eagle/datasets/run-1/data/sql-adapter/",
    }
    assert out["component_records"] == {"_unattributed": 0, "base": 4, "sql-adapter": 1}
    # finalize writes no watermark: it says where the job's start moves it once the job exists
    assert out["watermark_commit"] == {
        "parameter": PARAM,
        "stored": None,
        "previous": None,
        "value": plan_out["watermark_value"],
    }
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name=PARAM)

    base_keys = [o["Key"] for o in s3.list_objects_v2(Bucket=OUT, Prefix="eagle/datasets/run-1/data/base/")["Contents"]]
    lines = [
        json.loads(line) for key in base_keys for line in s3.get_object(Bucket=OUT, Key=key)["Body"].read().splitlines()
    ]
    assert sorted(r["messages"][0]["content"] for r in lines) == ["four", "one", "one", "two"]
    assert all(core.is_chat_record(r) for r in lines)

    manifest = read_json(s3, OUT, "eagle/datasets/run-1/manifests/base.json")
    assert manifest[0] == {"prefix": "s3://output-bucket/eagle/datasets/run-1/data/base/"}
    assert sorted(manifest[1:]) == sorted(k.rsplit("/", 1)[1] for k in base_keys)
    assert out["manifest_s3_uri"] == "s3://output-bucket/eagle/datasets/run-1/manifests/base.json"

    summary = read_json(s3, OUT, out["summary_key"])
    assert (summary["records_in"], summary["converted"], summary["duplicates"]) == (7, 5, 1)
    assert summary["skipped"] == {"not_utf8": 1}
    assert summary["components"]["sql-adapter"]["converted"] == 1
    assert summary["objects"] == 3 and summary["batches"] == 2

    assert json.loads(out["watermark_commit"]["value"]) == {
        "v": 1,
        "after": {f"{EP}/": "2026/11/30/10/01-00-003-ccc.jsonl.gz"},
    }

    # The next run only sees what is new once the job's start moved the watermark; the too-new object is
    # picked up once it settles.
    ssm.put_parameter(Name=PARAM, Value=out["watermark_commit"]["value"], Type="String")
    later = handler.plan(plan_event(run_id="run-2", settle_seconds=0), lambda_context)
    assert read_json(s3, OUT, later["manifest_key"]) == [{"key": f"{EP}/2026/11/30/11/55-00-004-ddd.jsonl"}]
    assert later["previous_watermark"] == plan_out["new_watermark"]


def test_mislabelled_and_corrupt_objects_never_fail_a_batch_or_freeze_the_watermark(aws, handler, lambda_context):
    s3, ssm = aws
    line = capture(chat_request("plain under .gz"), chat_response("1"))
    s3.put_object(Bucket=CAPTURE, Key=f"{EP}/2026/11/30/09/00-00-001-a.jsonl.gz", Body=line + b"\n")  # not gzip
    s3.put_object(
        Bucket=CAPTURE,
        Key=f"{EP}/2026/11/30/09/01-00-002-b.jsonl",  # gzip, two members, no suffix
        Body=gzip.compress(capture(chat_request("m1"), chat_response("2")) + b"\n")
        + gzip.compress(capture(chat_request("m2"), chat_response("3")) + b"\n"),
    )
    s3.put_object(Bucket=CAPTURE, Key=f"{EP}/2026/11/30/09/02-00-003-c.jsonl.gz", Body=b"\x1f\x8b\x08\x00broken")
    s3.put_object(
        Bucket=CAPTURE, Key=f"{EP}/2026/11/30/09/03-00-004-d.jsonl.zst", Body=b"\x28\xb5\x2f\xfd" + b"\x00" * 9
    )
    plan_out = handler.plan(plan_event(), lambda_context)
    assert plan_out["object_count"] == 4
    results = simulate_distributed_map(s3, handler, plan_out, lambda_context, batch_size=4)
    out = handler.finalize({"plan": plan_out, "results": results}, lambda_context)
    assert (out["records"], out["complete"], out["watermark_commit"]["value"]) == (3, True, plan_out["watermark_value"])
    assert out["skipped"] == {"corrupt_compressed_object": 1, "unsupported_compression": 1}
    summary = read_json(s3, OUT, out["summary_key"])
    assert (summary["records_in"], summary["converted"], summary["objects"]) == (5, 3, 4)
    moves_to = json.loads(out["watermark_commit"]["value"])
    assert moves_to == {"v": 1, "after": {f"{EP}/": "2026/11/30/09/03-00-004-d.jsonl.zst"}}


def test_every_dataset_object_is_written_under_the_named_key(aws, handler, lambda_context, monkeypatch):
    import boto3

    s3, _ = aws
    key_arn = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["Arn"]
    monkeypatch.setenv("DATASET_KMS_KEY_ARN", key_arn)
    seed_capture(s3)
    plan_out = handler.plan(plan_event(), lambda_context)
    results = simulate_distributed_map(s3, handler, plan_out, lambda_context)
    handler.finalize({"plan": plan_out, "results": results}, lambda_context)
    written = [o["Key"] for o in s3.list_objects_v2(Bucket=OUT, Prefix="eagle/datasets/run-1/")["Contents"]]
    assert len(written) >= 5  # plan, shards, manifests, summary
    for key in written:
        head = s3.head_object(Bucket=OUT, Key=key)
        assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", key_arn), key


def test_finalize_reads_compact_results_and_jsonl_result_files(aws, handler, lambda_context):
    s3, _ = aws
    seed_capture(s3)
    plan_out = handler.plan(plan_event(settle_seconds=3600), lambda_context)
    results = simulate_distributed_map(s3, handler, plan_out, lambda_context, batch_size=1, transformation="COMPACT")
    out = handler.finalize({"plan": plan_out, "results": results}, lambda_context)
    # one object per batch: "one" appears in three objects, so no duplicate is removed (per-batch dedup)
    assert out["records"] == 5
    # JSONL output type: same entries, one per line
    manifest = read_json(s3, OUT, results["results_manifest_key"])
    entries = read_json(s3, OUT, manifest["ResultFiles"]["SUCCEEDED"][0]["Key"])
    s3.put_object(
        Bucket=OUT, Key="results/jsonl/SUCCEEDED_0.jsonl", Body="\n".join(json.dumps(e) for e in entries).encode()
    )
    manifest["ResultFiles"]["SUCCEEDED"] = [{"Key": "results/jsonl/SUCCEEDED_0.jsonl", "Size": 1}]
    s3.put_object(Bucket=OUT, Key="results/jsonl/manifest.json", Body=json.dumps(manifest).encode())
    again = handler.finalize(
        {"plan": plan_out, "results": {"Bucket": OUT, "Key": "results/jsonl/manifest.json"}}, lambda_context
    )
    assert (
        again["records"] == out["records"] and again["watermark_commit"] == out["watermark_commit"]
    )  # a retry says the same


def test_convert_writes_bounded_shards_deterministically(aws, handler, lambda_context, monkeypatch):
    s3, _ = aws
    lines = [capture(chat_request(f"question {i} " + "x" * 200), chat_response(f"answer {i}")) for i in range(60)]
    put_capture(s3, f"{EP}/2026/11/30/09/05-00-001-aaa.jsonl", lines)
    monkeypatch.setenv("SHARD_MAX_BYTES", "4096")
    monkeypatch.setenv("READ_CHUNK_BYTES", "1000")
    event = {
        "Items": [{"key": f"{EP}/2026/11/30/09/05-00-001-aaa.jsonl"}],
        "BatchInput": {"capture_bucket": CAPTURE, "output_bucket": OUT, "output_prefix": "p", "run_id": "r1"},
    }
    first = handler.convert(event, lambda_context)
    shards = first["components"]["base"]["shards"]
    assert first["converted"] == 60 and len(shards) > 3
    assert all(name.startswith(f"part-{first['batch_id']}-") and name.endswith(".jsonl") for name in shards)
    bodies = [s3.get_object(Bucket=OUT, Key=f"p/r1/data/base/{name}")["Body"].read() for name in shards]
    assert all(len(body) < 4096 + 400 for body in bodies)
    assert [json.loads(line)["messages"][-1]["content"] for body in bodies for line in body.splitlines()] == [
        f"answer {i}" for i in range(60)
    ]
    assert sum(len(b) for b in bodies) == first["components"]["base"]["bytes"]
    again = handler.convert(event, lambda_context)  # a Step Functions retry overwrites the same keys
    assert again == first


def test_convert_buffer_budget_flushes_largest_component(aws, handler, lambda_context, monkeypatch):
    s3, _ = aws
    lines = [capture(chat_request(f"q{i} " + "y" * 300), chat_response("a"), component=f"c{i % 3}") for i in range(30)]
    put_capture(s3, f"{EP}/2026/11/30/09/05-00-001-aaa.jsonl", lines)
    monkeypatch.setenv("SHARD_MAX_BYTES", "1000000")
    monkeypatch.setenv("BUFFER_BUDGET_BYTES", "3000")
    out = handler.convert(
        {
            "Items": [{"key": f"{EP}/2026/11/30/09/05-00-001-aaa.jsonl"}],
            "BatchInput": {"capture_bucket": CAPTURE, "output_bucket": OUT, "run_id": "r1"},
        },
        lambda_context,
    )
    assert {name: stats["converted"] for name, stats in out["components"].items()} == {"c0": 10, "c1": 10, "c2": 10}
    assert sum(len(stats["shards"]) for stats in out["components"].values()) > 3
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=OUT, Prefix="r1/data/")["Contents"]]
    assert all(k.startswith(("r1/data/c0/part-", "r1/data/c1/part-", "r1/data/c2/part-")) for k in keys)


def test_convert_counts_missing_objects_and_uses_path_components(aws, handler, lambda_context):
    s3, _ = aws
    key = "datacapture/ep/AllTraffic/lora-a/2026/11/30/09/05-00-001-aaa.jsonl"
    put_capture(s3, key, [capture(chat_request("q"), chat_response("a"))])
    out = handler.convert(
        {
            "Items": [{"key": key}, {"key": "datacapture/ep/AllTraffic/2026/11/30/09/gone.jsonl"}],
            "BatchInput": {
                "capture_bucket": CAPTURE,
                "capture_prefix": "datacapture/",
                "output_bucket": OUT,
                "output_prefix": "",
                "run_id": "r1",
            },
        },
        lambda_context,
    )
    assert (out["objects"], out["objects_missing"]) == (1, 1)
    assert list(out["components"]) == ["lora-a"] and out["components"]["lora-a"]["converted"] == 1


def test_convert_access_denied_is_a_named_error(handler, lambda_context):
    stub = Stubber(handler._s3())
    stub.add_client_error(
        "get_object",
        service_error_code="AccessDenied",
        http_status_code=403,
        expected_params={"Bucket": CAPTURE, "Key": "k.jsonl"},
    )
    with stub, pytest.raises(handler.CaptureAccessDeniedError, match="s3://capture-bucket/k.jsonl"):
        handler.convert(
            {
                "Items": [{"key": "k.jsonl"}],
                "BatchInput": {"capture_bucket": CAPTURE, "output_bucket": OUT, "run_id": "r1"},
            },
            lambda_context,
        )


def test_plan_watermark_is_per_capture_folder(aws, handler, lambda_context):
    s3, ssm = aws
    # Two endpoints (and two variants) under one prefix: global key order is not time order.
    a = "datacapture/ep-a/AllTraffic"
    b = "datacapture/ep-b/Blue"
    for key in (f"{a}/2026/11/30/08/00-00-000-a1.jsonl", f"{b}/2026/11/30/07/00-00-000-b1.jsonl"):
        put_capture(s3, key, [capture(chat_request("q"), chat_response("a"))])
    s3.put_object(Bucket=CAPTURE, Key=f"{a}/README.txt", Body=b"not a capture file")
    first = handler.plan(plan_event(), lambda_context)
    assert first["object_count"] == 2
    ssm.put_parameter(Name=PARAM, Value=first["watermark_value"], Type="String")
    # New data arrives in ep-b at a key that sorts before ep-a's last key: it must not be missed.
    put_capture(s3, f"{b}/2026/11/30/09/00-00-000-b2.jsonl", [capture(chat_request("q"), chat_response("a"))])
    put_capture(s3, f"{a}/2026/11/30/09/00-00-000-a2.jsonl", [capture(chat_request("q"), chat_response("a"))])
    second = handler.plan(plan_event(run_id="run-2"), lambda_context)
    assert [i["key"] for i in read_json(s3, OUT, second["manifest_key"])] == [
        f"{a}/2026/11/30/09/00-00-000-a2.jsonl",
        f"{b}/2026/11/30/09/00-00-000-b2.jsonl",
    ]
    assert second["new_watermark"] == f"{b}/2026/11/30/09/00-00-000-b2.jsonl"
    assert json.loads(second["watermark_value"])["after"] == {
        f"{a}/": "2026/11/30/09/00-00-000-a2.jsonl",
        f"{b}/": "2026/11/30/09/00-00-000-b2.jsonl",
    }


def test_plan_accepts_a_plain_key_watermark_and_caps_objects(aws, handler, lambda_context):
    s3, ssm = aws
    keys = [f"{EP}/2026/11/30/0{h}/00-00-000-x{h}.jsonl" for h in range(1, 6)]
    for key in keys:
        put_capture(s3, key, [capture(chat_request("q"), chat_response("a"))])
    ssm.put_parameter(Name=PARAM, Value=keys[1], Type="String")
    out = handler.plan(plan_event(max_objects=2), lambda_context)
    assert [i["key"] for i in read_json(s3, OUT, out["manifest_key"])] == keys[2:4]
    assert out["truncated"] is True and out["new_watermark"] == keys[3] and out["previous_watermark"] == keys[1]
    assert out["watermark_previous_value"] == keys[1]


def test_plan_with_nothing_new_keeps_the_watermark(aws, handler, lambda_context):
    s3, ssm = aws
    out = handler.plan(plan_event(), lambda_context)
    assert out["object_count"] == 0 and out["new_watermark"] is None and out["watermark_value"] is None
    assert read_json(s3, OUT, out["manifest_key"]) == []
    final = handler.finalize({"plan": out, "results": None}, lambda_context)
    assert (
        final["empty"] is True
        and final["records"] == 0
        and "No training records for component 'base'" in final["reason"]
    )
    assert final["watermark_commit"] is None
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name=PARAM)


def test_plan_refuses_a_watermark_that_does_not_fit_in_ssm(aws, handler, lambda_context):
    s3, _ = aws
    for index in range(40):
        name = f"endpoint-{index:02d}-" + "x" * 50
        put_capture(s3, f"datacapture/{name}/AllTraffic/2026/11/30/08/00-00-000-a.jsonl", [b"{}"])
    with pytest.raises(
        handler.WatermarkTooLargeError, match="40 capture folders .* Narrow capture_prefix to one endpoint"
    ):
        handler.plan(plan_event(), lambda_context)


def test_plan_rejects_a_prefix_inside_the_date_folders(handler, lambda_context):
    with pytest.raises(handler.InvalidEventError, match="capture_prefix"):
        handler.plan(plan_event(capture_prefix="datacapture/ep/AllTraffic/2026/11/"), lambda_context)


def test_finalize_publishes_tolerated_partial_runs_but_keeps_the_watermark(aws, handler, lambda_context):
    s3, ssm = aws
    seed_capture(s3)
    plan_out = handler.plan(plan_event(), lambda_context)
    results = simulate_distributed_map(s3, handler, plan_out, lambda_context, batch_size=2, fail=frozenset({1}))
    out = handler.finalize({"plan": plan_out, "results": results}, lambda_context)
    # batch 0 (objects 1 and 2) made it; batch 1 (object 3) timed out and is converted again next run
    assert (out["complete"], out["failed_batches"], out["records"], out["watermark_commit"]) == (False, 1, 2, None)
    summary = read_json(s3, OUT, out["summary_key"])
    assert (summary["complete"], summary["failed_objects"], summary["objects"]) == (False, 1, 2)
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name=PARAM)


@pytest.mark.parametrize("status", ["FAILED", "PENDING"])
def test_finalize_refuses_failed_batches_it_cannot_account_for(aws, handler, lambda_context, status):
    s3, ssm = aws
    seed_capture(s3)
    plan_out = handler.plan(plan_event(), lambda_context)
    results = simulate_distributed_map(s3, handler, plan_out, lambda_context)
    manifest = read_json(s3, OUT, results["results_manifest_key"])
    s3.put_object(
        Bucket=OUT, Key=f"results/x/{status}_0.json", Body=json.dumps([{"Status": status, "Name": "9"}]).encode()
    )
    manifest["ResultFiles"][status] = [{"Key": f"results/x/{status}_0.json", "Size": 10}]
    s3.put_object(Bucket=OUT, Key=results["results_manifest_key"], Body=json.dumps(manifest).encode())
    with pytest.raises(handler.MapRunIncompleteError, match="a failed batch has no readable Input"):
        handler.finalize({"plan": plan_out, "results": results}, lambda_context)
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name=PARAM)


def test_finalize_refuses_results_that_miss_batches(aws, handler, lambda_context):
    s3, _ = aws
    seed_capture(s3)
    plan_out = handler.plan(plan_event(), lambda_context)
    results = simulate_distributed_map(s3, handler, plan_out, lambda_context, batch_size=1)
    manifest = read_json(s3, OUT, results["results_manifest_key"])
    key = manifest["ResultFiles"]["SUCCEEDED"][0]["Key"]
    s3.put_object(Bucket=OUT, Key=key, Body=json.dumps(read_json(s3, OUT, key)[:2]).encode())
    with pytest.raises(
        handler.MapRunIncompleteError, match="listed 3 capture objects but the batch results account for 2"
    ):
        handler.finalize({"plan": plan_out, "results": results}, lambda_context)


def test_finalize_leaves_a_concurrent_watermark_change_to_the_jobs_start(aws, handler, lambda_context):
    """Finalize neither reads nor writes the parameter: a change made meanwhile stays, and the commit it hands
    on names the value plan read, so the job's start refuses it (``test_eagle_job``) before any job exists."""
    s3, ssm = aws
    seed_capture(s3)
    plan_out = handler.plan(plan_event(), lambda_context)
    results = simulate_distributed_map(s3, handler, plan_out, lambda_context)
    ssm.put_parameter(Name=PARAM, Value="something-else", Type="String")
    out = handler.finalize({"plan": plan_out, "results": results}, lambda_context)
    assert out["watermark_commit"]["stored"] is None
    assert ssm.get_parameter(Name=PARAM)["Parameter"]["Value"] == "something-else"


def test_a_claimed_watermark_is_planned_from_the_claims_start(aws, handler, lambda_context):
    """A claim left by a start that ended between its claim and its commit: plan reads the window again from the
    claim's ``previous`` and hands the claim on as ``stored`` (the next start settles whether its job exists)."""
    s3, ssm = aws
    seed_capture(s3)
    first = handler.plan(plan_event(), lambda_context)
    previous = json.dumps({"v": 1, "after": {f"{EP}/": "2026/11/30/09/05-00-001-aaa.jsonl"}}, separators=(",", ":"))
    claim = json.dumps(
        {
            "v": 1,
            "claim": {
                "job": "eagle-qwen3-32b-0123456789ab",
                "run_id": "run-0",
                "claimed_at": "2026-11-30T11:00:00Z",
                "previous": previous,
                "value": first["watermark_value"],
            },
        },
        separators=(",", ":"),
    )
    ssm.put_parameter(Name=PARAM, Value=claim, Type="String")
    out = handler.plan(plan_event(run_id="run-2"), lambda_context)
    assert read_json(s3, OUT, out["manifest_key"]) == [
        {"key": f"{EP}/2026/11/30/09/35-10-002-bbb.jsonl"},
        {"key": f"{EP}/2026/11/30/10/01-00-003-ccc.jsonl.gz"},
    ]
    assert (out["watermark_stored_value"], out["watermark_previous_value"]) == (claim, previous)
    assert out["previous_watermark"] == f"{EP}/2026/11/30/09/05-00-001-aaa.jsonl"


def test_a_claim_that_cannot_be_read_is_planned_as_a_plain_key(aws, handler, lambda_context):
    s3, ssm = aws
    ssm.put_parameter(Name=PARAM, Value='{"v":1,"claim":[]}', Type="String")
    out = handler.plan(plan_event(), lambda_context)
    assert out["watermark_previous_value"] == out["watermark_stored_value"] == '{"v":1,"claim":[]}'


def test_the_claim_size_plan_allows_for_is_the_claim_the_start_writes(load_handler):
    """Plan refuses a window whose claim would not fit in SSM; it must count the claim as the job's start writes
    it (``eagle_job_core.claim_value``) with the longest job name."""
    dataset = load_handler("eagle_dataset")
    job_core = load_handler("eagle_job", "eagle_job_core")
    previous, value = '{"v":1,"after":{"a/":"2026/x"}}', '{"v":1,"after":{"a/":"2026/y"}}'
    claim = job_core.WatermarkClaim(
        job="e" * job_core.JOB_NAME_MAX,
        run_id="run-7",
        claimed_at="2026-11-30T12:00:00Z",
        previous=previous,
        value=value,
    )
    assert dataset._claim_chars(previous, value, "run-7") == len(job_core.claim_value(claim))
    assert dataset._claimed_previous(job_core.claim_value(claim)) == previous
    assert dataset._claim_chars(None, value, "run-7") == len(
        job_core.claim_value(
            job_core.WatermarkClaim(
                job="e" * 63, run_id="run-7", claimed_at="2026-11-30T12:00:00Z", previous=None, value=value
            )
        )
    )


def test_finalize_rejects_foreign_result_files(aws, handler, lambda_context):
    s3, _ = aws
    s3.put_object(
        Bucket=OUT,
        Key="r/manifest.json",
        Body=b'{"DestinationBucket": "output-bucket", "ResultFiles": '
        b'{"FAILED": [], "PENDING": [], "SUCCEEDED": [{"Key": "r/SUCCEEDED_0.json", "Size": 1}]}}',
    )
    s3.put_object(Bucket=OUT, Key="r/SUCCEEDED_0.json", Body=b'[{"Output": "{\\"hello\\": 1}"}]')
    plan_out = {
        "output_bucket": OUT,
        "output_prefix": "",
        "run_id": "r",
        "watermark_parameter": PARAM,
        "object_count": 0,
    }
    with pytest.raises(handler.ResultsFormatError, match="not a convert result"):
        handler.finalize(
            {"plan": plan_out, "results": {"results_bucket": OUT, "results_manifest_key": "r/manifest.json"}},
            lambda_context,
        )
    s3.put_object(Bucket=OUT, Key="r/manifest.json", Body=b'{"something": "else"}')
    with pytest.raises(handler.ResultsFormatError, match="no ResultFiles"):
        handler.finalize(
            {"plan": plan_out, "results": {"results_bucket": OUT, "results_manifest_key": "r/manifest.json"}},
            lambda_context,
        )


def test_finalize_for_another_target_component(aws, handler, lambda_context, monkeypatch):
    s3, _ = aws
    seed_capture(s3)
    plan_out = handler.plan(plan_event(), lambda_context)
    results = simulate_distributed_map(s3, handler, plan_out, lambda_context)
    monkeypatch.setenv("TARGET_COMPONENT", "sql-adapter")
    out = handler.finalize({"plan": plan_out, "results": results}, lambda_context)
    assert (out["component"], out["records"]) == ("sql-adapter", 1)
    assert out["training_data_s3_uri"] == "s3://output-bucket/eagle/datasets/run-1/data/sql-adapter/"
    missing = handler.finalize({"plan": plan_out, "results": results, "target_component": "no-such-ic"}, lambda_context)
    assert missing["empty"] is True and "set target_component to one of ['base', 'sql-adapter']" in missing["reason"]


def test_records_naming_no_component_never_train_a_component(aws, handler, lambda_context, monkeypatch):
    """Endpoint with adapters (UNNAMED_RECORDS_COMPONENT unset): unnamed records are counted apart."""
    monkeypatch.delenv("UNNAMED_RECORDS_COMPONENT")
    s3, _ = aws
    put_capture(
        s3,
        f"{EP}/2026/11/30/09/05-00-001-aaa.jsonl",
        [
            capture(chat_request("q"), chat_response("a")),  # names nothing
            capture(chat_request("q2"), chat_response("b")),  # names nothing
            capture(chat_request("q3"), chat_response("c"), component="qwen3-32b-ic"),  # named: used
            capture(chat_request("sql"), chat_response("d"), component="sql-adapter"),  # named: its own
        ],
    )
    plan_out = handler.plan(plan_event(), lambda_context)
    results = simulate_distributed_map(s3, handler, plan_out, lambda_context, capture_prefix=None)
    out = handler.finalize({"plan": plan_out, "results": results, "target_component": "qwen3-32b-ic"}, lambda_context)
    assert (out["component"], out["requested_component"], out["records"]) == ("qwen3-32b-ic", "qwen3-32b-ic", 1)
    assert out["unattributed"] == 2 and out["skipped"] == {"unattributed_component": 2}
    assert out["component_records"] == {"_unattributed": 0, "qwen3-32b-ic": 1, "sql-adapter": 1}
    assert "_unattributed" not in out["component_uris"]  # nothing of theirs is written anywhere
    summary = read_json(s3, OUT, out["summary_key"])
    assert summary["unattributed"] == 2 and summary["records_in"] == 4 and summary["converted"] == 2
    assert summary["components"]["_unattributed"]["skipped"] == {"unattributed_component": 2}
    only_unnamed = handler.finalize(
        {"plan": plan_out, "results": results, "target_component": "other-ic"}, lambda_context
    )
    assert only_unnamed["empty"] is True and "2 records named no inference component" in only_unnamed["reason"]


@pytest.mark.parametrize(
    ("entry", "event", "match"),
    [
        ("plan", {**plan_event(), "capture_bucket": "Bad_Bucket"}, "capture_bucket"),
        (
            "plan",
            {k: v for k, v in plan_event().items() if k != "run_id"},
            "run_id: required field is missing; fix: add run_id",
        ),
        ("plan", plan_event(run_id="../escape"), "run_id"),
        (
            "convert",
            {"Items": [], "BatchInput": {"capture_bucket": CAPTURE, "output_bucket": OUT, "run_id": "r"}},
            "Items",
        ),
        ("convert", {"Items": [{"key": "k"}]}, "BatchInput: required field is missing"),
        ("finalize", {"results": None}, "plan: required field is missing"),
        ("validate_user_dataset", {"s3_uri": "https://example.com/x"}, "s3_uri"),
    ],
)
def test_invalid_events_name_the_field(handler, lambda_context, entry, event, match):
    with pytest.raises(handler.InvalidEventError, match=match):
        getattr(handler, entry)(event, lambda_context)


def test_bad_environment_setting_is_explained(handler, lambda_context, monkeypatch):
    monkeypatch.setenv("SHARD_MAX_BYTES", "lots")
    with pytest.raises(
        handler.InvalidEventError,
        match="SHARD_MAX_BYTES: got 'lots'; allowed: a whole number >= 1; fix: set SHARD_MAX_BYTES",
    ):
        handler.convert(
            {"Items": [{"key": "k"}], "BatchInput": {"capture_bucket": CAPTURE, "output_bucket": OUT, "run_id": "r"}},
            lambda_context,
        )


def test_handlers_emit_metrics_and_never_log_payloads(aws, handler, lambda_context, capsys):
    s3, _ = aws
    secret = "SECRET-PROMPT-7f3a"
    put_capture(
        s3,
        f"{EP}/2026/11/30/09/05-00-001-aaa.jsonl",
        [capture(chat_request(secret), chat_response(secret + "-answer"))],
    )
    handler.convert(
        {
            "Items": [{"key": f"{EP}/2026/11/30/09/05-00-001-aaa.jsonl"}],
            "BatchInput": {"capture_bucket": CAPTURE, "output_bucket": OUT, "run_id": "r1"},
        },
        lambda_context,
    )
    out = capsys.readouterr().out
    assert secret not in out
    emf = [json.loads(line) for line in out.splitlines() if line.startswith("{") and '"_aws"' in line]
    assert len(emf) == 1
    assert (emf[0]["CaptureObjectsRead"], emf[0]["RecordsConverted"], emf[0]["RecordsSkipped"]) == ([1.0], [1.0], [0.0])
    assert emf[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "SageMakerLlmTest"


# ---------------------------------------------------------------------------------------------
# validate_user_dataset
# ---------------------------------------------------------------------------------------------


def put_dataset(s3, key: str, rows: list[Any]) -> None:
    s3.put_object(
        Bucket=OUT, Key=key, Body=("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n").encode()
    )


SHAREGPT = {"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}
CHAT = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
COMPLETION = {"prompt": "q", "completion": "a"}


@pytest.mark.parametrize(
    ("row", "fmt"), [(SHAREGPT, "sharegpt"), (CHAT, "openai_chat"), (COMPLETION, "openai_completions")]
)
def test_validate_detects_each_format(aws, handler, lambda_context, row, fmt):
    s3, _ = aws
    put_dataset(s3, "user/data/a.jsonl", [row] * 5)
    put_dataset(s3, "user/data/b.jsonl", [row] * 3)
    s3.put_object(Bucket=OUT, Key="user/data/empty/", Body=b"")
    out = handler.validate_user_dataset({"s3_uri": "s3://output-bucket/user/data/"}, lambda_context)
    assert out == {
        "format": fmt,
        "s3_uri": "s3://output-bucket/user/data/",
        "lines_checked": 8,
        "objects_checked": ["s3://output-bucket/user/data/a.jsonl", "s3://output-bucket/user/data/b.jsonl"],
    }


def test_validate_reports_the_first_bad_line(aws, handler, lambda_context):
    s3, _ = aws
    put_dataset(s3, "user/bad.jsonl", [CHAT, CHAT, "", {"messages": [{"role": "user", "content": 5}]}, "not json"])
    with pytest.raises(
        handler.DatasetFormatError, match=r"Line 4 of s3://output-bucket/user/bad.jsonl.*content"
    ) as error:
        handler.validate_user_dataset({"s3_uri": "s3://output-bucket/user/bad.jsonl"}, lambda_context)
    assert error.value.line == 4 and "sharegpt" in str(error.value) and "openai_completions" in str(error.value)


def test_validate_rejects_mixed_formats_and_junk(aws, handler, lambda_context):
    s3, _ = aws
    put_dataset(s3, "mixed/a.jsonl", [SHAREGPT, COMPLETION])
    with pytest.raises(
        handler.DatasetFormatError, match="Line 2 .* is openai_completions but earlier records are sharegpt"
    ):
        handler.validate_user_dataset({"s3_uri": "s3://output-bucket/mixed/"}, lambda_context)
    s3.put_object(Bucket=OUT, Key="junk/a.jsonl", Body=b"\xff\xfe\x00binary")
    with pytest.raises(handler.DatasetFormatError, match="Line 1 .* is not UTF-8"):
        handler.validate_user_dataset({"s3_uri": "s3://output-bucket/junk/"}, lambda_context)
    with pytest.raises(handler.DatasetFormatError, match="No non-empty objects under s3://output-bucket/nothing/"):
        handler.validate_user_dataset({"s3_uri": "s3://output-bucket/nothing/"}, lambda_context)


def test_validate_gzip_datasets_and_refuses_what_it_cannot_read(aws, handler, lambda_context):
    """A gzip dataset is read as its lines; an object compressed otherwise, or gzip cut short, is one named
    DatasetFormatError for the object (it was an AttributeError on the reader's UnreadableData marker)."""
    import bz2
    import gzip

    s3, _ = aws
    rows = ("\n".join(json.dumps(CHAT) for _ in range(4)) + "\n").encode()
    s3.put_object(Bucket=OUT, Key="gz/a.jsonl.gz", Body=gzip.compress(rows))
    assert handler.validate_user_dataset({"s3_uri": "s3://output-bucket/gz/"}, lambda_context)["lines_checked"] == 4
    for key, body, said in (
        ("bz/a.jsonl.bz2", bz2.compress(rows), "is compressed in a format other than gzip"),
        ("cut/a.jsonl.gz", gzip.compress(rows * 50)[:60], "starts as gzip but does not decompress"),
    ):
        s3.put_object(Bucket=OUT, Key=key, Body=body)
        with pytest.raises(
            handler.DatasetFormatError, match=re.escape(f"s3://output-bucket/{key} cannot be read: it {said}")
        ):
            handler.validate_user_dataset({"s3_uri": f"s3://output-bucket/{key.split('/')[0]}/"}, lambda_context)


def test_validate_samples_only_the_configured_number_of_lines(aws, handler, lambda_context, monkeypatch):
    s3, _ = aws
    put_dataset(s3, "sample/a.jsonl", [CHAT] * 10 + ["broken"])
    monkeypatch.setenv("VALIDATE_SAMPLE_LINES", "10")
    assert (
        handler.validate_user_dataset({"s3_uri": "s3://output-bucket/sample/"}, lambda_context)["lines_checked"] == 10
    )
    monkeypatch.setenv("VALIDATE_SAMPLE_LINES", "11")
    with pytest.raises(handler.DatasetFormatError, match="Line 11"):
        handler.validate_user_dataset({"s3_uri": "s3://output-bucket/sample/"}, lambda_context)


def test_validate_manifest_file(aws, handler, lambda_context):
    s3, _ = aws
    put_dataset(s3, "m/data/x.jsonl", [COMPLETION])
    s3.put_object(
        Bucket=OUT,
        Key="m/train.manifest",
        Body=json.dumps([{"prefix": "s3://output-bucket/m/data/"}, "x.jsonl"]).encode(),
    )
    out = handler.validate_user_dataset(
        {"s3_uri": "s3://output-bucket/m/train.manifest", "s3_data_type": "ManifestFile"}, lambda_context
    )
    assert out["format"] == "openai_completions" and out["objects_checked"] == ["s3://output-bucket/m/data/x.jsonl"]
    s3.put_object(Bucket=OUT, Key="m/bad.manifest", Body=b'{"not": "a list"}')
    with pytest.raises(handler.DatasetFormatError, match="not a SageMaker manifest file"):
        handler.validate_user_dataset(
            {"s3_uri": "s3://output-bucket/m/bad.manifest", "s3_data_type": "ManifestFile"}, lambda_context
        )


# ---------------------------------------------------------------------------------------------
# check: start a run once enough new records arrived
# ---------------------------------------------------------------------------------------------

MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:QwenEagle"


@pytest.fixture
def checker(aws, handler, monkeypatch):
    from support.aws_model import assert_valid_request

    monkeypatch.setenv("STATE_MACHINE_ARN", MACHINE)
    monkeypatch.setenv("WATERMARK_PARAMETER", PARAM)
    monkeypatch.setenv("CAPTURE_BUCKET", CAPTURE)
    monkeypatch.setenv("CAPTURE_PREFIX", "datacapture/")
    monkeypatch.setenv("MIN_NEW_RECORDS", "3")
    client = handler._sfn()
    stubber = Stubber(client)

    def expect(
        operation: str, params: dict[str, Any], response: dict[str, Any] | None = None, error: str | None = None
    ) -> None:
        assert_valid_request("stepfunctions", client.meta.method_to_api_mapping[operation], params)
        if error:
            stubber.add_client_error(operation, service_error_code=error, expected_params=params)
        else:
            stubber.add_response(operation, response or {}, params)

    with stubber:
        yield expect, stubber


def _no_run_in_progress(expect) -> None:
    expect(
        "list_executions", {"stateMachineArn": MACHINE, "statusFilter": "RUNNING", "maxResults": 1}, {"executions": []}
    )


def test_check_starts_a_run_once_enough_new_records_arrived(aws, handler, checker, lambda_context):
    s3, ssm = aws
    expect, stubber = checker
    seed_capture(s3)  # 2 + 2 + 2 settled lines after an empty watermark (and a too-new object)
    _no_run_in_progress(expect)
    name = handler._execution_name(None, 2)
    expect(
        "start_execution",
        {"stateMachineArn": MACHINE, "name": name, "input": "{}"},
        {
            "executionArn": f"{MACHINE.replace(':stateMachine:', ':execution:')}:{name}",
            "startDate": datetime(2026, 11, 30, 12, tzinfo=UTC),
        },
    )
    out = handler.check({}, lambda_context)
    stubber.assert_no_pending_responses()
    assert out["started"] is True and out["execution_name"] == name and out["records_counted"] == 7
    assert out["objects_read"] == 3  # the gzip object's lines count too (read from its bytes)


def test_check_waits_below_the_threshold_and_counts_only_after_the_watermark(
    aws, handler, checker, lambda_context, monkeypatch
):
    s3, ssm = aws
    expect, stubber = checker
    seed_capture(s3)
    ssm.put_parameter(
        Name=PARAM,
        Type="String",
        Overwrite=True,
        Value=json.dumps({"v": 1, "after": {f"{EP}/": "2026/11/30/09/35-10-002-bbb.jsonl"}}),
    )
    _no_run_in_progress(expect)
    out = handler.check({}, lambda_context)
    stubber.assert_no_pending_responses()  # nothing started
    assert (out["started"], out["records_counted"], out["objects_read"]) == (False, 2, 1)
    assert out["reason"] == "2 new records, fewer than 3"


def test_check_never_starts_while_a_run_is_in_progress(aws, handler, checker, lambda_context):
    s3, _ = aws
    expect, stubber = checker
    seed_capture(s3)
    expect(
        "list_executions",
        {"stateMachineArn": MACHINE, "statusFilter": "RUNNING", "maxResults": 1},
        {
            "executions": [
                {
                    "executionArn": f"{MACHINE}:e1",
                    "stateMachineArn": MACHINE,
                    "name": "e1",
                    "status": "RUNNING",
                    "startDate": datetime(2026, 11, 30, 11, tzinfo=UTC),
                }
            ]
        },
    )
    out = handler.check({}, lambda_context)
    assert out == {"started": False, "reason": "a run is in progress", "records_counted": 0, "objects_read": 0}


def test_check_does_not_restart_a_run_for_the_same_records(aws, handler, checker, lambda_context):
    s3, _ = aws
    expect, stubber = checker
    seed_capture(s3)
    _no_run_in_progress(expect)
    name = handler._execution_name(None, 2)
    expect("start_execution", {"stateMachineArn": MACHINE, "name": name, "input": "{}"}, error="ExecutionAlreadyExists")
    out = handler.check({}, lambda_context)
    assert out["started"] is False and "already started" in out["reason"] and out["execution_name"] == name


def test_check_execution_names_are_valid_and_step_with_new_records():
    import re as regex

    from conftest import load_handler_module

    mod = load_handler_module("eagle_dataset")
    names = {mod._execution_name(w, step) for w in (None, '{"v":1,"after":{}}', "x" * 4096) for step in (1, 2, 10)}
    assert len(names) == 9 and all(regex.fullmatch(r"[A-Za-z0-9_-]{1,80}", n) for n in names)


def test_check_needs_its_environment(handler, lambda_context, monkeypatch):
    monkeypatch.delenv("STATE_MACHINE_ARN", raising=False)
    with pytest.raises(
        handler.InvalidEventError,
        match=r"STATE_MACHINE_ARN: got \(not set\); allowed: the EAGLE pipeline's state machine ARN",
    ):
        handler.check({}, lambda_context)


@pytest.mark.parametrize("fast", [False, True], ids=["stdlib", "orjson"])
def test_a_llama2_prefill_keeps_its_trailing_space_and_an_echoed_llama2_prompt_is_trimmed(fast):
    """The model continued "Sure, " (the space included); TGI's return_full_text answer repeats the whole prompt."""
    prefill = capture({"inputs": "<s>[INST] Name a fruit. [/INST] Sure, "}, [{"generated_text": "apple."}])
    echoed = capture({"inputs": LLAMA2, "parameters": {"return_full_text": True}}, [{"generated_text": LLAMA2 + " 6"}])
    _, out = run([prefill, echoed], fast=fast)
    got = records(out)
    assert got[0]["messages"] == [
        {"role": "user", "content": "Name a fruit."},
        {"role": "assistant", "content": "Sure, apple."},
    ]
    assert got[1]["messages"][-2:] == [{"role": "user", "content": "And 3+3?"}, {"role": "assistant", "content": " 6"}]


def test_a_llama2_prompt_of_many_turns_is_read_in_one_pass():
    """5,000 turns (a hostile or very long conversation): every turn comes back, in order."""
    prompt = "".join(f"<s>[INST] q{i} [/INST] a{i} </s>" for i in range(5000)) + "<s>[INST] last [/INST]"
    messages, text = core._text_messages(prompt)
    assert text == prompt and len(messages) == 10_001
    assert messages[:2] == [("user", "q0"), ("assistant", "a0")] and messages[-1] == ("user", "last")
