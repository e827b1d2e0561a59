"""The daily expiry check of a capacity plan, its alarms, and the encrypted SNS topic they notify.

A function (child ``ExpiryCheck``) run daily by an EventBridge rule (``DailyExpiryCheck``) publishes the
days the plan has left (``DAYS_LEFT_METRIC``, one ``PLAN_NAME_DIMENSION`` dimension) and, with
``when_not_active: on_demand``, writes the status it saw to the plan's status parameter. One alarm
warns ``expiry_warning_days`` ahead of the end (``ExpiryAlarm``), another when the check itself fails on a
day (``CheckFailedAlarm``); both notify a KMS-encrypted topic (``encrypted_alarm_topic``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns

from constructs import Construct

from ..core.functions import python_function
from ..core.storage import secure_key
from .guard import status_parameter_name

if TYPE_CHECKING:
    from .capacity_plan import CapacityPlan

DAYS_LEFT_METRIC = "CapacityPlanDaysLeft"
"""Metric the daily check publishes (namespace ``functions.METRICS_NAMESPACE``), one dimension below."""
PLAN_NAME_DIMENSION = "TrainingPlanName"


def encrypted_alarm_topic(scope: Construct, id: str, *, description: str) -> sns.Topic:
    """An SNS topic for alarms: KMS-encrypted with a new key CloudWatch may use, TLS-only publishing.

    CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed ``aws/sns`` key,
    so the topic gets a customer-managed key whose policy lets ``cloudwatch.amazonaws.com``
    encrypt messages. Children: ``<id>Key`` and ``<id>``.
    """
    key = secure_key(scope, f"{id}Key", description=f"Encrypts {description}")
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="CloudWatchAlarmsPublish",
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"],
            resources=["*"],
        )
    )
    topic = sns.Topic(scope, id, master_key=key, enforce_ssl=True, display_name=description[:100])
    from ..core.grants import require_source_conditions

    require_source_conditions(topic)  # a service may publish only with aws:SourceArn/SourceAccount (confused deputy)
    return topic


def add_expiry_check(plan: CapacityPlan) -> None:
    """The daily check of ``plan`` (function, rule) and its two alarms to ``plan.alarm_topic``."""
    stack = Stack.of(plan)
    plan.expiry_function = python_function(
        plan,
        "ExpiryCheck",
        folder="capacity_plan_expiry",
        description=f"daily check of the days capacity plan {plan.plan_name} has left",
        environment={"TRAINING_PLAN_NAMES": plan.plan_name},
        timeout=Duration.minutes(1),
    )
    plan.expiry_function.add_to_role_policy(
        iam.PolicyStatement(
            sid="DescribeThisPlan",
            actions=["sagemaker:DescribeTrainingPlan"],
            resources=plan._described_arns(stack),
        )
    )
    if plan.status_parameter is not None:
        plan.expiry_function.add_environment(
            "STATUS_PARAMETERS", f"{plan.plan_name}={status_parameter_name(plan.plan_name)}"
        )
        plan.status_parameter.grant_write(plan.expiry_function)
        plan.status_parameter.grant_read(plan.expiry_function)
    plan.expiry_rule = events.Rule(
        plan,
        "DailyExpiryCheck",
        description=f"Daily check of the days capacity plan {plan.plan_name} has left",
        schedule=events.Schedule.rate(Duration.days(1)),
        targets=[
            events_targets.LambdaFunction(plan.expiry_function, retry_attempts=2, max_event_age=Duration.hours(6))
        ],
    )
    action = cloudwatch_actions.SnsAction(plan.alarm_topic)
    warning_days = plan.spec.expiry_warning_days
    plan.expiry_alarm = cloudwatch.Alarm(
        plan,
        "ExpiryAlarm",
        alarm_description=(
            f"Capacity plan {plan.plan_name} has fewer than {warning_days} days left; its endpoint "
            "gets no instances after it ends. Reserve the next plan now."
        ),
        metric=plan.metric_days_left(),
        threshold=warning_days,
        comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluation_periods=1,
        datapoints_to_alarm=1,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
    plan.expiry_alarm.add_alarm_action(action)
    plan.check_failed_alarm = cloudwatch.Alarm(
        plan,
        "CheckFailedAlarm",
        alarm_description=(
            f"The daily check of capacity plan {plan.plan_name} failed, so its days left are not "
            "known; see the function's log group."
        ),
        metric=plan.expiry_function.metric_errors(statistic="Sum", period=Duration.days(1)),
        threshold=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluation_periods=1,
        datapoints_to_alarm=1,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
    plan.check_failed_alarm.add_alarm_action(action)
