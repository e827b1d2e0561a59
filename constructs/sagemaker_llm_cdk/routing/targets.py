"""The routing targets of an inference router: each target's name, its destinations and what SageMaker refuses.

A destination is an endpoint or an inference component in any account and region of the router's partition
(``Destination``), known by its ARN; IAM checks both the component's ARN and its endpoint's, as written and in
lowercase (the form SageMaker returns). A target (``RouterTarget``) renders as ``CreateInferenceRouter`` takes
it, and ``target_problems`` says what SageMaker would refuse in a router's targets before any deployment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_cdk import Aws, Token

from ..core.errors import ConfigurationError, Problem
from ..core.regions import partition_of
from ..core.settings import name_problem
from ..settings.routing import DESTINATION_ARN, MAX_DESTINATIONS, MAX_TARGETS, ROUTING_PREFERENCES, AsyncRouting

if TYPE_CHECKING:
    from ..hosting.component_base import InferenceComponentConstruct

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
            for form in (arn, lower_name(arn)):
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


def lower_name(arn: str) -> str:
    """``arn`` with its resource name in lowercase (the form SageMaker writes in the ARNs it returns)."""
    head, _, name = arn.rpartition("/")
    return f"{head}/{name.lower()}"
