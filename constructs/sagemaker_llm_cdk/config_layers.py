"""Layered config files: a config may ``extends:`` another, so environments share a base.

::

    # config/dev.yaml
    extends: base.yaml            # relative to this file; or a list, applied left to right
    tags: {environment: dev}      # merged into base.yaml's tags
    endpoints: [...]              # replaces base.yaml's endpoints (lists are replaced, not merged)

Rules: the file is laid over what it extends. Mappings merge key by key, recursively; every
other value (lists, strings, numbers, null) replaces the base's. ``extends`` may name one file
or a list of files (each may extend others); a file reached twice along one chain is a cycle and
an error. Keys may not repeat within a mapping. Every error names the chain of files that led
to it (``config/dev.yaml -> config/base.yaml``).

``load_layers(path).data`` is the merged mapping, without ``extends``, ready for
``config.parse_config``; ``load_layered(path)`` returns just that mapping.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .errors import MISSING, ConfigurationError, Problem

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


def merge(base: Any, overlay: Any) -> Any:
    """``overlay`` laid over ``base``: mappings merge recursively, anything else replaces."""
    if isinstance(base, dict) and isinstance(overlay, dict):
        merged = dict(base)
        for key, value in overlay.items():
            merged[key] = merge(base[key], value) if key in base else value
        return merged
    return overlay


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
    if not isinstance(data, dict) or EXTENDS not in data:
        return data
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
        merged = merge(merged, parent)
    return merge(merged, data)


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
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        problem = getattr(error, "problem", None) or str(error)
        raise ConfigurationError(
            [Problem(where, problem, "valid YAML", f"fix the syntax at that position in {path}")], source=source
        ) from None
