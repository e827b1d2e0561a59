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
    from .adapters.adapter_stack import AdapterStack, add_adapters
    from .adapters.lora_adapter import LoraAdapter
    from .hosting.model_component import apply_lora_settings
    from .adapters.manifest import load_adapter_manifest
    from .settings.adapters import AdapterSpec, LoraSettings
    from .capacity.capacity_plan import CapacityPlan
    from .capacity.guard import CapacityPlanGuard
    from .settings.capacity import CapacityPlanSpec, PlanExtension
    from .checks import apply_checks
    from .config.loading import load_config, parse_config
    from .settings.config import AppConfig, EndpointSpec
    from .core.checkov import checkov_skip
    from .core.errors import ConfigurationError, Problem
    from .core.nag import acknowledge_resource
    from .core.removal import set_removal
    from .eagle.benchmark import EagleBenchmark
    from .eagle.optimization import EagleOptimization
    from .hosting.pretrained_head import PretrainedHead
    from .hosting.speculative_decoding import PromotionParameter, SpeculativeDecoding
    from .settings.eagle import EagleBenchmarkSettings, EagleDataset, EagleSettings
    from .hosting.endpoint import VARIANT_NAME, EndpointReference, LlmEndpoint
    from .settings.images import LMI_IMAGES, LmiImage
    from .hosting.jumpstart import JumpStartLock, JumpStartModel
    from .hosting.model_component import ModelComponent
    from .settings.hosting import (
        CopyScaling,
        DataCapture,
        EndpointOptions,
        InstancePool,
        InstanceRequirements,
        InstanceScaling,
        ModelSpec,
        Placement,
        Routing,
        VpcPlacement,
    )
    from .operations.cost import cost_ceiling_table
    from .operations.deployment_check import DeploymentCheck
    from .operations.monitoring import LlmMonitoring
    from .operations.pricing import PriceList
    from .settings.operations import MonitoringSettings, RolloutSettings
    from .preflight import Finding, run_preflight
    from .router_client import RouterClient, RouterResponse
    from .routing.router import Destination, InferenceRouter, RouterTarget
    from .settings.routing import AsyncRouting, RouterDestinationSpec, RouterSpec, RoutingTargetSpec
    from .sessions.front_door import SessionFrontDoor
    from .settings.sessions import SessionSettings
    from .sessions.turn_log import TurnLog

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "acknowledge_resource": "core.nag",
    "AdapterSpec": "settings.adapters",
    "AdapterStack": "adapters.adapter_stack",
    "add_adapters": "adapters.adapter_stack",
    "AppConfig": "settings.config",
    "AsyncRouting": "settings.routing",
    "apply_checks": "checks",
    "apply_lora_settings": "hosting.model_component",
    "CapacityPlan": "capacity.capacity_plan",
    "CapacityPlanGuard": "capacity.guard",
    "CapacityPlanSpec": "settings.capacity",
    "checkov_skip": "core.checkov",
    "ConfigurationError": "core.errors",
    "CopyScaling": "settings.hosting",
    "cost_ceiling_table": "operations.cost",
    "DataCapture": "settings.hosting",
    "DeploymentCheck": "operations.deployment_check",
    "Destination": "routing.router",
    "EagleBenchmark": "eagle.benchmark",
    "EagleBenchmarkSettings": "settings.eagle",
    "EagleDataset": "settings.eagle",
    "EagleOptimization": "eagle.optimization",
    "EagleSettings": "settings.eagle",
    "EndpointOptions": "settings.hosting",
    "EndpointReference": "hosting.endpoint",
    "EndpointSpec": "settings.config",
    "InferenceRouter": "routing.router",
    "Finding": "preflight",
    "InstancePool": "settings.hosting",
    "InstanceRequirements": "settings.hosting",
    "InstanceScaling": "settings.hosting",
    "JumpStartLock": "hosting.jumpstart",
    "JumpStartModel": "hosting.jumpstart",
    "LlmEndpoint": "hosting.endpoint",
    "LlmMonitoring": "operations.monitoring",
    "LMI_IMAGES": "settings.images",
    "LmiImage": "settings.images",
    "load_adapter_manifest": "adapters.manifest",
    "load_config": "config.loading",
    "LoraAdapter": "adapters.lora_adapter",
    "LoraSettings": "settings.adapters",
    "ModelComponent": "hosting.model_component",
    "ModelSpec": "settings.hosting",
    "MonitoringSettings": "settings.operations",
    "parse_config": "config.loading",
    "Placement": "settings.hosting",
    "PlanExtension": "settings.capacity",
    "PretrainedHead": "hosting.pretrained_head",
    "PriceList": "operations.pricing",
    "Problem": "core.errors",
    "PromotionParameter": "hosting.speculative_decoding",
    "RolloutSettings": "settings.operations",
    "RouterClient": "router_client",
    "RouterDestinationSpec": "settings.routing",
    "RouterResponse": "router_client",
    "RouterSpec": "settings.routing",
    "RouterTarget": "routing.router",
    "Routing": "settings.hosting",
    "RoutingTargetSpec": "settings.routing",
    "run_preflight": "preflight",
    "SessionFrontDoor": "sessions.front_door",
    "SessionSettings": "settings.sessions",
    "set_removal": "core.removal",
    "SpeculativeDecoding": "hosting.speculative_decoding",
    "TurnLog": "sessions.turn_log",
    "VARIANT_NAME": "hosting.endpoint",
    "VpcPlacement": "settings.hosting",
}
"""Public name -> the submodule that defines it (imported on first use)."""

__all__ = [
    "AdapterSpec",
    "AdapterStack",
    "AppConfig",
    "AsyncRouting",
    "CapacityPlan",
    "CapacityPlanGuard",
    "CapacityPlanSpec",
    "ConfigurationError",
    "CopyScaling",
    "DataCapture",
    "DeploymentCheck",
    "Destination",
    "EagleBenchmark",
    "EagleBenchmarkSettings",
    "EagleDataset",
    "EagleOptimization",
    "EagleSettings",
    "EndpointOptions",
    "EndpointReference",
    "EndpointSpec",
    "Finding",
    "InferenceRouter",
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
    "PretrainedHead",
    "Problem",
    "PromotionParameter",
    "RolloutSettings",
    "RouterClient",
    "RouterDestinationSpec",
    "RouterResponse",
    "RouterSpec",
    "RouterTarget",
    "Routing",
    "RoutingTargetSpec",
    "SessionFrontDoor",
    "SessionSettings",
    "SpeculativeDecoding",
    "TurnLog",
    "VARIANT_NAME",
    "VpcPlacement",
    "acknowledge_resource",
    "add_adapters",
    "apply_checks",
    "apply_lora_settings",
    "checkov_skip",
    "cost_ceiling_table",
    "load_adapter_manifest",
    "load_config",
    "parse_config",
    "run_preflight",
    "set_removal",
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
