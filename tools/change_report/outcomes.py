"""What each resource undergoes on deploy (``Outcome``): unchanged, updated in place, replaced, added or removed, the
step CloudFormation takes in its order, the write-only properties an update sends again (and those it puts back over
what autoscaling set), the run-time values it resets or keeps, and the plan headroom a replaced endpoint config
needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tools.change_report.headroom import Headroom, _headroom
from tools.change_report.resource_types import (
    ENDPOINT_CONFIG,
    IGNORED_TYPES,
    PLAN_TYPE,
    RETAINED,
    ROUTER_TYPE,
    RUN_TIME_PARAMETER_TYPE,
    is_custom,
    write_only_properties,
)
from tools.change_report.run_time import RunTimeValue, run_time_values
from tools.change_report.templates import MISSING, _as_list, _is_intrinsic, _literal, _mask, references
from tools.change_report.value_text import _as_text, _short

if TYPE_CHECKING:
    from tools.change_report.assembly import StackTemplate
    from tools.change_report.records import Report, ResourceChange


COPY_COUNT_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"
RUN_TIME_WRITTEN = {("AWS::SageMaker::InferenceComponent", "RuntimeConfig.CopyCount"): COPY_COUNT_DIMENSION}
"""Write-only properties that a service changes at run time when a scalable target of this dimension names the
resource: re-sending the template's value overwrites what autoscaling set."""

HANDLER_UPDATES = {
    RUN_TIME_PARAMETER_TYPE: "the handler keeps the value; a new ParameterName is a new parameter (a new physical id: "
    "CloudFormation deletes the old one in cleanup, which keeps or deletes it as its Removal "
    "says)",
    ROUTER_TYPE: "a new RouterName: the handler creates a new router (a new physical id) and CloudFormation deletes "
    "the old one in cleanup; the same name: UpdateInferenceRouter in place",
    PLAN_TYPE: "the handler refuses a change of a bought plan's shape (PlanName, instances, duration, window); other "
    "changes update in place",
}
"""What the library's custom resource handlers do on Update: CloudFormation cannot see a physical id change in the
template, the handler decides it."""


@dataclass
class Outcome:
    """What one resource of a before/after pair of assemblies undergoes on deploy (``classify``)."""

    stack: str
    logical_id: str
    resource_type: str
    display: str
    action: str
    """``unchanged`` | ``no update`` (attributes only) | ``update`` | ``replace`` | ``add`` | ``remove``."""
    resends: list[str] = field(default_factory=list)
    """Write-only properties an in-place update sends again with the template's value."""
    overwrites: list[str] = field(default_factory=list)
    """Of ``resends``, those a service changes at run time (autoscaling's copy count): the update overwrites them."""
    run_time: RunTimeValue | None = None
    resets: bool = False
    """The deploy puts the template's value over the value written at run time (or starts a new parameter)."""
    keeps: bool = False
    """A run-time value the update leaves as it is."""
    headroom: Headroom | None = None
    binding_changes: bool = False
    """An endpoint config's CapacityReservationConfig differs."""
    lines: list[str] = field(default_factory=list)
    step: str = "no change"
    """What CloudFormation does with it, in its order: created first, updated, replaced (the new one first, the old
    one deleted in cleanup), deleted in cleanup, or left in place (a retain policy); a custom resource's handler."""

    @property
    def changed(self) -> bool:
        return self.action not in ("unchanged", "no update")


def _outcomes(base: dict[str, StackTemplate], head: dict[str, StackTemplate], report: Report) -> list[Outcome]:
    by_new = {(c.stack.key, c.logical_id): c for c in report.changes if c.kind != "removed"}
    by_old = {
        (c.old_stack.key if c.old_stack else c.stack.key, c.old_logical_id or c.logical_id): c
        for c in report.changes
        if c.kind in ("removed", "renamed")
    }
    old_values, new_values = run_time_values(base), run_time_values(head)
    found: list[Outcome] = []
    for key, stack in head.items():
        for logical_id, resource in stack.resources.items():
            if resource.get("Type") in IGNORED_TYPES:
                continue
            change = by_new.get((key, logical_id))
            kind = resource.get("Type", "?")
            outcome = Outcome(
                stack.title,
                logical_id,
                kind,
                change.display if change else logical_id,
                _action(change),
                run_time=new_values.get((key, logical_id)),
            )
            if change is not None:
                _explain(outcome, change, base, head, old_values)
                outcome.step = deploy_step(outcome.action, change)
            found.append(outcome)
    for (key, logical_id), change in by_old.items():
        if change.kind != "removed":
            continue
        outcome = Outcome(
            change.stack.title,
            logical_id,
            change.resource_type,
            change.display,
            "remove",
            run_time=old_values.get((key, logical_id)),
        )
        _explain(outcome, change, base, head, old_values)
        outcome.step = deploy_step("remove", change)
        found.append(outcome)
    return found


def deploy_step(action: str, change: ResourceChange) -> str:
    """What CloudFormation does with a changed resource, in its order (creates, then updates, then the cleanup)."""
    old, new = change.base or {}, change.head or {}
    if action == "add":
        return "created first (every Create runs before any Update)"
    if action == "remove":
        policy = old.get("DeletionPolicy")
        return (
            f"leaves the stack in cleanup and stays (DeletionPolicy {policy})"
            if policy in RETAINED
            else "deleted in cleanup (after every create and update succeeded)"
        )
    if action == "no update":
        return "no update (attributes or metadata only)"
    if is_custom(change.resource_type) and action in ("update", "replace"):
        known = HANDLER_UPDATES.get(change.resource_type)
        return f"Update sent to the handler: {known}" if known else "Update sent to the handler, which decides"
    if action == "replace":
        kept = " (the old one stays: UpdateReplacePolicy Retain)" if new.get("UpdateReplacePolicy") in RETAINED else ""
        first = "created under the new logical id first" if change.kind == "renamed" else "created anew first"
        return f"replaced: {first}, the old one deleted in cleanup{kept}"
    return "updated in place"


def _action(change: ResourceChange | None) -> str:
    if change is None:
        return "unchanged"
    if change.kind == "added":
        return "add"
    if change.kind == "removed":
        return "remove"
    if change.replacement or _run_time_renamed(change):
        return "replace"
    if all(p.path.startswith("(") for p in change.properties):
        return "no update"
    return "update"


def _run_time_renamed(change: ResourceChange) -> bool:
    """A run-time parameter custom resource whose ParameterName changes: the handler makes a new parameter."""
    return change.resource_type == RUN_TIME_PARAMETER_TYPE and any(p.path == "ParameterName" for p in change.properties)


def _explain(
    outcome: Outcome,
    change: ResourceChange,
    base: dict[str, StackTemplate],
    head: dict[str, StackTemplate],
    old_values: dict[tuple[str, str], RunTimeValue],
) -> None:
    resource = change.head or {}
    if outcome.action == "update" and not is_custom(outcome.resource_type):
        outcome.resends = write_only_in_template(resource)
        outcome.overwrites = [
            p
            for p in outcome.resends
            if (outcome.resource_type, p) in RUN_TIME_WRITTEN
            and _scaled(
                head.get(change.stack.key), change.logical_id, resource, RUN_TIME_WRITTEN[(outcome.resource_type, p)]
            )
        ]
        if outcome.resends:
            outcome.lines.append("re-sends write-only " + ", ".join(outcome.resends) + " with the template's value")
        for path in outcome.overwrites:
            outcome.lines.append(
                f"overwrites {path}: autoscaling ({RUN_TIME_WRITTEN[(outcome.resource_type, path)]}) "
                "sets it at run time and the update puts the template's value back"
            )
    old_key = (
        change.old_stack.key if change.old_stack else change.stack.key,
        change.old_logical_id or change.logical_id,
    )
    value = outcome.run_time or old_values.get(old_key)
    outcome.run_time = value
    if value is not None:
        _run_time_lines(outcome, change, value)
    if outcome.resource_type == ENDPOINT_CONFIG and change.kind in ("modified", "renamed"):
        before, after = _bindings(change.base or {}), _bindings(resource)
        outcome.binding_changes = _mask(before) != _mask(after)
        if outcome.action == "replace":
            outcome.headroom = _headroom(change, base, head)
            if outcome.headroom is not None:
                outcome.lines.append(outcome.headroom.text)
            elif outcome.binding_changes:
                outcome.lines.append(
                    "replaces the endpoint config: the new fleet runs on on-demand capacity and the "
                    "plan's instances are released when the old one goes"
                )


def _run_time_lines(outcome: Outcome, change: ResourceChange, value: RunTimeValue) -> None:
    writers = ", ".join(value.writers) or "a function"
    read = f"; read at deploy by {', '.join(value.readers)}" if value.readers else ""
    properties = (change.head or change.base or {}).get("Properties") or {}
    if outcome.action == "add":
        start = properties.get("InitialValue", properties.get("Value"))
        outcome.lines.append(f"creates {value.shown} with {_short(start)} (written at run time by {writers}{read})")
    elif outcome.action == "remove":
        kept = (change.base or {}).get("DeletionPolicy") == "Retain" or properties.get("Removal") == "retain"
        outcome.lines.append(f"{'leaves' if kept else 'deletes'} {value.shown} and the value {writers} wrote{read}")
    elif (
        value.keeps_on_update
        and outcome.action == "replace"
        and change.kind == "renamed"
        and ((change.base or {}).get("Properties") or {}).get("ParameterName") == properties.get("ParameterName")
    ):
        outcome.keeps = True
        outcome.lines.append(
            f"keeps {value.shown}: under its new logical id the resource's Create finds the parameter, "
            "keeps the value and takes it over (owner tag), so the old resource's Delete leaves it"
        )
    elif value.keeps_on_update and outcome.action == "replace":
        old = ((change.base or {}).get("Properties") or {}).get("ParameterName")
        removal = ((change.base or {}).get("Properties") or {}).get("Removal", "retain")
        outcome.resets = True
        outcome.lines.append(
            f"a new parameter {value.shown} (starts at {_short(properties.get('InitialValue'))}, or its "
            f"SeedFrom); {old} is {'kept' if removal == 'retain' else 'deleted'} (Removal: {removal})"
        )
    elif value.keeps_on_update and outcome.changed:
        outcome.keeps = True
        plan = f"; describes plan {properties['PlanName']} at deploy" if "PlanName" in properties else ""
        outcome.lines.append(
            f"keeps {value.shown}: {RUN_TIME_PARAMETER_TYPE}'s update never overwrites the value {writers} wrote{plan}"
        )
    elif outcome.action in ("update", "replace"):
        outcome.resets = True
        how = (
            "replaced: the new parameter starts at the template's Value"
            if outcome.action == "replace"
            else "the AWS::SSM::Parameter update calls PutParameter with Overwrite and the template's Value"
        )
        outcome.lines.append(
            f"resets {value.shown} to {_short(properties.get('Value'))}: {how}, over what {writers} "
            f"wrote at run time{read}"
        )


def _bindings(resource: dict[str, Any]) -> list[Any]:
    variants = ((resource.get("Properties") or {}).get("ProductionVariants")) or []
    return [v.get("CapacityReservationConfig") if isinstance(v, dict) else None for v in _as_list(variants)]


def _scaled(stack: StackTemplate | None, logical_id: str, resource: dict[str, Any], dimension: str) -> bool:
    """True when a scalable target of ``dimension`` in ``stack`` names the resource (by reference or by name)."""
    if stack is None:
        return False
    kind = resource.get("Type", "")
    name = _literal((resource.get("Properties") or {}).get(kind.rpartition("::")[2] + "Name"))
    for target in stack.resources.values():
        props = target.get("Properties") or {}
        if (
            target.get("Type") != "AWS::ApplicationAutoScaling::ScalableTarget"
            or props.get("ScalableDimension") != dimension
        ):
            continue
        ids = props.get("ResourceId")
        if any(ref == logical_id for _, ref in references(ids)) or (
            name and str(_as_text(ids) or "").endswith("/" + name)
        ):
            return True
    return False


def _present(value: Any, pointer: tuple[str, ...]) -> bool:
    if not pointer:
        return value is not MISSING
    head, rest = pointer[0], pointer[1:]
    if head == "*":
        return isinstance(value, list) and any(_present(v, rest) for v in value)
    return isinstance(value, dict) and not _is_intrinsic(value) and head in value and _present(value[head], rest)


def write_only_in_template(resource: dict[str, Any]) -> list[str]:
    """The write-only properties ``resource`` sets: an update sends each again with the template's value."""
    kind, properties = resource.get("Type", ""), resource.get("Properties") or {}
    found: list[str] = []
    for pointer in write_only_properties(kind):
        shown = ".".join(pointer).replace(".*", "[*]")
        if _present(properties, pointer) and shown not in found and not any(shown.startswith(f + ".") for f in found):
            found.append(shown)
    return found
