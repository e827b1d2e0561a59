"""The CloudFormation custom resource event, checked before any AWS call (imports pydantic).

``parse_event`` validates the fields a handler reads: RequestType is Create, Update or Delete; Update
and Delete carry the PhysicalResourceId; Update carries OldResourceProperties. Subclass
``CustomResourceEvent`` to restrict more (e.g. the ResourceType). ``parse_properties`` validates
ResourceProperties (without the ServiceToken CloudFormation adds) with a handler's strict model.
Both raise the handler's own error class with every problem listed, and say what was not done.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .problems import problems

Model = TypeVar("Model", bound=BaseModel)


class CustomResourceEvent(BaseModel):
    """The fields of a custom resource event the handlers read (others are kept, unchecked)."""

    model_config = ConfigDict(extra="allow")

    request_type: Literal["Create", "Update", "Delete"] = Field(alias="RequestType")
    resource_type: str = Field(default="", alias="ResourceType")
    physical_resource_id: str | None = Field(default=None, alias="PhysicalResourceId", min_length=1)
    resource_properties: dict[str, Any] = Field(default_factory=dict, alias="ResourceProperties")
    old_resource_properties: dict[str, Any] | None = Field(default=None, alias="OldResourceProperties")

    @model_validator(mode="after")
    def _fields_of_the_request_type(self) -> CustomResourceEvent:
        missing = []
        if self.request_type in ("Update", "Delete") and not self.physical_resource_id:
            missing.append("PhysicalResourceId")
        if self.request_type == "Update" and self.old_resource_properties is None:
            missing.append("OldResourceProperties")
        if missing:
            raise ValueError(f"{self.request_type} events need {' and '.join(missing)}")
        return self


def parse_event(
    event: Any,
    *,
    error: type[Exception],
    not_done: str,
    model: type[Model] = CustomResourceEvent,  # type: ignore[assignment]
) -> Model:
    """``event`` as ``model``, or ``error`` naming every problem; ``not_done`` says what did not happen."""
    if not isinstance(event, dict):
        raise error(f"Not a CloudFormation custom resource event (not a JSON object); {not_done}.")
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        raise error(
            f"Not a valid CloudFormation custom resource event ({not_done}):\n- " + "\n- ".join(problems(exc))
        ) from None


def parse_properties(model: type[Model], raw: Any, *, error: type[Exception], what: str, not_done: str) -> Model:
    """ResourceProperties as ``model`` (ServiceToken dropped); unknown keys are listed with the known ones."""
    if not isinstance(raw, dict):
        raise error(f"{what} ResourceProperties are missing; {not_done}.")
    known = [*sorted(field.alias or name for name, field in model.model_fields.items()), "ServiceToken"]
    try:
        return model.model_validate({k: v for k, v in raw.items() if k != "ServiceToken"})
    except ValidationError as exc:
        raise error(
            f"Invalid {what} properties ({not_done}):\n- "
            + "\n- ".join(problems(exc, root="ResourceProperties", known=known))
        ) from None
