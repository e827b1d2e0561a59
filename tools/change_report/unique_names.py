"""Names unique per account and region: where each resource type the library uses fixes its name (``UNIQUE_NAMES``),
what a Create that finds the name held does, and the name a resource fixes (``unique_name``, ``physical_name``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tools.change_report.resource_types import (
    ENDPOINT,
    ENDPOINT_CONFIG,
    PLAN_TYPE,
    ROUTER_TYPE,
    is_capacity_plan,
    is_custom,
)
from tools.change_report.templates import MISSING, _is_intrinsic, _mask


@dataclass(frozen=True)
class UniqueName:
    """A name that only one resource of its kind may hold in an account and region (a budget's: in an account)."""

    resource_type: str
    path: tuple[str, ...]
    """Where the name sits in the resource's properties."""
    kind: str
    """What shares the name space: an ``AWS::SSM::Parameter`` and a run-time parameter share SSM's."""
    taken: str
    """What a Create that finds the name held does: the request that fails, or (``adopts``) what the handler does."""
    adopts: bool = False
    """The Create takes the existing thing over instead of failing."""
    per_account: bool = False
    """Unique in the account, all regions (AWS Budgets)."""


UNIQUE_NAMES: dict[str, UniqueName] = {
    n.resource_type: n
    for n in (
        UniqueName(ENDPOINT, ("EndpointName",), "endpoint", "CreateEndpoint fails"),
        UniqueName(ENDPOINT_CONFIG, ("EndpointConfigName",), "endpoint config", "CreateEndpointConfig fails"),
        UniqueName("AWS::SageMaker::Model", ("ModelName",), "model", "CreateModel fails"),
        UniqueName(
            "AWS::SageMaker::InferenceComponent",
            ("InferenceComponentName",),
            "inference component",
            "CreateInferenceComponent fails",
        ),
        UniqueName(
            "AWS::Budgets::Budget",
            ("Budget", "BudgetName"),
            "budget",
            "CreateBudget fails (DuplicateRecord)",
            per_account=True,
        ),
        UniqueName("AWS::SSM::Parameter", ("Name",), "SSM parameter", "PutParameter fails (ParameterAlreadyExists)"),
        UniqueName(ROUTER_TYPE, ("RouterName",), "inference router", "CreateInferenceRouter fails"),
        UniqueName(
            "Custom::SageMakerLlmRunTimeParameter",
            ("ParameterName",),
            "SSM parameter",
            "the handler keeps the parameter and its value and takes it over (owner tag), so the old resource's "
            "Delete leaves it",
            adopts=True,
        ),
        UniqueName(
            PLAN_TYPE,
            ("PlanName",),
            "capacity plan",
            "the handler adopts the bought plan when its shape is unchanged (nothing is bought again)",
            adopts=True,
        ),
    )
}
"""Names unique per account and region that the library's resources set, and where each sits. Other AWS types are
read by ``<Type>Name`` / ``Name`` (``physical_name``) except ``_SCOPED_NAMES``."""
_SCOPED_NAMES = frozenset(
    {"AWS::Logs::LogStream", "AWS::ApplicationAutoScaling::ScalingPolicy", "AWS::Scheduler::Schedule"}
)
"""Types whose ``<Type>Name`` is unique only inside another resource (a log group, a scalable target, a schedule
group), which a new resource usually is too."""
_NOT_PHYSICAL_NAMES = frozenset({"AWS::IAM::Policy"})
"""Types whose ``<Type>Name`` property is not a unique physical name (an inline policy's name)."""


def _at(properties: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(properties, dict) or _is_intrinsic(properties) or part not in properties:
            return MISSING
        properties = properties[part]
    return properties


def unique_name(resource: dict[str, Any]) -> tuple[str, str] | None:
    """(name space, the name as JSON) of the name ``resource`` fixes, if it fixes one: from ``UNIQUE_NAMES``, else
    for an AWS type ``<Type>Name`` or ``Name``; a custom resource not in the table fixes none that is known."""
    kind = resource.get("Type", "")
    properties = resource.get("Properties") or {}
    entry = UNIQUE_NAMES.get(kind)
    if entry is None and is_capacity_plan(kind, ""):
        entry = UNIQUE_NAMES[PLAN_TYPE]
    if entry is not None:
        value = _at(properties, entry.path)
        return None if value is MISSING else (entry.kind, json.dumps(_mask(value), sort_keys=True))
    if kind in _NOT_PHYSICAL_NAMES or kind in _SCOPED_NAMES or is_custom(kind):
        return None
    for name in (kind.rpartition("::")[2] + "Name", "Name"):
        if name in properties:
            return kind, json.dumps(_mask(properties[name]), sort_keys=True)
    return None


def physical_name(resource: dict[str, Any]) -> str | None:
    """The resource's fixed name as JSON, if set: where ``UNIQUE_NAMES`` says it sits (``Budget.BudgetName`` for a
    budget, ``RouterName``, ``ParameterName``, ``PlanName``), else ``<Type>Name`` or ``Name``."""
    found = unique_name(resource)
    return found[1] if found else None


def name_entry(resource_type: str) -> UniqueName | None:
    return UNIQUE_NAMES.get(resource_type) or (UNIQUE_NAMES[PLAN_TYPE] if is_capacity_plan(resource_type, "") else None)
