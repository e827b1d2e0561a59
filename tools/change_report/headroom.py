"""Capacity plan headroom: the free plan instances a replaced endpoint config bound to a capacity plan needs (the
fleet in use for blue/green, one batch for a rolling update), the plan's size and the plan instances the current
fleet holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tools.change_report.resource_types import ENDPOINT, is_capacity_plan
from tools.change_report.templates import _as_list, _literal, references
from tools.change_report.value_text import _as_text

if TYPE_CHECKING:
    from tools.change_report.assembly import StackTemplate
    from tools.change_report.records import ResourceChange


@dataclass
class Headroom:
    """What moving an endpoint to a replaced endpoint config bound to a capacity plan needs from the plan."""

    plan: str
    needed: int
    """Free plan instances the update needs: the fleet in use (blue/green) or one batch (rolling)."""
    policy: str
    """``blue/green`` or ``rolling (batches of N)``."""
    plan_instances: int | None
    """The plan's size when the assembly declares it."""
    in_use: int
    """Plan instances the current fleet may hold (its maximum), 0 when it runs on on-demand capacity."""

    @property
    def free(self) -> int | None:
        return None if self.plan_instances is None else self.plan_instances - self.in_use

    @property
    def respected(self) -> bool | None:
        return None if self.free is None else self.needed <= self.free

    @property
    def text(self) -> str:
        head = f"replaces the endpoint config: needs {self.needed} free plan instances ({self.policy}, plan {self.plan}"
        if self.plan_instances is None:
            return head + ": its size is not in the template; check it has them free)"
        verdict = "enough" if self.respected else "NOT enough: the new instances wait for capacity and the update fails"
        return (
            head + f" of {self.plan_instances}, {self.in_use} held by the current fleet: {self.free} free, {verdict})"
        )


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _fleet(variant: dict[str, Any]) -> int:
    """The most instances a variant runs: its managed scaling maximum, else its initial count."""
    scaling = variant.get("ManagedInstanceScaling") or {}
    if isinstance(scaling, dict) and scaling.get("Status") == "ENABLED" and "MaxInstanceCount" in scaling:
        return _int(scaling["MaxInstanceCount"], 1)
    return _int(variant.get("InitialInstanceCount"), 1)


def _bound_plans(resource: dict[str, Any], stacks: dict[str, StackTemplate], key: str) -> dict[str, int]:
    """Plan name -> instances the endpoint config's variants may hold on it (an unresolved Fn::If binds)."""
    stack = stacks.get(key)
    found: dict[str, int] = {}
    for variant in _as_list(((resource.get("Properties") or {}).get("ProductionVariants")) or []):
        if not isinstance(variant, dict):
            continue
        binding = variant.get("CapacityReservationConfig")
        if isinstance(binding, dict) and list(binding) == ["Fn::If"]:
            branches = [b for b in binding["Fn::If"][1:] if isinstance(b, dict) and "MlReservationArn" in b]
            binding = branches[0] if branches else None
        if not isinstance(binding, dict) or "MlReservationArn" not in binding:
            continue
        plan = _plan_name(binding["MlReservationArn"], stack)
        found[plan] = found.get(plan, 0) + _fleet(variant)
    return found


def _plan_name(arn: Any, stack: StackTemplate | None) -> str:
    for _, ref in references(arn):
        guard = (stack.resources.get(ref) if stack else None) or {}
        name = _literal((guard.get("Properties") or {}).get("PlanName"))
        if name:
            return name
    text = _as_text(arn) or ""
    return text.rsplit("training-plan/", 1)[1] if "training-plan/" in text else text or "?"


def _plan_instances(plan: str, stacks: dict[str, StackTemplate]) -> int | None:
    for stack in stacks.values():
        for logical_id, resource in stack.resources.items():
            props = resource.get("Properties") or {}
            if is_capacity_plan(resource.get("Type", ""), logical_id) and props.get("PlanName") == plan:
                return _int(props.get("InstanceCount"), 0) or None
    return None


def _headroom(
    change: ResourceChange, base: dict[str, StackTemplate], head: dict[str, StackTemplate]
) -> Headroom | None:
    after = _bound_plans(change.head or {}, head, change.stack.key)
    if not after:
        return None
    before = _bound_plans(change.base or {}, base, (change.old_stack or change.stack).key)
    old_fleet = sum(
        _fleet(v)
        for v in _as_list(((change.base or {}).get("Properties") or {}).get("ProductionVariants") or [])
        if isinstance(v, dict)
    )
    plan, new_fleet = next(iter(after.items()))
    in_use = before.get(plan, 0)
    fleet = old_fleet or new_fleet
    policy, needed = "blue/green: a second fleet as large as the one in use", fleet
    endpoint = _endpoint_of(head.get(change.stack.key), change.logical_id)
    rolling = ((endpoint or {}).get("DeploymentConfig") or {}).get("RollingUpdatePolicy") if endpoint else None
    if isinstance(rolling, dict):
        batch = rolling.get("MaximumBatchSize") or {}
        size = _int(batch.get("Value"), 1)
        needed = size if batch.get("Type") == "INSTANCE_COUNT" else max(1, -(-fleet * size // 100))
        policy = f"rolling: one batch of {needed}"
    return Headroom(plan, needed, policy, _plan_instances(plan, head) or _plan_instances(plan, base), in_use)


def _endpoint_of(stack: StackTemplate | None, config_id: str) -> dict[str, Any] | None:
    for resource in stack.resources.values() if stack else []:
        if resource.get("Type") == ENDPOINT and any(
            ref == config_id for _, ref in references((resource.get("Properties") or {}).get("EndpointConfigName"))
        ):
            return resource.get("Properties") or {}
    return None
