"""sagemaker_llm_cdk: AWS CDK constructs for fast, cheap LLM endpoints on Amazon SageMaker AI.

The package imports lazily: ``from sagemaker_llm_cdk import LlmEndpoint`` loads the CDK modules that name
needs on first use, while ``from sagemaker_llm_cdk.client import SessionClient`` (the chat-app client of
the session front door) loads nothing but botocore, so an application container needs neither
``aws_cdk``, jsii nor Node.js to use it.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the real imports, for type checkers and editors
    from .adapter_manifest import load_adapter_manifest
    from .adapter_stack import AdapterStack, add_adapters
    from .capacity_guard import CapacityPlanGuard
    from .capacity_plan import CapacityPlan, CapacityPlanSpec, PlanExtension
    from .cost import cost_ceiling_table
    from .config import AppConfig, EndpointSpec, load_config, parse_config
    from .endpoint import VARIANT_NAME, EndpointReference, LlmEndpoint
    from .eagle import EagleOptimization
    from .eagle_benchmark import EagleBenchmark
    from .errors import ConfigurationError, Problem
    from .images import LMI_IMAGES, LmiImage
    from .jumpstart import JumpStartLock, JumpStartModel
    from .deployment_check import DeploymentCheck
    from .lora_adapter import LoraAdapter, add_adapter, apply_lora_settings
    from .model_component import ModelComponent
    from .monitoring import LlmMonitoring, MonitoringSettings, RolloutSettings
    from .preflight import Finding, run_preflight
    from .pricing import PriceList
    from .session_front_door import SessionFrontDoor
    from .speculative_decoding import PromotionParameter, SpeculativeDecoding
    from .turn_log import TurnLog
    from .settings import (
        AdapterSpec,
        CopyScaling,
        DataCapture,
        EagleBenchmarkSettings,
        EagleDataset,
        EagleSettings,
        EndpointOptions,
        InstancePool,
        InstanceRequirements,
        InstanceScaling,
        LoraSettings,
        ModelSpec,
        Placement,
        Routing,
        SessionSettings,
        VpcPlacement,
    )

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "AdapterSpec": "settings",
    "AdapterStack": "adapter_stack",
    "add_adapter": "lora_adapter",
    "add_adapters": "adapter_stack",
    "AppConfig": "config",
    "apply_lora_settings": "lora_adapter",
    "CapacityPlan": "capacity_plan",
    "CapacityPlanGuard": "capacity_guard",
    "CapacityPlanSpec": "capacity_plan",
    "ConfigurationError": "errors",
    "CopyScaling": "settings",
    "cost_ceiling_table": "cost",
    "DataCapture": "settings",
    "DeploymentCheck": "deployment_check",
    "EagleBenchmark": "eagle_benchmark",
    "EagleBenchmarkSettings": "settings",
    "EagleDataset": "settings",
    "EagleOptimization": "eagle",
    "EagleSettings": "settings",
    "EndpointOptions": "settings",
    "EndpointReference": "endpoint",
    "EndpointSpec": "config",
    "Finding": "preflight",
    "InstancePool": "settings",
    "InstanceRequirements": "settings",
    "InstanceScaling": "settings",
    "LlmEndpoint": "endpoint",
    "LlmMonitoring": "monitoring",
    "JumpStartLock": "jumpstart",
    "JumpStartModel": "jumpstart",
    "LMI_IMAGES": "images",
    "LmiImage": "images",
    "load_adapter_manifest": "adapter_manifest",
    "load_config": "config",
    "LoraAdapter": "lora_adapter",
    "LoraSettings": "settings",
    "ModelComponent": "model_component",
    "ModelSpec": "settings",
    "MonitoringSettings": "monitoring",
    "parse_config": "config",
    "Placement": "settings",
    "PlanExtension": "capacity_plan",
    "PriceList": "pricing",
    "Problem": "errors",
    "PromotionParameter": "speculative_decoding",
    "RolloutSettings": "monitoring",
    "Routing": "settings",
    "run_preflight": "preflight",
    "SessionFrontDoor": "session_front_door",
    "SessionSettings": "settings",
    "SpeculativeDecoding": "speculative_decoding",
    "TurnLog": "turn_log",
    "VARIANT_NAME": "endpoint",
    "VpcPlacement": "settings",
}
"""Public name -> the submodule that defines it (imported on first use)."""

__all__ = [
    "AdapterSpec",
    "AdapterStack",
    "AppConfig",
    "CapacityPlan",
    "CapacityPlanGuard",
    "CapacityPlanSpec",
    "ConfigurationError",
    "CopyScaling",
    "DataCapture",
    "DeploymentCheck",
    "EagleBenchmark",
    "EagleBenchmarkSettings",
    "EagleDataset",
    "EagleOptimization",
    "EagleSettings",
    "EndpointOptions",
    "EndpointReference",
    "EndpointSpec",
    "Finding",
    "InstancePool",
    "InstanceRequirements",
    "InstanceScaling",
    "JumpStartLock",
    "JumpStartModel",
    "LMI_IMAGES",
    "LlmEndpoint",
    "LlmMonitoring",
    "LmiImage",
    "LoraAdapter",
    "LoraSettings",
    "ModelComponent",
    "ModelSpec",
    "MonitoringSettings",
    "PriceList",
    "Placement",
    "PlanExtension",
    "Problem",
    "PromotionParameter",
    "RolloutSettings",
    "Routing",
    "SessionFrontDoor",
    "SessionSettings",
    "SpeculativeDecoding",
    "TurnLog",
    "VARIANT_NAME",
    "VpcPlacement",
    "add_adapter",
    "add_adapters",
    "apply_lora_settings",
    "cost_ceiling_table",
    "load_adapter_manifest",
    "load_config",
    "parse_config",
    "run_preflight",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
