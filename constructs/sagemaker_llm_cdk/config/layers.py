"""Layered config files: a config may ``extends:`` another, so environments share a base.

::

    # config/prod.yaml
    extends: base.yaml            # relative to this file; or a list, applied left to right
    tags: {environment: prod}     # merged into base.yaml's tags
    endpoints:
      - name: Chat                # merged into base.yaml's endpoint named Chat: only what differs
        capacity_plan: chat-p5e-2027q1
        models:
          - {name: qwen3-32b-draft, $delete: true}   # removes the base's model of that name

Rules: the file is laid over what it extends.

- Mappings merge key by key, recursively.
- Lists of named items merge **by name**: ``endpoints``, ``endpoints[].models``,
  ``endpoints[].models[].adapters`` and ``capacity_plans``. An overlay item whose ``name`` matches
  a base item is merged into it (these rules again, so its own models and adapters merge by name
  too); an item with a new name is appended, in the overlay's order, after the base's items, which
  keep their order (so an empty list changes nothing). ``{name: X, $delete: true}`` (nothing else) removes X; ``$replace: true`` in an
  item makes it replace the base item of that name whole instead of merging into it. Deleting or
  replacing a name the base does not have is an error (a typo would otherwise go unnoticed), as is
  a name given twice in one list. Items without a ``name`` (a capacity plan given only by
  ``existing_plan_arn``) cannot be addressed: base ones are kept, overlay ones appended.
- Every other value (other lists, strings, numbers, null) replaces the base's.

``extends`` may name one file or a list of files (each may extend others); a file reached twice
along one chain is a cycle and an error. Keys may not repeat within a mapping. Every error names the
chain of files that led to it (``config/dev.yaml -> config/base.yaml``).

``load_layers(path).data`` is the merged mapping, without ``extends`` and the ``$`` markers, ready
for ``config.parse_config``; ``load_layered(path)`` returns just that mapping. ``load_layers(path).origins``
says where each value of it was written (file, its path in that file, line), so a problem found in the
merged config names the line to edit (``LayeredConfig.locate``). A key given twice and every misused
``$delete``/``$replace`` are reported together (``collect_layers`` returns them with the merged config, so
the config's own rules run in the same round); an unreadable file, a YAML syntax error or a bad ``extends``
stops at once (nothing sound to merge).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import MISSING, ConfigurationError, Problem
from ..core.yaml_loading import UniqueKeyLoader, _hashable_key, yaml_error_position  # noqa: F401 - re-exported

EXTENDS = "extends"


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


@dataclass(frozen=True)
class LayeredConfig:
    """A config file merged over everything it extends."""

    data: Any
    """The merged document (a mapping unless the file is not one), without ``extends``."""
    files: tuple[Path, ...]
    """Every file read, the named file first, then what it extends, depth first."""
    origins: Mapping[tuple[Any, ...], Origin] = field(default_factory=dict)
    """Path in ``data`` -> where that value (or mapping key) was written."""
    problems: tuple[Problem, ...] = ()
    """What ``collect_layers`` found while merging (keys given twice, misused ``$delete``/``$replace``), each
    with its ``where``; ``load_layers`` raises them instead."""

    @property
    def source(self) -> str:
        """How to name the config in messages: ``config/dev.yaml (extends config/base.yaml)``."""
        head, *rest = self.files
        return f"{head} (extends {', '.join(str(p) for p in rest)})" if rest else str(head)

    def locate(self, problem: Problem) -> Problem:
        """``problem`` (a path in the merged config) with ``where`` set: the file and line of its field, or, for a
        field that is not written anywhere (a missing one), of the nearest mapping that holds it."""
        if problem.where:
            return problem
        parts = _parts(problem.path)
        for end in range(len(parts), -1, -1):
            origin = self.origins.get(parts[:end])
            if origin is not None:  # the field itself, or (a missing field) the mapping that lacks it
                at = Origin(origin.file, tuple(origin.path) + parts[end:], origin.line)
                where = at.describe(parts)
                return Problem(
                    problem.path,
                    problem.value,
                    problem.allowed,
                    problem.fix,
                    where if end == len(parts) else f"under {where}",
                )
        return Problem(problem.path, problem.value, problem.allowed, problem.fix, str(self.files[0]))


def _parts(path: str) -> tuple[Any, ...]:
    """``endpoints[0].scaling`` -> ("endpoints", 0, "scaling")."""
    import re

    return tuple(
        int(token[1:-1]) if token.startswith("[") else token for token in re.findall(r"\[\d+\]|[^.\[\]]+", path)
    )


def load_layered(path: str | Path) -> Any:
    """The config at ``path`` merged over the files it extends (see the module docstring)."""
    return load_layers(path).data


def load_layers(path: str | Path) -> LayeredConfig:
    """Read ``path`` and everything it extends; raise one ``ConfigurationError`` naming the file chain."""
    layers = collect_layers(path)
    if layers.problems:
        raise ConfigurationError(layers.problems, source=layers.source)
    return layers


def collect_layers(path: str | Path) -> LayeredConfig:
    """As ``load_layers``, but a key given twice or a misused ``$delete``/``$replace`` is returned in ``problems``
    (the offending key or item left out of ``data``) rather than raised, so they are reported together with the
    config's own problems. An unreadable file, invalid YAML or a bad ``extends`` still raises."""
    files: list[Path] = []
    problems: list[Problem] = []
    data = _load(Path(path), (), files, problems)
    origins: dict[tuple[Any, ...], Origin] = {}
    data = _strip(data, (), origins)
    return LayeredConfig(data, tuple(files), origins, tuple(problems))


NAMED_LISTS: frozenset[tuple[str, ...]] = frozenset(
    {("endpoints",), ("endpoints", "models"), ("endpoints", "models", "adapters"), ("capacity_plans",)}
)
"""Key paths (list indices left out) of the lists whose items merge by ``name``."""
DELETE = "$delete"
REPLACE = "$replace"


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


def merge(base: Any, overlay: Any, path: tuple[Any, ...] = ()) -> Any:
    """``overlay`` laid over ``base`` (see the module docstring): mappings merge recursively, the named lists
    (``NAMED_LISTS``) merge by name, anything else replaces. ``path`` is where ``base`` sits in the document.
    Raises ``ConfigurationError`` for a misused ``$delete``/``$replace`` or a name given twice (all of them)."""
    problems: list[Problem] = []
    merged = _merge(base, overlay, path, problems)
    if problems:
        raise ConfigurationError(problems)
    return merged


def _keys(path: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(p for p in path if isinstance(p, str))


def _merge(base: Any, overlay: Any, path: tuple[Any, ...], problems: list[Problem]) -> Any:
    """``merge`` collecting its problems."""
    if isinstance(base, dict) and isinstance(overlay, dict):
        merged = dict(base)
        item_origins: dict[Any, tuple[Origin | None, ...]] = {}
        for key, value in overlay.items():
            if key is _ORIGIN:  # where each key is written: the overlay's keys win, as their values do
                merged[key] = {**base.get(_ORIGIN, {}), **value}
            elif key not in base:
                merged[key] = _plain(value, path + (key,), problems)
            elif _keys(path + (key,)) in NAMED_LISTS and isinstance(base[key], list) and isinstance(value, list):
                merged[key], item_origins[key] = _merge_named(
                    base[key],
                    value,
                    path + (key,),
                    problems,
                    _key_origin(base, (key, _SELF)),
                    _key_origin(overlay, (key, _SELF)),
                )
            else:
                merged[key] = _merge(base[key], value, path + (key,), problems)
        if item_origins and isinstance(merged.get(_ORIGIN), dict):  # where the merged lists' items come from
            merged[_ORIGIN] = {**merged[_ORIGIN], **{(key, _SELF): found for key, found in item_origins.items()}}
        return merged
    if _keys(path) in NAMED_LISTS and isinstance(base, list) and isinstance(overlay, list):
        return _merge_named(base, overlay, path, problems)[0]
    return _plain(overlay, path, problems)


def _name(item: Any) -> str | None:
    return item.get("name") if isinstance(item, dict) and isinstance(item.get("name"), str) else None


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


def _problem(where: tuple[Any, ...], item: Any, key: Any, value: Any, allowed: str, fix: str) -> Problem:
    """A merge problem with ``item`` (at ``where`` in the merge) or its ``key``, named as in the file that holds it."""
    origin = _origin(item)
    if origin is None:
        return Problem(_render(where + ((key,) if key is not None else ())), _bare(value), allowed, fix)
    key_origin = _key_origin(item, key) if key is not None else None
    line = (key_origin or origin).line
    return Problem(
        _render(origin.path + ((key,) if key is not None else ())),
        _bare(value),
        allowed,
        fix,
        f"{origin.file} line {line}",
    )


def _merge_named(
    base: list[Any],
    overlay: list[Any],
    path: tuple[Any, ...],
    problems: list[Problem],
    base_items: tuple[Origin | None, ...] | None = None,
    items: tuple[Origin | None, ...] | None = None,
) -> tuple[list[Any], tuple[Origin | None, ...]]:
    """The merged list and where each of its items is written (``base_items``, ``items``: the inputs')."""
    merged: list[Any] = list(base)
    origins: list[Origin | None] = [
        base_items[i] if base_items and i < len(base_items) else None for i in range(len(base))
    ]

    def add(item: Any, position: int, where: tuple[Any, ...]) -> None:
        before = len(merged)
        _append(merged, item, where, problems)
        if len(merged) > before:
            origins.append(items[position] if items and position < len(items) else None)

    index = {name: i for i, name in ((i, _name(item)) for i, item in enumerate(base)) if name is not None}
    seen: dict[str, int] = {}
    deleted: set[int] = set()
    for position, item in enumerate(overlay):
        where = path + (position,)
        name = _name(item)
        if not isinstance(item, dict):  # it cannot merge by name, and its index in the merged list means nothing
            origin = items[position] if items and position < len(items) else None
            problems.append(
                Problem(
                    _render(origin.path if origin else where),
                    item,
                    "a mapping of keys to values (an item with a name)",
                    "write it as a mapping, e.g. {name: ...}, or remove it",
                    f"{origin.file} line {origin.line}" if origin else "",
                )
            )
            continue
        if name is None:
            add(item, position, where)
            continue
        if name in seen:
            first = _origin(overlay[seen[name]])
            problems.append(
                _problem(
                    where,
                    item,
                    "name",
                    name,
                    "a name not used by "
                    f"{_render(first.path) if first else _render(path + (seen[name],))} of this file",
                    "merge both entries into one item",
                )
            )
            continue
        seen[name] = position
        known = ", ".join(index) or "none"
        if item.get(DELETE) is not None:
            extra = [k for k in item if k not in ("name", DELETE) and k is not _ORIGIN]
            allowed = f"{{name: {name}, {DELETE}: true}} and nothing else"
            if item[DELETE] is not True:
                problems.append(
                    _problem(
                        where,
                        item,
                        DELETE,
                        item[DELETE],
                        allowed,
                        f"set {DELETE}: true to remove {name}, or remove {DELETE}",
                    )
                )
            for key in extra:
                problems.append(
                    _problem(
                        where,
                        item,
                        key,
                        item[key],
                        allowed,
                        f"remove {key} (the item is removed), or remove {DELETE} to merge it",
                    )
                )
            if item[DELETE] is not True or extra:
                continue
            if name not in index:
                problems.append(
                    _problem(
                        where,
                        item,
                        "name",
                        name,
                        f"a name in the list it extends: {known}",
                        f"correct the name, or remove the {DELETE} item (there is nothing to delete)",
                    )
                )
                continue
            deleted.add(index[name])
            continue
        if name not in index:
            if item.get(REPLACE) is not None:
                problems.append(
                    _problem(
                        where,
                        item,
                        "name",
                        name,
                        f"a name in the list it extends: {known}",
                        f"correct the name, or remove {REPLACE} to add a new item",
                    )
                )
                continue
            add(item, position, where)
            continue
        target = index[name]
        if item.get(REPLACE) is not None:
            if item[REPLACE] is not True:
                problems.append(
                    _problem(where, item, REPLACE, item[REPLACE], "true", f"set {REPLACE}: true or remove it")
                )
                continue
            merged[target] = _plain({k: v for k, v in item.items() if k != REPLACE}, where, problems)
        else:
            merged[target] = _merge(base[target], item, path + (target,), problems)
        origins[target] = items[position] if items and position < len(items) else origins[target]
    kept = [i for i in range(len(merged)) if i not in deleted]
    return [merged[i] for i in kept], tuple(origins[i] for i in kept)


def _append(items: list[Any], item: Any, where: tuple[Any, ...], problems: list[Problem]) -> None:
    """Add ``item`` as it is; one marked ``$delete`` (with nothing to delete) is reported and left out."""
    plain = _plain(item, where, problems)
    if not (isinstance(item, dict) and DELETE in item):
        items.append(plain)


def _plain(value: Any, path: tuple[Any, ...], problems: list[Problem]) -> Any:
    """``value`` taken as it is (nothing under it to merge with): its ``$`` markers checked and removed."""
    if isinstance(value, dict):
        if _keys(path[:-1]) in NAMED_LISTS and isinstance(path[-1:][0] if path else None, int):
            for marker in (DELETE, REPLACE):
                if marker in value:
                    problems.append(
                        _problem(
                            path,
                            value,
                            marker,
                            value[marker],
                            f"nothing: {marker} applies to an item of a list this file extends, and "
                            f"{_render(path[:-1])} has no base item named "
                            f"{_name(value) or '(no name)'}",
                            f"remove {marker}",
                        )
                    )
            value = {k: v for k, v in value.items() if k not in (DELETE, REPLACE)}
        return {k: (v if k is _ORIGIN else _plain(v, path + (k,), problems)) for k, v in value.items()}
    if isinstance(value, list) and _keys(path) in NAMED_LISTS:
        names = [_name(item) for item in value]
        kept: list[Any] = []
        for position, (name, item) in enumerate(zip(names, value)):
            if name is not None and names.index(name) != position:
                first = _origin(value[names.index(name)])
                problems.append(
                    _problem(
                        path + (position,),
                        item,
                        "name",
                        name,
                        "a name not used by "
                        f"{_render(first.path) if first else _render(path + (names.index(name),))} "
                        "of this file",
                        "merge both entries into one item",
                    )
                )
                continue
            _append(kept, item, path + (position,), problems)
        return kept
    if isinstance(value, list):
        return [_plain(item, path + (i,), problems) for i, item in enumerate(value)]
    return value


def _chain(chain: tuple[Path, ...]) -> str:
    return " -> ".join(str(p) for p in chain)


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, ValueError, RuntimeError):  # a NUL byte, a name too long, a symlink loop
        return None


def _load(
    path: Path, chain: tuple[Path, ...], files: list[Path], problems: list[Problem], extends_line: int | None = None
) -> Any:
    resolved = _resolved(path)
    parent_where = f"{chain[-1]} line {extends_line}" if chain and extends_line else ""
    if resolved is not None and resolved in {_resolved(p) for p in chain}:
        raise ConfigurationError(
            [
                Problem(
                    EXTENDS,
                    str(path),
                    "a file that does not extend itself, directly or through others",
                    f"break the cycle {_chain((*chain, path))}",
                    parent_where,
                )
            ],
            source=_chain(chain),
        )
    chain = (*chain, path)
    files.append(path)
    data = _read(path, chain, problems, parent_where)
    if not isinstance(data, dict):
        return data
    if EXTENDS not in data:
        return _plain(data, (), problems)  # nothing to merge with: its $ markers are refused
    parents = data.pop(EXTENDS)
    marks = data.get(_ORIGIN, {})
    line = marks[EXTENDS].line if EXTENDS in marks else None
    marks.pop(EXTENDS, None)
    parents = _bare(parents)
    names = [parents] if isinstance(parents, str) else parents
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise ConfigurationError(
            [
                Problem(
                    EXTENDS,
                    parents,
                    "a file name, or a non-empty list of file names, relative to this file",
                    "write e.g. `extends: base.yaml`",
                    f"{path} line {line}" if line else str(path),
                )
            ],
            source=_chain(chain),
        )
    merged: Any = {}
    for name in names:
        parent = _load(path.parent / name, chain, files, problems, line)
        if not isinstance(parent, dict):
            raise ConfigurationError(
                [
                    Problem(
                        "",
                        parent if parent is not None else MISSING,
                        "a mapping (a file another config extends)",
                        f"make {path.parent / name} a YAML mapping, or stop extending it",
                        f"{path} line {line}" if line else str(path),
                    )
                ],
                source=_chain((*chain, path.parent / name)),
            )
        merged = _merge(merged, parent, (), problems)
    return _merge(merged, data, (), problems)


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


def _read(path: Path, chain: tuple[Path, ...], problems: list[Problem], parent_where: str = "") -> Any:
    source = _chain(chain)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raw = path.read_bytes()
        line = raw.count(b"\n", 0, error.start) + 1
        raise ConfigurationError(
            [
                Problem(
                    f"line {line}",
                    raw[error.start : error.start + 4],
                    "UTF-8 text",
                    f"save {path} as UTF-8 (it holds a byte UTF-8 does not allow at line {line})",
                    f"{path} line {line}",
                )
            ],
            source=source,
        ) from None
    except (OSError, ValueError) as error:  # ValueError: a NUL byte in the name
        reason = getattr(error, "strerror", None) or str(error)
        if len(chain) == 1:
            fix = f"check the path ({reason}); pass another with `cdk synth -c config=PATH`"
        else:
            fix = f"check `{EXTENDS}` in {chain[-2]} ({reason}); paths are relative to that file"
        raise ConfigurationError(
            [Problem("" if len(chain) == 1 else EXTENDS, str(path), "a readable YAML file", fix, parent_where)],
            source=source,
        ) from None
    loader = _TrackingLoader(text)
    try:
        data = loader.get_single_data()
    except (yaml.YAMLError, ValueError, OverflowError) as error:  # ValueError: a date like 2027-13-01
        where, problem = (
            yaml_error_position(error) if isinstance(error, yaml.YAMLError) else ("unknown position", str(error))
        )
        if isinstance(error, yaml.reader.ReaderError):  # a character YAML refuses: its offset says the line
            line = text.count("\n", 0, error.position) + 1
            code = ord(error.character) if isinstance(error.character, str) else error.character
            where, problem = f"line {line}", f"character #x{code:04x}: {error.reason}"
        raise ConfigurationError(
            [Problem(where, problem, "valid YAML", f"fix the syntax at that position in {path}", f"{path} {where}")],
            source=source,
        ) from None
    finally:
        loader.dispose()
    repeats = {(mapping, key): line for mapping, key, line in loader.repeats}
    if repeats:
        _report_repeats(data, path, (), loader, repeats, problems)
    return _annotate(data, path, (), loader, 1)


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
