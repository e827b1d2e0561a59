"""Preflight judges the monthly ceiling against the budget with the prices it looked up.

The synth refuses a ceiling above ``budget.max_usd_per_month`` at the shipped table's prices; a live price can be
higher, or known where the table has none. ``cost_findings`` is called with a price lookup of given figures (what
the Price List API would answer), so each case's prices are the test's own.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from sagemaker_llm_cdk import parse_config
from sagemaker_llm_cdk.operations.cost_model import price_source
from sagemaker_llm_cdk.operations.pricing import PriceTable, shipped_table
from sagemaker_llm_cdk.preflight import PreflightContext, exit_code
from sagemaker_llm_cdk.preflight.costs import cost_findings

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def config(limit: int) -> Any:
    return parse_config(
        {
            "endpoints": [
                {
                    "name": "Chat",
                    "instance_type": "ml.g6e.12xlarge",
                    "scaling": {"min_instances": 1, "max_instances": 2},
                    "models": [
                        {"name": "qwen3-8b", "model_data_s3_uri": "s3://team-llm-weights/qwen3-8b/", "accelerators": 1}
                    ],
                }
            ],
            "budget": {"max_usd_per_month": limit, "notify_alarm_topic": True},
        },
        source="test.yaml",
    )


def shipped_table_with(figures: dict[str, Decimal]) -> PriceTable:
    """The shipped table with ``figures`` (USD per Hosting hour in us-east-1) written into it."""
    table = shipped_table()
    cells = {**table.cells, **{("Hosting", t, "us-east-1"): (usd, "test", "2026-12-01") for t, usd in figures.items()}}
    return dataclasses.replace(table, cells=cells)


def findings(limit: int, prices: Any) -> list[Any]:
    ctx = PreflightContext(
        config=config(limit), source="test.yaml", region="us-east-1", partition="aws", now=NOW, prices=prices
    )
    return [f for f in cost_findings(ctx) if f.check == "cost.budget"]


def test_a_live_price_that_puts_the_ceiling_above_the_budget_is_a_blocker():
    (found,) = findings(16_000, price_source({"ml.g6e.12xlarge": Decimal(20)}))
    assert found.severity == "blocker" and exit_code([found]) == 1
    assert found.what == (
        "the monthly ceiling at the Price List API's prices is USD 28,800.00, above budget.max_usd_per_month "
        "USD 16,000 (from endpoints[0] USD 28,800.00)"
    )
    assert "raise budget.max_usd_per_month" in found.fix and found.subject == "budget.max_usd_per_month"


@pytest.mark.parametrize("price", [Decimal(10), Decimal("11.1")], ids=["below", "exactly"])
def test_a_ceiling_within_the_budget_says_nothing(price):
    assert findings(15_984, price_source({"ml.g6e.12xlarge": price})) == []


def test_a_ceiling_with_no_price_is_a_warning():
    (found,) = findings(16_000, price_source({}))
    assert found.severity == "warning"
    assert "unknown" in found.what and "Price List API had none" in found.fix


def test_offline_the_shipped_table_is_judged_too_and_an_unknown_price_is_left_to_the_cost_lines():
    """The shipped table has no figure for this type in us-east-1: the cost lines say so, the budget line does not
    repeat it; a figure it has is judged as a live one is."""
    assert shipped_table().hourly("ml.g6e.12xlarge", "us-east-1").amount is None
    ctx = PreflightContext(config=config(16_000), source="test.yaml", region="us-east-1", partition="aws", now=NOW)
    assert [f for f in cost_findings(ctx) if f.check == "cost.budget"] == []
    (found,) = findings(16_000, shipped_table_with({"ml.g6e.12xlarge": Decimal(20)}))
    assert found.severity == "blocker" and "at the shipped price table" in found.what
