"""Preflight checks of ``routers:``: the router's region offers the API (offline), each destination given by ARN
exists and is of the kind its routing target needs (live, read-only ``DescribeEndpoint`` /
``DescribeInferenceComponent`` in the destination's region), and each role of ``callers`` may invoke the router
and every destination (live, read-only ``iam:SimulatePrincipalPolicy``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .context import PreflightContext, register_check
from .findings import Finding, blocker, warning

RUNTIME_SERVICE = "sagemaker-inference-router-runtime"


def _routers(ctx: PreflightContext) -> Iterator[tuple[str, Any]]:
    for index, router in enumerate(getattr(ctx.config, "routers", ()) or ()):
        yield f"routers[{index}]", router


def api_regions() -> frozenset[str]:
    """Regions where botocore's endpoint data lists SageMaker, in every partition.

    botocore lists no regions for the router runtime: its endpoint rule set builds an endpoint for any region of a
    partition, so SageMaker's own region list is the narrowest fact botocore holds; where AWS has not launched
    routers in such a region, CreateInferenceRouter still fails at deploy."""
    import boto3

    session = boto3.session.Session()
    found: set[str] = set()
    for partition in session.get_available_partitions():
        found |= set(session.get_available_regions("sagemaker", partition_name=partition))
    return frozenset(found)


@register_check
def router_region(ctx: PreflightContext) -> Iterable[Finding]:
    """The router's home region offers the inference router runtime (botocore's endpoints data)."""
    regions = None
    for where, router in _routers(ctx):
        region = router.home_region or ctx.region
        if region is None:
            continue
        regions = regions if regions is not None else api_regions()
        if region not in regions:
            yield blocker(
                "router-region",
                f"{where}: inference routers in {region}",
                f"botocore's endpoint data lists no SageMaker endpoint in {region}, so no {RUNTIME_SERVICE} there",
                "set home_region to a region that offers inference routers",
                subject=where,
            )


def _describe(ctx: PreflightContext, kind: str, region: str, name: str) -> dict[str, Any] | None:
    assert ctx.clients is not None
    client = ctx.clients.client("sagemaker", region)
    try:
        if kind == "endpoint":
            return client.describe_endpoint(EndpointName=name)  # type: ignore[no-any-return]
        return client.describe_inference_component(InferenceComponentName=name)  # type: ignore[no-any-return]
    except Exception as error:  # botocore's ClientError; read-only, so any other failure is reported as such
        code = str((getattr(error, "response", None) or {}).get("Error", {}).get("Code", type(error).__name__))
        if code in ("ValidationException", "ResourceNotFound", "ResourceNotFoundException"):
            return None
        raise


def router_destinations(ctx: PreflightContext) -> Iterable[Finding]:
    """Each destination given by ARN exists, and an asynchronous target's are asynchronous endpoints (and a
    real-time target's are not), as SageMaker checks only the destinations it can read."""
    if not ctx.live:
        return
    from ..settings.routing import DESTINATION_ARN

    for where, router in _routers(ctx):
        for t, target in enumerate(router.targets):
            for d, destination in enumerate(target.destinations):
                match = DESTINATION_ARN.match(destination.arn)
                if match is None:
                    continue
                subject = f"{where}.targets[{t}].destinations[{d}]"
                if ctx.account is not None and match.group("account") != ctx.account:
                    yield warning(
                        "router-destination",
                        f"{subject}: {destination.arn} is in another account",
                        "it is checked only by SageMaker, with your credentials, when the router is created",
                        "ask its owner for the endpoint policy (docs/routers.md)",
                        subject=subject,
                    )
                    continue
                kind, region, name = match.group("kind"), match.group("region"), match.group("name")
                found = _describe(ctx, kind, region, name)
                if found is None:
                    yield blocker(
                        "router-destination",
                        f"{subject}: {destination.arn} does not exist",
                        "the router would accept it and every request routed to it would fail",
                        "deploy it first or correct the ARN",
                        subject=subject,
                    )
                    continue
                if kind != "endpoint":
                    continue
                is_async = bool(found.get("AsyncInferenceConfig"))
                if target.async_inference is not None and not is_async:
                    yield blocker(
                        "router-destination",
                        f"{subject}: {name} is a real-time endpoint",
                        "an asynchronous routing target routes to asynchronous endpoints only",
                        "name an asynchronous endpoint",
                        subject=subject,
                    )
                if target.async_inference is None and is_async:
                    yield blocker(
                        "router-destination",
                        f"{subject}: {name} is an asynchronous endpoint",
                        "a real-time routing target cannot route to asynchronous endpoints",
                        "name a real-time endpoint or make the target asynchronous",
                        subject=subject,
                    )


register_check(router_destinations, live=True)


def _arn(partition: str, region: str, account: str, kind: str, name: str) -> str:
    return f"arn:{partition}:sagemaker:{region}:{account}:{kind}/{name}"


def caller_resources(ctx: PreflightContext, router: Any) -> list[tuple[str, list[str]]]:
    """``[(action, resource ARNs)]`` a caller of ``router`` needs: the router, then every destination of its
    targets (a model's inference component in the target account and region, as the stack names it; a destination
    given by ARN, and for a component also its endpoint, as IAM checks both), real-time and asynchronous apart."""
    from ..core.name_rules import as_prefix, prefixed_name
    from ..settings.routing import default_router_name

    assert ctx.account is not None and ctx.region is not None
    partition = ctx.partition or "aws"
    region = router.home_region or ctx.region
    name = router.router_name or default_router_name(ctx.config.stack_name, router.name)
    prefix = as_prefix(ctx.config.stack_name)
    models = {m.name: m for _, endpoint in ctx.endpoints() for m in endpoint.models}
    needs: dict[str, list[str]] = {}
    for target in router.targets:
        suffix = "Async" if target.async_inference is not None else ""
        arns = needs.setdefault(f"sagemaker:InvokeEndpoint{suffix}", [])
        router_arns = needs.setdefault(f"sagemaker:InvokeInferenceRouter{suffix}", [])
        router_arn = _arn(partition, region, ctx.account, "inference-router", name)
        if router_arn not in router_arns:
            router_arns.append(router_arn)
        model = models.get(target.model) if target.model else None
        if model is not None:
            adapter = next((a for a in model.adapters if a.name == target.adapter), None)
            if adapter is not None:
                arns.append(
                    _arn(
                        partition,
                        ctx.region,
                        ctx.account,
                        "inference-component",
                        adapter.physical_name or prefixed_name(prefix, adapter.name),
                    )
                )
            elif target.adapter is None:  # an adapter from a manifest file is named at synth only
                arns.append(
                    _arn(
                        partition,
                        ctx.region,
                        ctx.account,
                        "inference-component",
                        model.physical_name or prefixed_name(prefix, model.name),
                    )
                )
        for destination in target.destinations:
            arns.append(destination.arn)
            if destination.endpoint_name is not None:
                head = destination.arn.split(":inference-component/", 1)[0]
                arns.append(f"{head}:endpoint/{destination.endpoint_name}")
    order = (
        "sagemaker:InvokeInferenceRouter",
        "sagemaker:InvokeInferenceRouterAsync",
        "sagemaker:InvokeEndpoint",
        "sagemaker:InvokeEndpointAsync",
    )
    return [(action, list(dict.fromkeys(needs[action]))) for action in order if needs.get(action)]


def _decisions(client: Any, caller: str, action: str, resources: list[str]) -> dict[str, str]:
    """``{resource ARN: EvalDecision}`` of ``caller``'s policies for ``action`` (every page)."""
    found: dict[str, str] = {}
    request: dict[str, Any] = {"PolicySourceArn": caller, "ActionNames": [action], "ResourceArns": resources}
    while True:
        answer = client.simulate_principal_policy(**request)
        for result in answer.get("EvaluationResults", []):
            found[str(result.get("EvalResourceName", ""))] = str(result["EvalDecision"])
        if not answer.get("IsTruncated"):
            return found
        request["Marker"] = answer["Marker"]


def router_callers(ctx: PreflightContext) -> Iterable[Finding]:
    """Each role of ``callers`` may invoke the router and every destination: ``iam:SimulatePrincipalPolicy``
    (read-only) per role and action, a blocker per resource the role's policies do not allow, as the router calls
    each destination with the caller's own credentials. A destination in another account also needs its owner's
    endpoint policy, which the simulation does not read."""
    if not ctx.live or ctx.account is None or ctx.region is None:
        return
    assert ctx.clients is not None
    for where, router in _routers(ctx):
        if not router.callers:
            continue
        needs = caller_resources(ctx, router)
        client = ctx.clients.client("iam", None)
        for c, caller in enumerate(router.callers):
            subject = f"{where}.callers[{c}]"
            for action, resources in needs:
                try:
                    decisions = _decisions(client, caller, action, resources)
                except Exception as error:  # botocore's ClientError: access denied, no such role
                    code = str(
                        (getattr(error, "response", None) or {}).get("Error", {}).get("Code", type(error).__name__)
                    )
                    yield warning(
                        "router-caller",
                        f"{subject}: could not simulate {caller}'s policies ({code})",
                        "its permissions on the router and the destinations are not checked",
                        "allow iam:SimulatePrincipalPolicy on the role, and check the ARN",
                        subject=subject,
                    )
                    break
                for arn in resources:
                    decision = decisions.get(arn, "not evaluated")
                    if decision != "allowed":
                        yield blocker(
                            "router-caller",
                            f"{subject}: {caller} may not {action} on {arn} ({decision})",
                            "the router calls each destination with the caller's credentials; a request "
                            "it cannot make fails, or is never sent",
                            f"allow {action} on {arn} in the role's policy (InferenceRouter.grant_invoke "
                            "does, for a role of the router's account)",
                            subject=subject,
                        )


register_check(router_callers, live=True)
