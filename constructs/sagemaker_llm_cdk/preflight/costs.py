"""Preflight cost lines: the cost model (``operations.cost_model``) of the config, one info line per cost line.

Priced with the Price List API when live (``ctx.prices``), else from the shipped, dated price table: the same
floor and ceiling per 30 days the synth's cost table shows, and the table's age.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..operations.cost_model import config_cost_model, totals, usd
from ..operations.pricing import PriceTable, shipped_table
from .context import PreflightContext
from .findings import Finding, info

_CHECK = {"endpoint": "cost.endpoint", "eagle": "cost.eagle-job", "benchmark": "cost.benchmark", "plan": "cost.plan"}


# ==================================================================== costs
def cost_findings(ctx: PreflightContext) -> Iterator[Finding]:
    """One info line per endpoint, EAGLE loop, benchmark and capacity plan (floor and ceiling USD per 30 days,
    on-demand and plan-covered hours, prepaid fee), then the totals."""
    prices = ctx.prices if ctx.prices is not None else shipped_table()
    lines = config_cost_model(ctx.config, prices=prices, region=ctx.region)
    for line in lines:
        if line.kind == "plan":
            yield info(_CHECK[line.kind], f"{line.what}: {line.prepaid_note}", subject=line.subject)
            continue
        hours = f"{line.floor_hours:f}-{line.ceiling_hours:f} on-demand instance-hours" + (
            f", {line.plan_hours:f} on the plan" if line.plan_hours else ""
        )
        price = f" at {line.price.label()}" if line.price is not None else ""
        yield info(
            _CHECK[line.kind],
            f"{line.what}: {hours} per 30 days{price}: floor {usd(line.floor_usd)}, "
            f"ceiling {usd(line.ceiling_usd)}" + (f"; {line.note}" if line.note else ""),
            subject=line.subject,
        )
    total = totals(lines)
    budget = ctx.config.budget
    yield info(
        "cost.total",
        f"per 30 days: floor {total.floor_label()}, ceiling {total.ceiling_label()} on demand"
        + (f"; prepaid plan fees up to {usd(total.prepaid_usd)} (one-off)" if total.prepaid_usd else "")
        + (f"; budget USD {budget.max_usd_per_month:,}/month" if budget is not None else "")
        + (f"; {prices.age_line(ctx.now.date())}" if isinstance(prices, PriceTable) else ""),
        subject="budget" if budget is not None else "",
    )
