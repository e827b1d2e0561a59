"""Offline preflight check: the config still names a bucket of the project's examples.

S3 bucket names are global. The shipped configs and the docs use example names (``my-llm-weights``...) that this
project does not own; whoever holds such a name decides what a deploy of the placeholders would read. The roles
read weights and adapters only from buckets the deploying account owns (``s3:ResourceAccount``), so a deploy
would fail at the first model copy; preflight says so before CloudFormation starts.
"""

from __future__ import annotations

from collections.abc import Iterable

from .context import PreflightContext, register_check
from .findings import Finding, blocker
from .live_s3 import _s3_locations

EXAMPLE_BUCKETS: frozenset[str] = frozenset(
    {
        "adapters",
        "bucket",
        "example-bucket",
        "my-adapters",
        "my-bucket",
        "my-llm-adapters",
        "my-llm-datasets",
        "my-llm-weights",
        "my-weights",
    }
)
"""Every bucket name the shipped configs, examples and docs use as a placeholder (a test keeps it complete)."""


@register_check
def check_example_buckets(ctx: PreflightContext) -> Iterable[Finding]:
    """A model, adapter or dataset location in an example bucket: a blocker, one finding per location."""
    for path, what, uri in _s3_locations(ctx):
        bucket = uri[len("s3://") :].partition("/")[0] if uri.startswith("s3://") else ""
        if bucket in EXAMPLE_BUCKETS:
            yield blocker(
                "s3.example-bucket",
                f"{uri} ({what}) is in the example bucket {bucket!r}",
                "the example bucket names belong to no one in this project: a deploy would read (or fail to "
                "read) whatever the bucket's owner put there",
                f"copy the {what} to a bucket your account owns and set {path} to its s3:// URI",
                path,
            )
