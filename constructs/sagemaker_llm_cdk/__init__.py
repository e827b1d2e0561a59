"""sagemaker_llm_cdk: AWS CDK constructs for fast, cheap LLM endpoints on Amazon SageMaker AI."""
from .adapter_manifest import load_adapter_manifest
from .adapter_stack import AdapterStack, add_adapters
from .capacity_plan import CapacityPlan, CapacityPlanSpec
from .cost import cost_ceiling_table
from .config import AppConfig, EndpointSpec, load_config, parse_config
from .endpoint import VARIANT_NAME, EndpointReference, LlmEndpoint
from .eagle import EagleOptimization
from .errors import ConfigurationError, Problem
from .images import LMI_IMAGES, LmiImage
from .jumpstart import JumpStartLock, JumpStartModel
from .deployment_check import DeploymentCheck
from .lora_adapter import LoraAdapter, add_adapter, apply_lora_settings
from .model_component import ModelComponent
from .monitoring import LlmMonitoring, MonitoringSettings, RolloutSettings
from .session_front_door import SessionFrontDoor
from .speculative_decoding import PromotionParameter, SpeculativeDecoding
from .settings import (
    AdapterSpec,
    CopyScaling,
    DataCapture,
    EagleDataset,
    EagleSettings,
    EndpointOptions,
    InstanceScaling,
    LoraSettings,
    ModelSpec,
    Routing,
    SessionSettings,
    VpcPlacement,
)

__version__ = "0.1.0"

__all__ = [
    "AdapterSpec",
    "AdapterStack",
    "AppConfig",
    "CapacityPlan",
    "CapacityPlanSpec",
    "ConfigurationError",
    "CopyScaling",
    "DataCapture",
    "DeploymentCheck",
    "EagleDataset",
    "EagleOptimization",
    "EagleSettings",
    "EndpointOptions",
    "EndpointReference",
    "EndpointSpec",
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
    "Problem",
    "PromotionParameter",
    "RolloutSettings",
    "Routing",
    "SessionFrontDoor",
    "SessionSettings",
    "SpeculativeDecoding",
    "VARIANT_NAME",
    "VpcPlacement",
    "add_adapter",
    "add_adapters",
    "apply_lora_settings",
    "cost_ceiling_table",
    "load_adapter_manifest",
    "load_config",
    "parse_config",
]
