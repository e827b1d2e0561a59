"""Tests for constructs/sagemaker_llm_cdk/capacity_plan.py: CapacityPlan, CapacityPlanSpec and the endpoint binding."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack, Validations
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks
from sagemaker_llm_cdk import ConfigurationError, InstanceScaling, LlmEndpoint
from sagemaker_llm_cdk.capacity.capacity_plan import CapacityPlan
from sagemaker_llm_cdk.settings.capacity import CapacityPlanSpec, spec_binding_problems
from sagemaker_llm_cdk.settings.hosting import EndpointOptions
from support.stacks import endpoint as support_endpoint

pytestmark = pytest.mark.synth

INSTANCE = "ml.p5e.48xlarge"
PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/chat-p5e-existing"
PLAN_ARN_PATTERN = "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:training-plan/"

RESERVE: dict[str, Any] = {
    "name": "chat-p5e",
    "instance_type": INSTANCE,
    "instance_count": 2,
    "duration_days": 30,
    "start_after": datetime(2026, 1, 15, tzinfo=UTC),
    "end_before": datetime(2026, 3, 31, tzinfo=UTC),
    "max_upfront_fee_usd": Decimal("250000.50"),
}
BOUGHT = "Test-chat-p5e"
"""The TrainingPlanName a plan of ``RESERVE`` gets in stack ``Test``: ``<stack name>-<config name>``."""
CONSENT = {"purchase": "chat-p5e"}
"""The deploy command's consent: ``cdk deploy -c purchase=chat-p5e``."""
BOUND_ENV = Environment(account="123456789012", region="us-east-1")
EXISTING: dict[str, Any] = {"existing_plan_arn": PLAN_ARN, "instance_type": INSTANCE, "instance_count": 4}


# --------------------------------------------------------------------------- helpers


def render(value: Any) -> Any:
    """A CloudFormation value as text: Ref -> ${X}, GetAtt -> ${X.Attr}, Join concatenated."""
    if isinstance(value, dict) and len(value) == 1:
        ((kind, arg),) = value.items()
        if kind == "Ref":
            return "${" + arg + "}"
        if kind == "Fn::GetAtt":
            return "${" + ".".join(arg) + "}"
        if kind == "Fn::Join":
            return arg[0].join(str(render(part)) for part in arg[1])
    if isinstance(value, list):
        return [render(v) for v in value]
    return value


def logical_id(stack: Stack, construct: Any) -> str:
    return stack.resolve(construct.node.default_child.logical_id)


def policy_statements(template: Template, stack: Stack, role: Any) -> list[dict[str, Any]]:
    """Every statement of the inline policies attached to ``role`` (rendered)."""
    role_id = logical_id(stack, role)
    statements = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return [{**s, "Resource": render(s["Resource"])} for s in statements]


def grants(statements: list[dict[str, Any]]) -> dict[str, list[str]]:
    """action -> sorted resources, over all statements (all Allow)."""
    out: dict[str, list[str]] = {}
    for statement in statements:
        assert statement["Effect"] == "Allow"
        assert "Condition" not in statement
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for action in actions:
            out.setdefault(action, []).extend(resources)
    return {action: sorted(resources) for action, resources in out.items()}


def stack_with(
    spec: dict[str, Any], *, env: Environment | None = None, context: dict[str, Any] | None = None, **kwargs: Any
) -> tuple[Stack, CapacityPlan]:
    stack = Stack(App(context=context or {}), "Test", env=env)
    return stack, CapacityPlan(stack, "Plan", settings=spec, **kwargs)


def bound_endpoint(stack: Stack, plan: CapacityPlan, id: str = "Endpoint", **kwargs: Any) -> LlmEndpoint:
    kwargs.setdefault("instance_type", plan.instance_type)
    kwargs.setdefault("scaling", InstanceScaling(min_instances=1, max_instances=plan.instance_count))
    return support_endpoint(stack, id, capacity_plan=plan, **kwargs)


# --------------------------------------------------------------------------- reserve mode


@pytest.fixture(scope="module")
def reserved() -> tuple[Stack, CapacityPlan, LlmEndpoint, Template]:
    stack, plan = stack_with(RESERVE, context=CONSENT)
    endpoint = bound_endpoint(stack, plan)
    return stack, plan, endpoint, Template.from_stack(stack)


def test_custom_resource_buys_with_string_properties(reserved):
    stack, plan, _, template = reserved
    template.resource_count_is("Custom::SageMakerCapacityPlan", 1)
    template.has_resource_properties(
        "Custom::SageMakerCapacityPlan",
        {
            "ServiceToken": {"Fn::GetAtt": [Match.any_value(), "Arn"]},
            "PlanName": BOUGHT,
            "InstanceType": INSTANCE,
            "InstanceCount": "2",
            "DurationDays": "30",
            "StartTimeAfter": "2026-01-15T00:00:00Z",
            "EndTimeBefore": "2026-03-31T00:00:00Z",
            "MaxUpfrontFeeUsd": "250000.50",
            "Purchase": "approved",
        },
    )


def test_service_token_is_the_provider_framework_that_calls_the_purchase_handler(reserved):
    stack, plan, _, template = reserved
    (resource,) = template.find_resources("Custom::SageMakerCapacityPlan").values()
    framework_id = resource["Properties"]["ServiceToken"]["Fn::GetAtt"][0]
    framework = template.to_json()["Resources"][framework_id]
    handler_id = logical_id(stack, plan.on_event_function)
    assert framework["Properties"]["Handler"] == "framework.onEvent"
    assert framework["Properties"]["Environment"]["Variables"]["USER_ON_EVENT_FUNCTION_ARN"] == {
        "Fn::GetAtt": [handler_id, "Arn"]
    }
    assert framework["Properties"]["Role"] == {"Fn::GetAtt": [logical_id(stack, plan.provider_role), "Arn"]}
    handler = template.to_json()["Resources"][handler_id]["Properties"]
    assert handler["Handler"] == "index.handler"
    assert handler["Runtime"].startswith("python3.")
    assert handler["TracingConfig"] == {"Mode": "Active"}


def test_custom_resource_is_retained_on_delete_and_replace(reserved):
    _, _, _, template = reserved
    template.has_resource(
        "Custom::SageMakerCapacityPlan", {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    )


def test_purchase_handler_policy_is_exactly_the_plan_actions(reserved):
    stack, plan, _, template = reserved
    statements = policy_statements(template, stack, plan.on_event_function.role)
    logs_arn = "${" + logical_id(stack, plan.node.find_child("OnEventLogs")) + ".Arn}"
    assert grants(statements) == {
        "logs:CreateLogStream": [logs_arn],
        "logs:PutLogEvents": [logs_arn],
        "xray:PutTraceSegments": ["*"],
        "xray:PutTelemetryRecords": ["*"],
        # The stack-prefixed name has capitals: its lowercase ARN form is allowed too (IAM compares exactly).
        "sagemaker:DescribeTrainingPlan": [PLAN_ARN_PATTERN + BOUGHT, PLAN_ARN_PATTERN + BOUGHT.lower()],
        "sagemaker:DescribeTrainingPlanExtensionHistory": [
            PLAN_ARN_PATTERN + BOUGHT,
            PLAN_ARN_PATTERN + BOUGHT.lower(),
        ],
        "sagemaker:CreateTrainingPlan": [PLAN_ARN_PATTERN + BOUGHT, PLAN_ARN_PATTERN + BOUGHT.lower()],
        "sagemaker:CreateReservedCapacity": [
            "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:reserved-capacity/*"
        ],
        "sagemaker:SearchTrainingPlanOfferings": ["*"],
        "cloudformation:DescribeStacks": ["${AWS::StackId}"],  # only its own stack: is a change being rolled back
    }
    role = template.to_json()["Resources"][logical_id(stack, plan.on_event_function.role)]
    assert "ManagedPolicyArns" not in role["Properties"]


def test_provider_framework_role_only_logs_and_invokes_the_handler(reserved):
    stack, plan, _, template = reserved
    handler_arn = "${" + logical_id(stack, plan.on_event_function) + ".Arn}"
    logs_arn = "${" + logical_id(stack, plan.node.find_child("ProviderLogs")) + ".Arn}"
    assert grants(policy_statements(template, stack, plan.provider_role)) == {
        "logs:CreateLogStream": [logs_arn],
        "logs:PutLogEvents": [logs_arn],
        "lambda:InvokeFunction": sorted([handler_arn, handler_arn + ":*"]),
        "lambda:GetFunction": [handler_arn],
    }
    role = template.to_json()["Resources"][logical_id(stack, plan.provider_role)]
    assert "ManagedPolicyArns" not in role["Properties"]


def test_no_lambda_has_a_managed_policy_or_default_log_group(reserved):
    _, _, _, template = reserved
    for role in template.find_resources("AWS::IAM::Role").values():
        assert "ManagedPolicyArns" not in role["Properties"]
    for function in template.find_resources("AWS::Lambda::Function").values():
        assert "LogGroup" in function["Properties"]["LoggingConfig"]
    for group in template.find_resources("AWS::Logs::LogGroup").values():
        assert group["Properties"]["RetentionInDays"] == 365


def test_outputs_end_time_fee_and_retention(reserved):
    stack, plan, _, template = reserved
    resource_id = logical_id(stack, plan)
    outputs = template.find_outputs("*")
    values = {key: render(output["Value"]) for key, output in outputs.items()}
    assert "${" + resource_id + ".EndTime}" in values.values()
    assert "${" + resource_id + ".UpfrontFee} ${" + resource_id + ".CurrencyCode}" in values.values()
    assert "${" + resource_id + ".TrainingPlanArn}" in values.values()
    (retained,) = [v for v in values.values() if isinstance(v, str) and "retained" in v]
    assert "not refundable" in retained and "chat-p5e" in retained
    assert f"{INSTANCE} x 2 for 30 days" in retained


def test_plan_arn_and_training_plan_arns_come_from_the_custom_resource(reserved):
    stack, plan, _, _ = reserved
    expected = {"Fn::GetAtt": [logical_id(stack, plan), "TrainingPlanArn"]}
    assert stack.resolve(plan.plan_arn) == expected
    assert stack.resolve(plan.training_plan_arns) == [expected]


def test_endpoint_variant_binds_the_plan_through_its_active_guard(reserved):
    stack, plan, endpoint, template = reserved
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "InstanceType": INSTANCE,
                        "CapacityReservationConfig": {
                            "CapacityReservationPreference": "capacity-reservations-only",
                            "MlReservationArn": {
                                "Fn::GetAtt": [logical_id(stack, endpoint.capacity_guard), "MlReservationArn"]
                            },
                        },
                    }
                )
            ],
        },
    )


def test_daily_rule_runs_the_expiry_check(reserved):
    stack, plan, _, template = reserved
    function_id = logical_id(stack, plan.expiry_function)
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(1 day)",
            "State": "ENABLED",
            "Targets": [Match.object_like({"Arn": {"Fn::GetAtt": [function_id, "Arn"]}})],
        },
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like(
                    {"TRAINING_PLAN_NAMES": BOUGHT, "POWERTOOLS_METRICS_NAMESPACE": "SageMakerLlm"}
                )
            },
        },
    )


def test_expiry_check_may_only_describe_the_bought_plan(reserved):
    stack, plan, _, template = reserved
    sagemaker = {
        a: r
        for a, r in grants(policy_statements(template, stack, plan.expiry_function.role)).items()
        if a.startswith("sagemaker:")
    }
    assert sagemaker == {"sagemaker:DescribeTrainingPlan": ["${" + logical_id(stack, plan) + ".TrainingPlanArn}"]}


def test_expiry_alarm_metric_threshold_dimension_and_action(reserved):
    stack, plan, _, template = reserved
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "SageMakerLlm",
            "MetricName": "CapacityPlanDaysLeft",
            "Dimensions": [{"Name": "TrainingPlanName", "Value": BOUGHT}],
            "Statistic": "Minimum",
            "Period": 86400,
            "EvaluationPeriods": 1,
            "ComparisonOperator": "LessThanThreshold",
            "Threshold": 7,
            "TreatMissingData": "notBreaching",
            "AlarmActions": [{"Ref": logical_id(stack, plan.alarm_topic)}],
        },
    )


def test_check_failure_alarm_watches_the_expiry_function_errors(reserved):
    stack, plan, _, template = reserved
    template.resource_count_is("AWS::CloudWatch::Alarm", 2)
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/Lambda",
            "MetricName": "Errors",
            "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": logical_id(stack, plan.expiry_function)}}],
            "Statistic": "Sum",
            "Period": 86400,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "Threshold": 1,
            "AlarmActions": [{"Ref": logical_id(stack, plan.alarm_topic)}],
        },
    )


def test_alarm_topic_is_kms_encrypted_with_a_key_cloudwatch_may_use(reserved):
    stack, plan, _, template = reserved
    topic = template.to_json()["Resources"][logical_id(stack, plan.alarm_topic)]
    key_id = topic["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
    key = template.to_json()["Resources"][key_id]
    assert key["Type"] == "AWS::KMS::Key" and key["Properties"]["EnableKeyRotation"] is True
    assert {
        "Sid": "CloudWatchAlarmsPublish",
        "Effect": "Allow",
        "Principal": {"Service": "cloudwatch.amazonaws.com"},
        "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
        "Resource": "*",
    } in key["Properties"]["KeyPolicy"]["Statement"]
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            },
        },
    )


def test_metric_days_left():
    _, plan = stack_with(EXISTING)
    metric = plan.metric_days_left()
    assert (metric.namespace, metric.metric_name, metric.statistic) == (
        "SageMakerLlm",
        "CapacityPlanDaysLeft",
        "Minimum",
    )
    assert metric.dimensions == {"TrainingPlanName": "chat-p5e-existing"}
    assert metric.period.to_seconds() == 86400


# --------------------------------------------------------------------------- existing plans


@pytest.fixture(scope="module")
def imported() -> tuple[Stack, CapacityPlan, Template]:
    stack, plan = stack_with({**EXISTING, "expiry_warning_days": 14})
    bound_endpoint(stack, plan)
    return stack, plan, Template.from_stack(stack)


def test_existing_plan_buys_nothing(imported):
    _, plan, template = imported
    template.resource_count_is("Custom::SageMakerCapacityPlan", 0)
    assert plan.custom_resource is None and plan.provider is None and plan.on_event_function is None
    template.resource_count_is("AWS::Lambda::Function", 3)  # the expiry check, the endpoint's guard and its framework
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert not {"sagemaker:CreateTrainingPlan", "sagemaker:ExtendTrainingPlan"} & set(actions)
    outputs = [render(o["Value"]) for o in template.find_outputs("*").values()]
    assert outputs == [PLAN_ARN]


def test_existing_plan_arn_binds_the_endpoint_through_the_guard(imported):
    stack, plan, template = imported
    assert plan.plan_arn == PLAN_ARN and plan.training_plan_arns == [PLAN_ARN]
    template.has_resource_properties("Custom::SageMakerCapacityPlanGuard", {"PlanName": PLAN_ARN, "Bound": "true"})
    (guard_id,) = template.find_resources("Custom::SageMakerCapacityPlanGuard")
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "CapacityReservationConfig": {
                            "CapacityReservationPreference": "capacity-reservations-only",
                            "MlReservationArn": {"Fn::GetAtt": [guard_id, "MlReservationArn"]},
                        }
                    }
                )
            ],
        },
    )


def test_existing_plan_is_watched_with_its_own_warning_days(imported):
    stack, plan, template = imported
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "MetricName": "CapacityPlanDaysLeft",
            "Threshold": 14,
            "Dimensions": [{"Name": "TrainingPlanName", "Value": "chat-p5e-existing"}],
        },
    )
    sagemaker = {
        a: r
        for a, r in grants(policy_statements(template, stack, plan.expiry_function.role)).items()
        if a.startswith("sagemaker:")
    }
    assert sagemaker == {"sagemaker:DescribeTrainingPlan": [PLAN_ARN]}


def test_existing_plan_by_name_in_the_stack_account_and_region():
    stack, plan = stack_with({"mode": "existing", "name": "Chat-P5e", "instance_type": INSTANCE, "instance_count": 1})
    assert render(stack.resolve(plan.plan_arn)) == PLAN_ARN_PATTERN + "Chat-P5e"
    template = Template.from_stack(stack)
    described = grants(policy_statements(template, stack, plan.expiry_function.role))["sagemaker:DescribeTrainingPlan"]
    # IAM matches ARNs case-sensitively: the exact name and its lowercase form, no wildcard.
    assert described == [PLAN_ARN_PATTERN + "Chat-P5e", PLAN_ARN_PATTERN + "chat-p5e"]


def test_from_plan_arn_and_a_given_alarm_topic():
    stack = Stack(App(), "Test")
    topic = sns.Topic(stack, "Alarms")
    plan = CapacityPlan.from_plan_arn(
        stack, "Plan", plan_arn=PLAN_ARN, instance_type=INSTANCE, instance_count=2, alarm_topic=topic
    )
    assert plan.mode == "existing" and plan.alarm_topic is topic
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::SNS::Topic", 1)
    template.resource_count_is("AWS::KMS::Key", 0)
    for alarm in template.find_resources("AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": logical_id(stack, topic)}]


def test_from_plan_arn_reports_problems_as_configuration_errors():
    with pytest.raises(ConfigurationError, match=re.escape("instance_count: got 5; allowed: one of 1, 2, 4")):
        CapacityPlan.from_plan_arn(
            Stack(App(), "Test"), "Plan", plan_arn=PLAN_ARN, instance_type=INSTANCE, instance_count=5
        )


# --------------------------------------------------------------------------- cdk-nag


@pytest.mark.parametrize("spec", [RESERVE, EXISTING], ids=["reserve", "existing"])
@pytest.mark.parametrize("env", [None, BOUND_ENV], ids=["agnostic", "bound"])
@pytest.mark.parametrize("context", [{}, CONSENT], ids=["no-consent", "consent"])
def test_cdk_nag_reports_no_errors(spec, env, context):
    app = App(context=context)
    stack = Stack(app, "Nag", env=env)
    plan = CapacityPlan(stack, "Plan", settings=spec)
    bound_endpoint(stack, plan)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged finding


def test_cdk_nag_still_flags_an_unreviewed_wildcard():
    from aws_cdk import aws_iam as iam

    app = App(context=CONSENT)
    stack = Stack(app, "Nag")
    plan = CapacityPlan(stack, "Plan", settings=RESERVE)
    plan.provider_role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["arn:aws:s3:::b/*"]))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(Exception, match="AwsSolutions-IAM5"):
        app.synth()


# --------------------------------------------------------------------------- validation: spec


def problem(spec_changes: dict[str, Any], *, drop: tuple[str, ...] = (), base: dict[str, Any] = RESERVE) -> str:
    """The ConfigurationError text for ``base`` changed by ``spec_changes`` (must fail)."""
    spec = {k: v for k, v in {**base, **spec_changes}.items() if k not in drop}
    with pytest.raises(ConfigurationError) as caught:
        stack_with(spec)
    return str(caught.value)


def test_error_names_the_construct_path():
    assert problem({"instance_count": 3}).startswith("1 problem(s) in Test/Plan:")


def test_missing_price_cap_says_what_would_be_bought_and_how_to_consent():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "max_upfront_fee_usd: got nothing (the field is missing); allowed: a price cap in USD greater than 0: "
            f"reserving {INSTANCE} x 2 for 30 days between 2026-01-15T00:00:00Z and 2026-03-31T00:00:00Z as capacity "
            "plan 'chat-p5e' is a purchase, paid upfront and never refunded; fix: set max_upfront_fee_usd to the most "
            "you agree to pay (USD); the purchase then happens only on a deploy with -c purchase=chat-p5e"
        ),
    ):
        stack_with({k: v for k, v in RESERVE.items() if k != "max_upfront_fee_usd"})


@pytest.mark.parametrize("value", [True, False])
def test_purchase_acknowledged_is_refused_with_a_migration_message(value):
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            f"purchase_acknowledged: got {value}; allowed: nothing: consent to buy is no longer a config field (a "
            "committed or copied config must never buy); fix: remove purchase_acknowledged and deploy the capacity "
            "stack with -c purchase=chat-p5e when you mean to buy"
        ),
    ):
        stack_with({**RESERVE, "purchase_acknowledged": value})


def test_purchase_acknowledged_is_refused_on_existing_plans_too():
    with pytest.raises(ConfigurationError, match=r"purchase_acknowledged: got True; allowed: nothing: consent"):
        stack_with({**EXISTING, "purchase_acknowledged": True})


def test_missing_cap_without_a_window_says_when():
    text = problem({}, drop=("max_upfront_fee_usd", "start_after", "end_before"))
    assert "1 problem(s)" in text
    assert f"reserving {INSTANCE} x 2 for 30 days at the earliest time SageMaker offers" in text


@pytest.mark.parametrize("value", [0, -5, "NaN"])
def test_price_cap_must_be_positive(value):
    with pytest.raises(ConfigurationError, match=r"max_upfront_fee_usd: got .*; allowed: "):
        stack_with({**RESERVE, "max_upfront_fee_usd": value})


def test_plan_name_pattern():
    with pytest.raises(
        ConfigurationError,
        match=re.escape("name: got 'chat_p5e'; allowed: 1-64 characters: letters, digits and hyphens"),
    ):
        stack_with({**RESERVE, "name": "chat_p5e"})


@pytest.mark.parametrize("name", ["a" * 65, "a-" * 32 + "b"])
def test_plan_name_is_at_most_64_characters(name):
    with pytest.raises(ConfigurationError, match=re.escape(f"name: got '{name}'; allowed: 1-64 characters")):
        stack_with({**RESERVE, "name": name})


def test_reserve_needs_a_name():
    with pytest.raises(
        ConfigurationError, match=re.escape("name: got nothing (the field is missing); allowed: the new plan's name")
    ):
        stack_with({k: v for k, v in RESERVE.items() if k != "name"})


def test_instance_type_must_be_offered_for_capacity_plans():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "instance_type: got 'ml.g6e.12xlarge'; allowed: an instance type SageMaker accepts for capacity plans"
        ),
    ):
        stack_with({**RESERVE, "instance_type": "ml.g6e.12xlarge"})


@pytest.mark.parametrize("count", [0, 3, 65, 128, 256])
def test_instance_count_must_be_an_offered_count(count):
    # SageMaker documents 1, 2, 4, 8, 16, 32 or 64 instances per plan; botocore's model allows up to 256.
    with pytest.raises(
        ConfigurationError, match=re.escape(f"instance_count: got {count}; allowed: one of 1, 2, 4, 8, 16, 32, 64")
    ):
        stack_with({**RESERVE, "instance_count": count})


@pytest.mark.parametrize("days", [0, 183])
def test_duration_is_1_to_182_days(days):
    with pytest.raises(ConfigurationError, match=re.escape(f"duration_days: got {days}; allowed: whole days 1-182")):
        stack_with({**RESERVE, "duration_days": days, "end_before": datetime(2027, 1, 1, tzinfo=UTC)})


def test_duration_is_whole_days():
    with pytest.raises(ConfigurationError, match=re.escape("duration_days: got 1.5; allowed: a whole number")):
        stack_with({**RESERVE, "duration_days": 1.5})


def test_reserve_needs_a_duration():
    with pytest.raises(
        ConfigurationError,
        match=re.escape("duration_days: got nothing (the field is missing); allowed: whole days 1-182"),
    ):
        stack_with({k: v for k, v in RESERVE.items() if k != "duration_days"})


@pytest.mark.parametrize("field", ["start_after", "end_before"])
def test_window_times_need_a_time_zone(field):
    with pytest.raises(
        ConfigurationError,
        match=re.escape(f"{field}: got '2026-02-01T00:00:00'; allowed: a date-time with a time zone"),
    ):
        stack_with({**RESERVE, field: datetime(2026, 2, 1)})


def test_window_must_end_after_it_starts():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "end_before: got '2026-01-01T00:00:00Z'; allowed: later than start_after (2026-01-15T00:00:00Z)"
        ),
    ):
        stack_with({**RESERVE, "end_before": datetime(2026, 1, 1, tzinfo=UTC)})


def test_window_must_hold_the_duration():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "end_before: got '2026-02-01T00:00:00Z'; allowed: at least duration_days (30) after start_after"
        ),
    ):
        stack_with({**RESERVE, "end_before": datetime(2026, 2, 1, tzinfo=UTC)})


@pytest.mark.parametrize("days", [0, 61])
def test_expiry_warning_days_1_to_60(days):
    with pytest.raises(ConfigurationError, match=r"expiry_warning_days: got \d+; allowed: (at least 1|at most 60)"):
        stack_with({**RESERVE, "expiry_warning_days": days})


def test_unknown_keys_are_refused():
    with pytest.raises(ConfigurationError, match=re.escape("max_upfront_fee: got 1; allowed: known keys only")):
        stack_with({**RESERVE, "max_upfront_fee": 1})


def test_existing_arn_pattern():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "existing_plan_arn: got 'arn:aws:sagemaker:us-east-1:1234:training-plan/x'; allowed: "
            "arn:aws:sagemaker:<region>:<12-digit account>:training-plan/<plan name>"
        ),
    ):
        stack_with({**EXISTING, "existing_plan_arn": "arn:aws:sagemaker:us-east-1:1234:training-plan/x"})


def test_existing_arn_plan_name_pattern():
    with pytest.raises(ConfigurationError, match=re.escape("whose plan name is 1-64 letters, digits and hyphens")):
        stack_with({**EXISTING, "existing_plan_arn": PLAN_ARN + "_v2"})


def test_existing_arn_and_a_different_name():
    with pytest.raises(
        ConfigurationError,
        match=re.escape("name: got 'other'; allowed: 'chat-p5e-existing' (the name in existing_plan_arn), or nothing"),
    ):
        stack_with({**EXISTING, "name": "other"})


def test_existing_mode_needs_an_arn_or_a_name():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "name: got nothing (the field is missing); allowed: the existing plan's name, or existing_plan_arn"
        ),
    ):
        stack_with({"mode": "existing", "instance_type": INSTANCE, "instance_count": 2})


@pytest.mark.parametrize("field", ["duration_days", "start_after", "end_before", "max_upfront_fee_usd"])
def test_existing_mode_refuses_purchase_fields(field):
    with pytest.raises(
        ConfigurationError,
        match=re.escape(f"{field}: got ")
        + ".*"
        + re.escape("allowed: nothing when using an existing plan: nothing is bought"),
    ):
        stack_with({**EXISTING, field: RESERVE[field]})


def test_existing_mode_needs_instance_type_and_count_for_the_binding():
    text = problem({}, base=EXISTING, drop=("instance_type", "instance_count"))
    assert "instance_type: got nothing (the field is missing)" in text
    assert "instance_count: got nothing (the field is missing)" in text


def test_reserve_mode_refuses_an_existing_arn():
    with pytest.raises(
        ConfigurationError,
        match=re.escape("existing_plan_arn: got '" + PLAN_ARN + "'; allowed: nothing with mode reserve"),
    ):
        stack_with({**RESERVE, "mode": "reserve", "existing_plan_arn": PLAN_ARN})


def test_existing_arn_must_be_in_the_stack_region_and_account():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "existing_plan_arn: got '" + PLAN_ARN + "'; allowed: a plan in this stack's region (eu-west-1)"
        ),
    ):
        stack_with(EXISTING, env=Environment(account="123456789012", region="eu-west-1"))
    with pytest.raises(ConfigurationError, match=re.escape("allowed: a plan in this stack's account (210987654321)")):
        stack_with(EXISTING, env=Environment(account="210987654321", region="us-east-1"))


def test_a_plan_is_declared_once_per_app():
    stack, _ = stack_with(RESERVE)
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "name: got 'chat-p5e'; allowed: a plan no other CapacityPlan in this app declares (Test/Plan does, "
            "as TrainingPlanName Test-chat-p5e)"
        ),
    ):
        CapacityPlan(stack, "Again", settings={**RESERVE, "max_upfront_fee_usd": 1})


# --------------------------------------------------------------------------- validation: binding


def test_endpoint_instance_type_must_equal_the_plan():
    stack, plan = stack_with(RESERVE)
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            f"instance_type: got 'ml.p5en.48xlarge'; allowed: {INSTANCE}, the instance type of capacity plan 'chat-p5e'"
        ),
    ):
        bound_endpoint(stack, plan, instance_type="ml.p5en.48xlarge")


def test_endpoint_max_instances_within_the_plan_count():
    stack, plan = stack_with(RESERVE)
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "scaling.max_instances: got 3; allowed: at most 2, the instances capacity plan 'chat-p5e' reserves"
        ),
    ):
        bound_endpoint(stack, plan, scaling=InstanceScaling(min_instances=1, max_instances=3))


def test_one_endpoint_per_plan():
    stack, plan = stack_with(RESERVE)
    bound_endpoint(stack, plan, "First")
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "capacity_plan: got 'Test/Plan'; allowed: a capacity plan no other endpoint uses (one endpoint per plan); "
            "Test/First already runs on 'Test-chat-p5e'"
        ),
    ):
        bound_endpoint(stack, plan, "Second")


def test_one_endpoint_per_plan_across_stacks_of_an_app():
    app = App()
    plan = CapacityPlan(Stack(app, "Plans"), "Plan", settings=EXISTING)
    bound_endpoint(Stack(app, "A"), plan, "Chat")
    with pytest.raises(ConfigurationError, match=re.escape("Plans/Plan")):
        bound_endpoint(Stack(app, "B"), plan, "Chat")


def test_spec_binding_problems_is_pure_for_the_config_model():
    spec = CapacityPlanSpec(**EXISTING)
    ok = EndpointOptions(instance_type=INSTANCE, scaling=InstanceScaling(max_instances=4))
    bad = EndpointOptions(instance_type="ml.p5en.48xlarge", scaling=InstanceScaling(max_instances=8))
    assert spec_binding_problems(spec, ok) == []
    assert [p.path for p in spec_binding_problems(spec, bad)] == ["instance_type", "scaling.max_instances"]


def test_the_purchase_handler_accepts_the_synthesized_properties(reserved, load_handler):
    _, _, _, template = reserved
    (resource,) = template.find_resources("Custom::SageMakerCapacityPlan").values()
    handler = load_handler("capacity_plan")
    props = handler.parse_properties(resource["Properties"])
    assert (props.plan_name, props.instance_count, props.duration_days) == (BOUGHT, 2, 30)
    assert props.max_upfront_fee_usd == Decimal("250000.50") and props.purchase == "approved"
    assert props.start_time_after == RESERVE["start_after"] and props.end_time_before == RESERVE["end_before"]


# --------------------------------------------------------------------------- physical names

ENVS = {"agnostic": None, "bound": Environment(account="123456789012", region="us-east-1")}
_TRAINING_PLAN_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}")  # botocore's TrainingPlanName pattern


@pytest.mark.parametrize("env", ENVS.values(), ids=ENVS.keys())
def test_a_plan_to_buy_is_named_after_its_stack_everywhere(env):
    stack, plan = stack_with({**RESERVE, "when_not_active": "on_demand"}, env=env, context=CONSENT)
    template = Template.from_stack(stack)
    assert (plan.plan_name, plan.config_name) == (BOUGHT, "chat-p5e")
    template.has_resource_properties(
        "Custom::SageMakerCapacityPlan", {"PlanName": BOUGHT, "ConsentName": "chat-p5e", "Purchase": "approved"}
    )
    template.has_resource_properties(
        "Custom::SageMakerLlmRunTimeParameter",
        {"ParameterName": f"/sagemaker-llm/state/capacity-plans/{BOUGHT}/status"},
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {"MetricName": "CapacityPlanDaysLeft", "Dimensions": [{"Name": "TrainingPlanName", "Value": BOUGHT}]},
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like(
                    {
                        "TRAINING_PLAN_NAMES": BOUGHT,
                        "STATUS_PARAMETERS": f"{BOUGHT}=/sagemaker-llm/state/capacity-plans/{BOUGHT}/status",
                    }
                )
            }
        },
    )


@pytest.mark.parametrize("env", ENVS.values(), ids=ENVS.keys())
def test_a_pinned_physical_name_is_bought_exactly_and_consent_stays_the_config_name(env):
    stack, plan = stack_with(
        {**RESERVE, "physical_name": "chat-p5e-bought-2026", "when_not_active": "on_demand"}, env=env, context=CONSENT
    )
    template = Template.from_stack(stack)
    assert plan.purchase_approved and plan.plan_name == "chat-p5e-bought-2026"
    template.has_resource_properties(
        "Custom::SageMakerCapacityPlan", {"PlanName": "chat-p5e-bought-2026", "Purchase": "approved"}
    )
    template.has_resource_properties(
        "Custom::SageMakerLlmRunTimeParameter",
        {"ParameterName": "/sagemaker-llm/state/capacity-plans/chat-p5e-bought-2026/status"},
    )


def test_consent_by_the_physical_name_is_no_consent():
    stack, plan = stack_with(RESERVE, context={"purchase": BOUGHT})
    assert not plan.purchase_approved
    Template.from_stack(stack).has_resource_properties("Custom::SageMakerCapacityPlan", {"Purchase": "not-approved"})


def test_an_existing_plan_keeps_the_exact_name_given():
    stack, plan = stack_with(
        {"name": "chat-p5e-existing", "mode": "existing", "instance_type": INSTANCE, "instance_count": 2}
    )
    assert plan.plan_name == "chat-p5e-existing"
    Template.from_stack(stack).has_resource_properties(
        "AWS::Lambda::Function",
        {"Environment": {"Variables": Match.object_like({"TRAINING_PLAN_NAMES": "chat-p5e-existing"})}},
    )


def test_a_long_stack_name_is_cut_to_the_training_plan_name_limit_with_a_hash():
    app = App()
    first = CapacityPlan(Stack(app, "S" * 60), "Plan", settings=RESERVE)
    second = CapacityPlan(Stack(app, "S" * 59 + "T"), "Plan", settings=RESERVE)
    for plan in (first, second):
        assert len(plan.plan_name) == 64 and _TRAINING_PLAN_NAME.fullmatch(plan.plan_name)
    assert first.plan_name != second.plan_name


def test_name_prefix_names_the_plan_after_another_stack():
    stack = Stack(App(), "ChatCapacity")
    assert CapacityPlan(stack, "Plan", settings=RESERVE, name_prefix="Chat_Prod").plan_name == "Chat-Prod-chat-p5e"


@pytest.mark.parametrize("value", ["p" * 65, "chat_p5e", "-chat"])
def test_a_pinned_physical_name_must_be_a_training_plan_name(value):
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            f"physical_name: got '{value}'; allowed: 1-64 characters: letters, digits and hyphens, starting and "
            "ending with a letter or digit; fix: shorten the name"
        ),
    ):
        stack_with({**RESERVE, "physical_name": value})


def test_an_existing_plan_refuses_physical_name():
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "physical_name: got 'other'; allowed: nothing when using an existing plan: it is used by its name as "
            "given; fix: remove physical_name"
        ),
    ):
        stack_with({**EXISTING, "physical_name": "other"})


def test_two_plans_pinned_to_one_name_are_one_plan_declared_twice():
    stack, _ = stack_with({**RESERVE, "physical_name": "shared-plan"})
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "physical_name: got 'shared-plan'; allowed: a plan no other CapacityPlan in this app declares (Test/Plan "
            "does, as TrainingPlanName shared-plan)"
        ),
    ):
        CapacityPlan(stack, "Again", settings={**RESERVE, "name": "other", "physical_name": "shared-plan"})


@pytest.mark.parametrize(
    ("keyword", "message"),
    [
        (
            "spec",
            r"spec: got 'given'; allowed: settings=; fix: rename spec= to settings= \(the same CapacityPlanSpec\)",
        ),
        ("topic", r"topic: got 'x'; allowed: one of settings, alarm_topic, name_prefix; fix: remove topic="),
    ],
)
def test_a_plan_refuses_a_keyword_it_does_not_take(keyword, message):
    stack = Stack(App(), "Test")
    arguments = {"settings": EXISTING} if keyword != "spec" else {}
    with pytest.raises(ConfigurationError, match=message):
        CapacityPlan(stack, "Plan", **arguments, **{keyword: EXISTING if keyword == "spec" else "x"})
    assert stack.node.try_find_child("Plan") is None  # nothing half-created


def test_a_plan_without_settings_says_what_to_pass():
    with pytest.raises(ConfigurationError, match=r"settings: got nothing .*; fix: pass settings=CapacityPlanSpec\("):
        CapacityPlan(Stack(App(), "Test"), "Plan")
