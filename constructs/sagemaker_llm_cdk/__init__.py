"""sagemaker_llm_cdk: AWS CDK constructs for fast, cheap LLM endpoints on Amazon SageMaker AI."""
from .config import AppConfig, EndpointSpec, load_config, parse_config
from .endpoint import VARIANT_NAME, EndpointReference, LlmEndpoint
from .errors import ConfigurationError, Problem
from .model_component import ModelComponent
from .settings import CopyScaling, DataCapture, EndpointOptions, InstanceScaling, ModelSpec, Routing, VpcPlacement

__version__ = "0.1.0"

__all__ = [
    "AppConfig",
    "ConfigurationError",
    "CopyScaling",
    "DataCapture",
    "EndpointOptions",
    "EndpointReference",
    "EndpointSpec",
    "InstanceScaling",
    "LlmEndpoint",
    "ModelComponent",
    "ModelSpec",
    "Problem",
    "Routing",
    "VARIANT_NAME",
    "VpcPlacement",
    "load_config",
    "parse_config",
]
