"""What a ``botocore.exceptions.ClientError`` means, decided once for every function.

``not_found(error, service)`` is the one rule for "the resource named in the request does not exist":

* the error code is one the service documents for a missing resource (``NOT_FOUND_CODES``): SageMaker's
  ``ResourceNotFound`` (and ``ResourceNotFoundException``, which some SageMaker APIs and other services use),
  SSM's ``ParameterNotFound``, S3's ``NoSuchKey`` / ``NoSuchBucket`` / ``NotFound`` / ``404`` (HEAD requests carry
  no body, only the status), DynamoDB's and Firehose's ``ResourceNotFoundException``;
* or, for SageMaker only, ``ValidationException`` with a message saying the resource is missing: many
  SageMaker ``Describe*`` / ``Delete*`` calls (DescribeModel, DescribeEndpoint, DescribeEndpointConfig,
  DescribeInferenceComponent, DeleteModel) declare no not-found error and answer
  "Could not find model ..." this way. The phrases are matched case-insensitively: "could not find",
  "cannot find", "not found", "does not exist".

Any other error (access denied, throttling, a malformed request) is not "not found": callers re-raise it.
The module imports nothing from botocore (it reads ``error.response``), so it costs nothing at cold start.
"""

from __future__ import annotations

import re
from typing import Any

NOT_FOUND_CODES: dict[str, frozenset[str]] = {
    "sagemaker": frozenset({"ResourceNotFound", "ResourceNotFoundException"}),
    "ssm": frozenset({"ParameterNotFound", "ParameterVersionNotFound"}),
    "s3": frozenset({"NoSuchKey", "NoSuchBucket", "NotFound", "404"}),
    "dynamodb": frozenset({"ResourceNotFoundException"}),
    "firehose": frozenset({"ResourceNotFoundException"}),
    "stepfunctions": frozenset({"StateMachineDoesNotExist", "ExecutionDoesNotExist", "ResourceNotFound"}),
}
"""Error codes that mean "not found", per service (botocore's service models and the services' guides)."""
_VALIDATION_SAYS_MISSING = re.compile(r"could not find|cannot find|not found|does not exist", re.IGNORECASE)


def error_code(error: Any) -> str:
    """The error code of a ClientError (``""`` when it has none)."""
    return str((getattr(error, "response", None) or {}).get("Error", {}).get("Code", "") or "")


def error_message(error: Any) -> str:
    """The error message of a ClientError (``""`` when it has none)."""
    return str((getattr(error, "response", None) or {}).get("Error", {}).get("Message", "") or "")


def not_found(error: Any, service: str = "sagemaker") -> bool:
    """True when ``error`` (a ClientError from ``service``'s client) says the resource does not exist."""
    try:
        codes = NOT_FOUND_CODES[service]
    except KeyError:
        raise ValueError(
            f"not_found: service {service!r} has no not-found codes; known: {', '.join(sorted(NOT_FOUND_CODES))}"
        ) from None
    code = error_code(error)
    if code in codes:
        return True
    return (
        service == "sagemaker"
        and code == "ValidationException"
        and bool(_VALIDATION_SAYS_MISSING.search(error_message(error)))
    )
