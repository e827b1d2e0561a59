"""Checking a user-supplied EAGLE dataset on a sample: the first objects under an ``S3Prefix`` (or the first
ones a SageMaker ``ManifestFile`` names) are read, each up to ``VALIDATE_SAMPLE_LINES`` records, and every
sampled record must be in one format (ShareGPT, OpenAI chat or OpenAI completions JSON Lines, plain or gzip);
anything else is a ``DatasetFormatError`` that names the object, the line and what is wrong with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from dataset_errors import DatasetFormatError, InvalidEventError, access_error
from dataset_formats import DATASET_FORMATS, detect_dataset_format
from dataset_objects import object_chunks
from dataset_streams import OversizedLine, UnreadableData, iter_bounded_lines
from llm_cdk_shared import env

if TYPE_CHECKING:
    from dataset_events import ValidateEvent


def _expected_formats() -> str:
    return "; ".join(f"{name} {shape}" for name, shape in DATASET_FORMATS.items())


def sample_objects(s3: Callable[[], Any], uri: str, data_type: str, max_objects: int) -> list[tuple[str, str]]:
    bucket, _, key = uri[len("s3://") :].partition("/")
    if data_type == "ManifestFile":
        body = s3().get_object(Bucket=bucket, Key=key)["Body"]
        try:
            raw = body.read(16 << 20)
        finally:
            body.close()
        try:
            manifest = json.loads(raw)
            prefix = manifest[0]["prefix"]
            entries = [e for e in manifest[1:] if isinstance(e, str)]
        except (ValueError, LookupError, TypeError):
            raise DatasetFormatError(
                f"{uri} is not a SageMaker manifest file; expected "
                '[{"prefix": "s3://bucket/path/"}, "relative/key", ...]',
                s3_uri=uri,
            ) from None
        if not isinstance(prefix, str) or not prefix.startswith("s3://"):
            raise DatasetFormatError(f"{uri}: the manifest prefix must be an s3:// URI", s3_uri=uri)
        manifest_bucket, _, manifest_prefix = prefix[len("s3://") :].partition("/")
        return [(manifest_bucket, manifest_prefix + entry) for entry in entries[:max_objects]]
    found: list[tuple[str, str]] = []
    paginator = s3().get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=key):
        for obj in page.get("Contents", []):
            if not obj["Key"].endswith("/") and obj.get("Size", 0) > 0:
                found.append((bucket, obj["Key"]))
                if len(found) >= max_objects:
                    return found
    return found


_UNREADABLE = {
    "unsupported_compression": "it is compressed in a format other than gzip (bzip2, xz, zstd, zip, ...)",
    "corrupt_compressed_object": "it starts as gzip but does not decompress (cut short or damaged)",
}


def dataset_objects(s3: Callable[[], Any], request: ValidateEvent) -> list[tuple[str, str]]:
    """``(bucket, key)`` of the objects to sample (``VALIDATE_MAX_OBJECTS``, default 3); there must be one."""
    try:
        objects = sample_objects(
            s3, request.s3_uri, request.s3_data_type, env.integer("VALIDATE_MAX_OBJECTS", 3, error=InvalidEventError)
        )
    except ClientError as error:
        raise access_error(error, f"Reading {request.s3_uri}") from error
    if not objects:
        raise DatasetFormatError(
            f"No non-empty objects under {request.s3_uri}. Upload JSONL training data there (one record per line): "
            f"{_expected_formats()}.",
            s3_uri=request.s3_uri,
        )
    return objects


def dataset_format(
    s3: Callable[[], Any], uri: str, objects: list[tuple[str, str]], sample_lines: int
) -> tuple[str, int]:
    """(the format of every sampled record, records checked) of the dataset at ``uri``."""
    detected: str | None = None
    lines_checked = 0
    for bucket, key in objects:
        detected, count = _object_format(s3, uri, bucket, key, detected, sample_lines)
        lines_checked += count
    if detected is None:
        raise DatasetFormatError(f"{uri} holds only blank lines. Expected: {_expected_formats()}.", s3_uri=uri)
    return detected, lines_checked


def _object_format(
    s3: Callable[[], Any], uri: str, bucket: str, key: str, detected: str | None, sample_lines: int
) -> tuple[str | None, int]:
    """(the format of the records so far, records checked in this object) after the first ``sample_lines``
    records of one object, which must be in the format ``detected`` (when there is one yet)."""
    where = f"s3://{bucket}/{key}"
    chunks = object_chunks(s3, bucket, key, 256 << 10)
    if chunks is None:
        raise DatasetFormatError(f"{where} (listed in {uri}) does not exist", s3_uri=where)
    count = 0
    for number, line in enumerate(iter_bounded_lines(chunks, 8 << 20), start=1):
        problem = ""
        fmt = None
        if isinstance(line, UnreadableData):  # the object's bytes, not a line: raise once for the object
            chunks.close()
            raise DatasetFormatError(
                f"{where} cannot be read: {_UNREADABLE.get(line.reason, line.reason)}. "
                f"Upload it as plain JSON Lines (or gzip), every record in one of: {_expected_formats()}.",
                s3_uri=where,
            )
        if isinstance(line, OversizedLine):
            problem = f"is {line.size} bytes long (limit {8 << 20})"
        elif not line.strip():
            continue
        else:
            try:
                fmt, problem = detect_dataset_format(json.loads(line.decode("utf-8")))
            except UnicodeDecodeError:
                problem = "is not UTF-8 text"
            except (ValueError, RecursionError):
                problem = "is not a JSON document"
        if fmt is None:
            raise DatasetFormatError(
                f"Line {number} of {where} {problem if problem.startswith('is') else 'is ' + problem}. "
                f"Expected JSON Lines, every record in one of: {_expected_formats()}.",
                line=number,
                s3_uri=where,
            )
        if detected is None:
            detected = fmt
        elif fmt != detected:
            raise DatasetFormatError(
                f"Line {number} of {where} is {fmt} but earlier records are {detected}. "
                "Use one format for the whole dataset.",
                line=number,
                s3_uri=where,
            )
        count += 1
        if count >= sample_lines:
            break
    chunks.close()
    return detected, count
