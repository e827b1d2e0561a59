"""The cost model: what each endpoint, EAGLE loop, benchmark and capacity plan costs per 30 days, in USD, as data.

One model for everyone who shows money: the synth's cost table (``cost.cost_ceiling_table``), the synth summary,
preflight's cost lines, the config's budget rule (``budget.max_usd_per_month``) and the change report. Pure
(no CDK): ``config_cost_model`` reads a validated ``AppConfig``; ``cost.cost_model`` reads a built app and calls
the same functions here.

Per line, per 30 days (720 hours):

* **floor**: the least capacity running around the clock (``min_instances``; 0 for a loop, which runs only when
  ``min_new_records`` new records arrived or on demand);
* **ceiling**: the most capacity running around the clock (``max_instances``; every scheduled run at its
  ``max_runtime_hours`` x ``max_instance_count``);
* on-demand instance-hours (billed at the table's price) beside plan-covered hours (prepaid: no hourly bill);
* the prepaid fee a capacity plan commits (its cap), one-off and never in the monthly figures.

A price nobody found is unknown: the line's USD reads "unknown", never 0 (0 hours cost USD 0 whatever the price).
An instance pool is priced at its highest price only when every type in it is priced; one unpriced type makes the
line unknown. EAGLE optimization jobs are unknown (``EAGLE_JOB_PRICE``): AWS bills no separate rate for
speculative decoding jobs and lists none, so no Training price stands in for them.

The budget rule (``config.loading.budget_problems``) compares the ceiling of the longest month
(``HOURS_PER_LONGEST_MONTH``, 744 hours) with ``budget.max_usd_per_month``: ``config_cost_model(config,
period_hours=HOURS_PER_LONGEST_MONTH)``. A config whose on-demand accelerator-instance-hour ceiling is above
``BUDGET_REQUIRED_ABOVE_ACCELERATOR_HOURS`` per 30 days must declare a budget whatever the prices say.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import TYPE_CHECKING, Any, Literal

from .pricing import HOSTING, JOB_USAGE, UNKNOWN, HourlyPrice, PriceLookup, PriceTable, not_looked_up, shipped_table

if TYPE_CHECKING:
    from ..settings.config import AppConfig

HOURS_PER_30_DAYS = 24 * 30
HOURS_PER_LONGEST_MONTH = 24 * 31
"""A calendar month has up to 744 hours: what a monthly budget (AWS Budgets, MONTHLY) is compared with."""
BUDGET_REQUIRED_ABOVE_USD = Decimal(10_000)
"""A config whose known monthly ceiling is above this (USD per month of 744 hours) must declare ``budget``."""
BUDGET_REQUIRED_ABOVE_ACCELERATOR_HOURS = 1_000
"""A config whose on-demand ceiling holds more accelerator-instance-hours than this per 30 days (endpoints at
``max_instances`` and EAGLE runs, on instances with GPUs or AWS accelerators) must declare ``budget``, whatever the
prices: an unknown or stale price never leaves such a config unbudgeted."""
EAGLE_JOB_PRICE_SOURCE = "https://docs.aws.amazon.com/sagemaker/latest/dg/model-optimize-create-job.html"
EAGLE_JOB_PRICE = (
    f"{UNKNOWN} (AWS: no additional cost for speculative decoding jobs beyond the instances they run on; the "
    f"instance rate is not listed separately: {EAGLE_JOB_PRICE_SOURCE})"
)
"""What an EAGLE optimization job's price reads: AWS's page says "You incur no additional costs for jobs that apply
speculative decoding" and names no Price List usage for the instances, so no figure is taken (never Training's)."""
_ACCELERATED = re.compile(r"ml\.(p|g|inf|trn|dl)\d")
CENT = Decimal("0.01")
_RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")

Kind = Literal["endpoint", "eagle", "benchmark", "plan"]


@dataclass(frozen=True)
class CostLine:
    """One priced thing: its on-demand hours per 30 days at the floor and the ceiling, plan-covered hours, price.

    ``subject`` is where it is declared (``endpoints[0]``, ``endpoints[0].models[0].eagle``, ``capacity_plans[0]``
    from a config; the construct path from an app); ``what`` says it in words for a log or a refusal.
    """

    kind: Kind
    subject: str
    what: str
    instance_type: str | None
    region: str | None
    usage: str
    price: HourlyPrice | None
    floor_hours: Decimal
    ceiling_hours: Decimal
    plan_hours: Decimal = Decimal(0)
    prepaid_usd: Decimal | None = None
    prepaid_note: str = ""
    note: str = ""
    runs: Decimal | None = None
    """EAGLE and benchmark lines: the runs counted in the line's period (``runs_in``); None for other lines."""

    def _usd(self, hours: Decimal) -> Decimal | None:
        if hours == 0:
            return Decimal(0)
        if self.price is None or self.price.amount is None:
            return None
        return (self.price.amount * hours).quantize(CENT)

    @property
    def floor_usd(self) -> Decimal | None:
        """USD per 30 days at the floor; None when the price is unknown and the hours are not 0."""
        return self._usd(self.floor_hours)

    @property
    def ceiling_usd(self) -> Decimal | None:
        """USD per 30 days at the ceiling; None when the price is unknown and the hours are not 0."""
        return self._usd(self.ceiling_hours)

    def price_label(self) -> str:
        if self.price is None:
            return "-"
        return self.price.label()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (Decimals as strings, None as null): for reports that compare two models."""

        def text(value: Decimal | None) -> str | None:
            return None if value is None else f"{value:f}"

        return {
            "kind": self.kind,
            "subject": self.subject,
            "what": self.what,
            "instance_type": self.instance_type,
            "region": self.region,
            "usage": self.usage,
            "usd_per_hour": text(self.price.amount) if self.price is not None else None,
            "price": self.price_label(),
            "floor_hours": text(self.floor_hours),
            "ceiling_hours": text(self.ceiling_hours),
            "plan_hours": text(self.plan_hours),
            "floor_usd": text(self.floor_usd),
            "ceiling_usd": text(self.ceiling_usd),
            "prepaid_usd": text(self.prepaid_usd),
            "prepaid_note": self.prepaid_note,
            "note": self.note,
        }


def usd(amount: Decimal | None, why: str = UNKNOWN) -> str:
    """``USD 1,234.56``, or ``why`` when the amount is not known (any size: a cap of 10**30 is shown, not refused)."""
    if amount is None:
        return why
    with localcontext() as context:
        context.prec = max(28, amount.adjusted() + 4)  # quantize needs every digit left of the cents
        return f"USD {amount.quantize(CENT):,}"


@dataclass(frozen=True)
class CostTotals:
    """Sums over lines: known USD, and the lines whose USD is unknown (their share is not in the sum)."""

    floor_usd: Decimal
    ceiling_usd: Decimal
    prepaid_usd: Decimal
    unknown_floor: tuple[CostLine, ...]
    unknown_ceiling: tuple[CostLine, ...]

    @property
    def ceiling_known(self) -> bool:
        return not self.unknown_ceiling

    def ceiling_label(self) -> str:
        """``USD 2,000.00`` or ``at least USD 2,000.00 + unknown (endpoints[0], ...)``."""
        if self.ceiling_known:
            return usd(self.ceiling_usd)
        if not self.ceiling_usd:
            return f"unknown (prices unknown for {', '.join(line.subject for line in self.unknown_ceiling)})"
        return (
            f"at least {usd(self.ceiling_usd)} + unknown ({', '.join(line.subject for line in self.unknown_ceiling)})"
        )

    def floor_label(self) -> str:
        if not self.unknown_floor:
            return usd(self.floor_usd)
        if not self.floor_usd:
            return f"unknown (prices unknown for {', '.join(line.subject for line in self.unknown_floor)})"
        return f"at least {usd(self.floor_usd)} + unknown ({', '.join(line.subject for line in self.unknown_floor)})"


def totals(lines: Sequence[CostLine]) -> CostTotals:
    floor = sum((line.floor_usd or Decimal(0) for line in lines), Decimal(0))
    ceiling = sum((line.ceiling_usd or Decimal(0) for line in lines), Decimal(0))
    prepaid = sum((line.prepaid_usd or Decimal(0) for line in lines), Decimal(0))
    return CostTotals(
        floor,
        ceiling,
        prepaid,
        tuple(line for line in lines if line.floor_usd is None),
        tuple(line for line in lines if line.ceiling_usd is None),
    )


def ceiling_drivers(lines: Sequence[CostLine], *, top: int = 3) -> list[CostLine]:
    """The lines with the highest known ceiling (what to lower first)."""
    priced = [line for line in lines if line.ceiling_usd]
    return sorted(priced, key=lambda line: line.ceiling_usd or Decimal(0), reverse=True)[:top]


# ----------------------------------------------------------------- prices
class _GivenPrices:
    """``{instance type: USD per hour}`` from a caller, as a ``PriceLookup`` (any region, any usage)."""

    def __init__(self, prices: Mapping[str, Decimal]) -> None:
        self._prices = prices

    def hourly(self, instance_type: str, region: str, *, usage: str = HOSTING) -> HourlyPrice:
        if instance_type not in self._prices:
            return HourlyPrice(instance_type, region, None, note=f"{UNKNOWN} (not among the prices given)")
        return HourlyPrice(instance_type, region, Decimal(self._prices[instance_type]), "USD", "given")


def price_source(prices: PriceLookup | Mapping[str, Decimal] | None) -> PriceLookup:
    """What the model prices with: the caller's lookup or mapping, else the shipped table."""
    if prices is None:
        return shipped_table()
    if isinstance(prices, Mapping):
        return _GivenPrices(prices)
    return prices


def price_of(prices: PriceLookup, instance_type: str, region: str | None, usage: str = HOSTING) -> HourlyPrice:
    """One instance-hour of ``instance_type``; with no region the table's highest (a ceiling), else unknown."""
    if region is None:
        if isinstance(prices, PriceTable):
            return prices.highest(instance_type, usage=usage)
        if isinstance(prices, _GivenPrices):
            return prices.hourly(instance_type, "any region", usage=usage)
        return not_looked_up(instance_type, "?", "the stack names no region")
    return prices.hourly(instance_type, region, usage=usage)


def _highest(prices: PriceLookup, instance_types: Sequence[str], region: str | None, usage: str) -> HourlyPrice:
    """The highest price of a pool, or unknown when any type of it is unpriced (the pool may run only that type)."""
    found = [price_of(prices, t, region, usage) for t in instance_types]
    unknown = [p for p in found if p.amount is None]
    if not unknown:
        return max(found, key=lambda p: p.amount or Decimal(0))
    if len(found) == 1:
        return found[0]
    return HourlyPrice(
        instance_types[0],
        region or "any region",
        None,
        note=f"{UNKNOWN} (pool price unknown: no price for "
        + "; ".join(f"{p.instance_type}: {p.label()}" for p in unknown)
        + ")",
    )


def is_accelerated(instance_type: str | None) -> bool:
    """Whether an instance type has GPUs or AWS accelerators (ml.p*, ml.g*, ml.inf*, ml.trn*, ml.dl*)."""
    return instance_type is not None and _ACCELERATED.match(instance_type) is not None


def accelerator_hours(lines: Sequence[CostLine]) -> tuple[Decimal, list[CostLine]]:
    """(on-demand accelerator-instance-hours at the ceiling, the lines holding them): endpoints and EAGLE runs on
    accelerated instances. Plan-covered hours are prepaid and not counted."""
    held = [
        line
        for line in lines
        if line.kind in ("endpoint", "eagle") and line.ceiling_hours and is_accelerated(line.instance_type)
    ]
    return sum((line.ceiling_hours for line in held), Decimal(0)), held


# ----------------------------------------------------------------- lines
def endpoint_line(
    subject: str,
    name: str,
    options: Any,
    plan: Any | None,
    region: str | None,
    prices: PriceLookup,
    *,
    period_hours: int = HOURS_PER_30_DAYS,
) -> CostLine:
    """An endpoint: ``options`` is an ``EndpointOptions`` (or ``EndpointSpec``), ``plan`` a ``CapacityPlanSpec``.

    On demand: floor ``min_instances`` and ceiling ``max_instances`` around the clock. On a plan that fails fast
    while not Active: no on-demand hours, the plan covers up to ``max_instances``. On a plan with
    ``when_not_active: on_demand``: floor 0 (the plan covers it), ceiling ``max_instances`` on demand (the plan
    not Active).
    """
    scaling = options.scaling
    types = tuple(getattr(options, "instance_types", None) or (options.instance_type,))
    on_plan_only = plan is not None and plan.when_not_active != "on_demand"
    price = None if on_plan_only else _highest(prices, types, region, HOSTING)  # no on-demand hour: nothing to price
    low, high = Decimal(scaling.min_instances * period_hours), Decimal(scaling.max_instances * period_hours)
    shape = f"{options.instance_type} x {scaling.min_instances}-{scaling.max_instances}"
    if len(types) > 1:
        shape += f" (pools {', '.join(types)}: priced at the highest)"
    if plan is None:
        return CostLine(
            "endpoint",
            subject,
            f"endpoint {name} ({shape}, on demand)",
            options.instance_type,
            region,
            HOSTING,
            price,
            low,
            high,
        )
    if plan.when_not_active == "on_demand":
        return CostLine(
            "endpoint",
            subject,
            f"endpoint {name} ({shape}, plan {plan.plan_name}, on demand while it is not Active)",
            options.instance_type,
            region,
            HOSTING,
            price,
            Decimal(0),
            high,
            high,
            note=f"plan {plan.plan_name} covers it while Active; on demand otherwise",
        )
    return CostLine(
        "endpoint",
        subject,
        f"endpoint {name} ({shape}, only on plan {plan.plan_name})",
        options.instance_type,
        region,
        HOSTING,
        price,
        Decimal(0),
        Decimal(0),
        high,
        note=f"runs only on plan {plan.plan_name}: no on-demand instance-hours",
    )


def runs_in(
    period_hours: int,
    schedule: str | None,
    *,
    records_check: str | None = None,
    max_runtime_hours: int = 24,
) -> tuple[Decimal, str]:
    """(most runs in ``period_hours``, how that was counted) of an EAGLE loop: the one run count everyone uses.

    Runs never overlap (a run starts only when none is in progress), so at most ``period_hours /
    max_runtime_hours`` runs, rounded up, start in a period. ``rate(...)``: the period / the rate, rounded up, and at
    most that. ``cron(...)`` or a ``records_check`` (a run starts whenever enough records arrived and none is in
    progress): one run after another. ``at(...)``: 1. No schedule and no check: 0 (runs started by hand are not
    counted).
    """
    back_to_back = Decimal(math.ceil(Decimal(period_hours) / max_runtime_hours))
    scheduled, how = Decimal(0), "manual runs only (not counted)"
    if schedule is not None:
        match = _RATE.fullmatch(schedule)
        if match:
            every = (
                int(match.group(1))
                * {"minute": Decimal(1) / 60, "hour": Decimal(1), "day": Decimal(24)}[match.group(2).rstrip("s")]
            )
            scheduled, how = Decimal(math.ceil(period_hours / every)), f"{schedule}"
            if scheduled > back_to_back:
                scheduled = back_to_back
                how = f"{schedule}, runs never overlap: at most one per {max_runtime_hours} h"
        elif schedule.startswith("at("):
            scheduled, how = Decimal(1), f"{schedule}: once"
        else:
            scheduled = back_to_back
            how = f"{schedule}: counted as one run after another"
    if records_check is not None and back_to_back > scheduled:
        scheduled = back_to_back
        how = f"records_check {records_check}: counted as one run after another"
    return scheduled, how


def runs_per_30_days(
    schedule: str | None, *, records_check: str | None = None, max_runtime_hours: int = 24
) -> tuple[Decimal, str]:
    """``runs_in(HOURS_PER_30_DAYS, ...)``: the runs the 30-day table counts."""
    return runs_in(HOURS_PER_30_DAYS, schedule, records_check=records_check, max_runtime_hours=max_runtime_hours)


def eagle_lines(
    subject: str,
    model: str,
    eagle: Any,
    job_type: str,
    region: str | None,
    prices: PriceLookup,
    *,
    period_hours: int = HOURS_PER_30_DAYS,
) -> list[CostLine]:
    """An EAGLE loop (``EagleSettings``): its optimization jobs and, when on, its benchmark jobs.

    Floor 0: a run starts only when ``min_new_records`` new records arrived (captured traffic) or on schedule and
    may end early. Ceiling: every counted run at ``max_runtime_hours`` x ``max_instance_count``; the job's
    price is unknown (``EAGLE_JOB_PRICE``: AWS lists no rate for speculative decoding jobs, and none is guessed); on a
    ``training_plan`` the hours are plan-covered. ``prices`` is not read for the job (one signature for callers).
    """
    runs, how = runs_in(
        period_hours,
        eagle.schedule,
        records_check=getattr(eagle.dataset, "records_check", None),
        max_runtime_hours=eagle.max_runtime_hours,
    )
    per_run = Decimal(eagle.max_runtime_hours * eagle.max_instance_count)
    hours = runs * per_run
    price = (
        HourlyPrice(job_type, region or "any region", None, note=EAGLE_JOB_PRICE)
        if hours and eagle.training_plan is None
        else None
    )
    trigger = (
        f"runs only when {eagle.dataset.min_new_records} new records arrived"
        if eagle.dataset.source in ("capture", "front_door")
        else f"trains on source {eagle.dataset.source}"
    )
    what = (
        f"EAGLE loop of {model} ({job_type} x {eagle.max_instance_count}, {eagle.max_runtime_hours} h a run at "
        f"most, {runs} runs in {period_hours} h: {how}; {trigger})"
    )
    if eagle.training_plan is not None:
        lines = [
            CostLine(
                "eagle",
                subject,
                what,
                job_type,
                region,
                JOB_USAGE,
                price,
                Decimal(0),
                Decimal(0),
                hours,
                note=f"on training plan {eagle.training_plan}: no on-demand instance-hours",
                runs=runs,
            )
        ]
    else:
        lines = [CostLine("eagle", subject, what, job_type, region, JOB_USAGE, price, Decimal(0), hours, runs=runs)]
    benchmark = getattr(eagle, "benchmark", None)
    if benchmark is not None and benchmark.enabled:
        job_hours = runs * 2 * benchmark.max_hours  # before and after each promotion, at most one per run
        lines.append(
            CostLine(
                "benchmark",
                f"{subject}.benchmark",
                f"benchmark jobs of {model} (2 a promotion, {benchmark.max_hours} h each at most)",
                None,
                region,
                "AI benchmark job",
                HourlyPrice(
                    "AI benchmark job",
                    region or "?",
                    None,
                    note=f"{UNKNOWN} (AWS's pricing does not list AI benchmark jobs)",
                ),
                Decimal(0),
                job_hours,
                note="the traffic it sends can scale the endpoint out: those instances are in the endpoint's ceiling",
                runs=runs,
            )
        )
    return lines


def plan_line(subject: str, spec: Any, region: str | None, *, may_buy: bool | None = None) -> CostLine:
    """A capacity plan (``CapacityPlanSpec``): its prepaid fee, one-off, never in the monthly figures.

    ``may_buy``: whether this deploy carries the consent (an app knows; a config does not: None).
    """
    if spec.effective_mode == "reserve":
        consent = "this deploy may buy it" if may_buy else f"bought only by a deploy with -c purchase={spec.name}"
        fee, note = (
            spec.max_upfront_fee_usd,
            f"prepaid up to {usd(spec.max_upfront_fee_usd)}, never refunded ({consent})",
        )
    else:
        fee, note = None, "already paid (its fee is not in the config)"
    return CostLine(
        "plan",
        subject,
        f"capacity plan {spec.plan_name} ({spec.instance_type} x {spec.instance_count})",
        spec.instance_type,
        region,
        HOSTING,
        None,
        Decimal(0),
        Decimal(0),
        prepaid_usd=fee,
        prepaid_note=note,
    )


def config_cost_model(
    config: AppConfig,
    *,
    prices: PriceLookup | Mapping[str, Decimal] | None = None,
    region: str | None = None,
    period_hours: int = HOURS_PER_30_DAYS,
) -> list[CostLine]:
    """Every cost line of a validated config, by config path: endpoints, their EAGLE loops and benchmarks, plans.

    :param region: where it deploys. Default: ``target.region`` (none: each price is the table's highest).
    :param period_hours: the hours the figures cover. Default: 30 days (720); the budget rule uses
        ``HOURS_PER_LONGEST_MONTH`` (744).
    """
    lookup = price_source(prices)
    region = region if region is not None else config.target.region
    plans = {plan.plan_name: plan for plan in config.capacity_plans}
    lines: list[CostLine] = []
    for e_index, endpoint in enumerate(config.endpoints):
        plan = plans.get(endpoint.capacity_plan) if endpoint.capacity_plan else None
        lines.append(
            endpoint_line(
                f"endpoints[{e_index}]", endpoint.name, endpoint, plan, region, lookup, period_hours=period_hours
            )
        )
        for m_index, model in enumerate(endpoint.models):
            if model.eagle is not None:
                lines.extend(
                    eagle_lines(
                        f"endpoints[{e_index}].models[{m_index}].eagle",
                        model.name,
                        model.eagle,
                        model.eagle.job_instance_type or endpoint.instance_type,
                        region,
                        lookup,
                        period_hours=period_hours,
                    )
                )
    for p_index, plan in enumerate(config.capacity_plans):
        lines.append(plan_line(f"capacity_plans[{p_index}]", plan, region))
    return lines
