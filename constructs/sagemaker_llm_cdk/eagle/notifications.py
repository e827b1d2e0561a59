"""Where an EAGLE loop says that a run went wrong: its SNS topic, and the rule for runs that never finished.

The topic is the caller's ``alarm_topic`` or a new KMS-encrypted one (``Notifications``). The state machine
publishes failures to it and may use its key; an EventBridge rule (``RunTimedOutOrAborted``) publishes the runs
that timed out or were aborted, allowed by a topic policy statement for that rule alone (its ARN and this
account) rather than for any rule, and by a key policy statement for EventBridge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import Aws, Names, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns

from ..core import grants
from ..core.storage import secure_key

if TYPE_CHECKING:
    from .optimization import EagleOptimization


def add_topic(eagle: EagleOptimization, alarm_topic: sns.ITopic | None) -> kms.IKey | None:
    """``eagle.topic``: ``alarm_topic``, or a new encrypted topic. Returns the new topic's key (None: given)."""
    if alarm_topic is not None:
        eagle.topic = alarm_topic
        return None
    topic_key = secure_key(eagle, "NotificationsKey", description=f"Encrypts EAGLE notifications of {eagle.node.path}")
    topic_key.add_to_resource_policy(_events_may_use_key())
    eagle.topic = sns.Topic(
        eagle,
        "Notifications",
        master_key=topic_key,
        enforce_ssl=True,
        display_name=f"EAGLE runs of {eagle.model_name}"[:100],
    )
    return topic_key


def grant_topic_key(eagle: EagleOptimization, alarm_topic: sns.ITopic | None, topic_key: kms.IKey | None) -> None:
    """Let the state machine publish to the encrypted topic, and EventBridge use a given topic's key."""
    if alarm_topic is None:
        assert topic_key is not None
        topic_key.grant(eagle.state_machine, "kms:Decrypt", "kms:GenerateDataKey")
    elif alarm_topic.master_key is not None:
        alarm_topic.master_key.grant(eagle.state_machine, "kms:Decrypt", "kms:GenerateDataKey")
        # EventBridge (timed-out/aborted runs) may only publish to an encrypted topic whose key lets it;
        # an imported key is left alone (add_to_resource_policy does nothing): grant it where the key lives.
        alarm_topic.master_key.add_to_resource_policy(_events_may_use_key())


def add_ended_badly_rule(eagle: EagleOptimization) -> None:
    """``eagle.ended_badly_rule``: runs that timed out or were aborted, published to the topic."""
    stack = Stack.of(eagle)
    eagle.ended_badly_rule = events.Rule(
        eagle,
        "RunTimedOutOrAborted",
        description=f"EAGLE runs of {eagle.model_name} that timed out or were aborted",
        event_pattern=events.EventPattern(
            source=["aws.states"],
            detail_type=["Step Functions Execution Status Change"],
            detail={"stateMachineArn": [eagle.state_machine_arn], "status": ["TIMED_OUT", "ABORTED"]},
        ),
    )
    # Not events_targets.SnsTopic: it adds an sns:Publish statement for events.amazonaws.com with no condition,
    # which lets any rule (of any account's events) publish. This rule alone may publish, by its ARN.
    eagle.ended_badly_rule.add_target(
        _SnsTarget(
            eagle.topic,
            events.RuleTargetInput.from_object(
                {
                    "model_name": eagle.model_name,
                    "status": events.EventField.from_path("$.detail.status"),
                    "execution": events.EventField.from_path("$.detail.executionArn"),
                    "reason": "The EAGLE run did not finish: it timed out or was stopped. A running optimization job "
                    "keeps running until its own time limit; check it in SageMaker.",
                }
            ),
        )
    )
    eagle.topic.add_to_resource_policy(
        iam.PolicyStatement(
            sid=f"EventsPublish{Names.unique_id(eagle.ended_badly_rule)[-16:]}",
            principals=[iam.ServicePrincipal("events.amazonaws.com")],
            actions=["sns:Publish"],
            resources=[eagle.topic.topic_arn],
            conditions={
                "ArnEquals": {"aws:SourceArn": eagle.ended_badly_rule.rule_arn},
                "StringEquals": {"aws:SourceAccount": stack.account},
            },
        )
    )
    grants.require_source_conditions(eagle.topic)


@jsii.implements(events.IRuleTarget)
class _SnsTarget:
    """An SNS topic as a rule target, without CDK's unconditioned topic policy grant (the caller adds its own)."""

    def __init__(self, topic: sns.ITopic, message: events.RuleTargetInput) -> None:
        self._topic = topic
        self._message = message

    def bind(self, rule: Any, id: str | None = None) -> events.RuleTargetConfig:
        return events.RuleTargetConfig(arn=self._topic.topic_arn, input=self._message)


def _events_may_use_key() -> iam.PolicyStatement:
    """Key policy statement letting EventBridge rules of this account publish to a topic encrypted with the key."""
    return iam.PolicyStatement(
        principals=[iam.ServicePrincipal("events.amazonaws.com")],
        actions=["kms:Decrypt", "kms:GenerateDataKey*"],
        resources=["*"],
        conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
    )
