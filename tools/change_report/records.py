"""The records a comparison produces: a changed property, a changed resource or stack output, a headline line, and
the ``Report`` that holds them with the outcome of every resource and the cost delta."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tools.change_report.templates import MISSING

if TYPE_CHECKING:
    from tools.change_report.assembly import StackTemplate
    from tools.change_report.cost import CostDelta
    from tools.change_report.outcomes import Outcome


class ItemDelta(list):  # type: ignore[type-arg]
    """The items only one side of a grown or shrunk list has."""


@dataclass
class PropertyChange:
    path: str
    old: Any = MISSING
    new: Any = MISSING
    create_only: bool = False
    via: str | None = None
    """The replaced resource (or changed parameter) whose new value reaches this property."""
    via_parameter: bool = False
    items: bool = False
    """``old``/``new`` are the items only in the old/new list (a list that grew or shrank)."""

    def __post_init__(self) -> None:
        self.items = self.items or isinstance(self.old, ItemDelta) or isinstance(self.new, ItemDelta)


@dataclass
class ResourceChange:
    kind: str  # added | removed | modified | renamed
    stack: StackTemplate
    logical_id: str
    resource_type: str
    cdk_path: str = ""
    old_logical_id: str | None = None
    old_stack: StackTemplate | None = None
    replacement: bool = False
    properties: list[PropertyChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    base: dict[str, Any] | None = None
    head: dict[str, Any] | None = None

    @property
    def display(self) -> str:
        path = self.cdk_path.split(".NestedStack/")[0]
        if path.startswith(self.stack.title + "/"):
            path = path[len(self.stack.title) + 1 :]
        for suffix in ("/Resource/Resource", "/Resource/Default", "/Resource", "/Default"):
            if path.endswith(suffix):
                path = path[: -len(suffix)]
                break
        return f"{path} ({self.logical_id})" if path and path != self.logical_id else self.logical_id


@dataclass
class OutputChange:
    """A stack output added, removed or changed (its value, description, export or condition)."""

    kind: str  # added | removed | modified
    stack: StackTemplate
    name: str
    properties: list[PropertyChange] = field(default_factory=list)


@dataclass
class Headline:
    category: str  # redeploy | money | fails | runtime | headroom
    stack: str
    text: str
    resource_type: str = ""
    """For ``fails``: the type of the resource whose Create or Update fails."""
    reason: str = ""
    """For ``fails``: which way the deploy fails, in a few words (``FAILS_BY``)."""


@dataclass
class Report:
    base_label: str
    head_label: str
    stacks: list[StackTemplate]
    changes: list[ResourceChange]
    headlines: list[Headline]
    outputs: list[OutputChange] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    """What every resource undergoes (``classify``), changed or not."""
    cost: CostDelta | None = None
    """What the change does to the monthly floor and ceiling, and the plan fees it commits (``cost_delta``)."""

    def for_stack(self, stack: StackTemplate) -> list[ResourceChange]:
        return [c for c in self.changes if c.stack.key == stack.key]

    def outputs_for(self, stack: StackTemplate) -> list[OutputChange]:
        return [o for o in self.outputs if o.stack.key == stack.key]

    def outcome_of(self, change: ResourceChange) -> Outcome | None:
        return next(
            (o for o in self.outcomes if o.stack == change.stack.title and o.logical_id == change.logical_id), None
        )
