"""The rules between the fields of one model (``ModelSpec._rules``): its source fully given (S3 weights or a
JumpStart model), adapters only with LoRA and each named once, EAGLE's architecture and dataset, one entry per
instance type in ``instance_requirements``, what its image can do, tool calling, the container environment's names
and sizes, no download while network isolation is on, and no variable set against what the model's features give.
Each step is skipped when it reads a field that failed validation (``unless_failed``), so the rest still report.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..core.errors import MISSING, Problem
from ..core.settings import unless_failed
from . import images
from .adapters import lora_environment, max_rank_missing
from .eagle import EAGLE_ARCHITECTURES
from .tool_calling import tool_calling_problems, tool_environment

if TYPE_CHECKING:
    from .model import ModelSpec

ENVIRONMENT_KEY = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,1023}$")
"""A container environment variable's name (``ModelSpec._ENV_KEY``)."""

MAX_ENVIRONMENT = 100
"""Variables SageMaker takes in one container's ``Environment`` (botocore's ``EnvironmentMap``: at most 100)."""


def environment_count_problem(count: int, configured: int, adding: str = "") -> Problem:
    """The container holds more than ``MAX_ENVIRONMENT`` variables: ``count`` in all, ``configured`` from config."""
    added = f", the last {adding}" if adding else ""
    return Problem(
        "environment",
        f"{count} variables ({configured} configured, {count - configured} set by features{added})",
        f"at most {MAX_ENVIRONMENT} variables in the container (SageMaker's limit)",
        "remove variables from environment",
    )


_DOWNLOADING_VARIABLES = ("HF_MODEL_ID", "OPTION_MODEL_ID")
"""Container variables that make LMI/TGI download the model when they name a hub id or URL, not a path."""


def model_problems(spec: ModelSpec) -> list[Problem]:
    """Every rule between the fields of ``spec``, in this order; a step that reads a failed field is skipped."""
    problems: list[Problem] = []
    with unless_failed():
        problems.extend(_source_problems(spec))
    with unless_failed():
        _add_adapter_settings_problems(spec, problems)
    with unless_failed():
        _add_adapter_name_problems(spec, problems)
    with unless_failed():
        _add_eagle_problems(spec, problems)
    with unless_failed():
        _add_instance_requirement_problems(spec, problems)
    with unless_failed():
        if not spec.is_jumpstart:  # a JumpStart model's image is known once resolved from the lock: checked then
            problems.extend(images.capability_problems(spec))
    with unless_failed():
        problems.extend(tool_calling_problems(spec, image_known=not spec.is_jumpstart))
    with unless_failed():
        _add_environment_problems(spec, problems)
    with unless_failed():
        _add_network_isolation_problems(spec, problems)
    with unless_failed():
        problems.extend(_environment_override_problems(spec))
    return problems


def _source_problems(spec: ModelSpec) -> list[Problem]:
    """One source, fully given: s3 with model_data_s3_uri (and image), or jumpstart with model_id and version."""
    problems: list[Problem] = []
    given = spec.model_fields_set
    if spec.source == "s3":
        if not spec.model_data_s3_uri:
            problems.append(
                Problem(
                    "model_data_s3_uri",
                    MISSING,
                    "an s3:// prefix or .tar.gz with source s3 (the default)",
                    "give model_data_s3_uri, or source: jumpstart with model_id and version",
                )
            )
        for name in ("model_id", "version"):
            if getattr(spec, name) is not None:
                problems.append(
                    Problem(
                        name,
                        getattr(spec, name),
                        "only with source: jumpstart",
                        f"add source: jumpstart (and remove model_data_s3_uri), or remove {name}",
                    )
                )
        if spec.accept_eula:
            problems.append(
                Problem(
                    "accept_eula",
                    True,
                    "only with source: jumpstart (licences of JumpStart models)",
                    "remove accept_eula",
                )
            )
        if spec.pretrained_head is not None:
            problems.append(
                Problem(
                    "pretrained_head",
                    spec.pretrained_head,
                    "only with source: jumpstart (heads JumpStart publishes)",
                    "remove pretrained_head",
                )
            )
        return problems
    if spec.pretrained_head is True and spec.lora is not None:
        problems.append(
            Problem(
                "pretrained_head",
                True,
                "not with lora: vLLM cannot serve LoRA adapters and a speculative-decoding head on one model",
                "remove pretrained_head (or set it false), or serve the adapters on another model",
            )
        )
    if spec.pretrained_head is True and "OPTION_SPECULATIVE_CONFIG" in spec.environment:
        problems.append(
            Problem(
                "environment.OPTION_SPECULATIVE_CONFIG",
                spec.environment["OPTION_SPECULATIVE_CONFIG"],
                "nothing with pretrained_head: the served head sets it",
                "remove OPTION_SPECULATIVE_CONFIG, or set pretrained_head: false",
            )
        )
    for name in ("model_id", "version"):
        if getattr(spec, name) is None:
            problems.append(
                Problem(
                    name,
                    MISSING,
                    "required with source: jumpstart",
                    f"add {name} (see the JumpStart model card, then run `make jumpstart-lock`)",
                )
            )
    for name in ("model_data_s3_uri", "model_data_owner", "image"):
        if name in given:
            problems.append(
                Problem(
                    name,
                    getattr(spec, name),
                    "nothing with source: jumpstart (the lock file gives the image and artifacts)",
                    f"remove {name}, or use source: s3 without model_id and version",
                )
            )
    return problems


def _add_adapter_settings_problems(spec: ModelSpec, problems: list[Problem]) -> None:
    """Adapters (listed or in a manifest) only on a model with ``lora``, whose ``max_rank`` is then required."""
    if (spec.adapters or spec.adapters_manifest) and spec.lora is None:
        problems.append(
            Problem(
                "adapters",
                [a.name for a in spec.adapters] or spec.adapters_manifest,
                "adapters only on a model with lora settings",
                "add `lora: {max_gpu_adapters: 4, max_cpu_adapters: 16, max_rank: 16}` to this model",
            )
        )
    elif (spec.adapters or spec.adapters_manifest) and spec.lora is not None and spec.lora.max_rank is None:
        problems.append(max_rank_missing("lora.max_rank"))


def _add_adapter_name_problems(spec: ModelSpec, problems: list[Problem]) -> None:
    """Each adapter named once, and not as the base model."""
    seen: dict[str, int] = {}
    for index, adapter in enumerate(spec.adapters):
        if adapter.name == spec.name or adapter.name in seen:
            other = "the base model" if adapter.name == spec.name else f"adapters[{seen[adapter.name]}]"
            problems.append(
                Problem(f"adapters[{index}].name", adapter.name, f"a name not used by {other}", "rename the adapter")
            )
        seen.setdefault(adapter.name, index)


def _add_eagle_problems(spec: ModelSpec, problems: list[Problem]) -> None:
    """EAGLE needs an architecture SageMaker optimizes, and a ``front_door`` dataset needs sessions."""
    if spec.eagle is not None:
        if spec.architecture is None:
            problems.append(
                Problem(
                    "architecture",
                    None,
                    "the model's architecture when eagle is set: " + ", ".join(EAGLE_ARCHITECTURES),
                    "copy 'architectures' from the model's config.json",
                )
            )
        elif spec.architecture not in EAGLE_ARCHITECTURES:
            problems.append(
                Problem(
                    "architecture",
                    spec.architecture,
                    "for EAGLE: " + ", ".join(EAGLE_ARCHITECTURES),
                    "remove eagle for this model; SageMaker cannot optimize other architectures",
                )
            )
        if spec.eagle.dataset.source == "front_door" and spec.sessions is None:
            problems.append(
                Problem(
                    "eagle.dataset.source",
                    "front_door",
                    "front_door only on a model with sessions (its session front door writes the turns)",
                    "add `sessions: {}` to this model, or use source capture",
                )
            )


def _add_instance_requirement_problems(spec: ModelSpec, problems: list[Problem]) -> None:
    """Each instance type once in ``instance_requirements``; with LMI, the model's own accelerator count on each."""
    seen_types: set[str] = set()
    for index, requirement in enumerate(spec.instance_requirements):
        if requirement.instance_type in seen_types:
            problems.append(
                Problem(
                    f"instance_requirements[{index}].instance_type",
                    requirement.instance_type,
                    "each instance type once",
                    "merge the two entries",
                )
            )
        seen_types.add(requirement.instance_type)
        if spec.is_lmi and requirement.accelerators is not None and requirement.accelerators != spec.accelerators:
            problems.append(
                Problem(
                    f"instance_requirements[{index}].accelerators",
                    requirement.accelerators,
                    f"the model's accelerators ({spec.accelerators}) for the LMI container: its tensor parallel "
                    "degree (OPTION_TENSOR_PARALLEL_DEGREE) is one value for every instance type",
                    "leave accelerators out here, or serve the model on a separate endpoint",
                )
            )


def _add_environment_problems(spec: ModelSpec, problems: list[Problem]) -> None:
    """Container variable names, value lengths and count within SageMaker's limits."""
    for key, setting in spec.environment.items():
        if not ENVIRONMENT_KEY.match(key):
            problems.append(
                Problem(f"environment.{key}", key, "a variable name: letters, digits, '_'", "rename the variable")
            )
        if len(setting) > 1024:  # botocore's EnvironmentValue: max 1024
            problems.append(
                Problem(
                    f"environment.{key}",
                    setting,
                    "a value of at most 1024 characters",
                    "shorten the value, or pass it in a file under model_data_s3_uri",
                )
            )
    if len(spec.environment) > 100:  # botocore's EnvironmentMap; ModelComponent checks it with the features' too
        problems.append(
            Problem(
                "environment",
                f"{len(spec.environment)} variables",
                "at most 100 variables (SageMaker's limit; the model's features add more)",
                "remove some variables",
            )
        )


def _add_network_isolation_problems(spec: ModelSpec, problems: list[Problem]) -> None:
    """With network isolation on, no variable that makes the container download the model."""
    if spec.network_isolation:
        for key in _DOWNLOADING_VARIABLES:
            value = spec.environment.get(key)
            if value is not None and not value.startswith("/"):
                problems.append(
                    Problem(
                        f"environment.{key}",
                        value,
                        "a local path (e.g. /opt/ml/model) while network_isolation is on: the container has no network",
                        "serve the weights from model_data_s3_uri, or set network_isolation: false for this model",
                    )
                )


def _environment_override_problems(spec: ModelSpec) -> list[Problem]:
    """``environment`` entries that the model's features set to another value (LMI images only): the stack
    would refuse them while it builds, so they are found here with everything else."""
    if not spec.is_lmi or not spec.environment:
        return []
    needs: dict[str, tuple[str, str]] = {}
    if spec.lora is not None:
        needs.update({k: (v, "lora") for k, v in lora_environment(spec.lora).items()})
    if spec.sessions is not None:
        needs.update({k: (v, "sessions") for k, v in spec.sessions.container_environment().items()})
    if (
        (spec.tools is not None or spec.reasoning is not None)
        and not spec.is_jumpstart
        and not tool_calling_problems(spec)
    ):
        needs.update({k: (v, "tools" if "TOOL" in k else "reasoning") for k, v in tool_environment(spec).items()})
    problems = [
        Problem(
            f"environment.{name}",
            spec.environment[name],
            f"{value!r}, which the {feature} settings give",
            f"remove {name} from environment and set it through {feature}",
        )
        for name, (value, feature) in needs.items()
        if name in spec.environment and spec.environment[name] != value
    ]
    if spec.eagle is not None and "OPTION_SPECULATIVE_CONFIG" in spec.environment:
        problems.append(
            Problem(
                "environment.OPTION_SPECULATIVE_CONFIG",
                spec.environment["OPTION_SPECULATIVE_CONFIG"],
                "nothing with eagle: the promoted draft head sets it",
                "remove OPTION_SPECULATIVE_CONFIG; eagle.num_speculative_tokens sets the draft length",
            )
        )
    return problems
