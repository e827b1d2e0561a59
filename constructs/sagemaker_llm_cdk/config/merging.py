"""How one config file is laid over another: mappings merge key by key, the named lists (``NAMED_LISTS``) merge
item by item by ``name`` (``$delete`` removes an item, ``$replace`` replaces it whole), anything else replaces
the base's value. Every misused marker and every name given twice in one list is collected as a problem, named in
the file and at the line that holds it.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ConfigurationError, Problem
from .origins import _ORIGIN, _SELF, Origin, _bare, _key_origin, _origin, _render

NAMED_LISTS: frozenset[tuple[str, ...]] = frozenset(
    {("endpoints",), ("endpoints", "models"), ("endpoints", "models", "adapters"), ("capacity_plans",)}
)
"""Key paths (list indices left out) of the lists whose items merge by ``name``."""
DELETE = "$delete"
REPLACE = "$replace"


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
    named = _NamedMerge(base, path, problems, base_items, items)
    seen: dict[str, int] = {}
    for position, item in enumerate(overlay):
        where = path + (position,)
        name = _name(item)
        if not isinstance(item, dict):  # it cannot merge by name, and its index in the merged list means nothing
            origin = named.item_origin(position)
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
            named.add(item, position, where)
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
        if item.get(DELETE) is not None:
            named.delete(item, name, where)
        else:
            named.lay_over(item, name, position, where)
    return named.result()


class _NamedMerge:
    """An overlay's items laid one by one over a base list that merges by name: the merged items, where each is
    written, and which base items are deleted."""

    def __init__(
        self,
        base: list[Any],
        path: tuple[Any, ...],
        problems: list[Problem],
        base_items: tuple[Origin | None, ...] | None,
        items: tuple[Origin | None, ...] | None,
    ) -> None:
        self.base = base
        self.path = path
        self.problems = problems
        self.items = items
        self.merged: list[Any] = list(base)
        self.origins: list[Origin | None] = [
            base_items[i] if base_items and i < len(base_items) else None for i in range(len(base))
        ]
        self.index = {name: i for i, name in ((i, _name(item)) for i, item in enumerate(base)) if name is not None}
        self.deleted: set[int] = set()

    @property
    def known(self) -> str:
        """The base's names, for messages."""
        return ", ".join(self.index) or "none"

    def item_origin(self, position: int) -> Origin | None:
        """Where the overlay's item at ``position`` is written, when known."""
        return self.items[position] if self.items and position < len(self.items) else None

    def add(self, item: Any, position: int, where: tuple[Any, ...]) -> None:
        """Append the overlay's ``item`` (a new name, or no name) after the base's items."""
        before = len(self.merged)
        _append(self.merged, item, where, self.problems)
        if len(self.merged) > before:
            self.origins.append(self.item_origin(position))

    def delete(self, item: dict[Any, Any], name: str, where: tuple[Any, ...]) -> None:
        """``{name: X, $delete: true}``: the base item X removed, or what is wrong with the marker reported."""
        problems = self.problems
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
            return
        if name not in self.index:
            problems.append(
                _problem(
                    where,
                    item,
                    "name",
                    name,
                    f"a name in the list it extends: {self.known}",
                    f"correct the name, or remove the {DELETE} item (there is nothing to delete)",
                )
            )
            return
        self.deleted.add(self.index[name])

    def lay_over(self, item: dict[Any, Any], name: str, position: int, where: tuple[Any, ...]) -> None:
        """A named overlay item: merged into the base item of its name (replacing it with ``$replace: true``), or
        appended when the base has no such name."""
        problems = self.problems
        if name not in self.index:
            if item.get(REPLACE) is not None:
                problems.append(
                    _problem(
                        where,
                        item,
                        "name",
                        name,
                        f"a name in the list it extends: {self.known}",
                        f"correct the name, or remove {REPLACE} to add a new item",
                    )
                )
                return
            self.add(item, position, where)
            return
        target = self.index[name]
        if item.get(REPLACE) is not None:
            if item[REPLACE] is not True:
                problems.append(
                    _problem(where, item, REPLACE, item[REPLACE], "true", f"set {REPLACE}: true or remove it")
                )
                return
            self.merged[target] = _plain({k: v for k, v in item.items() if k != REPLACE}, where, problems)
        else:
            self.merged[target] = _merge(self.base[target], item, self.path + (target,), problems)
        if self.items and position < len(self.items):
            self.origins[target] = self.items[position]

    def result(self) -> tuple[list[Any], tuple[Origin | None, ...]]:
        """The merged items without the deleted ones, and where each is written."""
        kept = [i for i in range(len(self.merged)) if i not in self.deleted]
        return [self.merged[i] for i in kept], tuple(self.origins[i] for i in kept)


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
        for position, (name, item) in enumerate(zip(names, value, strict=True)):
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
