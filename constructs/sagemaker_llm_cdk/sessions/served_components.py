"""The components a session front door serves: who may be served, the settings chosen, what its role may invoke.

Each served component (``ServedComponent``: a model or an adapter) must be an inference component of the front
door's endpoint (``component_problems``). The session settings are the default component's own, or the ones
given when they agree (``choose_settings``). The function's role names each served component's ARN, up to
``MAX_LISTED_COMPONENTS``; beyond that one ARN pattern of their common name prefix (``component_resources``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from aws_cdk import Stack

from constructs import Construct

from ..core.errors import Problem
from ..core.settings import validated
from ..settings.sessions import SessionSettings

if TYPE_CHECKING:
    from ..hosting.endpoint import LlmEndpoint

MAX_LISTED_COMPONENTS = 20
"""Up to this many served components, the function's role names each component's ARN. Beyond it, one ARN
pattern (the components' common name prefix) keeps the policy the same size for 20 or 1,000 adapters
(an inline role policy may hold 10,240 characters, and naming adapters of nested stacks would need one
stack output each, 200 at most)."""


class ServedComponent(Protocol):
    """What the front door needs of a model or adapter it serves (``ModelComponent``, ``LoraAdapter``)."""

    component_name: str
    component_arn: str


def component_problems(field: str, component: Any, endpoint: LlmEndpoint) -> list[Problem]:
    name = getattr(component, "component_name", None)
    if not isinstance(name, str) or getattr(component, "component_arn", None) is None:
        return [
            Problem(
                field,
                type(component).__name__,
                "a model or adapter with component_name and component_arn (ModelComponent, LoraAdapter)",
                "pass what endpoint.add_model or add_adapter returned",
            )
        ]
    if not on_endpoint(component, endpoint):
        owner = getattr(component, "endpoint", None)
        where = f" (it is on {owner.node.path})" if isinstance(owner, Construct) else ""
        return [
            Problem(
                field,
                name,
                f"an inference component of endpoint {endpoint.node.path}",
                f"serve {name} through a front door on its own endpoint{where}, or remove it from "
                f"{field.split('[')[0]}",
            )
        ]
    return []


def on_endpoint(component: Any, endpoint: LlmEndpoint) -> bool:
    owner = getattr(component, "endpoint", None)
    if owner is not None:
        return owner is endpoint
    from ..adapters.lora_adapter import adapters_of

    return any(component is other for other in (*endpoint.models, *adapters_of(endpoint)))


def choose_settings(
    settings: SessionSettings | None, default_component: Any, where: str
) -> tuple[SessionSettings, list[Problem]]:
    spec = getattr(default_component, "spec", None)
    from_spec = getattr(spec, "sessions", None)
    if settings is None:
        return from_spec or SessionSettings(), []
    settings = validated(SessionSettings, settings, where=where)
    if from_spec is not None and from_spec != settings:
        return settings, [
            Problem(
                "settings",
                settings.model_dump(),
                f"nothing, or the model's own sessions settings {from_spec.model_dump()}",
                f"drop settings (the front door uses {default_component.component_name}'s "
                "spec.sessions) or make the two equal",
            )
        ]
    return settings, []


def unique(items: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if not any(item is seen for seen in out):
            out.append(item)
    return out


def component_name_pattern(names: Sequence[str]) -> str:
    """``<longest common prefix>*`` of the component names (``*`` when they share none)."""
    return os.path.commonprefix(list(names)) + "*"


def component_resources(stack: Stack, served: Sequence[Any]) -> list[str]:
    if len(served) <= MAX_LISTED_COMPONENTS:
        return [c.component_arn for c in served]
    return [
        stack.format_arn(
            service="sagemaker",
            resource="inference-component",
            resource_name=component_name_pattern([c.component_name for c in served]),
        )
    ]
