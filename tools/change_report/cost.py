"""What a change costs per 30 days: each side's cost lines (the synth's ``cost-model.json``, or read from the
templates: endpoint configs' instance counts and capacity binding, capacity plans' fees), matched by subject into a
``CostDelta`` of floor and ceiling hours, their USD and the prepaid plan fees the change commits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from tools.change_report.assembly import StackTemplate, _read_json
from tools.change_report.headroom import _fleet, _int
from tools.change_report.prices import PriceBook, _decimal
from tools.change_report.resource_types import ENDPOINT_CONFIG, PLAN_TYPE
from tools.change_report.templates import _as_list, _endpoints_using, _literal

COST_FILE = "cost-model.json"
"""What the synth writes into the cloud assembly beside ``synth-summary.md`` (``stacks.checks.write_cost_model``):
``cost.cost_model(app)`` as JSON, one ``CostLine.as_dict()`` per endpoint, EAGLE loop, benchmark and plan."""

HOURS_PER_30_DAYS = Decimal(24 * 30)
HOSTING = "Hosting"
_CENT = Decimal("0.01")


@dataclass(frozen=True)
class CostItem:
    """One priced thing of one side, per 30 days: on-demand hours at the floor and the ceiling, plan-covered hours,
    the price of one hour (None: unknown) and a capacity plan's prepaid fee (one-off)."""

    kind: str
    subject: str
    what: str
    instance_type: str | None
    region: str | None
    usage: str
    usd_per_hour: Decimal | None
    floor_hours: Decimal
    ceiling_hours: Decimal
    plan_hours: Decimal = Decimal(0)
    prepaid_usd: Decimal | None = None
    prepaid_note: str = ""

    @property
    def unit(self) -> str:
        """What an hour is of: ``ml.p5e.48xlarge`` instance-hours, or the usage (``AI benchmark job``) hours."""
        return self.instance_type or self.usage

    def usd(self, hours: Decimal) -> Decimal | None:
        """USD for ``hours`` of this item: 0 for no hours whatever the price, None when the price is unknown."""
        if hours == 0:
            return Decimal(0)
        return None if self.usd_per_hour is None else (self.usd_per_hour * hours).quantize(_CENT)


@dataclass
class CostSide:
    """The cost items of one assembly and where they come from (``cost file`` or ``templates``)."""

    items: list[CostItem]
    source: str


def load_cost(folder: Path) -> CostSide | None:
    """The cost model the synth wrote into the assembly in ``folder`` (``COST_FILE``); None when it wrote none (a base
    synthesized before the file existed)."""
    path = folder / COST_FILE
    if not path.is_file():
        return None
    lines = _read_json(path).get("lines", [])
    return CostSide(
        [
            CostItem(
                str(line.get("kind", "?")),
                str(line.get("subject", "?")),
                str(line.get("what", "")),
                line.get("instance_type"),
                line.get("region"),
                str(line.get("usage", HOSTING)),
                _decimal(line.get("usd_per_hour")),
                _decimal(line.get("floor_hours")) or Decimal(0),
                _decimal(line.get("ceiling_hours")) or Decimal(0),
                _decimal(line.get("plan_hours")) or Decimal(0),
                _decimal(line.get("prepaid_usd")),
                str(line.get("prepaid_note", "")),
            )
            for line in lines
            if isinstance(line, dict)
        ],
        "cost file",
    )


def template_cost(assembly: dict[str, StackTemplate], prices: PriceBook) -> CostSide:
    """What the templates say an assembly runs: per endpoint config (named by its endpoint's construct path) its
    variants' instance type and ``ManagedInstanceScaling`` Min/MaxInstanceCount (else ``InitialInstanceCount``) around
    the clock, as ``cost_model.endpoint_line`` counts them (bound to a plan: plan-covered; bound only while the plan is
    Active, ``Fn::If``: floor 0 and the ceiling on demand); per capacity plan its ``MaxUpfrontFeeUsd``. EAGLE loops and
    benchmarks are not read from templates (their schedules and run limits are spread over state machines)."""
    items: list[CostItem] = []
    for stack in assembly.values():
        for logical_id, resource in stack.resources.items():
            kind, props = resource.get("Type", ""), resource.get("Properties") or {}
            if kind == ENDPOINT_CONFIG:
                item = _config_cost(stack, logical_id, props, prices)
                if item is not None:
                    items.append(item)
            elif kind == PLAN_TYPE:
                path = str((resource.get("Metadata") or {}).get("aws:cdk:path", ""))
                subject = path.removesuffix("/Default").removesuffix("/Resource") or f"{stack.title}/{logical_id}"
                approved = props.get("Purchase") == "approved"
                note = (
                    "this deploy may buy it"
                    if approved
                    else "bought only by a deploy with -c purchase="
                    f"{props.get('ConsentName', props.get('PlanName', '?'))}"
                )
                items.append(
                    CostItem(
                        "plan",
                        subject,
                        f"capacity plan {props.get('PlanName', logical_id)} "
                        f"({props.get('InstanceType', '?')} x {props.get('InstanceCount', '?')})",
                        _literal(props.get("InstanceType")),
                        None,
                        HOSTING,
                        None,
                        Decimal(0),
                        Decimal(0),
                        prepaid_usd=_decimal(props.get("MaxUpfrontFeeUsd")),
                        prepaid_note=f"prepaid up to {_usd(_decimal(props.get('MaxUpfrontFeeUsd')))}, "
                        f"never refunded ({note})",
                    )
                )
    return CostSide(items, "templates")


def _config_cost(stack: StackTemplate, logical_id: str, props: dict[str, Any], prices: PriceBook) -> CostItem | None:
    variants = [v for v in _as_list(props.get("ProductionVariants") or []) if isinstance(v, dict)]
    types = [t for t in (_literal(v.get("InstanceType")) for v in variants) if t]
    if not types:
        return None  # serverless variants: no instance-hours
    low = high = plan = Decimal(0)
    bindings = []
    for variant in variants:
        scaling = variant.get("ManagedInstanceScaling") or {}
        managed = isinstance(scaling, dict) and scaling.get("Status") == "ENABLED"
        least = _int(scaling.get("MinInstanceCount"), 0) if managed else _int(variant.get("InitialInstanceCount"), 1)
        most = _fleet(variant)
        binding = variant.get("CapacityReservationConfig")
        if isinstance(binding, dict) and list(binding) == ["Fn::If"]:  # on the plan while it is Active, else on demand
            high += most * HOURS_PER_30_DAYS
            plan += most * HOURS_PER_30_DAYS
            bindings.append("a plan while it is Active, on demand otherwise")
        elif isinstance(binding, dict) and binding:
            plan += most * HOURS_PER_30_DAYS
            bindings.append("only a plan")
        else:
            low += least * HOURS_PER_30_DAYS
            high += most * HOURS_PER_30_DAYS
            bindings.append("on demand")
        shape = f"{variant.get('InstanceType')} x {least}-{most}"
    endpoint = next(iter(_endpoints_using(stack, logical_id)), "")
    subject = f"{stack.title}/{endpoint.split(' (')[0]}" if endpoint else f"{stack.title}/{logical_id}"
    return CostItem(
        "endpoint",
        subject,
        f"endpoint config {logical_id} ({shape}, {', '.join(sorted(set(bindings)))})",
        types[0],
        None,
        HOSTING,
        prices.hourly(types[0], HOSTING, None),
        low,
        high,
        plan,
    )


def _repriced(side: CostSide, prices: PriceBook) -> CostSide:
    from dataclasses import replace

    return CostSide(
        [
            replace(i, usd_per_hour=prices.hourly(i.instance_type, i.usage, i.region))
            if i.instance_type is not None and i.kind != "plan"
            else i
            for i in side.items
        ],
        side.source,
    )


@dataclass(frozen=True)
class CostChange:
    """One cost line compared by subject: added, removed (its whole floor and ceiling) or modified."""

    kind: str  # added | removed | modified
    base: CostItem | None
    head: CostItem | None

    @property
    def item(self) -> CostItem:
        item = self.head or self.base
        assert item is not None
        return item

    def hours(self, which: str) -> tuple[Decimal, Decimal]:
        """(base, head) hours of ``which`` (``floor_hours``, ``ceiling_hours``, ``plan_hours``); 0 where absent."""
        return (
            getattr(self.base, which) if self.base else Decimal(0),
            getattr(self.head, which) if self.head else Decimal(0),
        )

    def usd_delta(self, which: str) -> Decimal | None:
        """Head USD minus base USD at ``which`` (``floor_hours``/``ceiling_hours``); None when a price is unknown."""
        old, new = self.hours(which)
        if (
            self.base
            and self.head
            and old == new
            and (self.base.unit, self.base.usd_per_hour, self.base.region)
            == (self.head.unit, self.head.usd_per_hour, self.head.region)
        ):
            return Decimal(0)  # the same hours of the same thing at the same price, known or not
        before = self.base.usd(old) if self.base else Decimal(0)
        after = self.head.usd(new) if self.head else Decimal(0)
        return None if before is None or after is None else after - before

    @property
    def prepaid_delta(self) -> Decimal:
        return ((self.head.prepaid_usd or Decimal(0)) if self.head else Decimal(0)) - (
            (self.base.prepaid_usd or Decimal(0)) if self.base else Decimal(0)
        )


@dataclass
class CostDelta:
    """What a change does to the monthly floor and ceiling (and which plan fees it commits), line by line."""

    changes: list[CostChange]
    source: str
    """Where each side's figures come from, in words."""
    prices: str
    """Where the USD comes from, in words."""
    compared: int = 0
    """Subjects compared (changed or not)."""

    def unknown(self, which: str) -> list[str]:
        return [c.item.subject for c in self.changes if c.usd_delta(which) is None]

    def total_hours(self, which: str) -> dict[str, Decimal]:
        """Hours added (or removed, negative) per unit (instance type or usage), in the order they first appear."""
        out: dict[str, Decimal] = {}
        for change in self.changes:
            old, new = change.hours(which)
            if change.base is not None:
                out[change.base.unit] = out.get(change.base.unit, Decimal(0)) - old
            if change.head is not None:
                out[change.head.unit] = out.get(change.head.unit, Decimal(0)) + new
        return out

    def total_usd(self, which: str) -> Decimal:
        return sum((d for d in (c.usd_delta(which) for c in self.changes) if d is not None), Decimal(0))

    @property
    def committed(self) -> list[CostChange]:
        """Plan lines whose prepaid fee grows: what the change would commit (a plan fee is never refunded)."""
        return [c for c in self.changes if c.prepaid_delta > 0]


def cost_delta(
    base: dict[str, StackTemplate],
    head: dict[str, StackTemplate],
    base_cost: CostSide | None,
    head_cost: CostSide | None,
    prices: PriceBook | Mapping[str, Any] | Path | None = None,
) -> CostDelta:
    """The cost lines of both sides matched by subject: each side's cost file when both have one; else both from
    their templates (``template_cost``), priced by ``prices``, by the head's cost file, or by the shipped table.
    ``prices`` given: every line is priced by it (both sides alike), else by what each side's synth priced."""
    book = PriceBook.of(prices) if prices is not None else None
    if base_cost is not None and head_cost is not None:
        source = f"both assemblies' {COST_FILE} (endpoints, EAGLE loops, benchmarks, capacity plans)"
        sides = [base_cost, head_cost]
        priced = f"USD from {book.label}" if book else "USD from the price table each synth used"
    else:
        known = {
            (i.instance_type, i.usage, i.region): i.usd_per_hour
            for i in (head_cost or base_cost or CostSide([], "")).items
            if i.usd_per_hour is not None
        }
        table = book or PriceBook.of(None)
        lookup = (
            PriceBook(
                flat={t: a for (t, u, _r), a in known.items() if t and u == HOSTING and a is not None},
                label="the head's cost file",
            )
            if known and book is None
            else table
        )
        missing = (
            "the base has"
            if base_cost is None and head_cost is not None
            else ("the head has" if base_cost is not None else "neither assembly has")
        )
        source = (
            f"the templates, as {missing} no {COST_FILE} (synthesized before the synth wrote one): endpoint "
            "configs' instance counts and capacity binding, capacity plans' fees; EAGLE loop and benchmark "
            "schedules not compared"
        )
        sides = [template_cost(base, lookup), template_cost(head, lookup)]
        priced = f"USD from {lookup.label}"
        book = None
    if book is not None:
        sides = [_repriced(side, book) for side in sides]
    old = {i.subject: i for i in sides[0].items}
    new = {i.subject: i for i in sides[1].items}
    changes = []
    for subject in list(new) + [s for s in old if s not in new]:
        a, b = old.get(subject), new.get(subject)
        if a is None:
            changes.append(CostChange("added", None, b))
        elif b is None:
            changes.append(CostChange("removed", a, None))
        elif _cost_figures(a) != _cost_figures(b):
            changes.append(CostChange("modified", a, b))
    return CostDelta(changes, source, priced, len(set(old) | set(new)))


def _cost_figures(item: CostItem) -> tuple[Any, ...]:
    return (
        item.unit,
        item.region,
        item.usd_per_hour,
        item.floor_hours,
        item.ceiling_hours,
        item.plan_hours,
        item.prepaid_usd,
        item.prepaid_note,
    )


def _usd(amount: Decimal | None) -> str:
    return "unknown" if amount is None else f"USD {amount.quantize(_CENT):,}"
