"""Timestamps as the job functions write and read them: ISO 8601 in UTC.

Written with a ``Z`` suffix (start's ``started_at``, the run record's times, a watermark claim's ``claimed_at``);
read back from strings that may end in ``Z`` or carry no zone (taken as UTC).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def iso(value: datetime | None) -> str | None:
    """``value`` in UTC as ``2026-11-30T12:00:00Z``; a naive value is taken as UTC."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_time(value: Any) -> datetime | None:
    """The time an ISO 8601 string gives (UTC when it names no zone); None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
