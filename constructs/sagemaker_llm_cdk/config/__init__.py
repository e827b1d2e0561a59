"""Deployment configs: the whole config model built from each feature's settings, layered YAML loading and JSON
Schemas; imports settings only, never constructs."""

from ..settings.config import AppConfig, ChecksSettings, DeploymentTarget, EndpointSpec
from .loading import json_schema, load_config, parse_config, write_json_schema

__all__ = [
    "AppConfig",
    "ChecksSettings",
    "DeploymentTarget",
    "EndpointSpec",
    "json_schema",
    "load_config",
    "parse_config",
    "write_json_schema",
]
