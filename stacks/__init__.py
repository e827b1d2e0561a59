"""This team's stacks: the LLM platform stack built from a deployment config, and the synth checks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .llm_platform import LlmPlatformStack

if TYPE_CHECKING:
    from .checks import attach_checks

__all__ = ["LlmPlatformStack", "attach_checks"]


def __getattr__(name: str) -> Any:
    # The checks load cdk-nag (its jsii assembly and Python bindings, ~0.3 s): only when asked for.
    if name == "attach_checks":
        from .checks import attach_checks

        return attach_checks
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
