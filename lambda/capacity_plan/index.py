"""CloudFormation custom resource (provider framework on_event) that buys a SageMaker capacity plan for endpoints
once and never cancels it.

A capacity plan is a SageMaker *training plan* whose target resource is ``endpoint``. It is
paid upfront and never refunded, so this handler buys at most once per plan name, refuses
changes to a bought plan, and keeps the plan when the resource is deleted.

Environment variables
---------------------
POWERTOOLS_SERVICE_NAME   Logger service name (optional).
POWERTOOLS_LOG_LEVEL      Log level (optional, default INFO).

Event (from ``aws_cdk.custom_resources.Provider``; a CloudFormation custom resource event)
-----------------------------------------------------------------------------------------
RequestType: "Create" | "Update" | "Delete"
PhysicalResourceId: the plan ARN (Update/Delete)
ResourceProperties / OldResourceProperties (CloudFormation passes every value as a string):
    PlanName              1-64 chars, ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``; unique per account and region
    InstanceType          e.g. "ml.p5e.48xlarge"
    InstanceCount         "1" | "2" | "4" | "8" | "16" | "32" | "64"
    DurationDays          "1" .. "182" (whole days)
    StartTimeAfter        optional ISO-8601 date-time with offset, e.g. "2026-01-15T00:00:00Z"
    EndTimeBefore         optional ISO-8601 date-time with offset
    MaxUpfrontFeeUsd      decimal > 0; the most this resource may spend (USD)
    Purchase              "approved" (the deploy command carried ``-c purchase=<ConsentName>``) or
                          "not-approved" (adopt a plan of this name that already exists; never buy)
    ConsentName           optional: the plan's name in the config, which ``-c purchase=`` names
                          (PlanName is stack-prefixed); messages say it. Default: PlanName
    ServiceToken          ignored
Any other property is refused (a misspelt StartTimeAfter must never buy a plan without its window).

ResourceType ``Custom::SageMakerCapacityPlanExtension`` (same function; see ``on_extension``):
    PlanName              the plan to extend
    ExtendUntil           ISO-8601 date-time with offset: the plan should last at least until then
    MaxUpfrontFeeUsd      decimal > 0; the most the extension may cost (USD)
    Extend                "approved" (``-c extend=<ConsentName>`` on the deploy command) or "not-approved"
    ConsentName           optional, as above

Returns
-------
{"PhysicalResourceId": <plan ARN>, "Data": {TrainingPlanArn, TrainingPlanName, StartTime,
 EndTime (ISO-8601 UTC, "" if unknown), UpfrontFee, CurrencyCode, InstanceType,
 InstanceCount, Status}} -- every Data value is a string.

Create: DescribeTrainingPlan(PlanName); an existing plan of the same shape is adopted (retry
after a partial failure, re-created stack, new logical id), one of a different shape is refused;
an extended plan is compared as it was bought (``as_bought``: its extension history). Otherwise
SearchTrainingPlanOfferings(TargetResources=["endpoint"], ...) and CreateTrainingPlan with the
cheapest USD offering within MaxUpfrontFeeUsd and the window (ties: earliest start).
Without ``Purchase: approved`` a missing plan is never bought: the deploy fails and says how to consent.
Update: only MaxUpfrontFeeUsd / Purchase may change (no purchase, same Data);
any change of PlanName, InstanceType, InstanceCount, DurationDays, StartTimeAfter or
EndTimeBefore is refused. CloudFormation rolls a refused Update back with another Update to the
same resource, from the refused properties to the ones it holds: while the stack is
``UPDATE_ROLLBACK_IN_PROGRESS`` (DescribeStacks on the event's StackId) an Update back to the plan
the physical id names is accepted (nothing bought), so the rollback completes instead of ending in
``UPDATE_ROLLBACK_FAILED``. Delete: no AWS call; the plan is retained.

The handler's concepts, one module each: ``purchase_event`` (the event), ``purchase_properties`` (the
ResourceProperties and their models), ``purchase_offerings`` (choosing an offering), ``purchase_plans`` (an
existing plan), ``purchase_requests`` (Create, Update, Delete of a plan), ``purchase_extension`` (the extension
resource), ``purchase_times`` and ``purchase_errors``. This module is the entry point and owns the clients.
"""

from __future__ import annotations

from typing import Any

import purchase_extension
import purchase_properties
import purchase_requests
from aws_lambda_powertools import Logger
from llm_cdk_shared import clients

# A name imported as itself (``X as X``) is re-exported: the handler's users and tests reach it through this module.
from purchase_errors import MAX_MESSAGE_CHARS as MAX_MESSAGE_CHARS
from purchase_errors import CapacityPlanConflictError as CapacityPlanConflictError
from purchase_errors import CapacityPlanConsentError as CapacityPlanConsentError
from purchase_errors import CapacityPlanCurrencyError as CapacityPlanCurrencyError
from purchase_errors import CapacityPlanError as CapacityPlanError
from purchase_errors import CapacityPlanEventError as CapacityPlanEventError
from purchase_errors import CapacityPlanImmutableError as CapacityPlanImmutableError
from purchase_errors import CapacityPlanNotFoundError as CapacityPlanNotFoundError
from purchase_errors import CapacityPlanPropertiesError as CapacityPlanPropertiesError
from purchase_errors import NoCapacityOfferingError as NoCapacityOfferingError
from purchase_event import EXTENSION_RESOURCE_TYPE as EXTENSION_RESOURCE_TYPE
from purchase_event import PLAN_RESOURCE_TYPE as PLAN_RESOURCE_TYPE
from purchase_event import _event_model as _event_model
from purchase_event import parse_event as parse_event
from purchase_extension import ExtensionOffering as ExtensionOffering
from purchase_extension import extension_rejection as extension_rejection
from purchase_offerings import Offering as Offering
from purchase_offerings import parse_fee as parse_fee
from purchase_offerings import rejection_reason as rejection_reason
from purchase_offerings import select_offering as select_offering
from purchase_plans import plan_data as plan_data
from purchase_plans import plan_mismatches as plan_mismatches
from purchase_properties import _models as _models
from purchase_properties import parse_consent as parse_consent
from purchase_properties import parse_consent_name as parse_consent_name
from purchase_properties import parse_duration_days as parse_duration_days
from purchase_properties import parse_extension_properties as parse_extension_properties
from purchase_properties import parse_fee_cap as parse_fee_cap
from purchase_properties import parse_instance_count as parse_instance_count
from purchase_properties import parse_instance_type as parse_instance_type
from purchase_properties import parse_plan_name as parse_plan_name
from purchase_properties import parse_properties as parse_properties
from purchase_properties import parse_time as parse_time

logger = Logger()

# The function's clients, made on first use; every module that calls AWS is handed these getters.
_sagemaker = clients.client_getter("sagemaker")
_cloudformation = clients.client_getter("cloudformation")


def __getattr__(name: str) -> Any:
    """The models (``CustomResourceEvent``, ``CapacityPlanProperties``, ``ExtensionProperties``, the checked types)
    as module attributes (PEP 562), built on first access."""
    if name == "CustomResourceEvent":
        return _event_model()
    if name in purchase_properties.MODEL_NAMES:
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse_event(event)
    logger.append_keys(request_type=request.request_type, physical_resource_id=request.physical_resource_id)
    if request.resource_type == EXTENSION_RESOURCE_TYPE:
        return purchase_extension.on_extension(_sagemaker, _cloudformation, request)
    if request.request_type == "Delete":
        return purchase_requests.on_delete(request)
    props = parse_properties(request.resource_properties)
    logger.append_keys(plan_name=props.plan_name)
    if request.request_type == "Create":
        return purchase_requests.on_create(_sagemaker, props)
    return purchase_requests.on_update(_sagemaker, _cloudformation, request, props)
