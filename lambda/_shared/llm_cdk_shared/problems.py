"""A pydantic ``ValidationError`` as one line per problem, in the ``field: got V; allowed: ...; fix: ...`` style.

* a missing field: ``Purchase: required field is missing; fix: add Purchase``
* an unknown field (models with ``extra="forbid"``): ``PlanNmae: unknown property (misspelt?); allowed: A, B;
  fix: remove it or correct its name``
* a check of the handler's own (a ``ValueError`` raised in a validator) already names the field, the value
  and the fix: its message is kept as it is (prefixed with the field when it does not start with it)
* any other pydantic check: ``RequestType: got 'Replace'; allowed: 'Create', 'Update' or 'Delete'``

Fields are dotted paths (``Components.0.Name``); a problem of the whole object names ``root``. Values are
shown as ``repr`` cut to 80 characters. Every problem is listed (callers join them). The module imports no
pydantic itself (it reads the error it is given), so a handler may import it at cold start.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only the annotation: ``shown`` and this module cost no pydantic import
    from pydantic import ValidationError

_SHOULD = re.compile(
    r"^(Input|Value|String|List|Tuple|Set|Dictionary|Object|Decimal|Date|Datetime|Timestamp|Number)"
    r" should (be |have |match )?"
)
_INSTANCE_OF = re.compile(r" or instance of \w+$")


def not_a_boolean(value: Any) -> Any:
    """For a pydantic ``BeforeValidator`` on a whole-number field: JSON's ``true`` / ``false`` is refused (pydantic's
    lax mode reads them as 1 and 0, so ``"max_objects": true`` would mean one object); any other value goes on to
    the field's own checks."""
    if isinstance(value, bool):
        raise ValueError(f"got {shown(value)}; allowed: a whole number (true and false are not numbers)")
    return value


def shown(value: Any) -> str:
    """``repr(value)``, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def problems(exc: ValidationError, *, root: str = "event", known: Iterable[str] | None = None) -> list[str]:
    """One line per error of ``exc``; ``known`` (field names) is listed as allowed for an unknown field."""
    allowed_fields = ", ".join(known) if known is not None else None
    lines = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"]) or root
        kind = error["type"]
        if kind == "missing":
            lines.append(f"{field}: required field is missing; fix: add {field}")
        elif kind == "extra_forbidden":
            allowed = f"; allowed: {allowed_fields}" if allowed_fields else ""
            lines.append(f"{field}: unknown property (misspelt?){allowed}; fix: remove it or correct its name")
        elif kind in ("value_error", "assertion_error"):
            message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
            lines.append(message if message.startswith(field) else f"{field}: {message}")
        else:
            allowed = _INSTANCE_OF.sub("", _SHOULD.sub("", str(error["msg"])))  # a JSON input is no model instance
            lines.append(f"{field}: got {shown(error.get('input'))}; allowed: {allowed}")
    return lines


class ShortError(Exception):
    """An error whose message CloudFormation shows as the reason (its whole answer holds at most 4096 bytes): a
    longer message is cut to ``max_chars`` and says so. A handler's error class sets ``max_chars``."""

    max_chars = 3500

    def __init__(self, message: str) -> None:
        if len(message) > self.max_chars:
            message = message[: self.max_chars - 15] + " ...(truncated)"
        super().__init__(message)
