"""Facts about SageMaker instance types the rules need: GPUs and host memory of the common GPU types."""

from __future__ import annotations

_ACCELERATORS = {
    "ml.p4d.24xlarge": 8,
    "ml.p4de.24xlarge": 8,
    "ml.p5.48xlarge": 8,
    "ml.p5e.48xlarge": 8,
    "ml.p5en.48xlarge": 8,
    "ml.p5.4xlarge": 1,
    "ml.p6-b200.48xlarge": 8,
    "ml.g5.xlarge": 1,
    "ml.g5.2xlarge": 1,
    "ml.g5.4xlarge": 1,
    "ml.g5.8xlarge": 1,
    "ml.g5.16xlarge": 1,
    "ml.g5.12xlarge": 4,
    "ml.g5.24xlarge": 4,
    "ml.g5.48xlarge": 8,
    "ml.g6.xlarge": 1,
    "ml.g6.2xlarge": 1,
    "ml.g6.4xlarge": 1,
    "ml.g6.8xlarge": 1,
    "ml.g6.16xlarge": 1,
    "ml.g6.12xlarge": 4,
    "ml.g6.24xlarge": 4,
    "ml.g6.48xlarge": 8,
    "ml.g6e.xlarge": 1,
    "ml.g6e.2xlarge": 1,
    "ml.g6e.4xlarge": 1,
    "ml.g6e.8xlarge": 1,
    "ml.g6e.16xlarge": 1,
    "ml.g6e.12xlarge": 4,
    "ml.g6e.24xlarge": 4,
    "ml.g6e.48xlarge": 8,
}


_MEMORY_GIB = {
    "ml.p4d.24xlarge": 1152,
    "ml.p4de.24xlarge": 1152,
    "ml.p5.48xlarge": 2048,
    "ml.p5e.48xlarge": 2048,
    "ml.p5en.48xlarge": 2048,
    "ml.p5.4xlarge": 256,
    "ml.p6-b200.48xlarge": 2048,
    "ml.g5.xlarge": 16,
    "ml.g5.2xlarge": 32,
    "ml.g5.4xlarge": 64,
    "ml.g5.8xlarge": 128,
    "ml.g5.16xlarge": 256,
    "ml.g5.12xlarge": 192,
    "ml.g5.24xlarge": 384,
    "ml.g5.48xlarge": 768,
    "ml.g6.xlarge": 16,
    "ml.g6.2xlarge": 32,
    "ml.g6.4xlarge": 64,
    "ml.g6.8xlarge": 128,
    "ml.g6.16xlarge": 256,
    "ml.g6.12xlarge": 192,
    "ml.g6.24xlarge": 384,
    "ml.g6.48xlarge": 768,
    "ml.g6e.xlarge": 32,
    "ml.g6e.2xlarge": 64,
    "ml.g6e.4xlarge": 128,
    "ml.g6e.8xlarge": 256,
    "ml.g6e.16xlarge": 512,
    "ml.g6e.12xlarge": 384,
    "ml.g6e.24xlarge": 768,
    "ml.g6e.48xlarge": 1536,
}
"""Host memory (GiB) of one instance of the types in ``_ACCELERATORS`` (EC2's published sizes)."""


def memory_mb_of(instance_type: str) -> int | None:
    """Host memory of one instance in MB (MiB); None where the table does not know the type."""
    gib = _MEMORY_GIB.get(instance_type)
    return gib * 1024 if gib is not None else None


def accelerators_of(instance_type: str) -> int | None:
    """GPUs of one instance of a common GPU type; None where the table does not know the type."""
    return _ACCELERATORS.get(instance_type)
