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
    from .adapters.lora_adapter import LoraAdapter, adapters_of
    from .adapters.manifest import load_adapter_manifest
    from .capacity.capacity_plan import (
        CapacityPlan,
        consent_problems,
        consented_plans,
        encrypted_alarm_topic,
        file_consents,
    )
    from .capacity.guard import CapacityPlanGuard
    from .checks import FAIL_SYNTH_CONTEXT, WarningsOnly, apply_checks, apply_checks_to_stage
    from .config.layers import load_layers
    from .config.loading import config_item, load_config, locate_problems, parse_config
    from .core.checkov import checkov_skip
    from .core.errors import ConfigurationError, Problem
    from .core.nag import acknowledge, acknowledge_resource
    from .core.removal import removal_note, set_removal
    from .core.settings import Settings, validated
    from .eagle.benchmark import EagleBenchmark
    from .eagle.optimization import RECORD_SERVICE, EagleOptimization
    from .hosting.endpoint import VARIANT_NAME, EndpointReference, LlmEndpoint
    from .hosting.jumpstart import JumpStartLock, JumpStartModel, find_lock
    from .hosting.model_component import ModelComponent, apply_lora_settings
    from .hosting.pretrained_head import PretrainedHead
    from .hosting.speculative_decoding import PromotionParameter, SpeculativeDecoding
    from .operations.budget import CostBudget
    from .operations.cost import cost_ceiling_table, cost_model
    from .operations.deployment_check import DeploymentCheck
    from .operations.monitoring import LlmMonitoring
    from .operations.pricing import PriceList
    from .preflight import Finding, run_preflight
    from .router_client import RouterClient, RouterResponse
    from .routing.endpoint_policy import EndpointPolicy, merged_policy
    from .routing.router import Destination, InferenceRouter, RouterTarget, endpoint_policies
    from .sessions.front_door import SessionFrontDoor
    from .sessions.turn_log import TurnLog
    from .settings.adapters import AdapterSpec, LoraSettings
    from .settings.capacity import EXTEND_CONTEXT, PURCHASE_CONTEXT, CapacityPlanSpec, PlanExtension
    from .settings.config import AppConfig, EndpointSpec
    from .settings.eagle import EagleBenchmarkSettings, EagleDataset, EagleSettings
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
    from .settings.images import LMI_IMAGES, LmiImage
    from .settings.operations import MonitoringSettings, RolloutSettings
    from .settings.routing import (
        ROLE_ARN,
        AsyncRouting,
        RouterDestinationSpec,
        RouterSpec,
        RoutingTargetSpec,
        default_router_name,
    )
    from .settings.sessions import SessionSettings


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
    "CostBudget": "operations.budget",
    "EXTEND_CONTEXT": "settings.capacity",
    "EndpointPolicy": "routing.endpoint_policy",
    "FAIL_SYNTH_CONTEXT": "checks",
    "PURCHASE_CONTEXT": "settings.capacity",
    "RECORD_SERVICE": "eagle.optimization",
    "ROLE_ARN": "settings.routing",
    "Settings": "core.settings",
    "WarningsOnly": "checks",
    "acknowledge": "core.nag",
    "adapters_of": "adapters.lora_adapter",
    "apply_checks_to_stage": "checks",
    "config_item": "config.loading",
    "consent_problems": "capacity.capacity_plan",
    "consented_plans": "capacity.capacity_plan",
    "cost_model": "operations.cost",
    "default_router_name": "settings.routing",
    "encrypted_alarm_topic": "capacity.capacity_plan",
    "endpoint_policies": "routing.router",
    "file_consents": "capacity.capacity_plan",
    "find_lock": "hosting.jumpstart",
    "load_layers": "config.layers",
    "locate_problems": "config.loading",
    "merged_policy": "routing.endpoint_policy",
    "removal_note": "core.removal",
    "validated": "core.settings",
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
    "CostBudget",
    "EXTEND_CONTEXT",
    "EndpointPolicy",
    "FAIL_SYNTH_CONTEXT",
    "PURCHASE_CONTEXT",
    "RECORD_SERVICE",
    "ROLE_ARN",
    "Settings",
    "WarningsOnly",
    "acknowledge",
    "adapters_of",
    "apply_checks_to_stage",
    "config_item",
    "consent_problems",
    "consented_plans",
    "cost_model",
    "default_router_name",
    "encrypted_alarm_topic",
    "endpoint_policies",
    "file_consents",
    "find_lock",
    "load_layers",
    "locate_problems",
    "merged_policy",
    "removal_note",
    "validated",
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
