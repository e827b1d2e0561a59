"""Preflight: what would make a ``cdk deploy`` of a config fail, found before CloudFormation starts.

Run it as ``make preflight`` (this repository), ``python -m sagemaker_llm_cdk.preflight --config
config/default.yaml [--region R] [--offline]`` (any team, from the wheel), or call
``run_preflight`` from your own app or CI. Each finding is one line: severity (blocker, warning,
info), what, why, how to fix. Any blocker means the deploy would fail or spend money for nothing.

**Offline** (no AWS call): the target region supports every CloudFormation resource type the
synthesized templates use (cfn-lint's per-region schemas), the region's partition fits the
container image and Powertools layer accounts, every instance type is offered for its use
(botocore's enums), capacity-plan purchase windows are not in the past and can hold the plan,
a bound plan can be Active when the endpoint needs it, and a bound endpoint's update policy has
the headroom its plan allows.

**With credentials** (read-only calls, skipped with ``--offline`` or when no credentials
resolve): the account matches the config's target, each plan's status and window
(``DescribeTrainingPlan``), Service Quotas for each endpoint instance type and the EAGLE job
(matched by quota *name*, e.g. "ml.p5e.48xlarge for endpoint usage"), model weights, adapter
archives and datasets present in S3 (``HeadObject`` / ``ListObjectsV2`` with ``MaxKeys=1``),
the Powertools layer version present in the region (``GetLayerVersionByArn``, and the public SSM
parameter with the latest version), and on-demand prices (``pricing`` ``GetProducts``).

Other checks plug in with ``register_check`` (offline or live); each gets a ``PreflightContext``.
Settings added later are read by attribute, so they slot in without a change here:
``endpoints[].instance_pools[].instance_type`` (``endpoint_instance_types``: quotas, prices and
instance-type checks cover every pool), ``endpoints[].update_policy`` ``rolling`` with
``rolling_batch_instances`` (``update_policy``: headroom), ``endpoints[].on_demand_until_active``
(``serves_on_demand_until_active``: an inactive plan is then a warning, not a blocker).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal, Mapping, Sequence

from .. import regions, service_model
from ..errors import ConfigurationError
from ..pricing import HOSTING, PriceList, PriceLookup, not_looked_up

if TYPE_CHECKING:
    from ..capacity_plan import CapacityPlanSpec
    from ..config import AppConfig, EndpointSpec

Severity = Literal["blocker", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("blocker", "warning", "info")
HOURS_PER_30_DAYS = 24 * 30
SAGEMAKER_QUOTA_SERVICE = "sagemaker"
ENDPOINT_QUOTA_NAME = "{instance_type} for endpoint usage"
"""Service Quotas name of the per-instance-type endpoint quota (looked up by name, never by a guessed code)."""

_ECR_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.(?P<suffix>amazonaws\.com(?:\.cn)?)/"
    r"(?P<repository>[^:@]+)"
)
_LAYER_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):lambda:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):layer:(?P<name>[A-Za-z0-9_-]+):(?P<version>\d+)$"
)
_POWERTOOLS_NAME = re.compile(r"^AWSLambdaPowertoolsPython(?:V\d+)?-(?P<python>python\d)(?P<minor>\d+)-(?P<arch>x86_64|arm64)$")
_DLC_REPOSITORIES = ("djl-inference",)


# ------------------------------------------------------------------ findings
@dataclass(frozen=True)
class Finding:
    """One thing preflight found: how bad, what, why it matters, and what to do.

    ``check`` names the check that found it (``region.resource-types``); ``subject`` the config
    path or resource it is about (``endpoints[0]``, ``capacity_plans[0]``), when there is one.
    """

    severity: Severity
    check: str
    what: str
    why: str
    fix: str
    subject: str = ""

    def line(self) -> str:
        where = f"{self.subject}: " if self.subject else ""
        head = f"{self.severity.upper():<7} [{self.check}] {where}{self.what}"
        if self.severity == "info" and self.fix == _NOTHING:
            return head if self.why == _FOR_REVIEWER else f"{head}; why: {self.why}"
        return f"{head}; why: {self.why}; fix: {self.fix}"


_NOTHING = "nothing to do"
_FOR_REVIEWER = "for the reviewer"


def blocker(check: str, what: str, why: str, fix: str, subject: str = "") -> Finding:
    return Finding("blocker", check, what, why, fix, subject)


def warning(check: str, what: str, why: str, fix: str, subject: str = "") -> Finding:
    return Finding("warning", check, what, why, fix, subject)


def info(check: str, what: str, why: str = _FOR_REVIEWER, fix: str = _NOTHING, subject: str = "") -> Finding:
    return Finding("info", check, what, why, fix, subject)


def format_findings(findings: Sequence[Finding], *, source: str = "", region: str | None = None,
                    live: bool = False) -> str:
    """The findings, blockers first, one line each, then a summary line."""
    order = {s: i for i, s in enumerate(SEVERITIES)}
    lines = [f.line() for f in sorted(findings, key=lambda f: order[f.severity])]
    lines.append(summary_line(findings, source=source, region=region, live=live))
    return "\n".join(lines)


def summary_line(findings: Sequence[Finding], *, source: str = "", region: str | None = None, live: bool = False) -> str:
    counts = {s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES}
    head = "preflight" + (f" of {source}" if source else "") + f" for {region or 'no region'}"
    head += " (live checks ran)" if live else " (offline)"
    verdict = "the deploy would fail: fix the blockers first" if counts["blocker"] else "no blocker found"
    return (f"{head}: {counts['blocker']} blocker(s), {counts['warning']} warning(s), {counts['info']} info; {verdict}")


def exit_code(findings: Iterable[Finding]) -> int:
    """1 when any finding is a blocker, else 0 (2 is the CLI's code for a bad config or arguments)."""
    return 1 if any(f.severity == "blocker" for f in findings) else 0


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
                self._clients[key] = session.client(service, region_name=region,
                                                    config=Config(retries={"max_attempts": 3, "mode": "standard"}))
        return self._clients[key]


# ------------------------------------------------------------------- context
@dataclass
class PreflightContext:
    """What every check reads: the config, the target, the synthesized templates and (live) the clients."""

    config: "AppConfig"
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
    def plans(self) -> dict[str, tuple[int, "CapacityPlanSpec"]]:
        """``{plan name: (index, spec)}`` of ``capacity_plans``."""
        return {plan.plan_name: (index, plan) for index, plan in enumerate(self.config.capacity_plans)}

    def plan_of(self, endpoint: "EndpointSpec") -> tuple[int, "CapacityPlanSpec"] | None:
        """The plan ``endpoint`` is bound to, with its index, or None (on-demand)."""
        name = getattr(endpoint, "capacity_plan", None)
        return self.plans.get(name) if isinstance(name, str) else None

    def endpoints(self) -> Iterator[tuple[str, "EndpointSpec"]]:
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
        pool_type = getattr(pool, "instance_type", None) or (pool.get("instance_type") if isinstance(pool, Mapping) else None)
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
    (``DeploymentConfig.RollingUpdatePolicy.MaximumBatchSize``); else ``endpoint.update_policy``
    (``blue_green``/``rolling``) and ``endpoint.rolling_batch_instances`` when the settings have them;
    else blue/green, which this library configures (``monitoring.rollout.endpoint_rollback``) and
    which SageMaker uses without an update policy ("blue/green ... all at once traffic shifting by default").
    """
    from_template = _template_update_policy(ctx, endpoint)
    if from_template is not None:
        return from_template
    policy = getattr(endpoint, "update_policy", None)
    if isinstance(policy, str) and policy.replace("-", "_").lower() == "rolling":
        batch = getattr(endpoint, "rolling_batch_instances", None)
        return "rolling", batch if isinstance(batch, int) and batch > 0 else 1
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
            return "rolling", max(1, -(-endpoint.scaling.max_instances * value // 100))
        return "rolling", value
    return None


def serves_on_demand_until_active(endpoint: Any) -> bool:
    """Whether the endpoint is set to serve on on-demand capacity until its plan is Active.

    Reads ``endpoint.on_demand_until_active`` when the settings have it. Such an endpoint's
    inactive plan is a warning, not a blocker: the deploy succeeds and a later deploy binds the plan.
    """
    return bool(getattr(endpoint, "on_demand_until_active", False))


def _iso(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ============================================================ offline checks
@register_check
def check_region(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.region is None:
        yield warning("region.target", "no target region given, so region-specific checks ran against every region",
                      "resource types, image and layer accounts differ by region; the deploy uses your CLI's region",
                      "pass --region R (or REGION=R to make), or set target.region in the config")
        return
    if ctx.partition is None:
        yield blocker("region.partition", f"region {ctx.region!r} is not a region botocore knows",
                      "CloudFormation, SageMaker and the image registries are regional; an unknown name fails every call",
                      "correct the region name (e.g. us-east-1)")
        return
    if ctx.partition not in regions.SUPPORTED_PARTITIONS:
        yield blocker("region.partition", f"{ctx.region} is in partition {ctx.partition}",
                      "this library's images, layers and ARNs are written for " + ", ".join(regions.SUPPORTED_PARTITIONS),
                      "deploy to a region of a supported partition")
    else:
        yield info("region.partition", f"{ctx.region} is in partition {ctx.partition}")
    target = ctx.config.target.region
    if target is not None and target != ctx.region:
        yield blocker("region.target", f"--region {ctx.region} differs from target.region {target} in {ctx.source}",
                      "the stacks are bound to target.region; preflight would check another region than the deploy uses",
                      f"run with --region {target}, or change target.region")


@register_check
def check_resource_types(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.templates is None:
        yield warning("region.resource-types", "no synthesized templates, so resource types were not checked",
                      "a template with a type the region lacks fails at CloudFormation's first step",
                      "run without --no-synth (preflight synthesizes the app from cdk.json), or pass --cdk-out cdk.out")
        return
    if regions.schemas_dir() is None:
        yield warning("region.resource-types", "cfn-lint is not installed, so resource types were not checked",
                      "its per-region CloudFormation schemas are the offline source of which types a region supports",
                      "pip install 'sagemaker-llm-cdk[preflight]' (or cfn-lint)")
        return
    used = regions.resource_types_used(ctx.templates)
    if ctx.region is None:
        for resource_type, where in sorted(used.items()):
            lacking = sorted(r for r in regions.schema_regions() if resource_type not in (regions.resource_types(r) or ()))
            if lacking:
                yield warning("region.resource-types",
                              f"{resource_type} (used by {len(where)} resource(s)) is missing in {len(lacking)} region(s): "
                              + ", ".join(lacking),
                              "CloudFormation cannot create a type its region does not support",
                              "deploy to a region not listed; pass --region to check one region")
        return
    supported = regions.resource_types(ctx.region)
    if supported is None:
        yield warning("region.resource-types", f"cfn-lint has no resource-type list for {ctx.region}",
                      "the region is newer than the installed cfn-lint, or not a CloudFormation region",
                      "upgrade cfn-lint, or check the region's CloudFormation resource types yourself")
        return
    missing = {t: where for t, where in used.items() if t not in supported}
    for resource_type, where in sorted(missing.items()):
        elsewhere = _nearby_first(regions.regions_with(resource_type), ctx.region, ctx.partition)
        shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
        yield blocker("region.resource-types", f"{resource_type} is not available in {ctx.region} (used by {shown})",
                      f"CloudFormation in {ctx.region} has no such resource type, so the stack fails to create",
                      "deploy to a region that has it: " + (", ".join(elsewhere[:8]) + (" ..." if len(elsewhere) > 8 else "")
                                                           if elsewhere else "none known to cfn-lint"))
    if not missing:
        yield info("region.resource-types",
                   f"all {len(used)} CloudFormation resource types of {len(ctx.templates)} template(s) exist in {ctx.region}")


def _nearby_first(candidates: list[str], region: str, partition: str | None) -> list[str]:
    """``candidates`` of ``partition`` only, those of the same geography (``us``, ``eu``, ...) as ``region`` first."""
    geography = region.split("-", 1)[0]
    same = [r for r in candidates if regions.partition_of(r) == partition]
    return sorted(same, key=lambda r: (r.split("-", 1)[0] != geography, r))


def _images(ctx: PreflightContext) -> list[tuple[str, str | None]]:
    """(where, image URI or None when unresolvable) of every model container."""
    from ..model_component import LMI_ACCOUNT, LMI_REPOSITORY

    found: list[tuple[str, str | None]] = []
    region = ctx.region or "<region>"
    partition = ctx.partition if ctx.partition in regions.URL_SUFFIX else "aws"
    if ctx.templates is not None:
        for name, logical_id, resource in regions.resources_of(ctx.templates):
            if resource["Type"] != "AWS::SageMaker::Model":
                continue
            for image in [*regions.values_at(resource, "PrimaryContainer", "Image"),
                          *regions.values_at(resource, "Containers", "*", "Image")]:
                found.append((f"{name}/{logical_id}", regions.render(image, region=region, partition=partition)))
        return found
    for path, endpoint in ctx.endpoints():
        for m_index, model in enumerate(endpoint.models):
            where = f"{path}.models[{m_index}].image"
            if model.lmi_tag is not None:
                found.append((where, f"{LMI_ACCOUNT}.dkr.ecr.{region}.{regions.URL_SUFFIX[partition]}/"
                                     f"{LMI_REPOSITORY}:{model.lmi_tag}"))
            else:
                found.append((where, model.image))
    return found


@register_check
def check_images(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.region is None or ctx.partition not in regions.URL_SUFFIX:
        return
    suffix = regions.URL_SUFFIX[ctx.partition]
    for where, image in _images(ctx):
        if image is None:
            yield info("image.account", "image URI depends on template values preflight cannot resolve",
                       "its account and region were not checked", "check the image URI by hand", where)
            continue
        match = _ECR_IMAGE.match(image)
        if not match:
            yield warning("image.account", f"image {image} is not an ECR URI", "SageMaker pulls model images from ECR",
                          "push the image to ECR in the target region and give its URI", where)
            continue
        if match.group("suffix") != suffix:
            yield blocker("image.account", f"image {image} is on {match.group('suffix')}",
                          f"registries in partition {ctx.partition} end in {suffix}",
                          f"use the image's copy in {ctx.region} ({match.group('account')}.dkr.ecr.{ctx.region}.{suffix}/...)",
                          where)
        if match.group("region") != ctx.region:
            yield blocker("image.region", f"image {image} is in {match.group('region')}, the endpoint in {ctx.region}",
                          "SageMaker pulls a model's image from ECR in the model's own region",
                          f"replicate or push the image to ECR in {ctx.region}", where)
            continue
        if match.group("repository") in _DLC_REPOSITORIES:
            publisher = regions.DLC_ACCOUNTS.get(ctx.region)
            if publisher is None:
                yield warning("image.account", f"AWS's Deep Learning Containers account for {ctx.region} is not known here",
                              "the LMI image is published per region, by different accounts in opt-in and other partitions",
                              "look the account up on AWS's DLC 'Region Availability' page and give the full image URI",
                              where)
            elif publisher != match.group("account"):
                tag = image.split(":", 1)[1] if ":" in image.split("/", 1)[1] else "<tag>"
                yield blocker("image.account",
                              f"image {image} names account {match.group('account')}, but {ctx.region}'s LMI images are "
                              f"published by {publisher}",
                              "the pull fails (repository not found) and the endpoint never becomes InService",
                              f"set image to {publisher}.dkr.ecr.{ctx.region}.{suffix}/{match.group('repository')}:{tag}",
                              where)


def _layers(ctx: PreflightContext) -> list[tuple[str, str | None]]:
    """(where, layer ARN or None) of every layer the functions use."""
    from ..functions import POWERTOOLS_LAYER_VERSION

    region = ctx.region or "<region>"
    partition = ctx.partition or "aws"
    if ctx.templates is not None:
        seen: dict[str | None, str] = {}
        for name, logical_id, resource in regions.resources_of(ctx.templates):
            if resource["Type"] != "AWS::Lambda::Function":
                continue
            for layer in regions.values_at(resource, "Layers", "*"):
                arn = regions.render(layer, region=region, partition=partition)
                seen.setdefault(arn, f"{name}/{logical_id}")
        return [(where, arn) for arn, where in seen.items()]
    return [("library functions", f"arn:{partition}:lambda:{region}:{regions.POWERTOOLS_ACCOUNTS['aws']}:layer:"
                                  f"AWSLambdaPowertoolsPythonV3-python313-x86_64:{POWERTOOLS_LAYER_VERSION}")]


@register_check
def check_layers(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.region is None or ctx.partition is None:
        return
    for where, arn in _layers(ctx):
        if arn is None:
            yield info("layer.account", "a layer ARN depends on template values preflight cannot resolve",
                       "its account and region were not checked", "check the layer ARN by hand", where)
            continue
        match = _LAYER_ARN.match(arn)
        if not match:
            continue
        if match.group("partition") != ctx.partition or match.group("region") != ctx.region:
            yield blocker("layer.region", f"layer {arn} is not in {ctx.region} ({ctx.partition})",
                          "Lambda uses layers of the function's own region and partition",
                          f"use the layer's ARN in {ctx.region}", where)
            continue
        if _POWERTOOLS_NAME.match(match.group("name")):
            publisher = regions.POWERTOOLS_ACCOUNTS.get(ctx.partition)
            if publisher is None:
                yield blocker("layer.account",
                              f"Powertools layer {arn} names account {match.group('account')}, which publishes only in "
                              "the aws partition",
                              f"Powertools publishes its {ctx.partition} layers from other accounts; the function "
                              "cannot be created with this ARN",
                              "deploy in the aws partition, or change functions.powertools_layer to the partition's "
                              "layer ARN (Powertools documents it)", where)
            elif publisher != match.group("account"):
                yield warning("layer.account", f"Powertools layer {arn} is not from AWS's account {publisher}",
                              "the public layer is published by that account", "use AWS's public layer ARN", where)


@register_check
def check_instance_types(ctx: PreflightContext) -> Iterable[Finding]:
    endpoint_types = service_model.endpoint_instance_types()
    for path, endpoint in ctx.endpoints():
        for instance_type in endpoint_instance_types(endpoint):
            if instance_type not in endpoint_types:
                yield blocker("instance-type.endpoint", f"{instance_type} is not offered for endpoints",
                              "SageMaker rejects the endpoint config", "pick a type SageMaker lists for endpoints", path)
    optimization_types = service_model.optimization_instance_types()
    for path, _endpoint, _eagle, job_type in eagle_jobs(ctx):
        if job_type not in optimization_types:
            yield blocker("instance-type.eagle-job", f"the EAGLE job would run on {job_type}, not offered for optimization jobs",
                          "CreateOptimizationJob rejects it on every scheduled run",
                          "set eagle.job_instance_type to one of: " + ", ".join(sorted(optimization_types)[:6]) + " ...",
                          path)
    for name, logical_id, resource in regions.resources_of(ctx.templates or {}):
        if resource["Type"] != "AWS::SageMaker::EndpointConfig":
            continue
        for variant in regions.values_at(resource, "ProductionVariants", "*"):
            if not isinstance(variant, Mapping):
                continue
            found: list[Any] = [variant.get("InstanceType")]
            found += [p.get("InstanceType") for p in variant.get("InstancePools") or [] if isinstance(p, Mapping)]
            for instance_type in found:
                if isinstance(instance_type, str) and instance_type not in endpoint_types:
                    yield blocker("instance-type.endpoint", f"{instance_type} is not offered for endpoints",
                                  "SageMaker rejects the endpoint config", "pick a type SageMaker lists for endpoints",
                                  f"{name}/{logical_id}")


@register_check
def check_purchase_windows(ctx: PreflightContext) -> Iterable[Finding]:
    for index, plan in enumerate(ctx.config.capacity_plans):
        if plan.effective_mode != "reserve":
            continue
        path = f"capacity_plans[{index}]"
        start, end, days = plan.start_after, plan.end_before, plan.duration_days or 0
        if end is not None and end <= ctx.now:
            yield blocker("plan.window", f"end_before {_iso(end)} has passed", "no offering can end in the past; the "
                          "purchase fails", "move the window into the future", path)
            continue
        earliest = max(ctx.now, start) if start is not None else ctx.now
        if start is not None and start < ctx.now:
            yield warning("plan.window", f"start_after {_iso(start)} has passed",
                          "offerings start from now on; the window is shorter than written",
                          "set start_after to a future time or remove it", path)
        if end is not None and end - earliest < timedelta(days=days):
            left = max(0.0, (end - earliest).total_seconds() / 86400)
            yield blocker("plan.window", f"{left:.1f} day(s) remain before end_before {_iso(end)} but the plan lasts "
                          f"{days} day(s)", "no offering fits the window, so the purchase fails",
                          "widen the window or shorten duration_days", path)


@register_check
def check_purchases(ctx: PreflightContext) -> Iterable[Finding]:
    for index, plan in enumerate(ctx.config.capacity_plans):
        if plan.effective_mode == "reserve":
            yield info("plan.purchase", f"the deploy that creates plan {plan.plan_name} buys {plan.purchase_summary()}, "
                       f"prepaid up to USD {plan.max_upfront_fee_usd} and never refunded",
                       "money is spent once, when the plan is bought; a plan already bought is found by name, not bought again",
                       "deploy only if you mean to buy it; use mode: existing for a plan you have", f"capacity_plans[{index}]")


@register_check
def check_plan_binding(ctx: PreflightContext) -> Iterable[Finding]:
    for path, endpoint in ctx.endpoints():
        bound = ctx.plan_of(endpoint)
        if bound is None:
            continue
        index, plan = bound
        if plan.effective_mode == "reserve":
            start = plan.start_after
            if start is not None and start > ctx.now:
                make = warning if serves_on_demand_until_active(endpoint) else blocker
                yield make("plan.active", f"the endpoint is bound to plan {plan.plan_name}, which cannot start before "
                              f"{_iso(start)}",
                              "a plan must be Active to serve an endpoint; until its start the endpoint gets no instances "
                              "and the deploy fails (the prepaid plan is kept)",
                              "deploy the endpoint on on-demand capacity now (remove capacity_plan) and bind the plan in "
                              "a deploy after it is Active", path)
            else:
                yield warning("plan.active", f"the endpoint is bound to plan {plan.plan_name}, bought by this config",
                              "a newly bought plan is Pending or Scheduled until its start, and an endpoint bound to it "
                              "gets no instances", "buy the plan first; bind it once DescribeTrainingPlan says Active "
                              "(preflight checks it with credentials)", path)
        parts = plan.arn_parts
        if parts is not None and ctx.region is not None:
            plan_region, _account = parts
            arn_partition = (plan.existing_plan_arn or "").split(":")[1] if plan.existing_plan_arn else None
            if plan_region != ctx.region or (ctx.partition and arn_partition != ctx.partition):
                yield blocker("plan.region", f"plan {plan.plan_name} is in {plan_region} ({arn_partition}), the endpoint "
                              f"in {ctx.region}", "an endpoint can use only plans of its own account and region",
                              f"use a plan bought in {ctx.region}", f"capacity_plans[{index}]")


@register_check
def check_update_headroom(ctx: PreflightContext) -> Iterable[Finding]:
    from ..model_component import accelerators_of

    rollout = ctx.config.monitoring.rollout
    for path, endpoint in ctx.endpoints():
        bound = ctx.plan_of(endpoint)
        scaling = endpoint.scaling
        limit = scaling.max_instances
        if bound is not None:
            _index, plan = bound
            limit = min(limit, plan.instance_count)
            policy, batch = update_policy(ctx, endpoint)
            if policy == "blue_green":
                needed = 2 * scaling.max_instances
                if plan.instance_count < needed:
                    yield blocker("headroom.endpoint",
                                  f"a blue/green endpoint update needs up to {needed} instances (a second fleet for "
                                  f"max_instances {scaling.max_instances}); plan {plan.plan_name} holds {plan.instance_count}",
                                  "with capacity-reservations-only the new fleet cannot launch, so any endpoint-config "
                                  "change runs to its timeout and rolls back",
                                  f"reserve a plan of {needed}+ instances, lower scaling.max_instances to "
                                  f"{max(1, plan.instance_count // 2)}, or use a rolling update policy", path)
            else:
                needed = scaling.max_instances + batch
                if plan.instance_count < needed:
                    yield blocker("headroom.endpoint",
                                  f"a rolling endpoint update needs max_instances + one batch = {needed} instances; plan "
                                  f"{plan.plan_name} holds {plan.instance_count}",
                                  "the batch's new instances cannot launch on the plan, so the update rolls back",
                                  f"lower scaling.max_instances to {plan.instance_count - batch} or reserve a larger plan",
                                  path)
        gpus = accelerators_of(endpoint.instance_type)
        if not rollout.enabled or gpus is None:
            continue
        capacity = limit * gpus
        demand = sum(m.copies.max_copies * m.accelerators for m in endpoint.models)
        batch_need = max((rollout.batch_copies * m.accelerators for m in endpoint.models), default=0)
        if demand + batch_need > capacity:
            yield warning("headroom.models",
                          f"at peak the models hold {demand} of {capacity} accelerators ({limit} x {endpoint.instance_type}); "
                          f"a model update needs {batch_need} more for its first batch",
                          "a rolling inference-component update places new copies before it removes old ones; without "
                          "room it waits and rolls back",
                          "lower max_copies, raise max_instances (and the plan), or update when traffic is low", path)


# =============================================================== live checks
def _error_code(error: Exception) -> str:
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", type(error).__name__))


_NOT_FOUND = ("ResourceNotFound", "ResourceNotFoundException", "ValidationException", "404", "NoSuchKey", "NoSuchBucket",
              "NotFound", "ParameterNotFound")
_DENIED = ("AccessDenied", "AccessDeniedException", "403", "UnauthorizedOperation", "Forbidden")


@_live
def check_account(ctx: PreflightContext) -> Iterable[Finding]:
    target = ctx.config.target.account
    if target is not None and ctx.account is not None and ctx.account != target:
        yield blocker("credentials.account", f"credentials are for account {ctx.account}, target.account is {target}",
                      "the stacks are bound to target.account; CloudFormation refuses to deploy them elsewhere, and "
                      "the live checks looked at the wrong account", f"use credentials for account {target}")
    elif ctx.account is not None:
        yield info("credentials.account", f"live checks ran as account {ctx.account}")


@_live
def check_plans_live(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.clients is None or ctx.region is None:
        return
    sagemaker = ctx.clients.client("sagemaker", ctx.region)
    bound_by = {getattr(e, "capacity_plan", None): p for p, e in ctx.endpoints()}
    for index, plan in enumerate(ctx.config.capacity_plans):
        path = f"capacity_plans[{index}]"
        endpoint_path = bound_by.get(plan.plan_name)
        try:
            described = sagemaker.describe_training_plan(TrainingPlanName=plan.plan_name)
        except Exception as error:
            code = _error_code(error)
            if code in _DENIED:
                yield warning("plan.status", f"not allowed to describe plan {plan.plan_name} ({code})",
                              "its status and window are unknown", "allow sagemaker:DescribeTrainingPlan", path)
            elif code in _NOT_FOUND:
                if plan.effective_mode == "existing":
                    yield blocker("plan.status", f"plan {plan.plan_name} does not exist in {ctx.region}",
                                  "an existing plan must be there to bind", "buy it first, or correct name/existing_plan_arn",
                                  path)
                elif endpoint_path is not None:
                    yield blocker("plan.status", f"plan {plan.plan_name} is not bought yet and {endpoint_path} is bound to it",
                                  "a newly bought plan is not Active until its start; the endpoint gets no instances",
                                  "buy the plan first, bind it once it is Active", path)
                else:
                    yield info("plan.status", f"plan {plan.plan_name} is not bought yet (see plan.purchase)", subject=path)
            else:
                yield warning("plan.status", f"DescribeTrainingPlan {plan.plan_name} failed ({code})",
                              "its status and window are unknown", "retry, or check the plan in the console", path)
            continue
        yield from _plan_findings(ctx, plan, described, path, endpoint_path)


MAX_S3_CHECKED = 100
"""S3 locations probed per run (one call each)."""
MAX_NAMES_CHECKED = 50
"""Names probed per run (one Describe call each); the rest are reported as not checked."""


@_live
def check_names_free(ctx: PreflightContext) -> Iterable[Finding]:
    """Fixed physical names (inference components, ``endpoint_name``) not already taken outside the stack."""
    if ctx.clients is None or ctx.region is None:
        return
    names: list[tuple[str, str, str]] = []  # (config path, kind, name)
    for path, endpoint in ctx.endpoints():
        if endpoint.endpoint_name:
            names.append((f"{path}.endpoint_name", "endpoint", endpoint.endpoint_name))
        for m_index, model in enumerate(endpoint.models):
            names.append((f"{path}.models[{m_index}].name", "inference component", model.name))
            for a_index, adapter in enumerate(model.adapters):
                names.append((f"{path}.models[{m_index}].adapters[{a_index}].name", "inference component", adapter.name))
    if not names:
        return
    stack_exists = _stack_exists(ctx)
    sagemaker = ctx.clients.client("sagemaker", ctx.region)
    for path, kind, name in names[:MAX_NAMES_CHECKED]:
        described: Mapping[str, Any] = {}
        try:
            if kind == "endpoint":
                sagemaker.describe_endpoint(EndpointName=name)
            else:
                described = sagemaker.describe_inference_component(InferenceComponentName=name)
        except Exception as error:
            if _error_code(error) not in _NOT_FOUND:
                yield warning("names.free", f"could not check whether {kind} {name} exists ({_error_code(error)})",
                              "a name taken outside the stack fails the create", "allow sagemaker:DescribeEndpoint and DescribeInferenceComponent", path)
            continue
        on = f" (on endpoint {described['EndpointName']})" if described.get("EndpointName") else ""
        if stack_exists is False:
            yield blocker("names.free", f"{kind} {name} already exists{on} and stack {ctx.config.stack_name} does not",
                          f"{kind} names are unique in an account and region; CloudFormation cannot create a second one",
                          "rename it in the config, or delete the old one if nothing uses it", path)
        elif stack_exists is True:
            yield info("names.free", f"{kind} {name} exists{on}; stack {ctx.config.stack_name} exists too (an update)",
                       subject=path)
    if len(names) > MAX_NAMES_CHECKED:
        yield info("names.free", f"{len(names) - MAX_NAMES_CHECKED} more name(s) not checked (first {MAX_NAMES_CHECKED} only)")


def _stack_exists(ctx: PreflightContext) -> bool | None:
    assert ctx.clients is not None
    try:
        ctx.clients.client("cloudformation", ctx.region).describe_stacks(StackName=ctx.config.stack_name)
    except Exception as error:
        if _error_code(error) == "ValidationError" and "does not exist" in str(error):
            return False
        return None
    return True


def _plan_findings(ctx: PreflightContext, plan: "CapacityPlanSpec", described: Mapping[str, Any], path: str,
                   endpoint_path: str | None) -> Iterator[Finding]:
    status = described.get("Status")
    start, end = described.get("StartTime"), described.get("EndTime")
    window = f"{_iso(start) if isinstance(start, datetime) else '?'} to {_iso(end) if isinstance(end, datetime) else '?'}"
    targets = described.get("TargetResources") or []
    if targets and "endpoint" not in targets:
        yield blocker("plan.target", f"plan {plan.plan_name} is for {', '.join(targets)}, not endpoints",
                      "only plans bought with target 'endpoint' can serve an endpoint", "buy a plan for endpoints", path)
    types = {s.get("InstanceType") for s in described.get("ReservedCapacitySummaries") or [] if s.get("InstanceType")}
    if types and plan.instance_type not in types:
        yield blocker("plan.instances", f"plan {plan.plan_name} holds {', '.join(sorted(types))}, the config says "
                      f"{plan.instance_type}", "the endpoint's instance type must equal the plan's",
                      "correct instance_type in the config", path)
    total = described.get("TotalInstanceCount")
    if isinstance(total, int) and total < plan.instance_count:
        yield blocker("plan.instances", f"plan {plan.plan_name} holds {total} instance(s), the config says "
                      f"{plan.instance_count}", "scaling and headroom were checked against more instances than exist",
                      f"set instance_count to {total}", path)
    if status == "Active":
        if isinstance(end, datetime):
            left = end - ctx.now
            if left <= timedelta(days=plan.expiry_warning_days):
                yield warning("plan.status", f"plan {plan.plan_name} ends {_iso(end)} ({left.days} day(s) left)",
                              "after the end, invocations fail with a capacity error",
                              "renew or move the endpoint to on-demand capacity before then", endpoint_path or path)
        fee = described.get("UpfrontFee")
        paid = f", upfront fee {described.get('CurrencyCode', '')} {fee}".replace("  ", " ") if fee else ""
        yield info("plan.status", f"plan {plan.plan_name} is Active ({window}{paid})", subject=path)
    elif endpoint_path is not None:
        endpoint = next((e for p, e in ctx.endpoints() if p == endpoint_path), None)
        make = warning if serves_on_demand_until_active(endpoint) else blocker
        yield make("plan.status", f"plan {plan.plan_name} is {status} ({window})",
                      "a plan must be Active to serve an endpoint; the endpoint would get no instances and the deploy fail",
                      "deploy the endpoint on on-demand capacity until the plan is Active" if status in ("Pending", "Scheduled")
                      else "bind another plan or remove capacity_plan", endpoint_path)
    else:
        yield info("plan.status", f"plan {plan.plan_name} is {status} ({window})", subject=path)


def _quotas(ctx: PreflightContext) -> dict[str, float] | None:
    """``{quota name: value}`` of SageMaker's quotas (applied values over AWS defaults), or None when not readable."""
    assert ctx.clients is not None
    client = ctx.clients.client("service-quotas", ctx.region)
    values: dict[str, float] = {}
    for operation, applied in (("list_aws_default_service_quotas", False), ("list_service_quotas", True)):
        request: dict[str, Any] = {"ServiceCode": SAGEMAKER_QUOTA_SERVICE, "MaxResults": 100}
        for _ in range(50):
            response = getattr(client, operation)(**request)
            for quota in response.get("Quotas", []):
                name, value = quota.get("QuotaName"), quota.get("Value")
                if isinstance(name, str) and isinstance(value, (int, float)):
                    if applied or name not in values:
                        values[name] = float(value)
            token = response.get("NextToken")
            if not token:
                break
            request = {**request, "NextToken": token}
    return values


@_live
def check_quotas(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.clients is None or ctx.region is None:
        return
    try:
        quotas = _quotas(ctx)
    except Exception as error:
        yield warning("quota", f"Service Quotas could not be read ({_error_code(error)})",
                      "instance quotas decide whether the endpoint and the EAGLE job get instances",
                      "allow servicequotas:ListServiceQuotas and ListAWSDefaultServiceQuotas, or check the console")
        return
    assert quotas is not None
    needs: dict[str, tuple[int, list[str], bool]] = {}
    for path, endpoint in ctx.endpoints():
        on_plan = ctx.plan_of(endpoint) is not None
        for instance_type in endpoint_instance_types(endpoint):
            name = ENDPOINT_QUOTA_NAME.format(instance_type=instance_type)
            count, paths, plan_only = needs.get(name, (0, [], True))
            needs[name] = (count + endpoint.scaling.max_instances, [*paths, path], plan_only and on_plan)
    for name, (count, paths, plan_only) in sorted(needs.items()):
        value = quotas.get(name)
        where = ", ".join(paths)
        if value is None:
            yield warning("quota.endpoint", f"no Service Quotas entry named {name!r}",
                          "the instance type's endpoint quota could not be checked", "check the quota in the console", where)
        elif value < count:
            make = warning if plan_only else blocker
            yield make("quota.endpoint", f"quota {name!r} is {value:g}, the config may run {count}",
                       "instances beyond the quota fail to launch" + (
                           " (the endpoint runs on a plan; whether plan instances count against it is not documented)"
                           if plan_only else ""),
                       f"request an increase to {count} in Service Quotas, or lower scaling.max_instances", where)
        else:
            yield info("quota.endpoint", f"quota {name!r} is {value:g}; the config needs up to {count}", subject=where)
    for path, _endpoint, eagle, job_type in eagle_jobs(ctx):
        matches = {n: v for n, v in quotas.items() if job_type in n and "optimization" in n.lower()}
        if not matches:
            yield warning("quota.eagle-job", f"no Service Quotas entry names {job_type} for optimization jobs",
                          "the EAGLE job's on-demand capacity could not be checked; with none, each run fails",
                          "find the quota for optimization jobs in the Service Quotas console", path)
            continue
        for name, value in sorted(matches.items()):
            if value < eagle.max_instance_count:
                yield blocker("quota.eagle-job", f"quota {name!r} is {value:g}, the job needs {eagle.max_instance_count}",
                              "the optimization job cannot start; every scheduled run fails",
                              f"request {eagle.max_instance_count} in Service Quotas or pick another job_instance_type", path)
            else:
                yield info("quota.eagle-job", f"quota {name!r} is {value:g}", subject=path)


def _s3_locations(ctx: PreflightContext) -> Iterator[tuple[str, str, str]]:
    """(config path, what, s3 URI) of every S3 location the config reads at deploy or run time."""
    for path, endpoint in ctx.endpoints():
        for m_index, model in enumerate(endpoint.models):
            model_path = f"{path}.models[{m_index}]"
            yield f"{model_path}.model_data_s3_uri", "model weights", model.model_data_s3_uri
            for a_index, adapter in enumerate(model.adapters):
                yield f"{model_path}.adapters[{a_index}].artifact_s3_uri", f"adapter {adapter.name}", adapter.artifact_s3_uri
            if model.eagle is not None and model.eagle.dataset.s3_uri:
                yield f"{model_path}.eagle.dataset.s3_uri", "EAGLE dataset", model.eagle.dataset.s3_uri


@_live
def check_s3(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.clients is None:
        return
    s3 = ctx.clients.client("s3", ctx.region)
    locations = list(_s3_locations(ctx))
    found = 0
    for path, what, uri in locations[:MAX_S3_CHECKED]:
        bucket, _, key = uri[len("s3://"):].partition("/")
        try:
            if key.endswith(".tar.gz"):
                response = s3.head_object(Bucket=bucket, Key=key)
            else:
                response = s3.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
                if not response.get("KeyCount") and not response.get("Contents"):
                    yield blocker("s3.present", f"{what}: nothing under {uri}",
                                  "SageMaker fails the model or job when its data is missing",
                                  f"upload the files to {uri}", path)
                    continue
            headers = (response.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
            bucket_region = headers.get("x-amz-bucket-region")
            if ctx.region is not None and isinstance(bucket_region, str) and bucket_region != ctx.region:
                yield blocker("s3.region", f"{what}: bucket {bucket} is in {bucket_region}, the endpoint in {ctx.region}",
                              "SageMaker reads model data and job inputs from buckets in its own region",
                              f"copy the data to a bucket in {ctx.region}", path)
                continue
        except Exception as error:
            code = _error_code(error)
            if code in _DENIED:
                yield warning("s3.present", f"{what}: not allowed to read {uri} ({code})",
                              "whether the data is there is unknown (the endpoint's role has its own access)",
                              "allow s3:ListBucket / s3:GetObject on it for this check", path)
            elif code in _NOT_FOUND:
                yield blocker("s3.present", f"{what}: {uri} does not exist ({code})",
                              "SageMaker fails the model or job when its data is missing", f"upload it to {uri}", path)
            else:
                yield warning("s3.present", f"{what}: {uri} could not be checked ({code})", "the data may be missing",
                              "retry, or check with `aws s3 ls`", path)
            continue
        found += 1
    if found:
        yield info("s3.present", f"{found} S3 location(s) found: " + ", ".join(u for _, _, u in locations[:3])
                   + (" ..." if found > 3 else ""))
    if len(locations) > MAX_S3_CHECKED:
        yield info("s3.present", f"{len(locations) - MAX_S3_CHECKED} more S3 location(s) not checked "
                   f"(first {MAX_S3_CHECKED} only)")


@_live
def check_layers_live(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.clients is None or ctx.region is None or ctx.partition is None:
        return
    client = ctx.clients.client("lambda", ctx.region)
    for where, arn in _layers(ctx):
        match = _LAYER_ARN.match(arn or "")
        if arn is None or not match or match.group("region") != ctx.region:
            continue
        try:
            client.get_layer_version_by_arn(Arn=arn)
        except Exception as error:
            code = _error_code(error)
            if code in _NOT_FOUND:
                yield blocker("layer.present", f"layer {arn} does not exist in {ctx.region}",
                              "every function using it fails to create", "use a layer version published in the region", where)
            else:
                yield warning("layer.present", f"layer {arn} could not be read ({code})", "it may not exist here",
                              "allow lambda:GetLayerVersion, or check the layer in the console", where)
            continue
        yield info("layer.present", f"layer {arn} exists", subject=where)
        powertools = _POWERTOOLS_NAME.match(match.group("name"))
        if powertools is None:
            continue
        name = (f"/aws/service/powertools/python/{powertools.group('arch')}/"
                f"{powertools.group('python')}.{powertools.group('minor')}/latest")
        try:
            value = ctx.clients.client("ssm", ctx.region).get_parameter(Name=name)["Parameter"]["Value"]
        except Exception as error:
            yield info("layer.latest", f"the latest Powertools layer could not be read from {name} ({_error_code(error)})",
                       subject=where)
            continue
        latest = _LAYER_ARN.match(str(value))
        if latest and int(latest.group("version")) > int(match.group("version")):
            yield info("layer.latest", f"Powertools layer version {latest.group('version')} is the latest in {ctx.region}; "
                       f"the functions use {match.group('version')}", "newer layers carry fixes",
                       "raise functions.POWERTOOLS_LAYER_VERSION after testing", where)


# ==================================================================== costs
def cost_findings(ctx: PreflightContext) -> Iterator[Finding]:
    """One info line per endpoint (most on-demand hours, price, plan fee) and per EAGLE job (hours per run)."""
    for path, endpoint in ctx.endpoints():
        bound = ctx.plan_of(endpoint)
        if bound is not None:
            _index, plan = bound
            fee = (f"prepaid up to USD {plan.max_upfront_fee_usd}, never refunded" if plan.effective_mode == "reserve"
                   else "already paid")
            yield info("cost.endpoint", f"runs only on plan {plan.plan_name} ({plan.instance_type} x "
                       f"{plan.instance_count}, {fee}); no on-demand instance-hours", subject=path)
            continue
        hours = endpoint.scaling.max_instances * HOURS_PER_30_DAYS
        prices = [_price(ctx, t) for t in endpoint_instance_types(endpoint)]
        known = [p for p in prices if p.known]
        price = max(known, key=lambda p: p.amount or Decimal(0)) if known else prices[0]
        floor = "scales to zero when idle" if endpoint.scaling.min_instances == 0 else (
            f"at least {endpoint.scaling.min_instances * HOURS_PER_30_DAYS} h")
        cost = (f"at {price.label()}: at most {price.times(hours)}" if price.known else f"price {price.label()}")
        yield info("cost.endpoint", f"at most {hours} on-demand instance-hours per 30 days of {price.instance_type} "
                   f"({floor}), {cost}", subject=path)
    for path, _endpoint, eagle, job_type in eagle_jobs(ctx):
        hours = eagle.max_instance_count * eagle.max_runtime_hours
        yield info("cost.eagle-job", f"each EAGLE run uses at most {hours} instance-hours of {job_type} "
                   f"({eagle.max_instance_count} x {eagle.max_runtime_hours} h, schedule {eagle.schedule}); "
                   "price not looked up (the Price List does not say which usage bills optimization jobs)", subject=path)


def _price(ctx: PreflightContext, instance_type: str) -> Any:
    if ctx.region is None:
        return not_looked_up(instance_type, "?", "no region")
    if ctx.prices is None:
        return not_looked_up(instance_type, ctx.region, "offline" if ctx.offline else "no credentials")
    return ctx.prices.hourly(instance_type, ctx.region, usage=HOSTING)


# ====================================================================== run
def run_preflight(
    config: "AppConfig | str | Path",
    *,
    region: str | None = None,
    templates: Mapping[str, Mapping[str, Any]] | None = None,
    offline: bool = False,
    session: Any = None,
    clients: AwsClients | None = None,
    prices: PriceLookup | None = None,
    now: datetime | None = None,
    checks: Sequence[Check] | None = None,
    live_checks: Sequence[Check] | None = None,
) -> list[Finding]:
    """Every finding for deploying ``config`` to ``region``; raises ``ConfigurationError`` for a bad config file.

    :param config: a validated ``AppConfig`` or the path of a config file.
    :param region: the target region. Default: ``target.region``, then the session's region.
    :param templates: ``{name: template}`` of the synthesized app (``regions.load_templates("cdk.out")``);
        without them resource types are not checked and images and layers come from the config.
    :param offline: make no AWS call. Default: live checks run when credentials resolve.
    :param session: a boto3 session for the live checks. Default: boto3's default session.
    :param clients: clients for the live checks (tests pass stubbed ones). Default: from ``session``.
    :param prices: a price lookup for the cost lines. Default: the Price List API when live, else none.
    :param now: the time windows are checked against. Default: now (UTC).
    """
    from ..config import AppConfig, load_config

    source = "config"
    if not isinstance(config, AppConfig):
        source = str(config)
        config = load_config(config)
    findings: list[Finding] = []
    if region is None:
        region = config.target.region
    if region is None and not offline:
        region = _session_region(session)
    partition = regions.partition_of(region) if region else None
    ctx = PreflightContext(config=config, source=source, region=region, partition=partition,
                           now=now or datetime.now(timezone.utc), templates=templates, offline=offline)
    if not offline:
        clients = clients or AwsClients(session=session)
        account = _caller_account(clients, region, findings)
        if account is not None:
            ctx.clients, ctx.account = clients, account
            ctx.prices = prices or PriceList(client_for=lambda api_region: clients.client("pricing", api_region))
    elif prices is not None:
        ctx.prices = prices
    for check in [*(OFFLINE_CHECKS if checks is None else checks),
                  *((LIVE_CHECKS if live_checks is None else live_checks) if ctx.live else [])]:
        findings.extend(_safely(check, ctx))
    findings.extend(_safely(cost_findings, ctx))
    return findings


def _safely(check: Check, ctx: PreflightContext) -> list[Finding]:
    try:
        return list(check(ctx))
    except Exception as error:  # a broken check must not hide the others' findings
        name = getattr(check, "__name__", "check")
        return [warning(f"preflight.{name}", f"check {name} could not run ({type(error).__name__}: {error})",
                        "its findings are missing", "report this to the library's maintainers")]


def _session_region(session: Any) -> str | None:
    try:
        import boto3

        region = (session or boto3.Session()).region_name
    except Exception:
        return None
    return region if isinstance(region, str) else None


def _caller_account(clients: AwsClients, region: str | None, findings: list[Finding]) -> str | None:
    """The account of the credentials, or None (and an info finding) when none resolve."""
    from botocore.exceptions import NoCredentialsError, NoRegionError, PartialCredentialsError

    try:
        return str(clients.client("sts", region).get_caller_identity()["Account"])
    except (NoCredentialsError, PartialCredentialsError, NoRegionError) as error:
        findings.append(info("credentials", f"live checks skipped: {type(error).__name__}",
                             "plan status, quotas, S3 data, layers and prices need read-only credentials",
                             "run with credentials (e.g. AWS_PROFILE=...) or pass --offline to silence this"))
    except Exception as error:
        findings.append(warning("credentials", f"live checks skipped: STS GetCallerIdentity failed ({_error_code(error)})",
                                "plan status, quotas, S3 data, layers and prices were not checked",
                                "check the credentials, or pass --offline"))
    return None


# ===================================================================== synth
def synthesize(app: str, *, config_path: str | Path, cwd: str | Path = ".", timeout: int = 900) -> dict[str, dict[str, Any]]:
    """Run the CDK app command ``app`` as the CDK CLI would (``CDK_OUTDIR``, ``CDK_CONTEXT_JSON``).

    The context is ``cdk.json``'s (feature flags) plus ``config``. A command starting with
    ``python``/``python3`` runs with this interpreter, so the app sees the same packages.
    Returns the templates; raises ``RuntimeError`` with the app's last output lines when it fails.
    """
    command = shlex.split(app)
    if command and command[0] in ("python", "python3"):
        command[0] = sys.executable
    context = {**_cdk_json(Path(cwd)).get("context", {}), "config": str(config_path)}
    with tempfile.TemporaryDirectory(prefix="preflight-") as outdir:
        env = {**os.environ, "CDK_OUTDIR": outdir, "CDK_CONTEXT_JSON": json.dumps(context)}
        result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
            raise RuntimeError(tail or f"exit code {result.returncode}")
        return regions.load_templates(outdir)


def _cdk_json(cwd: Path) -> dict[str, Any]:
    try:
        data = json.loads((cwd / "cdk.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _app_command(cwd: Path) -> str | None:
    app = _cdk_json(cwd).get("app")
    return app if isinstance(app, str) else None


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``python -m sagemaker_llm_cdk.preflight --config FILE [--region R] [--offline]``.

    Exit codes: 0 no blocker, 1 at least one blocker, 2 a bad config file or bad arguments.
    """
    parser = argparse.ArgumentParser(prog="python -m sagemaker_llm_cdk.preflight",
                                     description="Find what would make a deploy of a config fail, before CloudFormation starts.")
    parser.add_argument("--config", required=True, help="deployment config file (YAML)")
    parser.add_argument("--region", help="target region. Default: target.region, then your AWS CLI region")
    parser.add_argument("--offline", action="store_true", help="make no AWS call (skip plan, quota, S3, layer and price checks)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--cdk-out", help="read the templates of an existing synth (e.g. cdk.out) instead of synthesizing")
    source.add_argument("--app", help="CDK app command to synthesize with. Default: 'app' from ./cdk.json")
    source.add_argument("--no-synth", action="store_true", help="check the config only (resource types are not checked)")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON lines, then the summary")
    args = parser.parse_args(argv)

    from ..config import load_config

    try:
        config = load_config(args.config)
    except ConfigurationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    templates: dict[str, dict[str, Any]] | None = None
    early: list[Finding] = []
    if args.cdk_out:
        if not Path(args.cdk_out, "manifest.json").is_file() and not regions.template_files(args.cdk_out):
            print(f"error: --cdk-out {args.cdk_out}: no synthesized templates there; fix: run `make synth` first",
                  file=sys.stderr)
            return 2
        templates = regions.load_templates(args.cdk_out)
    elif not args.no_synth:
        app = args.app or _app_command(Path.cwd())
        if app is not None:
            print(f"preflight: synthesizing `{app}` with config {args.config} ...", file=sys.stderr)
            try:
                templates = synthesize(app, config_path=args.config)
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
                early.append(blocker("synth", "the app does not synthesize", str(error).replace("\n", " | ")[-600:],
                                     "fix the synth error (run `make synth`) and run preflight again"))
    findings = early + run_preflight(config, region=args.region, templates=templates, offline=args.offline)
    region = args.region or config.target.region or (None if args.offline else _session_region(None))
    live = any(f.check == "credentials.account" for f in findings)
    if args.json:
        for finding in findings:
            print(json.dumps(asdict(finding), sort_keys=True))
        print(summary_line(findings, source=args.config, region=region, live=live))
    else:
        print(format_findings(findings, source=args.config, region=region, live=live))
    return exit_code(findings)

