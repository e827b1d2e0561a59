"""Objects as streams of bytes and lines, with bounded memory: :func:`iter_bounded_lines` and
:func:`iter_bounded_line_views` split byte chunks into lines without ever holding more than ``max_line_bytes`` of
one line (longer lines become :class:`OversizedLine`); :func:`iter_object_data` inflates gzip (detected from the
bytes, not the key) and ends data that cannot be read with one :class:`UnreadableData`; :func:`iter_json_array`
streams the elements of a large JSON array (Step Functions ``ResultWriter`` files).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Generator, Iterable, Iterator
from typing import Any

_WHITESPACE = re.compile(r"[ \t\n\r]*")


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
