"""Custom resource (provider framework on_event) that attaches an endpoint's resource policy (``PutEndpointPolicy``).

An inference router in another account may route to an endpoint of this account only when the endpoint's owner
allows it in an endpoint policy; CloudFormation has no property or resource type for that policy, so
``EndpointPolicy`` (``sagemaker_llm_cdk.routing.endpoint_policy``) attaches it through this function.

Environment variables
---------------------
POWERTOOLS_SERVICE_NAME   Logger service name (optional).

Event (``aws_cdk.custom_resources.Provider``), checked before any AWS call
--------------------------------------------------------------------------
RequestType "Create" | "Update" | "Delete". ResourceProperties (strict: any other key is refused):
    EndpointName     the endpoint in this account and region (1-63 letters, digits and hyphens); the physical id
    ResourcePolicy   the policy document as JSON text (1-20480 ASCII characters)
    ServiceToken     ignored

on_event
--------
Create and Update: ``PutEndpointPolicy`` (it replaces the endpoint's policy, so a repeated delivery changes
nothing); returns the endpoint name as the physical id and Data {EndpointArn}. An Update that names another
endpoint returns the new name, so CloudFormation then deletes the old endpoint's policy. Delete:
``DeleteEndpointPolicy`` when the physical id is the endpoint the properties name (a create that failed attached
nothing); an endpoint that is gone, or has no policy, needs nothing.
"""
from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from llm_cdk_shared import clients
from llm_cdk_shared.aws_errors import not_found

if TYPE_CHECKING:  # names in annotations only; nothing here is imported on a cold start
    from typing import TypeAlias

    from llm_cdk_shared.custom_resource import CustomResourceEvent as PolicyEvent

    PolicyProperties: TypeAlias = Any

logger = Logger()

RESOURCE_TYPE = "Custom::SageMakerEndpointPolicy"
MAX_MESSAGE_CHARS = 3500
_sagemaker = clients.client_getter("sagemaker", retries={"mode": "standard", "max_attempts": 5})


class EndpointPolicyError(Exception):
    """What CloudFormation shows as the reason the deploy failed; kept short."""

    def __init__(self, message: str) -> None:
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[: MAX_MESSAGE_CHARS - 15] + " ...(truncated)"
        super().__init__(message)


@functools.cache
def _models() -> SimpleNamespace:
    """The properties model, built on the first event that needs it: pydantic is not imported on a cold start."""
    import json

    from llm_cdk_shared import custom_resource
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    class PolicyProperties(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, populate_by_name=True)

        endpoint_name: str = Field(alias="EndpointName", pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
        resource_policy: str = Field(alias="ResourcePolicy", min_length=1, max_length=20480)

        @field_validator("resource_policy")
        @classmethod
        def _document(cls, value: str) -> str:
            if not value.isascii():
                raise ValueError("ResourcePolicy may hold ASCII characters only (PutEndpointPolicy refuses others)")
            try:
                document = json.loads(value)
            except ValueError:
                raise ValueError("ResourcePolicy must be a JSON policy document") from None
            if not isinstance(document, dict) or not document.get("Statement"):
                raise ValueError("ResourcePolicy must be a policy document with a Statement")
            return value

    return SimpleNamespace(PolicyProperties=PolicyProperties, PolicyEvent=custom_resource.CustomResourceEvent)


def __getattr__(name: str) -> Any:
    """``PolicyProperties`` and ``PolicyEvent`` as module attributes (PEP 562), built on first access."""
    if name in ("PolicyProperties", "PolicyEvent"):
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_event(event: Any) -> PolicyEvent:
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_event(event, error=EndpointPolicyError, not_done="the endpoint policy was not changed")


def parse_properties(raw: Any) -> PolicyProperties:
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_properties(_models().PolicyProperties, raw, error=EndpointPolicyError,
                                            what="endpoint policy", not_done="the endpoint policy was not changed")


def _put(props: PolicyProperties) -> dict[str, Any]:
    try:
        answer = _sagemaker().put_endpoint_policy(EndpointName=props.endpoint_name,
                                                  ResourcePolicy=props.resource_policy)
    except ClientError as error:
        if not_found(error):
            raise EndpointPolicyError(f"endpoint {props.endpoint_name} does not exist in this account and region; "
                                      "the policy was not attached") from None
        raise
    logger.info("Endpoint policy attached", extra={"endpoint": props.endpoint_name})
    return {"PhysicalResourceId": props.endpoint_name, "Data": {"EndpointArn": answer.get("EndpointArn", "")}}


def _delete(name: str) -> None:
    try:
        _sagemaker().delete_endpoint_policy(EndpointName=name)
    except ClientError as error:
        if not_found(error):
            return
        raise
    logger.info("Endpoint policy deleted", extra={"endpoint": name})


@logger.inject_lambda_context(log_event=False)
def on_event(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse_event(event)
    if request.request_type == "Delete":
        physical = str(request.physical_resource_id)
        try:
            props = parse_properties(request.resource_properties)
        except EndpointPolicyError:
            return {"PhysicalResourceId": physical}  # properties this function never accepted attached nothing
        if physical == props.endpoint_name:
            _delete(physical)
        return {"PhysicalResourceId": physical}
    return _put(parse_properties(request.resource_properties))
