"""Preflight cost lines: the cost model (``operations.cost_model``) of the config, one info line per cost line.

Priced with the Price List API when live (``ctx.prices``), else from the shipped, dated price table: the same
floor and ceiling per 30 days the synth's cost table shows, and the table's age.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

from ..operations.cost_model import CostLine, CostTotals, ceiling_drivers, config_cost_model, totals, usd
from ..operations.pricing import PriceTable, shipped_table
from .context import PreflightContext
from .findings import Finding, blocker, info, warning

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
    if budget is not None:
        yield from _budget_findings(total, budget.max_usd_per_month, lines, live=not isinstance(prices, PriceTable))
    yield info(
        "cost.total",
        f"per 30 days: floor {total.floor_label()}, ceiling {total.ceiling_label()} on demand"
        + (f"; prepaid plan fees up to {usd(total.prepaid_usd)} (one-off)" if total.prepaid_usd else "")
        + (f"; budget USD {budget.max_usd_per_month:,}/month" if budget is not None else "")
        + (f"; {prices.age_line(ctx.now.date())}" if isinstance(prices, PriceTable) else ""),
        subject="budget" if budget is not None else "",
    )


def _budget_findings(total: CostTotals, limit: Any, lines: Sequence[CostLine], *, live: bool) -> Iterator[Finding]:
    """The ceiling against ``budget.max_usd_per_month``, priced as the lines are (the Price List API when live).

    The synth refuses a ceiling above the budget at the shipped table's prices; a live price can be higher, or
    known where the table has none, so preflight judges again with what it looked up: above the budget is a
    blocker (the deploy could spend more a month than the config accepts); a share the Price List API could not
    price is a warning."""
    source = "the Price List API's prices" if live else "the shipped price table"
    drivers = ", ".join(f"{line.subject} {usd(line.ceiling_usd)}" for line in ceiling_drivers(list(lines)))
    if total.ceiling_usd > Decimal(limit):
        yield blocker(
            "cost.budget",
            f"the monthly ceiling at {source} is {total.ceiling_label()}, above budget.max_usd_per_month "
            f"USD {Decimal(limit):,} (from {drivers})",
            "the endpoints and EAGLE runs could spend more in 30 days than the config accepts; the budget's alarm "
            "would only say so after the money is spent",
            "lower max_instances of the endpoints above or the EAGLE schedule / max_runtime_hours, or raise "
            "budget.max_usd_per_month to the ceiling",
            "budget.max_usd_per_month",
        )
    elif live and not total.ceiling_known:  # offline, the cost lines already say which price the table lacks
        yield warning(
            "cost.budget",
            f"the monthly ceiling at {source} is {total.ceiling_label()}: whether it stays within "
            f"budget.max_usd_per_month USD {Decimal(limit):,} is unknown",
            "a share of the ceiling has no price, so it is not in the sum the budget is compared with",
            "check the instance types' prices in the console (the Price List API had none), or set a lower "
            "max_instances so the known share leaves room",
            "budget.max_usd_per_month",
        )
