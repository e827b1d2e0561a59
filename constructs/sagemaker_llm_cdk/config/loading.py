"""The deployment config file: its loader (layers, JumpStart lock, every rule in one round) and JSON Schemas.

A config is YAML. ``load_config`` returns a validated ``AppConfig`` or raises one
``ConfigurationError`` listing every problem (field path, value, what is allowed, fix).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..core.errors import MISSING, ConfigurationError, Problem
from ..core.settings import outside_rule, validated
from ..operations.cost_model import (
    BUDGET_REQUIRED_ABOVE_ACCELERATOR_HOURS,
    BUDGET_REQUIRED_ABOVE_USD,
    HOURS_PER_30_DAYS,
    HOURS_PER_LONGEST_MONTH,
    CostLine,
    accelerator_hours,
    ceiling_drivers,
    config_cost_model,
    totals,
    usd,
)
from ..settings.config import AppConfig, duplicate_name_problems, raw_plan_reference_problems


def parse_config(data: Any, *, source: str = "config") -> AppConfig:
    if not isinstance(data, dict):
        raise ConfigurationError(
            [
                Problem(
                    "",
                    data if data is not None else MISSING,
                    "a mapping with at least 'endpoints'",
                    "start from config/default.yaml",
                )
            ],
            source=source,
        )
    try:
        config = validated(AppConfig, data, where=source)
    except ConfigurationError as error:
        known = {p.line() for p in error.problems}
        extra = [
            p
            for p in [
                *duplicate_name_problems(data.get("endpoints")),
                *raw_plan_reference_problems(data),
                *outside_rule(AppConfig, data, budget_problems),
            ]
            if p.line() not in known
        ]
        if not extra:
            raise
        raise ConfigurationError([*error.problems, *extra], source=source) from None
    problems = budget_problems(config)
    if problems:
        raise ConfigurationError(problems, source=source)
    return config


def budget_problems(config: AppConfig) -> list[Problem]:
    """The ceiling of the longest month (``operations.cost_model``, 744 hours, the shipped price table) within
    ``budget``, and a budget declared when the known ceiling is above ``BUDGET_REQUIRED_ABOVE_USD`` or the
    on-demand accelerator-instance-hours are above ``BUDGET_REQUIRED_ABOVE_ACCELERATOR_HOURS`` per 30 days
    (whatever the prices). One problem, in config terms. Left to the model's own rule when ``budget.tag`` is not
    one of ``tags``."""

    if config.budget is not None and config.budget.tag is not None and config.budget.tag not in config.tags:
        return []
    lines = config_cost_model(config, period_hours=HOURS_PER_LONGEST_MONTH)
    total = totals(lines)
    drivers = ", ".join(
        f"{line.subject}: {line.what} at most {usd(line.ceiling_usd)}" for line in ceiling_drivers(lines)
    )
    unknown = (
        f"; not counted (price unknown): {', '.join(line.subject for line in total.unknown_ceiling)}"
        if total.unknown_ceiling
        else ""
    )
    where = (
        "in any region (the config names no region: the highest price in the table)"
        if config.target.region is None
        else f"in {config.target.region}"
    )
    month = f"per month of {HOURS_PER_LONGEST_MONTH} hours (the longest month)"
    needed = total.ceiling_usd.to_integral_value(rounding="ROUND_CEILING")
    if config.budget is None:
        hours, held = accelerator_hours(config_cost_model(config))
        reasons = []
        if hours > BUDGET_REQUIRED_ABOVE_ACCELERATOR_HOURS:
            reasons.append(
                f"the on-demand ceiling holds {hours:f} accelerator-instance-hours per {HOURS_PER_30_DAYS} hours ("
                + ", ".join(_hours_driver(line) for line in held)
                + f"), above {BUDGET_REQUIRED_ABOVE_ACCELERATOR_HOURS:,}: such a config needs a budget whatever "
                "the prices (a price may be unknown or change)"
            )
        if total.ceiling_usd > BUDGET_REQUIRED_ABOVE_USD:
            reasons.append(
                f"the monthly ceiling is {usd(total.ceiling_usd)} {month} {where}, above "
                f"{usd(BUDGET_REQUIRED_ABOVE_USD)} (from {drivers}){unknown}"
            )
        if not reasons:
            return []
        at_least = f" with N at least {needed}" if needed else " with N the most you accept a month"
        return [
            Problem(
                "budget",
                None,
                "a budget: " + "; and ".join(reasons),
                "declare budget: {max_usd_per_month: N, email: you@example.com}"
                + at_least
                + ", or lower max_instances / the EAGLE schedule",
            )
        ]
    limit = config.budget.max_usd_per_month
    if total.ceiling_usd > limit:
        return [
            Problem(
                "budget.max_usd_per_month",
                limit,
                f"at least the monthly ceiling, {usd(total.ceiling_usd)} {month} {where} (from {drivers}){unknown}",
                f"raise budget.max_usd_per_month to {needed}, or lower the ceiling: "
                "max_instances of the endpoints above, or the EAGLE schedule / max_runtime_hours",
            )
        ]
    return []


def _hours_driver(line: CostLine) -> str:
    """``endpoints[0].scaling.max_instances: 1440 h of ml.p5e.48xlarge``: the field to lower, and its hours."""
    field = f"{line.subject}.scaling.max_instances" if line.kind == "endpoint" else line.subject
    return f"{field}: {line.ceiling_hours:f} h of {line.instance_type}"


def load_config(
    path: str | Path,
    *,
    region: str | None = None,
    checks: Callable[[AppConfig], list[Problem]] | None = None,
    consent: Mapping[str, Iterable[str]] | None = None,
) -> AppConfig:
    """Read and validate a YAML config file, laid over the files it ``extends`` (see ``config.layers``).

    Raises one ``ConfigurationError`` with every problem: keys given twice and misused ``$delete``/``$replace``
    (from the layers), the JumpStart lock's and every config rule, each line naming the field's path in the
    merged config and where it is written (``where: config/dev.yaml line 23``).

    :param region: where the config deploys when it sets no ``target.region`` (a pipeline stage's region): the
        JumpStart lock is checked for it. Default: the config's own.
    :param checks: the caller's own rules on the validated config (a pipeline stage's account and region),
        reported in the same round. Default: none.
    :param consent: the deploy command's ``-c purchase`` / ``-c extend`` names by key: a name that matches no plan
        of the config is reported in the same round, even when the config has other problems. Default: none."""
    from .layers import collect_layers

    layers = collect_layers(path)
    problems = list(layers.problems)
    config: AppConfig | None = None
    try:
        config = parse_config(layers.data, source=layers.source)
    except ConfigurationError as error:
        problems.extend(error.problems)
    problems.extend(lock_problems(layers.data, Path(path).parent, region=region))
    command: list[Problem] = manifest_problems(layers.data, Path(path).parent)  # located in their own files
    # from the deploy command, not the files: no file line to point at
    if consent:
        from ..settings.capacity import raw_consent_problems

        command += raw_consent_problems(layers.data, consent)
    if config is not None and checks is not None:
        problems.extend(checks(config))
    if problems or command:
        unique: dict[str, Problem] = {}
        for problem in problems:  # a rule seen from two sides (raw config and model) is one problem
            unique.setdefault(problem.line(), problem)
        raise ConfigurationError([layers.locate(p) for p in unique.values()] + command, source=layers.source)
    assert config is not None
    return config


_CONSTRUCT_VIEWS = ("component.spec.", "spec.", "settings.")
"""How a construct names the fields of the spec it was built from (``component.spec.architecture``)."""


def _first_field(path: str) -> str:
    match = re.match(r"[^.\[]+", path)
    return match.group(0) if match else ""


@contextlib.contextmanager
def config_item(path: str, spec: BaseModel) -> Iterator[None]:
    """Build constructs from ``spec``, the config's item at ``path`` (``endpoints[0].models[1]``): a
    ``ConfigurationError`` they raise comes out in config terms. A problem with one of ``spec``'s fields
    (``environment``, ``component.spec.architecture``) is placed under ``path``; one that names the config
    already (``endpoints[...]``) or something else is kept. An inner item's error passes outer ones as it is."""
    try:
        yield
    except ConfigurationError as error:
        if error.config_item:
            raise
        fields = type(spec).model_fields
        problems = []
        for problem in error.problems:
            field_path = problem.path
            for view in _CONSTRUCT_VIEWS:
                if field_path.startswith(view) and _first_field(field_path[len(view) :]) in fields:
                    field_path = field_path[len(view) :]
                    break
            if _first_field(problem.path) in AppConfig.model_fields or _first_field(field_path) not in fields:
                problems.append(problem)
            else:
                problems.append(
                    Problem(field_path, problem.value, problem.allowed, problem.fix, problem.where).under(path)
                )
        placed = ConfigurationError(problems, source=error.source)
        placed.config_item = path
        raise placed from None


def locate_problems(path: str | Path, problems: Iterable[Problem]) -> list[Problem]:
    """``problems`` with the file and line of each field that is a path in the config at ``path`` (merged over
    the files it extends), as ``load_config`` reports its own; other problems as they are."""
    from .layers import collect_layers

    layers = collect_layers(path)
    return [layers.locate(p) if _first_field(p.path) in AppConfig.model_fields else p for p in problems]


def manifest_problems(data: Any, config_dir: Path) -> list[Problem]:
    """Problems of every local ``adapters_manifest`` a model names (a file next to the config), in the same round
    as the config's own: each named by the model's config path and the manifest's own path, with the manifest
    file as where. An ``s3://`` manifest is read only at synth (it needs credentials)."""
    from ..adapters.manifest import load_adapter_manifest

    problems: list[Problem] = []
    endpoints = data.get("endpoints") if isinstance(data, dict) else None
    for e_index, endpoint in enumerate(endpoints if isinstance(endpoints, list) else []):
        models = endpoint.get("models") if isinstance(endpoint, dict) else None
        for m_index, model in enumerate(models if isinstance(models, list) else []):
            location = model.get("adapters_manifest") if isinstance(model, dict) else None
            if not isinstance(location, str) or not location or location.startswith("s3://"):
                continue
            try:
                load_adapter_manifest(location, base_dir=config_dir)
            except ConfigurationError as error:
                problems.extend(
                    Problem(
                        f"endpoints[{e_index}].models[{m_index}].{p.path}",
                        p.value,
                        p.allowed,
                        p.fix,
                        where=p.where or error.source,
                    )
                    for p in error.problems
                )
    return problems


def lock_problems(data: Any, config_dir: Path, *, region: str | None = None) -> list[Problem]:
    """The JumpStart lock's problems with a raw config's ``source: jumpstart`` models (``jumpstart_problems``), the
    lock found from ``config_dir`` as the stack finds it; ``region``: where it deploys when the config sets no
    ``target.region`` (a pipeline stage's). The lock is read only when a model comes from it."""
    if not _has_jumpstart_model(data):
        return []
    from ..hosting.jumpstart import JumpStartLock, find_lock

    target = data.get("target")
    if region is not None and not (isinstance(target, dict) and target.get("region")):
        data = {**data, "target": {**(target if isinstance(target, dict) else {}), "region": region}}
    return jumpstart_problems(data, JumpStartLock.load(find_lock(config_dir)))


def _has_jumpstart_model(data: Any) -> bool:
    endpoints = data.get("endpoints") if isinstance(data, dict) else None
    for endpoint in endpoints if isinstance(endpoints, list) else []:
        models = endpoint.get("models") if isinstance(endpoint, dict) else None
        if any(
            isinstance(m, dict) and m.get("source") == "jumpstart" for m in (models if isinstance(models, list) else [])
        ):
            return True
    return False


def jumpstart_problems(data: Any, lock: Any) -> list[Problem]:
    """``source: jumpstart`` models of a raw config that the lock does not hold in ``target.region``, or gated
    ones without ``accept_eula: true`` (checked from the raw config, so they come with every other problem)."""
    from ..core.instances import accelerators_of
    from ..hosting.jumpstart import spec_problems

    if not isinstance(data, dict) or not isinstance(data.get("endpoints"), list):
        return []
    target = data.get("target")
    region = target.get("region") if isinstance(target, dict) and isinstance(target.get("region"), str) else None
    problems: list[Problem] = []
    for e_index, endpoint in enumerate(data["endpoints"]):
        models = endpoint.get("models") if isinstance(endpoint, dict) else None
        for m_index, model in enumerate(models if isinstance(models, list) else []):
            if not isinstance(model, dict) or model.get("source") != "jumpstart":
                continue
            model_id, version = model.get("model_id"), model.get("version")
            if not (isinstance(model_id, str) and isinstance(version, (str, int, float))):
                continue
            path = f"endpoints[{e_index}].models[{m_index}]"
            found = spec_problems(model_id, str(version), model.get("accept_eula") is True, lock, region, path=path)
            problems.extend(found)
            locked = lock.find(model_id, str(version), region) if region and not found else None
            from ..hosting.pretrained_head import config_problems

            problems.extend(config_problems(model, locked, path))  # the pre-trained head's settings
            gpus = (
                accelerators_of(endpoint.get("instance_type"))
                if isinstance(endpoint.get("instance_type"), str)
                else None
            )
            if (
                locked is not None
                and locked.accelerators is not None
                and "accelerators" not in model
                and gpus is not None
                and locked.accelerators > gpus
            ):
                problems.append(
                    Problem(
                        f"{path}.accelerators",
                        f"{locked.accelerators} (from {lock.path})",
                        f"at most {gpus}, the accelerators of one {endpoint['instance_type']}",
                        "use a larger instance type (JumpStart lists: "
                        + (", ".join(locked.supported_instance_types) or "none")
                        + ")",
                    )
                )
    return problems


_INSTANCE_TYPE_ENUMS: dict[tuple[str, str], str] = {
    ("EndpointSpec", "instance_type"): "ProductionVariantInstanceType",
    ("CapacityPlanSpec", "instance_type"): "ReservedCapacityInstanceType",
    ("EagleSettings", "job_instance_type"): "OptimizationJobDeploymentInstanceType",
}
"""(schema definition, property) -> botocore's SageMaker enum shape whose values the property takes."""
_NAMED_ITEMS = ("EndpointSpec", "ModelSpec", "AdapterSpec", "CapacityPlanSpec")
"""Definitions whose items merge by name in layered configs (``config_layers.NAMED_LISTS``)."""


def json_schema(*, layer: bool = False) -> dict[str, Any]:
    """JSON Schema of the config file, for editors (``config/schema.json``).

    Instance types are enums of botocore's SageMaker model (endpoint, reserved-capacity and optimization-job
    types), so editors complete them. With ``layer``, the schema of a file that other configs extend or that
    ``extends`` others (``config/schema.layer.json``): the same properties, none required (a layer says only what
    differs), and ``$delete``/``$replace`` allowed in the items that merge by name.
    """
    from ..core import service_model

    schema = AppConfig.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "sagemaker-llm-cdk deployment config" + (" layer (extends or is extended)" if layer else "")
    schema["properties"]["extends"] = {
        "description": (
            "Config file(s) this one is laid over, relative to this file (mappings merge; endpoints, "
            "models, adapters and capacity_plans merge by name; other lists replace)."
        ),
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
    }
    definitions = schema.get("$defs", {})
    for (definition, prop), shape in _INSTANCE_TYPE_ENUMS.items():
        target = definitions[definition]["properties"][prop]
        values = sorted(service_model.enum(shape))
        string = next((b for b in target.get("anyOf", []) if b.get("type") == "string"), target)
        string["enum"] = values
    if layer:
        _relax(schema)
        for definition in _NAMED_ITEMS:
            definitions[definition]["properties"]["$delete"] = {
                "const": True,
                "description": "Remove the base's item of this name (give only name and $delete).",
            }
            definitions[definition]["properties"]["$replace"] = {
                "const": True,
                "description": "Replace the base's item of this name whole instead of merging into it.",
            }
    return schema


def _relax(value: Any) -> None:
    """Drop every ``required`` (and ``minItems``) of a schema: a layer may leave anything to the file it extends."""
    if isinstance(value, dict):
        if isinstance(value.get("required"), list):
            del value["required"]
        if isinstance(value.get("minItems"), int):
            del value["minItems"]
        for inner in value.values():
            _relax(inner)
    elif isinstance(value, list):
        for inner in value:
            _relax(inner)


def write_json_schema(path: str | Path, *, layer: bool = False) -> None:
    Path(path).write_text(json.dumps(json_schema(layer=layer), indent=2, sort_keys=True) + "\n", encoding="utf-8")
