"""The cost delta as the report's first lines: per changed subject the floor, ceiling and plan-covered hours with
their USD, then the totals and the plan fees the change would commit."""

from __future__ import annotations

from decimal import Decimal

from tools.change_report.cost import _CENT, HOSTING, CostChange, CostDelta, _usd

COST_TITLE = "Cost per 30 days (on demand)"
_KIND_WORDS = {
    "endpoint": "endpoint",
    "eagle": "EAGLE loop",
    "benchmark": "benchmark schedule",
    "plan": "capacity plan",
}


def cost_lines(delta: CostDelta) -> tuple[str, list[str], list[str]]:
    """(where the figures come from, one line per changed subject, totals and plan fees): the report's first lines,
    text or Markdown."""
    source = f"from {delta.source}; {delta.prices}"
    per_line = []
    for change in delta.changes:
        item = change.item
        mark = {"added": "+", "removed": "-", "modified": "~"}[change.kind]
        what = (
            item.what
            if change.kind != "modified" or change.base is None or change.base.what == item.what
            else (f"{change.base.what} -> {item.what}")
        )
        parts = []
        if item.kind != "plan" or change.hours("floor_hours") != change.hours("ceiling_hours"):
            parts += [
                f"floor {_hours_change(change, 'floor_hours')}",
                f"ceiling {_hours_change(change, 'ceiling_hours')}",
            ]
        old_plan, new_plan = change.hours("plan_hours")
        if old_plan != new_plan:
            parts.append(
                f"plan-covered {_signed(new_plan - old_plan)} {_unit_words(item.unit)} (prepaid, no hourly bill)"
            )
        if item.kind == "plan" and change.kind == "removed":
            parts.append("prepaid fee: leaves the template; a bought plan stays paid, nothing is refunded")
        elif item.kind == "plan" or change.prepaid_delta:
            fee = item.prepaid_note or f"up to {_usd(item.prepaid_usd)}"
            parts.append(
                f"prepaid {_signed_usd(change.prepaid_delta)}: {fee}"
                if change.kind == "modified" and change.prepaid_delta
                else f"prepaid {fee}"
            )
        verb = {"added": "new", "removed": "removed", "modified": "changed"}[change.kind]
        per_line.append(
            f"{mark} {_KIND_WORDS.get(item.kind, item.kind)} {item.subject} ({verb}): "
            + "; ".join(parts)
            + f" [{what}]"
        )
    if not delta.changes:
        totals = [f"Total: no change to the floor or the ceiling ({delta.compared} line(s) compared)"]
    else:
        totals = [f"Total: floor {_total_text(delta, 'floor_hours')}; ceiling {_total_text(delta, 'ceiling_hours')}"]
    committed = delta.committed
    if committed:
        commits = sum((c.prepaid_delta for c in committed), Decimal(0))
        which = "; ".join(f"{c.item.subject}: {c.item.prepaid_note or _usd(c.prepaid_delta)}" for c in committed)
        totals.append(
            f"Prepaid plan fees this change would commit: up to {_usd(commits)}, one-off and never refunded, "
            f"not in the monthly figures ({which})"
        )
    return source, per_line, totals


def _hours_change(change: CostChange, which: str) -> str:
    """``+720 ml.p5e.48xlarge instance-hours per 30 days (+USD 1,000.00)``, ``unchanged (0 ...)`` or, across a change
    of instance type, ``-720 ml.p5.48xlarge, +720 ml.p5e.48xlarge instance-hours ...``."""
    old, new = change.hours(which)
    base_unit = change.base.unit if change.base else None
    head_unit = change.head.unit if change.head else None
    if (
        old == new
        and base_unit == head_unit
        and change.base
        and change.head
        and (change.base.usd_per_hour == change.head.usd_per_hour or old == 0)
    ):
        return f"unchanged ({_hours_text(old)} {_unit_words(change.item.unit)})"
    if base_unit is None or head_unit is None or base_unit == head_unit:
        delta = f"{_signed(new - old)} {_unit_words(change.item.unit)}"
    else:
        delta = f"{_signed(-old)} {base_unit}, {_signed(new)} {_unit_words(head_unit)}"
    return f"{delta} per 30 days ({_signed_usd(change.usd_delta(which), _why_unknown(change, which))})"


def _why_unknown(change: CostChange, which: str) -> str:
    sides = [(change.base, change.hours(which)[0]), (change.head, change.hours(which)[1])]
    units = sorted(
        {
            i.unit + ("" if i.usage == HOSTING or not i.instance_type else f" {i.usage}")
            for i, hours in sides
            if i is not None and hours and i.usd_per_hour is None
        }
    )
    return f"no price for {', '.join(units)}" if units else ""


def _total_text(delta: CostDelta, which: str) -> str:
    hours = {u: h for u, h in delta.total_hours(which).items() if h}
    shown = ", ".join(f"{_signed(h)} {u}" for u, h in hours.items()) if hours else "+0"
    words = "instance-hours" if all(u.startswith("ml.") for u in hours) else "hours"
    unknown = delta.unknown(which)
    known = delta.total_usd(which)
    if unknown:
        usd = f"USD unknown: no price for {', '.join(unknown)}" + (
            f"; the priced lines {_signed_usd(known)}" if known else ""
        )
    else:
        usd = _signed_usd(known)
    return f"{shown} {words} per 30 days ({usd})"


def _signed_usd(amount: Decimal | None, why: str = "") -> str:
    if amount is None:
        return "USD unknown" + (f": {why}" if why else "")
    sign = "+" if amount > 0 else "-" if amount < 0 else ""
    return f"{sign}USD {abs(amount).quantize(_CENT):,}"


def _hours_text(hours: Decimal) -> str:
    return f"{hours.normalize():,f}" if hours == hours.to_integral_value() else f"{hours:,f}"


def _signed(hours: Decimal) -> str:
    return ("+" if hours >= 0 else "-") + _hours_text(abs(hours))


def _unit_words(unit: str) -> str:
    return f"{unit} instance-hours" if unit.startswith("ml.") else f"{unit} hours"
