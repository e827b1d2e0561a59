"""The boto3 the distributions ask for has every SageMaker API the library and its clients call.

botocore 1.44.0-1.44.3 have no inference routers (``CreateInferenceRouter``, ``RoutingTargetList``) and no
``sagemaker-inference-router-runtime`` service, so a floor of 1.44 let pip pick a botocore with which loading any
config fails at import (``KeyError: 'RoutingTargetList'``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import botocore.loaders
import pytest
from packaging.requirements import Requirement
from packaging.version import Version
from sagemaker_llm_cdk.core import service_model

ROOT = Path(__file__).resolve().parents[2]


def _floor(pyproject: Path, package: str) -> Version:
    (requirement,) = [
        Requirement(r)
        for r in tomllib.loads(pyproject.read_text())["project"]["dependencies"]
        if Requirement(r).name == package
    ]
    (low,) = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
    return low


@pytest.mark.parametrize("pyproject", ["pyproject.toml", "clients/pyproject.toml"])
def test_the_boto3_floor_has_inference_routers(pyproject):
    assert _floor(ROOT / pyproject, "boto3") >= Version(service_model.MIN_BOTOCORE), pyproject


def test_the_installed_botocore_is_at_the_floor_or_newer_and_has_what_the_floor_promises():
    assert Version(botocore.__version__) >= Version(service_model.MIN_BOTOCORE)
    loader = botocore.loaders.create_loader()
    operations = loader.load_service_model("sagemaker", "service-2")["operations"]
    assert {
        "CreateInferenceRouter",
        "DescribeInferenceRouter",
        "UpdateInferenceRouter",
        "DeleteInferenceRouter",
    } <= set(operations)
    assert "sagemaker-inference-router-runtime" in loader.list_available_services("service-2")


def test_a_botocore_without_routers_is_named_with_the_fix(monkeypatch):
    monkeypatch.setattr(service_model, "_shapes", lambda service="sagemaker": {})
    with pytest.raises(
        ImportError,
        match=r"botocore \S+ has no sagemaker shape RoutingTargetList: sagemaker-llm-cdk "
        r"needs botocore 1\.44\.4 or newer \(pip install 'boto3>=1\.44\.4'\)",
    ):
        service_model.shape("RoutingTargetList")
