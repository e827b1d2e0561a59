"""Where each value of a layered config was written. While files merge, every mapping carries its keys'
``Origin`` under the ``_ORIGIN`` key (and, under ``(key, _SELF)``, the origins of the items of a list it holds), so
the overlay's origins win exactly as its values do; ``_strip`` then takes them out into a map from path in the
merged document to ``Origin``, which names the file and line of a problem found in the merged config.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Origin:
    """Where a value of a merged config was written."""

    file: Path
    path: tuple[Any, ...]
    """Its path in that file (which differs from its path in the merged config when items merged by name)."""
    line: int
    """1-based line of its key (or list item)."""

    def describe(self, merged_path: tuple[Any, ...] | None = None) -> str:
        """``config/dev.yaml line 23``, plus ``, as endpoints[0].models[1] there`` when the file's path differs."""
        text = f"{self.file} line {self.line}"
        if merged_path is not None and tuple(self.path) != tuple(merged_path):
            text += f", as {_render(self.path) or '(top level)'} there"
        return text


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_ORIGIN: Any = _Marker("<origin>")
"""Key, in every mapping of a file being merged, of its keys' ``Origin`` (merged with the mapping, so the
overlay's keys win exactly as their values do); removed by ``_strip``."""
_SELF: Any = _Marker("<self>")
"""Key, in an ``_ORIGIN`` mapping, of the mapping's own ``Origin``."""


def _render(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _origin(item: Any) -> Origin | None:
    marks = item.get(_ORIGIN) if isinstance(item, dict) else None
    return marks.get(_SELF) if isinstance(marks, dict) else None


def _key_origin(item: Any, key: Any) -> Any:
    marks = item.get(_ORIGIN) if isinstance(item, dict) else None
    return marks.get(key) if isinstance(marks, dict) else None


def _bare(value: Any) -> Any:
    """``value`` without the ``_ORIGIN`` bookkeeping, to show in a message."""
    if isinstance(value, dict):
        return {k: _bare(v) for k, v in value.items() if k is not _ORIGIN}
    if isinstance(value, list):
        return [_bare(v) for v in value]
    return value


def _strip(value: Any, path: tuple[Any, ...], origins: dict[tuple[Any, ...], Origin]) -> Any:
    """``value`` without its ``_ORIGIN`` keys, which go into ``origins`` by path in the merged document."""
    if isinstance(value, dict):
        marks = value.get(_ORIGIN, {})
        if _SELF in marks:
            origins[path] = marks[_SELF]
        out: dict[Any, Any] = {}
        for key, inner in value.items():
            if key is _ORIGIN:
                continue
            if key in marks:
                origins[path + (key,)] = marks[key]
            items = marks.get((key, _SELF))
            if isinstance(inner, list) and items:
                for i, origin in enumerate(items[: len(inner)]):
                    if origin is not None:
                        origins[path + (key, i)] = origin
            out[key] = _strip(inner, path + (key,), origins)
        return out
    if isinstance(value, list):
        return [_strip(item, path + (i,), origins) for i, item in enumerate(value)]
    return value
