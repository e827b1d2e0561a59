"""Values as short readable text: CloudFormation intrinsics compacted (``Ref`` -> ``${X}``), JSON cut to a length,
and two long strings shown by where they part (``text_change`` marks the differing middle, ``excerpts`` cuts both
around their first difference)."""

from __future__ import annotations

import json
from typing import Any

from tools.change_report.templates import MISSING


class TextDelta(str):
    """The changed part of a long non-JSON string, with a little context: ``...ctx[-old-]{+new+}ctx...``."""


def _compact(value: Any) -> Any:
    """CloudFormation intrinsics as readable text: Ref -> ${X}, GetAtt -> ${X.Attr}, Join concatenated."""
    if isinstance(value, dict) and len(value) == 1:
        ((kind, arg),) = value.items()
        if kind == "Ref":
            return "${" + str(arg) + "}"
        if kind == "Fn::GetAtt" and isinstance(arg, list):
            return "${" + ".".join(str(a) for a in arg) + "}"
        if kind == "Fn::Join" and isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list):
            parts = [_compact(p) for p in arg[1]]
            if all(isinstance(p, str) for p in parts):
                return str(arg[0]).join(parts)
        if kind == "Fn::Sub" and isinstance(arg, str):
            return arg
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def _as_text(value: Any) -> str | None:
    compacted = _compact(value)
    return compacted if isinstance(compacted, str) else None


def _short(value: Any, limit: int = 70) -> str:
    """``value`` as short JSON; a long one keeps its start and its end. Two values that differ are shortened with
    ``_pair`` instead, so what is shown of them is where they differ."""
    if value is MISSING:
        return "(absent)"
    if isinstance(value, TextDelta):
        return json.dumps(str(value))
    text = json.dumps(_compact(value), sort_keys=True)
    return text if len(text) <= limit else text[: limit // 2 - 2] + "..." + text[-(limit // 2 - 1) :]


def first_difference(old: str, new: str) -> int:
    """The index of the first character where ``old`` and ``new`` differ (the shorter's length when one is the
    other's start; the length when they are equal)."""
    index = 0
    while index < min(len(old), len(new)) and old[index] == new[index]:
        index += 1
    return index


def excerpts(old: str, new: str, limit: int = 70, context: int = 24) -> tuple[str, str]:
    """``old`` and ``new`` each cut to about ``limit`` characters around their first difference: ``context``
    characters before it, then as much after it as fits, ``...`` where text is left out. Both windows start at the
    same place, so the shown parts line up and each holds its side's first differing character (a cut that kept the
    start and the end could show two identical excerpts of strings that differ in the middle)."""
    if len(old) <= limit and len(new) <= limit:
        return old, new
    at = first_difference(old, new)
    start = max(0, at - context)
    if max(len(old), len(new)) - start <= limit - 3:  # the rest fits: keep it up to the end
        start = max(0, min(start, max(len(old), len(new)) - (limit - 3)))

    def cut(text: str) -> str:
        width = limit - (3 if start else 0)
        shown = text[start : start + width]
        if start + width < len(text):
            shown = shown[:-3] + "..."
        return ("..." if start else "") + shown

    return cut(old), cut(new)


def _pair(old: Any, new: Any, limit: int = 70) -> tuple[str, str]:
    """``old`` and ``new`` as short JSON (``_short``); when both are there and one is too long, each is cut around
    where the two differ first (``excerpts``)."""
    if old is MISSING or new is MISSING or isinstance(old, TextDelta) or isinstance(new, TextDelta):
        return _short(old, limit), _short(new, limit)
    a, b = json.dumps(_compact(old), sort_keys=True), json.dumps(_compact(new), sort_keys=True)
    return excerpts(a, b, limit)


def text_change(old: str, new: str, context: int = 30) -> tuple[TextDelta, TextDelta]:
    """The differing middle of two long strings, with ``context`` characters either side: each side starts at the
    first character where they differ (``first_difference``) and a long middle keeps its start, so what is shown is
    always where the two part."""
    start = first_difference(old, new)
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1

    def middle(text: str) -> str:
        part = text[start : len(text) - end]
        return part if len(part) <= 300 else part[:150] + "..." + part[-150:]

    lead = ("..." if start > context else "") + old[max(0, start - context) : start]
    tail_old = old[len(old) - end : len(old) - end + context] if end else ""
    tail = tail_old + ("..." if end > context else "")
    return TextDelta(lead + "[-" + middle(old) + "-]" + tail), TextDelta(lead + "{+" + middle(new) + "+}" + tail)
