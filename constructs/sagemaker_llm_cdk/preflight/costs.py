"""Preflight cost lines: the most each endpoint and EAGLE run can cost, priced with the Price List API when live."""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Iterator

from ..operations.pricing import HOSTING, not_looked_up
from .context import HOURS_PER_30_DAYS, PreflightContext, eagle_jobs, endpoint_instance_types
from .findings import Finding, info


# ==================================================================== costs
def cost_findings(ctx: PreflightContext) -> Iterator[Finding]:
    """One info line per endpoint (most on-demand hours, price, plan fee) and per EAGLE job (hours per run)."""
    for path, endpoint in ctx.endpoints():
        bound = ctx.plan_of(endpoint)
        if bound is not None:
            _index, plan = bound
            fee = (f"prepaid up to USD {plan.max_upfront_fee_usd}, never refunded" if plan.effective_mode == "reserve"
                   else "already paid")
            yield info("cost.endpoint", f"runs only on plan {plan.plan_name} ({plan.instance_type} x "
                       f"{plan.instance_count}, {fee}); no on-demand instance-hours", subject=path)
            continue
        hours = endpoint.scaling.max_instances * HOURS_PER_30_DAYS
        prices = [_price(ctx, t) for t in endpoint_instance_types(endpoint)]
        known = [p for p in prices if p.known]
        price = max(known, key=lambda p: p.amount or Decimal(0)) if known else prices[0]
        floor = "scales to zero when idle" if endpoint.scaling.min_instances == 0 else (
            f"at least {endpoint.scaling.min_instances * HOURS_PER_30_DAYS} h")
        cost = (f"at {price.label()}: at most {price.times(hours)}" if price.known else f"price {price.label()}")
        yield info("cost.endpoint", f"at most {hours} on-demand instance-hours per 30 days of {price.instance_type} "
                   f"({floor}), {cost}", subject=path)
    for path, _endpoint, eagle, job_type in eagle_jobs(ctx):
        hours = eagle.max_instance_count * eagle.max_runtime_hours
        yield info("cost.eagle-job", f"each EAGLE run uses at most {hours} instance-hours of {job_type} "
                   f"({eagle.max_instance_count} x {eagle.max_runtime_hours} h, schedule {eagle.schedule}); "
                   "price not looked up (the Price List does not say which usage bills optimization jobs)", subject=path)


def _price(ctx: PreflightContext, instance_type: str) -> Any:
    if ctx.region is None:
        return not_looked_up(instance_type, "?", "no region")
    if ctx.prices is None:
        return not_looked_up(instance_type, ctx.region, "offline" if ctx.offline else "no credentials")
    return ctx.prices.hourly(instance_type, ctx.region, usage=HOSTING)
