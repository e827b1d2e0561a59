"""Confused deputies: service principals trusted only with a source condition; waiter logs scoped."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk.assertions import Template
from sagemaker_llm_cdk import DeploymentCheck, EndpointOptions, LlmEndpoint, LlmMonitoring, ModelSpec

pytestmark = pytest.mark.synth

BOUND = Environment(account="123456789012", region="us-east-1")
ENVS = pytest.mark.parametrize("env", [None, BOUND], ids=["agnostic", "bound"])


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _service_statements(template: dict[str, Any], cfn_type: str, document: str) -> list[dict[str, Any]]:
    out = []
    for resource in template["Resources"].values():
        if resource["Type"] == cfn_type:
            for statement in resource["Properties"][document]["Statement"]:
                if isinstance(statement.get("Principal"), dict) and "Service" in statement["Principal"]:
                    out.append(statement)
    return out


@ENVS
def test_the_endpoint_role_trusts_sagemaker_only_for_this_account_and_region(env):
    app = App()
    stack = Stack(app, "Chat", env=env)
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("m", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-weights/qwen3-8b/"))
    trust = stack.resolve(endpoint.role.node.default_child.assume_role_policy_document)
    (statement,) = trust["Statement"]
    assert statement["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": stack.resolve(stack.account)},
        "ArnLike": {
            "aws:SourceArn": stack.resolve(f"arn:{stack.partition}:sagemaker:{stack.region}:{stack.account}:*")
        },
    }
    if env is not None:
        assert statement["Condition"]["ArnLike"]["aws:SourceArn"] == {
            "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":sagemaker:us-east-1:123456789012:*"]]
        }


def test_every_sagemaker_trust_of_the_eagle_loop_has_a_source_condition_and_events_publish_only_from_its_rule():
    from support.eagle import build

    built = build()
    template = built.template.to_json()
    trusts = _service_statements(template, "AWS::IAM::Role", "AssumeRolePolicyDocument")
    sagemaker = [s for s in trusts if s["Principal"]["Service"] == "sagemaker.amazonaws.com"]
    assert len(sagemaker) == 2  # the endpoint's execution role and the optimization job's role
    assert all({"StringEquals", "ArnLike"} <= set(s["Condition"]) for s in sagemaker)

    publish = _service_statements(template, "AWS::SNS::TopicPolicy", "PolicyDocument")
    assert publish, "EventBridge needs a topic policy statement to publish"
    for statement in publish:
        assert statement["Principal"] == {"Service": "events.amazonaws.com"}
        rule_id = built.stack.resolve(built.eagle.ended_badly_rule.node.default_child.logical_id)
        assert statement["Condition"]["ArnEquals"] == {"aws:SourceArn": {"Fn::GetAtt": [rule_id, "Arn"]}}
        assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    (rule,) = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Events::Rule" and "aws.states" in json.dumps(r["Properties"].get("EventPattern"))
    ]
    assert "InputTransformer" in rule["Properties"]["Targets"][0]


@ENVS
def test_cdks_unconditioned_publish_grant_on_the_alarm_topic_fails_the_synth(env):
    app = App()
    stack = Stack(app, "Ops", env=env)
    monitoring = LlmMonitoring(stack, "Monitoring")
    events.Rule(
        stack,
        "Any",
        event_pattern=events.EventPattern(source=["aws.sagemaker"]),
        targets=[events_targets.SnsTopic(monitoring.alarm_topic)],
    )
    with pytest.raises(
        RuntimeError,
        match=r"Ops/Monitoring/AlarmTopic/Policy: statement \d+ lets events.amazonaws.com "
        r"\['sns:Publish'\] with no aws:SourceArn or aws:SourceAccount condition",
    ):
        app.synth()


@ENVS
def test_the_deployment_check_waiter_writes_logs_only_to_its_own_log_group(env):
    app = App()
    stack = Stack(app, "Chat", env=env)
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("m", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-weights/qwen3-8b/"))
    check = DeploymentCheck(stack, "Check", endpoint=endpoint)
    template = Template.from_stack(stack).to_json()
    waiter = check.provider.node.find_child("waiter-state-machine")
    policy_id = stack.resolve(
        waiter.node.find_child("Role").node.find_child("DefaultPolicy").node.default_child.logical_id
    )
    statements = template["Resources"][policy_id]["Properties"]["PolicyDocument"]["Statement"]
    on_star = [a for s in statements if s["Resource"] == "*" for a in _as_list(s["Action"])]
    assert on_star and all(
        a.startswith("logs:")
        and "LogDeliver" in a
        or a in ("logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups")
        for a in on_star
    )
    (writes,) = [s for s in statements if "logs:PutLogEvents" in _as_list(s["Action"])]
    assert writes["Action"] == ["logs:CreateLogStream", "logs:PutLogEvents"]
    logs_id = stack.resolve(check.waiter_logs.node.default_child.logical_id)
    assert writes["Resource"] == {"Fn::GetAtt": [logs_id, "Arn"]}
