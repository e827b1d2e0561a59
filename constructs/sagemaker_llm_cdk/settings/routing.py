"""Settings of inference routers (``routers:`` in the config): the routers, their routing targets and destinations.

A router (SageMaker's ``CreateInferenceRouter``) is a regional resource that sends each request for a routing
target to one of the target's destinations: endpoints or inference components in any account and any region of
the router's partition. Here a routing target names a model of the config (``model``, and ``adapter`` for one of
its LoRA adapters): its destinations are that model's inference component in every stage that deploys the config
(the pipeline's regions and accounts, or this stack alone), plus any ARNs given by hand (``destinations``).

Bounds, enums and name patterns come from botocore's SageMaker model (``RoutingTargetName``,
``InferenceRouterName``, ``DestinationResourceArn``, ``InferenceRouterRoutingPreference``,
``InferenceRouterMaxTimeInBacklogSeconds``), so a config that passes here is a request SageMaker accepts.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field

from ..core.errors import Problem
from ..core.name_rules import prefixed_name
from ..core.schedule_expression import schedule_problem
from ..core.service_model import aws_max, aws_min, shape
from ..core.settings import Settings, identifier_problem, name_problem, unless_failed

MAX_TARGETS = int(shape("RoutingTargetList")["max"])
"""Routing targets per router (botocore ``RoutingTargetList`` max: 20)."""
MAX_DESTINATIONS = int(shape("DestinationList")["max"])
"""Destinations per routing target (botocore ``DestinationList`` max: 10)."""
ROUTING_PREFERENCES = ("LocalRegionFirst", "InstancePoolOrder")
"""botocore's ``InferenceRouterRoutingPreference`` enum (a test keeps the two equal)."""
DESTINATION_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):sagemaker:(?P<region>[a-z0-9-]+):(?P<account>[0-9]{12}):"
    r"(?P<kind>endpoint|inference-component)/(?P<name>[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62})$"
)
"""botocore's ``DestinationResourceArn`` pattern, with its parts named."""
SNS_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]*:[0-9]{12}:[a-zA-Z0-9_.-]+$")
"""botocore's ``InferenceRouterSnsTopicArn`` pattern."""
KMS_KEY_ARN = re.compile(r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:(key/[a-zA-Z0-9-]+|alias/[a-zA-Z0-9/_-]+)$")
_S3_PATH = re.compile(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/.*)?$")
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::(?P<account>[0-9]{12}):role/(?P<path_and_name>[\w+=,.@/-]{1,576})$")
"""An IAM role ARN (path and name as IAM allows them)."""
MAX_CALLERS = 50


def default_router_name(stack_name: str, name: str) -> str:
    """The InferenceRouterName of router ``name`` of config ``stack_name`` without ``router_name``:
    ``<stack name>-<name>``, unchanged when it fits SageMaker's 63 characters (a router already deployed keeps its
    name, so a new naming rule replaces none); a longer one is cut and ends with a digest of the whole, so two
    names that share their first 63 characters still name two routers."""
    return prefixed_name(stack_name, name)


class AsyncRouting(Settings):
    """Makes a routing target asynchronous (``RoutingTarget.AsyncInferenceConfig``).

    Every destination of an asynchronous target must be an asynchronous inference endpoint, so such a target
    takes its destinations by hand (``destinations``), never from a model of this config (its inference
    components serve real-time requests). The buckets must be in the router's region and owned by the
    router's account; AWS does not check this when the router is created, and requests fail if not.
    """

    s3_output_path: Annotated[
        str,
        Field(
            description=(
                "S3 location of the results (OutputConfig.S3OutputPath), s3://bucket/prefix, in the router's region "
                "and account."
            )
        ),
    ]
    s3_failure_path: Annotated[
        str, Field(description=("S3 location of the failure details (OutputConfig.S3FailurePath), s3://bucket/prefix."))
    ]
    kms_key_arn: Annotated[
        str | None,
        Field(
            description=(
                "KMS key (or alias) ARN that encrypts the results (OutputConfig.KmsKeyId). An ARN, not an id: AWS asks "
                "for one when any destination is in another account or region. Default: the bucket's encryption."
            )
        ),
    ] = None
    success_topic_arn: Annotated[
        str | None,
        Field(
            description=(
                "Standard SNS topic told when a request completes (NotificationConfig.SuccessTopic). Default: none."
            )
        ),
    ] = None
    error_topic_arn: Annotated[
        str | None,
        Field(
            description=(
                "Standard SNS topic told when a request fails or cannot be placed (NotificationConfig.ErrorTopic). "
                "Default: none."
            )
        ),
    ] = None
    max_time_in_backlog_seconds: Annotated[
        int | None,
        Field(
            ge=aws_min("InferenceRouterMaxTimeInBacklogSeconds"),
            le=aws_max("InferenceRouterMaxTimeInBacklogSeconds"),
            description=(
                "Longest a request waits at a destination before the router moves it to another "
                "(ClientConfig.MaxTimeInBacklogSeconds). Default: AWS's, 900."
            ),
        ),
    ] = None

    def _rules(self) -> list[Problem]:
        problems = []
        for field in ("s3_output_path", "s3_failure_path"):
            with unless_failed():
                value = getattr(self, field)
                if not _S3_PATH.match(value) or len(value) > 512:
                    problems.append(
                        Problem(
                            field,
                            value,
                            "s3://bucket/prefix, at most 512 characters",
                            "write the S3 location as s3://<bucket>/<prefix>",
                        )
                    )
        with unless_failed():
            if self.kms_key_arn is not None and not KMS_KEY_ARN.match(self.kms_key_arn):
                problems.append(
                    Problem(
                        "kms_key_arn",
                        self.kms_key_arn,
                        "a KMS key ARN or alias ARN",
                        "copy the key's ARN (arn:aws:kms:<region>:<account>:key/<id>)",
                    )
                )
        for field in ("success_topic_arn", "error_topic_arn"):
            with unless_failed():
                value = getattr(self, field)
                if value is not None and not SNS_TOPIC_ARN.match(value):
                    problems.append(
                        Problem(
                            field,
                            value,
                            "an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)",
                            "copy the topic's ARN",
                        )
                    )
        return problems


class RouterDestinationSpec(Settings):
    """A destination given by hand: an endpoint or inference component this config does not deploy."""

    arn: Annotated[
        str,
        Field(
            description=(
                "ARN of the endpoint or inference component (arn:aws:sagemaker:<region>:<account>:endpoint/<name> or "
                ".../inference-component/<name>), any account, any region of the router's partition."
            )
        ),
    ]
    endpoint_name: Annotated[
        str | None,
        Field(
            description=(
                "For an inference component: the endpoint that hosts it. IAM checks the endpoint's ARN as well as the "
                "component's for every request, so grant_invoke needs it. Not for an endpoint ARN."
            )
        ),
    ] = None

    @property
    def kind(self) -> str:
        """``endpoint`` or ``inference-component``."""
        match = DESTINATION_ARN.match(self.arn)
        return match.group("kind") if match else ""

    def _rules(self) -> list[Problem]:
        problems: list[Problem] = []
        with unless_failed():
            match = DESTINATION_ARN.match(self.arn)
            if match is None or len(self.arn) > 2048:
                problems.append(
                    Problem(
                        "arn",
                        self.arn,
                        "arn:aws:sagemaker:<region>:<account>:endpoint/<name> or .../inference-component/<name>",
                        "copy the ARN from DescribeEndpoint or DescribeInferenceComponent",
                    )
                )
                return problems
            if match.group("kind") == "inference-component" and self.endpoint_name is None:
                problems.append(
                    Problem(
                        "endpoint_name",
                        None,
                        "the name of the endpoint that hosts the component",
                        "set endpoint_name (IAM checks the endpoint's ARN too)",
                    )
                )
            if match.group("kind") == "endpoint" and self.endpoint_name is not None:
                problems.append(
                    Problem(
                        "endpoint_name",
                        self.endpoint_name,
                        "nothing for an endpoint ARN",
                        "remove endpoint_name: the ARN names the endpoint",
                    )
                )
        with unless_failed():
            if self.endpoint_name is not None:
                problem = name_problem("endpoint_name", self.endpoint_name, "EndpointName")
                if problem:
                    problems.append(problem)
        return problems


class RoutingTargetSpec(Settings):
    """One routing target: the name callers pass as ``RoutingTargetName``, and where its requests may go."""

    name: Annotated[
        str,
        Field(
            description=(
                "Routing target name callers pass when they invoke the router (1-63 letters, digits and hyphens), "
                "unique in the router."
            )
        ),
    ]
    model: Annotated[
        str | None,
        Field(
            description=(
                "A model of endpoints[].models[] (its name): the target's destinations are that model's inference "
                "component in every stage that deploys this config. Default: none (destinations by hand only)."
            )
        ),
    ] = None
    adapter: Annotated[
        str | None,
        Field(
            description=(
                "A LoRA adapter of that model (its name): the destinations are the adapter's inference components "
                "instead. Needs model. Default: none."
            )
        ),
    ] = None
    destinations: Annotated[
        tuple[RouterDestinationSpec, ...],
        Field(
            max_length=MAX_DESTINATIONS,
            description=("Endpoints or inference components given by hand, after the model's. Default: none."),
        ),
    ] = ()
    routing_preference: Annotated[
        Literal["LocalRegionFirst", "InstancePoolOrder"] | None,
        Field(
            description=(
                "How the router chooses among the destinations (RoutingTarget.RoutingPreference). LocalRegionFirst: "
                "the router's region first, then spread over healthy destinations elsewhere. InstancePoolOrder: by "
                "instance type, then region; asynchronous targets only. Default: AWS's, LocalRegionFirst."
            )
        ),
    ] = None
    async_inference: Annotated[
        AsyncRouting | None,
        Field(
            description=(
                "Make the target asynchronous (callers use InvokeInferenceRouterAsync). Its destinations must be "
                "asynchronous endpoints, given by hand. Default: real-time."
            )
        ),
    ] = None

    def _rules(self) -> list[Problem]:
        problems: list[Problem] = []
        with unless_failed():
            problem = name_problem("name", self.name, "RoutingTargetName")
            if problem:
                problems.append(problem)
        with unless_failed():
            if self.adapter is not None and self.model is None:
                problems.append(
                    Problem(
                        "adapter",
                        self.adapter,
                        "an adapter together with its model",
                        "set model to the model that serves the adapter",
                    )
                )
        with unless_failed():
            if self.model is None and not self.destinations:
                problems.append(
                    Problem(
                        "destinations",
                        [],
                        "at least one destination, or a model of this config",
                        "set model, or list destinations by ARN",
                    )
                )
        with unless_failed():
            arns = [d.arn for d in self.destinations]
            for index, arn in enumerate(arns):
                if arn in arns[:index]:
                    problems.append(
                        Problem(
                            f"destinations[{index}].arn",
                            arn,
                            "each destination once",
                            "remove the repeated destination",
                        )
                    )
        with unless_failed():
            if self.routing_preference == "InstancePoolOrder" and self.async_inference is None:
                problems.append(
                    Problem(
                        "routing_preference",
                        "InstancePoolOrder",
                        "LocalRegionFirst for a real-time target (InstancePoolOrder is supported only "
                        "for asynchronous targets)",
                        "remove routing_preference, or make the target asynchronous",
                    )
                )
        with unless_failed():
            if self.async_inference is not None:
                if self.model is not None:
                    problems.append(
                        Problem(
                            "model",
                            self.model,
                            "no model for an asynchronous target (its destinations must be "
                            "asynchronous endpoints; the config's models are real-time components)",
                            "list the asynchronous endpoints under destinations",
                        )
                    )
                for index, destination in enumerate(self.destinations):
                    with unless_failed():
                        if destination.kind == "inference-component":
                            problems.append(
                                Problem(
                                    f"destinations[{index}].arn",
                                    destination.arn,
                                    "an asynchronous endpoint's ARN",
                                    "route asynchronous requests to asynchronous endpoints",
                                )
                            )
        return problems


class RouterSpec(Settings):
    """One inference router: its name, where it runs, its routing targets and how it is watched."""

    name: Annotated[
        str,
        Field(
            description=(
                "Logical name: the construct id and, unless router_name is set, part of the router's name (letters and "
                "digits)."
            )
        ),
    ]
    router_name: Annotated[
        str | None,
        Field(
            description=(
                "Physical router name (InferenceRouterName, 1-63 letters, digits and hyphens). A new name replaces the "
                "router. Default: <stack name>-<name> of the stack that holds it."
            )
        ),
    ] = None
    home_region: Annotated[
        str | None,
        Field(
            pattern=r"^[a-z]{2}(-[a-z]+)+-\d$",
            description=(
                "Region the router runs in when the pipeline deploys this config to several regions (the router is "
                "regional; callers invoke it there). Default: the region of the first stage, in wave order, that "
                "deploys this config; without the pipeline, the stack's region."
            ),
        ),
    ] = None
    targets: Annotated[
        tuple[RoutingTargetSpec, ...],
        Field(
            min_length=1,
            max_length=MAX_TARGETS,
            description=("Routing targets, at most 20: one per model (and per adapter) callers may name."),
        ),
    ]
    check_schedule: Annotated[
        str,
        Field(
            description=(
                "How often DescribeInferenceRouter is read to publish the destinations it cannot route to as a metric "
                "(an EventBridge Scheduler expression). Default: rate(5 minutes)."
            )
        ),
    ] = "rate(5 minutes)"
    unroutable_alarm_periods: Annotated[
        int,
        Field(
            ge=1,
            le=288,
            description=("Consecutive checks with an Unroutable destination before the alarm fires. Default: 2."),
        ),
    ] = 2
    callers: Annotated[
        tuple[str, ...],
        Field(
            max_length=MAX_CALLERS,
            description=(
                "IAM role ARNs that invoke the router. A role of the router stack's account gets the permissions "
                "(grant_invoke: the router and every destination, exact ARNs); the live preflight simulates each "
                "role's policies and reports every permission it lacks. At most 50. Default: none."
            ),
        ),
    ] = ()

    def _rules(self) -> list[Problem]:
        problems: list[Problem] = []
        with unless_failed():
            problem = identifier_problem("name", self.name)
            if problem:
                problems.append(problem)
        with unless_failed():
            if self.router_name is not None:
                problem = name_problem("router_name", self.router_name, "InferenceRouterName")
                if problem:
                    problems.append(problem)
        with unless_failed():
            names = [t.name for t in self.targets]
            for index, name in enumerate(names):
                if name in names[:index]:
                    problems.append(
                        Problem(
                            f"targets[{index}].name",
                            name,
                            "a name no other target of the router uses",
                            "rename one of the two targets",
                        )
                    )
        with unless_failed():
            problem = schedule_problem("check_schedule", self.check_schedule)
            if problem:
                problems.append(problem)
        with unless_failed():
            for index, arn in enumerate(self.callers):
                if not ROLE_ARN.match(arn):
                    problems.append(
                        Problem(
                            f"callers[{index}]",
                            arn,
                            "an IAM role ARN (arn:aws:iam::<account>:role/<name>)",
                            "copy the role's ARN from the IAM console or aws iam get-role",
                        )
                    )
                elif arn in self.callers[:index]:
                    problems.append(Problem(f"callers[{index}]", arn, "each role once", "remove the repeated role"))
        return problems


def router_problems(routers: tuple[RouterSpec, ...], models: dict[str, str]) -> list[Problem]:
    """Rules between ``routers`` and the config's models (``models``: model name -> its path in the config).

    Paths are ``routers[i]...``; the adapters a model serves come from files, so the construct checks those.
    """
    problems: list[Problem] = []
    names = [r.name for r in routers]
    physical = [r.router_name for r in routers if r.router_name is not None]
    for r, router in enumerate(routers):
        if router.name in names[:r]:
            problems.append(
                Problem(
                    f"routers[{r}].name", router.name, "a name no other router uses", "rename one of the two routers"
                )
            )
        if router.router_name is not None and physical.count(router.router_name) > 1:
            problems.append(
                Problem(
                    f"routers[{r}].router_name",
                    router.router_name,
                    "a router name used once",
                    "give each router its own router_name",
                )
            )
        for t, target in enumerate(router.targets):
            if target.model is not None and target.model not in models:
                known = ", ".join(sorted(models)) or "none"
                problems.append(
                    Problem(
                        f"routers[{r}].targets[{t}].model",
                        target.model,
                        f"a model of endpoints[].models[] ({known})",
                        "name a model this config deploys, or list destinations by ARN",
                    )
                )
    return problems
