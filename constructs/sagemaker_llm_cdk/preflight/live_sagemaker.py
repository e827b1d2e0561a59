"""Live preflight checks against SageMaker: the config's capacity plans and its fixed physical names.

``check_plans_live`` describes each capacity plan (``DescribeTrainingPlan``, by the name the stacks buy or
adopt) and checks its target, instance type and count, status and end against the config.
``check_names_free`` describes each fixed endpoint and inference component name, and asks CloudFormation
whether the stack exists, to find names taken outside the stack or still held by a renamed endpoint.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .context import PreflightContext, _iso, serves_on_demand_until_active
from .findings import Finding, blocker, info, warning
from .live_errors import _DENIED, _NOT_FOUND, _error_code

if TYPE_CHECKING:
    from ..settings.capacity import CapacityPlanSpec


def check_plans_live(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.clients is None or ctx.region is None:
        return
    sagemaker = ctx.clients.client("sagemaker", ctx.region)
    bound_by = {getattr(e, "capacity_plan", None): p for p, e in ctx.endpoints()}
    for index, plan in enumerate(ctx.config.capacity_plans):
        path = f"capacity_plans[{index}]"
        endpoint_path = bound_by.get(plan.plan_name)
        physical = ctx.plan_physical_name(plan)  # what the stacks buy or adopt, not always the config name
        try:
            described = sagemaker.describe_training_plan(TrainingPlanName=physical)
        except Exception as error:
            code = _error_code(error)
            if code in _DENIED:
                yield warning(
                    "plan.status",
                    f"not allowed to describe plan {plan.plan_name} ({code})",
                    "its status and window are unknown",
                    "allow sagemaker:DescribeTrainingPlan",
                    path,
                )
            elif code in _NOT_FOUND:
                if plan.effective_mode == "existing":
                    yield blocker(
                        "plan.status",
                        f"plan {plan.plan_name} does not exist in {ctx.region}",
                        "an existing plan must be there to bind",
                        "buy it first, or correct name/existing_plan_arn",
                        path,
                    )
                elif endpoint_path is not None:
                    yield blocker(
                        "plan.status",
                        f"plan {plan.plan_name} is not bought yet (no TrainingPlanName {physical}) "
                        f"and {endpoint_path} is bound to it",
                        "a newly bought plan is not Active until its start; the endpoint gets no instances",
                        "buy the plan first, bind it once it is Active",
                        path,
                    )
                else:
                    yield info(
                        "plan.status",
                        f"plan {plan.plan_name} is not bought yet: no TrainingPlanName {physical} (see plan.purchase)",
                        subject=path,
                    )
            else:
                yield warning(
                    "plan.status",
                    f"DescribeTrainingPlan {plan.plan_name} failed ({code})",
                    "its status and window are unknown",
                    "retry, or check the plan in the console",
                    path,
                )
            continue
        yield from _plan_findings(ctx, plan, described, path, endpoint_path)


MAX_NAMES_CHECKED = 50
"""Names probed per run (one Describe call each); the rest are reported as not checked."""


def check_names_free(ctx: PreflightContext) -> Iterable[Finding]:
    """Fixed physical names (inference components, ``endpoint_name``) not already taken outside the stack, and not
    re-taken by a renamed endpoint: CloudFormation creates the new endpoint and its components before it deletes
    the old ones, so a component name the old endpoint still holds fails the create."""
    if ctx.clients is None or ctx.region is None:
        return
    from ..core.name_rules import as_prefix, prefixed_name

    # The names the stack creates: a pinned physical_name, else <stack name>-<name> (naming.component_name), each
    # with the endpoint name it goes on when the config pins that name (a generated one is known only after deploy).
    prefix = as_prefix(ctx.config.stack_name)
    names: list[tuple[str, str, str, str | None]] = []  # (config path, kind, name, endpoint name)
    for path, endpoint in ctx.endpoints():
        if endpoint.endpoint_name:
            names.append((f"{path}.endpoint_name", "endpoint", endpoint.endpoint_name, None))
        for m_index, model in enumerate(endpoint.models):
            names.append(
                (
                    f"{path}.models[{m_index}].name",
                    "inference component",
                    model.physical_name or prefixed_name(prefix, model.name),
                    endpoint.endpoint_name,
                )
            )
            for a_index, adapter in enumerate(model.adapters):
                names.append(
                    (
                        f"{path}.models[{m_index}].adapters[{a_index}].name",
                        "inference component",
                        adapter.physical_name or prefixed_name(prefix, adapter.name),
                        endpoint.endpoint_name,
                    )
                )
    if not names:
        return
    stack_exists = _stack_exists(ctx)
    sagemaker = ctx.clients.client("sagemaker", ctx.region)
    for path, kind, name, endpoint_name in names[:MAX_NAMES_CHECKED]:
        described: Mapping[str, Any] = {}
        try:
            if kind == "endpoint":
                sagemaker.describe_endpoint(EndpointName=name)
            else:
                described = sagemaker.describe_inference_component(InferenceComponentName=name)
        except Exception as error:
            if _error_code(error) not in _NOT_FOUND:
                yield warning(
                    "names.free",
                    f"could not check whether {kind} {name} exists ({_error_code(error)})",
                    "a name taken outside the stack fails the create",
                    "allow sagemaker:DescribeEndpoint and DescribeInferenceComponent",
                    path,
                )
            continue
        held_by = described.get("EndpointName")
        on = f" (on endpoint {held_by})" if held_by else ""
        if stack_exists is False:
            yield blocker(
                "names.free",
                f"{kind} {name} already exists{on} and stack {ctx.config.stack_name} does not",
                f"{kind} names are unique in an account and region; CloudFormation cannot create a second one",
                "rename it in the config, or delete the old one if nothing uses it",
                path,
            )
        elif stack_exists is True and held_by and endpoint_name and held_by != endpoint_name:
            yield blocker(
                "names.free",
                f"{kind} {name} is on endpoint {held_by}, and the config puts it on endpoint {endpoint_name}",
                "CloudFormation creates the renamed endpoint and its components before it deletes the old "
                "ones, so the create fails while the old endpoint still holds the name (after the new "
                "endpoint's instances were provisioned), and the update rolls back",
                "give the component a name new to the account as well (physical_name) in the same deploy, "
                "or keep the endpoint's name (docs/troubleshooting.md#a-deploy-that-fails-on-a-name)",
                path,
            )
        elif stack_exists is True:
            yield info(
                "names.free",
                f"{kind} {name} exists{on}; stack {ctx.config.stack_name} exists too (an update)",
                subject=path,
            )
    if len(names) > MAX_NAMES_CHECKED:
        yield info(
            "names.free", f"{len(names) - MAX_NAMES_CHECKED} more name(s) not checked (first {MAX_NAMES_CHECKED} only)"
        )


def _stack_exists(ctx: PreflightContext) -> bool | None:
    assert ctx.clients is not None
    try:
        ctx.clients.client("cloudformation", ctx.region).describe_stacks(StackName=ctx.config.stack_name)
    except Exception as error:
        if _error_code(error) == "ValidationError" and "does not exist" in str(error):
            return False
        return None
    return True


def _plan_findings(
    ctx: PreflightContext, plan: CapacityPlanSpec, described: Mapping[str, Any], path: str, endpoint_path: str | None
) -> Iterator[Finding]:
    status = described.get("Status")
    start, end = described.get("StartTime"), described.get("EndTime")
    window = (
        f"{_iso(start) if isinstance(start, datetime) else '?'} to {_iso(end) if isinstance(end, datetime) else '?'}"
    )
    targets = described.get("TargetResources") or []
    if targets and "endpoint" not in targets:
        yield blocker(
            "plan.target",
            f"plan {plan.plan_name} is for {', '.join(targets)}, not endpoints",
            "only plans bought with target 'endpoint' can serve an endpoint",
            "buy a plan for endpoints",
            path,
        )
    types = {s.get("InstanceType") for s in described.get("ReservedCapacitySummaries") or [] if s.get("InstanceType")}
    if types and plan.instance_type not in types:
        yield blocker(
            "plan.instances",
            f"plan {plan.plan_name} holds {', '.join(sorted(types))}, the config says {plan.instance_type}",
            "the endpoint's instance type must equal the plan's",
            "correct instance_type in the config",
            path,
        )
    total = described.get("TotalInstanceCount")
    if isinstance(total, int) and total < plan.instance_count:
        yield blocker(
            "plan.instances",
            f"plan {plan.plan_name} holds {total} instance(s), the config says {plan.instance_count}",
            "scaling and headroom were checked against more instances than exist",
            f"set instance_count to {total}",
            path,
        )
    if status == "Active":
        if isinstance(end, datetime):
            left = end - ctx.now
            if left <= timedelta(days=plan.expiry_warning_days):
                yield warning(
                    "plan.status",
                    f"plan {plan.plan_name} ends {_iso(end)} ({left.days} day(s) left)",
                    "after the end, invocations fail with a capacity error",
                    "renew or move the endpoint to on-demand capacity before then",
                    endpoint_path or path,
                )
        fee = described.get("UpfrontFee")
        paid = f", upfront fee {described.get('CurrencyCode', '')} {fee}".replace("  ", " ") if fee else ""
        yield info("plan.status", f"plan {plan.plan_name} is Active ({window}{paid})", subject=path)
    elif endpoint_path is not None:
        endpoint = next((e for p, e in ctx.endpoints() if p == endpoint_path), None)
        make = warning if serves_on_demand_until_active(ctx, endpoint) else blocker
        yield make(
            "plan.status",
            f"plan {plan.plan_name} is {status} ({window})",
            "a plan must be Active to serve an endpoint; the endpoint would get no instances and the deploy fail",
            "deploy the endpoint on on-demand capacity until the plan is Active"
            if status in ("Pending", "Scheduled")
            else "bind another plan or remove capacity_plan",
            endpoint_path,
        )
    else:
        yield info("plan.status", f"plan {plan.plan_name} is {status} ({window})", subject=path)
