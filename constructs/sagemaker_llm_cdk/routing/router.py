"""``InferenceRouter``: one SageMaker inference router, its routing targets, who may call it, and how it is watched.

CloudFormation has no resource type for inference routers, so the router is a custom resource (provider
framework with an is-complete waiter, handler ``lambda/inference_router``) that creates it with a
``ClientToken``, waits for ``InService`` (or fails with its ``StatusReason``), updates it with the complete
routing targets (the API replaces all of them) and waits again, and deletes it and waits until it is gone. A new
``router_name`` is a new physical id: a new router is created and CloudFormation deletes the old one.

The handler tags every router it creates with its owner (``OWNER_TAGS``: the stack id and the custom resource's
logical id). The functions may describe, update and delete any router of the stack's account and region whose
owner tags are theirs, whatever its name: CloudFormation updates the functions' policy to a new ``router_name``
before its cleanup deletes the old router, and a rollback of the rename brings the old router back after the
update moved the policy away from it. The tags are also how the handler tells this resource's own earlier
router from a router of that name that someone else made, which it never adopts.

A routing target's destinations are endpoints or inference components in any account and any region of the
router's partition (``Destination``). The router calls each destination with the caller's own credentials, so
``grant_invoke`` allows the router *and* every destination, with their exact ARNs, and a destination in another
account also needs an endpoint policy there (``endpoint_policy``: AWS's documented policy, written for the
endpoint owner's stack).

Watching: AWS publishes the router's own metrics as OpenTelemetry metrics, queried with PromQL, outside the
``AWS/SageMaker`` namespace; this construct does not build PromQL alarms on attribute names it cannot check.
Instead a schedule (EventBridge Scheduler) runs ``DescribeInferenceRouter`` and publishes the destinations the
router cannot route to (``UnroutableDestinations``, ``UnknownDestinations``) and ``RouterNotInService``, each
with an alarm; the dashboard adds each destination's own ``AWS/SageMaker`` metrics from its region and account.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_cdk import Aws, CustomResource, Duration, RemovalPolicy, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr

from constructs import Construct

from ..core import grants
from ..core.errors import ConfigurationError, Problem
from ..core.functions import python_function
from ..core.metrics import SAGEMAKER_NAMESPACE, metric
from ..core.nag import acknowledge_resource
from ..core.name_rules import prefixed_name
from ..core.naming import stack_prefix
from ..core.regions import partition_of
from ..core.schedule_expression import schedule_problem
from ..core.settings import name_problem
from ..settings.routing import DESTINATION_ARN, MAX_DESTINATIONS, MAX_TARGETS, ROUTING_PREFERENCES, AsyncRouting

if TYPE_CHECKING:
    from ..hosting.component_base import InferenceComponentConstruct

RESOURCE_TYPE = "Custom::SageMakerInferenceRouter"
HANDLER_FOLDER = "inference_router"
METRICS_NAMESPACE = "SageMakerLlm/InferenceRouter"
"""Namespace of the scheduled check's metrics (dimensions InferenceRouterName, and RoutingTarget per target)."""
STACK_TAG = "sagemaker-llm-cdk:stack-id"
LOGICAL_ID_TAG = "sagemaker-llm-cdk:logical-id"
OWNER_TAGS = (STACK_TAG, LOGICAL_ID_TAG)
"""The tags the handler sets on each router it creates: the StackId and the custom resource's LogicalResourceId
(the handler's ``STACK_TAG`` and ``LOGICAL_ID_TAG``; a test keeps the two equal). Tags of ``tags`` may not use the
``sagemaker-llm-cdk:`` prefix."""
MAX_TAGS = 48
"""Tags a router may take from ``tags``: SageMaker's 50 per resource, less the two owner tags."""
OWNED_ROUTER_ACTIONS = (
    "sagemaker:DescribeInferenceRouter",
    "sagemaker:UpdateInferenceRouter",
    "sagemaker:DeleteInferenceRouter",
)
"""What the handler does to a router by name after a rename moved the policy away from it (the cleanup's delete and
its wait; a rollback's update and its wait): AWS evaluates ``aws:ResourceTag`` for exactly these three (and the
invoke actions), so they are allowed on any router whose owner tags are this resource's."""
MANAGE_ACTIONS = (
    "sagemaker:CreateInferenceRouter",
    "sagemaker:DescribeInferenceRouter",
    "sagemaker:UpdateInferenceRouter",
    "sagemaker:DeleteInferenceRouter",
    "sagemaker:AddTags",
    "sagemaker:DeleteTags",
)
DESCRIBE_DESTINATION_ACTIONS = ("sagemaker:DescribeEndpoint", "sagemaker:DescribeInferenceComponent")
"""SageMaker checks each destination with the caller's credentials when the router is created and described
(AWS's get-started policy grants these on the destinations)."""
TOTAL_TIMEOUT = Duration.minutes(30)
QUERY_INTERVAL = Duration.seconds(30)


_ANY_DESTINATION_ARN = re.compile(
    r"^arn:(?P<partition>[^:]+):sagemaker:(?P<region>[^:]+):(?P<account>[^:]+):"
    r"(?P<kind>endpoint|inference-component)/(?P<name>.+)$"
)
"""A destination ARN whose account, region or partition may be a deploy-time value (an environment-agnostic stack)."""


@dataclass(frozen=True)
class Destination:
    """One endpoint or inference component a routing target may send requests to.

    ``endpoint_arn`` is the endpoint IAM checks: for an inference component, the endpoint that hosts it (IAM
    checks both ARNs of a request that names a component); for an endpoint, its own ARN.
    """

    arn: str
    endpoint_arn: str

    @classmethod
    def from_arn(cls, arn: str, *, endpoint_name: str | None = None) -> Destination:
        """A destination by ARN; an inference component needs the name of its endpoint."""
        match = DESTINATION_ARN.match(arn)
        if match is None:
            raise ConfigurationError(
                [
                    Problem(
                        "arn",
                        arn,
                        "an endpoint or inference component ARN",
                        "copy the ARN from DescribeEndpoint or DescribeInferenceComponent",
                    )
                ],
                source="Destination",
            )
        if match.group("kind") == "endpoint":
            return cls(arn, arn)
        if endpoint_name is None:
            raise ConfigurationError(
                [
                    Problem(
                        "endpoint_name",
                        None,
                        "the endpoint that hosts the component",
                        "pass endpoint_name (IAM checks the endpoint's ARN too)",
                    )
                ],
                source="Destination",
            )
        endpoint = (
            f"arn:{match.group('partition')}:sagemaker:{match.group('region')}:{match.group('account')}:"
            f"endpoint/{endpoint_name}"
        )
        return cls(arn, endpoint)

    @classmethod
    def of_component(cls, component: InferenceComponentConstruct, *, account: str, region: str) -> Destination:
        """The inference component ``component`` as deployed in ``account`` and ``region`` (its name is literal:
        stack-prefixed or pinned), on its endpoint (whose physical name is literal too)."""
        partition = Aws.PARTITION if Token.is_unresolved(region) else (partition_of(region) or "aws")
        endpoint_name = getattr(component.endpoint, "physical_name", None) or component.endpoint.endpoint_name
        if Token.is_unresolved(component.component_name) or Token.is_unresolved(endpoint_name):
            raise ConfigurationError(
                [
                    Problem(
                        "component",
                        component.node.path,
                        "a component and endpoint whose names are known at synth",
                        "give the stack a literal name",
                    )
                ],
                source=component.node.path,
            )
        base = f"arn:{partition}:sagemaker:{region}:{account}"
        return cls(f"{base}:inference-component/{component.component_name}", f"{base}:endpoint/{endpoint_name}")

    def _part(self, name: str) -> str:
        match = _ANY_DESTINATION_ARN.match(self.arn)
        return match.group(name) if match else ""

    @property
    def kind(self) -> str:
        """``endpoint`` or ``inference-component``."""
        return self._part("kind")

    @property
    def region(self) -> str:
        return self._part("region")

    @property
    def account(self) -> str:
        return self._part("account")

    @property
    def partition(self) -> str:
        return self._part("partition")

    @property
    def name(self) -> str:
        return self._part("name")

    @property
    def endpoint_name(self) -> str:
        return self.endpoint_arn.rsplit("/", 1)[-1]

    def iam_arns(self) -> list[str]:
        """The ARNs IAM checks for a request to this destination, each as written and in lowercase (SageMaker
        writes names in lowercase in the ARNs it returns; IAM compares ARNs as written)."""
        found: list[str] = []
        for arn in dict.fromkeys([self.endpoint_arn, self.arn]):
            for form in (arn, _lower_name(arn)):
                if form not in found:
                    found.append(form)
        return found


@dataclass(frozen=True)
class RouterTarget:
    """One routing target: the name callers pass, its destinations, and its options (``RoutingTarget``)."""

    name: str
    destinations: tuple[Destination, ...]
    routing_preference: str | None = None
    async_inference: AsyncRouting | None = None

    def api(self) -> dict[str, Any]:
        """The target as ``CreateInferenceRouter`` / ``UpdateInferenceRouter`` take it."""
        body: dict[str, Any] = {"Name": self.name, "Destinations": [{"ResourceArn": d.arn} for d in self.destinations]}
        if self.routing_preference is not None:
            body["RoutingPreference"] = self.routing_preference
        a = self.async_inference
        if a is not None:
            output: dict[str, Any] = {"S3OutputPath": a.s3_output_path, "S3FailurePath": a.s3_failure_path}
            if a.kms_key_arn is not None:
                output["KmsKeyId"] = a.kms_key_arn
            notification = {
                k: v
                for k, v in (("SuccessTopic", a.success_topic_arn), ("ErrorTopic", a.error_topic_arn))
                if v is not None
            }
            if notification:
                output["NotificationConfig"] = notification
            config: dict[str, Any] = {"OutputConfig": output}
            if a.max_time_in_backlog_seconds is not None:
                config["ClientConfig"] = {"MaxTimeInBacklogSeconds": a.max_time_in_backlog_seconds}
            body["AsyncInferenceConfig"] = config
        return body


def target_problems(targets: Sequence[RouterTarget], *, region: str | None) -> list[Problem]:
    """What SageMaker would refuse in ``targets`` for a router in ``region`` (None: not known at synth)."""
    problems: list[Problem] = []
    if not 1 <= len(targets) <= MAX_TARGETS:
        problems.append(
            Problem(
                "targets",
                len(targets),
                f"1-{MAX_TARGETS} routing targets",
                "split the models over several routers" if targets else "add a routing target",
            )
        )
    partition = partition_of(region) if region else None
    seen: set[str] = set()
    for t, target in enumerate(targets):
        where = f"targets[{t}]"
        problem = name_problem(f"{where}.name", target.name, "RoutingTargetName")
        if problem:
            problems.append(problem)
        if target.name in seen:
            problems.append(Problem(f"{where}.name", target.name, "a name no other target uses", "rename the target"))
        seen.add(target.name)
        if not 1 <= len(target.destinations) <= MAX_DESTINATIONS:
            problems.append(
                Problem(
                    f"{where}.destinations",
                    len(target.destinations),
                    f"1-{MAX_DESTINATIONS} destinations (SageMaker's limit per routing target)",
                    "deploy the model to fewer stages, or route the rest with another target"
                    if target.destinations
                    else "deploy the model, or give destinations by ARN",
                )
            )
        arns = [d.arn.lower() for d in target.destinations]
        for d, destination in enumerate(target.destinations):
            if arns.index(destination.arn.lower()) != d:
                problems.append(
                    Problem(
                        f"{where}.destinations[{d}]",
                        destination.arn,
                        "each destination once",
                        "remove the repeated destination",
                    )
                )
            if partition is not None and destination.partition.startswith("aws") and destination.partition != partition:
                problems.append(
                    Problem(
                        f"{where}.destinations[{d}]",
                        destination.arn,
                        f"a destination in the router's partition ({partition})",
                        "route to destinations in the same partition as the router",
                    )
                )
            if target.async_inference is not None and destination.kind != "endpoint":
                problems.append(
                    Problem(
                        f"{where}.destinations[{d}]",
                        destination.arn,
                        "an asynchronous endpoint",
                        "an asynchronous target routes to asynchronous endpoints only",
                    )
                )
        if target.routing_preference is not None and target.routing_preference not in ROUTING_PREFERENCES:
            problems.append(
                Problem(
                    f"{where}.routing_preference",
                    target.routing_preference,
                    " or ".join(ROUTING_PREFERENCES),
                    "use one of SageMaker's values",
                )
            )
        if target.routing_preference == "InstancePoolOrder" and target.async_inference is None:
            problems.append(
                Problem(
                    f"{where}.routing_preference",
                    "InstancePoolOrder",
                    "LocalRegionFirst for a real-time target",
                    "make the target asynchronous",
                )
            )
    return problems


class InferenceRouter(Construct):
    """A SageMaker inference router with its routing targets (a custom resource), a health check and alarms.

    Attributes: ``router_name``, ``router_arn`` (built from the name: usable in policies anywhere),
    ``targets``, ``custom_resource``, ``provider``, ``on_event_function``, ``is_complete_function``,
    ``check_function``, ``schedule``, ``alarms`` (``Unroutable``, ``NotInService``), ``dashboard``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        targets: Sequence[RouterTarget],
        router_name: str | None = None,
        tags: Mapping[str, str] | None = None,
        check_schedule: str = "rate(5 minutes)",
        unroutable_alarm_periods: int = 2,
        alarm_topic: sns.ITopic | None = None,
    ) -> None:
        """
        :param targets: the routing targets, 1-20, each with 1-10 destinations.
        :param router_name: the InferenceRouterName. Default: ``<stack name>-<id>``. A new name replaces the router.
        :param tags: tags of the router (the stack's tags do not reach a custom resource's router).
        :param check_schedule: how often the health check runs (an EventBridge Scheduler expression).
        :param unroutable_alarm_periods: checks in a row with an Unroutable destination before the alarm fires.
        :param alarm_topic: where the alarms publish. Default: no action (the alarms still show).
        """
        super().__init__(scope, id)
        stack = Stack.of(self)
        region = None if Token.is_unresolved(stack.region) else stack.region
        self.router_name = router_name or prefixed_name(
            stack_prefix(self, field="router_name", what="the router's name", pin="pin the name with router_name"), id
        )
        problems = target_problems(targets, region=region)
        problem = name_problem("router_name", self.router_name, "InferenceRouterName")
        if problem:
            problems.insert(0, problem)
        problem = schedule_problem("check_schedule", check_schedule)
        if problem:
            problems.append(problem)
        problems.extend(tag_problems(tags or {}))
        if problems:
            raise ConfigurationError(problems, source=self.node.path)
        self.targets = tuple(targets)
        self.router_arn = stack.format_arn(
            service="sagemaker", resource="inference-router", resource_name=self.router_name
        )
        self._router_arns = list(
            dict.fromkeys(
                [
                    self.router_arn,
                    stack.format_arn(
                        service="sagemaker", resource="inference-router", resource_name=self.router_name.lower()
                    ),
                ]
            )
        )

        self.on_event_function = python_function(
            self,
            "OnEvent",
            folder=HANDLER_FOLDER,
            handler="index.on_event",
            description=f"creates, updates and deletes inference router {self.router_name} (custom resource)",
            timeout=Duration.minutes(1),
        )
        self.is_complete_function = python_function(
            self,
            "IsComplete",
            folder=HANDLER_FOLDER,
            handler="index.is_complete",
            description=f"waits until inference router {self.router_name} is InService or gone (custom resource)",
            timeout=Duration.minutes(1),
        )
        self.check_function = python_function(
            self,
            "Check",
            folder=HANDLER_FOLDER,
            handler="index.check",
            description=f"publishes the destinations inference router {self.router_name} cannot route to",
            timeout=Duration.minutes(1),
            environment={"ROUTER_NAME": self.router_name, "METRICS_NAMESPACE": METRICS_NAMESPACE},
        )
        destinations = self.destination_arns()
        manage_arns = self._manage_arns(stack)
        for function, actions in (
            (self.on_event_function, MANAGE_ACTIONS),
            (
                self.is_complete_function,
                (
                    "sagemaker:DescribeInferenceRouter",
                    "sagemaker:DeleteInferenceRouter",
                    "sagemaker:UpdateInferenceRouter",
                ),
            ),
            (self.check_function, ("sagemaker:DescribeInferenceRouter",)),
        ):
            grants.grant(
                function, sid="ManageThisRouter", actions=list(actions), resources=manage_arns, reason=_RENAME_REASON
            )
            grants.grant(
                function,
                sid="DescribeTheDestinations",
                actions=list(DESCRIBE_DESTINATION_ACTIONS),
                resources=destinations,
            )
        grants.grant(
            self.check_function,
            sid="PublishRouterHealth",
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": METRICS_NAMESPACE}},
            reason="cloudwatch:PutMetricData has no resource type; the cloudwatch:namespace condition limits "
            f"it to {METRICS_NAMESPACE}.",
        )

        framework_logs = logs.LogGroup(
            self, "ProviderLogs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.RETAIN
        )
        self.framework_roles: list[iam.Role] = []
        for role_id, what in (("ProviderOnEventRole", "starts"), ("ProviderWaiterRole", "polls")):
            role = iam.Role(
                self,
                role_id,
                assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                description=f"Custom resource framework that {what} inference router {self.router_name}",
            )
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[framework_logs.log_group_arn]
                )
            )
            self.framework_roles.append(role)
        self.waiter_logs = logs.LogGroup(
            self, "WaiterLogs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.RETAIN
        )
        self.provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=self.on_event_function,
            is_complete_handler=self.is_complete_function,
            query_interval=QUERY_INTERVAL,
            total_timeout=TOTAL_TIMEOUT,
            framework_on_event_role=self.framework_roles[0],
            framework_complete_and_timeout_role=self.framework_roles[1],
            log_group=framework_logs,
            disable_waiter_state_machine_logging=False,
            waiter_state_machine_log_options=cr.LogOptions(
                destination=self.waiter_logs, level=sfn.LogLevel.ALL, include_execution_data=False
            ),
        )
        from ..operations.deployment_check import _scope_waiter_log_writes

        _scope_waiter_log_writes(self.provider, self.waiter_logs)
        properties: dict[str, Any] = {"RouterName": self.router_name, "RoutingTargets": [t.api() for t in self.targets]}
        if tags:
            properties["Tags"] = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
        self.custom_resource = CustomResource(
            self,
            "Resource",
            service_token=self.provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties=properties,
        )
        self.node.default_child = self.custom_resource
        self._grant_owned_routers(stack)
        self.arn_from_sagemaker = self.custom_resource.get_att_string("InferenceRouterArn")
        """The ARN as SageMaker returns it (a deploy-time value; ``router_arn`` is known at synth)."""

        self.schedule_role = iam.Role(
            self,
            "ScheduleRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
            ),
            description=f"Lets EventBridge Scheduler run the health check of inference router {self.router_name}",
        )
        self.schedule = scheduler.Schedule(
            self,
            "CheckSchedule",
            schedule=scheduler.ScheduleExpression.expression(check_schedule),
            target=scheduler_targets.LambdaInvoke(
                self.check_function, role=self.schedule_role, input=scheduler.ScheduleTargetInput.from_object({})
            ),
            description=f"Checks which destinations inference router {self.router_name} can route to",
        )
        self.schedule.node.add_dependency(self.custom_resource)

        action = cloudwatch_actions.SnsAction(alarm_topic) if alarm_topic is not None else None
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        for key, metric_of, periods, what in (
            (
                "Unroutable",
                self.metric_unroutable_destinations(),
                unroutable_alarm_periods,
                "a destination the router cannot route to (being created, failed, or without capacity)",
            ),
            ("NotInService", self.metric_router_not_in_service(), 2, "the router is not InService (or is gone)"),
        ):
            alarm = metric_of.create_alarm(
                self,
                f"{key}Alarm",
                alarm_name=f"{self.router_name}-{key}"[:255],
                threshold=1,
                evaluation_periods=periods,
                datapoints_to_alarm=periods,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
                alarm_description=f"Inference router {self.router_name}: {what}. Requests still go to the other "
                "destinations; see DescribeInferenceRouter RoutingStatus.",
            )
            if action is not None:
                alarm.add_alarm_action(action)
                alarm.add_ok_action(action)
            self.alarms[key] = alarm
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=f"{self.router_name}-router"[:255])
        self.dashboard.add_widgets(*self.dashboard_widgets())
        _acknowledge_router(self)

    # ------------------------------------------------------------------ IAM
    def _manage_arns(self, stack: Stack) -> list[str]:
        prefix = stack_prefix(self, field="router_name")
        if not self.router_name.startswith(f"{prefix}-"):
            return list(self._router_arns)
        return list(
            dict.fromkeys(
                stack.format_arn(service="sagemaker", resource="inference-router", resource_name=f"{form}-*")
                for form in (prefix, prefix.lower())
            )
        )

    def _grant_owned_routers(self, stack: Stack) -> None:
        """Describe, update and delete on every router whose owner tags are this resource's, and ListTags on the
        account's routers (read only: the handler reads a router's owner tags before it brings it back)."""
        any_router = stack.format_arn(service="sagemaker", resource="inference-router", resource_name="*")
        logical_id = stack.get_logical_id(self.custom_resource.node.default_child)  # type: ignore[arg-type]
        owned = {
            "StringEquals": {
                f"aws:ResourceTag/{STACK_TAG}": Aws.STACK_ID,
                f"aws:ResourceTag/{LOGICAL_ID_TAG}": logical_id,
            }
        }
        for function in (self.on_event_function, self.is_complete_function):
            grants.grant(
                function,
                sid="ManageRoutersThisResourceCreated",
                actions=list(OWNED_ROUTER_ACTIONS),
                resources=[any_router],
                conditions=owned,
                reason=_OWNED_REASON,
            )
        grants.grant(
            self.on_event_function,
            sid="ReadRouterOwnerTags",
            actions=["sagemaker:ListTags"],
            resources=[any_router],
            reason=_OWNER_TAGS_REASON,
        )

    def destination_arns(self) -> list[str]:
        """Every ARN IAM checks for the destinations of every target (endpoints and components, as written and in
        lowercase), each once."""
        found: list[str] = []
        for target in self.targets:
            for destination in target.destinations:
                found.extend(a for a in destination.iam_arns() if a not in found)
        return found

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.PolicyStatement:
        """Let ``grantee`` invoke this router and every destination of its targets (exact ARNs).

        AWS: "The caller needs permission to invoke the inference router and every destination of the routing
        target" (the router calls the destination with the caller's credentials). Real-time targets need
        ``sagemaker:InvokeInferenceRouter`` and ``sagemaker:InvokeEndpoint``; asynchronous ones
        ``sagemaker:InvokeInferenceRouterAsync`` and ``sagemaker:InvokeEndpointAsync``. A destination in another
        account also needs its owner's endpoint policy (``endpoint_policy``). Returns the router's statement.
        """
        realtime = [t for t in self.targets if t.async_inference is None]
        asynchronous = [t for t in self.targets if t.async_inference is not None]
        router_actions = (["sagemaker:InvokeInferenceRouter"] if realtime else []) + (
            ["sagemaker:InvokeInferenceRouterAsync"] if asynchronous else []
        )
        statement = grants.grant(grantee, actions=router_actions, resources=list(self._router_arns))
        for targets, action in (
            (realtime, "sagemaker:InvokeEndpoint"),
            (asynchronous, "sagemaker:InvokeEndpointAsync"),
        ):
            arns: list[str] = []
            for target in targets:
                for destination in target.destinations:
                    arns.extend(a for a in destination.iam_arns() if a not in arns)
            if arns:
                grants.grant(grantee, actions=[action], resources=arns)
        return statement

    def endpoint_policy(self, account: str, region: str) -> dict[str, Any] | None:
        """The endpoint policies the owner of ``account`` must attach in ``region`` (``PutEndpointPolicy``) so that
        this router, in another account, may use its destinations there: ``{endpoint name: policy document}``, or
        None when no destination is there or the account is the router's own.

        AWS's documented policy ("Route requests to endpoints in other AWS accounts"): the router's account may
        invoke the endpoint only through this router (``sagemaker:SourceInferenceRouterArn``), and may describe
        it so SageMaker can show its RoutingStatus and check its mode.
        """
        stack = Stack.of(self)
        if Token.is_unresolved(stack.account) or Token.is_unresolved(stack.region):
            raise ConfigurationError(
                [
                    Problem(
                        "env",
                        "an environment-agnostic stack",
                        "a stack with an account and region (the policy names the router's ARN)",
                        "give the router's stack env=Environment(account=..., region=...)",
                    )
                ],
                source=self.node.path,
            )
        return endpoint_policies(
            router_name=self.router_name,
            router_account=stack.account,
            router_region=stack.region,
            targets=self.targets,
            account=account,
            region=region,
        )

    # ------------------------------------------------------------------ metrics
    def metric_unroutable_destinations(self, target: str | None = None, **kwargs: Any) -> cloudwatch.Metric:
        """Destinations whose RoutingStatus is Unroutable at the last check (of one target, or all). Max over 5 min."""
        return self._check_metric("UnroutableDestinations", target, **kwargs)

    def metric_unknown_destinations(self, target: str | None = None, **kwargs: Any) -> cloudwatch.Metric:
        """Destinations SageMaker could not check (RoutingStatus Unknown). Max over 5 minutes."""
        return self._check_metric("UnknownDestinations", target, **kwargs)

    def metric_router_not_in_service(self, **kwargs: Any) -> cloudwatch.Metric:
        """1 when the last check found the router not InService (or gone). Max over 5 minutes."""
        return self._check_metric("RouterNotInService", None, **kwargs)

    def _check_metric(self, name: str, target: str | None, **kwargs: Any) -> cloudwatch.Metric:
        dimensions = {"InferenceRouterName": self.router_name, **({"RoutingTarget": target} if target else {})}
        kwargs.setdefault("period", Duration.minutes(5))
        return metric(METRICS_NAMESPACE, name, dimensions, statistic=kwargs.pop("statistic", "Maximum"), **kwargs)

    def dashboard_widgets(self) -> list[cloudwatch.IWidget]:
        """One row for the router (its check's metrics), then per target its destinations' own metrics
        (``AWS/SageMaker`` in each destination's region and account: invocations, 5XX errors, model latency)."""
        row: list[cloudwatch.IWidget] = [
            cloudwatch.GraphWidget(
                title=f"{self.router_name}: destinations it cannot route to",
                width=12,
                left=[
                    self.metric_unroutable_destinations(label="Unroutable"),
                    self.metric_unknown_destinations(label="Unknown"),
                ],
            ),
            cloudwatch.AlarmStatusWidget(
                title=f"{self.router_name}: alarms", width=12, alarms=list(self.alarms.values())
            ),
        ]
        for target in self.targets:
            lines: dict[str, list[cloudwatch.IMetric]] = {
                "Invocations": [],
                "Invocation5XXErrors": [],
                "ModelLatency": [],
            }
            for destination in target.destinations:
                dimensions = (
                    {"InferenceComponentName": destination.name}
                    if destination.kind == "inference-component"
                    else {"EndpointName": destination.name, "VariantName": "AllTraffic"}
                )
                where = f"{destination.region}/{destination.account}"
                for metric_name, statistic in (
                    ("Invocations", "Sum"),
                    ("Invocation5XXErrors", "Sum"),
                    ("ModelLatency", "p90"),
                ):
                    lines[metric_name].append(
                        metric(
                            SAGEMAKER_NAMESPACE,
                            metric_name,
                            dimensions,
                            statistic=statistic,
                            label=where,
                            region=destination.region,
                            account=destination.account,
                        )
                    )
            row.extend(
                cloudwatch.GraphWidget(title=f"{target.name}: {name} per destination", width=8, left=metrics)
                for name, metrics in lines.items()
            )
        return row


_RENAME_REASON = (
    "A new router_name replaces the router: CloudFormation deletes the old router after the policy already "
    "names the new one, so the stack's functions manage the routers named <stack name>-*, the names "
    "this stack gives its routers."
)


_OWNED_REASON = (
    "A new router_name moves this policy to the new router before CloudFormation's cleanup deletes the old "
    "one (and a rollback brings the old one back): describe, update and delete on inference-router/* only "
    f"where the router's {STACK_TAG} and {LOGICAL_ID_TAG} tags, which the handler sets when it creates a "
    "router, name this stack and this custom resource."
)
_OWNER_TAGS_REASON = (
    "sagemaker:ListTags on inference-router/* reads tags only: before the rollback of a rename brings "
    "this resource's earlier router back, the handler reads its owner tags (a router of that name "
    "that this resource did not create is never adopted), and that name is not this policy's any more."
)


def tag_problems(tags: Mapping[str, str]) -> list[Problem]:
    """What the handler would refuse in a router's ``tags``: the owner tags' prefix, or more than ``MAX_TAGS``."""
    problems = [
        Problem(
            f"tags[{key!r}]",
            key,
            "a tag key that does not start with 'sagemaker-llm-cdk:' (the owner tags the handler sets use it)",
            "rename the tag",
        )
        for key in tags
        if key.startswith("sagemaker-llm-cdk:")
    ]
    if len(tags) > MAX_TAGS:
        problems.append(
            Problem(
                "tags",
                len(tags),
                f"at most {MAX_TAGS} tags (SageMaker's 50 per router, less the two owner tags)",
                "remove tags",
            )
        )
    return problems


def endpoint_policies(
    *,
    router_name: str,
    router_account: str,
    router_region: str,
    targets: Sequence[RouterTarget],
    account: str,
    region: str,
) -> dict[str, Any] | None:
    """``{endpoint name: policy document}`` for the destinations of ``targets`` in ``account`` and ``region``, as
    router ``router_name`` of ``router_account`` in ``router_region`` needs them, or None when there are none or
    ``account`` is the router's own. ``InferenceRouter.endpoint_policy`` and the endpoint owner's stack
    (``EndpointPolicy``) both build the document here, so the two always agree.

    An endpoint that an asynchronous target routes to allows ``sagemaker:InvokeEndpointAsync``, any other
    ``sagemaker:InvokeEndpoint`` (a target is one or the other, and its endpoints are of its kind)."""
    if account == router_account:
        return None
    here = [
        (d, t.async_inference is not None)
        for t in targets
        for d in t.destinations
        if d.account == account and d.region == region
    ]
    if not here:
        return None
    base = f"arn:{partition_of(router_region) or 'aws'}:sagemaker:{router_region}:{router_account}:inference-router/"
    router_arns = list(dict.fromkeys([base + router_name, base + router_name.lower()]))
    partition = partition_of(region) or "aws"
    return {
        name: endpoint_policy_document(
            router_account=router_account,
            router_arns=router_arns,
            endpoint_arn=f"arn:{partition}:sagemaker:{region}:{account}:endpoint/{name}",
            asynchronous=any(is_async for d, is_async in here if d.endpoint_name == name),
        )
        for name in sorted({d.endpoint_name for d, _ in here})
    }


def endpoint_policy_document(
    *, router_account: str, router_arns: Iterable[str], endpoint_arn: str, asynchronous: bool = False
) -> dict[str, Any]:
    """AWS's endpoint policy for a destination in another account: invoke only through the router, and describe.
    The endpoint's ARN is listed as written and in lowercase (SageMaker writes names in lowercase in the ARNs it
    returns; IAM compares ARNs as written), as ``Destination.iam_arns`` does; once when the two are the same."""
    forms = list(dict.fromkeys([endpoint_arn, _lower_name(endpoint_arn)]))
    resource: str | list[str] = forms[0] if len(forms) == 1 else forms
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "InvokeThroughRouter",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:{_partition(endpoint_arn)}:iam::{router_account}:root"},
                "Action": "sagemaker:InvokeEndpointAsync" if asynchronous else "sagemaker:InvokeEndpoint",
                "Resource": resource,
                "Condition": {"ArnEquals": {"sagemaker:SourceInferenceRouterArn": list(router_arns)}},
            },
            {
                "Sid": "DescribeForRouter",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:{_partition(endpoint_arn)}:iam::{router_account}:root"},
                "Action": "sagemaker:DescribeEndpoint",
                "Resource": resource,
            },
        ],
    }


def _partition(arn: str) -> str:
    return arn.split(":", 2)[1]


def _lower_name(arn: str) -> str:
    head, _, name = arn.rpartition("/")
    return f"{head}/{name.lower()}"


def _acknowledge_router(router: InferenceRouter) -> None:
    """An ``InferenceRouter``: provider framework with an is-complete waiter, a scheduled check."""
    grants.acknowledge_waiting_provider(
        router.provider,
        router.framework_roles,
        (router.on_event_function, router.is_complete_function),
        handler_text="the router's own handler function",
        polled_text="router's function",
    )
    acknowledge_resource(
        router.schedule_role,
        f"{router.check_function.function_arn}:*",
        "EventBridge Scheduler invokes the router's health check function only; lambda:InvokeFunction on that one "
        "function and its versions (the ':*' qualifier).",
    )
