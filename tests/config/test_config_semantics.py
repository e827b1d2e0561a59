"""Rules the README states about plans and jobs, checked on the config (one round, config paths)."""

from __future__ import annotations

from typing import Any

import pytest
from sagemaker_llm_cdk import ConfigurationError
from sagemaker_llm_cdk.config.loading import parse_config


def data(*, until: str = "2027-02-15T00:00:00Z", training_plan: str | None = None, **plan: Any) -> dict[str, Any]:
    eagle = {"job_instance_type": "ml.p5e.48xlarge", **({"training_plan": training_plan} if training_plan else {})}
    return {
        "stack_name": "Chat",
        "capacity_plans": [
            {
                "name": "chat-p5e",
                "instance_type": "ml.p5e.48xlarge",
                "instance_count": 4,
                "duration_days": 30,
                "start_after": "2027-01-01T00:00:00Z",
                "max_upfront_fee_usd": 100000,
                "extension": {"until": until, "max_upfront_fee_usd": 5000},
                **plan,
            }
        ],
        "endpoints": [
            {
                "name": "Chat",
                "instance_type": "ml.p5e.48xlarge",
                "capacity_plan": "chat-p5e",
                "models": [
                    {
                        "name": "qwen3-32b",
                        "model_data_s3_uri": "s3://my-weights/qwen3-32b/",
                        "architecture": "Qwen3ForCausalLM",
                        "eagle": eagle,
                    }
                ],
            }
        ],
    }


def test_an_extension_past_the_plans_window_is_accepted():
    config = parse_config(data(), source="chat.yaml")
    assert config.capacity_plans[0].extension is not None


@pytest.mark.parametrize("until", ["2027-01-31T00:00:00Z", "2027-01-20T00:00:00Z"], ids=["at the end", "before it"])
def test_an_extension_that_extends_nothing_is_refused(until):
    with pytest.raises(
        ConfigurationError,
        match=(
            r"chat.yaml:\n  - capacity_plans\[0\].extension.until: got '" + until + r"'; allowed: a time after the "
            r"plan's own window, which lasts at least until 2027-01-31T00:00:00Z \(start_after \+ duration_days\)"
        ),
    ):
        parse_config(data(until=until), source="chat.yaml")


def test_without_a_start_the_window_is_not_known_at_synth():
    raw = data(until="2027-01-02T00:00:00Z")
    del raw["capacity_plans"][0]["start_after"]
    assert parse_config(raw, source="chat.yaml").capacity_plans[0].extension is not None


@pytest.mark.parametrize(
    "training_plan",
    ["chat-p5e", "Chat-chat-p5e", "arn:aws:sagemaker:us-east-1:123456789012:training-plan/Chat-chat-p5e"],
    ids=["config name", "TrainingPlanName", "ARN"],
)
def test_an_endpoint_plan_given_to_an_eagle_job_is_refused(training_plan):
    with pytest.raises(
        ConfigurationError,
        match=(
            r"endpoints\[0\].models\[0\].eagle.training_plan: got '" + training_plan + r"'; allowed: a plan bought "
            r"for training jobs, not capacity_plans\[0\] \(bought for endpoints"
        ),
    ):
        parse_config(data(training_plan=training_plan), source="chat.yaml")


def test_a_job_plan_is_accepted_and_every_problem_comes_in_one_round():
    config = parse_config(data(training_plan="eagle-jobs-2027q1"), source="chat.yaml")
    assert config.endpoints[0].models[0].eagle.training_plan == "eagle-jobs-2027q1"
    with pytest.raises(ConfigurationError) as raised:
        parse_config(data(until="2027-01-02T00:00:00Z", training_plan="chat-p5e"), source="chat.yaml")
    assert "2 problem(s)" in str(raised.value)


def turn_log(retention: int, schedule: str) -> dict[str, Any]:
    return {
        "endpoints": [
            {
                "name": "Chat",
                "instance_type": "ml.g6e.12xlarge",
                "models": [
                    {
                        "name": "qwen3-8b",
                        "model_data_s3_uri": "s3://my-weights/qwen3-8b/",
                        "architecture": "Qwen3ForCausalLM",
                        "sessions": {"turn_log_retention_days": retention},
                        "eagle": {"schedule": schedule, "dataset": {"source": "front_door"}},
                    }
                ],
            }
        ]
    }


def test_logged_turns_must_outlive_the_eagle_interval():
    with pytest.raises(
        ConfigurationError,
        match=(
            r"endpoints\[0\].models\[0\].sessions.turn_log_retention_days: got 7; allowed: more days than "
            r"models\[0\].eagle.schedule \(rate\(7 days\), every 7 days\)"
        ),
    ):
        parse_config(turn_log(7, "rate(7 days)"), source="chat.yaml")
    assert parse_config(turn_log(30, "rate(7 days)"), source="chat.yaml").endpoints[0].models[0].sessions is not None
