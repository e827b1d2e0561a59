"""Whether one model fits the endpoint that hosts it: the AMI its image needs, instance requirements that name
the endpoint's pool types, EAGLE with instance pools, the accelerators and memory one instance of each type has,
and the EAGLE rules between a model and its endpoint (data capture on, an instance type optimization jobs take).
Pure settings, so a config is checked with every other problem in one round and the constructs check the same.
"""

from __future__ import annotations

from ..core.errors import Problem
from . import images
from .endpoint import EndpointOptions
from .model import ModelSpec


def requirements_on(spec: ModelSpec, instance_type: str) -> tuple[int, int, float | None]:
    """(accelerators, min memory MB, CPU cores) one copy of ``spec`` needs on ``instance_type``."""
    override = next((r for r in spec.instance_requirements if r.instance_type == instance_type), None)
    if override is None:
        return spec.accelerators, spec.min_memory_mb, spec.cpu_cores
    return (
        override.accelerators or spec.accelerators,
        override.min_memory_mb or spec.min_memory_mb,
        override.cpu_cores if override.cpu_cores is not None else spec.cpu_cores,
    )


def fit_problems(spec: ModelSpec, options: EndpointOptions) -> list[Problem]:
    """What keeps one model from fitting its endpoint: the image's AMI, ``instance_requirements`` naming a type the
    endpoint does not run, EAGLE with instance pools, and accelerators or memory one instance of each type lacks.

    Pure settings (no construct), so a config checks it with every other problem in one round and the construct
    checks the same. Paths are the model's own fields: a requirement that comes from ``instance_requirements[i]``
    is named there; the model's ``accelerators``/``min_memory_mb`` are named as themselves, with the pool type.
    """
    from ..core.instances import accelerators_of, memory_mb_of

    problems = list(images.ami_problems([("image", spec.image)], options.inference_ami_version))
    pool_types = set(options.instance_types) if options.instance_pools else set()
    for index, requirement in enumerate(spec.instance_requirements):
        if requirement.instance_type not in pool_types:
            problems.append(
                Problem(
                    f"instance_requirements[{index}].instance_type",
                    requirement.instance_type,
                    "one of the endpoint's instance_pools types: "
                    + (", ".join(sorted(pool_types)) or "the endpoint has no pools"),
                    "list a pool type, or remove the entry",
                )
            )
    if options.instance_pools and spec.eagle is not None:
        problems.append(
            Problem(
                "eagle",
                "set",
                "no EAGLE on an endpoint with instance_pools: the promoted head is "
                "served by swapping Specification.ModelName, which a per-instance-type specification "
                "list does not have; nor is it documented which pool type the optimization job should "
                "benchmark",
                "remove eagle, or serve this model on an endpoint with one instance type",
            )
        )
    for instance_type in options.instance_types:
        accelerators, memory, _ = requirements_on(spec, instance_type)
        at = next((i for i, r in enumerate(spec.instance_requirements) if r.instance_type == instance_type), None)
        override = spec.instance_requirements[at] if at is not None else None
        on = f" (on pool type {instance_type})" if options.instance_pools else ""
        for field, needed, held, what in (
            ("accelerators", accelerators, accelerators_of(instance_type), "accelerators"),
            ("min_memory_mb", memory, memory_mb_of(instance_type), "memory"),
        ):
            if held is None or needed <= held:
                continue
            own = override is not None and getattr(override, field) is not None
            unit = " in MB" if field == "min_memory_mb" else ""
            problems.append(
                Problem(
                    f"instance_requirements[{at}].{field}" if own else field,
                    needed,
                    f"at most {held}, the {what} of one {instance_type}{unit}{'' if own else on}",
                    "lower it or use a larger instance type"
                    if own
                    else f"lower {field} or use a larger instance type"
                    + (f" (or set instance_requirements for {instance_type})" if options.instance_pools else ""),
                )
            )
    return problems


def model_fit_problems(model: ModelSpec, endpoint: EndpointOptions) -> list[Problem]:
    """Rules between one model and its endpoint that the constructs also check while the stack is built
    (``ModelComponent``, ``EagleOptimization``), here in config terms and with every other problem.

    Paths are the model's fields (``accelerators``, ``eagle.dataset.source``).
    """
    from ..core import service_model
    from ..core.settings import instance_type_problem

    problems: list[Problem] = list(fit_problems(model, endpoint))
    eagle = model.eagle
    if eagle is not None:
        if eagle.dataset.source == "capture" and not endpoint.data_capture.enabled:
            problems.append(
                Problem(
                    "eagle.dataset.source",
                    "capture",
                    "s3 or builtin while the endpoint's data_capture is off (enabled: false)",
                    "turn data_capture on for the endpoint, or train on your own dataset "
                    "(source: s3, s3_uri: s3://bucket/prefix/)",
                )
            )
        if eagle.job_instance_type is None:
            problem = instance_type_problem(
                "eagle.job_instance_type",
                endpoint.instance_type,
                service_model.optimization_instance_types(),
                "optimization jobs",
            )
            if problem:
                problems.append(
                    Problem(
                        problem.path,
                        problem.value,
                        problem.allowed,
                        "the endpoint's instance type cannot run optimization jobs: set "
                        f"eagle.job_instance_type ({problem.fix})",
                    )
                )
    return problems
