"""Pure logic of the EAGLE dataset builder: Data Capture lines in, chat-format JSONL records out.

Nothing here talks to AWS. Everything works on iterables of ``bytes`` so the Lambda handler
can feed it a streamed S3 body and the tests and the benchmark can feed it local files.

Building blocks:

* :func:`iter_bounded_lines` splits a stream of byte chunks into lines without ever holding
  more than ``max_line_bytes`` of one line (longer lines become :class:`OversizedLine`);
  :func:`iter_bounded_line_views` does the same without copying lines out of their chunk.
* :class:`BatchConverter` turns Data Capture records (one JSON document per line, see
  https://docs.aws.amazon.com/sagemaker/latest/dg/model-monitor-data-capture-endpoint.html)
  into ``{"messages": [...]}`` lines, per inference component, with exact-duplicate removal
  and per-reason skip counts. Invariant, per component and in total:
  ``records_in == converted + duplicates + sum(skipped.values())``.
* :func:`detect_dataset_format` / :func:`is_chat_record` check user-supplied datasets
  (ShareGPT, OpenAI chat, OpenAI completions).
* :func:`iter_json_array` streams the elements of a large JSON array (Step Functions
  ``ResultWriter`` files) from byte chunks.
"""

from __future__ import annotations

import binascii
import json
import re
import zlib
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from json.encoder import encode_basestring  # the C string encoder json.dumps(ensure_ascii=False) uses
from typing import Any

try:  # shipped in the function's asset (lambda/eagle_dataset/requirements.txt); optional everywhere else
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised by the fallback tests with fast=False
    _orjson = None  # type: ignore[assignment]
try:  # SIMD base64; shipped with orjson. Used only where it agrees with binascii's strict mode (tested)
    from pybase64 import b64decode as _b64decode
except ImportError:  # pragma: no cover
    _b64decode = None  # type: ignore[assignment]

#: True when orjson imports: :class:`BatchConverter` then parses and writes with it by default.
#: The standard-library path gives the same output, byte for byte (tests compare them record by record).
FAST_JSON_AVAILABLE = _orjson is not None

#: One chat turn while converting: (role, content). Written out as {"role", "content"}.
Message = tuple[str, str]

# ---------------------------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------------------------

#: Component name of endpoints without inference components (the name ``finalize`` falls back
#: to, and what callers pass as ``default_component`` when every record is the endpoint's own).
DEFAULT_COMPONENT = "base"
#: Bucket for lines whose component is not known: the line is not readable at all, or it names
#: no component while the endpoint may host several (AWS does not document that Data Capture
#: records of inference-component endpoints name the component). Records here never reach a
#: component's training set. The leading underscore cannot occur in a SageMaker name.
UNATTRIBUTED = "_unattributed"

#: Every reason a line can be skipped for, in the order they are checked.
SKIP_REASONS: tuple[str, ...] = (
    "line_too_long",  # longer than max_line_bytes; never buffered
    "blank_line",  # empty or whitespace only
    "not_utf8",  # line (or a decoded payload) is not valid UTF-8
    "truncated_line",  # JSON ends early (object cut off mid-write)
    "invalid_json_line",  # not JSON at all (binary junk, garbage)
    "missing_capture_data",  # JSON, but no captureData object
    "corrupt_compressed_object",  # gzip data that does not inflate (or is cut off): rest of the object
    "unsupported_compression",  # zstd, bzip2, xz or zip bytes: the object is not read
    "unattributed_component",  # names no inference component and none can be assumed (kept apart)
    "not_a_turn_record",  # front-door source: JSON, but not {"component", "messages"} (TurnLog format)
    "invalid_component_name",  # inferenceComponentName is not a valid SageMaker name
    "too_many_components",  # more distinct components in one batch than allowed
    "missing_request",  # no endpointInput (capture configured for Output only)
    "missing_response",  # no endpointOutput (capture configured for Input only)
    "unsupported_encoding",  # encoding is not JSON, BASE64 or CSV, or data is not a string
    "undecodable_base64",  # encoding BASE64 but data is not base64
    "request_not_json",  # request payload is not a JSON document
    "unsupported_request_shape",  # JSON, but none of the known LLM request shapes
    "non_text_content",  # chat content parts other than text (images, audio, ...)
    "unsupported_message_role",  # legacy function_call / function messages, unknown roles, malformed tool calls
    "error_response",  # the model container answered with an error (an error object; LMI: empty failed generation)
    "unsupported_response_shape",  # none of the known LLM response shapes
    "empty_response",  # the model produced no text
    "invalid_unicode",  # text holds lone surrogates; cannot be written as UTF-8
)

_COMPONENT_NAME = re.compile(r"[a-zA-Z0-9](?:[-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?")
_ROLE_MAP = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
_TEXT_PART_TYPES = frozenset(("text", "input_text", "output_text"))
_DATE_DIR = re.compile(r"\d{4}/\d{2}/\d{2}/\d{2}")
_WHITESPACE = re.compile(r"[ \t\n\r]*")

#: The C scanner behind ``json.loads``: ``_scan(text, 0)`` -> ``(value, end)``. Called directly
#: for documents that start with ``{`` or ``[`` and end exactly at the end of the text, the
#: result is what ``json.loads`` returns (it skips the two whitespace regex matches and, for
#: bytes, the encoding detection); anything else goes through ``json.loads`` itself so errors
#: and edge cases stay exactly the same.
_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set by __init__; not in typeshed


_HASH_MASK = (1 << 64) - 1


def _digest(line: bytes) -> int:
    """What the duplicate filter keeps of a written line: its length and its 64-bit keyed hash.

    ``hash()`` of bytes is SipHash-1-3 keyed at process start (``PYTHONHASHSEED`` is not set in
    Lambda), so an input cannot aim at it, and it is several times faster than BLAKE2b on the
    output lines. Two different lines of the same length collide with probability 2**-64 per
    pair: about 7e-9 for a batch at the default 500,000-entry bound.
    """
    return (len(line) << 64) | (hash(line) & _HASH_MASK)


class OversizedLine:
    """Stands in for a line longer than the limit; only its size is kept."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"OversizedLine({self.size})"


class UnreadableData:
    """Stands in for the rest of an object that cannot be read (corrupt or unsupported compression).

    :func:`iter_bounded_lines` passes it through (dropping the partial line before it) and the
    converter counts it as one skipped record with ``reason``: the batch never fails for it.
    """

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"UnreadableData({self.reason!r})"


class _Skip(Exception):
    """Internal control flow: the current line is skipped for ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Streaming helpers
# ---------------------------------------------------------------------------------------------


def iter_bounded_lines(
    chunks: Iterable[bytes | UnreadableData], max_line_bytes: int
) -> Iterator[bytes | OversizedLine | UnreadableData]:
    """Split byte chunks into lines (without the ``\\n``; a trailing ``\\r`` is kept).

    Memory stays bounded by one chunk plus ``max_line_bytes``: a line that grows past the
    limit is dropped as it streams and reported once as :class:`OversizedLine`. A final line
    without a newline is yielded as is (the converter then reports it truncated if it is).
    An :class:`UnreadableData` among the chunks ends the stream: the partial line before it is
    dropped (it is part of what cannot be read) and the marker is yielded.
    """
    for item in iter_bounded_line_views(chunks, max_line_bytes):
        yield bytes(item) if item.__class__ is memoryview else item  # type: ignore[misc]


def iter_bounded_line_views(
    chunks: Iterable[bytes | UnreadableData], max_line_bytes: int
) -> Iterator[bytes | memoryview | OversizedLine | UnreadableData]:
    """The lines of ``chunks`` as :func:`iter_bounded_lines` gives them (which copies each out of this), with
    each line that lies within one chunk as a ``memoryview`` of that chunk instead of a copy (a line across
    chunks is joined into ``bytes``).

    For :meth:`BatchConverter.convert_lines`, which parses views in place with orjson: copying every
    line out of its chunk cost about a third of reading and parsing the capture lines. A view keeps its
    chunk alive: one chunk more than a copying splitter would hold.
    """
    pending: list[bytes] = []
    pending_len = 0
    discarding = False
    discarded = 0
    for chunk in chunks:
        if chunk.__class__ is UnreadableData:
            yield chunk
            return
        if not chunk:
            continue
        if chunk.__class__ is not bytes:
            chunk = bytes(chunk)  # type: ignore[arg-type]  # a view must not see its buffer change
        find = chunk.find
        end = find(b"\n")
        start = 0
        if end >= 0:
            view = memoryview(chunk)
            if discarding:  # the end of a line too long to keep
                yield OversizedLine(discarded + end)
                discarding, discarded = False, 0
            elif pending:
                pending.append(chunk[:end])
                line = b"".join(pending)
                pending, pending_len = [], 0
                yield OversizedLine(len(line)) if len(line) > max_line_bytes else line
            else:
                yield OversizedLine(end) if end > max_line_bytes else view[:end]
            start = end + 1
            while True:
                end = find(b"\n", start)
                if end < 0:
                    break
                yield OversizedLine(end - start) if end - start > max_line_bytes else view[start:end]
                start = end + 1
        # what follows the last newline (or the whole chunk): the start of the next line
        rest = len(chunk) - start
        if discarding:
            discarded += rest
        elif rest:
            pending_len += rest
            if pending_len > max_line_bytes:
                discarding, discarded = True, pending_len
                pending, pending_len = [], 0
            else:
                pending.append(chunk[start:] if start else chunk)
    if discarding:
        yield OversizedLine(discarded)
    elif pending:
        yield b"".join(pending)


def iter_gunzip(chunks: Iterable[bytes], out_chunk: int = 1 << 20) -> Iterator[bytes]:
    """Decompress a gzip stream chunk by chunk, never producing more than ``out_chunk`` at once.

    Every member of a multi-member gzip (``cat a.gz b.gz``, appended writes) is read. Raises
    ``zlib.error`` for data that does not inflate and ``EOFError`` for a stream cut off inside a
    member; trailing NUL padding after the last member is ignored.
    """
    inflater = zlib.decompressobj(wbits=47)  # 32 + 15: gzip or zlib header, auto-detected
    in_member = False  # bytes of the current member were fed and its end not reached yet
    for chunk in chunks:
        data = chunk
        while data:
            if inflater.eof:  # the previous member ended: what follows is the next one (or padding)
                if not data.strip(b"\x00"):
                    break
                inflater = zlib.decompressobj(wbits=47)
            in_member = True
            out = inflater.decompress(data, out_chunk)
            if out:
                yield out
            if inflater.eof:
                in_member = False
                data = inflater.unused_data
            else:
                data = inflater.unconsumed_tail
    if in_member:
        tail = inflater.flush()
        if tail:
            yield tail
        if not inflater.eof:
            raise EOFError("gzip stream ends inside a member")


#: First bytes of compressed formats the builder recognises. Only gzip is read; the others are
#: counted as ``unsupported_compression`` (Data Capture writes plain JSON Lines, or gzip).
_GZIP_MAGIC = b"\x1f\x8b"
_OTHER_MAGIC = (b"\x28\xb5\x2f\xfd", b"BZh", b"\xfd7zXZ\x00", b"PK\x03\x04")


def detect_compression(head: bytes) -> str | None:
    """``"gzip"``, ``"other"`` or ``None`` (plain) from an object's first bytes, whatever its key says."""
    if head.startswith(_GZIP_MAGIC):
        return "gzip"
    if any(head.startswith(magic) for magic in _OTHER_MAGIC):
        return "other"
    return None


def iter_object_data(
    chunks: Iterable[bytes], out_chunk: int = 1 << 20
) -> Generator[bytes | UnreadableData, None, None]:
    """An object's bytes, decompressed when they are gzip (detected from the magic bytes ``1f 8b``).

    The key suffix is not trusted: plain text named ``.gz`` is read as text and gzip without the
    suffix is inflated. Data that cannot be read ends with one :class:`UnreadableData`
    (``corrupt_compressed_object`` or ``unsupported_compression``) instead of an exception, so
    the records before it still count and the batch does not fail.
    """
    iterator = iter(chunks)
    head = b""
    for chunk in iterator:
        head += chunk
        if len(head) >= 6:
            break
    kind = detect_compression(head)
    if kind == "other":
        yield UnreadableData("unsupported_compression")
        return

    def rest() -> Iterator[bytes]:
        if head:
            yield head
        yield from iterator

    if kind is None:
        yield from rest()
        return
    try:
        yield from iter_gunzip(rest(), out_chunk)
    except (zlib.error, EOFError):
        yield UnreadableData("corrupt_compressed_object")


def iter_json_array(chunks: Iterable[bytes], max_element_bytes: int = 64 << 20) -> Iterator[Any]:
    """Yield the elements of one JSON array read from byte chunks, one element at a time.

    Only the current element (plus one chunk) is held in memory. Raises ``ValueError`` if the
    text is not a JSON array or an element grows past ``max_element_bytes``.
    """
    decoder = json.JSONDecoder()
    state: dict[str, Any] = {"buffer": "", "started": False, "finished": False}

    def elements(final: bool) -> Iterator[Any]:
        buffer = state["buffer"]
        position = 0
        while True:
            position = _WHITESPACE.match(buffer, position).end()  # type: ignore[union-attr]  # a * pattern: always a match
            if position >= len(buffer):
                break
            char = buffer[position]
            if not state["started"]:
                if char != "[":
                    raise ValueError("expected a JSON array")
                state["started"] = True
                position += 1
                continue
            if state["finished"]:
                raise ValueError("unexpected data after the JSON array")
            if char in "],":
                state["finished"] = char == "]"
                position += 1
                continue
            try:
                element, end = decoder.raw_decode(buffer, position)
            except json.JSONDecodeError:
                if final or len(buffer) - position > max_element_bytes:
                    raise ValueError("JSON array is truncated, malformed or has a too large element") from None
                break  # need more data
            after = _WHITESPACE.match(buffer, end).end()  # type: ignore[union-attr]  # always a match
            if after >= len(buffer) or buffer[after] not in ",]":  # a number may go on: wait for a delimiter
                if final or len(buffer) - position > max_element_bytes:
                    raise ValueError("JSON array is truncated, malformed or has a too large element")
                break
            yield element
            position = end
        state["buffer"] = buffer[position:]

    pending = b""
    for chunk in chunks:
        pending += chunk
        try:
            text, pending = pending.decode("utf-8"), b""
        except UnicodeDecodeError as error:  # a multi-byte character split across chunks
            if len(pending) - error.start > 4:
                raise ValueError("result file is not valid UTF-8") from error
            text, pending = pending[: error.start].decode("utf-8"), pending[error.start :]
        state["buffer"] += text
        yield from elements(final=False)
    if pending:
        raise ValueError("result file is not valid UTF-8")
    yield from elements(final=True)
    if not state["finished"]:
        raise ValueError("JSON array is not closed" if state["started"] else "expected a JSON array")


# ---------------------------------------------------------------------------------------------
# Output keys
# ---------------------------------------------------------------------------------------------

#: UTF-8 bytes an output prefix may take: the keys written under it add ``/<run id>`` (up to 128
#: characters) and ``/data/<component>/<batch file>`` or ``/plan/items.json``, and an S3 key is at
#: most 1024 bytes, so half of that is left to the prefix.
OUTPUT_PREFIX_MAX_BYTES = 512


def output_prefix_problem(prefix: str) -> str | None:
    """Why ``prefix`` cannot be the folder the dataset is written under, or ``None`` when it can.

    The builder writes ``<prefix>/<run id>/...``: a ``..`` (or ``.``) segment, a leading ``/`` or an
    empty segment (``a//b``) gives keys that tools reading the bucket as folders resolve elsewhere
    (``../../x`` leaves the datasets folder), and control characters or text that is not UTF-8 make keys
    S3 refuses or consoles show wrongly. One trailing ``/`` is allowed (``eagle/datasets/``); ``""`` is the
    bucket's top level.
    """
    if prefix.startswith("/"):
        return "starts with '/'; allowed: a relative folder such as 'eagle/datasets' (or '' for the bucket's top level)"
    bad = next((char for char in prefix if ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0), None)
    if bad is not None:
        return f"holds the control character {bad!r}; allowed: printable characters"
    try:
        size = len(prefix.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid Unicode text (a lone surrogate); allowed: text S3 can store as UTF-8"
    if size > OUTPUT_PREFIX_MAX_BYTES:
        return (
            f"is {size} bytes as UTF-8; allowed: at most {OUTPUT_PREFIX_MAX_BYTES}, so the keys under it "
            "stay within S3's 1024-byte key length"
        )
    segments = prefix.removesuffix("/").split("/") if prefix else []
    if "" in segments:
        return "has an empty segment ('//'); allowed: folder names separated by single '/'"
    dotted = next((segment for segment in segments if segment in (".", "..")), None)
    if dotted is not None:
        return f"has a {dotted!r} segment; allowed: folder names (the prefix is used as given, never resolved)"
    return None


# ---------------------------------------------------------------------------------------------
# Capture record -> chat record
# ---------------------------------------------------------------------------------------------


def component_from_key(key: str, capture_prefix: str) -> str | None:
    """Component name taken from a Data Capture key, if the key carries one.

    The documented layout is ``<prefix>/<endpoint>/<variant>/yyyy/mm/dd/hh/<file>``. A key
    with exactly one extra folder between the variant and the date
    (``<endpoint>/<variant>/<component>/yyyy/...``) is read as naming the component.
    Anything else returns ``None`` (the record's ``eventMetadata`` or the default decides).
    """
    if capture_prefix and not key.startswith(capture_prefix):
        return None
    parts = key[len(capture_prefix) :].strip("/").split("/")
    if len(parts) != 8 or not _DATE_DIR.fullmatch("/".join(parts[3:7])):
        return None
    return parts[2]


def _json_error_reason(text: str, error: json.JSONDecodeError) -> str:
    if error.msg.startswith("Unterminated string") or error.pos >= len(text.rstrip()):
        return "truncated_line"
    return "invalid_json_line"


def _decode_payload(part: dict[str, Any]) -> tuple[Any, bool]:
    """``endpointInput``/``endpointOutput`` -> ``(value, is_json)``.

    ``value`` is the parsed JSON document when the payload is one, else the payload text
    (streamed responses are several JSON documents, plain-text bodies are none).
    """
    encoding = part.get("encoding")
    data = part.get("data")
    if encoding == "JSON" and isinstance(data, (dict, list)):
        return data, True
    if not isinstance(data, str):
        raise _Skip("unsupported_encoding")
    if encoding == "BASE64":
        try:
            raw = binascii.a2b_base64(data, strict_mode=True)
        except (binascii.Error, ValueError):
            raise _Skip("undecodable_base64") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _Skip("not_utf8") from None
    elif encoding in ("JSON", "CSV"):
        text = data
    else:
        raise _Skip("unsupported_encoding")
    if text[:1] in ("{", "["):  # fast path, same result as json.loads (see _scan)
        try:
            value, end = _scan(text, 0)
        except (ValueError, RecursionError, StopIteration):
            pass  # let json.loads decide, below
        else:
            if end == len(text) or not text[end:].strip(" \t\n\r"):
                return value, True
            return text, False  # json.loads: "Extra data" (a stream of JSON lines, say)
    try:
        return json.loads(text), True
    except (ValueError, RecursionError):
        return text, False


def _capture_parts(capture: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A capture record's ``endpointInput`` and ``endpointOutput`` (both paths), or the skip reason."""
    data = capture["captureData"]
    request_part = data.get("endpointInput")
    response_part = data.get("endpointOutput")
    if not isinstance(request_part, dict):
        raise _Skip("missing_request")
    if not isinstance(response_part, dict):
        raise _Skip("missing_response")
    return request_part, response_part


def _decode_payload_fast(part: dict[str, Any]) -> tuple[Any, bool]:
    """:func:`_decode_payload` with orjson: same results (anything orjson refuses goes the exact way)."""
    encoding = part.get("encoding")
    data = part.get("data")
    if encoding == "BASE64" and data.__class__ is str:
        try:
            raw = (
                _b64decode(data, validate=True)
                if _b64decode is not None
                else binascii.a2b_base64(data, strict_mode=True)
            )
        except (binascii.Error, ValueError):
            try:  # pybase64 refused: binascii's strict mode decides, as on the standard-library path
                raw = binascii.a2b_base64(data, strict_mode=True)
            except (binascii.Error, ValueError):
                raise _Skip("undecodable_base64") from None
        try:
            return _orjson.loads(raw), True  # UTF-8 checked by orjson; no str copy of the payload
        except _orjson.JSONDecodeError:
            pass  # not UTF-8, not JSON, or JSON orjson does not take (NaN, lone surrogates): the exact way
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _Skip("not_utf8") from None
        if text[:1] == "d":  # server-sent events ("data: ..."): no JSON text starts with "d", json.loads refuses it
            return text, False
        return _decode_text(text)
    if encoding in ("JSON", "CSV") and data.__class__ is str:
        try:
            return _orjson.loads(data), True
        except _orjson.JSONDecodeError:
            if data[:1] == "d":
                return data, False
            return _decode_text(data)
    return _decode_payload(part)


def _decode_text(text: str) -> tuple[Any, bool]:
    """A payload's text -> (JSON value, True) or (the text, False), exactly as ``json.loads`` decides."""
    try:
        return json.loads(text), True
    except (ValueError, RecursionError):
        return text, False


def _is_text_part(kind: Any) -> bool:
    # only a str can be one of them; a list or object would raise TypeError (unhashable) in the set
    return isinstance(kind, str) and kind in _TEXT_PART_TYPES


def _content_text(content: Any) -> str:
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
                raise _Skip("non_text_content")
        return "\n".join(texts)
    raise _Skip("unsupported_request_shape")


def _chat_messages(messages: Any) -> list[Message]:
    if not isinstance(messages, list) or not messages:
        raise _Skip("unsupported_request_shape")
    result: list[Message] = []
    for message in messages:
        if not isinstance(message, dict):
            raise _Skip("unsupported_request_shape")
        name = message.get("role")
        role = _ROLE_MAP.get(name) if isinstance(name, str) else None  # a list or object is unhashable: no TypeError
        if role is None or message.get("tool_calls") or message.get("function_call"):
            raise _Skip("unsupported_message_role" if isinstance(name, str) else "unsupported_request_shape")
        result.append((role, _content_text(message.get("content"))))
    if not any(role == "user" for role, _ in result):
        raise _Skip("unsupported_request_shape")
    return result


# (turn start, end of the role header, turn end) of the chat templates undone below
_TEMPLATES = (
    ("<|im_start|>", "\n", "<|im_end|>"),  # ChatML (Qwen, many others)
    ("<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>"),  # Llama 3
)


_INST_SYSTEM = re.compile(r"<<SYS>>\n?(.*?)\n?<</SYS>>", re.S)
_SPACE = re.compile(r"\s*")


def _inst_messages(text: str) -> list[Message] | None:
    """Undo the Llama 2 chat template (also Mistral's, which has no system part) rendered into a text prompt:
    ``<s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s><s>[INST] {user} [/INST]``.

    The template puts a space around each content (``[INST] `` + content.strip() + `` [/INST]``); contents are
    stripped of it, a final assistant text (a prefill the model continued) only on its left. None (use the
    prompt as one user message) unless the whole text is clean turns. One pass over the text (positions, no
    copies of the rest), so a prompt of many turns costs what its length does."""
    messages: list[Message] = []
    size = len(text)
    at = _SPACE.match(text).end()  # type: ignore[union-attr]  # \s* always matches
    while at < size:
        if text.startswith("<s>", at):
            at = _SPACE.match(text, at + 3).end()  # type: ignore[union-attr]
        if not text.startswith("[INST]", at):
            return None  # text between turns (or after the last): not a clean template
        close = text.find("[/INST]", at + 6)
        if close < 0:
            return None
        user = text[at + 6 : close]
        if "[INST]" in user:
            return None
        user = user.strip()
        if not messages:
            system = _INST_SYSTEM.match(user)
            if system is not None:
                messages.append(("system", system.group(1).strip()))
                user = user[system.end() :].strip()
        if "<<SYS>>" in user or "<</SYS>>" in user:
            return None  # a system part anywhere but at the start of the first turn
        messages.append(("user", user))
        at = close + 7
        end = text.find("</s>", at)
        answer = text[at:] if end < 0 else text[at:end]
        if "[INST]" in answer or "[/INST]" in answer:
            return None  # a turn without its </s>
        if end >= 0:
            messages.append(("assistant", answer.strip()))
            at = _SPACE.match(text, end + 4).end()  # type: ignore[union-attr]
        else:
            if answer.strip():  # the generation prompt, with a prefill the model continued
                messages.append(("assistant", answer.lstrip()))
            at = size
    return messages if messages else None


def _templated_messages(text: str) -> list[Message] | None:
    """Undo a ChatML (Qwen), Llama 3 or Llama 2 / Mistral (``[INST]``) chat template rendered into a text prompt.

    Returns None (use the prompt as one user message) unless the whole text is clean turns.
    """
    stripped = text.lstrip()
    if stripped.startswith(("[INST]", "<s>[INST]", "<s> [INST]")):
        return _inst_messages(stripped)
    if stripped.startswith("<|begin_of_text|>"):
        stripped = stripped[len("<|begin_of_text|>") :]
    for start, header_end, turn_end in _TEMPLATES:
        if stripped.startswith(start):
            break
    else:
        return None
    messages: list[Message] = []
    turns = stripped.split(start)[1:]
    for index, turn in enumerate(turns):
        name, found, rest = turn.partition(header_end)
        if not found:
            return None
        role = _ROLE_MAP.get(name)
        if role is None:
            if not name.isalpha() or not name.islower():
                return None
            raise _Skip("unsupported_message_role")  # tool, ipython, function, ...
        content, closed, tail = rest.partition(turn_end)
        if closed:
            if tail.strip():
                return None  # text between turns: not a clean template, keep the raw prompt
            messages.append((role, content))
        elif index == len(turns) - 1 and role == "assistant":
            if content.strip():  # the generation prompt, with a prefill the model continued
                messages.append((role, content))
        else:
            return None
    if not any(role == "user" for role, _ in messages):
        return None
    return messages


def _text_messages(text: str) -> tuple[list[Message], str]:
    messages = _templated_messages(text)
    if messages is None:
        messages = [("user", text)]
    return messages, text


def echoes_prompt(request: Any) -> bool | None:
    """What the request says about prompt echo: ``return_full_text`` (in ``parameters`` as LMI and
    TGI take it, or at the top level as Hugging Face pipelines do). ``None`` when it says nothing."""
    if not isinstance(request, dict):
        return None
    parameters = request.get("parameters")
    value = parameters.get("return_full_text") if isinstance(parameters, dict) else None
    if value is None:
        value = request.get("return_full_text")
    return value if isinstance(value, bool) else None


def request_to_messages(request: Any) -> tuple[list[Message], str | None]:
    """Known LLM request shapes -> ([(role, content)...], raw prompt text or None).

    The prompt text is returned so a response that echoes it can be trimmed; it is ``None``
    when the request says ``return_full_text: false`` (the response is then never an echo).
    Raises ``_Skip`` with the reason when the request is not usable.
    """
    if isinstance(request, str):
        if not request:
            raise _Skip("unsupported_request_shape")
        return _text_messages(request)  # a bare text prompt carries no return_full_text
    if not isinstance(request, dict):
        raise _Skip("unsupported_request_shape")
    if "messages" in request:  # OpenAI chat completions (also LMI/TGI Messages API)
        return _chat_messages(request["messages"]), None
    for key in ("prompt", "inputs", "text_inputs", "text"):
        if key not in request:
            continue
        value = request[key]
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
            value = value[0]
        if isinstance(value, str) and value:
            messages, prompt = _text_messages(value)
            return messages, (None if echoes_prompt(request) is False else prompt)
        if (
            key == "inputs"
            and isinstance(value, list)
            and value
            and all(isinstance(v, dict) and "role" in v for v in value)
        ):
            return _chat_messages(value), None  # chat messages passed as "inputs"
        if key == "inputs" and isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
            return _chat_messages(value[0]), None  # JumpStart Llama 2 chat: a batch of one dialog
        if key == "inputs" and isinstance(value, dict):
            return _hf_conversation(value), None
        raise _Skip("unsupported_request_shape")  # token ids, batches, empty prompts
    raise _Skip("unsupported_request_shape")


def _hf_conversation(inputs: dict[str, Any]) -> list[Message]:
    """HuggingFace conversational pipeline inputs: past_user_inputs/generated_responses/text."""
    users = inputs.get("past_user_inputs") or []
    answers = inputs.get("generated_responses") or []
    text = inputs.get("text")
    if (
        not isinstance(text, str)
        or not isinstance(users, list)
        or not isinstance(answers, list)
        or len(users) != len(answers)
    ):
        raise _Skip("unsupported_request_shape")
    messages: list[Message] = []
    for user, answer in zip(users, answers):
        if not isinstance(user, str) or not isinstance(answer, str):
            raise _Skip("unsupported_request_shape")
        messages += [("user", user), ("assistant", answer)]
    messages.append(("user", text))
    return messages


def _is_error(obj: dict[str, Any]) -> bool:
    return (
        bool(obj.get("error")) or obj.get("object") == "error" or ("ErrorCode" in obj and "generated_text" not in obj)
    )


def _failed_generation(obj: dict[str, Any]) -> bool:
    """LMI's answer when generation failed: ``"generated_text": ""`` with ``details.finish_reason`` ``error``
    (the last line of a stream, or the whole response). Only the empty one: text generated before a
    failure is the model's own output and is kept."""
    details = obj.get("details")
    return obj.get("generated_text") == "" and isinstance(details, dict) and details.get("finish_reason") == "error"


def _response_from_object(obj: Any) -> str | None:
    if isinstance(obj, list):
        if len(obj) != 1:
            raise _Skip("unsupported_response_shape" if obj else "empty_response")
        obj = obj[0]
    if isinstance(obj, str):
        return obj
    if not isinstance(obj, dict):
        return None
    if _is_error(obj):
        raise _Skip("error_response")
    choices = obj.get("choices")
    if isinstance(choices, list):
        if not choices:
            raise _Skip("empty_response")
        choice = choices[0]
        if not isinstance(choice, dict):
            return None
        message = choice.get("message")
        if isinstance(message, dict):
            content = message.get("content")
            if message.get("tool_calls") or message.get("function_call"):
                raise _Skip("unsupported_message_role")  # tool calls, with or without text: agent_reply's
            if content is None:
                raise _Skip("empty_response")
            try:
                return _content_text(content)
            except _Skip:
                return None
        if isinstance(choice.get("text"), str):
            return choice["text"]
        return None
    generated = obj.get("generated_text")
    if isinstance(generated, str):
        if not generated and _failed_generation(obj):
            raise _Skip("error_response")
        return generated
    if isinstance(generated, list) and len(generated) == 1 and isinstance(generated[0], str):
        return generated[0]
    generation = obj.get("generation")  # JumpStart Llama 2: [{"generation": "text"}] or a chat message
    if isinstance(generation, str):
        return generation
    if isinstance(generation, dict) and generation.get("role", "assistant") == "assistant":
        content = generation.get("content")
        return content if isinstance(content, str) else None
    return None


def _plain_chat(messages: Any) -> list[dict[str, str]] | None:
    """:func:`_chat_messages` for the common request, as the output's message objects: every message an
    object with a known role, text ``content`` and no tool call, one of them the user's. Anything else
    returns None and :func:`_chat_messages` decides (the same result or the same skip reason)."""
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
        role = _ROLE_MAP.get(role)
        if role is None or message.get("tool_calls") or message.get("function_call"):
            return None
        if role == "user":
            user = True
        append({"role": role, "content": content})
    return result if user else None


def _plain_response(obj: Any) -> str | None:
    """:func:`response_to_text` of one JSON document for the common answers (a chat completion, a
    completion, generated text) that are not blank. Anything else returns None and
    :func:`response_to_text` decides (the same text or the same skip reason)."""
    if obj.__class__ is list:
        if len(obj) != 1:
            return None
        obj = obj[0]
    if obj.__class__ is not dict or obj.get("error") or obj.get("object") == "error" or "ErrorCode" in obj:
        return None
    choices = obj.get("choices")
    if choices.__class__ is list:
        if not choices:
            return None
        choice = choices[0]
        if choice.__class__ is not dict:
            return None
        message = choice.get("message")
        if message.__class__ is dict and message.get("tool_calls"):
            return None  # a tool call: response_to_text says so
        text = message.get("content") if message.__class__ is dict else choice.get("text")
    else:
        text = obj.get("generated_text")
        if text.__class__ is list and len(text) == 1:
            text = text[0]
    if text.__class__ is str and text and not text.isspace():  # isspace: what strip() removes, without a copy
        return text
    return None


def _loads_fast(text: str) -> Any:
    """``json.loads`` through orjson: the same value, or whatever ``json.loads`` does when orjson refuses."""
    try:
        return _orjson.loads(text)
    except _orjson.JSONDecodeError:
        return json.loads(text)


def _stream_lines(text: str) -> list[str]:
    """The non-blank lines of a streamed body, each stripped.

    Lines end at LF, CRLF or a lone CR (the server-sent events terminators; JSON Lines uses LF), never
    at the other line separators ``str.splitlines`` takes (U+2028, U+2029, U+0085): JSON writers (TGI's,
    vLLM's, Python's with ``ensure_ascii=False``) leave those raw inside strings, as only characters
    below U+0020 must be escaped, and a token holding one would cut its event in two."""
    if "\r" in text:  # a raw CR is never inside a JSON string: it ends a line
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return [line for line in map(str.strip, text.split("\n")) if line]


def _response_from_stream(text: str, loads: Callable[[str], Any] = json.loads) -> str | None:
    """Server-sent events or JSON lines from a streaming invocation, joined into one text."""
    lines = _stream_lines(text)
    if all(line.startswith("data:") for line in lines):  # plain SSE: the same result, in comprehensions
        payloads = [payload for payload in (line[5:].lstrip() for line in lines) if payload and payload != "[DONE]"]
    else:
        payloads = []
        append = payloads.append
        for line in lines:
            if line.startswith("data:"):
                line = line[5:].lstrip()
                if line and line != "[DONE]":
                    append(line)
            elif line[0] != ":" and not line.startswith(("event:", "id:", "retry:")) and line != "[DONE]":
                append(line)
    if not payloads:
        return None
    try:  # one parse for the whole stream: per-token payloads are tiny and many
        chunks = loads("[" + ",".join(payloads) + "]")
    except (ValueError, RecursionError):
        return None
    if len(chunks) != len(payloads):
        return None  # a payload held several values: not a stream of one document per line
    pieces: list[str] = []
    final: str | None = None
    for chunk in chunks:
        if not isinstance(chunk, dict):
            return None
        if (
            chunk.get("error")
            or chunk.get("object") == "error"
            or ("ErrorCode" in chunk and "generated_text" not in chunk)
        ):
            raise _Skip("error_response")  # _is_error, inlined: called once per token
        generated = chunk.get("generated_text")
        if isinstance(generated, str):
            if not generated and _failed_generation(chunk):
                raise _Skip("error_response")
            final = generated
            continue
        token = chunk.get("token")
        if isinstance(token, dict) and isinstance(token.get("text"), str):
            if not token.get("special"):
                pieces.append(token["text"])
            continue
        choices = chunk.get("choices")
        if isinstance(choices, list):
            if choices and isinstance(choices[0], dict):
                delta = choices[0].get("delta")
                if isinstance(delta, dict) and (delta.get("tool_calls") or delta.get("function_call")):
                    raise _Skip("unsupported_message_role")  # a streamed tool call: agent_reply's
                if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                    pieces.append(delta["content"])
                elif isinstance(choices[0].get("text"), str):
                    pieces.append(choices[0]["text"])
            continue
        if "generated_text" not in chunk:
            return None  # LMI/TGI chunks without a token carry "generated_text": null
    return final if final is not None else "".join(pieces)


#: A JSON escape that could spell an ASCII letter, digit or "_" (a key written as "\u0065rror", say).
_LETTER_ESCAPE = re.compile(r"\\u00[4-7][0-9a-fA-F]")


def _sse_text_fast(text: str) -> str | None:
    """:func:`_response_from_stream` for plain server-sent events of OpenAI-style chunks (``choices``
    with a ``delta`` or ``text``), with orjson and without per-line Python steps. None: not that
    shape, or not sure; :func:`_response_from_stream` then decides. Never a different text."""
    lines = _stream_lines(text)
    if not lines:
        return None
    joined = "\n".join(lines)
    # every line starts with "data:" (lines hold no "\n": each boundary is one "\n"), as all(...) checks
    if not joined.startswith("data:") or joined.count("\ndata:") != len(lines) - 1:
        return None
    payloads = list(map(str.lstrip, joined[5:].split("\ndata:")))  # line[5:].lstrip() of every line
    if payloads[-1] == "[DONE]":
        payloads.pop()
    if not payloads or "" in payloads or "[DONE]" in payloads:
        return None  # the general loop drops those wherever they are
    array = "[" + ",".join(payloads) + "]"  # the same text _response_from_stream parses
    # Keys "error", "ErrorCode", "generated_text", "token", "tool_calls", "function_call" and the value
    # "error" change what a chunk means. Without those strings in the text (as whole JSON strings, so a token " error" does not
    # count) and without escapes that could spell them, none occurs and only "choices" matters.
    if (
        '"error"' in array
        or '"ErrorCode"' in array
        or '"generated_text"' in array
        or '"token"' in array
        or '"tool_calls"' in array
        or '"function_call"' in array
        or _LETTER_ESCAPE.search(array)
    ):
        return None
    try:
        chunks = _orjson.loads(array)
    except _orjson.JSONDecodeError:
        return None
    if len(chunks) != len(payloads):
        return None
    pieces: list[str] = []
    append = pieces.append
    for chunk in chunks:
        if chunk.__class__ is not dict:
            return None
        choices = chunk.get("choices")
        if choices.__class__ is not list:
            return None
        if choices:
            choice = choices[0]
            if choice.__class__ is dict:
                delta = choice.get("delta")
                if delta.__class__ is dict:
                    content = delta.get("content")
                    if content.__class__ is str:
                        append(content)
                        continue
                piece = choice.get("text")
                if piece.__class__ is str:
                    append(piece)
    return "".join(pieces)


def response_to_text(
    response: Any, *, is_json: bool = True, plain_text_ok: bool = False, loads: Callable[[str], Any] = json.loads
) -> str:
    """Known LLM response shapes -> the generated text. Raises ``_Skip`` otherwise.

    ``is_json`` false means ``response`` is payload text that is not one JSON document: a
    stream (server-sent events or JSON lines) or, if ``plain_text_ok``, the text itself.
    """
    if not is_json:
        if not response.strip():  # an empty body (a stream whose output was not captured, say): no text
            raise _Skip("empty_response")
        streamed = _response_from_stream(response, loads)
        if streamed is None:
            if not plain_text_ok:
                raise _Skip("unsupported_response_shape")
            streamed = response
        text = streamed
    else:
        found = _response_from_object(response)
        if found is None:
            raise _Skip("unsupported_response_shape")
        text = found
    if not text.strip():
        raise _Skip("empty_response")
    return text


def encode_record(messages: list[Message]) -> bytes:
    """``[(role, content)...]`` -> ``{"messages":[{"role":..,"content":..}...]}\\n`` (one line, UTF-8).

    Byte for byte what ``json.dumps(record, ensure_ascii=False, separators=(",", ":"))`` writes,
    encoded as UTF-8 with U+2028/U+2029 escaped (:func:`one_line`), and what ``orjson.dumps`` writes
    (:func:`encode_record_fast`). Text with
    lone surrogates is skipped (``invalid_unicode``): it cannot be UTF-8 and strict readers reject it.
    """
    body = ",".join([f'{{"role":"{role}","content":{encode_basestring(content)}}}' for role, content in messages])
    try:
        return one_line(f'{{"messages":[{body}]}}\n'.encode())
    except UnicodeEncodeError:
        raise _Skip("invalid_unicode") from None


def encode_record_fast(messages: list[Message]) -> bytes:
    """:func:`encode_record` with orjson (same bytes)."""
    try:
        return one_line(
            _orjson.dumps({"messages": [{"role": role, "content": content} for role, content in messages]}) + b"\n"
        )
    except _orjson.JSONEncodeError:  # a str with lone surrogates: not UTF-8
        raise _Skip("invalid_unicode") from None


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


# ---------------------------------------------------------------------------------------------
# Agent turns: tool calls and tool results
# ---------------------------------------------------------------------------------------------
#
# Agents send OpenAI chat messages with assistant ``tool_calls`` and ``tool`` results, and the model
# answers tool calls (vLLM's tool-call parser) instead of text. The optimization job takes "OpenAI Chat
# Completions" records (ModelSpeculativeDecodingConfig.TrainingDataSource), a format that holds both, so
# such a turn is written in that form: ``{"role": "assistant", "content": <text or null>, "tool_calls":
# [{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}]}`` and ``{"role": "tool",
# "tool_call_id", "content"}``. Two parts of the traffic are not written, and each run counts them per
# component (``dropped`` in summary.json): the request's ``tools`` definitions (AWS documents records as
# ``messages`` only) and the model's reasoning (``reasoning_content`` / ``reasoning``: no documented field).

#: What a tool-calling record drops, counted per component: ``dropped.<name>`` in summary.json.
DROPPED_PARTS: tuple[str, ...] = ("tool_definitions", "reasoning_content")


def _tool_calls(calls: Any) -> list[dict[str, Any]]:
    """OpenAI ``tool_calls``, normalised to ``{"id", "type": "function", "function": {"name", "arguments"}}``."""
    if not isinstance(calls, list) or not calls:
        raise _Skip("unsupported_message_role")
    result = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or call.get("type", "function") != "function":
            raise _Skip("unsupported_message_role")
        name, arguments, ident = function.get("name"), function.get("arguments", ""), call.get("id")
        if isinstance(arguments, (dict, list)):
            arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        if not isinstance(name, str) or not name or not isinstance(arguments, str) or not isinstance(ident, str):
            raise _Skip("unsupported_message_role")
        result.append({"id": ident, "type": "function", "function": {"name": name, "arguments": arguments}})
    return result


def agent_messages(messages: Any) -> list[dict[str, Any]]:
    """Chat messages that may hold assistant ``tool_calls`` and ``tool`` results -> the record's messages.

    Text content is kept as :func:`_chat_messages` keeps it; an assistant message's reasoning is not written.
    Raises ``_Skip`` for what no training record can hold (legacy ``function_call``, unknown roles, a tool
    result without its call id, non-text content).
    """
    if not isinstance(messages, list) or not messages:
        raise _Skip("unsupported_request_shape")
    result: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict):
            raise _Skip("unsupported_request_shape")
        name = message.get("role")
        if not isinstance(name, str):
            raise _Skip("unsupported_request_shape")
        if message.get("function_call"):
            raise _Skip("unsupported_message_role")
        if name == "tool":
            ident = message.get("tool_call_id")
            if not isinstance(ident, str) or not ident:
                raise _Skip("unsupported_message_role")
            result.append({"role": "tool", "tool_call_id": ident, "content": _content_text(message.get("content"))})
            continue
        role = _ROLE_MAP.get(name)
        if role is None:
            raise _Skip("unsupported_message_role")
        if role == "assistant" and message.get("tool_calls"):
            content = message.get("content")
            text = None if content is None or content == "" else _content_text(content)
            result.append({"role": "assistant", "content": text, "tool_calls": _tool_calls(message["tool_calls"])})
            continue
        result.append({"role": role, "content": _content_text(message.get("content"))})
    if not any(m["role"] == "user" for m in result):
        raise _Skip("unsupported_request_shape")
    return result


def _stream_reply(text: str, loads: Callable[[str], Any]) -> tuple[str, list[dict[str, Any]], bool]:
    """A streamed chat completion -> (text, tool calls joined by index, whether reasoning was streamed)."""
    lines = _stream_lines(text)
    payloads = []
    for line in lines:
        if line.startswith("data:"):
            line = line[5:].lstrip()
        if line and line != "[DONE]" and line[0] != ":" and not line.startswith(("event:", "id:", "retry:")):
            payloads.append(line)
    try:
        chunks = loads("[" + ",".join(payloads) + "]") if payloads else []
    except (ValueError, RecursionError):
        raise _Skip("unsupported_response_shape") from None
    if not chunks or len(chunks) != len(payloads):
        raise _Skip("unsupported_response_shape")
    pieces: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    reasoning = False
    for chunk in chunks:
        if not isinstance(chunk, dict) or not isinstance(chunk.get("choices"), list):
            raise _Skip("unsupported_response_shape")
        if chunk.get("error") or chunk.get("object") == "error":
            raise _Skip("error_response")
        if not chunk["choices"]:
            continue  # the usage chunk
        delta = chunk["choices"][0].get("delta") if isinstance(chunk["choices"][0], dict) else None
        if not isinstance(delta, dict):
            raise _Skip("unsupported_response_shape")
        if isinstance(delta.get("content"), str):
            pieces.append(delta["content"])
        reasoning = reasoning or bool(delta.get("reasoning_content") or delta.get("reasoning"))
        for position, piece in enumerate(delta.get("tool_calls") or []):
            if not isinstance(piece, dict):
                raise _Skip("unsupported_message_role")
            index = piece.get("index", position)
            found = piece.get("function")
            function: dict[str, Any] = found if isinstance(found, dict) else {}
            call = calls.setdefault(
                index if isinstance(index, int) else position,
                {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
            )
            call["id"] = call["id"] or piece.get("id")
            for key in ("name", "arguments"):
                if isinstance(function.get(key), str):
                    call["function"][key] += function[key]
    return "".join(pieces), [calls[i] for i in sorted(calls)], reasoning


def agent_reply(
    response: Any, *, is_json: bool, loads: Callable[[str], Any] = json.loads
) -> tuple[dict[str, Any], bool]:
    """A chat completion (or its stream) that may call tools -> (the assistant message, whether it reasoned).

    The message has ``content`` (text, or None beside tool calls) and ``tool_calls`` when the model called
    tools. Raises ``_Skip`` when the answer is neither text nor tool calls.
    """
    if is_json:
        if isinstance(response, list) and len(response) == 1:
            response = response[0]
        if not isinstance(response, dict):
            raise _Skip("unsupported_response_shape")
        if _is_error(response):
            raise _Skip("error_response")
        choices = response.get("choices")
        if not isinstance(choices, list) or not choices:
            raise _Skip("empty_response" if choices == [] else "unsupported_response_shape")
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            raise _Skip("unsupported_response_shape")
        if message.get("function_call"):
            raise _Skip("unsupported_message_role")
        content = message.get("content")
        text = "" if content is None else _content_text(content)
        raw_calls = message.get("tool_calls") or []
        calls = _tool_calls(raw_calls) if raw_calls else []
        reasoning = bool(message.get("reasoning_content") or message.get("reasoning"))
    else:
        if not response.strip():
            raise _Skip("empty_response")
        text, calls, reasoning = _stream_reply(response, loads)
        calls = _tool_calls(calls) if calls else []
    if calls:
        return {"role": "assistant", "content": text or None, "tool_calls": calls}, reasoning
    if not text.strip():
        raise _Skip("empty_response")
    return {"role": "assistant", "content": text}, reasoning


def encode_agent_record(messages: list[dict[str, Any]]) -> bytes:
    """``{"messages": [...]}`` of a tool-calling turn, one line (the same writer on both paths)."""
    try:
        line = json.dumps({"messages": messages}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        raise _Skip("invalid_unicode") from None
    return one_line(line + b"\n")


_LINE_SEPARATORS = (b"\xe2\x80\xa8", b"\xe2\x80\xa9")


def one_line(line: bytes) -> bytes:
    """``line`` with U+2028 and U+2029 written as ``\\u2028`` / ``\\u2029``.

    JSON allows both raw inside strings and ``json.dumps(ensure_ascii=False)`` and orjson leave them raw, but
    readers that split text with ``str.splitlines`` (and JavaScript before ES2019) break a line there; escaped,
    the record is the same JSON value and one line for every reader. They occur only inside strings."""
    if b"\xe2\x80" not in line:
        return line
    return line.replace(_LINE_SEPARATORS[0], b"\\u2028").replace(_LINE_SEPARATORS[1], b"\\u2029")


# ---------------------------------------------------------------------------------------------
# Batch converter
# ---------------------------------------------------------------------------------------------


@dataclass
class ComponentStats:
    records_in: int = 0
    converted: int = 0
    duplicates: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    tool_calling: int = 0
    """Records written with assistant tool calls or tool results (agent traffic)."""
    dropped: Counter[str] = field(default_factory=Counter)
    """Parts of written tool-calling records left out, by :data:`DROPPED_PARTS` name."""

    def as_dict(self) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "records_in": self.records_in,
            "converted": self.converted,
            "duplicates": self.duplicates,
            "skipped": dict(sorted(self.skipped.items())),
        }
        if self.tool_calling or self.dropped:  # only for agent traffic: other summaries keep their shape
            summary["tool_calling"] = self.tool_calling
            summary["dropped"] = dict(sorted(self.dropped.items()))
        return summary


class BatchConverter:
    """Converts Data Capture lines of one batch, keeping counts and a bounded duplicate filter.

    A record's component is its ``eventMetadata.inferenceComponentName``, else the one its object
    key names, else ``default_component``. Leave ``default_component`` as None (the default)
    whenever the endpoint may serve more than one component (LoRA adapters, several models):
    records naming none are then counted as ``unattributed_component`` under
    :data:`UNATTRIBUTED` and never land in any component's training set.

    Duplicates are exact: two records are the same when their written JSON line is the same
    (its length and 64-bit keyed hash, :func:`_digest`), per component. The filter holds at most
    ``dedup_max_entries`` digests (about 70 bytes each); past that, records are still checked
    against the digests already held but no new ones are added, and ``dedup_saturated`` becomes true.
    """

    def __init__(
        self,
        *,
        default_component: str | None = None,
        dedup_max_entries: int = 500_000,
        max_components: int = 64,
        fast: bool | None = None,
        source: str = "capture",
    ) -> None:
        """``fast``: parse and write with orjson (None: when it imports). The output is the same either way.
        ``source``: ``capture`` (Data Capture lines) or ``front_door`` (the ``TurnLog`` lines the session front
        door writes: ``{"component", "messages", "created_at"}``, the component always named)."""
        if source not in ("capture", "front_door"):
            raise ValueError(f"source {source!r}: use 'capture' or 'front_door'")
        self.source = source
        if fast and not FAST_JSON_AVAILABLE:
            raise ValueError("fast=True needs orjson, which does not import here; pass fast=None or False")
        self.fast = FAST_JSON_AVAILABLE if fast is None else fast
        self._decode: Callable[[dict[str, Any]], tuple[Any, bool]] = (
            _decode_payload_fast if self.fast else _decode_payload
        )
        self._encode: Callable[[list[Message]], bytes] = encode_record_fast if self.fast else encode_record
        self._loads: Callable[[str], Any] = _loads_fast if self.fast else json.loads
        self.default_component = default_component
        self.dedup_max_entries = dedup_max_entries
        self.max_components = max_components
        self.stats: dict[str, ComponentStats] = {}
        self._seen: dict[str, set[int]] = {}
        self._seen_total = 0
        self.dedup_saturated = False
        self._valid_names: set[str] = set()  # component names that passed _component's checks

    # -- public -----------------------------------------------------------------------------

    def convert_lines(
        self, lines: Iterable[bytes | memoryview | OversizedLine | UnreadableData], *, path_component: str | None = None
    ) -> Iterator[tuple[str, bytes]]:
        """Yield ``(component, jsonl_line_with_newline)`` for every converted, new record.

        ``lines`` as :func:`iter_bounded_lines` or :func:`iter_bounded_line_views` yields them."""
        if self.source == "front_door":
            yield from self._turn_lines(lines, path_component)
            return
        # One loop, no per-line method layers on the common path; every step is the same as
        # _parse_line / _component / _convert (which the rare paths still call).
        fallback = path_component or UNATTRIBUTED
        all_stats = self.stats
        seen_by_component = self._seen
        parse_line = self._parse_line
        component_of = self._component
        convert = self._convert_fast if self.fast else self._convert
        scan = _scan
        fast_loads = _orjson.loads if self.fast else None
        fast_error = _orjson.JSONDecodeError if self.fast else ValueError
        for line in lines:
            component = fallback
            try:
                if fast_loads is not None and (line.__class__ is bytes or line.__class__ is memoryview):
                    try:
                        capture = fast_loads(line)  # a memoryview (iter_bounded_line_views) is parsed in place
                    except fast_error:
                        capture = None  # errors and what orjson refuses: the exact, slow way
                    if capture.__class__ is not dict or capture.get("captureData").__class__ is not dict:
                        capture = parse_line(bytes(line))
                elif line.__class__ is memoryview:  # the standard-library path reads bytes
                    line = line.tobytes()
                    capture = parse_line(line)
                elif line.__class__ is bytes and line[:1] == b"{" and line[1:2] != b"\x00":
                    capture = None  # fast path: what json.loads(line) does for UTF-8 text
                    try:
                        text = line.decode("utf-8", "surrogatepass")
                        value, end = scan(text, 0)
                        if end == len(text) or not text[end:].strip(" \t\n\r"):
                            if value.__class__ is dict and isinstance(value.get("captureData"), dict):
                                capture = value
                    except (ValueError, RecursionError, StopIteration):
                        pass
                    if capture is None:
                        capture = parse_line(line)  # errors and edge cases: the exact, slow way
                elif isinstance(line, OversizedLine):
                    raise _Skip("line_too_long")
                elif line.__class__ is UnreadableData:
                    raise _Skip(line.reason)
                else:
                    capture = parse_line(line)  # type: ignore[arg-type]  # bytes: views are read above
                component = component_of(capture, path_component)
                try:
                    out = convert(capture)
                except _Skip as skip:
                    if skip.reason != "unsupported_message_role":
                        raise
                    out = self._convert_agent(capture, component)  # tool calls or tool results
            except _Skip as skip:
                stats = all_stats.get(component) or self._stats(component)
                stats.skipped[skip.reason] += 1
                stats.records_in += 1
                continue
            stats = all_stats.get(component) or self._stats(component)
            stats.records_in += 1
            digest = (len(out) << 64) | (hash(out) & _HASH_MASK)  # _digest, inlined
            seen = seen_by_component.get(component)
            if seen is None:
                seen = seen_by_component[component] = set()
            if digest in seen:
                stats.duplicates += 1
                continue
            if self._seen_total < self.dedup_max_entries:
                seen.add(digest)
                self._seen_total += 1
            else:
                self.dedup_saturated = True
            stats.converted += 1
            yield component, out

    def _turn_lines(
        self, lines: Iterable[bytes | memoryview | OversizedLine | UnreadableData], path_component: str | None
    ) -> Iterator[tuple[str, bytes]]:
        """Front-door turn records -> training lines, with the same counts, dedup and skip reasons."""
        fallback = path_component or UNATTRIBUTED
        loads = _orjson.loads if self.fast else json.loads
        for line in lines:
            component = fallback
            if line.__class__ is memoryview:
                line = line.tobytes()
            try:
                if isinstance(line, OversizedLine):
                    raise _Skip("line_too_long")
                if line.__class__ is UnreadableData:
                    raise _Skip(line.reason)
                try:
                    record = loads(line)  # type: ignore[arg-type]
                except (ValueError, RecursionError):
                    record = self._parse_turn(line)  # type: ignore[arg-type]
                if not isinstance(record, dict) or "messages" not in record:
                    raise _Skip("not_a_turn_record")
                name = record.get("component")
                if name is None or name == "":
                    raise _Skip("unattributed_component")
                if not isinstance(name, str) or not _COMPONENT_NAME.fullmatch(name):
                    raise _Skip("invalid_component_name")
                if name not in self.stats and len(self.stats) >= self.max_components:
                    raise _Skip("too_many_components")
                component = name
                try:
                    messages = _chat_messages(record["messages"])
                except _Skip as skip:
                    if skip.reason != "unsupported_message_role":
                        raise
                    out = self._turn_agent(record["messages"], component)  # tool calls or tool results
                else:
                    if messages[-1][0] != "assistant" or not messages[-1][1].strip():
                        raise _Skip("empty_response")
                    out = self._encode(messages)
            except _Skip as skip:
                stats = self._stats(component)
                stats.skipped[skip.reason] += 1
                stats.records_in += 1
                continue
            stats = self._stats(component)
            stats.records_in += 1
            digest = _digest(out)
            seen = self._seen.setdefault(component, set())
            if digest in seen:
                stats.duplicates += 1
                continue
            if self._seen_total < self.dedup_max_entries:
                seen.add(digest)
                self._seen_total += 1
            else:
                self.dedup_saturated = True
            stats.converted += 1
            yield component, out

    def _convert_agent(self, capture: dict[str, Any], component: str) -> bytes:
        """A capture record of a tool-calling turn -> its training line (:func:`agent_messages`,
        :func:`agent_reply`); what it leaves out is counted in the component's ``dropped``."""
        request_part, response_part = _capture_parts(capture)
        request, request_is_json = self._decode(request_part)
        if not request_is_json or not isinstance(request, dict) or "messages" not in request:
            raise _Skip("unsupported_message_role")
        messages = agent_messages(request["messages"])
        response, response_is_json = self._decode(response_part)
        reply, reasoned = agent_reply(response, is_json=response_is_json, loads=self._loads)
        messages.append(reply)
        out = encode_agent_record(messages)
        self._count_agent(component, tools=bool(request.get("tools")), reasoned=reasoned)
        return out

    def _turn_agent(self, turn: Any, component: str) -> bytes:
        """A front-door turn with tool calls or tool results -> its training line (the last message is the
        model's: text or tool calls)."""
        messages = agent_messages(turn)
        last = messages[-1]
        if last["role"] != "assistant" or not (last.get("tool_calls") or (last["content"] or "").strip()):
            raise _Skip("empty_response")
        out = encode_agent_record(messages)
        self._count_agent(component, tools=False, reasoned=False)
        return out

    def _count_agent(self, component: str, *, tools: bool, reasoned: bool) -> None:
        stats = self._stats(component)
        stats.tool_calling += 1
        if tools:
            stats.dropped["tool_definitions"] += 1
        if reasoned:
            stats.dropped["reasoning_content"] += 1

    @staticmethod
    def _parse_turn(line: bytes) -> Any:
        """The exact reasons for a front-door line that does not parse."""
        if not line.strip():
            raise _Skip("blank_line")
        try:
            return json.loads(line)
        except (ValueError, RecursionError) as error:
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                raise _Skip("not_utf8") from None
            if isinstance(error, json.JSONDecodeError):
                raise _Skip(_json_error_reason(error.doc, error)) from None
            raise _Skip("invalid_json_line") from None

    def totals(self) -> dict[str, Any]:
        total = ComponentStats()
        for stats in self.stats.values():
            total.records_in += stats.records_in
            total.converted += stats.converted
            total.duplicates += stats.duplicates
            total.skipped.update(stats.skipped)
            total.tool_calling += stats.tool_calling
            total.dropped.update(stats.dropped)
        return total.as_dict()

    def summary(self) -> dict[str, Any]:
        return {
            **self.totals(),
            "unattributed": sum(stats.skipped.get("unattributed_component", 0) for stats in self.stats.values()),
            "dedup_saturated": self.dedup_saturated,
            "components": {name: stats.as_dict() for name, stats in sorted(self.stats.items())},
        }

    # -- steps ------------------------------------------------------------------------------

    def _stats(self, component: str) -> ComponentStats:
        stats = self.stats.get(component)
        if stats is None:
            stats = self.stats[component] = ComponentStats()
        return stats

    @staticmethod
    def _parse_line(line: bytes) -> dict[str, Any]:
        if not line.strip():
            raise _Skip("blank_line")
        try:
            capture = json.loads(line)  # decodes the bytes itself (one copy less than decoding first)
        except (ValueError, RecursionError) as error:
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                raise _Skip("not_utf8") from None
            if isinstance(error, json.JSONDecodeError):
                raise _Skip(_json_error_reason(error.doc, error)) from None
            raise _Skip("invalid_json_line") from None
        if not isinstance(capture, dict) or not isinstance(capture.get("captureData"), dict):
            raise _Skip("missing_capture_data")
        return capture

    def _component(self, capture: dict[str, Any], path_component: str | None) -> str:
        metadata = capture.get("eventMetadata")
        name = metadata.get("inferenceComponentName") if isinstance(metadata, dict) else None
        if name is None or name == "":
            name = path_component or self.default_component
            if name is None:
                raise _Skip("unattributed_component")
        if name.__class__ is str and name in self._valid_names:  # validated and counted before
            return name
        if not isinstance(name, str) or not _COMPONENT_NAME.fullmatch(name):
            raise _Skip("invalid_component_name")
        if name not in self.stats and len(self.stats) >= self.max_components:
            raise _Skip("too_many_components")
        if name in self.stats:  # the name now has its stats (the caller creates them if new)
            self._valid_names.add(name)
        return name

    def _convert(self, capture: dict[str, Any]) -> bytes:
        request_part, response_part = _capture_parts(capture)
        request, request_is_json = self._decode(request_part)
        if not request_is_json and request_part.get("encoding") != "CSV":
            raise _Skip("request_not_json")
        messages, prompt = request_to_messages(request)
        response, response_is_json = self._decode(response_part)
        text = response_to_text(
            response,
            is_json=response_is_json,
            plain_text_ok=response_part.get("encoding") == "CSV",
            loads=self._loads,
        )
        # return_full_text=True (the LMI/TGI default for some models) echoes the prompt: trim it. With
        # return_full_text=false prompt is None: the response is the generation, kept whole even when
        # it happens to start with the prompt's text.
        if (
            prompt is not None
            and text.startswith(prompt)
            and (len(text) > len(prompt) or echoes_prompt(request) is True)
        ):
            text = text[len(prompt) :]
            if not text.strip():
                raise _Skip("empty_response")
        if messages[-1][0] == "assistant":  # prefill: the model continued that message
            messages[-1] = ("assistant", messages[-1][1] + text)
        else:
            messages.append(("assistant", text))
        return self._encode(messages)

    @staticmethod
    def _convert_fast(capture: dict[str, Any]) -> bytes:
        """:meth:`_convert` with orjson and pybase64, the common shapes read in place (:func:`_plain_chat`,
        :func:`_plain_response`) and the output's message objects built once. The same steps in the same
        order, each uncommon shape handed to the same function :meth:`_convert` calls: the same bytes and
        the same skip reasons (tests compare both paths record by record)."""
        request_part, response_part = _capture_parts(capture)
        request, request_is_json = _decode_payload_fast(request_part)
        if not request_is_json and request_part.get("encoding") != "CSV":
            raise _Skip("request_not_json")
        prompt = None
        messages = _plain_chat(request["messages"]) if request.__class__ is dict and "messages" in request else None
        if messages is None:
            pairs, prompt = request_to_messages(request)
            messages = [{"role": role, "content": content} for role, content in pairs]
        response, response_is_json = _decode_payload_fast(response_part)
        text = _plain_response(response) if response_is_json else _sse_text_fast(response)
        if text is not None and not response_is_json and (not text or text.isspace()):
            raise _Skip("empty_response")  # what response_to_text says of a blank stream
        if text is None:
            text = response_to_text(
                response,
                is_json=response_is_json,
                plain_text_ok=response_part.get("encoding") == "CSV",
                loads=_loads_fast,
            )
        if (
            prompt is not None
            and text.startswith(prompt)
            and (len(text) > len(prompt) or echoes_prompt(request) is True)
        ):
            text = text[len(prompt) :]
            if not text.strip():
                raise _Skip("empty_response")
        last = messages[-1]
        if last["role"] == "assistant":  # prefill: the model continued that message
            last["content"] += text
        else:
            messages.append({"role": "assistant", "content": text})
        try:
            # not OPT_APPEND_NEWLINE: the bytes orjson returns keep its whole output buffer allocated (about
            # 8 KiB more per line, measured), and the function holds up to a shard's worth of lines; the
            # concatenation is an exact-size copy and frees that buffer.
            return one_line(_orjson.dumps({"messages": messages}) + b"\n")
        except _orjson.JSONEncodeError:  # a str with lone surrogates: not UTF-8
            raise _Skip("invalid_unicode") from None


# ---------------------------------------------------------------------------------------------
# User dataset formats
# ---------------------------------------------------------------------------------------------

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
                _content_text(message.get("content"))
            except _Skip:
                return None, f'"messages"[{index}]."content" must be a string or a list of text parts'
        return "openai_chat", ""
    if "prompt" in record or "completion" in record:
        if not isinstance(record.get("prompt"), str) or not isinstance(record.get("completion"), str):
            return None, '"prompt" and "completion" must both be strings'
        return "openai_completions", ""
    return None, 'an object without "conversations", "messages" or "prompt"/"completion"'
