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
def _shapes() -> dict[str, Any]:
    """The ``shapes`` of botocore's SageMaker model, read by its data loader: a synth needs only these facts, not
    a botocore session (whose import pulls in the client, waiter and docs machinery: about 0.14 s per synth)."""
    model: dict[str, Any] = botocore.loaders.create_loader().load_service_model("sagemaker", "service-2")
    return model["shapes"]  # type: ignore[no-any-return]


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
