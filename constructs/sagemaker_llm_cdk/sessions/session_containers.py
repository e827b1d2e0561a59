"""The model containers a session front door serves, and the stateful-session settings it gives them.

The containers are the served models' own and the bases of the served adapters. Each LMI (DJL Serving)
container gets the session variables (``SESSION_VARIABLES``) of the front door's settings, unless it already has
other values (``container_problems``: a container has one session expiry). A container that is not LMI, an LMI
release before ``FIRST_LMI_WITH_SESSIONS``, or LMI 16 without async mode gets a synth warning instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from aws_cdk import Annotations

from constructs import Construct

from ..core.errors import Problem
from ..settings.sessions import SessionSettings
from .served_components import unique

SESSION_VARIABLES = ("OPTION_ENABLE_STATEFUL_SESSIONS", "OPTION_SESSIONS_EXPIRATION")
"""LMI (DJL Serving) container variables for stateful sessions. ``OPTION_SESSIONS_PATH`` is left at
the container's default (``/dev/shm/djl_sessions``, memory-backed)."""

FIRST_LMI_WITH_SESSIONS = 16
"""LMI 16 (DJL Serving 0.34.0) is the first release whose notes list session-based sticky routing
(vLLM async mode); async mode is the default from LMI 17."""


_LMI_MAJOR = re.compile(r"-lmi(\d+)\.")


def containers(served: Sequence[Any]) -> list[Any]:
    """The model containers that run the served components: a model's own, an adapter's base's."""
    found: list[Any] = []
    for component in served:
        container = component if hasattr(component, "add_environment") else getattr(component, "base", None)
        if container is not None and hasattr(container, "add_environment") and hasattr(container, "spec"):
            found.append(container)
    return unique(found)


def session_variables(settings: SessionSettings) -> dict[str, str]:
    return {"OPTION_ENABLE_STATEFUL_SESSIONS": "true", "OPTION_SESSIONS_EXPIRATION": str(settings.expiration_seconds)}


def container_problems(containers: Sequence[Any], settings: SessionSettings, default_component: Any) -> list[Problem]:
    problems = []
    for container in containers:
        if not container.spec.is_lmi:
            continue
        field = "default_component" if container is default_component else f"model {container.component_name}"
        for name, value in session_variables(settings).items():
            current = container.environment.get(name)
            if current is not None and current != value:
                origin = "its spec.environment" if name in container.spec.environment else "another session front door"
                problems.append(
                    Problem(
                        f"{field}.environment.{name}",
                        current,
                        f"{value!r}, what this front door's settings need (a container has one session expiry)",
                        f"remove {name} from {origin}, or make this front door's session expiry {current} seconds "
                        "(settings, or the model's sessions.expiration_seconds)"
                        if name == "OPTION_SESSIONS_EXPIRATION"
                        else f"remove {name} from {origin}",
                    )
                )
    return problems


def enable_sessions(containers: Sequence[Any], settings: SessionSettings) -> None:
    """Set the session variables of ``settings`` on each LMI container."""
    for container in containers:
        if container.spec.is_lmi:
            for name, value in session_variables(settings).items():
                container.add_environment(name, value)


def warn_about_containers(scope: Construct, containers: Sequence[Any]) -> None:
    """Warn on ``scope`` about each container whose server may not keep sessions: not LMI, too old, or not async."""
    for container in containers:
        spec = container.spec
        if not spec.is_lmi:
            Annotations.of(scope).add_warning_v2(
                "sagemaker-llm-cdk:session-container",
                f"model {container.component_name} uses image {spec.image}, not LMI: the front door sets no "
                "session variables on it, so its server must implement SageMaker stateful sessions "
                "(requestType NEW_SESSION/CLOSE, X-Amzn-SageMaker-New-Session-Id); otherwise turns with a "
                "conversation_id fail with 502 SessionsNotSupported.",
            )
            continue
        major = lmi_major(spec.image, spec.lmi_tag)
        if major is not None and major < FIRST_LMI_WITH_SESSIONS:
            Annotations.of(scope).add_warning_v2(
                "sagemaker-llm-cdk:session-lmi-version",
                f"model {container.component_name} uses LMI {major} ({spec.image}); session-based sticky routing "
                f"is listed from LMI {FIRST_LMI_WITH_SESSIONS} (DJL Serving 0.34.0, vLLM async mode). Use e.g. "
                "image lmi:0.35.0-lmi17.0.0-cu128, or turns with a conversation_id may fail with 502 "
                "SessionsNotSupported.",
            )
        elif major == FIRST_LMI_WITH_SESSIONS and container.environment.get("OPTION_ASYNC_MODE") != "true":
            Annotations.of(scope).add_warning_v2(
                "sagemaker-llm-cdk:session-lmi-async",
                f"model {container.component_name} uses LMI 16, where sessions need vLLM async mode: set "
                "environment OPTION_ASYNC_MODE=true, OPTION_ROLLING_BATCH=disable and "
                "OPTION_ENTRYPOINT=djl_python.lmi_vllm.vllm_async_service (async mode is the default from LMI 17).",
            )


def lmi_major(image: str, lmi_tag: str | None) -> int | None:
    tag = lmi_tag
    if tag is None:
        last = image.rsplit("/", 1)[-1]
        tag = last.split(":", 1)[1] if ":" in last else None
    match = _LMI_MAJOR.search(f"-{tag}" if tag else "")
    return int(match.group(1)) if match else None
