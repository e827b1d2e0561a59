"""Name rules that need no construct: a stack name as a prefix, ``<prefix>-<name>`` hash-cut to a length."""

from __future__ import annotations

import hashlib
import re

MAX_LENGTH = 63
"""SageMaker's limit for inference component (and most other) names."""
_HASH = 8


def as_prefix(name: str) -> str:
    """``name`` (a stack name) as a name prefix: other characters become single hyphens, none at the ends."""
    return re.sub(r"-+", "-", re.sub(r"[^A-Za-z0-9-]", "-", name)).strip("-")


def prefixed_name(prefix: str, name: str, *, max_length: int = MAX_LENGTH) -> str:
    """``<prefix>-<name>``; when longer than ``max_length``, cut and ended with a hash of the whole.

    The result matches SageMaker's name pattern ``[a-zA-Z0-9](-*[a-zA-Z0-9])*`` when both
    parts do, and is the same on every synth (no randomness, no construct path).
    """
    full = f"{prefix}-{name}" if prefix else name
    if len(full) <= max_length:
        return full
    digest = hashlib.sha256(full.encode("utf-8")).hexdigest()[:_HASH]
    return f"{full[: max_length - _HASH - 1].rstrip('-')}-{digest}"
