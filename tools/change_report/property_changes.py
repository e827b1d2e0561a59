"""Property-level differences between two versions of a resource: each smallest part that differs (an intrinsic
function is one part, a list that grew or shrank is its added and removed items), and long string values compared by
what changed inside them (JSON text path by path with lists aligned item by item, other text by its changed middle)."""

from __future__ import annotations

import json
from typing import Any

from tools.change_report.records import ItemDelta, PropertyChange
from tools.change_report.resource_types import is_create_only
from tools.change_report.templates import MISSING, _as_list, _is_intrinsic, render_path
from tools.change_report.value_text import _as_text, text_change

LONG = 70
"""Values whose JSON is longer than this are shown by what changed inside them, not elided."""
INSIDE = "::"
"""Separates a property path from a path inside its JSON string value: ``DashboardBody::widgets[2].properties``."""


def leaf_changes(old: Any, new: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any, Any]]:
    """(path, old, new) for every smallest part that differs; an intrinsic function is one part."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict) and not _is_intrinsic(old) and not _is_intrinsic(new):
        keys = list(old) + [k for k in new if k not in old]
        return [c for k in keys for c in leaf_changes(old.get(k, MISSING), new.get(k, MISSING), path + (k,))]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [c for i, (a, b) in enumerate(zip(old, new, strict=True)) for c in leaf_changes(a, b, path + (i,))]
    if (isinstance(old, list) or isinstance(new, list)) and old is not MISSING and new is not MISSING:
        before, after = _as_list(old), _as_list(new)
        return [
            (path, ItemDelta([v for v in before if v not in after]), ItemDelta([v for v in after if v not in before]))
        ]
    return [(path, old, new)]


def json_changes(old: Any, new: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any, Any]]:
    """Like ``leaf_changes`` for plain JSON, but a list that grew or shrank is aligned item by item (difflib), so an
    inserted dashboard widget is one added item and the widgets after it are not all "changed"."""
    import difflib

    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        keys = list(old) + [k for k in new if k not in old]
        return [c for k in keys for c in json_changes(old.get(k, MISSING), new.get(k, MISSING), path + (k,))]
    if isinstance(old, list) and isinstance(new, list):
        keyed = [json.dumps(v, sort_keys=True) for v in old], [json.dumps(v, sort_keys=True) for v in new]
        found: list[tuple[tuple[Any, ...], Any, Any]] = []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, *keyed, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            if tag == "replace" and i2 - i1 == j2 - j1:
                for offset in range(i2 - i1):
                    found += json_changes(old[i1 + offset], new[j1 + offset], path + (j1 + offset,))
                continue
            found += [(path + (i,), old[i], MISSING) for i in range(i1, i2)]
            found += [(path + (j,), MISSING, new[j]) for j in range(j1, j2)]
        return found
    return [(path, old, new)]


def _as_json(text: str) -> Any:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def _detailed(
    found: list[tuple[tuple[Any, ...], Any, Any]], prefix: str, resource_type: str | None
) -> list[PropertyChange]:
    """PropertyChanges for ``found``; a long string on both sides becomes what changed inside it (JSON-aware)."""
    out = []
    for path, before, after in found:
        create_only = is_create_only(resource_type, path) if resource_type else False
        shown = prefix + render_path(path)
        a, b = _as_text(before), _as_text(after)
        if a is not None and b is not None and max(len(json.dumps(a)), len(json.dumps(b))) > LONG:
            ja, jb = _as_json(a), _as_json(b)
            if ja is not None and jb is not None:
                inner = [(p, *_inside_text(x, y)) for p, x, y in json_changes(ja, jb)]
                out += [
                    PropertyChange(f"{shown}{INSIDE}{render_path(p) or '(whole)'}", x, y, create_only)
                    for p, x, y in inner
                ] or [PropertyChange(shown, before, after, create_only)]
                continue
            delta_old, delta_new = text_change(a, b)
            out.append(PropertyChange(shown, delta_old, delta_new, create_only))
            continue
        out.append(PropertyChange(shown, before, after, create_only))
    return out


def _inside_text(old: Any, new: Any) -> tuple[Any, Any]:
    """A long string inside a JSON value (a dashboard's Markdown text) as what changed in it, like a long property."""
    if isinstance(old, str) and isinstance(new, str) and max(len(json.dumps(old)), len(json.dumps(new))) > LONG:
        return text_change(old, new)
    return old, new
