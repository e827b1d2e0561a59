"""The cost model's rules for money that holds up: an unpriced pool type makes its line unknown, EAGLE jobs are
never priced as Training, runs never overlap, a monthly budget is compared with 744 hours, and a budget is never
silently unchecked (a large accelerator-instance-hour ceiling needs one; unpriced lines are named beside it)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from aws_cdk import App, Stack
from sagemaker_llm_cdk import ConfigurationError, InstanceScaling, parse_config
from sagemaker_llm_cdk.operations import cost_model
from sagemaker_llm_cdk.operations.budget import CostBudget
from sagemaker_llm_cdk.operations.cost import cost_ceiling_table
from sagemaker_llm_cdk.operations.cost_model import (
    EAGLE_JOB_PRICE,
    accelerator_hours,
    config_cost_model,
    endpoint_line,
    is_accelerated,
    price_source,
    runs_in,
    totals,
)
from sagemaker_llm_cdk.operations.pricing import PriceTable
from sagemaker_llm_cdk.settings.endpoint import EndpointOptions

from .test_cost_ceiling import endpoint_with_model

pytestmark = pytest.mark.synth


def config(max_instances: int = 2, **extra: Any) -> dict:
    return {
        "target": {"region": "us-east-1"},
        "endpoints": [
            {
                "name": "Chat",
                "instance_type": "ml.p5e.48xlarge",
                "scaling": {"min_instances": 0, "max_instances": max_instances},
                "models": [{"name": "qwen3-32b", "model_data_s3_uri": "s3://my-weights/qwen3-32b/", "accelerators": 2}],
            }
        ],
        **extra,
    }


@pytest.fixture
def priced(monkeypatch: pytest.MonkeyPatch) -> None:
    """ml.p5e.48xlarge at a made-up USD 1 per hour (Hosting and Training): the USD rules never fire."""
    cell = {"usd_per_hour": "1", "source": "https://example.com/test", "read": "2026-12-01"}
    table = PriceTable.from_json(
        {
            "read": "2026-12-01",
            "usages": {
                u: {"what": u, "prices": {"ml.p5e.48xlarge": {"us-east-1": cell}}} for u in ("Hosting", "Training")
            },
        }
    )
    monkeypatch.setattr(cost_model, "shipped_table", lambda: table)


# ----------------------------------------------------------------------- pools
def pooled() -> EndpointOptions:
    return EndpointOptions(
        instance_type="ml.p5e.48xlarge",
        scaling=InstanceScaling(min_instances=0, max_instances=1),
        instance_pools=(
            {"instance_type": "ml.p5e.48xlarge", "priority": 1},
            {"instance_type": "ml.p5.48xlarge", "priority": 2},
        ),
    )


def test_a_pool_whose_priority_1_type_is_unpriced_is_unknown_not_the_cheaper_type_s_price():
    lookup = price_source({"ml.p5.48xlarge": Decimal("40")})  # only the fallback type is priced
    line = endpoint_line("endpoints[0]", "Chat", pooled(), None, "us-east-1", lookup)
    assert line.ceiling_usd is None and line.price is not None and line.price.amount is None
    assert "no price for ml.p5e.48xlarge" in line.price_label()
    assert totals([line]).ceiling_label() == "unknown (prices unknown for endpoints[0])"


def test_a_fully_priced_pool_is_priced_at_its_highest():
    lookup = price_source({"ml.p5.48xlarge": Decimal("40"), "ml.p5e.48xlarge": Decimal("50")})
    line = endpoint_line("endpoints[0]", "Chat", pooled(), None, "us-east-1", lookup)
    assert line.ceiling_usd == Decimal("36000.00")  # 720 h x USD 50


# ----------------------------------------------------------------------- EAGLE jobs and runs
def test_eagle_jobs_are_unknown_with_aws_s_words_never_a_training_price():
    eagle = {"schedule": "rate(7 days)", "dataset": {"source": "capture", "min_new_records": 100}}
    body = config(max_instances=1)
    body["endpoints"][0]["models"][0].update(eagle=eagle, architecture="Qwen3ForCausalLM")
    lines = config_cost_model(parse_config(body), prices={"ml.p5e.48xlarge": Decimal("50")})
    (line,) = [x for x in lines if x.kind == "eagle"]
    assert line.ceiling_usd is None and line.ceiling_hours == 120
    assert line.price_label() == EAGLE_JOB_PRICE
    assert EAGLE_JOB_PRICE.startswith("unknown (AWS: no additional cost for speculative decoding jobs beyond the ")
    assert "docs.aws.amazon.com/sagemaker/latest/dg/model-optimize-create-job.html" in EAGLE_JOB_PRICE


@pytest.mark.parametrize(
    ("period", "schedule", "max_runtime_hours", "runs"),
    [
        (720, "rate(1 hour)", 24, 30),  # runs never overlap: at most 720 / 24
        (744, "rate(1 hour)", 24, 31),
        (720, "rate(7 days)", 24, 5),
        (744, "rate(7 days)", 24, 5),
        (720, "rate(30 minutes)", 1, 720),
        (720, "rate(1 day)", 48, 15),
    ],
)
def test_runs_are_capped_by_max_runtime_hours(period, schedule, max_runtime_hours, runs):
    assert runs_in(period, schedule, max_runtime_hours=max_runtime_hours)[0] == runs


def test_the_synth_note_and_the_model_count_the_same_runs():
    from types import SimpleNamespace

    from sagemaker_llm_cdk.operations.cost import _eagle_rows
    from sagemaker_llm_cdk.operations.cost_model import eagle_lines
    from sagemaker_llm_cdk.settings.eagle import EagleSettings

    settings = EagleSettings(schedule="rate(1 hour)", dataset={"source": "capture", "min_new_records": 10})
    (line,) = [x for x in eagle_lines("App/Eagle", "qwen", settings, "ml.p5e.48xlarge", "us-east-1", price_source({}))]
    loop = SimpleNamespace(
        settings=settings,
        node=SimpleNamespace(path="App/Eagle"),
        model_name="qwen",
        job_instance_type="ml.p5e.48xlarge",
    )
    notes: list[str] = []
    _eagle_rows(loop, notes, {"App/Eagle": line})
    assert line.runs == 30 and "30 runs in 720 h" in line.what
    assert "(30 runs counted in 30 days)" in notes[0]


# ----------------------------------------------------------------------- the budget rule
def test_a_large_accelerator_hour_ceiling_needs_a_budget_whatever_the_prices(priced):
    # 2 x 720 h = 1,440 GPU instance-hours at USD 1/h: USD 1,488 a month, far under the USD rule, still refused.
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "budget: got None; allowed: a budget: the on-demand ceiling holds 1440 accelerator-instance-hours per 720 "
            "hours (endpoints[0].scaling.max_instances: 1440 h of ml.p5e.48xlarge), above 1,000: such a config needs "
            "a budget whatever the prices (a price may be unknown or change); fix: declare budget: "
            "{max_usd_per_month: N, email: "
            "you@example.com} with N at least 1488, or lower max_instances"
        ),
    ) as raised:
        parse_config(config())
    assert [p.path for p in raised.value.problems] == ["budget"]


def test_a_large_accelerator_hour_ceiling_needs_a_budget_with_no_price_at_all():
    with pytest.raises(ConfigurationError, match=r"budget: got None; allowed: a budget: .* 1440 accelerator-instance"):
        parse_config(config())  # the shipped table has no figure: unknown prices never leave it unbudgeted


def test_under_the_hour_line_no_budget_is_needed():
    loaded = parse_config(config(max_instances=1))  # 720 accelerator-instance-hours
    assert loaded.budget is None
    assert accelerator_hours(config_cost_model(loaded))[0] == 720


def test_a_declared_budget_satisfies_the_hour_rule(priced):
    loaded = parse_config(config(budget={"max_usd_per_month": 1488, "email": "ops@example.com"}))
    assert loaded.budget is not None and loaded.budget.max_usd_per_month == 1488


@pytest.mark.parametrize(
    ("instance_type", "accelerated"),
    [
        ("ml.p5e.48xlarge", True),
        ("ml.g6e.12xlarge", True),
        ("ml.g4dn.xlarge", True),
        ("ml.inf2.48xlarge", True),
        ("ml.trn1.32xlarge", True),
        ("ml.m5.xlarge", False),
        ("ml.c7i.large", False),
        (None, False),
    ],
)
def test_accelerated_instance_types(instance_type, accelerated):
    assert is_accelerated(instance_type) is accelerated


# ----------------------------------------------------------------------- the synth's budget lines
def test_a_budget_over_an_unpriced_ceiling_warns_naming_the_lines():
    stack = Stack(App(), "Unpriced")
    endpoint_with_model(
        stack, instance_type="ml.p5e.48xlarge", scaling=InstanceScaling(min_instances=0, max_instances=2)
    )
    CostBudget(stack, "Budget", max_usd_per_month=1, emails=["ops@example.com"])
    table = cost_ceiling_table(stack)  # the shipped table has no figure for ml.p5e.48xlarge
    (warning,) = [line for line in table.splitlines() if line.startswith("WARNING: the budget")]
    assert warning.startswith("WARNING: the budget does not check these unpriced lines of the ceiling: Unpriced/Chat (")
    assert "Budget compared with the ceiling of the longest month (744 h, not the table's 720 h): unknown" in table


def test_a_budget_over_a_priced_ceiling_compares_744_hours_and_does_not_warn():
    stack = Stack(App(), "Priced")
    endpoint_with_model(stack, scaling=InstanceScaling(min_instances=0, max_instances=1))
    CostBudget(stack, "Budget", max_usd_per_month=10_000, emails=["ops@example.com"])
    table = cost_ceiling_table(stack, prices={"ml.g6e.12xlarge": Decimal("10")})
    assert "Budget compared with the ceiling of the longest month (744 h, not the table's 720 h): USD 7,440.00" in table
    assert "WARNING" not in table
    assert "Total per 30 days: floor USD 0.00, ceiling USD 7,200.00 (on demand)" in table
