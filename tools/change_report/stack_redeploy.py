"""A stack delete and a deploy again (a new stack id): what the deletion policies and the run-time parameters'
Removal keep, what comes back fresh, and which retained resources hold a fixed name the redeploy needs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tools.change_report.resource_types import IGNORED_TYPES, NESTED_STACK, RETAINED, RUN_TIME_PARAMETER_TYPE
from tools.change_report.retaken_names import _named
from tools.change_report.templates import references
from tools.change_report.unique_names import name_entry, unique_name
from tools.change_report.value_text import _short

if TYPE_CHECKING:
    from tools.change_report.assembly import StackTemplate


@dataclass
class Redeploy:
    """What deleting every stack of an assembly and deploying it again (a new stack id) does to each resource."""

    retained: dict[str, int]
    """Resource type -> how many stay after the delete (DeletionPolicy Retain): the redeploy creates new ones beside
    them (a generated name) and the old ones stay, orphaned, with what they hold."""
    values_kept: list[str]
    """Run-time parameters whose Removal is retain: the delete leaves them, the redeploy's Create finds them and keeps
    the value written at run time."""
    fresh: dict[str, int]
    """Resource type -> how many are deleted and come back new (run-time parameters with Removal destroy included:
    they start again at their initial value)."""
    blockers: list[str] = field(default_factory=list)
    """Retained resources with a fixed name: the redeploy's Create of that name fails while the old one stays."""


def _goes_with_its_container(stack: StackTemplate, resource: dict[str, Any]) -> bool:
    """A log stream retained in a log group the delete removes goes with the group."""
    if resource.get("Type") != "AWS::Logs::LogStream":
        return False
    groups = [ref for _, ref in references((resource.get("Properties") or {}).get("LogGroupName"))]
    return any((stack.resources.get(g) or {}).get("DeletionPolicy") not in RETAINED for g in groups)


def redeploy(assembly: dict[str, StackTemplate]) -> Redeploy:
    """Stack delete and deploy again, from the templates: what the DeletionPolicy (and a run-time parameter's
    Removal) keeps, what comes back fresh, and what keeps a name the redeploy needs."""
    retained: dict[str, int] = {}
    fresh: dict[str, int] = {}
    kept: list[str] = []
    blockers: list[str] = []
    for stack in assembly.values():
        for logical_id, resource in stack.resources.items():
            kind = resource.get("Type", "?")
            if kind in IGNORED_TYPES or kind == NESTED_STACK:
                continue
            properties = resource.get("Properties") or {}
            if kind == RUN_TIME_PARAMETER_TYPE and properties.get("Removal", "retain") == "retain":
                kept.append(str(properties.get("ParameterName", logical_id)))
                continue
            if resource.get("DeletionPolicy") not in RETAINED or _goes_with_its_container(stack, resource):
                fresh[kind] = fresh.get(kind, 0) + 1
                continue
            retained[kind] = retained.get(kind, 0) + 1
            entry, name = name_entry(kind), unique_name(resource)
            if name is not None and not (entry and entry.adopts):
                blockers.append(
                    f"{stack.title}: {_named(stack, logical_id, resource)} is retained with the fixed name "
                    f"{_short(json.loads(name[1]))}: the redeploy creates it again and fails while the "
                    "old one stays; delete it by hand first, or let it have a generated name"
                )
    return Redeploy(dict(sorted(retained.items())), sorted(kept), dict(sorted(fresh.items())), blockers)
