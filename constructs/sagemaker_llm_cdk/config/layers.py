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
  keep their order (so an empty list changes nothing). ``{name: X, $delete: true}`` (nothing else)
  removes X; ``$replace: true`` in an item makes it replace the base item of that name whole instead
  of merging into it. Deleting or replacing a name the base does not have is an error (a typo would
  otherwise go unnoticed), as is a name given twice in one list. Items without a ``name`` (a capacity
  plan given only by ``existing_plan_arn``) cannot be addressed: base ones are kept, overlay ones
  appended.
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

This module reads the chain of files; the merge rules are in ``merging``, the YAML loader that records lines in
``line_tracking`` and the bookkeeping of where values are written in ``origins``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import MISSING, ConfigurationError, Problem
from ..core.yaml_loading import UniqueKeyLoader, _hashable_key, yaml_error_position  # noqa: F401 - re-exported
from .line_tracking import _annotate, _report_repeats, _TrackingLoader
from .merging import DELETE as DELETE
from .merging import NAMED_LISTS as NAMED_LISTS
from .merging import REPLACE as REPLACE
from .merging import _merge, _plain
from .merging import merge as merge
from .origins import _ORIGIN, _bare, _strip
from .origins import Origin as Origin

EXTENDS = "extends"


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
