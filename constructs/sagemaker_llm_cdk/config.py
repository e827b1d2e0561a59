"""The deployment config file: its model (``AppConfig``), loader and JSON Schema.

A config is YAML. ``load_config`` returns a validated ``AppConfig`` or raises one
``ConfigurationError`` listing every problem (field path, value, what is allowed, fix).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from .capacity_plan import CapacityPlanSpec, spec_binding_problems
from .errors import MISSING, ConfigurationError, Problem
from .monitoring import MonitoringSettings
from .settings import EndpointOptions, ModelSpec, Settings, VpcPlacement, name_problem
from .validation import validated

_STACK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")


class DeploymentTarget(Settings):
    """Where the stacks deploy. Default: environment-agnostic (account and region from the CLI)."""

    account: Annotated[str | None, Field(pattern=r"^\d{12}$", description="12-digit AWS account id.")] = None
    region: Annotated[str | None, Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$", description="AWS region, e.g. us-east-1.")] = None


class ChecksSettings(Settings):
    """Synth-time checks. AwsSolutions (cdk-nag) always runs and fails the synth on an unacknowledged finding."""

    nag_warning_packs: Annotated[tuple[Literal["nist-800-53-r5", "serverless"], ...], Field(description=(
        "Extra cdk-nag packs reported as warnings only. Default: none."))] = ()


class EndpointSpec(EndpointOptions):
    """One endpoint in the config: its options plus the models it hosts."""

    name: Annotated[str, Field(description=(
        "Logical name: the construct id and, unless endpoint_name is set, part of generated names."))]
    endpoint_name: Annotated[str | None, Field(description=(
        "Physical endpoint name. Default: derived from the stack and endpoint names."))] = None
    vpc: Annotated[VpcPlacement | None, Field(description="Run instances in these subnets. Default: no VPC.")] = None
    models: Annotated[tuple[ModelSpec, ...], Field(min_length=1, max_length=50, description="Models hosted as inference components.")]
    capacity_plan: Annotated[str | None, Field(description=(
        "Name of a plan in capacity_plans that this endpoint runs on (capacity-reservations-only). "
        "Default: on-demand capacity."))] = None

    def _rules(self) -> list[Problem]:
        problems = super()._rules()
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,62}", self.name):
            problems.append(Problem("name", self.name, "1-63 letters and digits, starting with a letter",
                                    "remove spaces, hyphens and other characters"))
        if self.endpoint_name is not None:
            problem = name_problem("endpoint_name", self.endpoint_name, "EndpointName")
            if problem:
                problems.append(problem)
        return problems


class AppConfig(Settings):
    """A deployment of this team's app: one stack holding the endpoints below."""

    stack_name: Annotated[str, Field(description="CloudFormation stack name. Default: SageMakerLlm.")] = "SageMakerLlm"
    target: Annotated[DeploymentTarget, Field(description="Account and region. Default: from the CLI.")] = DeploymentTarget()
    tags: Annotated[dict[str, str], Field(description="Tags on every resource. Default: none.")] = {}
    endpoints: Annotated[tuple[EndpointSpec, ...], Field(min_length=1, max_length=20)]
    checks: Annotated[ChecksSettings, Field(description="Synth-time checks. Default: AwsSolutions only.")] = ChecksSettings()
    monitoring: Annotated[MonitoringSettings, Field(description=(
        "Dashboards, alarms (one KMS-encrypted topic) and safe rollouts. Default: on, with the defaults listed."))] = MonitoringSettings()
    capacity_plans: Annotated[tuple[CapacityPlanSpec, ...], Field(max_length=20, description=(
        "Reserved GPU capacity: plans to buy once (price cap and purchase_acknowledged required) or existing "
        "plans, each bound to at most one endpoint by its capacity_plan. Default: none."))] = ()

    def _rules(self) -> list[Problem]:
        problems = []
        if not _STACK_NAME.match(self.stack_name):
            problems.append(Problem("stack_name", self.stack_name, "1-128 letters, digits and hyphens, starting with a letter",
                                    "rename the stack"))
        problems.extend(duplicate_name_problems([e.model_dump() for e in self.endpoints]))
        problems.extend(self._capacity_plan_problems())
        return problems

    def _capacity_plan_problems(self) -> list[Problem]:
        """Each endpoint's capacity_plan names a declared plan, one endpoint per plan, and the endpoint fits it."""
        problems: list[Problem] = []
        plans: dict[str, int] = {}
        for p_index, plan in enumerate(self.capacity_plans):
            if plan.plan_name in plans:
                problems.append(Problem(f"capacity_plans[{p_index}].name", plan.plan_name,
                                        f"a name not used by capacity_plans[{plans[plan.plan_name]}]",
                                        "declare each plan once"))
            plans.setdefault(plan.plan_name, p_index)
        bound: dict[str, int] = {}
        for e_index, endpoint in enumerate(self.endpoints):
            if endpoint.capacity_plan is None:
                continue
            path = f"endpoints[{e_index}]"
            if endpoint.capacity_plan not in plans:
                problems.append(Problem(f"{path}.capacity_plan", endpoint.capacity_plan,
                                        "the name of a plan in capacity_plans: " + (", ".join(plans) or "none declared"),
                                        "declare the plan under capacity_plans or correct the name"))
                continue
            if endpoint.capacity_plan in bound:
                problems.append(Problem(f"{path}.capacity_plan", endpoint.capacity_plan,
                                        f"a plan no other endpoint uses (endpoints[{bound[endpoint.capacity_plan]}] "
                                        "runs on it)", "declare a separate plan for each endpoint"))
            bound.setdefault(endpoint.capacity_plan, e_index)
            plan = self.capacity_plans[plans[endpoint.capacity_plan]]
            problems.extend(p.under(path) for p in spec_binding_problems(plan, endpoint))
        return problems


def duplicate_name_problems(endpoints: Any) -> list[Problem]:
    """Endpoint names used twice, and model or adapter names used twice anywhere.

    Works on the raw config too, so duplicates are reported with every other problem even
    when some endpoint is not valid yet. Inference component names (models and adapters)
    are unique in an account and region, hence across endpoints.
    """
    problems: list[Problem] = []
    if not isinstance(endpoints, (list, tuple)):
        return problems
    endpoint_seen: dict[str, int] = {}
    component_seen: dict[str, str] = {}

    def claim(name: Any, path: str) -> None:
        if not isinstance(name, str):
            return
        other = component_seen.get(name)
        if other is not None:
            problems.append(Problem(path, name, f"a name not used by {other} (inference component names are unique "
                                    "in an account and region)", "rename one of the two"))
        else:
            component_seen[name] = path

    for e_index, endpoint in enumerate(endpoints):
        if not isinstance(endpoint, dict):
            continue
        name = endpoint.get("name")
        if isinstance(name, str):
            if name in endpoint_seen:
                problems.append(Problem(f"endpoints[{e_index}].name", name,
                                        f"a name not used by endpoints[{endpoint_seen[name]}]", "rename one of the two"))
            endpoint_seen.setdefault(name, e_index)
        models = endpoint.get("models")
        for m_index, model in enumerate(models if isinstance(models, (list, tuple)) else []):
            if not isinstance(model, dict):
                continue
            claim(model.get("name"), f"endpoints[{e_index}].models[{m_index}].name")
            adapters = model.get("adapters")
            for a_index, adapter in enumerate(adapters if isinstance(adapters, (list, tuple)) else []):
                if isinstance(adapter, dict):
                    claim(adapter.get("name"), f"endpoints[{e_index}].models[{m_index}].adapters[{a_index}].name")
    return problems


def parse_config(data: Any, *, source: str = "config") -> AppConfig:
    if not isinstance(data, dict):
        raise ConfigurationError(
            [Problem("", data if data is not None else MISSING, "a mapping with at least 'endpoints'",
                     "start from config/default.yaml")],
            source=source,
        )
    try:
        return validated(AppConfig, data, where=source)
    except ConfigurationError as error:
        known = {p.line() for p in error.problems}
        extra = [p for p in duplicate_name_problems(data.get("endpoints")) if p.line() not in known]
        if not extra:
            raise
        raise ConfigurationError([*error.problems, *extra], source=source) from None


def load_config(path: str | Path) -> AppConfig:
    """Read and validate a YAML config file, laid over the files it ``extends`` (see ``config_layers``)."""
    from .config_layers import load_layers

    layers = load_layers(path)
    return parse_config(layers.data, source=layers.source)


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
    from . import service_model

    schema = AppConfig.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "sagemaker-llm-cdk deployment config" + (" layer (extends or is extended)" if layer else "")
    schema["properties"]["extends"] = {
        "description": ("Config file(s) this one is laid over, relative to this file (mappings merge; endpoints, "
                        "models, adapters and capacity_plans merge by name; other lists replace)."),
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
                "const": True, "description": "Remove the base's item of this name (give only name and $delete)."}
            definitions[definition]["properties"]["$replace"] = {
                "const": True, "description": "Replace the base's item of this name whole instead of merging into it."}
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
