"""What preflight checks read (``PreflightContext``), the check registry, and config helpers other settings slot
into."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..core import regions
from ..operations.pricing import PriceLookup
from ..settings.operations import batch_units, rolling_batch
from .findings import Finding

if TYPE_CHECKING:
    from ..settings.capacity import CapacityPlanSpec
    from ..settings.config import AppConfig, EndpointSpec

HOURS_PER_30_DAYS = 24 * 30
ECR_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.(?P<suffix>amazonaws\.com(?:\.cn)?)/"
    r"(?P<repository>[^:@]+)"
)
LAYER_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):lambda:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):layer:(?P<name>[A-Za-z0-9_-]+):(?P<version>\d+)$"
)
POWERTOOLS_NAME = re.compile(
    r"^AWSLambdaPowertoolsPython(?:V\d+)?-(?P<python>python\d)(?P<minor>\d+)-(?P<arch>x86_64|arm64)$"
)
DLC_REPOSITORIES = ("djl-inference",)


# ------------------------------------------------------------------- clients
class AwsClients:
    """boto3 clients for the live checks, one per (service, region); tests pass ``factory`` with stubbed clients."""

    def __init__(self, *, session: Any = None, factory: Callable[[str, str | None], Any] | None = None) -> None:
        self._session = session
        self._factory = factory
        self._clients: dict[tuple[str, str | None], Any] = {}

    def client(self, service: str, region: str | None = None) -> Any:
        key = (service, region)
        if key not in self._clients:
            if self._factory is not None:
                self._clients[key] = self._factory(service, region)
            else:
                import boto3
                from botocore.config import Config

                session = self._session or boto3.Session()
                self._clients[key] = session.client(
                    service, region_name=region, config=Config(retries={"max_attempts": 3, "mode": "standard"})
                )
        return self._clients[key]


# ------------------------------------------------------------------- context
@dataclass
class PreflightContext:
    """What every check reads: the config, the target, the synthesized templates and (live) the clients."""

    config: AppConfig
    source: str
    region: str | None
    partition: str | None
    now: datetime
    templates: Mapping[str, Mapping[str, Any]] | None = None
    clients: AwsClients | None = None
    account: str | None = None
    prices: PriceLookup | None = None
    offline: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        return self.clients is not None

    @property
    def plans(self) -> dict[str, tuple[int, CapacityPlanSpec]]:
        """``{plan name: (index, spec)}`` of ``capacity_plans``."""
        return {plan.plan_name: (index, plan) for index, plan in enumerate(self.config.capacity_plans)}

    def plan_physical_name(self, plan: CapacityPlanSpec) -> str:
        """The TrainingPlanName the app's stacks buy or use for ``plan``: ``<stack_name>-<name>`` to reserve
        (unless ``physical_name`` pins it), the name as given for an existing plan."""
        return plan.physical_plan_name(self.config.stack_name)

    def plan_of(self, endpoint: EndpointSpec) -> tuple[int, CapacityPlanSpec] | None:
        """The plan ``endpoint`` is bound to, with its index, or None (on-demand)."""
        name = getattr(endpoint, "capacity_plan", None)
        return self.plans.get(name) if isinstance(name, str) else None

    def endpoints(self) -> Iterator[tuple[str, EndpointSpec]]:
        for index, endpoint in enumerate(self.config.endpoints):
            yield f"endpoints[{index}]", endpoint


Check = Callable[[PreflightContext], Iterable[Finding]]
OFFLINE_CHECKS: list[Check] = []
"""Checks that make no AWS call, in run order."""
LIVE_CHECKS: list[Check] = []
"""Read-only checks that need credentials, in run order."""


def register_check(check: Check, *, live: bool = False) -> Check:
    """Add a check (a function of ``PreflightContext`` returning findings); usable as a decorator."""
    (LIVE_CHECKS if live else OFFLINE_CHECKS).append(check)
    return check


def _live(check: Check) -> Check:
    return register_check(check, live=True)


# --------------------------------------------------------- config helpers
def endpoint_instance_types(endpoint: Any) -> list[str]:
    """Every instance type an endpoint may run: ``instance_type`` and, when present, each of ``instance_pools``.

    Reads pools by attribute (``instance_pools[].instance_type``) so settings added later slot in.
    """
    types = [endpoint.instance_type]
    for pool in getattr(endpoint, "instance_pools", None) or ():
        pool_type = getattr(pool, "instance_type", None) or (
            pool.get("instance_type") if isinstance(pool, Mapping) else None
        )
        if isinstance(pool_type, str) and pool_type not in types:
            types.append(pool_type)
    return types


def eagle_jobs(ctx: PreflightContext) -> Iterator[tuple[str, Any, Any, str]]:
    """(config path, endpoint, eagle settings, job instance type) of every model with EAGLE on."""
    for path, endpoint in ctx.endpoints():
        for m_index, model in enumerate(endpoint.models):
            if model.eagle is not None:
                job_type = model.eagle.job_instance_type or endpoint.instance_type
                yield f"{path}.models[{m_index}].eagle", endpoint, model.eagle, job_type


def update_policy(ctx: PreflightContext, endpoint: Any) -> tuple[str, int]:
    """(policy, batch instances) an endpoint-config change rolls out with: ``blue_green`` or ``rolling``.

    From the synthesized ``AWS::SageMaker::Endpoint`` of this endpoint when there are templates
    (``DeploymentConfig.RollingUpdatePolicy.MaximumBatchSize``, a percent counted at ``max_instances`` rounded
    up as ``operations.settings.batch_units`` counts it); else ``endpoint.update_policy``
    (``blue_green``/``rolling``) and ``endpoint.rolling_batch_instances`` when the settings have them, a rolling
    endpoint without the latter counting the step ``LlmEndpoint`` writes (``operations.settings.rolling_batch``
    of its instance range); else blue/green, which this library configures (``monitoring.rollout.endpoint_rollback``)
    and which SageMaker uses without an update policy ("blue/green ... all at once traffic shifting by default").
    """
    from_template = _template_update_policy(ctx, endpoint)
    if from_template is not None:
        return from_template
    policy = getattr(endpoint, "update_policy", None)
    if isinstance(policy, str) and policy.replace("-", "_").lower() == "rolling":
        batch = getattr(endpoint, "rolling_batch_instances", None)
        if isinstance(batch, int) and batch > 0:
            return "rolling", batch
        scaling = endpoint.scaling
        return "rolling", batch_units(
            *rolling_batch(scaling.min_instances, scaling.max_instances), scaling.max_instances
        )
    return "blue_green", 0


def _template_update_policy(ctx: PreflightContext, endpoint: Any) -> tuple[str, int] | None:
    name = getattr(endpoint, "name", None)
    templates = getattr(ctx, "templates", None)
    if not isinstance(name, str) or not templates:
        return None
    for _template, _logical_id, resource in regions.resources_of(templates):
        path = str((resource.get("Metadata") or {}).get("aws:cdk:path", ""))
        if resource["Type"] != "AWS::SageMaker::Endpoint" or path.split("/")[1:2] != [name]:
            continue
        rolling = (resource.get("Properties", {}).get("DeploymentConfig") or {}).get("RollingUpdatePolicy")
        if not isinstance(rolling, Mapping):
            return "blue_green", 0
        size = rolling.get("MaximumBatchSize") or {}
        value = size.get("Value") if isinstance(size, Mapping) else None
        if not isinstance(value, int) or value < 1:
            return "rolling", 1
        if size.get("Type") == "CAPACITY_PERCENT":
            return "rolling", batch_units("percent", value, endpoint.scaling.max_instances)
        return "rolling", value
    return None


def serves_on_demand_until_active(ctx: PreflightContext, endpoint: Any) -> bool:
    """Whether the endpoint serves on on-demand capacity until its plan is Active: its plan says
    ``when_not_active: on_demand`` (the synth then leaves ``CapacityReservationConfig`` out while the plan's
    status is not Active). Such an endpoint's inactive plan is a warning, not a blocker: the deploy
    succeeds and a later deploy binds the plan."""
    bound = ctx.plan_of(endpoint) if endpoint is not None else None
    return bound is not None and bound[1].when_not_active == "on_demand"


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
