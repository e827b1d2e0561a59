"""The policy guard reads every property that holds a policy or a principal, as the schemas enumerate them.

``core/policy_properties.json`` is generated from the CloudFormation schemas of the installed cfn-lint (and the
library's custom resources) by ``tools/policy_properties.py``; the first test regenerates it, so a schema that adds
a policy-bearing property fails here until the table (and a decision in the tool, if the rules cannot make one)
says how the guard reads it. The probes put a policy the hand-written list of types never read into a small app
with the guard applied; each must fail the synth by name, and its readable equivalent pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Aws, CfnCondition, CfnResource, Fn, Stack
from sagemaker_llm_cdk.core.grants import guard_wildcards
from sagemaker_llm_cdk.core.policy_properties import table, values_at
from sagemaker_llm_cdk.routing.endpoint_policy import EndpointPolicy
from sagemaker_llm_cdk.routing.router import endpoint_policy_document

from tools import policy_properties as tool

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
CHECKED_IN = ROOT / "constructs" / "sagemaker_llm_cdk" / "core" / "policy_properties.json"
ACCOUNT = "123456789012"


# ------------------------------------------------------------------ the table
def test_the_checked_in_table_is_what_the_installed_schemas_give() -> None:
    generated = tool.table(tool._schema_base())
    assert generated.pop("unresolved") == [], "decide these in tools/policy_properties.py REVIEW or NOT_IAM"
    checked_in = json.loads(CHECKED_IN.read_text(encoding="utf-8"))
    checked_in.pop("cfn-lint")
    assert generated == checked_in, (
        "the schemas changed: run python -m tools.policy_properties > "
        "constructs/sagemaker_llm_cdk/core/policy_properties.json and review what it adds"
    )


@pytest.mark.parametrize(
    ("kind", "resource", "path"),
    [
        ("resource", "AWS::SQS::QueueInlinePolicy", "PolicyDocument"),
        ("resource", "AWS::SNS::TopicInlinePolicy", "PolicyDocument"),
        ("resource", "AWS::DynamoDB::Table", "ResourcePolicy.PolicyDocument"),
        ("resource", "AWS::DynamoDB::Table", "StreamSpecification.ResourcePolicy.PolicyDocument"),
        ("resource", "AWS::S3::AccessPoint", "Policy"),
        ("resource", "AWS::OpenSearchService::Domain", "AccessPolicies"),
        ("resource", "AWS::IAM::Role", "AssumeRolePolicyDocument"),
        ("resource", "Custom::SageMakerEndpointPolicy", "ResourcePolicy"),
        ("identity", "AWS::IAM::Role", "Policies[].PolicyDocument"),
        ("principal", "AWS::Lambda::Permission", "Principal"),
        ("principal", "AWS::Lambda::LayerVersionPermission", "Principal"),
        ("unread", "AWS::OpenSearchServerless::AccessPolicy", "Policy"),
    ],
)
def test_the_table_holds_the_policy_bearing_properties(kind: str, resource: str, path: str) -> None:
    assert path in table()[kind][resource]


def test_a_container_of_a_document_is_read_through_it() -> None:
    assert "ResourcePolicy" not in table()["resource"]["AWS::DynamoDB::Table"]


@pytest.mark.parametrize(
    ("resource", "path", "types"),
    [
        (
            "AWS::ApplicationAutoScaling::ScalingPolicy",
            "TargetTrackingScalingPolicyConfiguration.ScalingPolicy",
            "object",
        ),
        ("AWS::SQS::Queue", "RedrivePolicy", ["object", "string"]),
        ("AWS::S3::Bucket", "PublicAccessBlockConfiguration.BlockPublicPolicy", "boolean"),
        ("AWS::ApiGateway::DomainName", "SecurityPolicy", "string"),
        ("AWS::Cassandra::Table", "AutoScalingSpecifications.ScalingPolicy.TargetTrackingPolicy", "object"),
    ],
)
def test_policies_that_are_not_iam_say_why(resource: str, path: str, types: Any) -> None:
    decision = tool.classify(resource, path, {"type": types})
    assert decision.startswith("not: ")
    assert len(decision) > len("not: ") + 5


def test_a_property_no_rule_decides_is_named_for_review() -> None:
    with pytest.raises(ValueError, match=r"AWS::New::Thing GovernancePolicy \(\['object'\]\): 'who may use it'"):
        tool.classify("AWS::New::Thing", "GovernancePolicy", {"type": "object", "description": "who may use it"})


def test_values_at_follows_lists_and_stops_at_intrinsics() -> None:
    properties = {
        "Replicas": [
            {"ResourcePolicy": {"PolicyDocument": {"a": 1}}},
            {"Region": "x"},
            {"ResourcePolicy": {"Ref": "P"}},
        ]
    }
    assert values_at(properties, "Replicas[].ResourcePolicy.PolicyDocument") == [
        ("Replicas[0].ResourcePolicy.PolicyDocument", {"a": 1}, True),
        ("Replicas[2].ResourcePolicy", {"Ref": "P"}, False),
    ]
    chosen = {"Fn::If": ["C", [], []]}
    assert values_at({"Replicas": chosen}, "Replicas[].ResourcePolicy.PolicyDocument") == [("Replicas", chosen, False)]
    assert values_at({"Policy": {"Ref": "AWS::NoValue"}}, "Policy") == []


# ------------------------------------------------------------------ the probes
def _small(tmp_path: Path) -> tuple[App, Stack]:
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Small")
    guard_wildcards(app)
    return app, stack


def _open(action: str, resource: str, **values: Any) -> dict[str, Any]:
    statement = {"Sid": "Open", "Effect": "Allow", "Principal": "*", "Action": action, "Resource": resource, **values}
    return {"Version": "2012-10-17", "Statement": [statement]}


_LIMITED = {"Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}}}
_QUEUE = f"arn:aws:sqs:us-east-1:{ACCOUNT}:q"
_TOPIC = f"arn:aws:sns:us-east-1:{ACCOUNT}:t"
_TABLE = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/t"


@pytest.mark.parametrize(
    ("kind", "properties", "location"),
    [
        (
            "AWS::SQS::QueueInlinePolicy",
            lambda **c: {"Queue": "q", "PolicyDocument": _open("sqs:SendMessage", _QUEUE, **c)},
            "PolicyDocument",
        ),
        (
            "AWS::SNS::TopicInlinePolicy",
            lambda **c: {"TopicArn": _TOPIC, "PolicyDocument": _open("sns:Publish", _TOPIC, **c)},
            "PolicyDocument",
        ),
        (
            "AWS::DynamoDB::Table",
            lambda **c: {
                "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
                "ResourcePolicy": {"PolicyDocument": _open("dynamodb:GetItem", _TABLE, **c)},
            },
            "ResourcePolicy.PolicyDocument",
        ),
    ],
    ids=["QueueInlinePolicy", "TopicInlinePolicy", "DynamoDB-ResourcePolicy"],
)
def test_a_resource_policy_of_a_type_the_old_list_missed_is_read(
    tmp_path: Path, kind: str, properties: Any, location: str
) -> None:
    app, stack = _small(tmp_path)
    CfnResource(stack, "Probe", type=kind, properties=properties())
    with pytest.raises(
        RuntimeError,
        match=rf"Small\.template\.json Probe {location}\.Statement\[0\] \(Sid Open\): lets every principal \('\*'\)",
    ):
        app.synth()

    app, stack = _small(tmp_path / "limited")
    CfnResource(stack, "Probe", type=kind, properties=properties(**_LIMITED))
    app.synth()


def test_a_wildcard_action_in_a_dynamodb_stream_policy_fails(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    document = _open("dynamodb:*", _TABLE + "/stream/*", **_LIMITED)
    CfnResource(
        stack,
        "Probe",
        type="AWS::DynamoDB::Table",
        properties={
            "StreamSpecification": {"StreamViewType": "KEYS_ONLY", "ResourcePolicy": {"PolicyDocument": document}}
        },
    )
    with pytest.raises(
        RuntimeError,
        match=r"Probe StreamSpecification\.ResourcePolicy\.PolicyDocument\.Statement\[0\] \(Sid Open\): "
        r"allows \['dynamodb:\*'\]",
    ):
        app.synth()


_BUS = f"arn:aws:events:us-east-1:{ACCOUNT}:event-bus/default"


@pytest.mark.parametrize(
    ("statement", "match"),
    [
        (
            {"Sid": "Open", "Effect": "Allow", "Principal": "*", "Action": "events:PutEvents", "Resource": _BUS},
            r"Probe Statement\.Statement\[0\] \(Sid Open\): lets every principal \('\*'\)",
        ),
        (
            json.dumps({"Sid": "Open", "Effect": "Allow", "Principal": "*", "Action": "events:*", "Resource": _BUS}),
            r"Probe Statement\.Statement\[0\] \(Sid Open\): allows \['events:\*'\]",
        ),
        (
            {
                "Fn::If": [
                    "C",
                    {"Effect": "Allow", "Principal": "*", "Action": "events:PutEvents", "Resource": _BUS},
                    {},
                ]
            },
            r"Probe Statement\.Statement\[0\]\.Fn::If\[1\]: lets every principal",
        ),
        ("not json", r"Probe Statement: is text the guard cannot read"),
    ],
    ids=["object", "json-text", "fn-if", "not-json"],
)
def test_an_event_bus_policy_statement_is_read_as_a_resource_policy(tmp_path: Path, statement: Any, match: str) -> None:
    app, stack = _small(tmp_path)
    CfnCondition(stack, "C", expression=Fn.condition_equals(Aws.REGION, "us-east-1"))
    CfnResource(
        stack, "Probe", type="AWS::Events::EventBusPolicy", properties={"StatementId": "s", "Statement": statement}
    )
    with pytest.raises(RuntimeError, match=match):
        app.synth()


def test_an_event_bus_policy_statement_limited_to_the_organization_passes(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    statement = {
        "Sid": "Org",
        "Effect": "Allow",
        "Principal": "*",
        "Action": "events:PutEvents",
        "Resource": _BUS,
        "Condition": {"StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}},
    }
    CfnResource(
        stack, "Probe", type="AWS::Events::EventBusPolicy", properties={"StatementId": "s", "Statement": statement}
    )
    app.synth()


def test_a_layer_shared_with_everyone_fails(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    layer = {"Action": "lambda:GetLayerVersion", "LayerVersionArn": "arn:aws:lambda:us-east-1:123456789012:layer:l:1"}
    CfnResource(stack, "Probe", type="AWS::Lambda::LayerVersionPermission", properties={**layer, "Principal": "*"})
    with pytest.raises(
        RuntimeError,
        match=r"Small\.template\.json Probe Principal: gives AWS::Lambda::LayerVersionPermission to every principal "
        r"\(\['\*'\]\) with no OrganizationId",
    ):
        app.synth()

    app, stack = _small(tmp_path / "org")
    CfnResource(
        stack,
        "Probe",
        type="AWS::Lambda::LayerVersionPermission",
        properties={**layer, "Principal": "*", "OrganizationId": "o-abcdef1234"},
    )
    app.synth()


def test_a_layer_principal_chosen_at_deploy_time_is_unreadable(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    layer = {"Action": "lambda:GetLayerVersion", "LayerVersionArn": "arn:aws:lambda:us-east-1:123456789012:layer:l:1"}
    CfnResource(
        stack,
        "Probe",
        type="AWS::Lambda::LayerVersionPermission",
        properties={**layer, "Principal": Fn.import_value("Who")},
    )
    with pytest.raises(RuntimeError, match=r"Probe Principal: holds \{\"Fn::ImportValue\":\"Who\"\}"):
        app.synth()


def test_a_policy_in_a_grammar_the_guard_does_not_read_fails(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    rules = [{"Rules": [{"ResourceType": "index", "Resource": ["index/*/*"], "Permission": ["aoss:*"]}]}]
    CfnResource(
        stack,
        "Probe",
        type="AWS::OpenSearchServerless::AccessPolicy",
        properties={"Name": "p", "Type": "data", "Policy": json.dumps(rules)},
    )
    with pytest.raises(
        RuntimeError,
        match=r"Probe Policy: holds a AWS::OpenSearchServerless::AccessPolicy policy, whose grammar \(not IAM's\) "
        r"the guard does not read",
    ):
        app.synth()


def test_a_policy_behind_an_intrinsic_list_is_unreadable(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    replicas = Fn.condition_if("Two", [{"Region": "us-east-1"}], [{"Region": "us-west-2"}])
    CfnResource(stack, "Probe", type="AWS::DynamoDB::GlobalTable", properties={"Replicas": replicas})
    with pytest.raises(RuntimeError, match=r"Probe Replicas: is \{\"Fn::If\".*which the guard cannot read"):
        app.synth()


# ------------------------------------------------------------------ groups the template does not hold
def test_a_user_added_to_a_group_the_template_does_not_hold_fails(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    CfnResource(
        stack, "Probe", type="AWS::IAM::UserToGroupAddition", properties={"GroupName": "admins", "Users": ["u"]}
    )
    CfnResource(stack, "User", type="AWS::IAM::User", properties={"Groups": ["operators"]})
    with pytest.raises(
        RuntimeError,
        match=r"Probe GroupName: adds a user to the group 'admins', which the template does not hold",
    ) as raised:
        app.synth()
    assert "User Groups[0]: adds a user to the group 'operators'" in str(raised.value)


def test_a_user_added_to_a_group_the_template_holds_passes(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    group = CfnResource(stack, "Group", type="AWS::IAM::Group", properties={"GroupName": "readers"})
    CfnResource(
        stack, "Probe", type="AWS::IAM::UserToGroupAddition", properties={"GroupName": group.ref, "Users": ["u"]}
    )
    CfnResource(stack, "User", type="AWS::IAM::User", properties={"Groups": ["readers"]})
    app.synth()


# ------------------------------------------------------------------ the library's endpoint policy
ENDPOINT_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:endpoint/chat"
ROUTERS = ["arn:aws:sagemaker:us-east-1:111111111111:inference-router/SageMakerLlm-Chat"]


def _endpoint_policy(tmp_path: Path, document: dict[str, Any]) -> App:
    app, stack = _small(tmp_path)
    EndpointPolicy(stack, "RouterPolicy", endpoint_name="chat", document=document)
    return app


def test_the_library_s_endpoint_policy_passes(tmp_path: Path) -> None:
    document = endpoint_policy_document(router_account="111111111111", router_arns=ROUTERS, endpoint_arn=ENDPOINT_ARN)
    _endpoint_policy(tmp_path, document).synth()


def test_an_endpoint_policy_open_to_everyone_fails(tmp_path: Path) -> None:
    document = _open("sagemaker:*", ENDPOINT_ARN)
    with pytest.raises(
        RuntimeError,
        match=r"RouterPolicy[0-9A-F]* ResourcePolicy\.Statement\[0\] \(Sid Open\): lets every "
        r"principal \('\*'\)",
    ) as raised:
        _endpoint_policy(tmp_path, document).synth()
    assert "(Sid Open): allows ['sagemaker:*'] to *" in str(raised.value)


@pytest.mark.parametrize(
    "resource",
    ["*", f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:endpoint/*", f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:endpoint/other"],
    ids=["star", "every-endpoint", "another-endpoint"],
)
def test_an_endpoint_policy_must_name_its_endpoint(tmp_path: Path, resource: str) -> None:
    document = _open("sagemaker:InvokeEndpoint", resource, Principal={"AWS": "arn:aws:iam::111111111111:root"})
    with pytest.raises(
        RuntimeError,
        match=r"ResourcePolicy\.Statement\[0\] \(Sid Open\): allows \['sagemaker:InvokeEndpoint'\] on \[.*\]: an "
        r"endpoint policy's Resource must be the endpoint's ARN \(arn:<partition>:sagemaker:<region>:<account>:"
        r"endpoint/chat\)",
    ):
        _endpoint_policy(tmp_path, document).synth()
