"""The S3 key layout of the dataset builder: keys joined from their parts (:func:`join_key`), the
``output_prefix`` the dataset is written under and why a prefix cannot be one (:func:`output_prefix_problem`),
and the component a Data Capture key names (:func:`component_from_key`).
"""

from __future__ import annotations

import re

_DATE_DIR = re.compile(r"\d{4}/\d{2}/\d{2}/\d{2}")


def join_key(*parts: str) -> str:
    """``parts`` joined with ``/``, each stripped of its own leading and trailing ``/``; empty parts are
    left out (``join_key("", "run-1", "plan/")`` is ``run-1/plan``)."""
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


#: UTF-8 bytes an output prefix may take: the keys written under it add ``/<run id>`` (up to 128
#: characters) and ``/data/<component>/<batch file>`` or ``/plan/items.json``, and an S3 key is at
#: most 1024 bytes, so half of that is left to the prefix.
OUTPUT_PREFIX_MAX_BYTES = 512


def output_prefix_problem(prefix: str) -> str | None:
    """Why ``prefix`` cannot be the folder the dataset is written under, or ``None`` when it can.

    The builder writes ``<prefix>/<run id>/...``: a ``..`` (or ``.``) segment, a leading ``/`` or an
    empty segment (``a//b``) gives keys that tools reading the bucket as folders resolve elsewhere
    (``../../x`` leaves the datasets folder), and control characters or text that is not UTF-8 make keys
    S3 refuses or consoles show wrongly. One trailing ``/`` is allowed (``eagle/datasets/``); ``""`` is the
    bucket's top level.
    """
    if prefix.startswith("/"):
        return "starts with '/'; allowed: a relative folder such as 'eagle/datasets' (or '' for the bucket's top level)"
    bad = next((char for char in prefix if ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0), None)
    if bad is not None:
        return f"holds the control character {bad!r}; allowed: printable characters"
    try:
        size = len(prefix.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid Unicode text (a lone surrogate); allowed: text S3 can store as UTF-8"
    if size > OUTPUT_PREFIX_MAX_BYTES:
        return (
            f"is {size} bytes as UTF-8; allowed: at most {OUTPUT_PREFIX_MAX_BYTES}, so the keys under it "
            "stay within S3's 1024-byte key length"
        )
    segments = prefix.removesuffix("/").split("/") if prefix else []
    if "" in segments:
        return "has an empty segment ('//'); allowed: folder names separated by single '/'"
    dotted = next((segment for segment in segments if segment in (".", "..")), None)
    if dotted is not None:
        return f"has a {dotted!r} segment; allowed: folder names (the prefix is used as given, never resolved)"
    return None


def component_from_key(key: str, capture_prefix: str) -> str | None:
    """Component name taken from a Data Capture key, if the key carries one.

    The documented layout is ``<prefix>/<endpoint>/<variant>/yyyy/mm/dd/hh/<file>``. A key
    with exactly one extra folder between the variant and the date
    (``<endpoint>/<variant>/<component>/yyyy/...``) is read as naming the component.
    Anything else returns ``None`` (the record's ``eventMetadata`` or the default decides).
    """
    if capture_prefix and not key.startswith(capture_prefix):
        return None
    parts = key[len(capture_prefix) :].strip("/").split("/")
    if len(parts) != 8 or not _DATE_DIR.fullmatch("/".join(parts[3:7])):
        return None
    return parts[2]
