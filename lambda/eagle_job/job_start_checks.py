"""The checks ``start`` makes against AWS before it claims the watermark or creates a job.

The deployment instance type must be one CreateOptimizationJob accepts (the SageMaker client's own service
model lists them), and the training data must exist and hold records. A failed check names what to fix and
leaves nothing behind. The clients are the caller's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from job_errors import DatasetMissingError, EmptyDatasetError, UnsupportedInstanceTypeError
from job_request import parse_s3_uri
from llm_cdk_shared.aws_errors import error_code

if TYPE_CHECKING:  # names in annotations only
    from typing import TypeAlias

    StartEvent: TypeAlias = Any  # job_events.models().StartEvent, built on first use


def check_instance_type(sagemaker: Any, instance_type: str) -> None:
    """Refuse an instance type CreateOptimizationJob does not accept."""
    allowed = sagemaker.meta.service_model.shape_for("OptimizationJobDeploymentInstanceType").enum
    if allowed and instance_type not in allowed:
        raise UnsupportedInstanceTypeError(
            f"deployment_instance_type {instance_type!r} is not accepted by CreateOptimizationJob. "
            f"Allowed: {', '.join(allowed)}."
        )


def check_dataset(s3: Any, event: StartEvent) -> None:
    """Refuse a dataset the builder reported empty, or a training data URI with no objects under it."""
    records = event.dataset_summary.get("records")
    zero = isinstance(records, (int, float)) and not isinstance(records, bool) and records == 0
    if zero or event.dataset_summary.get("empty") is True:
        raise EmptyDatasetError(
            f"the dataset for run {event.run_id!r} has 0 records (dataset_summary records={records!r}, "
            f"empty={event.dataset_summary.get('empty')!r}) at "
            f"{event.training_data.s3_uri}; an EAGLE head cannot be trained on no data. Capture more "
            "traffic or point the run at a dataset with ShareGPT / OpenAI (chat) completions JSONL records."
        )
    bucket, key = parse_s3_uri(event.training_data.s3_uri, what="training_data.s3_uri")
    try:
        listing = s3.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
    except ClientError as exc:
        if error_code(exc) == "NoSuchBucket":
            raise DatasetMissingError(
                f"training data bucket {bucket!r} of {event.training_data.s3_uri} does not exist; "
                "build the dataset first or fix training_data.s3_uri."
            ) from None
        raise
    if not listing.get("KeyCount", len(listing.get("Contents", []))):
        raise DatasetMissingError(
            f"no objects under training data URI {event.training_data.s3_uri} "
            f"({event.training_data.s3_data_type}); build the dataset first or fix training_data.s3_uri."
        )
