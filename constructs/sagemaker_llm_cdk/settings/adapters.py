"""Settings of LoRA adapters: how a base model serves them (``LoraSettings``) and one adapter (``AdapterSpec``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from ..core.errors import Problem
from ..core.settings import Settings, field_rule, name_problem, s3_uri_problem

LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""Values vLLM accepts for ``max_lora_rank`` (``vllm/config/lora.py`` ``MaxLoRARanks``, vLLM 0.26)."""
LMI_DEFAULT_LORA_RANK = 16
"""LMI's (vLLM's) ``OPTION_MAX_LORA_RANK`` when it is not set."""


def _lora_rank_problem(value: Any) -> Problem | None:
    if isinstance(value, int) and not isinstance(value, bool) and value in LORA_RANKS:
        return None
    higher = [r for r in LORA_RANKS if isinstance(value, int) and r >= value]
    return Problem(
        "",
        value,
        "one of " + ", ".join(map(str, LORA_RANKS)) + " (the ranks vLLM accepts)",
        f"use {higher[0]}, the smallest accepted rank at least {value}"
        if higher
        else "use the smallest listed value at least your adapters' highest rank",
    )


class LoraSettings(Settings):
    """Serve many LoRA adapters on one base model, loaded on demand.

    Adapters stay in S3 until a request names one; up to ``max_gpu_adapters`` stay on the
    GPU, the least used move to CPU memory (up to ``max_cpu_adapters``), the rest to local
    disk. For the LMI container these set OPTION_ENABLE_LORA, OPTION_MAX_LORAS and
    OPTION_MAX_CPU_LORAS.
    """

    max_gpu_adapters: Annotated[int, Field(ge=1, le=256, description="Adapters kept on the GPU. Default: 4.")] = 4
    max_cpu_adapters: Annotated[
        int, Field(ge=1, le=4096, description=("Adapters kept in CPU memory, at least max_gpu_adapters. Default: 16."))
    ] = 16
    max_rank: Annotated[
        int | None,
        field_rule(_lora_rank_problem),
        Field(
            json_schema_extra={"enum": [*LORA_RANKS, None]},
            description=(
                "Highest LoRA rank (r in each adapter's adapter_config.json) the container accepts: "
                "OPTION_MAX_LORA_RANK, one of "
                + ", ".join(map(str, LORA_RANKS))
                + " (vLLM's values). Adapters of a higher rank fail to load, "
                "and the container reserves GPU memory for this rank, so pick the smallest at least your highest. "
                "Required when adapters are declared; without adapters, default: the container's (16)."
            ),
        ),
    ] = None

    def _rules(self) -> list[Problem]:
        if self.max_cpu_adapters < self.max_gpu_adapters:
            return [
                Problem(
                    "max_cpu_adapters",
                    self.max_cpu_adapters,
                    f"at least max_gpu_adapters ({self.max_gpu_adapters}): adapters leave the GPU for CPU memory",
                    "raise max_cpu_adapters or lower max_gpu_adapters",
                )
            ]
        return []


def max_rank_missing(field: str) -> Problem:
    """The problem of adapters declared on a model whose ``lora`` has no ``max_rank``."""
    return Problem(
        field,
        None,
        "one of " + ", ".join(map(str, LORA_RANKS)) + " when adapters are declared: the "
        f"container's default ({LMI_DEFAULT_LORA_RANK}) refuses adapters of a higher rank",
        "set max_rank to the smallest listed value at least the highest r in your adapters' "
        "adapter_config.json, e.g. max_rank: 16",
    )


class AdapterSpec(Settings):
    """A LoRA adapter served on a base model as its own inference component."""

    name: Annotated[
        str,
        field_rule(lambda v: name_problem("", v)),
        Field(
            description=(
                "The adapter's name: its inference component is named <stack name>-<name> (clients pass that as "
                "InferenceComponentName; the stack prints it), unless physical_name pins it. 1-63 letters, digits and "
                "hyphens."
            )
        ),
    ]
    physical_name: Annotated[
        str | None,
        field_rule(lambda v: name_problem("", v)),
        Field(
            description=(
                "The adapter's exact inference component name, not prefixed: it must be unique in the account and "
                "region, so two stacks of one config collide. Default: <stack name>-<name>."
            )
        ),
    ] = None
    artifact_s3_uri: Annotated[
        str,
        field_rule(lambda v: s3_uri_problem("", v, want="tar.gz")),
        Field(description="s3://bucket/adapter.tar.gz with the adapter files at the archive root."),
    ]

    def _rules(self) -> list[Problem]:
        return []


def lora_environment(settings: LoraSettings) -> dict[str, str]:
    """The LMI container variables that turn on dynamic adapter loading with ``settings``."""
    environment = {
        "OPTION_ENABLE_LORA": "true",
        "OPTION_MAX_LORAS": str(settings.max_gpu_adapters),
        "OPTION_MAX_CPU_LORAS": str(settings.max_cpu_adapters),
    }
    if settings.max_rank is not None:
        environment["OPTION_MAX_LORA_RANK"] = str(settings.max_rank)
    return environment
