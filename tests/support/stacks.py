"""Small stacks for template assertions."""

from __future__ import annotations

from typing import Any

from aws_cdk import App, Stack
from aws_cdk.assertions import Template
from sagemaker_llm_cdk import EndpointOptions, LlmEndpoint, ModelSpec

MODEL_URI = "s3://my-weights/qwen3-8b/"


def new_stack(name: str = "Test") -> Stack:
    return Stack(App(), name)


def endpoint(scope: Any, id: str, **kwargs: Any) -> LlmEndpoint:
    """``LlmEndpoint(scope, id, settings=EndpointOptions(<the settings among kwargs>), <the rest>)``: a test names
    the settings it varies beside the construct's own arguments (None: the setting's default). ``instance_type``
    defaults to ml.g6e.12xlarge."""
    given = {name: kwargs.pop(name) for name in list(kwargs) if name in EndpointOptions.model_fields}
    settings = {name: value for name, value in given.items() if value is not None}  # None: the default
    settings.setdefault("instance_type", "ml.g6e.12xlarge")
    return LlmEndpoint(scope, id, settings=settings, **kwargs)


def endpoint_stack(*, models: list[ModelSpec] | None = None, **endpoint_kwargs: Any) -> tuple[Stack, LlmEndpoint]:
    stack = new_stack()
    endpoint = globals()["endpoint"](stack, "Endpoint", **endpoint_kwargs)
    for model in models if models is not None else [ModelSpec(name="qwen3-8b", model_data_s3_uri=MODEL_URI)]:
        endpoint.add_model(model.name, model)
    return stack, endpoint


def template_of(stack: Stack) -> Template:
    return Template.from_stack(stack)


def resources_of_type(template: Template, cfn_type: str) -> dict[str, Any]:
    return template.find_resources(cfn_type)


def only(template: Template, cfn_type: str) -> dict[str, Any]:
    found = template.find_resources(cfn_type)
    assert len(found) == 1, f"expected one {cfn_type}, found {len(found)}"
    return next(iter(found.values()))
