"""Names across a whole config: endpoint names used once, model and adapter (inference component) names used once
in an account and region, and each endpoint's ``capacity_plan`` naming a declared plan. The rules also run on the
raw config, so they are reported with every other problem while some endpoint is not valid yet.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import Problem


def plan_reference_problem(path: str, name: Any, declared: list[str]) -> Problem:
    return Problem(
        f"{path}.capacity_plan",
        name,
        "the name of a plan in capacity_plans: " + (", ".join(declared) or "none declared"),
        "declare the plan under capacity_plans or correct the name",
    )


def raw_plan_reference_problems(data: Any) -> list[Problem]:
    """Endpoints whose ``capacity_plan`` names no declared plan, from the raw config, so the reference is
    checked in the same round even when the endpoint or a plan has other problems."""
    plans = data.get("capacity_plans", []) if isinstance(data, dict) else []
    endpoints = data.get("endpoints") if isinstance(data, dict) else None
    if not isinstance(plans, list) or not isinstance(endpoints, list):
        return []
    names: list[str] = []
    for plan in plans:
        name = plan.get("name") if isinstance(plan, dict) else None
        arn = plan.get("existing_plan_arn") if isinstance(plan, dict) else None
        if not isinstance(name, str) and isinstance(arn, str) and "training-plan/" in arn:
            name = arn.rsplit("training-plan/", 1)[1]
        if not isinstance(name, str):
            return []  # a plan whose name is unknown: the reference cannot be judged
        names.append(name)
    return [
        plan_reference_problem(f"endpoints[{index}]", endpoint["capacity_plan"], names)
        for index, endpoint in enumerate(endpoints)
        if isinstance(endpoint, dict)
        and isinstance(endpoint.get("capacity_plan"), str)
        and endpoint["capacity_plan"] not in names
    ]


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
    component_seen_by_name: dict[str, str] = {}

    pinned_seen: dict[str, str] = {}

    def claim(name: Any, path: str, seen: dict[str, str] | None = None) -> None:
        if not isinstance(name, str):
            return
        component_seen = seen if seen is not None else component_seen_by_name
        other = component_seen.get(name)
        if other is not None:
            problems.append(
                Problem(
                    path,
                    name,
                    f"a name not used by {other} (inference component names are unique in an account and region)",
                    "rename one of the two",
                )
            )
        else:
            component_seen[name] = path

    for e_index, endpoint in enumerate(endpoints):
        if not isinstance(endpoint, dict):
            continue
        name = endpoint.get("name")
        if isinstance(name, str):
            if name in endpoint_seen:
                problems.append(
                    Problem(
                        f"endpoints[{e_index}].name",
                        name,
                        f"a name not used by endpoints[{endpoint_seen[name]}]",
                        "rename one of the two",
                    )
                )
            endpoint_seen.setdefault(name, e_index)
        models = endpoint.get("models")
        for m_index, model in enumerate(models if isinstance(models, (list, tuple)) else []):
            if not isinstance(model, dict):
                continue
            claim(model.get("name"), f"endpoints[{e_index}].models[{m_index}].name")
            claim(model.get("physical_name"), f"endpoints[{e_index}].models[{m_index}].physical_name", pinned_seen)
            adapters = model.get("adapters")
            for a_index, adapter in enumerate(adapters if isinstance(adapters, (list, tuple)) else []):
                if isinstance(adapter, dict):
                    claim(adapter.get("name"), f"endpoints[{e_index}].models[{m_index}].adapters[{a_index}].name")
                    claim(
                        adapter.get("physical_name"),
                        f"endpoints[{e_index}].models[{m_index}].adapters[{a_index}].physical_name",
                        pinned_seen,
                    )
    return problems
