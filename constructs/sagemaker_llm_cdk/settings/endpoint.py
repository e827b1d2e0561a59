"""Settings of an endpoint other than the models it hosts (``EndpointOptions``): instance scaling, request
routing, data capture, VPC placement and the instance pools of a heterogeneous endpoint, with the instance-type
facts their rules need (which types carry local NVMe storage) and the rule that refuses pools with a capacity plan.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from ..core import service_model
from ..core.errors import MISSING, Problem, keyword_problems
from ..core.service_model import aws_max, aws_min
from ..core.settings import Settings, field_rule, instance_type_problem
from . import images

_CONTENT_TYPE = re.compile(r"^[a-zA-Z0-9*][a-zA-Z0-9.*+\-]*/[a-zA-Z0-9*][a-zA-Z0-9.*+\-]*$")

# Instance families whose instances come with local NVMe storage: SageMaker uses it for
# the model and refuses VolumeSizeInGB for them.
_NVME_FAMILIES = frozenset(
    {
        "p4d",
        "p4de",
        "p5",
        "p5e",
        "p5en",
        "p6",
        "p6e",
        "g4dn",
        "g5",
        "g6",
        "g6e",
        "g7e",
        "trn1",
        "trn1n",
        "trn2",
        "m5d",
        "c5d",
        "r5d",
    }
)


def _ami_problem(value: str) -> Problem | None:
    if value in service_model.inference_ami_versions():
        return None
    return Problem(
        "",
        value,
        "one of " + ", ".join(sorted(service_model.inference_ami_versions())),
        "pick a listed version or leave it out",
    )


def has_local_nvme(instance_type: str) -> bool:
    parts = instance_type.split(".")
    return len(parts) == 3 and parts[1] in _NVME_FAMILIES


class InstanceScaling(Settings):
    """How many instances the endpoint may run (SageMaker managed instance scaling)."""

    min_instances: Annotated[
        int,
        Field(
            ge=0,
            le=1000,
            description=(
                "Fewest instances. 0 lets the endpoint scale to zero when no model copy is running "
                "(some regions refuse 0). Default: 1."
            ),
        ),
    ] = 1
    max_instances: Annotated[int, Field(ge=1, le=1000, description="Most instances. Default: 1.")] = 1
    initial_instances: Annotated[
        int | None,
        Field(
            ge=1, le=1000, description=("Instances at creation. Default: min_instances, or 1 when min_instances is 0.")
        ),
    ] = None

    @property
    def initial(self) -> int:
        return self.initial_instances if self.initial_instances is not None else max(1, self.min_instances)

    def _rules(self) -> list[Problem]:
        problems = []
        if self.min_instances > self.max_instances:
            problems.append(
                Problem(
                    "min_instances",
                    self.min_instances,
                    f"at most max_instances ({self.max_instances})",
                    "lower min_instances or raise max_instances",
                )
            )
        if self.initial_instances is not None and not (
            max(1, self.min_instances) <= self.initial_instances <= self.max_instances
        ):
            problems.append(
                Problem(
                    "initial_instances",
                    self.initial_instances,
                    f"between {max(1, self.min_instances)} and max_instances ({self.max_instances})",
                    "leave it out to start at min_instances",
                )
            )
        return problems


RoutingStrategyName = Literal["LEAST_OUTSTANDING_REQUESTS", "RANDOM", "PREFIX_AWARE"]


class Routing(Settings):
    """How the endpoint spreads requests over instances.

    Default: ``LEAST_OUTSTANDING_REQUESTS`` (load-aware: each request goes to the least busy
    instance). Session-aware routing for multi-turn chat is per request, not set here.

    ``PREFIX_AWARE`` routes requests that start alike to the instance that already holds that
    prefix in its cache. SageMaker compares the first ``prefix_length`` *bytes of the request
    body* (for InvokeEndpoint; *characters of the messages* for the OpenAI-compatible API), not
    tokens: a token is roughly 3-4 bytes of English text, so 4096 covers about 1,000-1,300 tokens
    of a shared system prompt.
    """

    strategy: Annotated[
        RoutingStrategyName,
        Field(
            description=(
                "LEAST_OUTSTANDING_REQUESTS (load-aware), RANDOM, or PREFIX_AWARE (reuses a cached prompt "
                "prefix; needs prefix_length and concurrency_threshold)."
            )
        ),
    ] = "LEAST_OUTSTANDING_REQUESTS"
    prefix_length: Annotated[
        int | None,
        Field(
            ge=aws_min("PrefixAwareRoutingPrefixLength"),
            le=aws_max("PrefixAwareRoutingPrefixLength"),
            description=(
                "PREFIX_AWARE only: how much of the start of each request is compared for routing, in bytes of the "
                "request body (characters of the messages for the OpenAI-compatible API), not tokens; 1024-65536."
            ),
        ),
    ] = None
    concurrency_threshold: Annotated[
        int | None,
        Field(
            ge=aws_min("PrefixAwareRoutingConcurrencyThreshold"),
            le=aws_max("PrefixAwareRoutingConcurrencyThreshold"),
            description=(
                "PREFIX_AWARE only: outstanding requests on an instance above which routing falls back to "
                "load-aware, 1-1024."
            ),
        ),
    ] = None

    @classmethod
    def least_outstanding_requests(cls) -> Routing:
        return cls(strategy="LEAST_OUTSTANDING_REQUESTS")

    @classmethod
    def random(cls) -> Routing:
        return cls(strategy="RANDOM")

    @classmethod
    def prefix_aware(cls, *, prefix_length: int, concurrency_threshold: int) -> Routing:
        """Prefix-aware routing on the first ``prefix_length`` bytes of the request body (characters of the
        messages for the OpenAI-compatible API; not tokens), 1024-65536, falling back to load-aware above
        ``concurrency_threshold`` outstanding requests per instance, 1-1024."""
        return cls(strategy="PREFIX_AWARE", prefix_length=prefix_length, concurrency_threshold=concurrency_threshold)

    def _rules(self) -> list[Problem]:
        problems = []
        if self.strategy == "PREFIX_AWARE":
            for field in ("prefix_length", "concurrency_threshold"):
                if getattr(self, field) is None:
                    problems.append(
                        Problem(
                            field,
                            None,
                            "required with strategy PREFIX_AWARE",
                            f"set {field} (prefix_length 1024-65536, concurrency_threshold 1-1024)",
                        )
                    )
        else:
            for field in ("prefix_length", "concurrency_threshold"):
                if getattr(self, field) is not None:
                    problems.append(
                        Problem(
                            field,
                            getattr(self, field),
                            f"only with strategy PREFIX_AWARE (strategy is {self.strategy})",
                            f"remove {field} or set strategy: PREFIX_AWARE",
                        )
                    )
        return problems


class DataCapture(Settings):
    """Endpoint Data Capture: requests and responses written to a KMS-encrypted bucket.

    It feeds the EAGLE loop with real traffic. Default: on, 10% of requests, JSON payloads
    stored as JSON (not base64).
    """

    enabled: Annotated[bool, Field(description="Capture traffic at all. Default: true.")] = True
    sampling_percentage: Annotated[
        int, Field(ge=1, le=100, description="Share of requests captured, 1-100. Default: 10.")
    ] = 10
    capture_input: Annotated[bool, Field(description="Capture requests. Default: true.")] = True
    capture_output: Annotated[bool, Field(description="Capture responses. Default: true.")] = True
    json_content_types: Annotated[
        tuple[str, ...],
        Field(
            max_length=10,
            description=("Content types stored as JSON text instead of base64. Default: application/json."),
        ),
    ] = ("application/json",)
    retention_days: Annotated[
        int,
        Field(
            ge=1,
            le=3650,
            description=(
                "Days a captured request/response (user prompts and model completions) is kept before it expires; then "
                "it stays 7 more days as a noncurrent version and is gone. Longer than the EAGLE schedule, so every "
                "run sees the traffic since the last one. Default: 30."
            ),
        ),
    ] = 30

    def _rules(self) -> list[Problem]:
        problems = []
        if self.enabled and not (self.capture_input or self.capture_output):
            problems.append(
                Problem(
                    "capture_input",
                    False,
                    "capture_input or capture_output true when enabled",
                    "turn one on, or set enabled: false",
                )
            )
        for index, content_type in enumerate(self.json_content_types):
            if not _CONTENT_TYPE.match(content_type) or len(content_type) > 256:
                problems.append(
                    Problem(
                        f"json_content_types[{index}]",
                        content_type,
                        "a MIME type like application/json",
                        "write type/subtype",
                    )
                )
        return problems


class VpcPlacement(Settings):
    """Run the endpoint's instances in your VPC, by subnet and security group ids."""

    vpc_id: Annotated[
        str, Field(pattern=r"^vpc-[0-9a-f]{8,17}$", description="The VPC's id, e.g. vpc-0abc12345def67890.")
    ]
    subnet_ids: Annotated[
        tuple[str, ...],
        Field(
            min_length=1,
            max_length=16,
            description=(
                "Subnets the instances run in, e.g. subnet-0abc12345def67890. Give subnets in two or more zones so "
                "copies can be balanced across them."
            ),
        ),
    ]
    subnet_availability_zones: Annotated[
        tuple[str, ...] | None,
        Field(
            max_length=16,
            description=(
                "The zone of each subnet, in the order of subnet_ids (e.g. us-east-1a). Default: not given; nothing in "
                "the stack needs it."
            ),
        ),
    ] = None
    security_group_ids: Annotated[
        tuple[str, ...],
        Field(
            min_length=1,
            max_length=5,
            description=("Security groups of the instances' network interfaces, e.g. sg-0abc12345def67890."),
        ),
    ]

    def _rules(self) -> list[Problem]:
        problems = []
        zones = self.subnet_availability_zones
        if zones is not None:
            if len(zones) != len(self.subnet_ids):
                problems.append(
                    Problem(
                        "subnet_availability_zones",
                        list(zones),
                        f"one zone per subnet ({len(self.subnet_ids)}, in the order of subnet_ids)",
                        "list the zone of each subnet, or leave subnet_availability_zones out",
                    )
                )
            for i, zone in enumerate(zones):
                if not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d[a-z]", zone):
                    problems.append(
                        Problem(
                            f"subnet_availability_zones[{i}]",
                            zone,
                            "an Availability Zone name like us-east-1a",
                            "copy it from the VPC console",
                        )
                    )
        for i, subnet in enumerate(self.subnet_ids):
            if not re.fullmatch(r"subnet-[0-9a-f]{8,17}", subnet):
                problems.append(
                    Problem(
                        f"subnet_ids[{i}]",
                        subnet,
                        "a subnet id like subnet-0abc12345def67890",
                        "copy the id from the VPC console",
                    )
                )
        for i, group in enumerate(self.security_group_ids):
            if not re.fullmatch(r"sg-[0-9a-f]{8,17}", group):
                problems.append(
                    Problem(
                        f"security_group_ids[{i}]",
                        group,
                        "a security group id like sg-0abc12345def67890",
                        "copy the id from the VPC console",
                    )
                )
        return problems


class InstancePool(Settings):
    """One instance type of a heterogeneous endpoint (``ProductionVariant.InstancePools``)."""

    instance_type: Annotated[
        str,
        field_rule(lambda v: instance_type_problem("", v, service_model.endpoint_instance_types(), "endpoints")),
        Field(description="SageMaker instance type."),
    ]
    priority: Annotated[
        int,
        Field(
            ge=aws_min("InstancePoolPriority"),
            le=aws_max("InstancePoolPriority"),
            description=(
                "1 (tried first) to 5: SageMaker falls back to the next priority when a type has no capacity."
            ),
        ),
    ]


class EndpointOptions(Settings):
    """Settings of an ``LlmEndpoint`` other than the models it hosts."""

    instance_type: Annotated[
        str,
        field_rule(lambda v: instance_type_problem("", v, service_model.endpoint_instance_types(), "endpoints")),
        Field(description="SageMaker instance type, e.g. ml.p5e.48xlarge."),
    ]
    scaling: Annotated[InstanceScaling, Field(description="Instance count range. Default: exactly one instance.")] = (
        InstanceScaling()
    )
    routing: Annotated[Routing, Field(description="Request routing. Default: least outstanding requests.")] = Routing()
    data_capture: Annotated[DataCapture, Field(description="Traffic capture. Default: on, 10%, JSON.")] = DataCapture()
    inference_ami_version: Annotated[
        str | None,
        field_rule(_ami_problem),
        Field(
            description=(
                "Inference AMI (driver/CUDA) version, e.g. al2-ami-sagemaker-inference-gpu-3-1. A CUDA 13 image (such "
                "as the "
                "default LMI image) needs " + images.CUDA13_AMI + ". Default: the AMI the models' images need, else "
                "SageMaker's."
            )
        ),
    ] = None
    volume_size_gb: Annotated[
        int | None,
        Field(
            ge=aws_min("ProductionVariantVolumeSizeInGB"),
            le=aws_max("ProductionVariantVolumeSizeInGB"),
            description=(
                "EBS volume per instance, GB. Only for instance types without local NVMe storage. Default: SageMaker's."
            ),
        ),
    ] = None
    instance_provision_timeout_seconds: Annotated[
        int | None,
        Field(
            ge=aws_min("VariantInstanceProvisionTimeoutInSeconds"),
            le=aws_max("VariantInstanceProvisionTimeoutInSeconds"),
            description="How long SageMaker waits for instances (with instance_pools: over all pools), 300-3600 "
            "seconds. Default: SageMaker's.",
        ),
    ] = None
    instance_pools: Annotated[
        tuple[InstancePool, ...],
        Field(
            max_length=5,
            description=(
                "Heterogeneous capacity: 2-5 instance types with priorities; SageMaker provisions the first that has "
                "capacity, at creation and when scaling. instance_type must be the priority-1 type. Every model is "
                "checked against every type. Not with a capacity plan. Default: instance_type only."
            ),
        ),
    ] = ()

    @property
    def instance_types(self) -> tuple[str, ...]:
        """Every instance type the endpoint may run on: its pools by priority, or ``instance_type``."""
        if not self.instance_pools:
            return (self.instance_type,)
        return tuple(p.instance_type for p in sorted(self.instance_pools, key=lambda p: p.priority))

    def _rules(self) -> list[Problem]:
        problems: list[Problem] = []
        for instance_type in dict.fromkeys((self.instance_type, *self.instance_types)):
            if self.volume_size_gb is not None and has_local_nvme(instance_type):
                problems.append(
                    Problem(
                        "volume_size_gb",
                        self.volume_size_gb,
                        f"nothing for {instance_type}: it has local NVMe storage that SageMaker uses instead",
                        "remove volume_size_gb",
                    )
                )
                break
        problems.extend(self._pool_problems())
        return problems

    def _pool_problems(self) -> list[Problem]:
        pools = self.instance_pools
        if not pools:
            return []
        problems: list[Problem] = []
        if len(pools) < 2:
            problems.append(
                Problem(
                    "instance_pools",
                    [p.instance_type for p in pools],
                    "2-5 pools (an inference component needs a specification for at least two types)",
                    "add a fallback type, or remove instance_pools and use instance_type alone",
                )
            )
        types: dict[str, int] = {}
        priorities: dict[int, int] = {}
        for index, pool in enumerate(pools):
            if pool.instance_type in types:
                problems.append(
                    Problem(
                        f"instance_pools[{index}].instance_type",
                        pool.instance_type,
                        f"a type not used by instance_pools[{types[pool.instance_type]}]",
                        "list each instance type once",
                    )
                )
            types.setdefault(pool.instance_type, index)
            if pool.priority in priorities:
                problems.append(
                    Problem(
                        f"instance_pools[{index}].priority",
                        pool.priority,
                        f"a priority not used by instance_pools[{priorities[pool.priority]}]",
                        "give each pool its own priority, 1 first",
                    )
                )
            priorities.setdefault(pool.priority, index)
        first = min(pools, key=lambda p: p.priority)
        if self.instance_type != first.instance_type:
            problems.append(
                Problem(
                    "instance_type",
                    self.instance_type,
                    f"the priority-1 pool's type ({first.instance_type}) when instance_pools is set",
                    f"set instance_type: {first.instance_type}",
                )
            )
        if len({has_local_nvme(p.instance_type) for p in pools}) > 1:
            problems.append(
                Problem(
                    "instance_pools",
                    [p.instance_type for p in pools],
                    "types that all have local NVMe storage, or none: the endpoint's volume key "
                    "(KmsKeyId) is refused for NVMe types and needed for the others",
                    "pick pool types of one kind",
                )
            )
        return problems


def pools_with_plan_problem(field: str = "capacity_plan") -> Problem:
    """Instance pools and a capacity plan together: refused, AWS documents no such combination."""
    return Problem(
        field,
        "a capacity plan with instance_pools",
        "one or the other: a plan reserves one instance type (capacity-reservations-only launches only "
        "into it), and AWS does not document how instance pools use CapacityReservationConfig",
        "remove instance_pools to run on the plan, or unbind the plan to fall back across types",
    )


ENDPOINT_SETTINGS = frozenset(EndpointOptions.model_fields)
"""The fields of ``EndpointOptions``: given to ``LlmEndpoint`` as keywords, each is named in the error."""
ENDPOINT_ARGUMENTS = (
    "settings",
    "endpoint_name",
    "role",
    "key",
    "vpc",
    "vpc_subnets",
    "security_groups",
    "data_capture_bucket",
    "capacity_plan",
)
"""The keywords ``LlmEndpoint`` takes."""


def argument_problems(settings: object, unknown: Mapping[str, Any]) -> list[Problem]:
    """One problem per keyword ``LlmEndpoint`` does not take: an endpoint setting given on its own (it belongs in
    ``settings``), ``options`` (the settings' former name), or a name that is neither; and, when there is none of
    those, ``settings`` missing."""
    problems = [
        Problem(
            name,
            value,
            "a field of settings: LlmEndpoint takes the endpoint's settings in one argument",
            f"pass settings=EndpointOptions({name}=..., ...) (or a mapping) instead of {name}=",
        )
        for name, value in unknown.items()
        if name in ENDPOINT_SETTINGS
    ]
    problems += keyword_problems(
        {name: value for name, value in unknown.items() if name not in ENDPOINT_SETTINGS},
        takes=ENDPOINT_ARGUMENTS,
        renamed={"options": ("settings", "EndpointOptions")},
        hint=", or put it in settings when it is an endpoint setting",
    )
    if settings is None and not problems:
        problems.append(
            Problem(
                "settings",
                MISSING,
                "the endpoint's settings (EndpointOptions, at least instance_type)",
                'pass settings=EndpointOptions(instance_type="ml.g6e.12xlarge")',
            )
        )
    return problems
