"""The custom resource event this function serves, checked before any AWS call.

Two resource types share the function: ``Custom::SageMakerCapacityPlan`` (buy a plan) and
``Custom::SageMakerCapacityPlanExtension`` (extend one). The event model (``llm_cdk_shared.custom_resource``
plus the resource type) is built on the first event (``_event_model``), so pydantic is not imported on a cold start.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from llm_cdk_shared.problems import shown as _shown
from purchase_errors import CapacityPlanEventError

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    # the class that _event_model() builds on first use: Any for annotations
    CustomResourceEvent: TypeAlias = Any

PLAN_RESOURCE_TYPE = "Custom::SageMakerCapacityPlan"
EXTENSION_RESOURCE_TYPE = "Custom::SageMakerCapacityPlanExtension"


@functools.cache
def _event_model() -> type:
    """``CustomResourceEvent``, built on the first event (pydantic is not imported on a cold start)."""
    from llm_cdk_shared import custom_resource
    from pydantic import Field, field_validator

    class CustomResourceEvent(custom_resource.CustomResourceEvent):
        """The custom resource event (``llm_cdk_shared.custom_resource``), for the two resource types served here.

        Checked before any AWS call: RequestType is one of the three, ResourceType is one this
        function serves, Update and Delete carry the PhysicalResourceId, Update carries
        OldResourceProperties.
        """

        resource_type: str = Field(default=PLAN_RESOURCE_TYPE, alias="ResourceType")

        @field_validator("resource_type")
        @classmethod
        def _known_type(cls, value: str) -> str:
            if value not in (PLAN_RESOURCE_TYPE, EXTENSION_RESOURCE_TYPE):
                raise ValueError(
                    f"ResourceType {_shown(value)} is not served here; use {PLAN_RESOURCE_TYPE} or "
                    f"{EXTENSION_RESOURCE_TYPE}"
                )
            return value

    return CustomResourceEvent


def parse_event(event: Any) -> CustomResourceEvent:
    """The event, or a CapacityPlanEventError naming every problem (before any AWS call)."""
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_event(
        event, error=CapacityPlanEventError, not_done="nothing was done", model=_event_model()
    )
