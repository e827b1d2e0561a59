"""The events of the job functions, checked on the way in: ``start``'s request and ``record``'s job description.

``StartEvent`` is what the state machine passes to ``start`` (the model, its training data, the run and the
capture window it trains on); ``StartOutput`` is ``start``'s answer, and ``RecordEvent`` that answer read back
with the final DescribeOptimizationJob response (``JobDescription``) under ``job``. The pydantic models are
built on the first event (``models()``): pydantic is not imported on a cold start. A bad event is
``InvalidEventError`` naming every field at fault.
"""

from __future__ import annotations

import functools
from datetime import datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any, Literal

from job_errors import InvalidEventError
from llm_cdk_shared.problems import not_a_boolean
from llm_cdk_shared.problems import problems as validation_problems

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from pydantic import BaseModel

_S3_URI = r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/.*)?$"
_PARAMETER = r"^/?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$"
"""An SSM parameter name (botocore: 1-2048 characters), as the dataset builder checks it."""
_WATERMARK_MAX_CHARS = 4096
"""An SSM standard-tier String parameter's value."""


@functools.cache
def models() -> SimpleNamespace:
    """The event models, built on the first event: pydantic is not imported on a cold start."""
    from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

    WholeNumber = Annotated[int, BeforeValidator(not_a_boolean)]  # true/false is no count

    class TrainingData(BaseModel):
        model_config = ConfigDict(extra="ignore", defer_build=True)

        s3_uri: str = Field(min_length=1, max_length=1024)
        s3_data_type: Literal["S3Prefix", "ManifestFile"] = "S3Prefix"

    class WatermarkCommit(BaseModel):
        """Where the capture watermark is (``stored``, as plan read it), where this run's window starts
        (``previous``; null: nothing consumed yet) and where it ends (``value``)."""

        model_config = ConfigDict(extra="forbid", defer_build=True)

        parameter: str = Field(pattern=_PARAMETER, max_length=2048)
        stored: str | None = Field(default=None, min_length=1, max_length=_WATERMARK_MAX_CHARS)
        previous: str | None = Field(default=None, min_length=1, max_length=_WATERMARK_MAX_CHARS)
        value: str = Field(min_length=1, max_length=_WATERMARK_MAX_CHARS)

    class StartEvent(BaseModel):
        model_config = ConfigDict(extra="ignore", protected_namespaces=(), defer_build=True)

        model_name: str = Field(min_length=1, max_length=256)
        model_s3_uri: str = Field(min_length=1, max_length=1024)
        architecture: str = Field(min_length=1, max_length=256)
        deployment_instance_type: str = Field(min_length=1, max_length=64)
        max_instance_count: WholeNumber = Field(default=1, ge=1)
        training_data: TrainingData
        run_id: str = Field(min_length=1, max_length=256)
        dataset_summary: dict[str, Any] = Field(default_factory=dict)
        accept_eula: bool = False
        """The model's licence was accepted in config (a gated JumpStart model): ModelSource.S3.ModelAccessConfig."""
        watermark: WatermarkCommit | None = None
        """FinalizeDataset's ``watermark_commit``: the capture window this job trains on (captured traffic only)."""

    class StartOutput(StartEvent):
        watermark_committed: bool = False
        """This invocation (or an earlier attempt of it) moved the capture watermark to ``watermark.value``."""
        job_name: str
        job_arn: str
        eagle_version: str
        output_s3_uri: str
        started_at: str
        draft_model_s3_uri: str
        results_s3_uri: str

    class JobDescription(BaseModel):
        """The parts of a DescribeOptimizationJob response that ``record`` uses."""

        model_config = ConfigDict(extra="ignore", defer_build=True)

        OptimizationJobStatus: str
        FailureReason: str | None = None
        OptimizationJobArn: str | None = None
        CreationTime: datetime | None = None
        OptimizationStartTime: datetime | None = None
        OptimizationEndTime: datetime | None = None
        LastModifiedTime: datetime | None = None

    class RecordEvent(StartOutput):
        job: JobDescription
        # Start's output, checked where it is read back: the job's name and the S3 URIs record reads.
        job_name: str = Field(min_length=1, max_length=63, pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
        output_s3_uri: str = Field(pattern=_S3_URI, max_length=1024)
        draft_model_s3_uri: str = Field(pattern=_S3_URI, max_length=1024)
        results_s3_uri: str = Field(pattern=_S3_URI, max_length=1024)

    return SimpleNamespace(
        TrainingData=TrainingData,
        WatermarkCommit=WatermarkCommit,
        StartEvent=StartEvent,
        StartOutput=StartOutput,
        JobDescription=JobDescription,
        RecordEvent=RecordEvent,
    )


#: The models ``models()`` builds, by name.
MODEL_NAMES = ("TrainingData", "WatermarkCommit", "StartEvent", "StartOutput", "JobDescription", "RecordEvent")


def parse_event(event: Any, model: type[BaseModel]) -> Any:
    """``event`` as ``model``, or InvalidEventError naming every problem."""
    from aws_lambda_powertools.utilities.parser import parse  # imported on first use: not on the cold start
    from pydantic import ValidationError

    try:
        return parse(event=event, model=model)
    except ValidationError as exc:
        raise InvalidEventError(f"invalid {model.__name__} event: {'; '.join(validation_problems(exc))}") from None
