"""DeploymentCheck: a custom resource that re-runs on every config/model change, with describe-only permissions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk.assertions import Match, Template
from sagemaker_llm_cdk import ConfigurationError, EndpointOptions, LlmEndpoint, ModelSpec
from sagemaker_llm_cdk.operations.deployment_check import RESOURCE_TYPE, DeploymentCheck

pytestmark = pytest.mark.synth

MODEL = "qwen3-8b"


def check_stack(**check_kwargs: Any) -> tuple[Stack, LlmEndpoint, DeploymentCheck]:
    """A stack with one LlmEndpoint (ml.g6e.12xlarge, one model) and its deployment check."""
    stack = Stack(App(), "Test")
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("Qwen", ModelSpec(name=MODEL, physical_name=MODEL, model_data_s3_uri="s3://my-bucket/model/"))
    return stack, endpoint, DeploymentCheck(stack, "Check", endpoint=endpoint, **check_kwargs)


def ids(template: Template) -> dict[str, str]:
    def one(cfn_type: str) -> str:
        (logical,) = template.find_resources(cfn_type)
        return logical

    return {
        "endpoint": one("AWS::SageMaker::Endpoint"),
        "config": one("AWS::SageMaker::EndpointConfig"),
        "model": one("AWS::SageMaker::Model"),
        "component": one("AWS::SageMaker::InferenceComponent"),
    }


def role_statements(template: Template, handler: str) -> list[dict[str, Any]]:
    (function,) = [
        f
        for f in template.find_resources("AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == handler
    ]
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    policies = [
        p for p in template.find_resources("AWS::IAM::Policy").values() if {"Ref": role_id} in p["Properties"]["Roles"]
    ]
    return [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]


@pytest.fixture(scope="module")
def default() -> tuple[Stack, LlmEndpoint, DeploymentCheck, Template]:
    stack, endpoint, check = check_stack()
    return stack, endpoint, check, Template.from_stack(stack)


def test_properties_change_with_every_config_and_model(default):
    *_, template = default
    refs = ids(template)
    template.has_resource(
        RESOURCE_TYPE,
        {
            "Properties": {
                "ServiceToken": Match.any_value(),
                "EndpointName": {"Fn::GetAtt": [refs["endpoint"], "EndpointName"]},
                "EndpointConfigName": {"Fn::GetAtt": [refs["config"], "EndpointConfigName"]},
                "Components": [{"Name": MODEL, "ModelName": {"Fn::GetAtt": [refs["model"], "ModelName"]}}],
            },
            "DependsOn": Match.array_with([refs["component"]]),  # the endpoint: through the GetAtt above
        },
    )


def test_is_complete_may_only_describe_this_endpoint_and_component(default):
    *_, template = default
    refs = ids(template)
    sagemaker = [
        s
        for s in role_statements(template, "index.is_complete")
        if any(a.startswith("sagemaker:") for a in [s["Action"]] if isinstance(a, str))
    ]
    assert sagemaker == [
        {
            "Sid": "DescribeThisEndpoint",
            "Effect": "Allow",
            "Action": "sagemaker:DescribeEndpoint",
            "Resource": {"Ref": refs["endpoint"]},
        },
        {
            "Sid": "DescribeTheseComponents",
            "Effect": "Allow",
            "Action": "sagemaker:DescribeInferenceComponent",
            "Resource": {"Fn::GetAtt": [refs["component"], "InferenceComponentArn"]},
        },
    ]


def test_on_event_may_only_read_its_own_stacks_status(default):
    *_, template = default
    statements = role_statements(template, "index.on_event")
    actions = {a for s in statements for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])}
    assert actions == {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "cloudformation:DescribeStacks",
    }
    assert [s for s in statements if s["Action"] == "cloudformation:DescribeStacks"] == [
        {
            "Sid": "ReadThisStacksStatus",
            "Effect": "Allow",
            "Action": "cloudformation:DescribeStacks",
            "Resource": {"Ref": "AWS::StackId"},
        }
    ]


def test_handlers_share_one_asset_and_no_role_has_managed_policies(default):
    *_, template = default
    functions = [
        f["Properties"]
        for f in template.find_resources("AWS::Lambda::Function").values()
        if f["Properties"].get("Handler", "").startswith("index.")
    ]
    assert sorted(f["Handler"] for f in functions) == ["index.is_complete", "index.on_event"]
    assert all(f["Runtime"] == "python3.13" and f["TracingConfig"] == {"Mode": "Active"} for f in functions)
    assert len({json.dumps(f["Code"], sort_keys=True) for f in functions}) == 1
    for role in template.find_resources("AWS::IAM::Role").values():
        assert "ManagedPolicyArns" not in role["Properties"]


def test_waiter_polls_every_interval_until_the_timeout_and_logs_everything(default):
    *_, template = default
    (machine,) = template.find_resources("AWS::StepFunctions::StateMachine").values()
    assert machine["Properties"]["LoggingConfiguration"]["Level"] == "ALL"
    definition = "".join(
        p if isinstance(p, str) else "<ref>" for p in machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    )
    assert '"IntervalSeconds":30' in definition and '"MaxAttempts":60' in definition and '"BackoffRate":1' in definition


def test_custom_timeouts_reach_the_waiter():
    stack, _, _ = check_stack(query_interval=Duration.minutes(1), total_timeout=Duration.hours(2))
    (machine,) = Template.from_stack(stack).find_resources("AWS::StepFunctions::StateMachine").values()
    definition = "".join(
        p if isinstance(p, str) else "<ref>" for p in machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    )
    assert '"IntervalSeconds":60' in definition and '"MaxAttempts":120' in definition


def test_adapter_components_join_with_their_artifact_and_arn():
    stack, endpoint, check = check_stack()
    arn = "arn:aws:sagemaker:us-east-1:123456789012:inference-component/support-bot"
    check.add_component("support-bot", arn, artifact_url="s3://adapters/support.tar.gz")
    template = Template.from_stack(stack)
    template.has_resource_properties(
        RESOURCE_TYPE,
        {
            "Components": [
                Match.object_like({"Name": MODEL}),
                {"Name": "support-bot", "ArtifactUrl": "s3://adapters/support.tar.gz"},
            ]
        },
    )
    (statement,) = [
        s for s in role_statements(template, "index.is_complete") if s.get("Sid") == "DescribeTheseComponents"
    ]
    assert statement["Resource"][1] == arn


def test_total_timeout_is_at_most_two_hours():
    with pytest.raises(ConfigurationError, match=r"total_timeout: got '10800 s'; allowed: 1 minute to 2 hours"):
        check_stack(total_timeout=Duration.hours(3))


def test_query_interval_is_at_least_five_seconds():
    with pytest.raises(ConfigurationError, match=r"query_interval: got '1 s'; allowed: 5 seconds to 1 hour"):
        check_stack(query_interval=Duration.seconds(1))


def test_component_is_added_once():
    _, endpoint, check = check_stack()
    with pytest.raises(ConfigurationError, match=rf"name: got '{MODEL}'.*add each component once"):
        check.add_model(endpoint.models[0])


def test_model_added_after_the_check_fails_the_synth():
    stack, endpoint, _ = check_stack()
    endpoint.add_model(
        "Late", ModelSpec(name="late-model", physical_name="late-model", model_data_s3_uri="s3://my-bucket/late/")
    )
    with pytest.raises(Exception, match=r"models \['late-model'\] of Test/Chat are not checked"):
        Template.from_stack(stack)
