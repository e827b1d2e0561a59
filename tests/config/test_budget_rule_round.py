"""The budget rule runs outside the config model (it needs the cost model) and still reports in the same round as
the model's own problems: on a config that partly fails, it reads the fields that passed."""

from __future__ import annotations

import pytest
from sagemaker_llm_cdk import ConfigurationError, parse_config
from sagemaker_llm_cdk.operations import cost_model
from sagemaker_llm_cdk.operations.pricing import PriceTable


@pytest.fixture
def priced(monkeypatch: pytest.MonkeyPatch) -> None:
    cell = {"usd_per_hour": "50", "source": "https://example.com/test", "read": "2026-12-01"}
    table = PriceTable.from_json(
        {
            "read": "2026-12-01",
            "usages": {
                u: {"what": u, "prices": {"ml.p5e.48xlarge": {"us-east-1": cell}}} for u in ("Hosting", "Training")
            },
        }
    )
    monkeypatch.setattr(cost_model, "shipped_table", lambda: table)


def config(**extra: object) -> dict:
    return {
        "target": {"region": "us-east-1"},
        "endpoints": [
            {
                "name": "Chat",
                "instance_type": "ml.p5e.48xlarge",
                "scaling": {"min_instances": 0, "max_instances": 2},
                "models": [{"name": "qwen3-32b", "model_data_s3_uri": "s3://my-weights/qwen3-32b/", "accelerators": 2}],
            }
        ],
        "budget": {"max_usd_per_month": 1000, "email": "ops@example.com"},
        **extra,
    }


def test_a_budget_below_the_ceiling_is_refused_alone(priced):
    with pytest.raises(ConfigurationError, match=r"budget\.max_usd_per_month: got 1000; allowed: at least") as raised:
        parse_config(config())
    assert [p.path for p in raised.value.problems] == ["budget.max_usd_per_month"]


def test_the_budget_problem_comes_with_another_field_s_in_one_round(priced):
    with pytest.raises(ConfigurationError) as raised:
        parse_config(config(removal="maybe"))
    paths = [p.path for p in raised.value.problems]
    assert "budget.max_usd_per_month" in paths and len(paths) == 2, paths


def test_a_budget_rule_reading_a_failed_field_is_skipped_not_a_crash(priced):
    broken = config()
    broken["endpoints"][0]["scaling"] = {"min_instances": 0, "max_instances": "many"}
    with pytest.raises(ConfigurationError) as raised:
        parse_config(broken)
    assert [p.path for p in raised.value.problems] == ["endpoints[0].scaling.max_instances"]
