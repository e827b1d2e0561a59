"""The events of the dataset functions: the pydantic models of the plan, convert, finalize and validate events
(and of the plan's output, which finalize reads back), built on the first event so that pydantic is not imported
on a cold start (:func:`models`), and :func:`parse_event`, which refuses an event that does not have the
documented shape with an ``InvalidEventError`` naming each field, before any AWS call.
"""

from __future__ import annotations

import functools
import re
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any, Literal

from dataset_errors import InvalidEventError
from dataset_keys import output_prefix_problem
from llm_cdk_shared.problems import not_a_boolean
from llm_cdk_shared.problems import problems as validation_problems
from llm_cdk_shared.problems import shown as _shown

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    from pydantic import BaseModel

    # classes that models() builds on first use: Any for annotations
    BatchInput: TypeAlias = Any
    ConvertEvent: TypeAlias = Any
    FinalizeEvent: TypeAlias = Any
    PlanEvent: TypeAlias = Any
    PlanOutput: TypeAlias = Any
    ResultsLocation: TypeAlias = Any
    ValidateEvent: TypeAlias = Any

_BUCKET = r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$"
_RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9_.=\-]{0,127}$"
_PARAMETER = r"^/?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$"


def parse_event(model: type[BaseModel], event: Any) -> Any:
    from pydantic import ValidationError

    try:
        return model.model_validate(event)
    except ValidationError as error:
        raise InvalidEventError(f"{model.__name__} event is invalid: {'; '.join(validation_problems(error))}") from None


def _output_prefix(value: str) -> str:
    """An ``output_prefix`` the dataset keys can be written under as given (``dataset_keys.output_prefix_problem``):
    refused by name in the event, before any S3 call, rather than written to ``../../x/<run id>/...``."""
    problem = output_prefix_problem(value)
    if problem:
        raise ValueError(f"got {_shown(value)}, which {problem}")
    return value


@functools.cache
def models() -> SimpleNamespace:
    """The event models, built on the first event: pydantic is not imported on a cold start."""
    from pydantic import (
        AfterValidator,
        AliasChoices,
        BaseModel,
        BeforeValidator,
        ConfigDict,
        Field,
        field_validator,
        model_validator,
    )

    WholeNumber = Annotated[int, BeforeValidator(not_a_boolean)]  # true/false is no count
    OutputPrefix = Annotated[str, AfterValidator(_output_prefix)]  # keys are written under it as given

    class _Model(BaseModel):
        model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    class PlanEvent(_Model):
        capture_bucket: str = Field(pattern=_BUCKET)
        capture_prefix: str = Field(default="", max_length=512)
        output_bucket: str = Field(pattern=_BUCKET)
        output_prefix: OutputPrefix = Field(default="", max_length=512)
        run_id: str = Field(pattern=_RUN_ID)
        watermark_parameter: str = Field(pattern=_PARAMETER, max_length=1011)
        settle_seconds: WholeNumber | None = Field(default=None, ge=0)
        max_objects: WholeNumber | None = Field(default=None, ge=1)

        @field_validator("capture_prefix")
        @classmethod
        def _no_date_in_prefix(cls, value: str) -> str:
            if re.search(r"(^|/)\d{4}/\d{2}(/|$)", value):
                raise ValueError(
                    "must stop at or above the endpoint folder (the DataCaptureConfig DestinationS3Uri path, "
                    "optionally plus '<endpoint-name>/'), not inside the yyyy/mm/dd/hh folders"
                )
            return value.lstrip("/")

    class BatchInput(_Model):
        capture_bucket: str = Field(pattern=_BUCKET)
        capture_prefix: str | None = Field(default=None, max_length=512)
        output_bucket: str = Field(pattern=_BUCKET)
        output_prefix: OutputPrefix = Field(default="", max_length=512)
        run_id: str = Field(pattern=_RUN_ID)
        source: Literal["capture", "front_door"] = "capture"

    class BatchItem(_Model):
        key: str = Field(min_length=1, max_length=1024)

    class ConvertEvent(_Model):
        items: list[BatchItem] = Field(alias="Items", min_length=1)
        batch_input: BatchInput = Field(alias="BatchInput")

    class PlanOutput(_Model):
        output_bucket: str = Field(pattern=_BUCKET)
        output_prefix: OutputPrefix = Field(default="", max_length=512)  # as PlanEvent's: plan passes them on
        run_id: str = Field(pattern=_RUN_ID)
        watermark_parameter: str = Field(pattern=_PARAMETER, max_length=1011)
        object_count: WholeNumber = Field(ge=0)
        watermark_value: str | None = None
        watermark_previous_value: str | None = None
        watermark_stored_value: str | None = None
        new_watermark: str | None = None
        capture_bucket: str | None = None
        capture_prefix: str | None = None

    class ResultsLocation(_Model):
        """``{"results_bucket", "results_manifest_key"}``, or the Distributed Map's ResultWriterDetails
        ``{"Bucket", "Key"}``: a problem names the field as the input spelt it."""

        results_bucket: str = Field(pattern=_BUCKET, validation_alias=AliasChoices("results_bucket", "Bucket"))
        results_manifest_key: str = Field(
            min_length=1,
            max_length=1024,  # an S3 key
            validation_alias=AliasChoices("results_manifest_key", "Key"),
        )

        @model_validator(mode="before")
        @classmethod
        def _whole_result_writer_details(cls, value: Any) -> Any:
            if isinstance(value, dict) and ("Bucket" in value) != ("Key" in value):
                raise ValueError(
                    f"got {_shown(value)}; allowed: the Distributed Map's ResultWriterDetails with both "
                    "Bucket and Key (or results_bucket and results_manifest_key)"
                )
            return value

    class FinalizeEvent(_Model):
        plan: PlanOutput
        results: ResultsLocation | None = None
        target_component: str | None = Field(
            default=None, pattern=r"^(base|[a-zA-Z0-9](-*[a-zA-Z0-9])*)$", max_length=63
        )

    class ValidateEvent(_Model):
        s3_uri: str = Field(pattern=r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/.*)?$")
        s3_data_type: Literal["S3Prefix", "ManifestFile"] = "S3Prefix"

    found = locals()
    return SimpleNamespace(**{name: found[name] for name in MODEL_NAMES})


MODEL_NAMES = (
    "PlanEvent",
    "BatchInput",
    "BatchItem",
    "ConvertEvent",
    "PlanOutput",
    "ResultsLocation",
    "FinalizeEvent",
    "ValidateEvent",
)
