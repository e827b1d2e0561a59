"""Where a config's routers live: each platform stack as deployed (account, region) and each router's home, the
account and region it is deployed to. Data only, shared by the app's routers stack and the pipeline's wave."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from aws_cdk import Stack
from sagemaker_llm_cdk import AppConfig, RouterSpec, default_router_name


@dataclass(frozen=True)
class Deployment:
    """One platform stack as deployed: the stack, its account and region."""

    stack: Stack
    account: str
    region: str


class Located(Protocol):
    """Where a platform stack deploys: a ``Deployment``, or a stage of the pipeline settings before it is built."""

    @property
    def account(self) -> str: ...

    @property
    def region(self) -> str: ...


@dataclass(frozen=True)
class RouterHome:
    """One router of a config as the pipeline deploys it: its spec (``routers[index]``), physical name, account and
    region. A stage in another account attaches the endpoint policies this router needs there."""

    index: int
    spec: RouterSpec
    router_name: str
    account: str
    region: str


def router_name_of(config: AppConfig, spec: RouterSpec) -> str:
    """The InferenceRouterName of ``spec``: ``router_name``, or ``<stack name>-<name>`` (``default_router_name``)."""
    return spec.router_name or default_router_name(config.stack_name, spec.name)


def router_homes(config: AppConfig, places: Sequence[Located]) -> list[RouterHome]:
    """Every router of ``config`` with its home, for a config deployed to ``places`` (in wave order)."""
    found = []
    for index, spec in enumerate(config.routers):
        account, region = home_of(spec, places)
        found.append(RouterHome(index, spec, router_name_of(config, spec), account, region))
    return found


def home_of(spec: RouterSpec, deployments: Sequence[Located]) -> tuple[str, str]:
    """(account, region) a router runs in: ``home_region`` (or the first deployment's region) and the account of the
    first deployment there (or the first deployment's account)."""
    region = spec.home_region or deployments[0].region
    account = next((d.account for d in deployments if d.region == region), deployments[0].account)
    return account, region
