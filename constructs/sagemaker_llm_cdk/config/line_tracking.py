"""YAML read with where everything is written: a loader that records the line of each mapping key and list item
and each key given twice, the copy of a document annotated with those origins (``_ORIGIN`` in every mapping), and
the report of the keys given twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..core.errors import Problem
from ..core.yaml_loading import _hashable_key
from .origins import _ORIGIN, _SELF, Origin, _render

_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when PyYAML has it


class _TrackingLoader(_FAST_LOADER):  # type: ignore[misc]
    """SafeLoader that records the line of each mapping key and list item, and each key given twice (the last
    value is kept, the repeat reported with every other problem)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.lines: dict[int, dict[Any, int]] = {}  # id(container) -> key or index -> 1-based line
        self.starts: dict[int, int] = {}  # id(container) -> its first line
        self.repeats: list[tuple[int, Any, int]] = []  # (id(mapping), key, line of the repeat)


def _construct_tracked_mapping(loader: _TrackingLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    mapping: dict[Any, Any] = {}
    lines: dict[Any, int] = {}
    for key_node, value_node in node.value:
        key = _hashable_key(loader, key_node, deep)
        if key in mapping:
            loader.repeats.append((id(mapping), key, key_node.start_mark.line + 1))
        mapping[key] = loader.construct_object(value_node, deep=deep)
        lines[key] = key_node.start_mark.line + 1
    loader.lines[id(mapping)] = lines
    loader.starts[id(mapping)] = node.start_mark.line + 1
    return mapping


def _construct_tracked_sequence(loader: _TrackingLoader, node: yaml.SequenceNode, deep: bool = False) -> list[Any]:
    items = [loader.construct_object(child, deep=deep) for child in node.value]
    loader.lines[id(items)] = {i: child.start_mark.line + 1 for i, child in enumerate(node.value)}
    loader.starts[id(items)] = node.start_mark.line + 1
    return items


_TrackingLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_tracked_mapping)
_TrackingLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_tracked_sequence)


def _annotate(value: Any, file: Path, path: tuple[Any, ...], loader: _TrackingLoader, line: int) -> Any:
    """A copy of ``value`` whose every mapping carries ``_ORIGIN``: where it and each of its keys are written
    (and, under ``(key, _SELF)``, the items of a list it holds)."""
    if isinstance(value, dict):
        key_lines = loader.lines.get(id(value), {})
        marks: dict[Any, Any] = {_SELF: Origin(file, path, loader.starts.get(id(value), line))}
        out: dict[Any, Any] = {}
        for key, inner in value.items():
            at = key_lines.get(key, line)
            marks[key] = Origin(file, path + (key,), at)
            if isinstance(inner, list):
                item_lines = loader.lines.get(id(inner), {})
                marks[(key, _SELF)] = tuple(
                    Origin(file, path + (key, i), item_lines.get(i, at)) for i in range(len(inner))
                )
            out[key] = _annotate(inner, file, path + (key,), loader, at)
        out[_ORIGIN] = marks
        return out
    if isinstance(value, list):
        item_lines = loader.lines.get(id(value), {})
        return [_annotate(item, file, path + (i,), loader, item_lines.get(i, line)) for i, item in enumerate(value)]
    return value


def _report_repeats(
    value: Any,
    file: Path,
    at: tuple[Any, ...],
    loader: _TrackingLoader,
    repeats: dict[tuple[int, Any], int],
    problems: list[Problem],
) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            if (id(value), key) in repeats:
                problems.append(
                    Problem(
                        _render(at + (key,)),
                        inner,
                        f"each key once in a mapping; key {key!r} is given twice",
                        "remove one of the two (the last one is the value read)",
                        f"{file} line {repeats[(id(value), key)]}",
                    )
                )
            _report_repeats(inner, file, at + (key,), loader, repeats, problems)
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            _report_repeats(inner, file, at + (i,), loader, repeats, problems)
