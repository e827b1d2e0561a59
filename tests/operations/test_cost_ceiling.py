"""cost_ceiling_table: the most each endpoint can run, readable in a PR log."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from aws_cdk import App, Stack
from sagemaker_llm_cdk import CopyScaling, InstanceScaling, LlmEndpoint, ModelSpec
from sagemaker_llm_cdk.capacity.capacity_plan import CapacityPlan
from sagemaker_llm_cdk.operations.cost import cost_ceiling_table
from sagemaker_llm_cdk.settings.capacity import CapacityPlanSpec
from support.stacks import endpoint as support_endpoint

pytestmark = pytest.mark.synth


def endpoint_with_model(
    stack: Stack,
    id: str = "Chat",
    *,
    instance_type: str = "ml.g6e.12xlarge",
    scaling: InstanceScaling | None = None,
    copies: CopyScaling | None = None,
    accelerators: int = 1,
    **kwargs,
) -> LlmEndpoint:
    """An LlmEndpoint with one model (s3://my-bucket/model/)."""
    endpoint = support_endpoint(stack, id, instance_type=instance_type, scaling=scaling, **kwargs)
    endpoint.add_model(
        "Qwen",
        ModelSpec(
            name=f"{id.lower()}-qwen3-8b",
            model_data_s3_uri="s3://my-bucket/model/",
            accelerators=accelerators,
            copies=copies or CopyScaling(),
        ),
    )
    return endpoint


def row(table: str, starts: str) -> list[str]:
    (line,) = [line for line in table.splitlines() if line.startswith(starts)]
    return line.split()


@pytest.fixture(scope="module")
def app_table() -> str:
    app = App()
    first = Stack(app, "First")
    endpoint_with_model(
        first,
        scaling=InstanceScaling(min_instances=0, max_instances=3),
        copies=CopyScaling(min_copies=0, max_copies=8),
        accelerators=2,
    )
    second = Stack(app, "Second")
    endpoint_with_model(second, "Batch", instance_type="ml.g6e.2xlarge")
    return cost_ceiling_table(app)


def test_each_endpoint_has_a_row_with_type_range_accelerators_hours_and_usd(app_table):
    # The shipped table has no figure for these types: unknown per row, never 0; 0 hours (scaled to zero) cost USD 0.
    assert row(app_table, "First/Chat") == [
        "First/Chat",
        "ml.g6e.12xlarge",
        "0-3",
        "4/instance,",
        "12",
        "at",
        "most",
        "0-2160",
        "0",
        "unknown",
        "USD",
        "0.00",
        "unknown",
        "none",
        "(on-demand)",
    ]
    assert row(app_table, "Second/Batch") == [
        "Second/Batch",
        "ml.g6e.2xlarge",
        "1-1",
        "1/instance,",
        "1",
        "at",
        "most",
        "720",
        "0",
        "unknown",
        "unknown",
        "unknown",
        "none",
        "(on-demand)",
    ]
    assert (
        "Total per 30 days: floor unknown (prices unknown for Second/Batch), ceiling unknown (prices unknown for "
        "First/Chat, Second/Batch) (on demand)"
    ) in app_table


def test_each_model_has_its_copies_and_accelerators(app_table):
    assert row(app_table, "  model First-chat-qwen3-8b") == [
        "model",
        "First-chat-qwen3-8b",
        "copies",
        "0-8",
        "2/copy,",
        "16",
        "at",
        "most",
    ]


def test_header_and_rule_come_first(app_table):
    lines = app_table.splitlines()
    assert lines[0] == (
        "Cost per 30 days: floor (least capacity around the clock) and ceiling (most capacity around "
        "the clock), on demand, USD"
    )
    assert lines[1].split() == [
        "Endpoint",
        "/",
        "model",
        "Instance",
        "type",
        "Instances",
        "Accelerators",
        "On-demand",
        "h/30d",
        "Plan",
        "h/30d",
        "USD/h",
        "Floor",
        "USD/30d",
        "Ceiling",
        "USD/30d",
        "Capacity",
        "plan",
    ]
    assert set(lines[2].replace(" ", "")) == {"-"}


def test_notes_flag_overcommitted_models_and_scale_to_zero(app_table):
    assert (
        "- First/Chat: its models can ask for 16 accelerators but 3 x ml.g6e.12xlarge have 12; copies beyond that "
        "are not placed (raise max_instances or lower max_copies)"
    ) in app_table
    assert "- First/Chat: scales to zero instances when no copy runs" in app_table
    assert "Second/Batch:" not in app_table.split("Notes:")[1]


def test_endpoints_are_sorted_by_path_when_given_a_stack():
    stack = Stack(App(), "Only")
    endpoint_with_model(stack, "Zeta")
    endpoint_with_model(stack, "Alpha")
    table = cost_ceiling_table(stack)
    assert table.index("Only/Alpha") < table.index("Only/Zeta")
    assert "Notes:" not in table


def test_existing_capacity_plan_is_named_with_its_shape():
    stack = Stack(App(), "Plans")
    plan = CapacityPlan.from_plan_arn(
        stack,
        "Plan",
        plan_arn="arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5e-q1",
        instance_type="ml.p5e.48xlarge",
        instance_count=2,
    )
    endpoint_with_model(
        stack,
        instance_type="ml.p5e.48xlarge",
        capacity_plan=plan,
        scaling=InstanceScaling(min_instances=1, max_instances=2),
    )
    table = cost_ceiling_table(stack)
    # Only on the plan: no on-demand hours (USD 0 whatever the price), 1440 plan-covered hours.
    assert row(table, "Plans/Chat")[7:] == ["0", "1440", "-", "USD", "0.00", "USD", "0.00", "p5e-q1", "(existing)"]
    assert row(table, "  plan p5e-q1")[2:] == [
        "ml.p5e.48xlarge",
        "2",
        "reserved",
        "p5e-q1",
        "(existing),",
        "already",
        "paid",
    ]
    assert (
        "- Plans/Chat: runs on existing capacity plan p5e-q1 (ml.p5e.48xlarge x 2, already paid); its dates are the "
        "plan's (DescribeTrainingPlan); no instances outside the plan's dates"
    ) in table


@pytest.mark.parametrize(
    ("context", "state"),
    [({}, "not bought by this deploy"), ({"purchase": "chat-p5e-2026q1"}, "this deploy may BUY it")],
)
def test_reserved_capacity_plan_shows_dates_price_cap_and_whether_this_deploy_buys(context, state):
    app = App(context=context)
    plans, stack = Stack(app, "Capacity"), Stack(app, "Plans")
    plan = CapacityPlan(
        plans,
        "Plan",
        settings=CapacityPlanSpec(
            name="chat-p5e-2026q1",
            instance_type="ml.p5e.48xlarge",
            instance_count=2,
            duration_days=30,
            start_after=datetime(2026, 1, 15, tzinfo=UTC),
            max_upfront_fee_usd=Decimal("250000"),
            when_not_active="on_demand",
        ),
    )
    endpoint_with_model(
        stack,
        instance_type="ml.p5e.48xlarge",
        capacity_plan=plan,
        scaling=InstanceScaling(min_instances=1, max_instances=2),
    )
    table = cost_ceiling_table(app)
    # Plan-covered while Active (floor 0 on demand), on demand up to max_instances while it is not.
    assert row(table, "Plans/Chat")[7:12] == ["0-1440", "1440", "unknown", "USD", "0.00"]
    assert f"prepaid up to USD 250,000.00 ({state})" in table
    assert "prepaid plan fees: up to USD 250,000.00 (one-off, not in the monthly figures)" in table
    assert (
        "reserves capacity plan chat-p5e-2026q1 (TrainingPlanName Capacity-chat-p5e-2026q1): ml.p5e.48xlarge x 2 "
        "for 30 days starting at or after 2026-01-15T00:00:00Z, prepaid up to USD 250000 and never refunded"
    ) in table
    # The table names the plan SageMaker knows; the consent is the config name.
    assert row(table, "  plan Capacity-chat-p5e-2026q1")[2:6] == [
        "ml.p5e.48xlarge",
        "2",
        "reserved",
        "Capacity-chat-p5e-2026q1",
    ]
    if not context:
        assert "bought only by a deploy with -c purchase=chat-p5e-2026q1)" in table


def test_prices_when_given_multiply_the_hours():
    stack = Stack(App(), "Priced")
    endpoint_with_model(stack, scaling=InstanceScaling(min_instances=1, max_instances=2))
    table = cost_ceiling_table(stack, prices={"ml.g6e.12xlarge": Decimal("10.49")})
    assert row(table, "Priced/Chat")[7:14] == ["720-1440", "0", "10.49", "USD", "7,552.80", "USD", "15,105.60"]
    assert "Total per 30 days: floor USD 7,552.80, ceiling USD 15,105.60 (on demand)" in table
    assert "- ml.g6e.12xlarge Hosting in any region: USD 10.49/h (given)" in table


@pytest.mark.parametrize(
    ("schedule", "max_runtime_hours", "runs"),
    [
        ("rate(7 days)", 24, "5"),
        ("rate(1 day)", 24, "30"),
        ("rate(12 hours)", 24, "30"),  # runs never overlap: at most 720 / 24
        ("rate(1 hour)", 24, "30"),
        ("rate(12 hours)", 12, "60"),
        (None, 24, "manual only"),
        ("cron(0 3 ? * SUN *)", 24, "30"),  # counted as one run after another
    ],
)
def test_runs_per_30_days_is_the_model_s_count(schedule, max_runtime_hours, runs):
    from sagemaker_llm_cdk.operations.cost import runs_per_30_days
    from sagemaker_llm_cdk.operations.cost_model import runs_in

    assert runs_per_30_days(schedule, max_runtime_hours=max_runtime_hours) == runs
    if schedule is not None:
        assert f"{runs_in(720, schedule, max_runtime_hours=max_runtime_hours)[0]:f}" == runs


def test_no_endpoints_says_so():
    assert cost_ceiling_table(Stack(App(), "Empty")).endswith("(no LlmEndpoint in Empty)")


def test_the_table_says_how_old_the_price_table_is(app_table):
    from datetime import date

    from sagemaker_llm_cdk.operations.pricing import shipped_table

    read = shipped_table().read
    stack = Stack(App(), "Aged")
    endpoint_with_model(stack)
    table = cost_ceiling_table(stack, today=date.fromordinal(read.toordinal() + 45))
    (line,) = [x for x in table.splitlines() if x.startswith("Prices: ")]
    assert line.startswith(f"Prices: USD per instance-hour from the price table of {read} (45 days old), ")
    assert line.endswith("refresh with `make prices` (Price List API)")


def test_cost_model_gives_the_same_figures_as_data():
    from sagemaker_llm_cdk.operations.cost import cost_model
    from sagemaker_llm_cdk.operations.cost_model import totals

    app = App()
    stack = Stack(app, "Priced")
    endpoint_with_model(stack, scaling=InstanceScaling(min_instances=0, max_instances=2))
    (line,) = cost_model(app, prices={"ml.g6e.12xlarge": Decimal("10.49")})
    assert (line.kind, line.subject, line.instance_type, line.usage) == (
        "endpoint",
        "Priced/Chat",
        "ml.g6e.12xlarge",
        "Hosting",
    )
    assert (line.floor_hours, line.ceiling_hours, line.plan_hours) == (0, 1440, 0)
    assert (line.floor_usd, line.ceiling_usd) == (Decimal("0.00"), Decimal("15105.60"))
    assert totals([line]).ceiling_label() == "USD 15,105.60"
    assert line.as_dict()["ceiling_usd"] == "15105.60"
    (unknown,) = cost_model(app)  # the shipped table: unknown, never 0
    assert unknown.ceiling_usd is None and unknown.floor_usd == 0
    assert unknown.as_dict()["ceiling_usd"] is None
