"""USD per million output tokens of a run, for the base model and the trained EAGLE head, per concurrency level.

``usd_per_million = hourly_price * instance_count / (output_tokens_per_second * 3600) * 1e6``, where
``output_tokens_per_second`` is the aggregate output-token throughput the job's benchmark reports at that
concurrency (``job_results``: ``base_throughput`` / ``optimized_throughput`` of each ``per_concurrency`` row,
under ``throughput_metric``). Only output-token metrics count: a run benchmarked on total (input + output) or
unlabelled throughput gets no figure, with the reason.

The hourly price, in order: ``CAPACITY_PLAN_HOURLY_USD`` (a plan-bound endpoint's effective hourly rate, source
``capacity-plan``); for a plan bought by the app, ``CAPACITY_PLAN_MAX_UPFRONT_FEE_USD`` (its price cap) over
``CAPACITY_PLAN_INSTANCE_HOURS`` (source ``capacity-plan``, at most what an hour costs); the on-demand Hosting
price from the Price List API (``pricing:GetProducts`` in the partition's Price List region, source
``price-list-api <effective date>``), asked only when ``PRICE_LIST_LOOKUP`` is ``1`` (the construct sets it where
it grants the action); the figure shipped with the function (``SHIPPED_HOURLY_USD``, read from the library's
``prices.json`` at synth, source ``shipped-table <date>``). Any failure of the API (access denied, throttling, no
product) falls back to the shipped figure with the reason.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from job_errors import ConfigurationError
from job_results import THROUGHPUT_KEYS

SERVICE_CODE = "AmazonSageMaker"
PRICE_LIST_REGION = {"aws": "us-east-1", "aws-cn": "cn-northwest-1"}
"""Where the Price List API answers, per partition (GovCloud has no endpoint of its own)."""
OUTPUT_METRICS = frozenset(key for key in THROUGHPUT_KEYS if key.startswith("output_"))
"""The ``job_results.THROUGHPUT_KEYS`` that are output tokens per second (not total or unlabelled throughput)."""


def partition_of(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def filters(instance_type: str, region: str) -> list[dict[str, str]]:
    """GetProducts filters for one instance type's real-time inference (Hosting) price in a region itself."""
    wanted = {
        "productFamily": "ML Instance",
        "locationType": "AWS Region",
        "regionCode": region,
        "instanceName": instance_type,
        "platoinstancetype": "Hosting",
    }
    return [{"Type": "TERM_MATCH", "Field": name, "Value": value} for name, value in wanted.items()]


def parse_price(price_list: list[Any]) -> tuple[float, str] | str:
    """(USD per hour, effective date) of the one hourly on-demand USD price in a PriceList, or why there is none."""
    found: set[tuple[float, str]] = set()
    for item in price_list:
        try:
            product = json.loads(item) if isinstance(item, str) else item
        except ValueError:
            continue
        for term in ((product.get("terms") or {}).get("OnDemand") or {}).values():
            for dimension in (term.get("priceDimensions") or {}).values():
                text = (dimension.get("pricePerUnit") or {}).get("USD")
                if str(dimension.get("unit", "")).lower() in ("hrs", "hour", "hours") and text:
                    amount = float(text)
                    if amount > 0:
                        found.add((amount, str(term.get("effectiveDate", ""))[:10] or "undated"))
    if not found:
        return "no hourly on-demand USD price listed"
    if len({amount for amount, _ in found}) > 1:
        return f"{len(found)} listed prices differ ({', '.join(f'USD {a:g}' for a, _ in sorted(found))}); none taken"
    return max(found, key=lambda item: item[1])


def hourly_price(client_for: Any, instance_type: str, region: str, env: Mapping[str, str]) -> dict[str, Any]:
    """``{"usd_per_hour", "source", "note"}``: the endpoint instance's hourly price and where it came from
    (``usd_per_hour`` None: unknown, with the reason)."""
    plan = _rate(env, "CAPACITY_PLAN_HOURLY_USD")
    if plan is not None:
        return {"usd_per_hour": plan, "source": "capacity-plan", "note": "the plan's effective hourly rate"}
    bought = _plan_rate(env)
    if bought is not None:
        return {
            "usd_per_hour": bought,
            "source": "capacity-plan",
            "note": "at most: the plan's price cap over its instance-hours (the fee it was bought for may be lower)",
        }
    api_region = PRICE_LIST_REGION.get(partition_of(region))
    reason = f"no Price List API serves partition {partition_of(region)}"
    if (env.get("PRICE_LIST_LOOKUP") or "").strip() != "1":
        reason, api_region = "PRICE_LIST_LOOKUP is not 1 (the function is not allowed pricing:GetProducts)", None
    if api_region is not None:
        try:
            from botocore.exceptions import BotoCoreError, ClientError

            response = client_for(api_region).get_products(
                ServiceCode=SERVICE_CODE, Filters=filters(instance_type, region), FormatVersion="aws_v1", MaxResults=100
            )
            found = parse_price(response.get("PriceList", []))
            if not isinstance(found, str):
                return {"usd_per_hour": found[0], "source": f"price-list-api {found[1]}", "note": "on-demand Hosting"}
            reason = f"GetProducts: {found} for {instance_type} in {region}"
        except (ClientError, BotoCoreError) as error:
            code = getattr(error, "response", {}).get("Error", {}).get("Code") or type(error).__name__
            reason = f"GetProducts failed: {code}"
    shipped = _rate(env, "SHIPPED_HOURLY_USD")
    date = (env.get("SHIPPED_PRICE_DATE") or "").strip() or "undated"
    if shipped is not None:
        return {"usd_per_hour": shipped, "source": f"shipped-table {date}", "note": f"fallback: {reason}"}
    return {"usd_per_hour": None, "source": f"shipped-table {date}", "note": f"unknown: {reason}; no shipped figure"}


def _plan_rate(env: Mapping[str, str]) -> float | None:
    """The most an instance-hour of a plan the app buys costs: ``CAPACITY_PLAN_MAX_UPFRONT_FEE_USD`` (its price cap)
    over ``CAPACITY_PLAN_INSTANCE_HOURS`` (days x 24 x instances); None when the function is not told of one. A
    value that is not a number > 0 is the deployment's error."""
    cap = _rate(env, "CAPACITY_PLAN_MAX_UPFRONT_FEE_USD", unit="USD, the plan's price cap")
    hours_raw = (env.get("CAPACITY_PLAN_INSTANCE_HOURS") or "").strip()
    if cap is None and not hours_raw:
        return None
    if cap is None or not hours_raw.isdigit() or int(hours_raw) <= 0:
        raise ConfigurationError(
            "invalid function configuration: CAPACITY_PLAN_MAX_UPFRONT_FEE_USD and CAPACITY_PLAN_INSTANCE_HOURS go "
            f"together, the hours a whole number > 0 (got {hours_raw!r}); set both or neither"
        )
    return cap / int(hours_raw)


def _rate(env: Mapping[str, str], name: str, *, unit: str = "USD per instance-hour") -> float | None:
    """A USD setting (per hour unless ``unit`` says otherwise): None when unset; a ConfigurationError naming it when
    it is not a number > 0."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (0 < value < float("inf")):
        raise ConfigurationError(
            f"invalid function configuration: {name} {raw!r} must be {unit}, a number > 0 "
            f"(e.g. 12.5); set it to the hourly price or leave it unset"
        )
    return value


def per_million(usd_per_hour: float, instance_count: int, tokens_per_second: float) -> float:
    """USD per million output tokens at ``tokens_per_second`` aggregate output throughput."""
    return round(usd_per_hour * instance_count / (tokens_per_second * 3600) * 1e6, 4)


def token_costs(
    results: Any, price: dict[str, Any], *, instance_type: str, instance_count: int, plan_bound: bool = False
) -> dict[str, Any]:
    """The run record's ``usd_per_million_output_tokens``: the price used and, per concurrency level, base and
    trained EAGLE figures (None with ``note`` when the price or an output-token throughput is missing)."""
    cost: dict[str, Any] = {
        "instance_type": instance_type,
        "instance_count": instance_count,
        **price,
        "formula": "usd_per_hour * instance_count / (output_tokens_per_second * 3600) * 1e6",
        "per_concurrency": [],
        "base": None,
        "eagle": None,
    }
    if plan_bound and price["source"] != "capacity-plan":
        cost["note"] = f"{price['note']}; plan-bound endpoint priced on demand (the plan's hourly rate is not known)"
    metric = getattr(results, "throughput_metric", None)
    if results is None or getattr(results, "status", None) != "parsed":
        cost["note"] = f"{cost['note']}; no parsed benchmark results"
        return cost
    if metric not in OUTPUT_METRICS:
        cost["note"] = f"{cost['note']}; the benchmark's metric {metric!r} is not output tokens per second"
        return cost
    if price["usd_per_hour"] is None:
        return cost
    rate = price["usd_per_hour"]
    for level in results.per_concurrency:
        cost["per_concurrency"].append(
            {
                "concurrency": level["concurrency"],
                "base": per_million(rate, instance_count, level["base_throughput"]),
                "eagle": per_million(rate, instance_count, level["optimized_throughput"]),
            }
        )
    cost["base"] = per_million(rate, instance_count, results.base_throughput)
    cost["eagle"] = per_million(rate, instance_count, results.optimized_throughput)
    cost["headline_concurrency"] = results.concurrency
    return cost


def run_costs(client_for: Any, results: Any, *, instance_type: str, instance_count: int) -> dict[str, Any]:
    """``token_costs`` with the price looked up for the function's region (``AWS_REGION``)."""
    env = os.environ
    region = env.get("AWS_REGION", "us-east-1")
    price = hourly_price(client_for, instance_type, region, env)
    plan_bound = bool((env.get("CAPACITY_PLAN_BOUND") or "").strip())
    return token_costs(
        results, price, instance_type=instance_type, instance_count=instance_count, plan_bound=plan_bound
    )
