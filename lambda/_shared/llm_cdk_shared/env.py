"""A function's environment, read one way: typed, each problem naming the variable, all reported at once.

The construct that makes a function sets its environment, so a bad value is a deployment problem:
the error names the variable, the value, what is allowed and the fix, in the repository's
``field: got V; allowed: ...; fix: ...`` style, and lists every problem in one message::

    environment = env.Environment()
    table = environment.text("SESSIONS_TABLE", required=True, allowed="the DynamoDB table name")
    ttl = environment.integer("SESSION_TTL_SECONDS", 1200, minimum=1, maximum=604800)
    environment.check(ConfigurationError, "session router misconfigured")

``check`` raises the caller's exception class (handlers keep the error names Step Functions and
CloudFormation see). ``integer`` / ``required`` read one variable and raise at once, for settings read
where they are used. Values are stripped of surrounding white space; an empty value is an unset one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

REDEPLOY = "the construct sets it; redeploy the stack (or set it in the function's configuration)"


class ConfigurationError(RuntimeError):
    """The function's environment is wrong (a deployment problem, not the caller's)."""


def problem(name: str, value: object, allowed: str, fix: str) -> str:
    """``NAME: got V; allowed: ...; fix: ...`` (``V`` is ``(not set)`` for a missing variable)."""
    shown = "(not set)" if value in (None, "") else repr(value)
    return f"{name}: got {shown}; allowed: {allowed}; fix: {fix}"


class Environment:
    """Reads variables from ``environ`` (default ``os.environ``) and collects what is wrong in ``problems``."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ
        self.problems: list[str] = []

    def raw(self, name: str) -> str:
        """The stripped value, ``""`` when unset."""
        return str(self._environ.get(name) or "").strip()

    def add(self, name: str, value: object, allowed: str, fix: str = REDEPLOY) -> None:
        """Record a problem found by the caller's own check of a value."""
        self.problems.append(problem(name, value, allowed, fix))

    def text(
        self,
        name: str,
        *,
        required: bool = False,
        default: str = "",
        allowed: str = "a non-empty value",
        choices: Sequence[str] | None = None,
        prefix: str | None = None,
    ) -> str:
        """The value; ``default`` when unset and not ``required``. ``choices`` or ``prefix`` restrict it."""
        value = self.raw(name)
        if not value:
            if required:
                self.add(name, value, allowed)
            return default
        if choices is not None and value not in choices:
            self.add(name, value, f"one of {', '.join(choices)}", f"set {name} to one of {', '.join(choices)}")
        elif prefix is not None and not value.startswith(prefix):
            self.add(name, value, allowed, f"set {name} to a value starting with {prefix!r}")
        return value

    def integer(self, name: str, default: int | None = None, *, minimum: int = 1, maximum: int | None = None) -> int:
        """A whole number in ``minimum``..``maximum``; ``default`` when unset (required when it is None)."""
        value = self.raw(name)
        span = f"a whole number {minimum}-{maximum}" if maximum is not None else f"a whole number >= {minimum}"
        fix = f"set {name} to {span}" + (" or unset it" if default is not None else "")
        if not value:
            if default is None:
                self.add(name, value, span, fix)
                return minimum
            return default
        try:
            number = int(value)
        except ValueError:
            self.add(name, value, span, fix)
            return default if default is not None else minimum
        if number < minimum or (maximum is not None and number > maximum):
            self.add(name, value, span, fix)
        return number

    def number(self, name: str, *, above: float, allowed: str) -> float:
        """A finite decimal number greater than ``above`` (required)."""
        value = self.raw(name)
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not (above < number < float("inf")):
            self.add(name, value, allowed, f"set {name} to {allowed}")
            return 0.0
        return number

    def csv(self, name: str) -> list[str]:
        """The comma-separated items, stripped, empty ones and repeats dropped (order kept)."""
        return list(dict.fromkeys(item.strip() for item in self.raw(name).split(",") if item.strip()))

    def check(self, error: type[Exception] = ConfigurationError, what: str = "invalid function configuration") -> None:
        """Raise ``error("<what>: <problem>; <problem>")`` when any problem was found."""
        if self.problems:
            raise error(f"{what}: " + "; ".join(self.problems))


def integer(
    name: str,
    default: int | None = None,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    error: type[Exception] = ConfigurationError,
    environ: Mapping[str, str] | None = None,
) -> int:
    """One integer variable, read where it is used; raises ``error`` at once when it is wrong."""
    environment = Environment(environ)
    value = environment.integer(name, default, minimum=minimum, maximum=maximum)
    environment.check(error, "invalid function environment")
    return value


def required(
    name: str,
    *,
    allowed: str = "a non-empty value",
    error: type[Exception] = ConfigurationError,
    environ: Mapping[str, str] | None = None,
) -> str:
    """One variable that must be set, read where it is used; raises ``error`` at once when it is not."""
    environment = Environment(environ)
    value = environment.text(name, required=True, allowed=allowed)
    environment.check(error, "invalid function environment")
    return value
