"""The optimization job in SageMaker: creating it, and finding the job of a name an earlier attempt made.

A job's name is derived from its inputs (``job_request.job_name``), so a retried ``start`` meets its own job
(``ResourceInUse``) and continues with it, unless that job was made from another model; a quota refusal is
``ResourceLimitExceededError`` for the state machine to retry later. The SageMaker client is the caller's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from job_errors import OptimizationJobConflictError, ResourceLimitExceededError
from job_times import iso
from llm_cdk_shared.aws_errors import error_code, not_found

if TYPE_CHECKING:  # names in annotations only
    from typing import TypeAlias

    StartEvent: TypeAlias = Any  # job_events.models().StartEvent, built on first use

logger = Logger()  # the function's logger (Powertools shares one per service)


def create_job(sagemaker: Any, request: dict[str, Any], name: str, request_event: StartEvent) -> tuple[str, str]:
    """CreateOptimizationJob, or the job of that name an earlier attempt made: (arn, start time)."""
    try:
        job_arn = sagemaker.create_optimization_job(**request)["OptimizationJobArn"]
        logger.info("optimization job created", extra={"job_name": name})
        return job_arn, iso(datetime.now(UTC)) or ""
    except ClientError as exc:
        code = error_code(exc)
        message = exc.response.get("Error", {}).get("Message", "")
        if code == "ResourceInUse" or (code == "ValidationException" and "already exists" in message.lower()):
            logger.info("optimization job already exists; continuing with it", extra={"job_name": name})
            return existing_job(sagemaker, name, request_event.model_s3_uri)
        if code == "ResourceLimitExceeded":
            raise ResourceLimitExceededError(
                f"SageMaker refused optimization job {name!r} on {request_event.deployment_instance_type} "
                f"x{request_event.max_instance_count}: an account quota is used up ({message or code}). "
                "Wait for running optimization jobs to finish, or request a higher quota for this instance "
                "type in Service Quotas, then retry."
            ) from None
        raise


def existing_job(sagemaker: Any, name: str, expected_model_uri: str) -> tuple[str, str]:
    """(arn, creation time) of a job that already has ``name``; refuse one made from other inputs."""
    described = sagemaker.describe_optimization_job(OptimizationJobName=name)
    existing_uri = (described.get("ModelSource") or {}).get("S3", {}).get("S3Uri")
    if existing_uri is not None and existing_uri != expected_model_uri:
        raise OptimizationJobConflictError(
            f"optimization job {name!r} already exists for model {existing_uri!r}, not {expected_model_uri!r}; "
            "use a new run_id."
        )
    return described["OptimizationJobArn"], iso(described.get("CreationTime")) or ""


def job_exists(sagemaker: Any, name: str) -> bool:
    """Whether SageMaker has an optimization job of this name."""
    try:
        sagemaker.describe_optimization_job(OptimizationJobName=name)
    except ClientError as exc:
        if not_found(exc, "sagemaker"):
            return False
        raise
    return True
