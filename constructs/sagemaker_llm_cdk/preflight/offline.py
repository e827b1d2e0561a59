"""Offline preflight checks: no AWS call, only the config, the synthesized templates, botocore's and cfn-lint's data."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from ..core import regions, service_model
from ..settings.images import LMI_ACCOUNT, LMI_REPOSITORY
from .context import (
    DLC_REPOSITORIES,
    ECR_IMAGE,
    LAYER_ARN,
    POWERTOOLS_NAME,
    PreflightContext,
    _iso,
    eagle_jobs,
    endpoint_instance_types,
    register_check,
    serves_on_demand_until_active,
    update_policy,
)
from .findings import Finding, blocker, info, warning


# ============================================================ offline checks
@register_check
def check_region(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.region is None:
        yield warning(
            "region.target",
            "no target region given, so region-specific checks ran against every region",
            "resource types, image and layer accounts differ by region; the deploy uses your CLI's region",
            "pass --region R (or REGION=R to make), or set target.region in the config",
        )
        return
    if ctx.partition is None:
        yield blocker(
            "region.partition",
            f"region {ctx.region!r} is not a region botocore knows",
            "CloudFormation, SageMaker and the image registries are regional; an unknown name fails every call",
            "correct the region name (e.g. us-east-1)",
        )
        return
    if ctx.partition not in regions.SUPPORTED_PARTITIONS:
        yield blocker(
            "region.partition",
            f"{ctx.region} is in partition {ctx.partition}",
            "this library's images, layers and ARNs are written for " + ", ".join(regions.SUPPORTED_PARTITIONS),
            "deploy to a region of a supported partition",
        )
    else:
        yield info("region.partition", f"{ctx.region} is in partition {ctx.partition}")
    target = ctx.config.target.region
    if target is not None and target != ctx.region:
        yield blocker(
            "region.target",
            f"--region {ctx.region} differs from target.region {target} in {ctx.source}",
            "the stacks are bound to target.region; preflight would check another region than the deploy uses",
            f"run with --region {target}, or change target.region",
        )


@register_check
def check_resource_types(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.templates is None:
        yield warning(
            "region.resource-types",
            "no synthesized templates, so resource types were not checked",
            "a template with a type the region lacks fails at CloudFormation's first step",
            "run without --no-synth (preflight synthesizes the app from cdk.json), or pass --cdk-out cdk.out",
        )
        return
    if regions.schemas_dir() is None:
        yield warning(
            "region.resource-types",
            "cfn-lint is not installed, so resource types were not checked",
            "its per-region CloudFormation schemas are the offline source of which types a region supports",
            "pip install 'sagemaker-llm-cdk[preflight]' (or cfn-lint)",
        )
        return
    used = regions.resource_types_used(ctx.templates)
    if ctx.region is None:
        for resource_type, where in sorted(used.items()):
            lacking = sorted(
                r for r in regions.schema_regions() if resource_type not in (regions.resource_types(r) or ())
            )
            if lacking:
                yield warning(
                    "region.resource-types",
                    f"{resource_type} (used by {len(where)} resource(s)) is missing in {len(lacking)} region(s): "
                    + ", ".join(lacking),
                    "CloudFormation cannot create a type its region does not support",
                    "deploy to a region not listed; pass --region to check one region",
                )
        return
    supported = regions.resource_types(ctx.region)
    if supported is None:
        yield warning(
            "region.resource-types",
            f"cfn-lint has no resource-type list for {ctx.region}",
            "the region is newer than the installed cfn-lint, or not a CloudFormation region",
            "upgrade cfn-lint, or check the region's CloudFormation resource types yourself",
        )
        return
    missing = {t: where for t, where in used.items() if t not in supported}
    for resource_type, where in sorted(missing.items()):
        elsewhere = _nearby_first(regions.regions_with(resource_type), ctx.region, ctx.partition)
        shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
        yield blocker(
            "region.resource-types",
            f"{resource_type} is not available in {ctx.region} (used by {shown})",
            f"CloudFormation in {ctx.region} has no such resource type, so the stack fails to create",
            "deploy to a region that has it: "
            + (
                ", ".join(elsewhere[:8]) + (" ..." if len(elsewhere) > 8 else "")
                if elsewhere
                else "none known to cfn-lint"
            ),
        )
    if not missing:
        yield info(
            "region.resource-types",
            f"all {len(used)} CloudFormation resource types of {len(ctx.templates)} template(s) exist in {ctx.region}",
        )


def _nearby_first(candidates: list[str], region: str, partition: str | None) -> list[str]:
    """``candidates`` of ``partition`` only, those of the same geography (``us``, ``eu``, ...) as ``region`` first."""
    geography = region.split("-", 1)[0]
    same = [r for r in candidates if regions.partition_of(r) == partition]
    return sorted(same, key=lambda r: (r.split("-", 1)[0] != geography, r))


def _images(ctx: PreflightContext) -> list[tuple[str, str | None]]:
    """(where, image URI or None when unresolvable) of every model container."""
    found: list[tuple[str, str | None]] = []
    region = ctx.region or "<region>"
    partition = ctx.partition if ctx.partition in regions.URL_SUFFIX else "aws"
    if ctx.templates is not None:
        for name, logical_id, resource in regions.resources_of(ctx.templates):
            if resource["Type"] != "AWS::SageMaker::Model":
                continue
            for image in [
                *regions.values_at(resource, "PrimaryContainer", "Image"),
                *regions.values_at(resource, "Containers", "*", "Image"),
            ]:
                found.append((f"{name}/{logical_id}", regions.render(image, region=region, partition=partition)))
        return found
    for path, endpoint in ctx.endpoints():
        for m_index, model in enumerate(endpoint.models):
            where = f"{path}.models[{m_index}].image"
            if model.lmi_tag is not None:
                found.append(
                    (
                        where,
                        f"{LMI_ACCOUNT}.dkr.ecr.{region}.{regions.URL_SUFFIX[partition]}/"
                        f"{LMI_REPOSITORY}:{model.lmi_tag}",
                    )
                )
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
            yield info(
                "image.account",
                "image URI depends on template values preflight cannot resolve",
                "its account and region were not checked",
                "check the image URI by hand",
                where,
            )
            continue
        match = ECR_IMAGE.match(image)
        if not match:
            yield warning(
                "image.account",
                f"image {image} is not an ECR URI",
                "SageMaker pulls model images from ECR",
                "push the image to ECR in the target region and give its URI",
                where,
            )
            continue
        if match.group("suffix") != suffix:
            yield blocker(
                "image.account",
                f"image {image} is on {match.group('suffix')}",
                f"registries in partition {ctx.partition} end in {suffix}",
                f"use the image's copy in {ctx.region} ({match.group('account')}.dkr.ecr.{ctx.region}.{suffix}/...)",
                where,
            )
        if match.group("region") != ctx.region:
            yield blocker(
                "image.region",
                f"image {image} is in {match.group('region')}, the endpoint in {ctx.region}",
                "SageMaker pulls a model's image from ECR in the model's own region",
                f"replicate or push the image to ECR in {ctx.region}",
                where,
            )
            continue
        if match.group("repository") in DLC_REPOSITORIES:
            publisher = regions.DLC_ACCOUNTS.get(ctx.region)
            if publisher is None:
                yield warning(
                    "image.account",
                    f"AWS's Deep Learning Containers account for {ctx.region} is not known here",
                    "the LMI image is published per region, by different accounts in opt-in and other partitions",
                    "look the account up on AWS's DLC 'Region Availability' page and give the full image URI",
                    where,
                )
            elif publisher != match.group("account"):
                tag = image.split(":", 1)[1] if ":" in image.split("/", 1)[1] else "<tag>"
                yield blocker(
                    "image.account",
                    f"image {image} names account {match.group('account')}, but {ctx.region}'s LMI images are "
                    f"published by {publisher}",
                    "the pull fails (repository not found) and the endpoint never becomes InService",
                    f"set image to {publisher}.dkr.ecr.{ctx.region}.{suffix}/{match.group('repository')}:{tag}",
                    where,
                )


def _layers(ctx: PreflightContext) -> list[tuple[str, str | None]]:
    """(where, layer ARN or None) of every layer the functions use."""
    from ..core.functions import POWERTOOLS_LAYER_VERSION

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
    return [
        (
            "library functions",
            f"arn:{partition}:lambda:{region}:{regions.POWERTOOLS_ACCOUNTS['aws']}:layer:"
            f"AWSLambdaPowertoolsPythonV3-python313-x86_64:{POWERTOOLS_LAYER_VERSION}",
        )
    ]


@register_check
def check_layers(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.region is None or ctx.partition is None:
        return
    for where, arn in _layers(ctx):
        if arn is None:
            yield info(
                "layer.account",
                "a layer ARN depends on template values preflight cannot resolve",
                "its account and region were not checked",
                "check the layer ARN by hand",
                where,
            )
            continue
        match = LAYER_ARN.match(arn)
        if not match:
            continue
        if match.group("partition") != ctx.partition or match.group("region") != ctx.region:
            yield blocker(
                "layer.region",
                f"layer {arn} is not in {ctx.region} ({ctx.partition})",
                "Lambda uses layers of the function's own region and partition",
                f"use the layer's ARN in {ctx.region}",
                where,
            )
            continue
        if POWERTOOLS_NAME.match(match.group("name")):
            publisher = regions.POWERTOOLS_ACCOUNTS.get(ctx.partition)
            if publisher is None:
                yield blocker(
                    "layer.account",
                    f"Powertools layer {arn} names account {match.group('account')}, which publishes only in "
                    "the aws partition",
                    f"Powertools publishes its {ctx.partition} layers from other accounts; the function "
                    "cannot be created with this ARN",
                    "deploy in the aws partition, or change functions.powertools_layer to the partition's "
                    "layer ARN (Powertools documents it)",
                    where,
                )
            elif publisher != match.group("account"):
                yield warning(
                    "layer.account",
                    f"Powertools layer {arn} is not from AWS's account {publisher}",
                    "the public layer is published by that account",
                    "use AWS's public layer ARN",
                    where,
                )


@register_check
def check_instance_types(ctx: PreflightContext) -> Iterable[Finding]:
    endpoint_types = service_model.endpoint_instance_types()
    for path, endpoint in ctx.endpoints():
        for instance_type in endpoint_instance_types(endpoint):
            if instance_type not in endpoint_types:
                yield blocker(
                    "instance-type.endpoint",
                    f"{instance_type} is not offered for endpoints",
                    "SageMaker rejects the endpoint config",
                    "pick a type SageMaker lists for endpoints",
                    path,
                )
    optimization_types = service_model.optimization_instance_types()
    for path, _endpoint, _eagle, job_type in eagle_jobs(ctx):
        if job_type not in optimization_types:
            yield blocker(
                "instance-type.eagle-job",
                f"the EAGLE job would run on {job_type}, not offered for optimization jobs",
                "CreateOptimizationJob rejects it on every scheduled run",
                "set eagle.job_instance_type to one of: " + ", ".join(sorted(optimization_types)[:6]) + " ...",
                path,
            )
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
                    yield blocker(
                        "instance-type.endpoint",
                        f"{instance_type} is not offered for endpoints",
                        "SageMaker rejects the endpoint config",
                        "pick a type SageMaker lists for endpoints",
                        f"{name}/{logical_id}",
                    )


@register_check
def check_purchase_windows(ctx: PreflightContext) -> Iterable[Finding]:
    for index, plan in enumerate(ctx.config.capacity_plans):
        if plan.effective_mode != "reserve":
            continue
        path = f"capacity_plans[{index}]"
        start, end, days = plan.start_after, plan.end_before, plan.duration_days or 0
        if end is not None and end <= ctx.now:
            yield blocker(
                "plan.window",
                f"end_before {_iso(end)} has passed",
                "no offering can end in the past; the purchase fails",
                "move the window into the future",
                path,
            )
            continue
        earliest = max(ctx.now, start) if start is not None else ctx.now
        if start is not None and start < ctx.now:
            yield warning(
                "plan.window",
                f"start_after {_iso(start)} has passed",
                "offerings start from now on; the window is shorter than written",
                "set start_after to a future time or remove it",
                path,
            )
        if end is not None and end - earliest < timedelta(days=days):
            left = max(0.0, (end - earliest).total_seconds() / 86400)
            yield blocker(
                "plan.window",
                f"{left:.1f} day(s) remain before end_before {_iso(end)} but the plan lasts {days} day(s)",
                "no offering fits the window, so the purchase fails",
                "widen the window or shorten duration_days",
                path,
            )


@register_check
def check_purchases(ctx: PreflightContext) -> Iterable[Finding]:
    for index, plan in enumerate(ctx.config.capacity_plans):
        if plan.effective_mode == "reserve":
            yield info(
                "plan.purchase",
                f"the deploy that creates plan {plan.plan_name} buys {plan.purchase_summary()} "
                f"as TrainingPlanName {ctx.plan_physical_name(plan)}, prepaid up to USD {plan.max_upfront_fee_usd} "
                "and never refunded",
                "money is spent once, when the plan is bought; a plan of that TrainingPlanName already bought is "
                "adopted, not bought again (a plan bought under another name is found only when physical_name "
                "pins that name)",
                "deploy only if you mean to buy it; use mode: existing for a plan you have",
                f"capacity_plans[{index}]",
            )


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
                make = warning if serves_on_demand_until_active(ctx, endpoint) else blocker
                yield make(
                    "plan.active",
                    f"the endpoint is bound to plan {plan.plan_name}, which cannot start before {_iso(start)}",
                    "a plan must be Active to serve an endpoint; until its start the endpoint gets no instances "
                    "and the deploy fails (the prepaid plan is kept)",
                    "deploy the endpoint on on-demand capacity now (remove capacity_plan) and bind the plan in "
                    "a deploy after it is Active",
                    path,
                )
            else:
                yield warning(
                    "plan.active",
                    f"the endpoint is bound to plan {plan.plan_name}, bought by this config",
                    "a newly bought plan is Pending or Scheduled until its start, and an endpoint bound to it "
                    "gets no instances",
                    "buy the plan first; bind it once DescribeTrainingPlan says Active "
                    "(preflight checks it with credentials)",
                    path,
                )
        parts = plan.arn_parts
        if parts is not None and ctx.region is not None:
            plan_region, _account = parts
            arn_partition = (plan.existing_plan_arn or "").split(":")[1] if plan.existing_plan_arn else None
            if plan_region != ctx.region or (ctx.partition and arn_partition != ctx.partition):
                yield blocker(
                    "plan.region",
                    f"plan {plan.plan_name} is in {plan_region} ({arn_partition}), the endpoint in {ctx.region}",
                    "an endpoint can use only plans of its own account and region",
                    f"use a plan bought in {ctx.region}",
                    f"capacity_plans[{index}]",
                )


@register_check
def check_update_headroom(ctx: PreflightContext) -> Iterable[Finding]:
    from ..core.instances import accelerators_of

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
                    yield blocker(
                        "headroom.endpoint",
                        f"a blue/green endpoint update needs up to {needed} instances (a second fleet for "
                        f"max_instances {scaling.max_instances}); plan {plan.plan_name} holds {plan.instance_count}",
                        "with capacity-reservations-only the new fleet cannot launch, so any endpoint-config "
                        "change runs to its timeout and rolls back",
                        f"reserve a plan of {needed}+ instances, lower scaling.max_instances to "
                        f"{max(1, plan.instance_count // 2)}, or use a rolling update policy",
                        path,
                    )
            else:
                needed = scaling.max_instances + batch
                if plan.instance_count < needed:
                    yield blocker(
                        "headroom.endpoint",
                        f"a rolling endpoint update needs max_instances + one batch = {needed} instances; plan "
                        f"{plan.plan_name} holds {plan.instance_count}",
                        "the batch's new instances cannot launch on the plan, so the update rolls back",
                        f"lower scaling.max_instances to {plan.instance_count - batch} or reserve a larger plan",
                        path,
                    )
        gpus = accelerators_of(endpoint.instance_type)
        if not rollout.enabled or gpus is None:
            continue
        capacity = limit * gpus
        demand = sum(m.copies.max_copies * m.accelerators for m in endpoint.models)
        batch_need = max((rollout.batch_copies * m.accelerators for m in endpoint.models), default=0)
        if demand + batch_need > capacity:
            yield warning(
                "headroom.models",
                f"at peak the models hold {demand} of {capacity} accelerators ({limit} x {endpoint.instance_type}); "
                f"a model update needs {batch_need} more for its first batch",
                "a rolling inference-component update places new copies before it removes old ones; without "
                "room it waits and rolls back",
                "lower max_copies, raise max_instances (and the plan), or update when traffic is low",
                path,
            )


@register_check
def check_head_serving(ctx: PreflightContext) -> Iterable[Finding]:
    """A model that may serve a draft head (an EAGLE loop's promoted head, or JumpStart's pre-trained one).

    The head is served by a SageMaker model with an ``AdditionalModelDataSources`` channel (``eagle``) that the
    inference component runs. AWS documents that channel for CreateModel, and speculative decoding for
    single-model endpoints, but not that an inference component accepts such a model: a warning, so the path
    is tried on a test endpoint before a promotion reaches production.
    """
    for path, endpoint in ctx.endpoints():
        for index, model in enumerate(endpoint.models):
            pretrained = model.source == "jumpstart" and model.pretrained_head is not False
            if model.eagle is None and not pretrained:
                continue
            how = "an EAGLE loop's promoted head" if model.eagle is not None else "JumpStart's pre-trained head"
            yield warning(
                "eagle.head-serving",
                f"model {model.name} serves {how} through a SageMaker model with an AdditionalModelDataSources "
                "channel ('eagle') run by its inference component",
                "AWS documents that channel for CreateModel and speculative decoding for single-model endpoints, not "
                "for inference components; a component that refuses the model fails its update and rolls back",
                "before relying on it in production, promote a head on a test endpoint of this config (put an s3:// "
                "head prefix in the promotion parameter, deploy) and check the component reaches InService",
                f"{path}.models[{index}]",
            )


@register_check
def check_jumpstart_lock_sources(ctx: PreflightContext) -> Iterable[Finding]:
    """A JumpStart model whose lock entry was not read from JumpStart (a fixture): a blocker.

    Read from the synthesized templates, where the synth put the rule that refuses the deploy
    (``hosting.model_component.refuse_deploy_of``), so preflight and CloudFormation say the same thing.
    """
    from ..hosting.jumpstart import DEPLOY_RULE_PREFIX

    for name, template in sorted((ctx.templates or {}).items()):
        for rule_id, rule in sorted((template.get("Rules") or {}).items()):
            if not rule_id.startswith(DEPLOY_RULE_PREFIX):
                continue
            for assertion in rule.get("Assertions") or []:
                yield blocker(
                    "jumpstart.lock-source",
                    str(assertion.get("AssertDescription", rule_id)),
                    "CloudFormation refuses every deploy of a stack whose JumpStart lock entry is not read "
                    "from JumpStart (template rule " + rule_id + ")",
                    "run the make jumpstart-lock command above with AWS credentials and commit the lock",
                    name,
                )
