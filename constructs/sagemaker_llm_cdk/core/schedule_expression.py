"""EventBridge Scheduler's schedule expressions, checked at synth so a deployment never fails on one.

The EAGLE loop's schedule is an ``AWS::Scheduler::Schedule`` (EventBridge Scheduler, not an
Events rule). Scheduler accepts three forms (Scheduler User Guide, "Schedule types"):

* ``rate(value unit)``: ``value`` a positive whole number; ``unit`` ``minute``, ``hour`` or
  ``day`` when the value is 1, ``minutes``, ``hours`` or ``days`` otherwise.
* ``cron(minutes hours day-of-month month day-of-week year)``: six fields. Minutes 0-59, hours
  0-23, day-of-month 1-31, month 1-12 or JAN-DEC, day-of-week 1-7 (1 = Sunday) or SUN-SAT, year
  1970-2199. Every field takes ``*``, a value, a range ``a-b`` and lists of those (``a,b-c``); every
  field but day-of-week also takes a step ``*/n`` / ``a/n`` / ``a-b/n``. Exactly one of day-of-month
  and day-of-week is ``?``.
  Day-of-month also takes ``L`` (last day), ``nW`` (weekday nearest day n) and ``LW``;
  day-of-week takes ``L`` (last day of the week), ``nL`` (last weekday n of the month) and
  ``n#k`` (k-th weekday n of the month, k 1-5).
* ``at(yyyy-mm-ddThh:mm:ss)``: a one-time run at that date and time.

``schedule_problem`` returns one ``Problem`` naming what is wrong, or None.
"""

from __future__ import annotations

import re
from datetime import datetime

from .errors import Problem

_RATE = re.compile(r"rate\((?P<value>\d+) (?P<unit>[a-z]+)\)")
_CRON = re.compile(r"cron\((?P<fields>[^()]*)\)")
_AT = re.compile(r"at\((?P<when>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)")

_UNITS = {"minute": "minutes", "hour": "hours", "day": "days"}

_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")

# name, lowest, highest, names (value = index + lowest)
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minutes", 0, 59, ()),
    ("hours", 0, 23, ()),
    ("day-of-month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 1, 7, _DAYS),
    ("year", 1970, 2199, ()),
)

ALLOWED = (
    "rate(value unit) with a positive whole value and minute/hour/day for 1, minutes/hours/days above 1; "
    "cron(minutes hours day-of-month month day-of-week year) with six fields and '?' in exactly one of "
    "day-of-month and day-of-week; or at(yyyy-mm-ddThh:mm:ss)"
)
EXAMPLES = "e.g. rate(7 days), rate(1 day) or cron(0 3 ? * SUN *) (03:00 UTC every Sunday)"


def schedule_problem(field: str, expression: str) -> Problem | None:
    """A problem when EventBridge Scheduler would refuse ``expression``, else None."""
    reason = _reason(expression)
    if reason is None:
        return None
    return Problem(field, expression, ALLOWED, f"{reason}; write {EXAMPLES}")


def _reason(expression: object) -> str | None:
    if not isinstance(expression, str):
        return "the schedule is not text"
    rate = _RATE.fullmatch(expression)
    if rate:
        return _rate_reason(int(rate.group("value")), rate.group("unit"))
    if expression.startswith("rate("):
        return "a rate is rate(<whole number> <unit>), one space between"
    cron = _CRON.fullmatch(expression)
    if cron:
        return _cron_reason(cron.group("fields"))
    at = _AT.fullmatch(expression)
    if at:
        try:
            datetime.strptime(at.group("when"), "%Y-%m-%dT%H:%M:%S")
        except ValueError:
            return f"{at.group('when')} is not a real date and time"
        return None
    if expression.startswith("at("):
        return "a one-time schedule is at(yyyy-mm-ddThh:mm:ss), e.g. at(2027-01-31T03:00:00)"
    return "the expression starts with none of rate(, cron( or at("


def _rate_reason(value: int, unit: str) -> str | None:
    if value < 1:
        return "the rate's value must be at least 1"
    if unit in _UNITS:
        if value != 1:
            return f"use the plural '{_UNITS[unit]}' for a value above 1"
        return None
    singular = {plural: one for one, plural in _UNITS.items()}
    if unit in singular:
        if value == 1:
            return f"use the singular '{singular[unit]}' for a value of 1"
        return None
    return f"'{unit}' is not a unit: minute(s), hour(s) or day(s)"


def _cron_reason(text: str) -> str | None:
    fields = text.split(" ")
    if len(fields) != 6 or any(not f for f in fields):
        return (
            f"a cron expression has six fields separated by single spaces (minutes hours day-of-month month "
            f"day-of-week year); got {len([f for f in text.split() if f])}"
            + (", add the year field, e.g. *" if len(text.split()) == 5 else "")
        )
    for (name, low, high, names), value in zip(_FIELDS, fields, strict=True):
        reason = _field_reason(name, value, low, high, names)
        if reason:
            return f"{name} field {value!r}: {reason}"
    day_of_month, day_of_week = fields[2], fields[4]
    if (day_of_month == "?") == (day_of_week == "?"):
        return (
            "exactly one of day-of-month and day-of-week must be '?' (for example 'cron(0 3 ? * SUN *)' or "
            "'cron(0 3 1 * ? *)')"
        )
    return None


def _number(token: str, low: int, high: int, names: tuple[str, ...]) -> int | None:
    if token.isdigit():
        number = int(token)
        return number if low <= number <= high else None
    upper = token.upper()
    if upper in names and token == upper:
        return names.index(upper) + low
    return None


def _field_reason(name: str, value: str, low: int, high: int, names: tuple[str, ...]) -> str | None:
    bounds = f"{low}-{high}" + (f" or {names[0]}-{names[-1]}" if names else "")
    if value == "?":
        return None if name in ("day-of-month", "day-of-week") else "'?' is only for day-of-month or day-of-week"
    if name == "day-of-month":
        if value in ("L", "LW"):
            return None
        if value.endswith("W"):
            return None if _number(value[:-1], low, high, ()) is not None else "nW needs a day 1-31, e.g. 15W"
    if name == "day-of-week":
        if value == "L":
            return None
        if value.endswith("L"):
            return None if _number(value[:-1], low, high, names) is not None else "nL needs a day 1-7 or SUN-SAT"
        if "#" in value:
            if "," in value or "-" in value:
                return "n#k must stand alone: day-of-week takes one n#k expression, not a list or range"
            day, _, nth = value.partition("#")
            if _number(day, low, high, names) is None or not (nth.isdigit() and 1 <= int(nth) <= 5):
                return "n#k needs a day 1-7 or SUN-SAT and k 1-5, e.g. MON#2"
            return None
    if any(c in value for c in "LW#"):
        return "L, W and # stand alone, only in day-of-month (L, nW, LW) or day-of-week (L, nL, n#k)"
    if "/" in value and name == "day-of-week":
        return "day-of-week takes no step ('/'): list the days, e.g. MON,WED,FRI"
    for item in value.split(","):
        reason = _item_reason(item, low, high, names, wraps=name == "day-of-week")
        if reason:
            return f"{reason} (allowed values {bounds})"
    return None


def _item_reason(item: str, low: int, high: int, names: tuple[str, ...], *, wraps: bool) -> str | None:
    base, slash, step = item.partition("/")
    if slash:
        if not (step.isdigit() and int(step) >= 1):
            return f"the step in {item!r} must be a whole number of at least 1"
        if base != "*" and _number(base.partition("-")[0], low, high, ()) is None:
            return f"a step starts from *, a number or a numeric range: {item!r}"
    if base == "*":
        return None
    if not base:
        return "an empty item (two commas, or a comma at an end)"
    first, dash, last = base.partition("-")
    start = _number(first, low, high, names)
    if start is None:
        return f"{first!r} is out of range or not a value"
    if dash:
        end = _number(last, low, high, names)
        if end is None:
            return f"{last!r} is out of range or not a value"
        if end < start and not wraps:
            return f"the range {base!r} runs backwards"
    return None
