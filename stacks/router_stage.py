"""The app's inference routers (``routers:`` in a config): one entry point across every stage that deploys the config.

A router is regional and its destinations are ARNs, which are deterministic from the config: each stage's
stack name, account and region give its inference components' names and ARNs (``Destination.of_component``
reads them from the built stage). So:

* **in the pipeline** (``add_router_stage``, called by ``stacks/pipeline.py`` after the waves): a final wave
  ``Routers`` holds one ``RouterStack`` per config and home region, deployed after every regional stage; each
  routing target lists its model's component in every stage that deploys the config, in wave order. Adding a
  region to ``config/pipeline.yaml`` adds its stage to the router in the same delivery;
* **without the pipeline** (``add_app_routers``, from ``app.py``): a ``<stack name>Routers`` stack beside the
  platform stack, in the same environment, depending on it; the destinations are that stack's components.

The home region is ``routers[].home_region``, or the region of the first stage (in wave order) that deploys the
config; the home account is the account of the first such stage in that region.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import App, CfnOutput, Environment, Stack, Tags
from sagemaker_llm_cdk import (
    AppConfig,
    ConfigurationError,
    Destination,
    EndpointPolicy,
    InferenceRouter,
    LoraAdapter,
    ModelComponent,
    Problem,
    RouterSpec,
    RouterTarget,
    RoutingTargetSpec,
    encrypted_alarm_topic,
    endpoint_policies,
    merged_policy,
    set_removal,
)

from constructs import Construct

from .router_homes import Deployment, RouterHome, home_of, router_homes, router_name_of

STAGE_ID = "Routers"
"""The final wave and stage of the pipeline that hold the routers."""


def attach_endpoint_policies(
    platform: Stack, homes: Sequence[RouterHome], *, account: str, region: str
) -> dict[str, EndpointPolicy]:
    """In the platform stack deployed to ``account`` and ``region``: the endpoint policy of each of its endpoints
    that a router of another account routes to (``InferenceRouter.endpoint_policy``'s document; several routers'
    documents merged), attached after the endpoint exists. ``{endpoint name: EndpointPolicy}``; none for routers
    of the stage's own account."""
    remote = [home for home in homes if home.account != account]
    if not remote:
        return {}
    endpoints = {getattr(e, "physical_name", None): e for e in getattr(platform, "endpoints", {}).values()}
    documents: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    here = [Deployment(platform, account, region)]
    for home in remote:
        targets = router_targets(home.spec, here, where=f"routers[{home.index}]")
        found = (
            endpoint_policies(
                router_name=home.router_name,
                router_account=home.account,
                router_region=home.region,
                targets=targets,
                account=account,
                region=region,
            )
            or {}
        )
        for name, document in found.items():
            if name in endpoints:
                documents.setdefault(name, []).append((home.spec.name, document))
    return {
        name: EndpointPolicy(
            platform,
            f"RouterPolicy{endpoints[name].node.id}",
            endpoint_name=name,
            document=merged_policy(docs),
            endpoint=endpoints[name].cfn_endpoint,
        )
        for name, docs in documents.items()
    }


def _components(stack: Stack, target: RoutingTargetSpec) -> list[Any]:
    found: list[Any] = []
    for node in stack.node.find_all():
        if (
            target.adapter is None
            and isinstance(node, ModelComponent)
            and node.spec.name == target.model
            or (
                target.adapter is not None
                and isinstance(node, LoraAdapter)
                and node.spec.name == target.adapter
                and node.base.spec.name == target.model
            )
        ):
            found.append(node)
    return found


def router_targets(spec: RouterSpec, deployments: Sequence[Deployment], *, where: str) -> list[RouterTarget]:
    """The routing targets of ``spec``: per target, its model's (or adapter's) component in each deployment, in
    order, then the destinations given by hand. A problem is raised in config terms (``where``: the router's path)."""
    problems: list[Problem] = []
    targets: list[RouterTarget] = []
    for t, target in enumerate(spec.targets):
        destinations: list[Destination] = []
        if target.model is not None:
            for deployment in deployments:
                for component in _components(deployment.stack, target):
                    destinations.append(
                        Destination.of_component(component, account=deployment.account, region=deployment.region)
                    )
            if not destinations:
                what = (
                    f"adapter {target.adapter} of model {target.model}" if target.adapter else f"model {target.model}"
                )
                problems.append(
                    Problem(
                        f"{where}.targets[{t}].{'adapter' if target.adapter else 'model'}",
                        target.adapter or target.model,
                        f"a {what.split(' ')[0]} the stacks deploy",
                        f"no stack deploys {what}: correct the name or add it to the config",
                    )
                )
        destinations.extend(Destination.from_arn(d.arn, endpoint_name=d.endpoint_name) for d in target.destinations)
        targets.append(
            RouterTarget(target.name, tuple(destinations), target.routing_preference, target.async_inference)
        )
    if problems:
        raise ConfigurationError(problems, source=where)
    return targets


class RouterStack(Stack):
    """The routers of one config in one home account and region, with their alarm topic and outputs."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        routers: Sequence[tuple[int, RouterSpec]],
        deployments: Sequence[Deployment],
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope, id, description=f"Inference routers of {config.stack_name} (sagemaker-llm-cdk)", **kwargs
        )
        set_removal(self, config.removal)  # its log groups follow the config
        for key, value in config.tags.items():
            Tags.of(self).add(key, value)
        self.alarm_topic = encrypted_alarm_topic(self, "AlarmTopic", description=f"inference router alarms of {id}")
        if config.monitoring.email:
            from aws_cdk import aws_sns_subscriptions as subscriptions

            self.alarm_topic.add_subscription(subscriptions.EmailSubscription(config.monitoring.email))
        self.routers: dict[str, InferenceRouter] = {}
        for index, spec in routers:
            where = f"routers[{index}]"
            targets = router_targets(spec, deployments, where=where)
            try:
                router = InferenceRouter(
                    self,
                    spec.name,
                    targets=targets,
                    router_name=router_name_of(config, spec),
                    tags=dict(config.tags),
                    check_schedule=spec.check_schedule,
                    unroutable_alarm_periods=spec.unroutable_alarm_periods,
                    alarm_topic=self.alarm_topic,
                )
            except ConfigurationError as error:
                raise ConfigurationError([p.under(where) for p in error.problems], source=error.source) from None
            self.routers[spec.name] = router
            self.grant_callers(router, spec)
            CfnOutput(
                self,
                f"{spec.name}RouterName",
                value=router.router_name,
                description=f"InferenceRouterName of router {spec.name}: callers pass it to InvokeInferenceRouter",
            )
            CfnOutput(
                self,
                f"{spec.name}RouterArn",
                value=router.router_arn,
                description=f"ARN of router {spec.name}: callers need sagemaker:InvokeInferenceRouter on it and "
                "sagemaker:InvokeEndpoint on every destination",
            )

    def grant_callers(self, router: InferenceRouter, spec: RouterSpec) -> list[str]:
        """``router.grant_invoke`` for each role of ``spec.callers`` in this stack's account (a policy attached to the
        imported role); a role of another account is granted by its own account, and the preflight checks it.
        Returns the roles granted. An environment-agnostic stack grants none: it cannot tell which are its own."""
        from aws_cdk import Token
        from aws_cdk import aws_iam as iam
        from sagemaker_llm_cdk import ROLE_ARN

        granted: list[str] = []
        if Token.is_unresolved(self.account):
            return granted
        for index, arn in enumerate(spec.callers):
            match = ROLE_ARN.match(arn)
            if match is None or match.group("account") != self.account:
                continue
            role = iam.Role.from_role_arn(self, f"{spec.name}Caller{index}", arn, mutable=True)
            router.grant_invoke(role)
            granted.append(arn)
        return granted


def add_app_routers(app: App, platform: Stack, config: AppConfig) -> RouterStack | None:
    """Without the pipeline: ``<stack name>Routers`` in the platform stack's environment, routing to its components."""
    if not config.routers:
        return None
    stack = RouterStack(
        app,
        f"{config.stack_name}Routers",
        config=config,
        routers=list(enumerate(config.routers)),
        deployments=[Deployment(platform, platform.account, platform.region)],
        env=Environment(account=config.target.account, region=config.target.region),
    )
    stack.add_dependency(platform, "the routers' destinations are the platform stack's inference components")
    return stack


__all__ = [
    "Deployment",
    "RouterHome",
    "RouterStack",
    "add_app_routers",
    "attach_endpoint_policies",
    "home_of",
    "router_homes",
    "router_name_of",
    "router_targets",
]
