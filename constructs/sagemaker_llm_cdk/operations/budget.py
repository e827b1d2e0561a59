"""``CostBudget``: an AWS Budgets monthly cost budget on a deployment's tagged resources, with spend alerts.

The synth refuses a config whose monthly ceiling is above the budget (``config.settings.AppConfig``), so at
deploy time the budget is what the account watches: a cost filter on one of the stack's tags
(``TagKeyValue`` ``user:<key>$<value>``, or CloudFormation's ``aws:cloudformation:stack-name`` tag) and on the
stack's region (Budgets is global: one budget per region a config is deployed to, each counting its own), and
notifications at ACTUAL and FORECASTED percents of the limit, e-mailed and/or published to the alarm topic.

Publishing to the topic needs two grants, both scoped to this account's budget (confused deputy): a topic
policy statement letting ``budgets.amazonaws.com`` ``sns:Publish`` with ``aws:SourceAccount`` and
``aws:SourceArn`` conditions, and (the alarm topic is KMS-encrypted) a key policy statement letting it use the
key with the same conditions. A tag used as a cost filter must be activated as a cost allocation tag in
Billing before the budget sees any cost.

The budget's name changes with its notifications. ``BudgetName`` and ``NotificationsWithSubscribers`` are
create-only (the ``AWS::Budgets::Budget`` schema): a change of either replaces the budget, and CloudFormation
creates the replacement before it deletes the old one, so a fixed name would fail the deploy (a custom-named
resource cannot be replaced). The name ends with a digest of the notifications as the template holds them
(thresholds, e-mail, topic) and of the full stack name: a new e-mail, threshold or topic gives a new name and the
replacement succeeds; the same config gives the same name on every synth; a limit or filter change keeps it
(those update in place).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import jsii
from aws_cdk import IStableStringProducer, Lazy, Stack, Token
from aws_cdk import aws_budgets as budgets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns

from constructs import Construct

STACK_NAME_TAG = "aws:cloudformation:stack-name"
"""The tag CloudFormation puts on the resources of a stack: the filter when the config has no tags."""


NAME_MAX = 100
"""``BudgetName``'s maximum length (botocore's budgets model)."""
REGION_ROOM = 25
"""Characters kept for the region when it is only known at deploy time (the longest region code has 15)."""
_DIGEST = 8


def budget_name(stack_name: str, region: str, create_only: Any) -> str:
    """``<stack>-<region>-monthly-<digest>``, at most ``NAME_MAX`` characters once ``region`` is resolved.

    ``create_only`` is the budget's create-only values as the template holds them (the notifications, resolved):
    the digest covers them and the full stack name, so a change of them gives a new name, and two stacks whose
    names are cut to the same start never share one. A long stack name is cut, never the digest or the region.
    """
    digest = hashlib.sha256(
        json.dumps([stack_name, create_only], sort_keys=True, separators=(",", ":")).encode("utf-8")
    ).hexdigest()[:_DIGEST]
    region_length = REGION_ROOM if Token.is_unresolved(region) else len(region)
    room = NAME_MAX - region_length - len("--monthly-") - _DIGEST
    return f"{stack_name[:room].rstrip('-')}-{region}-monthly-{digest}"


def tag_filter(key: str, value: str) -> str:
    """A Budgets ``TagKeyValue`` entry: ``user:project$llm`` for a tag you set, ``aws:...$v`` for AWS's own."""
    prefix = "" if key.startswith("aws:") else "user:"
    return f"{prefix}{key}${value}"


class CostBudget(Construct):
    """A monthly COST budget of ``max_usd_per_month`` USD on the resources tagged ``tag_key=tag_value``.

    Children: ``Resource`` (``AWS::Budgets::Budget``) and, with ``topic``, a statement in the topic's policy
    and in its key's policy for ``budgets.amazonaws.com``.

    :param emails: addresses alerted by e-mail. Default: none.
    :param topic: an SNS topic the alerts are published to as well (its key, when it has one, is granted).
    :param actual_percent / forecasted_percent: percents of the limit that alert on actual / forecasted spend.
    :param tag_key / tag_value: the cost filter. Default: the stack's ``aws:cloudformation:stack-name`` tag.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        max_usd_per_month: int,
        emails: Sequence[str] = (),
        topic: sns.ITopic | None = None,
        actual_percent: Sequence[int] = (80, 100),
        forecasted_percent: Sequence[int] = (100,),
        tag_key: str | None = None,
        tag_value: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        if not emails and topic is None:
            raise ValueError("CostBudget needs an e-mail address or a topic to notify")
        self.max_usd_per_month = max_usd_per_month
        self.tag_key = tag_key or STACK_NAME_TAG
        self.tag_value: str = tag_value if tag_key and tag_value is not None else stack.stack_name
        self._notifications: list[dict[str, Any]] = []  # the notifications in the template's terms (below)
        self.budget_name: str = Lazy.string(
            _Produce(lambda: budget_name(stack.stack_name, stack.region, stack.resolve(self._notifications)))
        )
        """Unique per account (budgets are global): the stack's name and region, and a digest of the notifications
        (read at synth, when every token they hold resolves), so that changing them replaces the budget."""
        self.budget_arn = stack.format_arn(
            service="budgets", region="", resource="budget", resource_name=self.budget_name
        )
        subscribers = [budgets.CfnBudget.SubscriberProperty(subscription_type="EMAIL", address=a) for a in emails]
        if topic is not None:
            subscribers.append(budgets.CfnBudget.SubscriberProperty(subscription_type="SNS", address=topic.topic_arn))
            self._let_budgets_publish(topic)
        notifications = [
            budgets.CfnBudget.NotificationWithSubscribersProperty(
                notification=budgets.CfnBudget.NotificationProperty(
                    notification_type=kind,
                    comparison_operator="GREATER_THAN",
                    threshold=percent,
                    threshold_type="PERCENTAGE",
                ),
                subscribers=subscribers,
            )
            for kind, percents in (("ACTUAL", actual_percent), ("FORECASTED", forecasted_percent))
            for percent in percents
        ]
        # The same values in the template's terms, for the name's digest.
        self._notifications[:] = [
            {
                "Notification": {
                    "NotificationType": kind,
                    "ComparisonOperator": "GREATER_THAN",
                    "Threshold": percent,
                    "ThresholdType": "PERCENTAGE",
                },
                "Subscribers": [{"SubscriptionType": s.subscription_type, "Address": s.address} for s in subscribers],
            }
            for kind, percents in (("ACTUAL", actual_percent), ("FORECASTED", forecasted_percent))
            for percent in percents
        ]
        self.actual_percent, self.forecasted_percent = tuple(actual_percent), tuple(forecasted_percent)
        self.resource = budgets.CfnBudget(
            self,
            "Resource",
            budget=budgets.CfnBudget.BudgetDataProperty(
                budget_name=self.budget_name,
                budget_type="COST",
                time_unit="MONTHLY",
                budget_limit=budgets.CfnBudget.SpendProperty(amount=max_usd_per_month, unit="USD"),
                # The stack's region too: AWS Budgets is global, so a config deployed to two regions (a router's)
                # makes one budget per region, and each must count its own region's spend against its limit.
                cost_filters={
                    "TagKeyValue": [tag_filter(self.tag_key, self.tag_value)],
                    "Region": [Stack.of(self).region],
                },
            ),
            notifications_with_subscribers=notifications,
        )

    def _let_budgets_publish(self, topic: sns.ITopic) -> None:
        stack = Stack.of(self)
        conditions = {
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {"aws:SourceArn": self.budget_arn},
        }
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="BudgetsPublish",
                principals=[iam.ServicePrincipal("budgets.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions=conditions,
            )
        )
        key: Any = getattr(topic, "master_key", None)
        if key is not None:
            key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="BudgetsPublish",
                    principals=[iam.ServicePrincipal("budgets.amazonaws.com")],
                    actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                    resources=["*"],
                    conditions=conditions,
                )
            )

    def summary(self) -> str:
        """One line for the synth log: limit, filter, thresholds."""
        value = self.tag_value if not Token.is_unresolved(self.tag_value) else "<stack name>"
        return (
            f"Budget: USD {self.max_usd_per_month:,} per month on resources tagged {self.tag_key}={value} "
            f"(AWS Budgets; alerts at {', '.join(f'{p}%' for p in self.actual_percent)} actual"
            + (f", {', '.join(f'{p}%' for p in self.forecasted_percent)} forecasted" if self.forecasted_percent else "")
            + f"); it sees no cost until {self.tag_key} is an active cost allocation tag in Billing"
        )


@jsii.implements(IStableStringProducer)
class _Produce:
    """A string CDK asks for at synth (``Lazy.string``), once every token it reads resolves."""

    def __init__(self, produce: Any) -> None:
        self._produce = produce

    def produce(self) -> str:
        return str(self._produce())
