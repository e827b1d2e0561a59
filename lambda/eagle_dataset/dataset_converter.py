"""The batch converter: Data Capture lines (or the session front door's turn lines) of one Distributed Map
batch in, ``(component, training line)`` pairs out, with per-component counts, per-reason skip counts and a
bounded filter of exact duplicates. It chains the readers of the other modules (payloads, requests, responses,
agent turns, records) in one loop per line; see :class:`BatchConverter`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dataset_agents import DROPPED_PARTS, agent_messages, agent_reply, encode_agent_record
from dataset_fast_json import FAST_JSON_AVAILABLE, loads_fast, orjson, scan_json
from dataset_messages import Message, chat_messages, plain_chat
from dataset_payloads import capture_parts, decode_payload, decode_payload_fast, json_error_reason
from dataset_prefixes import ConversationPrefixes, digests
from dataset_reasoning import reasoning_of, with_reasoning
from dataset_records import encode_record, encode_record_fast, one_line
from dataset_requests import echoes_prompt, request_to_messages
from dataset_responses import plain_response, response_to_text, sse_text_fast
from dataset_skips import UNATTRIBUTED, Skip
from dataset_streams import OversizedLine, UnreadableData

_COMPONENT_NAME = re.compile(r"[a-zA-Z0-9](?:[-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?")

_HASH_MASK = (1 << 64) - 1


def _digest(line: bytes) -> int:
    """What the duplicate filter keeps of a written line: its length and its 64-bit keyed hash.

    ``hash()`` of bytes is SipHash-1-3 keyed at process start (``PYTHONHASHSEED`` is not set in
    Lambda), so an input cannot aim at it, and it is several times faster than BLAKE2b on the
    output lines. Two different lines of the same length collide with probability 2**-64 per
    pair: about 7e-9 for a batch at the default 500,000-entry bound.
    """
    return (len(line) << 64) | (hash(line) & _HASH_MASK)


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
        prefix_window_bytes: int = 16 << 20,
        reasoning_tags: tuple[str, str] | None = None,
    ) -> None:
        """``fast``: parse and write with orjson (None: when it imports). The output is the same either way.
        ``source``: ``capture`` (Data Capture lines) or ``front_door`` (the ``TurnLog`` lines the session front
        door writes: ``{"component", "messages", "created_at"}``, the component always named; each conversation is
        written once, its longest record, :mod:`dataset_prefixes`, holding back up to ``prefix_window_bytes``).
        ``reasoning_tags``: write a reply's reasoning into its content inside these tags (:mod:`dataset_reasoning`);
        None: leave it out, counted in ``dropped.reasoning_content``."""
        if source not in ("capture", "front_door"):
            raise ValueError(f"source {source!r}: use 'capture' or 'front_door'")
        self.source = source
        self.reasoning_tags = reasoning_tags
        if fast and not FAST_JSON_AVAILABLE:
            raise ValueError("fast=True needs orjson, which does not import here; pass fast=None or False")
        self.fast = FAST_JSON_AVAILABLE if fast is None else fast
        self._decode: Callable[[dict[str, Any]], tuple[Any, bool]] = (
            decode_payload_fast if self.fast else decode_payload
        )
        self._encode: Callable[[list[Message]], bytes] = encode_record_fast if self.fast else encode_record
        self._loads: Callable[[str], Any] = loads_fast if self.fast else json.loads
        self.default_component = default_component
        self.dedup_max_entries = dedup_max_entries
        self.max_components = max_components
        self.stats: dict[str, ComponentStats] = {}
        self._seen: dict[str, set[int]] = {}
        self._seen_total = 0
        self.dedup_saturated = False
        self._valid_names: set[str] = set()  # component names that passed _component's checks
        self._conversations = ConversationPrefixes(prefix_window_bytes)

    # -- public -----------------------------------------------------------------------------

    def convert_lines(
        self,
        lines: Iterable[bytes | memoryview | OversizedLine | UnreadableData],
        *,
        path_component: str | None = None,
        final: bool = True,
    ) -> Iterator[tuple[str, bytes]]:
        """Yield ``(component, jsonl_line_with_newline)`` for every converted, new record.

        ``lines`` as :func:`iter_bounded_lines` or :func:`iter_bounded_line_views` yields them. Front-door records
        are held back to keep each conversation once: ``final=False`` when more of the batch follows in another
        call, then :meth:`flush` after the last."""
        if self.source == "front_door":
            yield from self._turn_lines(lines, path_component)
            if final:
                yield from self.flush()
            return
        # One loop, no per-line method layers on the common path; every step is the same as
        # _parse_line / _component / _convert (which the rare paths still call).
        fallback = path_component or UNATTRIBUTED
        all_stats = self.stats
        seen_by_component = self._seen
        parse_line = self._parse_line
        component_of = self._component
        convert = self._convert_fast if self.fast else self._convert
        scan = scan_json
        fast_loads = orjson.loads if self.fast else None
        fast_error = orjson.JSONDecodeError if self.fast else ValueError
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
                        if (end == len(text) or not text[end:].strip(" \t\n\r")) and (
                            value.__class__ is dict and isinstance(value.get("captureData"), dict)
                        ):
                            capture = value
                    except (ValueError, RecursionError, StopIteration):
                        pass
                    if capture is None:
                        capture = parse_line(line)  # errors and edge cases: the exact, slow way
                elif isinstance(line, OversizedLine):
                    raise Skip("line_too_long")
                elif line.__class__ is UnreadableData:
                    raise Skip(line.reason)
                else:
                    capture = parse_line(line)  # type: ignore[arg-type]  # bytes: views are read above
                component = component_of(capture, path_component)
                try:
                    out = convert(capture, component)
                except Skip as skip:
                    if skip.reason != "unsupported_message_role":
                        raise
                    out = self._convert_agent(capture, component)  # tool calls or tool results
            except Skip as skip:
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
        loads = orjson.loads if self.fast else json.loads
        for line in lines:
            component = fallback
            if line.__class__ is memoryview:
                line = line.tobytes()
            try:
                if isinstance(line, OversizedLine):
                    raise Skip("line_too_long")
                if line.__class__ is UnreadableData:
                    raise Skip(line.reason)
                try:
                    record = loads(line)  # type: ignore[arg-type]
                except (ValueError, RecursionError):
                    record = self._parse_turn(line)  # type: ignore[arg-type]
                if not isinstance(record, dict) or "messages" not in record:
                    raise Skip("not_a_turn_record")
                name = record.get("component")
                if name is None or name == "":
                    raise Skip("unattributed_component")
                if not isinstance(name, str) or not _COMPONENT_NAME.fullmatch(name):
                    raise Skip("invalid_component_name")
                if name not in self.stats and len(self.stats) >= self.max_components:
                    raise Skip("too_many_components")
                component = name
                written: list[Any]
                try:
                    written = chat_messages(record["messages"])
                except Skip as skip:
                    if skip.reason != "unsupported_message_role":
                        raise
                    out, written = self._turn_agent(record["messages"])  # tool calls or tool results
                    agent = True
                else:
                    if written[-1][0] != "assistant" or not written[-1][1].strip():
                        raise Skip("empty_response")
                    out, agent = self._encode(written), False
                full, prefixes = digests(component, written)
                if self._conversations.is_prefix(full):
                    raise Skip("conversation_prefix")  # a longer record of this conversation came first
            except Skip as skip:
                stats = self._stats(component)
                stats.skipped[skip.reason] += 1
                stats.records_in += 1
                continue
            stats = self._stats(component)
            stats.records_in += 1
            digest = _digest(out)
            seen = self._seen.setdefault(component, set())
            if digest in seen or self._conversations.holds(full):  # the same line, or the same conversation
                stats.duplicates += 1
                continue
            keep = self._seen_total + 1 + len(prefixes) <= self.dedup_max_entries
            if keep:
                seen.add(digest)
                self._seen_total += 1 + len(prefixes)
            else:
                self.dedup_saturated = True
            held = (component, out, (agent, record.get("dropped")))
            leaving, dropped = self._conversations.add(held, full, prefixes, keep_digests=keep)
            for name, _, _ in dropped:
                self._stats(name).skipped["conversation_prefix"] += 1
            for ready in leaving:
                yield self._written(ready)

    def _written(self, held: tuple[str, bytes, Any]) -> tuple[str, bytes]:
        """A front-door record leaving the hold-back window: counted as converted, with its agent counts."""
        name, line, (agent, dropped) = held
        stats = self._stats(name)
        stats.converted += 1
        if agent:
            stats.tool_calling += 1
        if isinstance(dropped, list):  # what the front door says it left out
            for part in dropped:
                if part in DROPPED_PARTS:
                    stats.dropped[part] += 1
        return name, line

    def flush(self) -> Iterator[tuple[str, bytes]]:
        """The front-door records still held back (:meth:`convert_lines` with ``final=False``), in order."""
        for held in self._conversations.flush():
            yield self._written(held)

    def _convert_agent(self, capture: dict[str, Any], component: str) -> bytes:
        """A capture record of a tool-calling turn -> its training line (:func:`agent_messages`,
        :func:`agent_reply`); what it leaves out is counted in the component's ``dropped``."""
        request_part, response_part = capture_parts(capture)
        request, request_is_json = self._decode(request_part)
        if not request_is_json or not isinstance(request, dict) or "messages" not in request:
            raise Skip("unsupported_message_role")
        messages = agent_messages(request["messages"])
        response, response_is_json = self._decode(response_part)
        reply, reasoning = agent_reply(response, is_json=response_is_json, loads=self._loads)
        if reasoning and self.reasoning_tags is not None:
            reply["content"] = with_reasoning(reply.get("content"), reasoning, self.reasoning_tags)
            reasoning = ""  # written, not left out
        messages.append(reply)
        out = encode_agent_record(messages)
        self._count_agent(component, tools=bool(request.get("tools")), reasoned=bool(reasoning))
        return out

    @staticmethod
    def _turn_agent(turn: Any) -> tuple[bytes, list[dict[str, Any]]]:
        """A front-door turn with tool calls or tool results -> its training line and messages (the last message
        is the model's: text or tool calls)."""
        messages = agent_messages(turn)
        last = messages[-1]
        if last["role"] != "assistant" or not (last.get("tool_calls") or (last["content"] or "").strip()):
            raise Skip("empty_response")
        return encode_agent_record(messages), messages

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
            raise Skip("blank_line")
        try:
            return json.loads(line)
        except (ValueError, RecursionError) as error:
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                raise Skip("not_utf8") from None
            if isinstance(error, json.JSONDecodeError):
                raise Skip(json_error_reason(error.doc, error)) from None
            raise Skip("invalid_json_line") from None

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
            raise Skip("blank_line")
        try:
            capture = json.loads(line)  # decodes the bytes itself (one copy less than decoding first)
        except (ValueError, RecursionError) as error:
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                raise Skip("not_utf8") from None
            if isinstance(error, json.JSONDecodeError):
                raise Skip(json_error_reason(error.doc, error)) from None
            raise Skip("invalid_json_line") from None
        if not isinstance(capture, dict) or not isinstance(capture.get("captureData"), dict):
            raise Skip("missing_capture_data")
        return capture

    def _component(self, capture: dict[str, Any], path_component: str | None) -> str:
        metadata = capture.get("eventMetadata")
        name = metadata.get("inferenceComponentName") if isinstance(metadata, dict) else None
        if name is None or name == "":
            name = path_component or self.default_component
            if name is None:
                raise Skip("unattributed_component")
        if name.__class__ is str and name in self._valid_names:  # validated and counted before
            return name
        if not isinstance(name, str) or not _COMPONENT_NAME.fullmatch(name):
            raise Skip("invalid_component_name")
        if name not in self.stats and len(self.stats) >= self.max_components:
            raise Skip("too_many_components")
        if name in self.stats:  # the name now has its stats (the caller creates them if new)
            self._valid_names.add(name)
        return name

    def _reasoned(self, text: str, response: Any, is_json: bool, component: str) -> str:
        """``text`` with the reply's reasoning inside the think tags, or as it is with the reasoning counted as left
        out (nothing when the reply has none)."""
        reasoning = reasoning_of(response, is_json=is_json, loads=self._loads)
        if not reasoning:
            return text
        if self.reasoning_tags is None:
            self._stats(component).dropped["reasoning_content"] += 1
            return text
        return with_reasoning(text, reasoning, self.reasoning_tags)

    def _convert(self, capture: dict[str, Any], component: str = UNATTRIBUTED) -> bytes:
        request_part, response_part = capture_parts(capture)
        request, request_is_json = self._decode(request_part)
        if not request_is_json and request_part.get("encoding") != "CSV":
            raise Skip("request_not_json")
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
                raise Skip("empty_response")
        if messages[-1][0] == "assistant":  # prefill: the model continued that message
            messages[-1] = ("assistant", messages[-1][1] + text)
        else:
            messages.append(("assistant", self._reasoned(text, response, response_is_json, component)))
        return self._encode(messages)

    def _convert_fast(self, capture: dict[str, Any], component: str = UNATTRIBUTED) -> bytes:
        """:meth:`_convert` with orjson and pybase64, the common shapes read in place (:func:`plain_chat`,
        :func:`plain_response`) and the output's message objects built once. The same steps in the same
        order, each uncommon shape handed to the same function :meth:`_convert` calls: the same bytes and
        the same skip reasons (tests compare both paths record by record)."""
        request_part, response_part = capture_parts(capture)
        request, request_is_json = decode_payload_fast(request_part)
        if not request_is_json and request_part.get("encoding") != "CSV":
            raise Skip("request_not_json")
        prompt = None
        messages = plain_chat(request["messages"]) if request.__class__ is dict and "messages" in request else None
        if messages is None:
            pairs, prompt = request_to_messages(request)
            messages = [{"role": role, "content": content} for role, content in pairs]
        response, response_is_json = decode_payload_fast(response_part)
        text = plain_response(response) if response_is_json else sse_text_fast(response)
        if text is not None and not response_is_json and (not text or text.isspace()):
            raise Skip("empty_response")  # what response_to_text says of a blank stream
        if text is None:
            text = response_to_text(
                response,
                is_json=response_is_json,
                plain_text_ok=response_part.get("encoding") == "CSV",
                loads=loads_fast,
            )
        if (
            prompt is not None
            and text.startswith(prompt)
            and (len(text) > len(prompt) or echoes_prompt(request) is True)
        ):
            text = text[len(prompt) :]
            if not text.strip():
                raise Skip("empty_response")
        last = messages[-1]
        if last["role"] == "assistant":  # prefill: the model continued that message
            last["content"] += text
        else:
            messages.append(
                {"role": "assistant", "content": self._reasoned(text, response, response_is_json, component)}
            )
        try:
            # not OPT_APPEND_NEWLINE: the bytes orjson returns keep its whole output buffer allocated (about
            # 8 KiB more per line, measured), and the function holds up to a shard's worth of lines; the
            # concatenation is an exact-size copy and frees that buffer.
            return one_line(orjson.dumps({"messages": messages}) + b"\n")
        except orjson.JSONEncodeError:  # a str with lone surrogates: not UTF-8
            raise Skip("invalid_unicode") from None
