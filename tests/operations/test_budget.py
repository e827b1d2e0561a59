"""The config's budget: refused above the monthly ceiling in config terms, required above USD 10,000, and the
AWS::Budgets::Budget the stack creates (tag filter, ACTUAL/FORECASTED thresholds, subscribers, scoped grants)."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_cdk import App, Environment, Stack
from aws_cdk.assertions import Match, Template
from sagemaker_llm_cdk import ConfigurationError, LlmMonitoring, load_config
from sagemaker_llm_cdk.operations import cost_model
from sagemaker_llm_cdk.operations.budget import CostBudget
from sagemaker_llm_cdk.operations.cost_model import config_cost_model, totals, usd
from sagemaker_llm_cdk.operations.pricing import PriceTable

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
BOUND = Environment(account="123456789012", region="us-east-1")
TEST_PRICE = "50"
"""A made-up USD per instance-hour for the tests' own table (not a price: the shipped table has none yet)."""


@pytest.fixture
def priced(monkeypatch: pytest.MonkeyPatch) -> PriceTable:
    """The cost model priced from a test table: ml.p5e.48xlarge at TEST_PRICE in us-east-1 (Hosting and Training)."""
    cell = {"usd_per_hour": TEST_PRICE, "source": "https://example.com/test", "read": "2026-12-01"}
    table = PriceTable.from_json(
        {
            "read": "2026-12-01",
            "usages": {
                usage: {"what": usage, "prices": {"ml.p5e.48xlarge": {"us-east-1": cell}}}
                for usage in ("Hosting", "Training")
            },
        }
    )
    monkeypatch.setattr(cost_model, "shipped_table", lambda: table)
    return table


def write(tmp_path: Path, **extra: Any) -> Path:
    body = {
        "stack_name": "Budgeted",
        "target": {"region": "us-east-1"},
        "tags": {"project": "llm"},
        "endpoints": [
            {
                "name": "Chat",
                "instance_type": "ml.p5e.48xlarge",
                "scaling": {"min_instances": 0, "max_instances": 2},
                "models": [{"name": "qwen3-32b", "model_data_s3_uri": "s3://my-weights/qwen3-32b/", "accelerators": 2}],
            }
        ],
        **extra,
    }
    path = tmp_path / "budgeted.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def test_a_ceiling_above_the_budget_is_refused_in_config_terms(tmp_path, priced):
    path = write(tmp_path, budget={"max_usd_per_month": 1000, "email": "ops@example.com"})
    # 2 x 744 h (the longest month) x USD 50 = USD 74,400: the endpoint drives it.
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "budget.max_usd_per_month: got 1000; allowed: at least the monthly ceiling, USD 74,400.00 per month of "
            "744 hours (the longest month) in us-east-1 (from endpoints[0]: endpoint Chat (ml.p5e.48xlarge x 0-2, on "
            "demand) at most USD 74,400.00); fix: raise budget.max_usd_per_month to 74400, or lower the ceiling: "
            "max_instances"
        ),
    ) as raised:
        load_config(path)
    assert str(path) in str(raised.value)
    assert len(raised.value.problems) == 1


def test_a_ceiling_within_the_budget_loads(tmp_path, priced):
    config = load_config(write(tmp_path, budget={"max_usd_per_month": 74400, "email": "ops@example.com"}))
    assert totals(config_cost_model(config)).ceiling_usd == Decimal("72000.00")  # the 30-day table stays 720 h
    assert totals(config_cost_model(config, period_hours=744)).ceiling_usd == Decimal("74400.00")


def test_the_budget_is_compared_with_744_hours_not_720(tmp_path, priced):
    with pytest.raises(ConfigurationError, match=r"got 72000; allowed: at least the monthly ceiling, USD 74,400\.00"):
        load_config(write(tmp_path, budget={"max_usd_per_month": 72000, "email": "ops@example.com"}))


def test_a_ceiling_above_usd_10000_needs_a_budget(tmp_path, priced):
    path = write(tmp_path)
    body = yaml.safe_load(path.read_text(encoding="utf-8"))
    body["endpoints"][0]["scaling"]["max_instances"] = 1  # 720 accelerator-instance-hours: only the USD rule
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "budget: got None; allowed: a budget: the monthly ceiling is USD 37,200.00 per month of 744 hours (the "
            "longest month) in us-east-1, above USD 10,000.00 (from endpoints[0]"
        ),
    ) as raised:
        load_config(path)
    assert "accelerator-instance-hours" not in str(raised.value)


def test_an_unknown_price_is_not_counted_as_0_nor_refused(tmp_path):
    config = load_config(write(tmp_path, budget={"max_usd_per_month": 1000, "email": "ops@example.com"}))
    total = totals(config_cost_model(config))  # the shipped table has no figure for ml.p5e.48xlarge
    assert total.ceiling_label() == "unknown (prices unknown for endpoints[0])"


@pytest.mark.parametrize(
    ("budget", "path"),
    [
        ({"max_usd_per_month": 100}, "budget.email"),
        ({"max_usd_per_month": 100, "email": "not-an-address"}, "budget.email"),
        ({"max_usd_per_month": 100, "email": "ops@example.com", "tag": "team"}, "budget.tag"),
        ({"max_usd_per_month": 100, "notify_alarm_topic": True, "actual_percent": [80, 80]}, "budget.actual_percent"),
    ],
)
def test_budget_rules_name_the_field(tmp_path, budget, path):
    with pytest.raises(ConfigurationError, match=re.escape(f"{path}: got")):
        load_config(write(tmp_path, budget=budget))


# ----------------------------------------------------------------------- the resource
def budget_stack(env: Environment | None) -> tuple[Stack, LlmMonitoring, CostBudget]:
    stack = Stack(App(), "Budgeted", env=env)
    monitoring = LlmMonitoring(stack, "Monitoring")
    budget = CostBudget(
        stack,
        "Budget",
        max_usd_per_month=5000,
        emails=["ops@example.com"],
        topic=monitoring.alarm_topic,
        actual_percent=(80, 100),
        forecasted_percent=(100,),
        tag_key="project",
        tag_value="llm",
    )
    return stack, monitoring, budget


@pytest.mark.parametrize("env", [None, BOUND], ids=["agnostic", "bound"])
def test_the_budget_filters_on_the_tag_and_alerts_actual_and_forecasted(env):
    stack, monitoring, _budget = budget_stack(env)
    template = Template.from_stack(stack)
    topic = stack.resolve(monitoring.alarm_topic.topic_arn)
    subscribers = [
        {"SubscriptionType": "EMAIL", "Address": "ops@example.com"},
        {"SubscriptionType": "SNS", "Address": topic},
    ]
    template.has_resource_properties(
        "AWS::Budgets::Budget",
        {
            "Budget": {
                "BudgetType": "COST",
                "TimeUnit": "MONTHLY",
                "BudgetLimit": {"Amount": 5000, "Unit": "USD"},
                "CostFilters": {"TagKeyValue": ["user:project$llm"], "Region": [stack.resolve(stack.region)]},
                "BudgetName": stack.resolve(_budget.budget_name),
            },
            "NotificationsWithSubscribers": [
                {
                    "Notification": {
                        "NotificationType": kind,
                        "ComparisonOperator": "GREATER_THAN",
                        "Threshold": percent,
                        "ThresholdType": "PERCENTAGE",
                    },
                    "Subscribers": subscribers,
                }
                for kind, percent in (("ACTUAL", 80), ("ACTUAL", 100), ("FORECASTED", 100))
            ],
        },
    )
    budget_arn = stack.resolve(f"arn:{stack.partition}:budgets::{stack.account}:budget/{_budget.budget_name}")
    conditions = {
        "StringEquals": {"aws:SourceAccount": stack.resolve(stack.account)},
        "ArnLike": {"aws:SourceArn": budget_arn},
    }
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        {
                            "Sid": "BudgetsPublish",
                            "Effect": "Allow",
                            "Principal": {"Service": "budgets.amazonaws.com"},
                            "Action": "sns:Publish",
                            "Resource": topic,
                            "Condition": conditions,
                        }
                    ]
                )
            }
        },
    )
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Sid": "BudgetsPublish",
                                "Principal": {"Service": "budgets.amazonaws.com"},
                                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                                "Condition": conditions,
                            }
                        )
                    ]
                )
            }
        },
    )
    if env is not None:  # an account- and region-bound stack names its account and region
        assert conditions["StringEquals"]["aws:SourceAccount"] == "123456789012"
        assert re.fullmatch(r"Budgeted-us-east-1-monthly-[0-9a-f]{8}", stack.resolve(_budget.budget_name))


# ----------------------------------------------------------------------- the name across changes
def budget_name_of(stack_name: str = "Budgeted", env: Environment | None = BOUND, **options: Any) -> Any:
    """The BudgetName a fresh synth of a budget with ``options`` gives (the template's value)."""
    stack = Stack(App(), stack_name, env=env)
    monitoring = LlmMonitoring(stack, "Monitoring", alarm_prefix="budgeted")
    settings: dict[str, Any] = {
        "max_usd_per_month": 5000,
        "emails": ["ops@example.com"],
        "topic": monitoring.alarm_topic,
        **options,
    }
    CostBudget(stack, "Budget", **settings)
    (budget,) = Template.from_stack(stack).find_resources("AWS::Budgets::Budget").values()
    return budget["Properties"]["Budget"]["BudgetName"]


def test_the_schema_makes_the_notifications_and_the_name_create_only():
    """What the name's digest must cover: every create-only property of AWS::Budgets::Budget but the name."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", "AWS::Budgets::Budget").schema
    assert sorted(schema["createOnlyProperties"]) == [
        "/properties/Budget/BudgetName",
        "/properties/NotificationsWithSubscribers",
    ]


@pytest.mark.parametrize(
    "change",
    [
        {"emails": ["finance@example.com"]},
        {"actual_percent": (50, 100)},
        {"forecasted_percent": (90,)},
        {"topic": None},
    ],
    ids=["email", "actual", "forecasted", "topic"],
)
def test_a_change_of_the_notifications_gives_a_new_name(change):
    """CloudFormation replaces the budget (the notifications are create-only) by creating the new one first: it
    can only succeed under another name."""
    assert budget_name_of(**change) != budget_name_of()


def test_the_same_config_gives_the_same_name_and_a_limit_change_keeps_it():
    name = budget_name_of()
    assert re.fullmatch(r"Budgeted-us-east-1-monthly-[0-9a-f]{8}", name)
    assert budget_name_of() == name  # no time, no randomness
    assert budget_name_of(max_usd_per_month=9000) == name  # BudgetLimit updates in place: no replacement


def _longest_region() -> str:
    import botocore.session

    endpoints = botocore.session.get_session().get_data("endpoints")
    return max((region for partition in endpoints["partitions"] for region in partition["regions"]), key=len)


def _as_deployed(name: Any, region: str) -> str:
    """The name CloudFormation makes of the template's value in ``region``."""
    if isinstance(name, str):
        return name
    ((separator, parts),) = (name["Fn::Join"],)
    return separator.join(region if part == {"Ref": "AWS::Region"} else part for part in parts)


@pytest.mark.parametrize(
    "env", [None, Environment(account="123456789012", region=_longest_region())], ids=["agnostic", "longest-region"]
)
def test_a_128_character_stack_name_gives_a_valid_name(env):
    """CloudFormation's longest stack name: the stack part is cut, the region and the digest stay."""
    from support.aws_model import assert_valid_request

    region = _longest_region()
    long_name = "Budgeted-" + "x" * 119
    assert len(long_name) == 128
    name = _as_deployed(budget_name_of(long_name, env), region)
    assert len(name) <= 100 and name.startswith("Budgeted-xxx") and f"-{region}-monthly-" in name
    assert_valid_request(
        "budgets",
        "CreateBudget",
        {
            "AccountId": "123456789012",
            "Budget": {
                "BudgetName": name,
                "BudgetType": "COST",
                "TimeUnit": "MONTHLY",
                "BudgetLimit": {"Amount": "5000", "Unit": "USD"},
            },
        },
    )
    other = _as_deployed(budget_name_of(long_name[:-1] + "y", env), region)
    assert other != name, "two stacks whose names are cut to the same start never share a budget"


def test_without_a_tag_the_budget_filters_on_the_stack_name_tag():
    stack = Stack(App(), "Untagged")
    CostBudget(stack, "Budget", max_usd_per_month=100, emails=["ops@example.com"])
    Template.from_stack(stack).has_resource_properties(
        "AWS::Budgets::Budget",
        {
            "Budget": {
                "CostFilters": {
                    "TagKeyValue": ["aws:cloudformation:stack-name$Untagged"],
                    "Region": [{"Ref": "AWS::Region"}],
                }
            }
        },
    )


def test_the_platform_stack_creates_the_configs_budget_on_its_tag(tmp_path):
    import sys

    sys.path.insert(0, str(ROOT))
    from stacks import LlmPlatformStack

    config = load_config(
        write(
            tmp_path,
            budget={
                "max_usd_per_month": 90000,
                "email": "ops@example.com",
                "notify_alarm_topic": True,
                "forecasted_percent": [90, 100],
            },
        )
    )
    app = App()
    stack = LlmPlatformStack(app, config.stack_name, config=config, config_dir=tmp_path)
    template = Template.from_stack(stack)
    (budget,) = template.find_resources("AWS::Budgets::Budget").values()
    assert budget["Properties"]["Budget"]["CostFilters"] == {
        "TagKeyValue": ["user:project$llm"],
        "Region": [stack.resolve(stack.region)],
    }
    assert [
        n["Notification"]["NotificationType"] + str(n["Notification"]["Threshold"])
        for n in budget["Properties"]["NotificationsWithSubscribers"]
    ] == ["ACTUAL80", "ACTUAL100", "FORECASTED90", "FORECASTED100"]
    from sagemaker_llm_cdk.operations.cost import cost_ceiling_table

    assert (
        "Budget: USD 90,000 per month on resources tagged project=llm (AWS Budgets; alerts at 80%, 100% actual, "
        "90%, 100% forecasted)"
    ) in cost_ceiling_table(app)


# ----------------------------------------------------------------------- every shipped config
SHIPPED = sorted([*ROOT.glob("config/*.yaml"), *ROOT.glob("config/examples/*.yaml")])


@pytest.mark.parametrize(
    "path",
    [p for p in SHIPPED if p.name not in ("pipeline.yaml", "jumpstart.lock.yaml")],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_shipped_config_has_cost_lines_in_dollars_or_unknown(path):
    config = load_config(path)
    lines = config_cost_model(config)
    assert [line for line in lines if line.kind == "endpoint"], "every config prices its endpoints"
    for line in lines:
        for amount, hours in ((line.floor_usd, line.floor_hours), (line.ceiling_usd, line.ceiling_hours)):
            shown = usd(amount)
            assert shown.startswith("USD ") or shown == "unknown", line
            if amount is None:  # unknown only when there are hours to price and no figure: never a silent 0
                assert hours > 0 and line.price is not None and line.price.amount is None
                assert line.price.label().startswith("unknown ("), line


def test_the_default_config_costs_nothing_while_idle():
    config = load_config(ROOT / "config/default.yaml")
    lines = config_cost_model(config)
    total = totals(lines)
    assert total.floor_usd == 0 and not total.unknown_floor  # scale to zero: no instance while no copy runs
    (endpoint,) = [line for line in lines if line.kind == "endpoint"]
    assert (endpoint.floor_hours, endpoint.ceiling_hours) == (0, 1440)
    (eagle,) = [line for line in lines if line.kind == "eagle"]
    assert "runs only when 1000 new records arrived" in eagle.what and eagle.floor_hours == 0


def test_each_regions_budget_counts_only_its_regions_spend():
    """Budgets is global: the same config in two regions makes two budgets, each filtered on its own region."""
    filters = []
    for region in ("us-east-1", "us-west-2"):
        stack = Stack(App(), f"Chat-{region}", env=Environment(account="123456789012", region=region))
        CostBudget(
            stack, "Budget", max_usd_per_month=100, emails=["ops@example.com"], tag_key="project", tag_value="llm"
        )
        (budget,) = Template.from_stack(stack).find_resources("AWS::Budgets::Budget").values()
        filters.append(budget["Properties"]["Budget"]["CostFilters"])
    assert filters == [
        {"TagKeyValue": ["user:project$llm"], "Region": ["us-east-1"]},
        {"TagKeyValue": ["user:project$llm"], "Region": ["us-west-2"]},
    ]
