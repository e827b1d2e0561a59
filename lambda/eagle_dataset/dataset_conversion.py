"""Converting one Distributed Map batch: its capture objects (or turn-log objects) are read as they stream,
converted line by line (:class:`dataset_converter.BatchConverter`) and written as shards per component
(:class:`dataset_shards.ShardWriter`) under ``<output_prefix>/<run id>/data/``. The settings come from the
function's environment (``UNNAMED_RECORDS_COMPONENT``, ``REASONING_TAGS``, ``DEDUP_MAX_ENTRIES``, ``MAX_COMPONENTS``,
``SHARD_MAX_BYTES``, ``BUFFER_BUDGET_BYTES``, ``MAX_LINE_BYTES``, ``READ_CHUNK_BYTES``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dataset_converter import BatchConverter
from dataset_errors import InvalidEventError
from dataset_keys import component_from_key, join_key
from dataset_objects import object_chunks
from dataset_reasoning import ENV as REASONING_ENV
from dataset_reasoning import tags_from
from dataset_shards import ShardWriter
from dataset_streams import iter_bounded_line_views
from llm_cdk_shared import env

if TYPE_CHECKING:
    from dataset_events import BatchInput


@dataclass(frozen=True)
class ConvertedBatch:
    """What one batch's conversion read and wrote."""

    read: int
    """Capture objects read."""
    missing: list[str]
    """Keys of listed objects that no longer exist (removed, e.g. by a lifecycle rule, after plan listed them)."""
    summary: dict[str, Any]
    """The converter's counts, each component's with its ``shards`` (file names) and ``bytes``."""


def batch_id(run_id: str, keys: list[str]) -> str:
    """The batch's name in its shard files: the same for the same run and objects (a retry overwrites them)."""
    return hashlib.sha256("\n".join([run_id, *keys]).encode("utf-8")).hexdigest()[:16]


def convert_batch(s3: Callable[[], Any], batch: BatchInput, keys: list[str], batch_id: str) -> ConvertedBatch:
    """Read, convert and write the objects ``keys`` of ``batch``; every shard is written when this returns."""
    converter = BatchConverter(
        default_component=env.Environment().raw("UNNAMED_RECORDS_COMPONENT") or None,
        source=batch.source,
        dedup_max_entries=env.integer("DEDUP_MAX_ENTRIES", 500_000, error=InvalidEventError),
        max_components=env.integer("MAX_COMPONENTS", 64, error=InvalidEventError),
        reasoning_tags=_reasoning_tags(),
    )
    writer = ShardWriter(
        s3,
        batch.output_bucket,
        join_key(batch.output_prefix, batch.run_id, "data"),
        batch_id,
        env.integer("SHARD_MAX_BYTES", 16 << 20, error=InvalidEventError),
        env.integer("BUFFER_BUDGET_BYTES", 32 << 20, error=InvalidEventError),
    )
    max_line = env.integer("MAX_LINE_BYTES", 8 << 20, error=InvalidEventError)
    chunk_size = env.integer("READ_CHUNK_BYTES", 1 << 20, error=InvalidEventError)
    missing: list[str] = []
    read = 0
    for key in keys:
        chunks = object_chunks(s3, batch.capture_bucket, key, chunk_size)
        if chunks is None:
            missing.append(key)  # removed (e.g. by a lifecycle rule) after plan listed it
            continue
        path_component = component_from_key(key, batch.capture_prefix) if batch.capture_prefix is not None else None
        lines = iter_bounded_line_views(chunks, max_line)  # parsed in place, no copy per line
        for component, line in converter.convert_lines(lines, path_component=path_component, final=False):
            writer.add(component, line)
        read += 1
    for component, line in converter.flush():  # front-door records held back to keep each conversation once
        writer.add(component, line)
    writer.close()

    summary = converter.summary()
    for name, stats in summary["components"].items():
        stats["shards"] = writer.shards.get(name, [])
        stats["bytes"] = writer.bytes_written.get(name, 0)
    return ConvertedBatch(read=read, missing=missing, summary=summary)


def _reasoning_tags() -> tuple[str, str] | None:
    """``REASONING_TAGS`` (:mod:`dataset_reasoning`): a value that is not two tags is the deployment's error."""
    try:
        return tags_from(env.Environment().raw(REASONING_ENV))
    except ValueError as error:
        raise InvalidEventError(str(error)) from None
