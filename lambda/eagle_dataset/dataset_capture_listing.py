"""Listing Data Capture objects: the capture folders under a prefix (the ``<endpoint>/<variant>/`` folders whose
children are ``yyyy`` folders, :func:`capture_folders`), the time a capture key was written (from its
``yyyy/mm/dd/hh/MM-SS-...`` path, :func:`key_time`), and the settled objects after the watermark, folder by folder
in key order (:func:`settled_keys`): objects newer than the cutoff may still be being delivered and are left for
the next run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

_YEAR = re.compile(r"\d{4}")
_CAPTURE_REL = re.compile(r"(\d{4})/(\d{2})/(\d{2})/(\d{2})/([^/]+)")
_FILE_TIME = re.compile(r"(\d{2})-(\d{2})-")


def capture_folders(s3: Callable[[], Any], bucket: str, prefix: str, depth: int = 0) -> list[str]:
    """Folders whose children are ``yyyy`` folders (``<endpoint>/<variant>/`` and the like)."""
    children: list[str] = []
    paginator = s3().get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
        children += [cp["Prefix"] for cp in page.get("CommonPrefixes", [])]
    if prefix.endswith("/") and any(_YEAR.fullmatch(c[len(prefix) :].rstrip("/")) for c in children):
        return [prefix]
    if depth >= 6:
        return []
    folders: list[str] = []
    for child in children:
        folders += capture_folders(s3, bucket, child, depth + 1)
    return folders


def key_time(folder: str, key: str) -> datetime | None:
    match = _CAPTURE_REL.fullmatch(key[len(folder) :])
    if not match:
        return None
    year, month, day, hour, name = match.groups()
    try:
        hour_start = datetime(int(year), int(month), int(day), int(hour), tzinfo=UTC)
    except ValueError:
        return None
    file_time = _FILE_TIME.match(name)
    if file_time and int(file_time.group(1)) < 60 and int(file_time.group(2)) < 60:
        return hour_start + timedelta(minutes=int(file_time.group(1)), seconds=int(file_time.group(2)) + 1)
    return hour_start + timedelta(hours=1)  # unknown minute: assume the end of the hour


def settled_keys(
    s3: Callable[[], Any],
    bucket: str,
    folders: list[str],
    folders_after: dict[str, str],
    legacy_after: str | None,
    cutoff: datetime,
) -> Iterator[tuple[str, str]]:
    """``(folder, key)`` of each capture object after the watermark (``folders_after``, else ``legacy_after``)
    written at or before ``cutoff``: the folders in sorted order, each listed in key order until its first newer
    key. Listing is lazy: a caller that breaks off lists no further page."""
    paginator = s3().get_paginator("list_objects_v2")
    for folder in sorted(folders):
        start_after = folders_after.get(folder) or legacy_after
        params = {"Bucket": bucket, "Prefix": folder}
        if start_after and start_after >= folder:
            params["StartAfter"] = start_after
        newer = False
        for page in paginator.paginate(**params):
            for obj in page.get("Contents", []):
                key = obj["Key"]
                written = key_time(folder, key)
                if written is None:
                    continue  # not a capture file (folder marker, stray object)
                if written > cutoff:
                    newer = True  # keys sort by time within a folder: the rest is newer still
                    break
                yield folder, key
            if newer:
                break
