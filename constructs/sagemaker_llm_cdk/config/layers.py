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
for ``config.parse_config``; ``load_layered(path)`` returns just that mapping.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import MISSING, ConfigurationError, Problem

EXTENDS = "extends"


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping instead of keeping the last."""


def _construct_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is given twice in one mapping", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=deep)
    return mapping


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@dataclass(frozen=True)
class LayeredConfig:
    """A config file merged over everything it extends."""

    data: Any
    """The merged document (a mapping unless the file is not one), without ``extends``."""
    files: tuple[Path, ...]
    """Every file read, the named file first, then what it extends, depth first."""

    @property
    def source(self) -> str:
        """How to name the config in messages: ``config/dev.yaml (extends config/base.yaml)``."""
        head, *rest = self.files
        return f"{head} (extends {', '.join(str(p) for p in rest)})" if rest else str(head)


def load_layered(path: str | Path) -> Any:
    """The config at ``path`` merged over the files it extends (see the module docstring)."""
    return load_layers(path).data


def load_layers(path: str | Path) -> LayeredConfig:
    """Read ``path`` and everything it extends; raise one ``ConfigurationError`` naming the file chain."""
    files: list[Path] = []
    data = _load(Path(path), (), files)
    return LayeredConfig(data, tuple(files))


NAMED_LISTS: frozenset[tuple[str, ...]] = frozenset({
    ("endpoints",), ("endpoints", "models"), ("endpoints", "models", "adapters"), ("capacity_plans",)})
"""Key paths (list indices left out) of the lists whose items merge by ``name``."""
DELETE = "$delete"
REPLACE = "$replace"


class _MergeProblem(Exception):
    def __init__(self, field: str, value: Any, allowed: str, fix: str) -> None:
        super().__init__(field)
        self.problem = Problem(field, value, allowed, fix)


def _render(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def merge(base: Any, overlay: Any, path: tuple[Any, ...] = ()) -> Any:
    """``overlay`` laid over ``base`` (see the module docstring): mappings merge recursively, the named lists
    (``NAMED_LISTS``) merge by name, anything else replaces. ``path`` is where ``base`` sits in the document.
    Raises ``ConfigurationError`` for a misused ``$delete``/``$replace`` or a name given twice."""
    try:
        return _merge(base, overlay, path)
    except _MergeProblem as error:
        raise ConfigurationError([error.problem]) from None


def _keys(path: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(p for p in path if isinstance(p, str))


def _merge(base: Any, overlay: Any, path: tuple[Any, ...]) -> Any:
    if isinstance(base, dict) and isinstance(overlay, dict):
        merged = dict(base)
        for key, value in overlay.items():
            merged[key] = _merge(base[key], value, path + (key,)) if key in base else _plain(value, path + (key,))
        return merged
    if _keys(path) in NAMED_LISTS and isinstance(base, list) and isinstance(overlay, list):
        return _merge_named(base, overlay, path)
    return _plain(overlay, path)


def _name(item: Any) -> str | None:
    return item.get("name") if isinstance(item, dict) and isinstance(item.get("name"), str) else None


def _merge_named(base: list[Any], overlay: list[Any], path: tuple[Any, ...]) -> list[Any]:
    merged: list[Any] = list(base)
    index = {name: i for i, name in ((i, _name(item)) for i, item in enumerate(base)) if name is not None}
    seen: dict[str, int] = {}
    deleted: set[int] = set()
    for position, item in enumerate(overlay):
        where = path + (position,)
        name = _name(item)
        if name is None:
            merged.append(_plain(item, where))
            continue
        if name in seen:
            raise _MergeProblem(_render(where + ("name",)), name, f"a name not used by {_render(path + (seen[name],))} "
                                "of this file", "merge both entries into one item")
        seen[name] = position
        known = ", ".join(index) or "none"
        if item.get(DELETE) is not None:
            extra = sorted(set(item) - {"name", DELETE})
            if item[DELETE] is not True or extra:
                raise _MergeProblem(_render(where), item, f"{{name: {name}, {DELETE}: true}} and nothing else",
                                    f"remove {', '.join(extra) or DELETE + ' or set it to true'}")
            if name not in index:
                raise _MergeProblem(_render(where + ("name",)), name, f"a name in the list it extends: {known}",
                                    f"correct the name, or remove the {DELETE} item (there is nothing to delete)")
            deleted.add(index[name])
            continue
        if name not in index:
            if item.get(REPLACE) is not None:
                raise _MergeProblem(_render(where + ("name",)), name, f"a name in the list it extends: {known}",
                                    f"correct the name, or remove {REPLACE} to add a new item")
            merged.append(_plain(item, where))
            continue
        target = index[name]
        if item.get(REPLACE) is not None:
            if item[REPLACE] is not True:
                raise _MergeProblem(_render(where + (REPLACE,)), item[REPLACE], "true", f"set {REPLACE}: true or remove it")
            merged[target] = _plain({k: v for k, v in item.items() if k != REPLACE}, where)
        else:
            merged[target] = _merge(base[target], item, path + (target,))
    return [item for i, item in enumerate(merged) if i not in deleted]


def _plain(value: Any, path: tuple[Any, ...]) -> Any:
    """``value`` taken as it is (nothing under it to merge with): its ``$`` markers checked and removed."""
    if isinstance(value, dict):
        if _keys(path[:-1]) in NAMED_LISTS and isinstance(path[-1:][0] if path else None, int):
            for marker in (DELETE, REPLACE):
                if marker in value:
                    raise _MergeProblem(_render(path + (marker,)), value[marker],
                                        f"nothing: {marker} applies to an item of a list this file extends, and "
                                        f"{_render(path[:-1])} has no base item named {_name(value) or '(no name)'}",
                                        f"remove {marker}")
        return {k: _plain(v, path + (k,)) for k, v in value.items()}
    if isinstance(value, list) and _keys(path) in NAMED_LISTS:
        names = [_name(item) for item in value]
        for position, name in enumerate(names):
            if name is not None and names.index(name) != position:
                raise _MergeProblem(_render(path + (position, "name")), name,
                                    f"a name not used by {_render(path + (names.index(name),))} of this file",
                                    "merge both entries into one item")
        return [_plain(item, path + (i,)) for i, item in enumerate(value)]
    return value


def _chain(chain: tuple[Path, ...]) -> str:
    return " -> ".join(str(p) for p in chain)


def _load(path: Path, chain: tuple[Path, ...], files: list[Path]) -> Any:
    resolved = path.resolve()
    if resolved in {p.resolve() for p in chain}:
        raise ConfigurationError(
            [Problem(EXTENDS, str(path), "a file that does not extend itself, directly or through others",
                     f"break the cycle {_chain((*chain, path))}")],
            source=_chain(chain))
    chain = (*chain, path)
    files.append(path)
    data = _read(path, chain)
    if not isinstance(data, dict):
        return data
    if EXTENDS not in data:
        return _merge_in({}, data, chain)  # nothing to merge with: its $ markers are refused
    parents = data.pop(EXTENDS)
    names = [parents] if isinstance(parents, str) else parents
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise ConfigurationError(
            [Problem(EXTENDS, parents, "a file name, or a non-empty list of file names, relative to this file",
                     "write e.g. `extends: base.yaml`")],
            source=_chain(chain))
    merged: Any = {}
    for name in names:
        parent = _load(path.parent / name, chain, files)
        if not isinstance(parent, dict):
            raise ConfigurationError(
                [Problem("", parent if parent is not None else MISSING, "a mapping (a file another config extends)",
                         f"make {path.parent / name} a YAML mapping, or stop extending it")],
                source=_chain((*chain, path.parent / name)))
        merged = _merge_in(merged, parent, chain)
    return _merge_in(merged, data, chain)


def _merge_in(base: Any, overlay: Any, chain: tuple[Path, ...]) -> Any:
    try:
        return _merge(base, overlay, ())
    except _MergeProblem as error:
        raise ConfigurationError([error.problem], source=_chain(chain)) from None


def _read(path: Path, chain: tuple[Path, ...]) -> Any:
    source = _chain(chain)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        if len(chain) == 1:
            fix = f"check the path ({error.strerror}); pass another with `cdk synth -c config=PATH`"
        else:
            fix = f"check `{EXTENDS}` in {chain[-2]} ({error.strerror}); paths are relative to that file"
        raise ConfigurationError([Problem("" if len(chain) == 1 else EXTENDS, str(path), "a readable YAML file", fix)],
                                 source=source) from None
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as error:
        where, problem = yaml_error_position(error)
        raise ConfigurationError(
            [Problem(where, problem, "valid YAML", f"fix the syntax at that position in {path}")], source=source
        ) from None


def yaml_error_position(error: yaml.YAMLError) -> tuple[str, str]:
    """Where a YAML syntax error is (``line L, column C``, 1-based) and what it is, for a ``Problem``."""
    mark = getattr(error, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
    return where, getattr(error, "problem", None) or str(error)
