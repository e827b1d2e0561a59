"""Shared by the EAGLE tests: an endpoint with one Qwen3 model and its EagleOptimization, synthesized with
cdk-nag, and readers of the template."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aws_cdk import App, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks
from sagemaker_llm_cdk import EndpointOptions, LlmEndpoint, ModelSpec
from sagemaker_llm_cdk.eagle.optimization import EagleOptimization
from sagemaker_llm_cdk.hosting.speculative_decoding import PromotionParameter

MODEL = "qwen3-32b"
WEIGHTS = "s3://my-weights/qwen3-32b/"
USER_DATA = "s3://team-datasets/chat/v3/"
PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/chat-p5e"
INSTANCE = "ml.p5e.48xlarge"
PARAMETER_NAME = f"/sagemaker-llm/state/eagle/{MODEL}/draft-head"


def render(value: Any) -> Any:
    """CloudFormation value as text: Ref -> ${X}, GetAtt -> ${X.Attr}, Join concatenated; recursive."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((kind, arg),) = value.items()
            if kind == "Ref":
                return "${" + arg + "}"
            if kind == "Fn::GetAtt":
                return "${" + ".".join(arg) + "}"
            if kind == "Fn::Join":
                return arg[0].join(str(render(part)) for part in arg[1])
        return {k: render(v) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v) for v in value]
    return value


def lid(stack: Stack, construct: Any) -> str:
    child = construct.node.default_child if construct.node.default_child is not None else construct
    return stack.resolve(child.logical_id)


@dataclass
class Built:
    app: App
    promos: Stack
    stack: Stack
    endpoint: LlmEndpoint
    component: Any
    eagle: EagleOptimization
    template: Template
    resources: dict[str, Any]
    definition: dict[str, Any]

    def states(self) -> dict[str, Any]:
        return self.definition["States"]

    def statements(self, role: iam.IRole) -> list[dict[str, Any]]:
        role_id = lid(self.stack, role)
        out = []
        for resource in self.resources.values():
            if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in resource["Properties"]["Roles"]:
                out.extend(render(resource["Properties"]["PolicyDocument"]["Statement"]))
        return out

    def grants(self, role: iam.IRole) -> dict[str, list[str]]:
        """action -> sorted resources of the Allow statements of ``role``."""
        out: dict[str, list[str]] = {}
        for statement in self.statements(role):
            if statement["Effect"] != "Allow":
                continue
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for action in actions:
                out.setdefault(action, []).extend(resources)
        return {action: sorted(set(resources)) for action, resources in out.items()}

    def ref(self, construct: Any, attr: str | None = None) -> str:
        return "${" + lid(self.stack, construct) + (f".{attr}" if attr else "") + "}"


def build(*, model: dict[str, Any] | None = None, **eagle_kwargs: Any) -> Built:
    """Promos + Main stacks: one endpoint, one Qwen3 model (with ``model``'s ModelSpec fields), its
    EagleOptimization; synthesized with cdk-nag."""
    app = App()
    promos = Stack(app, "Promos")
    stack = Stack(app, "Main")
    llm = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type=INSTANCE))
    component = llm.add_model(
        "Qwen",
        ModelSpec(
            name=MODEL,
            physical_name=MODEL,
            model_data_s3_uri=WEIGHTS,
            architecture="Qwen3ForCausalLM",
            accelerators=2,
            **(model or {}),
        ),
    )
    eagle_kwargs.setdefault("promotion_parameter", PromotionParameter(promos, "QwenHead", model_name=MODEL).parameter)
    eagle = EagleOptimization(stack, "QwenEagle", component=component, **eagle_kwargs)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged cdk-nag finding
    template = Template.from_stack(stack)
    resources = template.to_json()["Resources"]
    (machine,) = [r for r in resources.values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    definition = json.loads(render(machine["Properties"]["DefinitionString"]))
    return Built(app, promos, stack, llm, component, eagle, template, resources, definition)
