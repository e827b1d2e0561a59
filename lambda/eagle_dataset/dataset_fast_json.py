"""The JSON and base64 readers the dataset builder parses with: orjson and pybase64 when they import (the
function's asset ships both, ``requirements.txt``), else the standard library, and the standard library's C
scanner called directly. Every fast reader gives what ``json.loads`` / ``binascii`` give, or hands the input to
them: the output is the same on both paths, byte for byte.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["FAST_JSON_AVAILABLE", "fast_b64decode", "loads_fast", "orjson", "scan_json"]

try:  # shipped in the function's asset (lambda/eagle_dataset/requirements.txt); optional everywhere else
    import orjson as orjson
except ImportError:  # pragma: no cover - exercised by the fallback tests with fast=False
    orjson = None  # type: ignore[assignment]
try:  # SIMD base64; shipped with orjson. Used only where it agrees with binascii's strict mode (tested)
    from pybase64 import b64decode as fast_b64decode
except ImportError:  # pragma: no cover
    fast_b64decode = None  # type: ignore[assignment]

#: True when orjson imports: :class:`BatchConverter` then parses and writes with it by default.
#: The standard-library path gives the same output, byte for byte (tests compare them record by record).
FAST_JSON_AVAILABLE = orjson is not None

#: The C scanner behind ``json.loads``: ``scan_json(text, 0)`` -> ``(value, end)``. Called directly
#: for documents that start with ``{`` or ``[`` and end exactly at the end of the text, the
#: result is what ``json.loads`` returns (it skips the two whitespace regex matches and, for
#: bytes, the encoding detection); anything else goes through ``json.loads`` itself so errors
#: and edge cases stay exactly the same.
scan_json = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set by __init__; not in typeshed


def loads_fast(text: str) -> Any:
    """``json.loads`` through orjson: the same value, or whatever ``json.loads`` does when orjson refuses."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
