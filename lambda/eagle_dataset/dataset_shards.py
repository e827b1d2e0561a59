"""Writing a batch's training lines as shards: JSONL lines buffered per component and written as bounded-size
S3 objects ``<data prefix>/<component>/part-<batch id>-<n>.jsonl``, a component's buffer when it reaches the
shard size and the largest buffer when all of them together reach the budget. The names depend only on the batch
and the order of its lines, so a retried batch overwrites its own shards.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError
from dataset_errors import access_error
from dataset_keys import join_key
from dataset_objects import encryption


class ShardWriter:
    """Buffers JSONL lines per component and writes them as bounded-size S3 objects."""

    def __init__(
        self, s3: Callable[[], Any], bucket: str, data_prefix: str, batch_id: str, shard_max: int, budget: int
    ) -> None:
        self.s3 = s3
        self.bucket, self.data_prefix, self.batch_id = bucket, data_prefix, batch_id
        self.shard_max, self.budget = shard_max, budget
        self.buffers: dict[str, list[bytes]] = {}
        self.sizes: dict[str, int] = {}
        self.total = 0
        self.shards: dict[str, list[str]] = defaultdict(list)
        self.bytes_written: Counter[str] = Counter()

    def add(self, component: str, line: bytes) -> None:
        self.buffers.setdefault(component, []).append(line)
        size = self.sizes[component] = self.sizes.get(component, 0) + len(line)
        self.total += len(line)
        if size >= self.shard_max:
            self._flush(component)
        elif self.total >= self.budget:
            self._flush(max(self.sizes, key=self.sizes.__getitem__))

    def close(self) -> None:
        for component in sorted(self.buffers):
            self._flush(component)

    def _flush(self, component: str) -> None:
        lines = self.buffers.pop(component, None)
        size = self.sizes.pop(component, 0)
        self.total -= size
        if not lines:
            return
        name = f"part-{self.batch_id}-{len(self.shards[component]):05d}.jsonl"
        body = b"".join(lines)
        lines.clear()
        key = join_key(self.data_prefix, component, name)
        try:
            self.s3().put_object(
                Bucket=self.bucket, Key=key, Body=body, ContentType="application/jsonl", **encryption()
            )
        except ClientError as error:
            raise access_error(error, f"Writing s3://{self.bucket}/{key}") from error
        self.shards[component].append(name)
        self.bytes_written[component] += size
