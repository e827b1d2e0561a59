"""Live preflight check against S3: the model weights, adapters and datasets the config reads are there.

``check_s3`` probes each S3 location of the config once (``HeadObject`` for an archive, else a one-key
``ListObjectsV2``) and checks that it holds data and that its bucket is in the endpoint's region.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .context import PreflightContext
from .findings import Finding, blocker, info, warning
from .live_errors import _DENIED, _NOT_FOUND, _error_code

MAX_S3_CHECKED = 100
"""S3 locations probed per run (one call each)."""


def _s3_locations(ctx: PreflightContext) -> Iterator[tuple[str, str, str]]:
    """(config path, what, s3 URI) of every S3 location the config reads at deploy or run time."""
    for path, endpoint in ctx.endpoints():
        for m_index, model in enumerate(endpoint.models):
            model_path = f"{path}.models[{m_index}]"
            yield f"{model_path}.model_data_s3_uri", "model weights", model.model_data_s3_uri
            for a_index, adapter in enumerate(model.adapters):
                yield (
                    f"{model_path}.adapters[{a_index}].artifact_s3_uri",
                    f"adapter {adapter.name}",
                    adapter.artifact_s3_uri,
                )
            if model.eagle is not None and model.eagle.dataset.s3_uri:
                yield f"{model_path}.eagle.dataset.s3_uri", "EAGLE dataset", model.eagle.dataset.s3_uri


def check_s3(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.clients is None:
        return
    s3 = ctx.clients.client("s3", ctx.region)
    locations = list(_s3_locations(ctx))
    found = 0
    for path, what, uri in locations[:MAX_S3_CHECKED]:
        bucket, _, key = uri[len("s3://") :].partition("/")
        try:
            if key.endswith(".tar.gz"):
                response = s3.head_object(Bucket=bucket, Key=key)
            else:
                response = s3.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
                if not response.get("KeyCount") and not response.get("Contents"):
                    yield blocker(
                        "s3.present",
                        f"{what}: nothing under {uri}",
                        "SageMaker fails the model or job when its data is missing",
                        f"upload the files to {uri}",
                        path,
                    )
                    continue
            headers = (response.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
            bucket_region = headers.get("x-amz-bucket-region")
            if ctx.region is not None and isinstance(bucket_region, str) and bucket_region != ctx.region:
                yield blocker(
                    "s3.region",
                    f"{what}: bucket {bucket} is in {bucket_region}, the endpoint in {ctx.region}",
                    "SageMaker reads model data and job inputs from buckets in its own region",
                    f"copy the data to a bucket in {ctx.region}",
                    path,
                )
                continue
        except Exception as error:
            code = _error_code(error)
            if code in _DENIED:
                yield warning(
                    "s3.present",
                    f"{what}: not allowed to read {uri} ({code})",
                    "whether the data is there is unknown (the endpoint's role has its own access)",
                    "allow s3:ListBucket / s3:GetObject on it for this check",
                    path,
                )
            elif code in _NOT_FOUND:
                yield blocker(
                    "s3.present",
                    f"{what}: {uri} does not exist ({code})",
                    "SageMaker fails the model or job when its data is missing",
                    f"upload it to {uri}",
                    path,
                )
            else:
                yield warning(
                    "s3.present",
                    f"{what}: {uri} could not be checked ({code})",
                    "the data may be missing",
                    "retry, or check with `aws s3 ls`",
                    path,
                )
            continue
        found += 1
    if found:
        yield info(
            "s3.present",
            f"{found} S3 location(s) found: "
            + ", ".join(u for _, _, u in locations[:3])
            + (" ..." if found > 3 else ""),
        )
    if len(locations) > MAX_S3_CHECKED:
        yield info(
            "s3.present",
            f"{len(locations) - MAX_S3_CHECKED} more S3 location(s) not checked (first {MAX_S3_CHECKED} only)",
        )
