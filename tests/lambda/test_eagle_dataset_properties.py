"""Property tests for the EAGLE dataset core: capture data is untrusted input.

For any input the converter never raises, every line it writes is a valid chat-completions
record and one line for every line splitter (``str.splitlines`` too), and
``records_in == converted + skipped + duplicates`` holds per component and in total.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from conftest import load_handler_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.properties import examples

core = load_handler_module("eagle_dataset", "eagle_dataset_core")

SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
#: Every character ``str.splitlines`` breaks a line at: drawn often, as a uniform draw almost never picks U+0085.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# includes lone surrogates, control characters, template markers, line breaks
texts = st.text(max_size=40) | st.text(st.sampled_from(LINE_BREAKS) | st.characters(), max_size=40)
unhashable = st.lists(st.just("user"), max_size=1) | st.dictionaries(st.just("text"), st.none(), max_size=1)
roles = st.sampled_from(["system", "developer", "user", "assistant", "tool", "robot", None]) | unhashable
content = (
    texts
    | st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["text", "image_url", "input_text"]) | unhashable, "text": texts}
        ),
        max_size=3,
    )
    | st.none()
    | st.integers()
)
message = st.fixed_dictionaries({"role": roles, "content": content})
requests = st.one_of(
    st.fixed_dictionaries({"messages": st.lists(message, max_size=4)}),
    st.fixed_dictionaries({"prompt": texts | st.lists(texts, max_size=2) | st.lists(st.integers(), max_size=3)}),
    st.fixed_dictionaries(
        {
            "inputs": texts
            | st.sampled_from(
                [
                    "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n",
                    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nq<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
                    "<|im_start|>assistant\nonly<|im_end|>",
                ]
            ),
            "parameters": json_values,
        }
    ),
    st.fixed_dictionaries(
        {
            "inputs": st.fixed_dictionaries(
                {
                    "text": texts,
                    "past_user_inputs": st.lists(texts, max_size=2),
                    "generated_responses": st.lists(texts, max_size=2),
                }
            )
        }
    ),
    texts,
    json_values,
)
# Streamed responses: OpenAI-style chunks (what the orjson path reads in place) and everything that
# changes what a chunk means (errors, TGI tokens, generated_text, escaped keys), in SSE framings.
stream_chunks = st.one_of(
    st.fixed_dictionaries(
        {
            "choices": st.lists(
                st.fixed_dictionaries(
                    {
                        "index": st.just(0),
                        "delta": st.fixed_dictionaries(
                            {}, optional={"role": st.just("assistant"), "content": texts | st.none()}
                        ),
                    }
                ),
                max_size=2,
            )
        }
    ),
    st.fixed_dictionaries(
        {
            "id": st.just("chatcmpl-1"),
            "object": st.sampled_from(["chat.completion.chunk", "error"]),
            "choices": st.lists(st.fixed_dictionaries({"text": texts | st.integers()}), max_size=1),
        }
    ),
    st.fixed_dictionaries(
        {"token": st.fixed_dictionaries({"text": texts, "special": st.booleans()}), "generated_text": texts | st.none()}
    ),
    st.fixed_dictionaries({"error": texts}),
    st.fixed_dictionaries({"ErrorCode": st.integers(), "choices": st.just([])}),
    st.fixed_dictionaries(
        {"choices": st.just([{"delta": {"content": "c"}}])},  # a key that outranks "choices"
        optional={
            "error": texts,
            "token": st.fixed_dictionaries({"text": texts}),
            "generated_text": texts,
            "object": st.just("error"),
        },
    ),
    st.sampled_from(["error", "token", "[DONE]", " error"]).map(lambda t: {"choices": [{"delta": {"content": t}}]}),
    json_values,
)


@st.composite
def sse_streams(draw) -> str:
    out = []
    for chunk in draw(st.lists(stream_chunks, max_size=6)):
        payload = json.dumps(chunk, ensure_ascii=draw(st.booleans()))
        if draw(st.integers(0, 9)) == 0:  # a key or value spelled with an escape
            payload = payload.replace('"error"', '"\\u0065rror"').replace('"token"', '"\\u0074oken"')
        if draw(st.integers(0, 9)) == 0:
            out.append(
                draw(
                    st.sampled_from(
                        [
                            ": keep-alive\n",
                            "event: message\n",
                            "data:\n",
                            "data: [DONE]\n\n",
                            "\u2028",
                            "id: 3\n",
                            "  \n",
                        ]
                    )
                )
            )
        out.append(
            draw(st.sampled_from(["data: ", "data:", "data:  ", " data: ", "data:\t"]))
            + payload
            + draw(st.sampled_from(["\n\n", "\r\n\r\n", "\n", " \n\n"]))
        )
    if draw(st.booleans()):
        out.append("data: [DONE]\n\n")
    return "".join(out)


responses = st.one_of(
    sse_streams(),
    st.fixed_dictionaries({"choices": st.lists(st.fixed_dictionaries({"message": message}), max_size=2)}),
    st.fixed_dictionaries({"choices": st.lists(st.fixed_dictionaries({"text": texts | st.integers()}), max_size=2)}),
    st.lists(st.fixed_dictionaries({"generated_text": texts | st.none()}), max_size=2),
    st.fixed_dictionaries({"generated_text": texts | st.none() | st.lists(texts, max_size=2)}),
    st.fixed_dictionaries({"error": texts}),
    texts,
    json_values,
)


def encode(payload: Any, encoding: str, raw: bool) -> Any:
    # raw: an arbitrary text body (streams, plain text, junk)
    text = (payload if isinstance(payload, str) else json.dumps(payload)) if raw else json.dumps(payload)
    if encoding == "BASE64":
        return base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")
    return text


@st.composite
def capture_lines(draw) -> bytes:
    encoding = draw(st.sampled_from(["JSON", "BASE64", "CSV", "PARQUET", None]))
    part_in = {"mode": "INPUT", "data": encode(draw(requests), encoding, draw(st.booleans())), "encoding": encoding}
    part_out = {"mode": "OUTPUT", "data": encode(draw(responses), encoding, draw(st.booleans())), "encoding": encoding}
    capture: dict[str, Any] = {"captureData": {}}
    if draw(st.integers(0, 9)):  # mostly present, sometimes missing or replaced by junk
        capture["captureData"]["endpointInput"] = part_in if draw(st.integers(0, 9)) else draw(json_values)
    if draw(st.integers(0, 9)):
        capture["captureData"]["endpointOutput"] = part_out if draw(st.integers(0, 9)) else draw(json_values)
    metadata: dict[str, Any] = {"eventId": "e"}
    component = draw(st.sampled_from([None, None, "base", "adapter-1", "ic-2", "", "bad name", 7]))
    if component is not None:
        metadata["inferenceComponentName"] = component
    capture["eventMetadata"] = metadata
    line = json.dumps(capture).encode("utf-8", "surrogatepass")
    cut = draw(st.integers(0, 20))
    return line[:-cut] if cut and cut < len(line) and draw(st.booleans()) else line


def check(converter: Any, out: list[tuple[str, bytes]], fed: int) -> None:
    summary = converter.summary()
    assert summary["records_in"] == fed
    for stats in [summary, *summary["components"].values()]:
        assert stats["records_in"] == stats["converted"] + stats["duplicates"] + sum(stats["skipped"].values())
        assert set(stats["skipped"]) <= set(core.SKIP_REASONS)
    assert len(out) == summary["converted"]
    for component, line in out:
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        text = line.decode("utf-8")  # strict UTF-8: no surrogates written
        assert len(text.splitlines()) == 1 and len(line.splitlines()) == 1  # one line for every JSON Lines reader
        record = json.loads(text)
        assert core.is_chat_record(record), record
        assert summary["components"][component]["converted"] > 0
    if not summary["dedup_saturated"]:  # a full dedup set keeps what it holds but cannot learn new lines
        assert len({(c, line) for c, line in out}) == len(out)  # no duplicate written per component


@SETTINGS
@given(st.lists(st.binary(max_size=300), max_size=30))
def test_arbitrary_byte_lines_never_raise(lines):
    converter = core.BatchConverter(default_component="base")
    out = list(converter.convert_lines(iter(lines)))
    check(converter, out, len(lines))


@SETTINGS
@given(st.lists(capture_lines(), max_size=20), st.integers(1, 4), st.integers(1, 50))
def test_capture_like_lines_keep_the_invariant_and_write_only_chat_records(lines, max_components, dedup):
    converter = core.BatchConverter(default_component="base", max_components=max_components, dedup_max_entries=dedup)
    out = list(converter.convert_lines(iter(lines + lines)))  # every line twice: second copies are duplicates
    check(converter, out, 2 * len(lines))
    if not converter.dedup_saturated:
        assert converter.summary()["converted"] <= len(lines)


@SETTINGS
@given(st.lists(capture_lines(), max_size=10), st.data())
def test_chunking_does_not_change_the_result(lines, data):
    blob = b"\n".join(lines) + b"\n"
    sizes = data.draw(st.lists(st.integers(1, 64), min_size=1, max_size=20))
    chunks, position, index = [], 0, 0
    while position < len(blob):
        size = sizes[index % len(sizes)]
        chunks.append(blob[position : position + size])
        position, index = position + size, index + 1
    whole, pieces = core.BatchConverter(default_component="base"), core.BatchConverter(default_component="base")
    expected = list(whole.convert_lines(core.iter_bounded_lines([blob], 1 << 20)))
    assert list(pieces.convert_lines(core.iter_bounded_lines(chunks, 1 << 20))) == expected
    assert pieces.summary() == whole.summary()


@SETTINGS
@given(st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \n-_*é", max_size=24))
def test_pybase64_accepts_only_what_binascii_strict_mode_accepts_with_the_same_bytes(text):
    """The fast path decodes with pybase64 and falls back to binascii when it refuses: never a different result."""
    import binascii

    import pybase64

    try:
        fast = pybase64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return
    assert binascii.a2b_base64(text, strict_mode=True) == fast


@SETTINGS
@given(st.lists(st.one_of(capture_lines(), st.binary(max_size=200)), max_size=25), st.sampled_from([None, "base"]))
def test_orjson_and_standard_library_paths_write_the_same_records(lines, default_component):
    """The shipped fast path (orjson) and the fallback (json) agree record by record, and on every count."""
    fast = core.BatchConverter(fast=True, default_component=default_component)
    pure = core.BatchConverter(fast=False, default_component=default_component)
    assert list(fast.convert_lines(iter(lines + lines))) == list(pure.convert_lines(iter(lines + lines)))
    assert fast.summary() == pure.summary()


def _outcome(function: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return function(*args, **kwargs)
    except core._Skip as skip:
        return ("skipped", skip.reason)


@SETTINGS
@given(sse_streams())
def test_fast_stream_reader_gives_the_general_text_or_defers(text):
    """The orjson path reads plain OpenAI-style SSE in one pass; anything it is not sure of goes to the general
    reader."""
    fast = core._sse_text_fast(text)
    assert fast is None or fast == _outcome(core._response_from_stream, text, core._loads_fast)


@SETTINGS
@given(st.lists(message, max_size=5) | json_values)
def test_fast_chat_reader_gives_the_general_messages_or_defers(messages):
    fast = core._plain_chat(messages)
    general = _outcome(core._chat_messages, messages)
    assert fast is None or fast == [{"role": role, "content": content} for role, content in general]


@SETTINGS
@given(responses)
def test_fast_response_reader_gives_the_general_text_or_defers(response):
    fast = core._plain_response(response)
    assert fast is None or fast == _outcome(core.response_to_text, response, is_json=True)


@SETTINGS
@given(st.binary(max_size=400), st.lists(st.integers(1, 50), min_size=1, max_size=10), st.integers(1, 40))
def test_bounded_lines_equal_split_and_never_exceed_the_limit(blob, sizes, limit):
    chunks, position, index = [], 0, 0
    while position < len(blob):
        size = sizes[index % len(sizes)]
        chunks.append(blob[position : position + size])
        position, index = position + size, index + 1
    got = list(core.iter_bounded_lines(chunks, limit))
    expected = blob.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()  # a trailing newline ends the last line, it does not start an empty one
    assert len(got) == len(expected)
    for item, line in zip(got, expected, strict=True):
        if len(line) > limit:
            assert isinstance(item, core.OversizedLine) and item.size == len(line)
        else:
            assert item == line


def _reference_lines(chunks: list[Any], limit: int) -> list[Any]:
    """What the splitters must give, from the joined stream: every line (an OversizedLine past ``limit``); at an
    UnreadableData, only the lines completed before it, then the marker."""
    blob = b""
    for chunk in chunks:
        if isinstance(chunk, core.UnreadableData):
            complete = blob.split(b"\n")[:-1]  # the partial line before the marker is dropped
            return [core.OversizedLine(len(line)) if len(line) > limit else line for line in complete] + [chunk]
        blob += chunk
    lines = blob.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # a trailing newline ends the last line, it does not start an empty one
    return [core.OversizedLine(len(line)) if len(line) > limit else line for line in lines]


def test_lines_at_the_limit_split_as_the_joined_stream_does_in_every_chunking():
    """Every line length around the limit (one under, at, one over), first in a chunk, after a newline inside
    it, or across chunks, in every chunk size: random bytes seldom land exactly on the limit."""
    limit = 3
    lines = [b"a" * n for n in (limit - 1, limit, limit + 1, 0, limit, limit + 1, limit - 1, limit)]
    blob = b"\n".join(lines) + b"\n" + b"b" * limit  # and a last line without a newline, at the limit
    for size in range(1, len(blob) + 1):
        chunks = [blob[i : i + size] for i in range(0, len(blob), size)]
        expected = _reference_lines(chunks, limit)
        for split in (core.iter_bounded_line_views, core.iter_bounded_lines):
            got = [bytes(item) if isinstance(item, memoryview) else item for item in split(chunks, limit)]
            assert [g if isinstance(g, bytes) else ("over", g.size) for g in got] == [
                e if isinstance(e, bytes) else ("over", e.size) for e in expected
            ], (split.__name__, size)


@SETTINGS
@given(
    st.binary(max_size=400).map(lambda b: b.replace(b"\x00", b"\n")),
    st.lists(st.integers(1, 50), min_size=1, max_size=10),
    st.integers(1, 40),
    st.booleans(),
)
def test_line_views_and_bounded_lines_split_as_the_joined_stream_does(blob, sizes, limit, unreadable):
    chunks: list[Any] = []
    position, index = 0, 0
    while position < len(blob):
        size = sizes[index % len(sizes)]
        chunks.append(blob[position : position + size])
        position, index = position + size, index + 1
    if unreadable:
        chunks.insert(len(chunks) // 2, core.UnreadableData("corrupt_compressed_object"))
    expected = _reference_lines(chunks, limit)
    views = list(core.iter_bounded_line_views(chunks, limit))
    copies = list(core.iter_bounded_lines(chunks, limit))
    for got in (views, copies):
        assert len(got) == len(expected)
        for item, want in zip(got, expected, strict=True):
            if isinstance(want, bytes):
                assert isinstance(item, (bytes, memoryview)) and bytes(item) == want
            else:
                assert type(item) is type(want) and getattr(item, "size", None) == getattr(want, "size", None)
                assert getattr(item, "reason", None) == getattr(want, "reason", None)
    assert not any(isinstance(item, memoryview) for item in copies)  # copies: nothing keeps a chunk alive


@SETTINGS
@given(
    st.lists(st.one_of(capture_lines(), st.binary(max_size=120)), max_size=12),
    st.data(),
    st.sampled_from(["capture", "front_door"]),
)
def test_both_paths_read_line_views_as_they_read_bytes(lines, data, source):
    blob = b"\n".join(lines) + b"\n"
    size = data.draw(st.integers(1, 200))
    chunks = [blob[i : i + size] for i in range(0, len(blob), size)]
    results = []
    for fast in (True, False):
        for split in (core.iter_bounded_lines, core.iter_bounded_line_views):
            converter = core.BatchConverter(default_component="base", fast=fast, source=source)
            results.append((list(converter.convert_lines(split(chunks, 1 << 20))), converter.summary()))
    assert all(result == results[0] for result in results[1:])


@SETTINGS
@given(st.lists(json_values, max_size=8), st.integers(1, 30), st.booleans())
def test_json_array_stream_round_trips(values, size, ascii_only):
    data = json.dumps(values, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        data = json.dumps(values).encode()
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    assert list(core.iter_json_array(chunks)) == json.loads(data)


@SETTINGS
@given(json_values)
def test_dataset_format_detection_never_raises(value):
    fmt, problem = core.detect_dataset_format(value)
    assert (fmt is None) == bool(problem)
    assert fmt in (None, *core.DATASET_FORMATS)
