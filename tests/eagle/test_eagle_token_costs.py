"""The record function may read on-demand prices (pricing:GetProducts, acknowledged on '*') and gets the shipped
table's date; the EAGLE dashboard rows plot USD per million output tokens, base vs EAGLE."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk.assertions import Template
from sagemaker_llm_cdk.operations import dashboard, monitoring_metrics
from sagemaker_llm_cdk.operations.pricing import shipped_table
from sagemaker_llm_cdk.settings.eagle import EagleSettings
from support.eagle import build, lid, render

pytestmark = pytest.mark.synth
EXAMPLES = Path(__file__).resolve().parents[2] / "config" / "examples"


@pytest.fixture(scope="module")
def built():
    return build(settings=EagleSettings())


def _statements(built: Any, role_id: str) -> list[dict[str, Any]]:
    found = []
    for policy in built.template.find_resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            found.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return found


def test_record_role_may_read_prices_and_nothing_else_on_star(built):
    role_id = lid(built.stack, built.eagle.record_function.role)
    statements = _statements(built, role_id)
    pricing = [s for s in statements if s.get("Sid") == "ReadOnDemandPrices"]
    assert pricing == [
        {"Sid": "ReadOnDemandPrices", "Effect": "Allow", "Action": "pricing:GetProducts", "Resource": "*"}
    ]
    on_star = [s for s in statements if s["Resource"] == "*" and "xray:PutTraceSegments" not in s["Action"]]
    assert on_star == pricing  # besides Lambda's X-Ray tracing
    other_roles = [
        s
        for rid in built.template.find_resources("AWS::IAM::Role")
        if rid != role_id
        for s in _statements(built, rid)
        if "pricing:GetProducts" in json.dumps(s)
    ]
    assert other_roles == []


def test_record_function_asks_the_price_list_and_carries_the_table_date(built):
    function = built.resources[lid(built.stack, built.eagle.record_function)]
    env = function["Properties"]["Environment"]["Variables"]
    assert env["PRICE_LIST_LOOKUP"] == "1"
    assert env["SHIPPED_PRICE_DATE"] == shipped_table().read.isoformat()
    assert "SHIPPED_HOURLY_USD" not in env  # an environment-agnostic stack names no region to read a figure for
    start = built.resources[lid(built.stack, built.eagle.start_function)]
    assert "PRICE_LIST_LOOKUP" not in start["Properties"]["Environment"]["Variables"]


def test_dashboard_plots_usd_per_million_output_tokens_base_vs_eagle():
    stack = Stack(App(), "Board")
    board = dashboard.new_board(stack, "Board", "chat", "llm")

    def eagle_metric(name: str, statistic: str, period: Any) -> cloudwatch.Metric:
        return monitoring_metrics.eagle_metric("SageMakerLlm", {"ModelName": "qwen"}, name, statistic, period)

    dashboard.eagle_rows(board, "qwen", eagle_metric)
    (body,) = (
        r["Properties"]["DashboardBody"]
        for r in Template.from_stack(stack).find_resources("AWS::CloudWatch::Dashboard").values()
    )
    widgets = json.loads(render(body))["widgets"]
    (widget,) = [w for w in widgets if "USD per million output tokens" in w.get("properties", {}).get("title", "")]
    lines = widget["properties"]["metrics"]
    assert [(line[0], line[1], line[2], line[3]) for line in lines] == [
        ("SageMakerLlm", "EagleBaseUsdPerMillionOutputTokens", "ModelName", "qwen"),
        ("SageMakerLlm", "EagleUsdPerMillionOutputTokens", "ModelName", "qwen"),
    ]
    assert [line[-1]["label"] for line in lines] == ["base model (no EAGLE)", "trained EAGLE head"]
    assert widget["properties"]["yAxis"]["left"]["label"] == "USD / 1M output tokens"


def _record_environment(outdir: Any, config: str) -> dict[str, Any]:
    from tools.assemblies import config_data, synth_config

    path = EXAMPLES / config
    synth_config(config_data(path), path.parent, outdir)
    body = json.loads((outdir / "SageMakerLlm.template.json").read_text())
    (variables,) = [
        r["Properties"]["Environment"]["Variables"]
        for logical_id, r in body["Resources"].items()
        if r["Type"] == "AWS::Lambda::Function" and "EagleRecordFunction" in logical_id
    ]
    return dict(variables)


def test_a_plan_bought_by_the_app_prices_the_runs_at_its_cap_known_at_synth(tmp_path):
    """config/examples/reserved-capacity.yaml buys chat-p5e-2027q1 (ml.p5e.48xlarge, the job's type too)."""
    from sagemaker_llm_cdk import load_config

    env = _record_environment(tmp_path, "reserved-capacity.yaml")
    config = load_config(EXAMPLES / "reserved-capacity.yaml")
    (plan,) = config.capacity_plans
    assert env["CAPACITY_PLAN_BOUND"] == "1"
    assert env["CAPACITY_PLAN_MAX_UPFRONT_FEE_USD"] == format(plan.max_upfront_fee_usd, "f")
    assert env["CAPACITY_PLAN_INSTANCE_HOURS"] == str(plan.duration_days * 24 * plan.instance_count)
    assert "SageMakerLlmCapacity" not in json.dumps(env), "nothing is read from the capacity stack at deploy time"


def test_an_on_demand_endpoint_says_nothing_of_plans(built):
    env = built.resources[lid(built.stack, built.eagle.record_function)]["Properties"]["Environment"]["Variables"]
    assert not [k for k in env if k.startswith("CAPACITY_PLAN")]
