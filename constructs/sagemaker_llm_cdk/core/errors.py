"""One error type for every user mistake: all problems, each with field, value, what is allowed and the fix."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_MAX_VALUE_CHARS = 120


@dataclass(frozen=True)
class Problem:
    """One problem with one field.

    ``path`` is the field's location (``endpoints[0].scaling.min_instances``), ``value`` the
    value given, ``allowed`` what would be accepted and ``fix`` what to do about it.
    """

    path: str
    value: Any
    allowed: str
    fix: str
    where: str = ""
    """Where the field is written, when it came from a file: ``config/dev.yaml line 14``. Default: unknown."""

    def under(self, prefix: str) -> Problem:
        """The same problem, its path placed under ``prefix``."""
        if not prefix:
            return self
        path = f"{prefix}.{self.path}" if self.path and not self.path.startswith("[") else f"{prefix}{self.path}"
        return Problem(path, self.value, self.allowed, self.fix, self.where)

    def line(self) -> str:
        """``field: got V; allowed: ...; fix: ...`` (the same problem found twice gives the same line)."""
        return f"{self.path or '(top level)'}: got {format_value(self.value)}; allowed: {self.allowed}; fix: {self.fix}"

    def located(self) -> str:
        """``line()`` followed by ``; where: config/dev.yaml line 14`` when it is known: how the error prints it."""
        return f"{self.line()}; where: {self.where}" if self.where else self.line()


class ConfigurationError(ValueError):
    """Raised once with every problem found, never just the first.

    ``str(error)`` is one line per problem, ready to print to a user.
    """

    config_item: str = ""
    """The config item (``endpoints[0].models[1]``) whose problems these are in config terms, when a construct
    built from it raised them (``config.loading.config_item``). Default: not known."""

    def __init__(self, problems: Iterable[Problem], *, source: str = "") -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.source = source
        head = f"{len(self.problems)} problem(s) in {source}" if source else f"{len(self.problems)} problem(s)"
        super().__init__("\n".join([head + ":"] + ["  - " + p.located() for p in self.problems]))


def format_value(value: Any) -> str:
    if value is _MISSING:
        return "nothing (the field is missing)"
    text = repr(value)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 3] + "..."
    return text


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()
MISSING: Any = _MISSING
"""Marker for ``Problem.value`` when the field was not given at all."""


def keyword_problems(
    unknown: dict[str, Any],
    *,
    takes: Iterable[str],
    renamed: dict[str, tuple[str, str]] | None = None,
    hint: str = "",
) -> list[Problem]:
    """One problem per keyword a construct does not take: a former name (``renamed``: old -> (new, what it
    holds)) says which to use; any other name lists what the construct ``takes`` (``hint`` ends its fix)."""
    problems = []
    for name, value in unknown.items():
        if renamed and name in renamed:
            new, what = renamed[name]
            problems.append(Problem(name, "given", f"{new}=", f"rename {name}= to {new}= (the same {what})"))
        else:
            problems.append(Problem(name, value, "one of " + ", ".join(takes), f"remove {name}={hint}"))
    return problems


def raise_if_problems(problems: list[Problem], *, source: str = "") -> None:
    if problems:
        raise ConfigurationError(problems, source=source)


RULES_ERROR = "llm_rules"
"""pydantic error type that carries a list of ``Problem`` in its context."""
