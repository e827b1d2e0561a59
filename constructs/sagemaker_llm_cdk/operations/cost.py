"""``cost_ceiling_table``: what each endpoint in an app can cost at most, printed at synth for reviewers.

Prices are not looked up here (they change and differ by region and agreement): each row gives
the quantities a price multiplies and says "not looked up", unless the caller passes on-demand
prices (``prices``: USD per instance-hour by instance type, e.g. from the AWS Price List API in a
preflight with credentials). Per endpoint: instance type x most instances, the most on-demand
instance-hours in 30 days (none when it runs only on a capacity plan), accelerators; per capacity
plan: what it holds and its prepaid fee (the cap, and whether this deploy may buy it); per EAGLE
loop: what one optimization run uses at most and how many runs 30 days hold.
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Mapping

from aws_cdk import Stack, Token
from constructs import IConstruct

from ..core.instances import accelerators_of

if TYPE_CHECKING:
    from ..hosting.endpoint import LlmEndpoint
    from .pricing import PriceLookup

HOURS_PER_30_DAYS = 24 * 30
NOT_LOOKED_UP = "not looked up"
_COLUMNS = ("Endpoint / model", "Instance type", "Instances", "Accelerators", "On-demand hours/30d", "Capacity plan",
            "Price (USD)")
_RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")


def cost_ceiling_table(app_or_stack: IConstruct, *,
                       prices: "Mapping[str, Decimal] | PriceLookup | None" = None) -> str:
    """A plain-text table of every ``LlmEndpoint``, ``CapacityPlan`` and EAGLE loop under ``app_or_stack``.

    One line per endpoint (instance type, min-max instances, accelerators, most on-demand
    instance-hours in 30 days, capacity plan, price), one per model (copies x accelerators), one
    per EAGLE loop (the job's instance type x count, hours per run, runs per 30 days), one per
    capacity plan (instances reserved, prepaid fee cap), then notes. Call it from ``app.py`` after
    the stacks are built and print it.

    :param prices: on-demand USD per instance-hour by instance type, or a ``pricing.PriceList``
        (which calls the AWS Price List API) for the last section's hourly prices. Default: none;
        the price column and section say "not looked up" (``make preflight`` with credentials looks
        them up).
    """
    from ..capacity.capacity_plan import CapacityPlan
    from ..eagle.optimization import EagleOptimization
    from ..hosting.endpoint import LlmEndpoint

    everything = list(app_or_stack.node.find_all())
    endpoints = sorted((c for c in everything if isinstance(c, LlmEndpoint)), key=lambda e: e.node.path)
    plans = sorted((c for c in everything if isinstance(c, CapacityPlan)), key=lambda p: p.node.path)
    loops = [c for c in everything if isinstance(c, EagleOptimization)]
    title = ("Cost ceiling: the most each endpoint, capacity plan and EAGLE run can cost "
             f"(prices {'given' if prices else NOT_LOOKED_UP})")
    if not endpoints and not plans:
        return f"{title}\n(no LlmEndpoint in {app_or_stack.node.path or 'the app'})"
    rates = prices if isinstance(prices, Mapping) else None
    rows: list[tuple[str, ...]] = [_COLUMNS]
    notes: list[str] = []
    for endpoint in endpoints:
        rows.extend(_endpoint_rows(endpoint, notes, rates))
        rows.extend(_eagle_rows([loop for loop in loops if loop.component.endpoint is endpoint], notes, rates))
    for plan in plans:
        rows.append(_plan_row(plan, notes))
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = [title]
    for index, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    if notes:
        lines.append("Notes:")
        lines.extend(f"- {note}" for note in notes)
    lines.extend(_price_section(endpoints, None if isinstance(prices, Mapping) else prices))
    return "\n".join(lines)


def _price_section(endpoints: "list[LlmEndpoint]", prices: "PriceLookup | None") -> list[str]:
    from .pricing import price_lines

    pairs = []
    for endpoint in endpoints:
        region = Stack.of(endpoint).region
        pairs.append((endpoint.options.instance_type, None if Token.is_unresolved(region) else region))
    return ["On-demand prices (per instance-hour):", *(f"- {line}" for line in price_lines(pairs, prices))]


def _price(prices: Mapping[str, Decimal] | None, instance_type: str, hours: int | float) -> str:
    if not prices or instance_type not in prices:
        return NOT_LOOKED_UP
    rate = Decimal(prices[instance_type])
    return f"{rate}/h, at most {(rate * Decimal(str(hours))).quantize(Decimal('0.01'))}"


def _endpoint_rows(endpoint: "LlmEndpoint", notes: list[str],
                   prices: Mapping[str, Decimal] | None) -> list[tuple[str, ...]]:
    options = endpoint.options
    scaling = options.scaling
    path = endpoint.node.path
    per_instance = accelerators_of(options.instance_type)
    total = per_instance * scaling.max_instances if per_instance is not None else None
    accelerators = (f"{per_instance}/instance, {total} at most" if per_instance is not None
                    else "unknown for this type")
    plan = endpoint.capacity_plan
    hours = scaling.max_instances * HOURS_PER_30_DAYS
    if plan is None:
        on_demand, price = str(hours), _price(prices, options.instance_type, hours)
    elif plan.spec.when_not_active == "on_demand":
        on_demand = f"{hours} while plan not Active"
        price = _price(prices, options.instance_type, hours)
    else:
        on_demand, price = "0 (plan only)", "prepaid (plan)"
    rows: list[tuple[str, ...]] = [(
        path, options.instance_type, f"{scaling.min_instances}-{scaling.max_instances}", accelerators, on_demand,
        _plan_cell(plan), price,
    )]
    demand = 0
    for model in endpoint.models:
        copies = model.spec.copies
        per_copy = model.spec.accelerators
        demand += copies.max_copies * per_copy
        rows.append((f"  model {model.component_name}", "", f"copies {copies.min_copies}-{copies.max_copies}",
                     f"{per_copy}/copy, {copies.max_copies * per_copy} at most", "", "", ""))
    if total is not None and demand > total:
        notes.append(f"{path}: its models can ask for {demand} accelerators but {scaling.max_instances} x "
                     f"{options.instance_type} have {total}; copies beyond that are not placed (raise max_instances "
                     "or lower max_copies)")
    if scaling.min_instances == 0:
        notes.append(f"{path}: scales to zero instances when no copy runs (costs nothing while idle)")
    if plan is not None:
        notes.append(f"{path}: {_plan_note(plan)}")
    return rows


def runs_per_30_days(schedule: str | None) -> str:
    """How many scheduled runs 30 days hold: ``rate(7 days)`` -> ``4.3``; cron/at -> as scheduled."""
    if schedule is None:
        return "manual only"
    match = _RATE.fullmatch(schedule)
    if not match:
        return f"per {schedule}"
    every = int(match.group(1)) * {"minute": 1 / 60, "hour": 1, "day": 24}[match.group(2).rstrip("s")]
    return f"{HOURS_PER_30_DAYS / every:.1f}" if every else "?"


def _eagle_rows(loops: list[Any], notes: list[str], prices: Mapping[str, Decimal] | None) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for loop in sorted(loops, key=lambda x: x.node.path):
        settings = loop.settings
        hours = settings.max_runtime_hours * settings.max_instance_count
        runs = runs_per_30_days(settings.schedule)
        on_plan = settings.training_plan is not None
        rows.append((f"  eagle {loop.model_name}", loop.job_instance_type, f"{settings.max_instance_count} per run",
                     "", f"{hours} per run, {runs} runs/30d" if not on_plan else "0 (training plan)",
                     settings.training_plan or "none (on-demand)",
                     _price(prices, loop.job_instance_type, hours) + " per run" if not on_plan else "prepaid (plan)"))
        notes.append(f"{loop.node.path}: one optimization run uses at most {settings.max_runtime_hours} h x "
                     f"{settings.max_instance_count} {loop.job_instance_type} = {hours} instance-hours"
                     + (f" of training plan {settings.training_plan}" if on_plan else " on demand")
                     + f"; scheduled {settings.schedule or 'never (manual runs only)'} ({runs} runs in 30 days)")
    return rows


def _plan_row(plan: Any, notes: list[str]) -> tuple[str, ...]:
    spec = plan.spec
    if plan.mode == "reserve":
        state = "this deploy may BUY it" if plan.purchase_approved else "not bought by this deploy"
        fee = f"prepaid up to {spec.max_upfront_fee_usd} ({state})"
    else:
        fee = "already paid"
    extension = plan.extension_summary()
    if extension is not None:
        notes.append(f"{plan.node.path}: {extension}, "
                     + ("this deploy may buy it" if plan.extension_approved else
                        f"not bought by this deploy (-c extend={getattr(plan, 'config_name', plan.plan_name)})"))
    return (f"  plan {plan.plan_name}", plan.instance_type, f"{plan.instance_count} reserved", "", "",
            f"{plan.plan_name} ({plan.mode})", fee)


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
    when = ("on on-demand capacity while the plan is not Active, on the plan once a deploy sees it Active"
            if spec.when_not_active == "on_demand" else "no instances outside the plan's dates (the deploy fails "
            "fast while the plan is not Active)")
    if getattr(plan, "mode", None) == "reserve":
        cap = spec.max_upfront_fee_usd
        consent = ("this deploy may buy it" if getattr(plan, "purchase_approved", False)
                   else f"bought only by a deploy with -c purchase={config_name}")
        shown = config_name if config_name == name else f"{config_name} (TrainingPlanName {name})"
        return (f"reserves capacity plan {shown}: {spec.purchase_summary()}, prepaid up to USD {cap} and never refunded "
                f"({consent}); {when}")
    return (f"runs on existing capacity plan {name} ({spec.instance_type} x {spec.instance_count}, already paid); "
            f"its dates are the plan's (DescribeTrainingPlan); {when}")
