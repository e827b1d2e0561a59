"""How the live preflight checks read an AWS error: its code, and whether it means "not found" or "denied".

A botocore ``ClientError`` carries its code in ``response["Error"]["Code"]``; any other exception is named by
its class (``_error_code``). ``_NOT_FOUND`` and ``_DENIED`` are the codes the services use for a missing
resource and for a call the credentials may not make.
"""

from __future__ import annotations


def _error_code(error: Exception) -> str:
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", type(error).__name__))


_NOT_FOUND = (
    "ResourceNotFound",
    "ResourceNotFoundException",
    "ValidationException",
    "404",
    "NoSuchKey",
    "NoSuchBucket",
    "NotFound",
    "ParameterNotFound",
)
_DENIED = ("AccessDenied", "AccessDeniedException", "403", "UnauthorizedOperation", "Forbidden")
