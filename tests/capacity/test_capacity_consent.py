"""Money: a plan is bought or extended only by a deploy that carries the consent; endpoints bind only Active plans."""

from __future__ import annotations

import importlib.util
import json
import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Annotations as CdkAnnotations
from aws_cdk import App, Environment, Stack
from aws_cdk.assertions import Annotations, Match, Template
from sagemaker_llm_cdk import (
    ConfigurationError,
    EndpointOptions,
    InstanceScaling,
    LlmEndpoint,
    LlmMonitoring,
    ModelSpec,
    load_config,
)
from sagemaker_llm_cdk.capacity.capacity_plan import (
    SPENDING_ACTIONS,
    CapacityPlan,
    choose_update_policy,
    consent_problems,
    consented_plans,
    file_consents,
)
from sagemaker_llm_cdk.core.errors import Problem, raise_if_problems

from stacks import LlmPlatformStack

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "examples" / "reserved-capacity.yaml"
INSTANCE = "ml.p5e.48xlarge"
RESERVE: dict[str, Any] = {
    "name": "chat-p5e",
    "instance_type": INSTANCE,
    "instance_count": 4,
    "duration_days": 30,
    "start_after": datetime(2027, 1, 4, tzinfo=UTC),
    "end_before": datetime(2027, 3, 1, tzinfo=UTC),
    "max_upfront_fee_usd": Decimal("150000"),
}
BOUGHT = "Serving-chat-p5e"
"""The TrainingPlanName of ``RESERVE`` in ``plan_stack``: named after the serving stack (``name_prefix``)."""
EXAMPLE_BOUGHT = "SageMakerLlm-chat-p5e-2027q1"
"""The example's plan chat-p5e-2027q1, bought by the companion of stack SageMakerLlm."""
EXTENSION = {"until": datetime(2027, 4, 1, tzinfo=UTC), "max_upfront_fee_usd": Decimal("90000")}
ENVS = {"agnostic": None, "bound": Environment(account="123456789012", region="us-east-1")}


def spending_statements(template: Template) -> list[dict[str, Any]]:
    found = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if set(actions) & set(SPENDING_ACTIONS):
                found.append(statement)
    return found


def plan_stack(
    spec: dict[str, Any],
    *,
    context: dict[str, Any] | None = None,
    env: Environment | None = None,
    endpoint: bool = True,
    max_instances: int = 2,
) -> tuple[App, Stack, Stack, CapacityPlan, LlmEndpoint | None]:
    app = App(context=context or {})
    capacity = Stack(app, "Capacity", env=env)
    serving = Stack(app, "Serving", env=env)
    plan = CapacityPlan(capacity, "Plan", settings=spec, name_prefix=serving.stack_name)
    chat = None
    if endpoint:
        chat = LlmEndpoint(
            serving,
            "Chat",
            settings=EndpointOptions(
                instance_type=INSTANCE, scaling=InstanceScaling(min_instances=1, max_instances=max_instances)
            ),
            capacity_plan=plan,
        )
        chat.add_model(
            "Qwen", ModelSpec(name="qwen3-32b", model_data_s3_uri="s3://my-weights/qwen3-32b/", accelerators=2)
        )
    return app, capacity, serving, plan, chat


Built = tuple[App, Stack, Stack, CapacityPlan, LlmEndpoint | None]


@pytest.fixture(scope="module")
def reserved() -> Any:
    """``reserved(env_name, purchase)``: ``plan_stack(RESERVE, env=ENVS[env_name], context={"purchase": purchase})``,
    built once per module for the tests that only read it (they add nothing to it); a test that adds to a stack,
    or compares two builds, builds its own."""
    built: dict[tuple[str, str | None], Built] = {}

    def get(env_name: str = "agnostic", purchase: str | None = None) -> Built:
        if (env_name, purchase) not in built:
            built[env_name, purchase] = plan_stack(
                RESERVE, env=ENVS[env_name], context={"purchase": purchase} if purchase else None
            )
        return built[env_name, purchase]

    return get


# --------------------------------------------------------------------------- consent given at deploy


@pytest.mark.parametrize("env", ENVS.values(), ids=ENVS.keys())
def test_without_consent_nothing_that_can_spend_is_synthesized(env):
    _, capacity, serving, plan, _ = plan_stack({**RESERVE, "extension": EXTENSION}, env=env)
    for stack in (capacity, serving):
        template = Template.from_stack(stack)
        assert spending_statements(template) == []
        for kind in ("Custom::SageMakerCapacityPlan", "Custom::SageMakerCapacityPlanExtension"):
            for resource in template.find_resources(kind).values():
                assert resource["Properties"].get("Purchase", resource["Properties"].get("Extend")) == "not-approved"
    assert not plan.purchase_approved and not plan.extension_approved


@pytest.mark.parametrize("env", ENVS.keys())
def test_with_consent_only_the_named_plan_may_spend(reserved, env):
    _, capacity, _, plan, _ = reserved(env, purchase="chat-p5e")
    template = Template.from_stack(capacity)
    template.has_resource_properties("Custom::SageMakerCapacityPlan", {"Purchase": "approved", "PlanName": BOUGHT})
    actions = sorted(
        a
        for s in spending_statements(template)
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    )
    assert actions == ["sagemaker:CreateReservedCapacity", "sagemaker:CreateTrainingPlan"]
    assert plan.purchase_approved


def test_without_consent_synth_says_exactly_what_would_be_bought(reserved):
    _, capacity, _, _, _ = reserved()
    Annotations.from_stack(capacity).has_info(
        "/Capacity/Plan",
        Match.string_like_regexp(
            re.escape(
                f"Not bought by this deploy: capacity plan chat-p5e as TrainingPlanName {BOUGHT} (<stack>-chat-p5e; a "
                "plan bought before names were stack-prefixed keeps its name only with physical_name): "
                f"{INSTANCE} x 4 for 30 days between "
                "2027-01-04T00:00:00Z and 2027-03-01T00:00:00Z, prepaid up to USD 150000, never refunded. To buy it, "
                "deploy this stack with -c purchase=chat-p5e; without that, the deploy fails unless a plan named "
                f"{BOUGHT} exists"
            )
        ),
    )


def test_with_consent_synth_warns_that_this_deploy_may_buy(reserved):
    _, capacity, _, _, _ = reserved(purchase="chat-p5e")
    Annotations.from_stack(capacity).has_warning(
        "/Capacity/Plan",
        Match.string_like_regexp(
            r"This deploy may BUY capacity plan chat-p5e as TrainingPlanName Serving-chat-p5e \(.*\): .* "
            r"\(consent: -c purchase=chat-p5e\)"
        ),
    )


def test_consent_names_may_be_a_comma_list_or_a_list():
    assert consented_plans(App(context={"purchase": "a, b"})) == {"a", "b"}
    assert consented_plans(App(context={"purchase": ["a"]})) == {"a"}
    assert consented_plans(App()) == frozenset()


def test_consent_for_an_unknown_plan_is_a_problem():
    app, *_ = plan_stack(RESERVE, context={"purchase": "chat-p5", "extend": "chat-p5e"})
    lines = [p.line() for p in consent_problems(app)]
    assert lines == [
        "-c purchase: got 'chat-p5'; allowed: names of plans declared with mode reserve: chat-p5e; fix: correct the "
        "name, or declare the plan before consenting to purchase it",
        "-c extend: got 'chat-p5e'; allowed: names of plans declared with an extension: none declared; fix: correct "
        "the name, or declare the plan before consenting to extend it",
    ]


def test_the_purchase_is_retained_and_its_consent_property_changes_nothing_else(reserved):
    _, without, *_ = reserved()
    _, with_consent, *_ = reserved(purchase="chat-p5e")
    a = Template.from_stack(without).find_resources("Custom::SageMakerCapacityPlan")
    b = Template.from_stack(with_consent).find_resources("Custom::SageMakerCapacityPlan")
    assert a.keys() == b.keys()  # same logical id: a later deploy without consent adopts, never re-buys
    (resource_a,), (resource_b,) = a.values(), b.values()
    assert resource_a["DeletionPolicy"] == resource_b["DeletionPolicy"] == "Retain"
    assert {k: v for k, v in resource_a["Properties"].items() if k != "Purchase"} == {
        k: v for k, v in resource_b["Properties"].items() if k != "Purchase"
    }


# --------------------------------------------------------------------------- extension


@pytest.mark.parametrize("env", ENVS.values(), ids=ENVS.keys())
def test_extension_resource_with_consent(env):
    _, capacity, _, plan, _ = plan_stack({**RESERVE, "extension": EXTENSION}, context={"extend": "chat-p5e"}, env=env)
    template = Template.from_stack(capacity)
    template.has_resource(
        "Custom::SageMakerCapacityPlanExtension",
        {
            "DeletionPolicy": "Retain",
            "Properties": {
                "ServiceToken": Match.any_value(),
                "PlanName": BOUGHT,
                "ConsentName": "chat-p5e",
                "ExtendUntil": "2027-04-01T00:00:00Z",
                "MaxUpfrontFeeUsd": "90000",
                "Extend": "approved",
            },
            "DependsOn": Match.array_with([capacity.resolve(plan.custom_resource.node.default_child.logical_id)]),
        },
    )
    actions = {
        a
        for s in spending_statements(template)
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    }
    assert actions == {"sagemaker:ExtendTrainingPlan"}  # extending does not consent to buying


def test_an_existing_plan_can_be_extended():
    _, capacity, _, _, _ = plan_stack(
        {
            "existing_plan_arn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p",
            "instance_type": INSTANCE,
            "instance_count": 4,
            "extension": EXTENSION,
        },
        env=ENVS["bound"],
    )
    template = Template.from_stack(capacity)
    template.resource_count_is("Custom::SageMakerCapacityPlan", 0)
    template.has_resource_properties(
        "Custom::SageMakerCapacityPlanExtension", {"PlanName": "p", "Extend": "not-approved"}
    )


def test_extension_until_needs_a_time_zone():
    with pytest.raises(
        ConfigurationError,
        match=re.escape("extension.until: got '2027-04-01T00:00:00'; allowed: a date-time with a time zone"),
    ):
        plan_stack({**RESERVE, "extension": {**EXTENSION, "until": datetime(2027, 4, 1)}})


def test_extension_needs_a_cap():
    with pytest.raises(ConfigurationError, match=re.escape("extension.max_upfront_fee_usd: got nothing")):
        plan_stack({**RESERVE, "extension": {"until": EXTENSION["until"]}})


# --------------------------------------------------------------------------- the Active guard


@pytest.mark.parametrize("env", ENVS.keys())
def test_the_guard_runs_before_the_endpoint_config_and_binds_by_name(reserved, env):
    _, _, serving, _, chat = reserved(env)
    template = Template.from_stack(serving)
    guard_id = serving.resolve(chat.capacity_guard.node.default_child.logical_id)
    template.has_resource_properties(
        "Custom::SageMakerCapacityPlanGuard",
        {
            "PlanName": BOUGHT,
            "InstanceType": INSTANCE,
            "MaxInstances": "2",
            "WhenNotActive": "fail",
            "Bound": "true",
            "EndpointConfigInputs": Match.array_with([Match.string_like_regexp("^sha256:[0-9a-f]{64}$")]),
            "UpdatePolicy": "BLUE_GREEN",  # SageMaker's default without a deployment config
        },
    )
    (config,) = template.find_resources("AWS::SageMaker::EndpointConfig").values()
    assert config["Properties"]["ProductionVariants"][0]["CapacityReservationConfig"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "MlReservationArn": {"Fn::GetAtt": [guard_id, "MlReservationArn"]},
    }
    assert "Fn::ImportValue" not in json.dumps(template.to_json())  # no export: the capacity stack stays changeable


def test_the_guard_may_only_describe_the_plan(reserved):
    _, _, serving, _, chat = reserved("bound")
    template = Template.from_stack(serving)
    role_id = serving.resolve(chat.capacity_guard.function.role.node.default_child.logical_id)
    statements = [
        s
        for p in template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    sagemaker = [s for s in statements if str(s["Action"]).startswith("sagemaker:")]
    assert sagemaker == [
        {
            "Sid": "DescribeThePlan",
            "Effect": "Allow",
            "Action": "sagemaker:DescribeTrainingPlan",
            "Resource": [
                {
                    "Fn::Join": [
                        "",
                        ["arn:", {"Ref": "AWS::Partition"}, ":sagemaker:us-east-1:123456789012:training-plan/" + name],
                    ]
                }
                for name in (BOUGHT, BOUGHT.lower())
            ],
        }
    ]
    # and the status of its own stack: a rollback is never refused
    assert [s for s in statements if str(s["Action"]).startswith("cloudformation:")] == [
        {
            "Sid": "ReadThisStacksStatus",
            "Effect": "Allow",
            "Action": "cloudformation:DescribeStacks",
            "Resource": {"Ref": "AWS::StackId"},
        }
    ]


def test_any_change_of_the_endpoint_config_changes_the_guard(reserved):
    def inputs(built: Built) -> list[Any]:
        (guard,) = Template.from_stack(built[2]).find_resources("Custom::SageMakerCapacityPlanGuard").values()
        return guard["Properties"]["EndpointConfigInputs"]

    shared = inputs(reserved())
    assert shared == inputs(plan_stack(RESERVE))  # deterministic: a second build of the same stack
    assert shared != inputs(plan_stack(RESERVE, max_instances=1))


def test_the_serving_stack_deploys_after_the_capacity_stack(reserved):
    _, capacity, serving, _, _ = reserved()
    assert capacity in serving.dependencies


@pytest.mark.parametrize("env", ENVS.values(), ids=ENVS.keys())
def test_on_demand_binds_only_while_the_status_parameter_says_active(env):
    _, capacity, serving, _, chat = plan_stack({**RESERVE, "when_not_active": "on_demand"}, env=env)
    template = Template.from_stack(serving).to_json()
    ((parameter_id, parameter),) = [
        (k, v) for k, v in template["Parameters"].items() if k.startswith("ChatCapacityGuard")
    ]
    assert parameter["Type"] == "AWS::SSM::Parameter::Value<String>"
    assert parameter["Default"] == f"/sagemaker-llm/state/capacity-plans/{BOUGHT}/status"
    ((condition_id, condition),) = template["Conditions"].items()
    assert condition == {"Fn::Equals": [{"Ref": parameter_id}, "Active"]}
    (config,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::EndpointConfig"]
    guard_id = serving.resolve(chat.capacity_guard.node.default_child.logical_id)
    assert config["Properties"]["ProductionVariants"][0]["CapacityReservationConfig"] == {
        "Fn::If": [
            condition_id,
            {
                "CapacityReservationPreference": "capacity-reservations-only",
                "MlReservationArn": {"Fn::GetAtt": [guard_id, "MlReservationArn"]},
            },
            {"Ref": "AWS::NoValue"},
        ]
    }
    assert template["Resources"][guard_id]["Properties"]["Bound"] == {"Fn::If": [condition_id, "true", "false"]}
    Template.from_stack(capacity).has_resource_properties(
        "Custom::SageMakerLlmRunTimeParameter",
        {
            "ParameterName": f"/sagemaker-llm/state/capacity-plans/{BOUGHT}/status",
            "InitialValue": "Unknown",
            "PlanName": BOUGHT,
        },
    )
    Template.from_stack(capacity).has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like(
                    {"STATUS_PARAMETERS": f"{BOUGHT}=/sagemaker-llm/state/capacity-plans/{BOUGHT}/status"}
                )
            }
        },
    )


def test_on_demand_needs_the_plan_in_an_earlier_stack():
    stack = Stack(App(), "One")
    plan = CapacityPlan(stack, "Plan", settings={**RESERVE, "when_not_active": "on_demand"})
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "capacity_plan: got 'One/Plan'; allowed: with when_not_active on_demand, a plan in a stack deployed "
            "before this one"
        ),
    ):
        LlmEndpoint(
            stack,
            "Chat",
            settings=EndpointOptions(instance_type=INSTANCE, scaling=InstanceScaling(max_instances=2)),
            capacity_plan=plan,
        )


def test_when_not_active_is_fail_or_on_demand():
    with pytest.raises(
        ConfigurationError, match=re.escape("when_not_active: got 'wait'; allowed: one of 'fail' or 'on_demand'")
    ):
        plan_stack({**RESERVE, "when_not_active": "wait"})


# --------------------------------------------------------------------------- headroom for updates


@pytest.mark.parametrize(
    ("count", "most", "policy"),
    [(4, 2, "BLUE_GREEN"), (4, 3, "ROLLING"), (2, 2, None), (1, 1, None), (64, 32, "BLUE_GREEN")],
)
def test_the_update_policy_that_fits_the_plan(count, most, policy):
    assert choose_update_policy(count, most) == policy


def monitored(count: int, most: int) -> tuple[Stack, LlmEndpoint]:
    _, _, serving, _, chat = plan_stack({**RESERVE, "instance_count": count}, max_instances=most)
    LlmMonitoring(serving, "Monitoring").monitor_endpoint(chat)
    return serving, chat


def test_blue_green_when_the_plan_holds_a_second_fleet():
    serving, _ = monitored(4, 2)
    template = Template.from_stack(serving)
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {"DeploymentConfig": Match.object_like({"BlueGreenUpdatePolicy": Match.any_value()})},
    )
    template.has_resource(
        "AWS::SageMaker::EndpointConfig",
        {
            "Metadata": {
                "sagemaker-llm-cdk:capacity": {
                    "Plan": BOUGHT,
                    "PlanInstances": 4,
                    "MaxInstances": 2,
                    "WhenNotActive": "fail",
                    "BlueGreenNeedsInstances": 4,
                    "RollingNeedsInstances": 3,
                    "UpdatePolicy": "BLUE_GREEN",
                    "UpdateFits": True,
                }
            }
        },
    )


def test_rolling_is_chosen_and_said_when_only_one_more_instance_fits():
    serving, _ = monitored(4, 3)
    annotations = Annotations.from_stack(serving)  # synthesizes (forced); Template.from_stack then reuses that synth
    template = Template.from_stack(serving)
    # 1-3 instances: one instance is 100% of one, more than AWS's 50%; 33% is one instance of three
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "DeploymentConfig": Match.object_like(
                {
                    "RollingUpdatePolicy": {
                        "MaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 33},
                        "RollbackMaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 33},
                        "WaitIntervalInSeconds": 300,
                        "MaximumExecutionTimeoutInSeconds": 14400,
                    },
                    "BlueGreenUpdatePolicy": Match.absent(),
                }
            )
        },
    )
    annotations.has_warning(
        "/Serving/Chat",
        Match.string_like_regexp(
            r"too few for a blue/green update of up to 3 \(needs 6\), so endpoint updates roll one instance at a time"
        ),
    )
    template.has_resource_properties(
        "Custom::SageMakerCapacityPlanGuard",
        {"UpdatePolicy": "ROLLING", "RollingBatchSize": {"Type": "CAPACITY_PERCENT", "Value": "33"}},
    )


def test_no_headroom_is_said_and_recorded_for_the_change_report():
    serving, _ = monitored(2, 2)
    Annotations.from_stack(serving).has_warning(
        "/Serving/Chat",
        Match.string_like_regexp(
            r"no update policy fits \(blue/green needs 4, rolling 3\), so a change that replaces the endpoint config "
            r"cannot get instances"
        ),
    )
    Template.from_stack(serving).has_resource(
        "AWS::SageMaker::EndpointConfig",
        {
            "Metadata": {
                "sagemaker-llm-cdk:capacity": Match.object_like({"UpdatePolicy": "NONE_FITS", "UpdateFits": False})
            }
        },
    )
    Template.from_stack(serving).has_resource_properties(
        "Custom::SageMakerCapacityPlanGuard", {"UpdatePolicy": "NONE_FITS"}
    )  # the guard fails such an update fast, with the plan's free instances


# --------------------------------------------------------------------------- the app's configs


def platform(path: Path, context: dict[str, Any] | None = None, env: Environment | None = None) -> LlmPlatformStack:
    app = App(context=context or {})
    config = load_config(path)
    return LlmPlatformStack(app, config.stack_name, config=config, config_dir=path.parent, env=env or Environment())


@pytest.fixture(scope="module")
def example() -> LlmPlatformStack:
    """``platform(EXAMPLE)``, built once for the tests that only read it."""
    return platform(EXAMPLE)


def test_the_default_config_buys_and_binds_nothing():
    stack = platform(ROOT / "config" / "default.yaml")
    assert stack.capacity is None and stack.capacity_plans == {}
    template = Template.from_stack(stack)
    for kind in (
        "Custom::SageMakerCapacityPlan",
        "Custom::SageMakerCapacityPlanExtension",
        "Custom::SageMakerCapacityPlanGuard",
    ):
        template.resource_count_is(kind, 0)
    assert spending_statements(template) == []
    (config,) = template.find_resources("AWS::SageMaker::EndpointConfig").values()
    assert "CapacityReservationConfig" not in config["Properties"]["ProductionVariants"][0]


@pytest.mark.parametrize("env", ENVS.keys())
def test_the_reserved_capacity_example_has_a_separate_capacity_stack(request, env):
    stack = request.getfixturevalue("example") if env == "agnostic" else platform(EXAMPLE, env=ENVS[env])
    assert stack.capacity is not None and stack.capacity.stack_name == "SageMakerLlmCapacity"
    Template.from_stack(stack).resource_count_is("Custom::SageMakerCapacityPlan", 0)  # serving never buys
    capacity = Template.from_stack(stack.capacity)
    capacity.has_resource_properties(
        "Custom::SageMakerCapacityPlan",
        {"PlanName": EXAMPLE_BOUGHT, "InstanceCount": "4", "MaxUpfrontFeeUsd": "150000", "Purchase": "not-approved"},
    )
    assert spending_statements(capacity) == []
    Template.from_stack(stack).has_resource_properties(
        "Custom::SageMakerCapacityPlanGuard", {"PlanName": EXAMPLE_BOUGHT, "WhenNotActive": "on_demand"}
    )


def test_the_reserved_capacity_example_with_consent_may_buy_only_in_the_capacity_stack():
    stack = platform(EXAMPLE, context={"purchase": "chat-p5e-2027q1"})
    assert spending_statements(Template.from_stack(stack)) == []
    assert len(spending_statements(Template.from_stack(stack.capacity))) == 2


def test_moving_the_endpoint_to_on_demand_drops_the_binding_and_keeps_the_plan(tmp_path):
    text = EXAMPLE.read_text().replace("    capacity_plan: chat-p5e-2027q1   #", "    #")
    moved = tmp_path / "on-demand.yaml"
    moved.write_text(text.replace("extends: ../default.yaml", f"extends: {ROOT / 'config' / 'default.yaml'}"))
    stack = platform(moved)
    template = Template.from_stack(stack)
    template.resource_count_is("Custom::SageMakerCapacityPlanGuard", 0)
    (config,) = template.find_resources("AWS::SageMaker::EndpointConfig").values()
    assert "CapacityReservationConfig" not in config["Properties"]["ProductionVariants"][0]
    Template.from_stack(stack.capacity).resource_count_is("Custom::SageMakerCapacityPlan", 1)  # still watched


def test_purchase_acknowledged_in_a_config_file_is_a_migration_error(tmp_path):
    old = tmp_path / "old.yaml"
    old.write_text(
        EXAMPLE.read_text()
        .replace("    when_not_active: on_demand", "    purchase_acknowledged: true")
        .replace("extends: ../default.yaml", f"extends: {ROOT / 'config' / 'default.yaml'}")
    )
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "capacity_plans[0].purchase_acknowledged: got True; allowed: nothing: consent to buy is no longer a config "
            "field"
        ),
    ):
        load_config(old)


def test_two_plans_of_a_config_pinned_to_one_training_plan_name_are_refused_in_config_terms(tmp_path):
    config = tmp_path / "two.yaml"
    plan = EXAMPLE.read_text().split("capacity_plans:\n", 1)[1].split("endpoints:", 1)[0]
    second = plan.replace("- name: chat-p5e-2027q1", "- name: chat-p5e-2027q2").replace(
        "# physical_name: chat-p5e-2027q1 #", "physical_name: SageMakerLlm-chat-p5e-2027q1 #"
    )
    config.write_text(f"extends: {ROOT / 'config' / 'default.yaml'}\ncapacity_plans:\n{plan}{second}")
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "capacity_plans[1].physical_name: got 'SageMakerLlm-chat-p5e-2027q1'; allowed: a plan whose "
            "TrainingPlanName (SageMakerLlm-chat-p5e-2027q1) is not that of capacity_plans[0]; fix: pin a different "
            "physical_name"
        ),
    ):
        load_config(config)


_ = CdkAnnotations  # the app's annotations API (Annotations above is the assertions reader)


@pytest.mark.parametrize("context", [{}, {"purchase": "chat-p5e-2027q1"}], ids=["no-consent", "consent"])
def test_the_reserved_capacity_example_is_nag_clean_in_a_bound_environment(tmp_path, context):
    from stacks import attach_checks

    app = App(outdir=str(tmp_path), context=context)
    config = load_config(EXAMPLE)
    LlmPlatformStack(app, config.stack_name, config=config, config_dir=EXAMPLE.parent, env=ENVS["bound"])
    attach_checks(app)
    app.synth()  # raises on any unacknowledged AwsSolutions finding
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [v for plugin in report.get("pluginReports", []) for v in plugin.get("violations", [])] == []


def test_the_change_report_shows_the_move_to_on_demand_as_an_endpoint_config_replacement(tmp_path):
    from tools.change_report import compare, load_assembly

    def synth(name: str, text: str) -> Path:
        config = tmp_path / f"{name}.yaml"
        config.write_text(text.replace("extends: ../default.yaml", f"extends: {ROOT / 'config' / 'default.yaml'}"))
        out = tmp_path / name
        app = App(outdir=str(out), context={"aws:cdk:enable-path-metadata": True})
        loaded = load_config(config)
        LlmPlatformStack(app, loaded.stack_name, config=loaded, config_dir=config.parent, env=Environment())
        app.synth()
        return out

    bound = EXAMPLE.read_text()
    base = synth("bound", bound)
    head = synth("on-demand", bound.replace("    capacity_plan: chat-p5e-2027q1   #", "    #"))
    report = compare(load_assembly(base), load_assembly(head))
    (config,) = [c for c in report.changes if c.resource_type == "AWS::SageMaker::EndpointConfig"]
    assert config.replacement
    assert any("CapacityReservationConfig" in p.path for p in config.properties)
    assert [c.kind for c in report.changes if c.resource_type == "Custom::SageMakerCapacityPlanGuard"] == ["removed"]
    assert any(h.category == "redeploy" for h in report.headlines)


@pytest.mark.parametrize("env", ENVS.values(), ids=ENVS.keys())
def test_two_stacks_of_one_config_buy_two_plans_with_one_consent_name(env):
    """dev and prod of one config in one account and region: each buys its own plan, never adopts the other's."""
    config = load_config(EXAMPLE)
    app = App(context={"purchase": "chat-p5e-2027q1"})
    dev = LlmPlatformStack(app, "ChatDev", config=config, config_dir=EXAMPLE.parent, env=env)
    prod = LlmPlatformStack(app, "ChatProd", config=config, config_dir=EXAMPLE.parent, env=env)
    assert consent_problems(app) == []  # the consent names the config's plan, for both stacks
    for stack, bought in ((dev, "ChatDev-chat-p5e-2027q1"), (prod, "ChatProd-chat-p5e-2027q1")):
        Template.from_stack(stack.capacity).has_resource_properties(
            "Custom::SageMakerCapacityPlan", {"PlanName": bought, "Purchase": "approved"}
        )
        Template.from_stack(stack.capacity).has_resource_properties(
            "Custom::SageMakerLlmRunTimeParameter",
            {"ParameterName": f"/sagemaker-llm/state/capacity-plans/{bought}/status"},
        )
        Template.from_stack(stack).has_resource_properties("Custom::SageMakerCapacityPlanGuard", {"PlanName": bought})


def test_the_synth_note_names_the_plan_it_buys_or_adopts(example):
    annotations = Annotations.from_stack(example.capacity)  # each from_stack synthesizes again: read once
    annotations.has_info(
        "/SageMakerLlmCapacity/CapacityPlan-chat-p5e-2027q1",
        Match.string_like_regexp(
            re.escape(f"capacity plan chat-p5e-2027q1 as TrainingPlanName {EXAMPLE_BOUGHT} (<stack>-chat-p5e-2027q1; ")
        ),
    )
    annotations.has_info(
        "/SageMakerLlmCapacity/CapacityPlan-chat-p5e-2027q1",
        Match.string_like_regexp(
            re.escape(
                f"-c purchase=chat-p5e-2027q1; without that, the deploy fails unless a plan named {EXAMPLE_BOUGHT} "
                "exists"
            )
        ),
    )


def test_consent_by_the_physical_name_is_a_typo():
    stack = platform(EXAMPLE, context={"purchase": EXAMPLE_BOUGHT})
    assert consent_problems(stack.node.root) == [
        Problem(
            "-c purchase",
            EXAMPLE_BOUGHT,
            "names of plans declared with mode reserve: chat-p5e-2027q1",
            "correct the name, or declare the plan before consenting to purchase it",
        )
    ]


# --------------------------------------------------------------------------- consent only from the command line

FILES = {"cdk.json": ("app", "context"), "cdk.context.json": ("app", None), "~/.cdk.json": ("home", "context")}
"""Where the CDK CLI reads context on every run: (directory, key that holds the context there; None: the file)."""


@pytest.fixture
def dirs(tmp_path, monkeypatch) -> dict[str, Path]:
    """A fresh app directory (the working directory, as the CDK CLI runs the app) and a fresh ``$HOME``."""
    found = {"app": tmp_path / "app", "home": tmp_path / "home"}
    for path in found.values():
        path.mkdir()
    monkeypatch.chdir(found["app"])
    monkeypatch.setenv("HOME", str(found["home"]))
    return found


def write_context(dirs: dict[str, Path], file: str, context: dict[str, Any]) -> Path:
    where, section = FILES[file]
    path = dirs[where] / file.removeprefix("~/")
    data = {"app": "python3 app.py", section: context} if section else context
    path.write_text(json.dumps(data))
    return path


def refusal(file: str, key: str, value: str, path: Path) -> str:
    where = file if file == "cdk.context.json" else f"the context of {file}"
    return (
        f"{file} context {key}: got {value!r}; allowed: no consent to {key} in a file the CDK CLI reads on every "
        f"deploy (cdk.json, cdk.context.json, ~/.cdk.json): only -c {key}=<plan> on the deploy command consents; "
        f'fix: remove "{key}" from {where} and pass -c {key}={value} on the deploy command that should spend '
        f'(make deploy CONTEXT="-c {key}={value}"); where: {path}'
    )


@pytest.mark.parametrize("key", ["purchase", "extend"])
@pytest.mark.parametrize("file", FILES)
def test_a_consent_in_a_context_file_is_refused_and_consents_to_nothing(dirs, file, key):
    """The CLI merges the file into the context: the app sees the name as if given with -c, on every deploy."""
    path = write_context(dirs, file, {key: "chat-p5e", "@aws-cdk/core:flag": True})
    app, *_, plan, _ = plan_stack({**RESERVE, "extension": EXTENSION}, context={key: "chat-p5e"})
    assert not plan.purchase_approved and not plan.extension_approved
    assert [p.located() for p in consent_problems(app)] == [refusal(file, key, "chat-p5e", path)]
    # Any app with a plan fails its synth, not only one that asks consent_problems (a consumer's app).
    with pytest.raises(RuntimeError, match=re.escape(refusal(file, key, "chat-p5e", path))):
        app.synth()


def test_a_consent_in_a_file_is_refused_next_to_the_same_consent_on_the_command_line(dirs):
    """-c wins the CLI's merge, but the file would consent again on the next deploy without it."""
    path = write_context(dirs, "cdk.json", {"purchase": ["chat-p5e", "other"]})
    app, *_, plan, _ = plan_stack(RESERVE, context={"purchase": "chat-p5e"})
    assert not plan.purchase_approved
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "cdk.json context purchase: got ['chat-p5e', 'other']; allowed: no consent to purchase in a file the CDK "
            "CLI reads on every deploy (cdk.json, cdk.context.json, ~/.cdk.json): only -c purchase=<plan> on the "
            'deploy command consents; fix: remove "purchase" from the context of cdk.json and pass '
            "-c purchase=chat-p5e,other on the deploy command that should spend (make deploy "
            f'CONTEXT="-c purchase=chat-p5e,other"); where: {path}'
        ),
    ):
        raise_if_problems(consent_problems(app), source="the consent to spend")


def test_both_keys_in_every_file_are_each_refused(dirs):
    paths = [write_context(dirs, file, {"purchase": "a", "extend": "b"}) for file in FILES]
    app = App()
    lines = [p.located() for p in consent_problems(app)]
    assert lines == [
        refusal(file, key, value, path)
        for file, path in zip(FILES, paths, strict=True)
        for key, value in (("purchase", "a"), ("extend", "b"))
    ]
    with pytest.raises(ConfigurationError, match=r"^6 problem\(s\)"):
        raise_if_problems(consent_problems(app))


def test_the_command_line_consents_when_no_file_holds_the_key(dirs):
    """``-c purchase=`` reaches the app in CDK_CONTEXT_JSON, which App reads as it does ``App(context=...)``
    (the jsii runtime's environment is fixed when it starts: test_cli.py passes it through the real CLI)."""
    for file in FILES:  # context files as a project has them, with other keys
        write_context(dirs, file, {"config": "config/default.yaml", "@aws-cdk/core:flag": True})
    context = {"purchase": "chat-p5e", "extend": "chat-p5e"}
    app, capacity, _, plan, _ = plan_stack({**RESERVE, "extension": EXTENSION}, context=context)
    assert plan.purchase_approved and plan.extension_approved
    assert consent_problems(app) == []
    assert spending_statements(Template.from_stack(capacity)) != []


def test_no_committed_cdk_json_holds_a_consent(tmp_path):
    """The repository's and every example's cdk.json (what a consumer's app starts from)."""
    app_dirs = [ROOT, *sorted(p.parent for p in (ROOT / "examples").glob("*/cdk.json"))]
    assert len(app_dirs) > 3
    for app_dir in app_dirs:
        assert file_consents(app_dir=app_dir, home=tmp_path) == [], app_dir


def test_a_file_that_is_not_a_json_object_holds_no_consent(dirs):
    (dirs["app"] / "cdk.json").write_text("{not json")
    (dirs["app"] / "cdk.context.json").write_text('["purchase"]')
    (dirs["home"] / ".cdk.json").write_text('{"context": "purchase"}')
    assert file_consents() == []


def test_the_app_reports_a_consent_in_a_file_with_the_config_problems(dirs, monkeypatch, capsys):
    """A config that fails to load still gets the refusal in the same run: the files need no config."""
    path = write_context(dirs, "~/.cdk.json", {"purchase": "chat-p5e-2027q1"})
    config = dirs["app"] / "broken.yaml"
    config.write_text("endpoints:\n  - name: Chat\n    scaling: {max_instances: 0}\n")
    spec = importlib.util.spec_from_file_location("repository_app", ROOT / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # What the CLI would pass in CDK_CONTEXT_JSON: -c config=..., and the file's purchase merged in.
    monkeypatch.setattr(
        module,
        "App",
        lambda **options: App(
            **{
                **options,
                "context": {**options.get("context", {}), "config": str(config), "purchase": "chat-p5e-2027q1"},
            }
        ),
    )
    with pytest.raises(SystemExit) as exit_:
        module.main()
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert f"problem(s) in {config}" in err and "endpoints[0].scaling.max_instances: got 0" in err
    assert (
        f"error: 1 problem(s) in the consent to spend (-c purchase / -c extend):\n  - "
        f"{refusal('~/.cdk.json', 'purchase', 'chat-p5e-2027q1', path)}"
    ) in err


def test_a_mistyped_consent_is_named_with_the_configs_other_problems(tmp_path):
    """The config has its own problem: the consent's names are still checked, in the same round, against the
    plans the config declares (as written, before validation)."""
    from sagemaker_llm_cdk.config.loading import load_config

    path = tmp_path / "chat.yaml"
    path.write_text(f"extends: {ROOT / 'config' / 'examples' / 'reserved-capacity.yaml'}\nremoval: delete\n")
    with pytest.raises(ConfigurationError) as raised:
        load_config(path, consent={"purchase": ["chat-p5e-typo"], "extend": []})
    message = str(raised.value)
    assert "2 problem(s)" in message
    assert "removal: got 'delete'" in message
    assert (
        "-c purchase: got 'chat-p5e-typo'; allowed: names of plans declared with mode reserve: chat-p5e-2027q1; "
        "fix: correct the name, or declare the plan before consenting to purchase it"
    ) in message
    assert (
        "chat-p5e-typo'; allowed: names of plans declared with mode reserve: chat-p5e-2027q1; fix: correct the "
        "name, or declare the plan before consenting to purchase it\n" in message + "\n"
    )  # no file line: -c
    load_config(ROOT / "config" / "examples" / "reserved-capacity.yaml", consent={"purchase": ["chat-p5e-2027q1"]})
