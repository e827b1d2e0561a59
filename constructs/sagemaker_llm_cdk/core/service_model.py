"""Facts read from botocore's SageMaker service model (instance types, AMI versions, name patterns).

Reading them from botocore, instead of copying lists by hand, keeps validation in step with
the SDK the project pins: a new instance type is accepted as soon as botocore knows it.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import botocore.loaders


@functools.cache
def _shapes(service: str = "sagemaker") -> dict[str, Any]:
    """The ``shapes`` of botocore's model of ``service``, read by its data loader: a synth needs only these facts,
    not a botocore session (whose import pulls in the client, waiter and docs machinery: about 0.14 s per synth)."""
    model: dict[str, Any] = botocore.loaders.create_loader().load_service_model(service, "service-2")
    return model["shapes"]  # type: ignore[no-any-return]


MIN_BOTOCORE = "1.44.4"
"""The first botocore whose SageMaker model has inference routers (``CreateInferenceRouter``, ``RoutingTargetList``)
and the ``sagemaker-inference-router-runtime`` service; ``pyproject.toml`` asks for boto3 at least this version."""


def shape(name: str, service: str = "sagemaker") -> dict[str, Any]:
    """One shape of ``service``'s model; a botocore older than the library needs is named with the fix, instead of
    a bare ``KeyError`` at import."""
    shapes = _shapes(service)
    if name not in shapes:
        import botocore

        raise ImportError(
            f"botocore {botocore.__version__} has no {service} shape {name}: sagemaker-llm-cdk needs "
            f"botocore {MIN_BOTOCORE} or newer (pip install 'boto3>={MIN_BOTOCORE}')"
        )
    return shapes[name]  # type: ignore[no-any-return]


def limits(shape_name: str, service: str = "sagemaker") -> tuple[float | None, float | None]:
    """(min, max) of a number shape of ``service`` (None where botocore's model sets no bound)."""
    shape = _shapes(service)[shape_name]
    if shape.get("type") not in ("integer", "long", "float", "double"):
        raise ValueError(f"{service} shape {shape_name} is a {shape.get('type')}, not a number")
    return shape.get("min"), shape.get("max")


def aws_min(shape_name: str, service: str = "sagemaker") -> Any:
    """The smallest value AWS accepts for a number shape (a settings field's ``ge``)."""
    low = limits(shape_name, service)[0]
    if low is None:
        raise ValueError(f"{service} shape {shape_name} has no min")
    return low


def aws_max(shape_name: str, service: str = "sagemaker") -> Any:
    """The largest value AWS accepts for a number shape (a settings field's ``le``)."""
    high = limits(shape_name, service)[1]
    if high is None:
        raise ValueError(f"{service} shape {shape_name} has no max")
    return high


@functools.cache
def enum(shape_name: str) -> frozenset[str]:
    """The allowed values of one of SageMaker's enum shapes."""
    return frozenset(_shapes()[shape_name]["enum"])


def endpoint_instance_types() -> frozenset[str]:
    return enum("ProductionVariantInstanceType")


def capacity_plan_instance_types() -> frozenset[str]:
    return enum("ReservedCapacityInstanceType")


def optimization_instance_types() -> frozenset[str]:
    return enum("OptimizationJobDeploymentInstanceType")


def inference_ami_versions() -> frozenset[str]:
    return enum("ProductionVariantInferenceAmiVersion")


@functools.cache
def name_rule(shape_name: str) -> tuple[int, re.Pattern[str]]:
    """(max length, compiled full-match pattern) of a SageMaker name shape."""
    shape = _shapes()[shape_name]
    return int(shape["max"]), re.compile(shape["pattern"])


def close_matches(value: str, allowed: frozenset[str], n: int = 3) -> list[str]:
    import difflib

    return difflib.get_close_matches(value, sorted(allowed), n=n, cutoff=0.6)
