"""Preflight checks of ``routers:``: the router's region offers the API (offline), and each destination given by ARN
exists and is of the kind its routing target needs (live, read-only ``DescribeEndpoint`` /
``DescribeInferenceComponent`` in the destination's region)."""
from __future__ import annotations

from typing import Any, Iterable, Iterator

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
            yield blocker("router-region", f"{where}: inference routers in {region}",
                          f"botocore's endpoint data lists no SageMaker endpoint in {region}, so no {RUNTIME_SERVICE} there",
                          "set home_region to a region that offers inference routers", subject=where)


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
    from ..routing.settings import DESTINATION_ARN

    for where, router in _routers(ctx):
        for t, target in enumerate(router.targets):
            for d, destination in enumerate(target.destinations):
                match = DESTINATION_ARN.match(destination.arn)
                if match is None:
                    continue
                subject = f"{where}.targets[{t}].destinations[{d}]"
                if ctx.account is not None and match.group("account") != ctx.account:
                    yield warning("router-destination", f"{subject}: {destination.arn} is in another account",
                                  "it is checked only by SageMaker, with your credentials, when the router is created",
                                  "ask its owner for the endpoint policy (docs/routers.md)", subject=subject)
                    continue
                kind, region, name = match.group("kind"), match.group("region"), match.group("name")
                found = _describe(ctx, kind, region, name)
                if found is None:
                    yield blocker("router-destination", f"{subject}: {destination.arn} does not exist",
                                  "the router would accept it and every request routed to it would fail",
                                  "deploy it first or correct the ARN", subject=subject)
                    continue
                if kind != "endpoint":
                    continue
                is_async = bool(found.get("AsyncInferenceConfig"))
                if target.async_inference is not None and not is_async:
                    yield blocker("router-destination", f"{subject}: {name} is a real-time endpoint",
                                  "an asynchronous routing target routes to asynchronous endpoints only",
                                  "name an asynchronous endpoint", subject=subject)
                if target.async_inference is None and is_async:
                    yield blocker("router-destination", f"{subject}: {name} is an asynchronous endpoint",
                                  "a real-time routing target cannot route to asynchronous endpoints",
                                  "name a real-time endpoint or make the target asynchronous", subject=subject)


register_check(router_destinations, live=True)

