"""The named errors of the dataset functions, which a state machine can match by name (``InvalidEventError``,
``CaptureAccessDeniedError``, ``WatermarkTooLargeError``, ``MapRunIncompleteError``, ``ResultsFormatError``,
``DatasetFormatError``), and how a refusal by S3 or by the KMS key behind it becomes the named one
(:func:`access_error`); other AWS failures stay ``ClientError``.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

_ACCESS_DENIED = {"AccessDenied", "AccessDeniedException", "AllAccessDisabled", "KMS.AccessDeniedException"}


class InvalidEventError(ValueError):
    """The event does not have the documented shape."""


class CaptureAccessDeniedError(RuntimeError):
    """S3 (or the KMS key behind it) refused access to capture data or outputs."""


class WatermarkTooLargeError(RuntimeError):
    """The per-folder watermark no longer fits in one SSM String parameter."""


class MapRunIncompleteError(RuntimeError):
    """Some Distributed Map batches failed, are pending, or are missing from the results."""


class ResultsFormatError(RuntimeError):
    """The ResultWriter files are not in the format Step Functions documents."""


class DatasetFormatError(ValueError):
    """A user dataset is not ShareGPT, OpenAI chat or OpenAI completions JSONL."""

    def __init__(self, message: str, *, line: int | None = None, s3_uri: str | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.s3_uri = s3_uri


def access_error(error: ClientError, what: str) -> Exception:
    code = error.response.get("Error", {}).get("Code", "")
    if code in _ACCESS_DENIED or code.endswith("AccessDeniedException"):
        return CaptureAccessDeniedError(
            f"{what} was refused ({code}). Grant the function's role access to it (and kms:Decrypt / "
            "kms:GenerateDataKey on the bucket's KMS key if it uses one)."
        )
    return error
