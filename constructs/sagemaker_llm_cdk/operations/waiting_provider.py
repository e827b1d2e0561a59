"""The custom resource Provider framework with an is-complete waiter, as the library's custom resources build it.

Each such resource (``DeploymentCheck``, ``InferenceRouter``) gets the same framework: a log group for the
framework's functions (``ProviderLogs``), their two roles (``ProviderOnEventRole``, ``ProviderWaiterRole``) that
may write only there, a log group for the waiter state machine (``WaiterLogs``), and the ``Provider`` itself,
whose waiter role may write log streams only in its own log group (``scope_waiter_log_writes``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jsii
from aws_cdk import Duration, IStableAnyProducer, Lazy, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr

from constructs import Construct


@dataclass
class WaitingProvider:
    """A provider framework and what was made for it."""

    provider: cr.Provider
    framework_roles: list[iam.Role]
    """The framework's on-event role, then its waiter (is-complete and timeout) role."""
    waiter_logs: logs.LogGroup


def waiting_provider(
    scope: Construct,
    *,
    on_event_function: lambda_.IFunction,
    is_complete_function: lambda_.IFunction,
    query_interval: Duration,
    total_timeout: Duration,
    subject: str,
) -> WaitingProvider:
    """The provider framework under ``scope`` for the two functions; ``subject`` ends the roles' descriptions
    ("Custom resource framework that starts <subject>")."""
    framework_logs = logs.LogGroup(
        scope, "ProviderLogs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.RETAIN
    )
    framework_roles: list[iam.Role] = []
    for role_id, what in (("ProviderOnEventRole", "starts"), ("ProviderWaiterRole", "polls")):
        role = iam.Role(
            scope,
            role_id,
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Custom resource framework that {what} {subject}",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[framework_logs.log_group_arn]
            )
        )
        framework_roles.append(role)
    waiter_logs = logs.LogGroup(
        scope, "WaiterLogs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.RETAIN
    )
    provider = cr.Provider(
        scope,
        "Provider",
        on_event_handler=on_event_function,
        is_complete_handler=is_complete_function,
        query_interval=query_interval,
        total_timeout=total_timeout,
        framework_on_event_role=framework_roles[0],
        framework_complete_and_timeout_role=framework_roles[1],
        log_group=framework_logs,
        disable_waiter_state_machine_logging=False,
        waiter_state_machine_log_options=cr.LogOptions(
            destination=waiter_logs, level=sfn.LogLevel.ALL, include_execution_data=False
        ),
    )
    scope_waiter_log_writes(provider, waiter_logs)
    return WaitingProvider(provider, framework_roles, waiter_logs)


_LOG_WRITES = ("logs:CreateLogStream", "logs:PutLogEvents")


def scope_waiter_log_writes(provider: cr.Provider, log_group: logs.ILogGroup) -> None:
    """Move the waiter's log-stream writes from '*' to its own log group.

    CDK's waiter state machine grants its role the log-delivery actions (which have no resource type,
    https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs.html) together with
    ``logs:CreateLogStream``/``logs:PutLogEvents`` on '*'. Step Functions delivers execution logs
    through the log-delivery API, so the two writes are kept only on the waiter's own log group.
    """
    waiter = provider.node.find_child("waiter-state-machine")
    policy: Any = waiter.node.find_child("Role").node.find_child("DefaultPolicy")
    cfn_policy: Any = policy.node.default_child
    cfn_policy.policy_document = Lazy.any(_ScopedLogWrites(policy, log_group))


@jsii.implements(IStableAnyProducer)
class _ScopedLogWrites:
    def __init__(self, policy: iam.Policy, log_group: logs.ILogGroup) -> None:
        self._policy = policy
        self._log_group = log_group

    def produce(self) -> Any:
        stack = Stack.of(self._policy)
        document = stack.resolve(self._policy.document)
        moved = False
        for statement in document.get("Statement", []):
            actions = statement.get("Action")
            actions = [actions] if isinstance(actions, str) else list(actions or [])
            if statement.get("Resource") == "*" and any(a in _LOG_WRITES for a in actions):
                statement["Action"] = [a for a in actions if a not in _LOG_WRITES]
                moved = True
        document["Statement"] = [s for s in document.get("Statement", []) if s.get("Action") != []]
        if moved:
            document["Statement"].append(
                {
                    "Action": list(_LOG_WRITES),
                    "Effect": "Allow",
                    "Resource": stack.resolve(self._log_group.log_group_arn),
                }
            )
        return document
