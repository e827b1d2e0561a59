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

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import CustomResource, Duration, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns

from constructs import Construct

from ..core import grants
from ..core.errors import ConfigurationError, Problem
from ..core.functions import python_function
from ..core.name_rules import prefixed_name
from ..core.naming import stack_prefix
from ..core.schedule_expression import schedule_problem
from ..core.settings import name_problem
from . import router_grants, router_health
from .cross_account import endpoint_policies as endpoint_policies
from .cross_account import endpoint_policy_document as endpoint_policy_document
from .router_grants import DESCRIBE_DESTINATION_ACTIONS as DESCRIBE_DESTINATION_ACTIONS
from .router_grants import LOGICAL_ID_TAG as LOGICAL_ID_TAG
from .router_grants import MANAGE_ACTIONS as MANAGE_ACTIONS
from .router_grants import MAX_TAGS as MAX_TAGS
from .router_grants import OWNED_ROUTER_ACTIONS as OWNED_ROUTER_ACTIONS
from .router_grants import OWNER_TAGS as OWNER_TAGS
from .router_grants import STACK_TAG as STACK_TAG
from .router_grants import tag_problems as tag_problems
from .router_health import METRICS_NAMESPACE as METRICS_NAMESPACE
from .targets import Destination as Destination
from .targets import RouterTarget as RouterTarget
from .targets import target_problems as target_problems

RESOURCE_TYPE = "Custom::SageMakerInferenceRouter"
HANDLER_FOLDER = "inference_router"
TOTAL_TIMEOUT = Duration.minutes(30)
QUERY_INTERVAL = Duration.seconds(30)


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
        self.router_name = router_name or prefixed_name(
            stack_prefix(self, field="router_name", what="the router's name", pin="pin the name with router_name"), id
        )
        self._check_inputs(stack, targets, check_schedule, tags or {})
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
        self._functions()
        router_grants.grant_functions(self, router_grants.manage_arns(self, stack, self._router_arns))
        self._custom_resource(tags)
        router_grants.grant_owned_routers(self, stack)
        self.arn_from_sagemaker = self.custom_resource.get_att_string("InferenceRouterArn")
        """The ARN as SageMaker returns it (a deploy-time value; ``router_arn`` is known at synth)."""
        self.schedule_role, self.schedule = router_health.check_schedule(self, check_schedule)
        self.alarms: dict[str, cloudwatch.Alarm] = router_health.health_alarms(
            self, unroutable_alarm_periods, alarm_topic
        )
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=f"{self.router_name}-router"[:255])
        self.dashboard.add_widgets(*self.dashboard_widgets())
        router_grants.acknowledge_router(self)

    # ----------------------------------------------------------- construction
    def _check_inputs(
        self, stack: Stack, targets: Sequence[RouterTarget], check_schedule: str, tags: Mapping[str, str]
    ) -> None:
        """Refuse what SageMaker or the handler would refuse: the targets, the name, the schedule, the tags."""
        region = None if Token.is_unresolved(stack.region) else stack.region
        problems = target_problems(targets, region=region)
        problem = name_problem("router_name", self.router_name, "InferenceRouterName")
        if problem:
            problems.insert(0, problem)
        problem = schedule_problem("check_schedule", check_schedule)
        if problem:
            problems.append(problem)
        problems.extend(tag_problems(tags))
        if problems:
            raise ConfigurationError(problems, source=self.node.path)

    def _functions(self) -> None:
        """The custom resource's on-event and is-complete functions, and the health check's function."""
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

    def _custom_resource(self, tags: Mapping[str, str] | None) -> None:
        """The provider framework with its waiter, and the custom resource that is the router."""
        from ..operations.waiting_provider import waiting_provider

        framework = waiting_provider(
            self,
            on_event_function=self.on_event_function,
            is_complete_function=self.is_complete_function,
            query_interval=QUERY_INTERVAL,
            total_timeout=TOTAL_TIMEOUT,
            subject=f"inference router {self.router_name}",
        )
        self.framework_roles: list[iam.Role] = framework.framework_roles
        self.waiter_logs = framework.waiter_logs
        self.provider = framework.provider
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

    # ------------------------------------------------------------------ IAM
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
        return router_health.check_metric(self.router_name, name, target, **kwargs)

    def dashboard_widgets(self) -> list[cloudwatch.IWidget]:
        """One row for the router (its check's metrics), then per target its destinations' own metrics
        (``AWS/SageMaker`` in each destination's region and account: invocations, 5XX errors, model latency)."""
        return router_health.dashboard_widgets(self)
