"""The report's headline: endpoint config replacements that redeploy an endpoint, endpoints created or deleted,
capacity plan changes, the notes that say a deploy fails (with the way it fails, ``FAILS_BY``), run-time value resets
and short plan headroom."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.change_report.records import Headline, Report, ResourceChange
from tools.change_report.resource_types import ENDPOINT, ENDPOINT_CONFIG, PLAN_IDENTITY, is_capacity_plan
from tools.change_report.templates import _endpoints_using
from tools.change_report.value_text import _pair

if TYPE_CHECKING:
    from tools.change_report.assembly import StackTemplate


FAILS_BY = (
    "fixed-name replacement",
    "name re-taken before cleanup",
    "name re-taken across stacks",
    "name kept by a retained resource",
    "name held twice",
    "ServiceToken change",
    "in-place rename",
)
"""The ways a deploy fails that the report finds, as ``Headline.reason`` names them."""
_NOTE_REASONS = (
    ("custom-named resource must be replaced", "fixed-name replacement"),
    ("ServiceToken changes", "ServiceToken change"),
    ("there is no rename", "in-place rename"),
)


def _headlines(report: Report, head: dict[str, StackTemplate]) -> list[Headline]:
    lines: list[Headline] = []
    for change in report.changes:
        kind, title = change.resource_type, change.stack.title
        if kind == ENDPOINT_CONFIG and change.replacement:
            why = _why(change)
            endpoints = _endpoints_using(head.get(change.stack.key), change.logical_id)
            target = ", ".join(endpoints) if endpoints else "its endpoint"
            lines.append(
                Headline(
                    "redeploy",
                    title,
                    f"endpoint config {change.display} is replaced{why}: redeploys "
                    f"the endpoint {target}: new instances are provisioned",
                )
            )
            if any(
                p.path.startswith("ProductionVariants") and "CapacityReservationConfig" in p.path
                for p in change.properties
            ):
                lines.append(
                    Headline(
                        "money",
                        title,
                        f"endpoint config {change.display}: the capacity plan binding "
                        "(CapacityReservationConfig) changes",
                    )
                )
        elif kind == ENDPOINT and change.kind in ("added", "removed"):
            verb = (
                "created: instances are provisioned"
                if change.kind == "added"
                else "deleted: its instances are released"
            )
            lines.append(Headline("redeploy", title, f"endpoint {change.display} is {verb}"))
        elif kind == ENDPOINT and change.replacement:
            lines.append(
                Headline(
                    "redeploy",
                    title,
                    f"endpoint {change.display} is replaced{_why(change)}: a new "
                    "endpoint is created (new instances, new name) and the old one deleted",
                )
            )
        if is_capacity_plan(kind, change.logical_id):
            lines.append(Headline("money", title, _plan_headline(change)))
        for note in change.notes:
            if "fails" in note or "refuses" in note:
                reason = next((r for marker, r in _NOTE_REASONS if marker in note), "fails")
                lines.append(
                    Headline(
                        "fails", title, f"{change.resource_type} {change.display}: {note}", change.resource_type, reason
                    )
                )
    for outcome in report.outcomes:
        if outcome.resets or outcome.overwrites:
            lines += [
                Headline("runtime", outcome.stack, f"{outcome.resource_type} {outcome.display}: {line}")
                for line in outcome.lines
                if line.startswith(("resets ", "overwrites ", "a new parameter "))
            ]
        if outcome.headroom is not None:
            lines.append(
                Headline("headroom", outcome.stack, f"endpoint config {outcome.display} {outcome.headroom.text}")
            )
    return lines


def _why(change: ResourceChange) -> str:
    paths = [p.path + (f" via {p.via}" if p.via else "") for p in change.properties if p.create_only]
    if change.kind == "renamed":
        paths.insert(0, f"logical id {change.old_logical_id} -> {change.logical_id}")
    return f" ({'; '.join(paths[:4])}{'; ...' if len(paths) > 4 else ''})" if paths else ""


def _plan_headline(change: ResourceChange) -> str:
    props = ((change.head if change.kind != "removed" else change.base) or {}).get("Properties") or {}
    name = props.get("PlanName", change.logical_id)
    if change.kind == "added":
        return (
            f"capacity plan {name} is bought on deploy: {props.get('InstanceType', '?')} x "
            f"{props.get('InstanceCount', '?')} for {props.get('DurationDays', '?')} days, up to USD "
            f"{props.get('MaxUpfrontFeeUsd', '?')} upfront, never refunded"
        )
    if change.kind == "removed":
        return (
            f"capacity plan {name} leaves the template: the plan is retained and stays paid (nothing is "
            "refunded); its endpoint gets no reserved instances from it"
        )
    changed = [p for p in change.properties if not p.path.startswith("(")]
    described = (
        "; ".join(
            f"{p.path} {' -> '.join(_pair(p.old, p.new))}" if not p.via else f"{p.path} via {p.via}" for p in changed
        )
        or "resource attributes only"
    )
    if change.kind == "renamed":
        return (
            f"capacity plan {name} moves to logical id {change.logical_id} (was {change.old_logical_id}): the new "
            f"resource adopts the existing plan if its shape is unchanged; nothing is bought again ({described})"
        )
    identity = [p.path for p in changed if p.path in PLAN_IDENTITY]
    if identity:
        return (
            f"capacity plan {name} changes {', '.join(identity)}: the deployment fails, a bought plan cannot "
            f"change; declare a new plan instead ({described})"
        )
    return f"capacity plan {name} changes ({described}): no purchase"
