"""``cost_model`` and ``cost_ceiling_table``: what each endpoint, EAGLE loop and plan in an app costs per 30 days.

``cost_model(app)`` gives the figures as data (``cost_model.CostLine``: floor and ceiling on-demand hours and
USD, plan-covered hours, prepaid fees), priced from the shipped, dated price table (``pricing.PriceTable``) with
no AWS call; ``cost_ceiling_table(app)`` prints them for the synth log and the synth summary, with the table's
age. Per endpoint: instance type x min-max instances, accelerators, the monthly floor (``min_instances`` around
the clock) and ceiling (``max_instances`` around the clock); per model: copies x accelerators; per EAGLE loop and
benchmark: what the counted runs use at most; per capacity plan: what it holds and its prepaid fee (the cap, and
whether this deploy may buy it). An unknown price reads "unknown" on its row, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from aws_cdk import Stack, Token

from constructs import IConstruct

from ..core.instances import accelerators_of
from .cost_model import (
    HOURS_PER_30_DAYS,
    HOURS_PER_LONGEST_MONTH,
    CostLine,
    eagle_lines,
    endpoint_line,
    plan_line,
    price_source,
    runs_in,
    totals,
    usd,
)
from .pricing import PriceTable

if TYPE_CHECKING:
    from ..hosting.endpoint import LlmEndpoint
    from .pricing import PriceLookup

__all__ = ["HOURS_PER_30_DAYS", "cost_ceiling_table", "cost_model", "runs_per_30_days"]

_COLUMNS = (
    "Endpoint / model",
    "Instance type",
    "Instances",
    "Accelerators",
    "On-demand h/30d",
    "Plan h/30d",
    "USD/h",
    "Floor USD/30d",
    "Ceiling USD/30d",
    "Capacity plan",
)


def _region(scope: IConstruct) -> str | None:
    region = Stack.of(scope).region
    return None if Token.is_unresolved(region) else region


def _parts(app_or_stack: IConstruct) -> tuple[list[Any], list[Any], list[Any]]:
    from ..capacity.capacity_plan import CapacityPlan
    from ..eagle.optimization import EagleOptimization
    from ..hosting.endpoint import LlmEndpoint

    everything = list(app_or_stack.node.find_all())
    endpoints = sorted((c for c in everything if isinstance(c, LlmEndpoint)), key=lambda e: e.node.path)
    plans = sorted((c for c in everything if isinstance(c, CapacityPlan)), key=lambda p: p.node.path)
    loops = sorted((c for c in everything if isinstance(c, EagleOptimization)), key=lambda x: x.node.path)
    return endpoints, plans, loops


def cost_model(
    app_or_stack: IConstruct,
    *,
    prices: Mapping[str, Decimal] | PriceLookup | None = None,
    period_hours: int = HOURS_PER_30_DAYS,
) -> list[CostLine]:
    """The cost lines of every ``LlmEndpoint``, EAGLE loop (and its benchmark) and ``CapacityPlan`` under
    ``app_or_stack``, keyed by construct path: the figures ``cost_ceiling_table`` prints, as data.

    Compare two of them (``cost_model.totals``) for a floor/ceiling delta between two synths.

    :param prices: a ``PriceLookup`` (``pricing.PriceList`` looks prices up live), or USD per instance-hour by
        instance type. Default: the shipped price table (no AWS call).
    :param period_hours: the hours the figures cover. Default: 30 days (720); a monthly budget is compared with
        ``HOURS_PER_LONGEST_MONTH`` (744).
    """
    lookup = price_source(prices)
    endpoints, plans, loops = _parts(app_or_stack)
    lines: list[CostLine] = []
    for endpoint in endpoints:
        plan = endpoint.capacity_plan
        lines.append(
            endpoint_line(
                endpoint.node.path,
                endpoint.node.id,
                endpoint.options,
                getattr(plan, "spec", None) if plan is not None else None,
                _region(endpoint),
                lookup,
                period_hours=period_hours,
            )
        )
        for loop in (x for x in loops if x.component.endpoint is endpoint):
            lines.extend(
                eagle_lines(
                    loop.node.path,
                    loop.model_name,
                    loop.settings,
                    loop.job_instance_type,
                    _region(loop),
                    lookup,
                    period_hours=period_hours,
                )
            )
    for plan in plans:
        if getattr(plan, "spec", None) is not None:
            lines.append(plan_line(plan.node.path, plan.spec, _region(plan), may_buy=plan.purchase_approved))
    return lines


def cost_ceiling_table(
    app_or_stack: IConstruct, *, prices: Mapping[str, Decimal] | PriceLookup | None = None, today: date | None = None
) -> str:
    """A plain-text table of ``cost_model(app_or_stack)``: one line per endpoint (instance type, min-max instances,
    accelerators, on-demand and plan-covered hours, USD per hour, floor and ceiling USD per 30 days, plan), one per
    model (copies x accelerators), one per EAGLE loop and benchmark, one per capacity plan (prepaid fee), then the
    totals, the prices and the price table's age, and notes. ``app.py`` prints it after the stacks are built; the
    synth summary (``cdk.out/synth-summary.md``) carries it.

    :param prices: as ``cost_model``. Default: the shipped price table.
    :param today: the date the table's age is counted to. Default: today.
    """
    lookup = price_source(prices)
    endpoints, plans, loops = _parts(app_or_stack)
    title = (
        "Cost per 30 days: floor (least capacity around the clock) and ceiling (most capacity around the clock), "
        "on demand, USD"
    )
    if not endpoints and not plans:
        return f"{title}\n(no LlmEndpoint in {app_or_stack.node.path or 'the app'})"
    lines_by_path = {line.subject: line for line in cost_model(app_or_stack, prices=lookup)}
    rows: list[tuple[str, ...]] = [_COLUMNS]
    notes: list[str] = []
    for endpoint in endpoints:
        rows.extend(_endpoint_rows(endpoint, notes, lines_by_path[endpoint.node.path]))
        for loop in (x for x in loops if x.component.endpoint is endpoint):
            rows.extend(_eagle_rows(loop, notes, lines_by_path))
    for plan in plans:
        rows.append(_plan_row(plan, notes, lines_by_path.get(plan.node.path)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    out = [title]
    for index, row in enumerate(rows):
        out.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip())
        if index == 0:
            out.append("  ".join("-" * width for width in widths))
    model = list(lines_by_path.values())
    total = totals(model)
    out.append(
        f"Total per 30 days: floor {total.floor_label()}, ceiling {total.ceiling_label()} (on demand)"
        + (
            f"; prepaid plan fees: up to {usd(total.prepaid_usd)} (one-off, not in the monthly figures)"
            if total.prepaid_usd
            else ""
        )
    )
    out.extend(_budget_lines(app_or_stack, lookup))
    out.extend(_price_section(model, lookup, today))
    if notes:
        out.append("Notes:")
        out.extend(f"- {note}" for note in notes)
    return "\n".join(out)


def _budget_lines(app_or_stack: IConstruct, lookup: Any) -> list[str]:
    """Each budget's line, the ceiling of the longest month it is compared with, and a warning when lines of that
    ceiling are unpriced (the budget does not check them)."""
    from .budget import CostBudget

    budgets = [c for c in app_or_stack.node.find_all() if isinstance(c, CostBudget)]
    if not budgets:
        return []
    month = totals(cost_model(app_or_stack, prices=lookup, period_hours=HOURS_PER_LONGEST_MONTH))
    out = [b.summary() for b in budgets]
    out.append(
        f"Budget compared with the ceiling of the longest month ({HOURS_PER_LONGEST_MONTH} h, not the table's "
        f"{HOURS_PER_30_DAYS} h): {month.ceiling_label()}"
    )
    if month.unknown_ceiling:
        out.append(
            "WARNING: the budget does not check these unpriced lines of the ceiling: "
            + "; ".join(f"{line.subject} ({line.price_label()})" for line in month.unknown_ceiling)
            + ". Run make prices, or size the budget for them yourself: AWS Budgets alerts on actual spend only"
        )
    return out


def _price_section(lines: list[CostLine], lookup: Any, today: date | None) -> list[str]:
    out = []
    if isinstance(lookup, PriceTable):
        out.append(lookup.age_line(today))
    seen: dict[tuple[str, str, str], str] = {}
    for line in lines:
        if line.price is not None and line.instance_type is not None:
            seen.setdefault((line.instance_type, line.region or "any region", line.usage), line.price.label())
    out.append("Prices (per instance-hour):")
    out.extend(f"- {t} {usage} in {region}: {label}" for (t, region, usage), label in sorted(seen.items()))
    return out


def _hours(hours: Decimal) -> str:
    return f"{hours:f}"


def _money_cells(line: CostLine) -> tuple[str, str, str, str, str]:
    on_demand = (
        _hours(line.ceiling_hours)
        if line.floor_hours == line.ceiling_hours
        else f"{_hours(line.floor_hours)}-{_hours(line.ceiling_hours)}"
    )
    rate = (
        "-"
        if line.price is None
        else f"{line.price.amount.normalize():f}"
        if line.price.amount is not None
        else "unknown"
    )
    return (
        on_demand,
        _hours(line.plan_hours) if line.plan_hours else "0",
        rate,
        usd(line.floor_usd),
        usd(line.ceiling_usd),
    )


def _endpoint_rows(endpoint: LlmEndpoint, notes: list[str], line: CostLine) -> list[tuple[str, ...]]:
    options = endpoint.options
    scaling = options.scaling
    path = endpoint.node.path
    per_instance = accelerators_of(options.instance_type)
    total = per_instance * scaling.max_instances if per_instance is not None else None
    accelerators = f"{per_instance}/instance, {total} at most" if per_instance is not None else "unknown for this type"
    plan = endpoint.capacity_plan
    rows: list[tuple[str, ...]] = [
        (
            path,
            options.instance_type,
            f"{scaling.min_instances}-{scaling.max_instances}",
            accelerators,
            *_money_cells(line),
            _plan_cell(plan),
        )
    ]
    demand = 0
    for model in endpoint.models:
        copies = model.spec.copies
        per_copy = model.spec.accelerators
        demand += copies.max_copies * per_copy
        rows.append(
            (
                f"  model {model.component_name}",
                "",
                f"copies {copies.min_copies}-{copies.max_copies}",
                f"{per_copy}/copy, {copies.max_copies * per_copy} at most",
                "",
                "",
                "",
                "",
                "",
                "",
            )
        )
    if total is not None and demand > total:
        notes.append(
            f"{path}: its models can ask for {demand} accelerators but {scaling.max_instances} x "
            f"{options.instance_type} have {total}; copies beyond that are not placed (raise max_instances "
            "or lower max_copies)"
        )
    if scaling.min_instances == 0:
        notes.append(
            f"{path}: scales to zero instances when no copy runs (no instance-hours while idle; its keys, alarms "
            "and dashboard still bill monthly)"
        )
    if plan is not None:
        notes.append(f"{path}: {_plan_note(plan)}")
    return rows


def runs_per_30_days(schedule: str | None, *, max_runtime_hours: int = 24, records_check: str | None = None) -> str:
    """How many runs the cost model counts in 30 days (``cost_model.runs_in``): ``rate(7 days)`` -> ``5``,
    ``rate(1 hour)`` with 24-hour runs -> ``30`` (runs never overlap), no schedule -> ``manual only``."""
    if schedule is None and records_check is None:
        return "manual only"
    runs, _ = runs_in(HOURS_PER_30_DAYS, schedule, records_check=records_check, max_runtime_hours=max_runtime_hours)
    return f"{runs:f}"


def _eagle_rows(loop: Any, notes: list[str], lines: Mapping[str, CostLine]) -> list[tuple[str, ...]]:
    settings = loop.settings
    line = lines[loop.node.path]
    rows: list[tuple[str, ...]] = [
        (
            f"  eagle {loop.model_name}",
            loop.job_instance_type,
            f"{settings.max_instance_count} per run",
            "",
            *_money_cells(line),
            settings.training_plan or "none (on-demand)",
        )
    ]
    bench = lines.get(f"{loop.node.path}.benchmark")
    if bench is not None:
        rows.append((f"  benchmark {loop.model_name}", "", "2 per promotion", "", *_money_cells(bench), ""))
    hours = settings.max_runtime_hours * settings.max_instance_count
    on_plan = settings.training_plan is not None
    notes.append(
        f"{loop.node.path}: one optimization run uses at most {settings.max_runtime_hours} h x "
        f"{settings.max_instance_count} {loop.job_instance_type} = {hours} instance-hours"
        + (f" of training plan {settings.training_plan}" if on_plan else " on demand")
        + f"; scheduled {settings.schedule or 'never (manual runs only)'} "
        f"({line.runs if line.runs is not None else 0:f} runs counted in 30 days); counted as {line.what}"
    )
    if bench is not None:
        notes.append(f"{bench.subject}: {bench.what}; {bench.note}")
    return rows


def _plan_row(plan: Any, notes: list[str], line: CostLine | None) -> tuple[str, ...]:
    spec = plan.spec
    if plan.mode == "reserve":
        state = "this deploy may BUY it" if plan.purchase_approved else "not bought by this deploy"
        fee = f"prepaid up to {usd(spec.max_upfront_fee_usd)} ({state})"
    else:
        fee = "already paid"
    extension = plan.extension_summary()
    if extension is not None:
        notes.append(
            f"{plan.node.path}: {extension}, "
            + (
                "this deploy may buy it"
                if plan.extension_approved
                else f"not bought by this deploy (-c extend={getattr(plan, 'config_name', plan.plan_name)})"
            )
        )
    return (
        f"  plan {plan.plan_name}",
        plan.instance_type,
        f"{plan.instance_count} reserved",
        "",
        "",
        "",
        "",
        "",
        "",
        f"{plan.plan_name} ({plan.mode}), {fee}",
    )


def _plan_cell(plan: object | None) -> str:
    if plan is None:
        return "none (on-demand)"
    return f"{getattr(plan, 'plan_name', '?')} ({getattr(plan, 'mode', '?')})"


def _plan_note(plan: object) -> str:
    spec = getattr(plan, "spec", None)
    name = getattr(plan, "plan_name", "?")
    config_name = getattr(plan, "config_name", name)  # what -c purchase= names
    if spec is None:
        return f"runs only on capacity plan {name}"
    when = (
        "on on-demand capacity while the plan is not Active, on the plan once a deploy sees it Active"
        if spec.when_not_active == "on_demand"
        else "no instances outside the plan's dates (the deploy fails fast while the plan is not Active)"
    )
    if getattr(plan, "mode", None) == "reserve":
        cap = spec.max_upfront_fee_usd
        consent = (
            "this deploy may buy it"
            if getattr(plan, "purchase_approved", False)
            else f"bought only by a deploy with -c purchase={config_name}"
        )
        shown = config_name if config_name == name else f"{config_name} (TrainingPlanName {name})"
        return (
            f"reserves capacity plan {shown}: {spec.purchase_summary()}, prepaid up to USD {cap} and never refunded "
            f"({consent}); {when}"
        )
    return (
        f"runs on existing capacity plan {name} ({spec.instance_type} x {spec.instance_count}, already paid); "
        f"its dates are the plan's (DescribeTrainingPlan); {when}"
    )
