"""The resource types the change report names, and what CloudFormation's resource schemas (the ones cfn-lint ships)
say about a type: which properties are create-only (a change replaces the resource) and which are write-only (an
update sends them again), with the deletion policies that leave a resource in place."""

from __future__ import annotations

from typing import Any

SCHEMA_REGION = "us-east-1"

ENDPOINT_CONFIG = "AWS::SageMaker::EndpointConfig"
ENDPOINT = "AWS::SageMaker::Endpoint"
NESTED_STACK = "AWS::CloudFormation::Stack"
CUSTOM_RESOURCE = "AWS::CloudFormation::CustomResource"
PLAN_TYPE = "Custom::SageMakerCapacityPlan"
"""``sagemaker_llm_cdk.capacity.capacity_plan.RESOURCE_TYPE`` (a test keeps them equal; importing the library here
would start jsii for nothing)."""
CAPACITY_PLAN_TYPES = frozenset({PLAN_TYPE, "Custom::CapacityPlan", "AWS::SageMaker::TrainingPlan"})
PLAN_IDENTITY = ("PlanName", "InstanceType", "InstanceCount", "DurationDays", "StartTimeAfter", "EndTimeBefore")
"""What the capacity plan handler refuses to change on a bought plan (lambda/capacity_plan/index.py)."""

ROUTER_TYPE = "Custom::SageMakerInferenceRouter"
"""``sagemaker_llm_cdk.routing.router.RESOURCE_TYPE``."""

SSM_PARAMETER = "AWS::SSM::Parameter"
SSM_VALUE_TYPE = "AWS::SSM::Parameter::Value<"
"""A stack parameter of this type is read from SSM by CloudFormation at every deploy."""
RUN_TIME_PARAMETER_TYPE = "Custom::SageMakerLlmRunTimeParameter"
"""``sagemaker_llm_cdk.core.run_time_state.RESOURCE_TYPE``: an SSM parameter a function writes at run time, created
once and never overwritten by a deploy (properties ``ParameterName``, ``InitialValue``, ``Removal``, optionally
``PlanName``)."""
IGNORED_TYPES = frozenset({"AWS::CDK::Metadata"})

RETAINED = frozenset({"Retain", "RetainExceptOnCreate"})
"""Deletion policies that leave the thing (and its name) in place when the resource leaves the stack."""


def is_custom(resource_type: str) -> bool:
    return resource_type.startswith("Custom::") or resource_type == CUSTOM_RESOURCE


def is_capacity_plan(resource_type: str, logical_id: str) -> bool:
    return resource_type in CAPACITY_PLAN_TYPES or (is_custom(resource_type) and "CapacityPlan" in logical_id)


_CREATE_ONLY: dict[str, list[tuple[str, ...]] | None] = {}


def create_only_properties(resource_type: str) -> list[tuple[str, ...]] | None:
    """Create-only property paths of ``resource_type`` from cfn-lint's schemas; None when it has no schema."""
    if resource_type not in _CREATE_ONLY:
        from cfnlint.schema import PROVIDER_SCHEMA_MANAGER, ResourceNotFoundError  # type: ignore[import-untyped]

        try:
            schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(SCHEMA_REGION, resource_type).schema
        except ResourceNotFoundError:
            _CREATE_ONLY[resource_type] = None
        else:
            _CREATE_ONLY[resource_type] = [
                tuple(p.split("/")[2:]) for p in schema.get("createOnlyProperties", []) if p.startswith("/properties/")
            ]
    return _CREATE_ONLY[resource_type]


def is_create_only(resource_type: str, path: tuple[Any, ...]) -> bool:
    pointers = create_only_properties(resource_type) or []
    return any(all(p == "*" or p == str(c) for p, c in zip(pointer, path, strict=False)) for pointer in pointers)


_WRITE_ONLY: dict[str, list[tuple[str, ...]]] = {}


def write_only_properties(resource_type: str) -> list[tuple[str, ...]]:
    """Write-only property paths of ``resource_type`` from cfn-lint's schemas (``*`` for every list item)."""
    if resource_type not in _WRITE_ONLY:
        from cfnlint.schema import PROVIDER_SCHEMA_MANAGER, ResourceNotFoundError

        try:
            schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(SCHEMA_REGION, resource_type).schema
        except ResourceNotFoundError:
            _WRITE_ONLY[resource_type] = []
        else:
            _WRITE_ONLY[resource_type] = [
                tuple(p.split("/")[2:]) for p in schema.get("writeOnlyProperties", []) if p.startswith("/properties/")
            ]
    return _WRITE_ONLY[resource_type]
