"""Times and durations of capacity plans, as the messages and the answered Data write them.

SageMaker states a plan's or an offering's length as ``DurationHours`` plus ``DurationMinutes`` and its start
and end as date-times; the handler compares lengths in whole days (as ``DurationDays`` declares them), shows
durations as ``<days>d <hours>h`` and every date-time as ISO-8601 UTC with a ``Z``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any


def iso(value: datetime | None) -> str:
    if value is None:
        return ""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def duration_text(minutes: int | None) -> str:
    if minutes is None:
        return "unknown duration"
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    text = f"{days}d {hours}h"
    return text + (f" {mins}min" if mins else "")


def whole_days(minutes: int) -> int:
    """Duration rounded to the nearest whole day (half a day rounds up)."""
    return math.floor((minutes + 720) / 1440)


def total_minutes(item: dict[str, Any]) -> int | None:
    hours = item.get("DurationHours")
    if hours is None:
        return None
    return int(hours) * 60 + int(item.get("DurationMinutes") or 0)
