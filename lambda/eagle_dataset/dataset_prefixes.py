"""Each conversation once: a front-door turn's record repeats the whole conversation so far, so within a batch
only the longest record of a conversation is written. A record whose messages are a strict prefix of a later (or
earlier) record's messages, of the same component, is skipped (``conversation_prefix``).

Memory is bounded twice. Records are held back in a window of at most ``window_bytes`` written bytes, oldest
first; a record leaving the window is written, so a conversation whose turns lie further apart in the batch than
the window keeps its earlier record too (turns of one conversation follow each other within minutes, and the
turn log's objects are read in time order). And the digests of every prefix seen (64-bit keyed hash plus the
message count, as the duplicate filter keeps) share the duplicate filter's bound; past it no new ones are added.

Messages are compared as the record writes them, with a tool call's arguments compared as JSON values (a client
that parses and re-serialises them, as LangChain does, still resends the same call).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

_MASK = (1 << 64) - 1

#: A held-back record: ``(component, line, what the caller counts when it is written)``.
Held = tuple[str, bytes, Any]


def _arguments(text: str) -> str:
    try:
        return json.dumps(json.loads(text), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    except (ValueError, RecursionError):
        return text


def _key(message: Any) -> tuple[Any, ...]:
    """What two messages must share to be the same message of a conversation."""
    if isinstance(message, tuple):  # (role, content) of a text record
        return message
    role = message["role"]
    if role == "tool":
        return ("tool", message["content"], message["tool_call_id"])
    calls = message.get("tool_calls")
    if calls:
        return (
            "assistant",
            message["content"] or "",
            tuple((c["id"], c["function"]["name"], _arguments(c["function"]["arguments"])) for c in calls),
        )
    return (role, message["content"])


def digests(component: str, messages: list[Any]) -> tuple[int, list[int]]:
    """``(the record's digest, the digests of its strict prefixes that end in an assistant message)``."""
    running = hash(("conversation", component))
    prefixes: list[int] = []
    last = len(messages) - 1
    for position, message in enumerate(messages):
        key = _key(message)
        running = hash((running, key))
        if position < last and key[0] == "assistant":
            prefixes.append(((position + 1) << 64) | (running & _MASK))
    return (len(messages) << 64) | (running & _MASK), prefixes


class ConversationPrefixes:
    """The hold-back window and the prefix digests of one batch (see the module's docstring).

    :meth:`add` returns what leaves the window (to be written) and the held records it drops as prefixes;
    :meth:`flush` returns the rest at the end of the batch."""

    def __init__(self, window_bytes: int) -> None:
        self.window_bytes = window_bytes
        self._pending: OrderedDict[int, Held] = OrderedDict()
        self._pending_bytes = 0
        self._prefixes: set[int] = set()

    def is_prefix(self, full: int) -> bool:
        """True when a record already seen in this batch extends the conversation of digest ``full``."""
        return full in self._prefixes

    def holds(self, full: int) -> bool:
        return full in self._pending

    def add(self, held: Held, full: int, prefixes: list[int], *, keep_digests: bool) -> tuple[list[Held], list[Held]]:
        """Hold ``held`` back; ``(what leaves the window, the held records it makes prefixes)``."""
        dropped = []
        for prefix in prefixes:
            shorter = self._pending.pop(prefix, None)
            if shorter is not None:
                self._pending_bytes -= len(shorter[1])
                dropped.append(shorter)
            if keep_digests:
                self._prefixes.add(prefix)
        self._pending[full] = held
        self._pending_bytes += len(held[1])
        out = []
        while self._pending_bytes > self.window_bytes and self._pending:
            _, oldest = self._pending.popitem(last=False)
            self._pending_bytes -= len(oldest[1])
            out.append(oldest)
        return out, dropped

    def flush(self) -> Iterator[Held]:
        while self._pending:
            _, oldest = self._pending.popitem(last=False)
            self._pending_bytes -= len(oldest[1])
            yield oldest
