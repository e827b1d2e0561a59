"""Shared by the session front door tests: an endpoint with a LoRA base model, adapters and a
SessionFrontDoor, and readers of its function."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import App, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks
from sagemaker_llm_cdk import EndpointOptions, LlmEndpoint, LoraAdapter, ModelSpec
from sagemaker_llm_cdk.sessions.front_door import SessionFrontDoor
from sagemaker_llm_cdk.settings.adapters import AdapterSpec, LoraSettings
from sagemaker_llm_cdk.settings.sessions import SessionSettings

from .principals import people

MODEL_URI = "s3://my-bucket/model/"
ADAPTERS = (("Sql", "qwen3-8b-sql"), ("Legal", "qwen3-8b-legal"))
DEFAULT_SESSIONS = SessionSettings()  # build()'s default, made once as a default argument would be


@dataclass
class Built:
    app: App
    stack: Stack
    endpoint: LlmEndpoint
    base: Any
    adapters: list[Any]
    front_door: SessionFrontDoor
    caller: iam.Role

    @property
    def template(self) -> Template:
        return Template.from_stack(self.stack)

    def resolve(self, value: Any) -> Any:
        return self.stack.resolve(value)


def build(
    *,
    image: str = "lmi",
    sessions: SessionSettings | None = DEFAULT_SESSIONS,
    adapters=ADAPTERS,
    nag: bool = False,
    **front_door_kwargs: Any,
) -> Built:
    app = App()
    stack = Stack(app, "Chat")
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model(
        "m",
        ModelSpec(
            name="qwen3-8b",
            physical_name="qwen3-8b",
            model_data_s3_uri=MODEL_URI,
            image=image,
            sessions=sessions,
            lora=LoraSettings(max_rank=16) if adapters else None,
        ),
    )
    made = [
        LoraAdapter(
            base,
            id,
            base=base,
            settings=AdapterSpec(
                name=name, physical_name=name, artifact_s3_uri=f"s3://my-bucket/adapters/{name}.tar.gz"
            ),
        )
        for id, name in adapters
    ]
    front_door_kwargs.setdefault("components", made)
    front_door = SessionFrontDoor(stack, "FrontDoor", endpoint=endpoint, default_component=base, **front_door_kwargs)
    caller = iam.Role(stack, "ChatApp", assumed_by=people(stack))
    front_door.grant_invoke_url(caller)
    if nag:
        Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return Built(app, stack, endpoint, base, made, front_door, caller)


def function_environment(built: Built) -> dict[str, Any]:
    function_id = built.resolve(built.front_door.function.node.default_child.logical_id)
    return built.template.to_json()["Resources"][function_id]["Properties"]["Environment"]["Variables"]
