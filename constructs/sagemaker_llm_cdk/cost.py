"""``cost_ceiling_table``: what each endpoint in an app can run at most, printed at synth for reviewers.

Prices are not looked up (they change and differ by region and agreement); the table gives
the quantities a price multiplies: instance type x most instances, instance-hours per 30
days, accelerators the models can ask for, and any capacity plan (prepaid, not refundable).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Stack, Token
from constructs import IConstruct

from .model_component import accelerators_of

if TYPE_CHECKING:
    from .endpoint import LlmEndpoint
    from .pricing import PriceLookup

HOURS_PER_30_DAYS = 24 * 30
_COLUMNS = ("Endpoint / model", "Instance type", "Instances", "Accelerators", "Instance-hours/30d", "Capacity plan")


def cost_ceiling_table(app_or_stack: IConstruct, *, prices: "PriceLookup | None" = None) -> str:
    """A plain-text table of every ``LlmEndpoint`` under ``app_or_stack``: the most it can run.

    One line per endpoint (instance type, min-max instances, accelerators per instance and in
    total, most instance-hours in 30 days, capacity plan), one line per model (copies min-max x
    accelerators per copy), then notes: models that can ask for more accelerators than the
    endpoint has, endpoints that scale to zero, what a capacity plan buys. Call it from
    ``app.py`` after the stacks are built and print it.

    A last section gives each instance type's on-demand hourly price from ``prices`` (a
    ``pricing.PriceList``, which calls the AWS Price List API). Default: no lookup at synth, each
    price shown as "not looked up" (``make preflight`` with credentials looks them up).
    """
    from .endpoint import LlmEndpoint

    endpoints = sorted((c for c in app_or_stack.node.find_all() if isinstance(c, LlmEndpoint)),
                       key=lambda e: e.node.path)
    title = "Cost ceiling: the most each endpoint can run (prices not looked up)"
    if not endpoints:
        return f"{title}\n(no LlmEndpoint in {app_or_stack.node.path or 'the app'})"
    rows: list[tuple[str, ...]] = [_COLUMNS]
    notes: list[str] = []
    for endpoint in endpoints:
        rows.extend(_endpoint_rows(endpoint, notes))
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = [title]
    for index, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    if notes:
        lines.append("Notes:")
        lines.extend(f"- {note}" for note in notes)
    lines.extend(_price_section(endpoints, prices))
    return "\n".join(lines)


def _price_section(endpoints: "list[LlmEndpoint]", prices: "PriceLookup | None") -> list[str]:
    from .pricing import price_lines

    pairs = []
    for endpoint in endpoints:
        region = Stack.of(endpoint).region
        pairs.append((endpoint.options.instance_type, None if Token.is_unresolved(region) else region))
    return ["On-demand prices (per instance-hour):", *(f"- {line}" for line in price_lines(pairs, prices))]


def _endpoint_rows(endpoint: "LlmEndpoint", notes: list[str]) -> list[tuple[str, ...]]:
    options = endpoint.options
    scaling = options.scaling
    path = endpoint.node.path
    per_instance = accelerators_of(options.instance_type)
    total = per_instance * scaling.max_instances if per_instance is not None else None
    accelerators = (f"{per_instance}/instance, {total} at most" if per_instance is not None
                    else "unknown for this type")
    plan = endpoint.capacity_plan
    rows: list[tuple[str, ...]] = [(
        path,
        options.instance_type,
        f"{scaling.min_instances}-{scaling.max_instances}",
        accelerators,
        str(scaling.max_instances * HOURS_PER_30_DAYS),
        _plan_cell(plan),
    )]
    demand = 0
    for model in endpoint.models:
        copies = model.spec.copies
        per_copy = model.spec.accelerators
        demand += copies.max_copies * per_copy
        rows.append((f"  model {model.component_name}", "", f"copies {copies.min_copies}-{copies.max_copies}",
                     f"{per_copy}/copy, {copies.max_copies * per_copy} at most", "", ""))
    if total is not None and demand > total:
        notes.append(f"{path}: its models can ask for {demand} accelerators but {scaling.max_instances} x "
                     f"{options.instance_type} have {total}; copies beyond that are not placed (raise max_instances "
                     "or lower max_copies)")
    if scaling.min_instances == 0:
        notes.append(f"{path}: scales to zero instances when no copy runs (costs nothing while idle)")
    if plan is not None:
        notes.append(f"{path}: {_plan_note(plan)}")
    return rows


def _plan_cell(plan: object | None) -> str:
    if plan is None:
        return "none (on-demand)"
    return f"{getattr(plan, 'plan_name', '?')} ({getattr(plan, 'mode', '?')})"


def _plan_note(plan: object) -> str:
    spec = getattr(plan, "spec", None)
    name = getattr(plan, "plan_name", "?")
    if spec is None:
        return f"runs only on capacity plan {name}"
    if getattr(plan, "mode", None) == "reserve":
        cap = spec.max_upfront_fee_usd
        return (f"reserves capacity plan {name}: {spec.purchase_summary()}, prepaid up to USD {cap} and never refunded; "
                "the endpoint gets no instances outside the plan's dates")
    return (f"runs on existing capacity plan {name} ({spec.instance_type} x {spec.instance_count}, already paid); "
            "its dates are the plan's (DescribeTrainingPlan); no instances outside them")
