"""EAGLE dataset builder on Data Capture files as SageMaker writes them (tests/fixtures/data_capture/).

The fixtures are byte-exact capture objects: one compact JSON document per line, fields in the
documented order (captureData.endpointInput/endpointOutput{observedContentType, mode, data,
encoding}, eventMetadata{eventId, inferenceId?, inferenceTime}, eventVersion), payloads as the
clients and model servers send them (LMI, TGI, vLLM, JumpStart; JSON, BASE64 and CSV encodings;
streamed bodies), plus what an object can look like around its lines (CRLF, BOM, no final newline,
a line cut mid-write, gzip, junk). The README there names the sources of each.

Each file runs through the pipeline the convert handler runs (``iter_object_data`` ->
``iter_bounded_line_views`` -> ``BatchConverter.convert_lines``), in small read chunks so records
cross chunk boundaries, on both the orjson and the standard-library paths: the records written
and the skip reasons are asserted exactly, and the two paths must write the same bytes.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import load_handler_module

core = load_handler_module("eagle_dataset", "eagle_dataset_core")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "data_capture"
PATHS = [pytest.param(False, id="stdlib"), pytest.param(True, id="orjson")]


def convert_file(
    name: str,
    *,
    fast: bool,
    chunk: int = 61,
    default_component: str | None = "base",
    path_component: str | None = None,
    max_line_bytes: int = 8 << 20,
) -> tuple[list[tuple[str, bytes]], dict[str, Any]]:
    data = (FIXTURES / name).read_bytes()
    return convert_bytes(
        data,
        fast=fast,
        chunk=chunk,
        default_component=default_component,
        path_component=path_component,
        max_line_bytes=max_line_bytes,
    )


def convert_bytes(
    data: bytes,
    *,
    fast: bool,
    chunk: int = 61,
    default_component: str | None = "base",
    path_component: str | None = None,
    max_line_bytes: int = 8 << 20,
) -> tuple[list[tuple[str, bytes]], dict[str, Any]]:
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    converter = core.BatchConverter(default_component=default_component, fast=fast)
    lines = core.iter_bounded_line_views(core.iter_object_data(chunks), max_line_bytes)
    out = list(converter.convert_lines(lines, path_component=path_component))
    return out, converter.summary()


def chat(*turns: tuple[str, str]) -> dict[str, Any]:
    return {"messages": [{"role": role, "content": content} for role, content in turns]}


def written(out: list[tuple[str, bytes]]) -> list[tuple[str, dict[str, Any]]]:
    for _, line in out:  # what the optimization job reads: compact UTF-8 JSON, one record a line
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert core.is_chat_record(json.loads(line))
    return [(component, json.loads(line)) for component, line in out]


VLLM_TURN = chat(("system", "Be brief."), ("user", "2+2?"), ("assistant", "4"))

AGENT_USER = [{"role": "system", "content": "You plan trips."}, {"role": "user", "content": "Weather in Paris?"}]
AGENT_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "chatcmpl-tool-1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    ],
}
AGENT_RESULT = {"role": "tool", "tool_call_id": "chatcmpl-tool-1", "content": '{"celsius": 18}'}

#: fixture -> (records written as (component, record), duplicates, skipped reasons)
EXPECTED: dict[str, tuple[list[tuple[str, dict[str, Any]]], int, dict[str, int]]] = {
    # The developer guide's own sample (a tabular model, CSV encoding, "text/csv; charset=utf-8"): the answers
    # are numbers, not generated text, so nothing is written.
    "aws-doc-csv.jsonl": ([], 0, {"unsupported_response_shape": 2}),
    # LMI with application/json in JsonContentTypes: the payload is the request body's text.
    "lmi-json.jsonl": (
        [
            (
                "base",
                chat(
                    ("user", "What is Deep Learning?"), ("assistant", " Deep Learning is a subset of machine learning.")
                ),
            ),
            ("base", chat(("system", "Answer in one word."), ("user", "Capital of France?"), ("assistant", "Paris"))),
            ("base", chat(("user", "Größe von 日本?"), ("assistant", "Groß – 大きい"))),
        ],
        0,
        {"error_response": 1, "unsupported_request_shape": 1},
    ),
    # No CaptureContentTypeHeader: every payload BASE64 (TGI, vLLM, TGI Messages API, an echoed prompt).
    "base64-default.jsonl": (
        [
            ("base", chat(("user", "Name a prime."), ("assistant", "7"))),
            ("base", VLLM_TURN),
            ("base", chat(("user", "Say hi"), ("assistant", "Hi!"))),
            ("base", chat(("user", "The capital of Italy is"), ("assistant", " Rome."))),
        ],
        1,
        {},
    ),
    # Streamed bodies: LMI JSON Lines and SSE, TGI SSE (special end token), TGI Messages and vLLM chat SSE,
    # a completions stream, one captured with JSON encoding, and an LMI stream that failed.
    "streams.jsonl": (
        [
            ("base", chat(("user", "What is Deep Learning?"), ("assistant", "Deep Learning rocks."))),
            ("base", chat(("user", "Greet me"), ("assistant", "Hi there"))),
            ("base", chat(("user", "Say hello"), ("assistant", "Hello world"))),
            ("base", chat(("user", "Greet"), ("assistant", "Hello"))),
            ("base", chat(("user", "Salue"), ("assistant", "Bonjour à tous"))),
            ("base", chat(("user", "2+2 ="), ("assistant", " 4."))),
            ("base", chat(("user", "Salue encore"), ("assistant", "Bonjour à tous"))),
        ],
        0,
        {"error_response": 1},
    ),
    # JumpStart: Llama 2 chat (a batch of one dialog -> [{"generation": message}]), Llama 2 text
    # ([{"generation": text}]), FLAN-T5 ({"generated_texts": [...]}: an encoder-decoder, no EAGLE head), Falcon/TGI.
    "jumpstart.jsonl": (
        [
            ("base", chat(("system", "Reply in French."), ("user", "Hello"), ("assistant", " Bonjour !"))),
            ("base", chat(("user", "I believe the meaning of life is"), ("assistant", " to be happy."))),
            ("base", chat(("user", "Write a haiku about rain."), ("assistant", "Soft rain on the roof"))),
        ],
        0,
        {"unsupported_response_shape": 1},
    ),
    # Agent traffic as vLLM answers it with a tool-call and a reasoning parser: a tool call (buffered, then the same
    # turn streamed in pieces with reasoning: a duplicate), the answer after the tool result (buffered, then
    # streamed: a duplicate), and a legacy function_call that no record holds.
    "agent-tools.jsonl": (
        [
            ("base", {"messages": [*AGENT_USER, AGENT_CALL]}),
            (
                "base",
                {
                    "messages": [
                        *AGENT_USER,
                        AGENT_CALL,
                        AGENT_RESULT,
                        {"role": "assistant", "content": "It is 18 °C in Paris."},
                    ]
                },
            ),
        ],
        2,
        {"unsupported_message_role": 1},
    ),
    "edge-empty.jsonl": ([], 0, {}),
    "edge-crlf.jsonl": ([("base", chat(("user", "Ping?"), ("assistant", "Pong."))), ("base", VLLM_TURN)], 0, {}),
    "edge-bom.jsonl": ([("base", chat(("user", "Ping?"), ("assistant", "Pong."))), ("base", VLLM_TURN)], 0, {}),
    "edge-no-final-newline.jsonl": (
        [("base", chat(("user", "Ping?"), ("assistant", "Pong."))), ("base", VLLM_TURN)],
        0,
        {},
    ),
    "edge-gzip.jsonl.gz": ([("base", chat(("user", "Ping?"), ("assistant", "Pong."))), ("base", VLLM_TURN)], 0, {}),
    # the last record was cut mid-write: counted, never guessed at
    "edge-cut-last-line.jsonl": ([("base", chat(("user", "Ping?"), ("assistant", "Pong.")))], 0, {"truncated_line": 1}),
    # a blank line, one record pretty-printed over 22 lines (each line is counted: no line is a record), a raw
    # Latin-1 byte, a record written with \u escapes (read as any other), spaces, NUL padding
    "edge-junk.jsonl": (
        [
            ("base", chat(("user", "Ping?"), ("assistant", "Pong."))),
            ("base", chat(("user", "Café?"), ("assistant", "Oui – très."))),
        ],
        0,
        {"blank_line": 2, "invalid_json_line": 21, "not_utf8": 1, "truncated_line": 1},
    ),
}


@pytest.mark.parametrize("fast", PATHS)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_capture_file_converts_to_exact_records_and_skip_reasons(name, fast):
    expected_records, duplicates, skipped = EXPECTED[name]
    out, summary = convert_file(name, fast=fast)
    assert written(out) == expected_records
    assert (summary["converted"], summary["duplicates"], summary["skipped"]) == (
        len(expected_records),
        duplicates,
        skipped,
    )
    assert summary["records_in"] == len(expected_records) + duplicates + sum(skipped.values())


def test_every_fixture_is_covered_and_both_paths_write_the_same_bytes_for_any_read_size():
    names = sorted(path.name for path in FIXTURES.iterdir() if path.name not in ("README.md", ".gitattributes"))
    assert names == sorted([*EXPECTED, "inference-components.jsonl"])
    for name in names:
        fast = convert_file(name, fast=True, chunk=1 << 20, default_component=None, path_component="ep-component")
        pure = convert_file(name, fast=False, chunk=7, default_component=None, path_component="ep-component")
        assert fast == pure, name


def test_fixtures_hold_the_bytes_they_are_named_for():
    """Git or an editor must not have normalised them (see the .gitattributes next to them)."""
    assert (FIXTURES / "edge-crlf.jsonl").read_bytes().count(b"\r\n") == 2
    assert (FIXTURES / "edge-bom.jsonl").read_bytes().startswith(b"\xef\xbb\xbf{")
    assert not (FIXTURES / "edge-no-final-newline.jsonl").read_bytes().endswith(b"\n")
    assert (FIXTURES / "edge-gzip.jsonl.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert b"\xe9" in (FIXTURES / "edge-junk.jsonl").read_bytes()
    first = json.loads((FIXTURES / "aws-doc-csv.jsonl").read_bytes().split(b"\n")[0])
    assert list(first) == ["captureData", "eventMetadata", "eventVersion"]
    assert list(first["captureData"]["endpointInput"]) == ["observedContentType", "mode", "data", "encoding"]
    assert first["captureData"]["endpointOutput"]["observedContentType"] == "text/csv; charset=utf-8"


@pytest.mark.parametrize("fast", PATHS)
def test_inference_component_records_go_to_their_component_and_unnamed_ones_are_kept_apart(fast):
    out, summary = convert_file("inference-components.jsonl", fast=fast, default_component=None)
    assert written(out) == [
        ("qwen3-8b-ic", VLLM_TURN),
        ("llama-sql-adapter", chat(("user", "Say hi"), ("assistant", "Hi!"))),
    ]
    assert summary["components"][core.UNATTRIBUTED]["skipped"] == {"unattributed_component": 1}
    # the record naming none takes the component its key names, when the key names one
    out, summary = convert_file(
        "inference-components.jsonl", fast=fast, default_component=None, path_component="from-key"
    )
    assert [component for component, _ in out] == ["qwen3-8b-ic", "llama-sql-adapter", "from-key"]


@pytest.mark.parametrize("fast", PATHS)
def test_a_line_past_the_limit_is_skipped_unread_and_the_next_one_still_converts(fast):
    lines = (FIXTURES / "base64-default.jsonl").read_bytes().split(b"\n")
    record = json.loads(lines[1])
    record["captureData"]["endpointInput"]["data"] = "eyJt" * (9 << 18)  # 9 MiB of base64: a long prompt, never decoded
    huge = json.dumps(record, separators=(",", ":")).encode()
    out, summary = convert_bytes(huge + b"\n" + lines[0] + b"\n", fast=fast, chunk=1 << 20)
    assert written(out) == [("base", chat(("user", "Name a prime."), ("assistant", "7")))]
    assert summary["skipped"] == {"line_too_long": 1}


def _sse_capture(body: bytes) -> bytes:
    request = base64.b64encode(
        json.dumps({"messages": [{"role": "user", "content": "Hi"}], "stream": True}).encode()
    ).decode()
    return (
        json.dumps(
            {
                "captureData": {
                    "endpointInput": {
                        "observedContentType": "application/json",
                        "mode": "INPUT",
                        "data": request,
                        "encoding": "BASE64",
                    },
                    "endpointOutput": {
                        "observedContentType": "text/event-stream",
                        "mode": "OUTPUT",
                        "data": base64.b64encode(body).decode(),
                        "encoding": "BASE64",
                    },
                },
                "eventMetadata": {
                    "eventId": "4651a1bf-4b00-4248-a309-4a18b11e4277",
                    "inferenceTime": "2026-11-30T10:15:02Z",
                },
                "eventVersion": "0",
            },
            separators=(",", ":"),
        ).encode()
        + b"\n"
    )


@pytest.mark.parametrize("fast", PATHS)
@pytest.mark.parametrize(
    "token", ["line\u2028sep", "para\u2029sep", "next\x85line"], ids=["U+2028", "U+2029", "U+0085"]
)
@pytest.mark.parametrize("end", ["\n\n", "\r\n\r\n", "\r\r"], ids=["LF", "CRLF", "CR"])
def test_streamed_tokens_holding_unicode_line_separators_are_kept(token, end, fast):
    """TGI and vLLM write these raw inside JSON strings; only LF, CRLF and CR end a server-sent event line
    (before: str.splitlines cut the event in two and the record was lost as unsupported_response_shape)."""
    events = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in ("A ", token)]
    body = "".join("data: " + json.dumps(e, ensure_ascii=False, separators=(",", ":")) + end for e in events)
    out, summary = convert_bytes(_sse_capture((body + "data: [DONE]" + end).encode()), fast=fast)
    assert written(out) == [("base", chat(("user", "Hi"), ("assistant", "A " + token)))]


@pytest.mark.parametrize("fast", PATHS)
def test_lmi_failed_generation_is_an_error_response_and_text_before_a_failure_is_kept(fast):
    lines = (FIXTURES / "lmi-json.jsonl").read_bytes().split(b"\n")
    failed = json.loads(lines[3])
    assert json.loads(failed["captureData"]["endpointOutput"]["data"])["details"]["finish_reason"] == "error"
    partial = json.loads(lines[3])
    partial["captureData"]["endpointOutput"]["data"] = json.dumps(
        {"generated_text": "Half an answer", "details": {"finish_reason": "error", "generated_tokens": 3}}
    )
    out, summary = convert_bytes(lines[3] + b"\n" + json.dumps(partial).encode() + b"\n", fast=fast)
    assert written(out) == [("base", chat(("user", "x" * 20), ("assistant", "Half an answer")))]
    assert summary["skipped"] == {"error_response": 1}


@pytest.mark.parametrize("fast", PATHS)
def test_jumpstart_batches_of_several_dialogs_are_not_guessed_at(fast):
    lines = (FIXTURES / "jumpstart.jsonl").read_bytes().split(b"\n")
    record = json.loads(lines[0])
    request = json.loads(base64.b64decode(record["captureData"]["endpointInput"]["data"]))
    request["inputs"] = request["inputs"] * 2
    record["captureData"]["endpointInput"]["data"] = base64.b64encode(json.dumps(request).encode()).decode()
    user_reply = json.loads(lines[0])
    user_reply["captureData"]["endpointOutput"]["data"] = base64.b64encode(
        json.dumps([{"generation": {"role": "user", "content": "not the model's"}}]).encode()
    ).decode()
    out, summary = convert_bytes(
        json.dumps(record).encode() + b"\n" + json.dumps(user_reply).encode() + b"\n", fast=fast
    )
    assert out == [] and summary["skipped"] == {"unsupported_request_shape": 1, "unsupported_response_shape": 1}


@pytest.mark.parametrize("fast", PATHS)
@pytest.mark.parametrize("encoding", ["BASE64", "JSON"])
def test_an_empty_captured_body_is_an_empty_response(encoding, fast):
    """AWS does not document what a streamed invocation's capture holds; an output captured empty has no text
    (before: unsupported_response_shape, as if it were a format the builder does not know)."""
    record = json.loads((FIXTURES / "streams.jsonl").read_bytes().split(b"\n")[0])
    record["captureData"]["endpointOutput"].update(data="", encoding=encoding)
    out, summary = convert_bytes(json.dumps(record, separators=(",", ":")).encode() + b"\n", fast=fast)
    assert out == [] and summary["skipped"] == {"empty_response": 1}


def test_convert_handler_writes_what_the_fixtures_convert_to_under_the_documented_key_layout(
    load_handler, lambda_context, monkeypatch
):
    """One Distributed Map batch over every single-component fixture, stored as Data Capture names its objects
    (``<prefix>/<endpoint>/<variant>/yyyy/mm/dd/hh/MM-SS-mmm-<uuid>.jsonl``): the shards hold each record the
    files convert to once (later copies in the batch are duplicates) and the counts add up to the files'."""
    from moto import mock_aws

    monkeypatch.setenv("UNNAMED_RECORDS_COMPONENT", "base")  # what the construct sets for a model alone on its endpoint
    names = sorted(EXPECTED)
    keys = [
        f"datacapture/qwen3-ep/AllTraffic/2026/11/30/09/{minute:02d}-18-648-cee08c3a-02ce-4790-b8ba-3173cfc128{minute:02d}"
        f"{'.jsonl.gz' if name.endswith('.gz') else '.jsonl'}"
        for minute, name in enumerate(names)
    ]
    unique: list[dict[str, Any]] = []
    for name in names:
        unique += [record for _, record in EXPECTED[name][0] if record not in unique]
    converted = sum(len(EXPECTED[name][0]) for name in names)
    skipped: dict[str, int] = {}
    for name in names:
        for reason, count in EXPECTED[name][2].items():
            skipped[reason] = skipped.get(reason, 0) + count
    with mock_aws():
        import boto3

        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="capture-bucket")
        s3.create_bucket(Bucket="output-bucket")
        for key, name in zip(keys, names, strict=True):
            s3.put_object(Bucket="capture-bucket", Key=key, Body=(FIXTURES / name).read_bytes())
        handler = load_handler("eagle_dataset")
        monkeypatch.setenv("READ_CHUNK_BYTES", "4096")  # several reads per object: records cross read boundaries
        out = handler.convert(
            {
                "Items": [{"key": key} for key in keys],
                "BatchInput": {
                    "capture_bucket": "capture-bucket",
                    "capture_prefix": "datacapture/",
                    "output_bucket": "output-bucket",
                    "output_prefix": "eagle",
                    "run_id": "r1",
                },
            },
            lambda_context,
        )
        shards = out["components"]["base"]["shards"]
        body = b"".join(
            s3.get_object(Bucket="output-bucket", Key=f"eagle/r1/data/base/{shard}")["Body"].read() for shard in shards
        )
    assert [json.loads(line) for line in body.splitlines()] == unique
    assert (out["objects"], out["converted"], out["duplicates"]) == (
        len(names),
        len(unique),
        converted - len(unique) + sum(EXPECTED[name][1] for name in names),
    )
    assert out["skipped"] == dict(sorted(skipped.items()))


@pytest.mark.parametrize("fast", PATHS)
@pytest.mark.parametrize("variant", ["line-wrapped", "url-safe"])
def test_base64_other_than_the_standard_unwrapped_alphabet_is_skipped_not_guessed(variant, fast):
    record = json.loads((FIXTURES / "base64-default.jsonl").read_bytes().split(b"\n")[1])
    part = record["captureData"]["endpointOutput"]
    raw = base64.b64decode(part["data"]) + b" \xff\xfe"  # bytes whose standard base64 has "/" or "+"
    data = base64.b64encode(raw).decode()
    part["data"] = (
        "\r\n".join(data[i : i + 76] for i in range(0, len(data), 76))
        if variant == "line-wrapped"
        else base64.urlsafe_b64encode(raw).decode()
    )
    assert part["data"] != data
    out, summary = convert_bytes(json.dumps(record).encode() + b"\n", fast=fast)
    assert out == [] and summary["skipped"] == {"undecodable_base64": 1}
