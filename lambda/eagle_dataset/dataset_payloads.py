"""Data Capture payloads: a capture record's ``endpointInput`` / ``endpointOutput`` (:func:`capture_parts`)
decoded from their ``JSON``, ``BASE64`` or ``CSV`` encoding into a JSON value or its text
(:func:`decode_payload`, and :func:`decode_payload_fast` with orjson and pybase64: the same results), and the
skip reason of a line that is not JSON (:func:`json_error_reason`).
"""

from __future__ import annotations

import binascii
import json
from typing import Any

from dataset_fast_json import fast_b64decode, orjson, scan_json
from dataset_skips import Skip


def json_error_reason(text: str, error: json.JSONDecodeError) -> str:
    if error.msg.startswith("Unterminated string") or error.pos >= len(text.rstrip()):
        return "truncated_line"
    return "invalid_json_line"


def decode_payload(part: dict[str, Any]) -> tuple[Any, bool]:
    """``endpointInput``/``endpointOutput`` -> ``(value, is_json)``.

    ``value`` is the parsed JSON document when the payload is one, else the payload text
    (streamed responses are several JSON documents, plain-text bodies are none).
    """
    encoding = part.get("encoding")
    data = part.get("data")
    if encoding == "JSON" and isinstance(data, (dict, list)):
        return data, True
    if not isinstance(data, str):
        raise Skip("unsupported_encoding")
    if encoding == "BASE64":
        try:
            raw = binascii.a2b_base64(data, strict_mode=True)
        except (binascii.Error, ValueError):
            raise Skip("undecodable_base64") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Skip("not_utf8") from None
    elif encoding in ("JSON", "CSV"):
        text = data
    else:
        raise Skip("unsupported_encoding")
    if text[:1] in ("{", "["):  # fast path, same result as json.loads (see scan_json)
        try:
            value, end = scan_json(text, 0)
        except (ValueError, RecursionError, StopIteration):
            pass  # let json.loads decide, below
        else:
            if end == len(text) or not text[end:].strip(" \t\n\r"):
                return value, True
            return text, False  # json.loads: "Extra data" (a stream of JSON lines, say)
    try:
        return json.loads(text), True
    except (ValueError, RecursionError):
        return text, False


def capture_parts(capture: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A capture record's ``endpointInput`` and ``endpointOutput`` (both paths), or the skip reason."""
    data = capture["captureData"]
    request_part = data.get("endpointInput")
    response_part = data.get("endpointOutput")
    if not isinstance(request_part, dict):
        raise Skip("missing_request")
    if not isinstance(response_part, dict):
        raise Skip("missing_response")
    return request_part, response_part


def decode_payload_fast(part: dict[str, Any]) -> tuple[Any, bool]:
    """:func:`decode_payload` with orjson: same results (anything orjson refuses goes the exact way)."""
    encoding = part.get("encoding")
    data = part.get("data")
    if encoding == "BASE64" and data.__class__ is str:
        try:
            raw = (
                fast_b64decode(data, validate=True)
                if fast_b64decode is not None
                else binascii.a2b_base64(data, strict_mode=True)
            )
        except (binascii.Error, ValueError):
            try:  # pybase64 refused: binascii's strict mode decides, as on the standard-library path
                raw = binascii.a2b_base64(data, strict_mode=True)
            except (binascii.Error, ValueError):
                raise Skip("undecodable_base64") from None
        try:
            return orjson.loads(raw), True  # UTF-8 checked by orjson; no str copy of the payload
        except orjson.JSONDecodeError:
            pass  # not UTF-8, not JSON, or JSON orjson does not take (NaN, lone surrogates): the exact way
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Skip("not_utf8") from None
        if text[:1] == "d":  # server-sent events ("data: ..."): no JSON text starts with "d", json.loads refuses it
            return text, False
        return _decode_text(text)
    if encoding in ("JSON", "CSV") and data.__class__ is str:
        try:
            return orjson.loads(data), True
        except orjson.JSONDecodeError:
            if data[:1] == "d":
                return data, False
            return _decode_text(data)
    return decode_payload(part)


def _decode_text(text: str) -> tuple[Any, bool]:
    """A payload's text -> (JSON value, True) or (the text, False), exactly as ``json.loads`` decides."""
    try:
        return json.loads(text), True
    except (ValueError, RecursionError):
        return text, False
