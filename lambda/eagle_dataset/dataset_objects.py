"""The S3 objects the dataset functions read and write: one object's data as decompressed chunks, read as it
streams (:func:`object_chunks`; compression is read from the bytes, and a missing object is ``None``), and the
server-side encryption every write names (:func:`encryption`: SSE-KMS with ``DATASET_KMS_KEY_ARN``, the key the
optimization job's role may decrypt with).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import Any

from botocore.exceptions import ClientError
from dataset_errors import access_error
from dataset_streams import UnreadableData, iter_object_data
from llm_cdk_shared import env


def encryption() -> dict[str, str]:
    """SSE-KMS with ``DATASET_KMS_KEY_ARN`` (the key the optimization job's role may decrypt with),
    named on every write so the training set is under that key whatever the bucket's default is.
    Unset: the bucket's default encryption applies."""
    key = env.Environment().raw("DATASET_KMS_KEY_ARN")
    return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": key} if key else {}


def object_chunks(
    s3: Callable[[], Any], bucket: str, key: str, chunk_size: int
) -> Generator[bytes | UnreadableData, None, None] | None:
    try:
        body = s3().get_object(Bucket=bucket, Key=key)["Body"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None
        raise access_error(error, f"Reading s3://{bucket}/{key}") from error

    def chunks() -> Iterator[bytes]:
        try:
            yield from body.iter_chunks(chunk_size)
        finally:
            body.close()

    # Compression is read from the bytes (gzip magic 1f 8b), not the key's suffix; corrupt or
    # unsupported data ends in an UnreadableData marker the converter counts, never an exception.
    return iter_object_data(chunks())
