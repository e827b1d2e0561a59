"""User text is kept only as long as needed and readable only by the roles that need it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_iam as iam
from sagemaker_llm_cdk import (
    ConfigurationError,
    DataCapture,
    EndpointOptions,
    LlmEndpoint,
    ModelSpec,
    acknowledge_resource,
    parse_config,
)
from sagemaker_llm_cdk.core.storage import NONCURRENT_VERSION_DAYS, READ_ACTIONS
from support.principals import people

pytestmark = pytest.mark.synth

BOUND = Environment(account="123456789012", region="us-east-1")
ENVS = pytest.mark.parametrize("env", [None, BOUND], ids=["agnostic", "bound"])


def build(env: Environment | None = None, **capture: Any) -> tuple[Stack, LlmEndpoint, iam.Role, iam.Role]:
    app = App()
    stack = Stack(app, "Chat", env=env)
    endpoint = LlmEndpoint(
        stack,
        "Endpoint",
        settings=EndpointOptions(instance_type="ml.g6e.12xlarge", data_capture=DataCapture(**capture)),
    )
    endpoint.add_model("m", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-weights/qwen3-8b/"))
    analyst = iam.Role(stack, "Analyst", assumed_by=people(stack))
    assert endpoint.data_capture_bucket is not None
    endpoint.data_capture_bucket.grant_read(analyst)
    # The policy guard refuses an unacknowledged wildcard in any role of the app, yours too: say why, with the actions.
    acknowledge_resource(
        analyst,
        endpoint.data_capture_bucket.arn_for_objects("*"),
        "The analyst reads every captured object of this endpoint (a test of the bucket's read rules).",
        actions=["s3:GetObject*", "s3:GetBucket*", "s3:List*"],
    )
    bystander = iam.Role(stack, "Bystander", assumed_by=people(stack))
    bystander.add_to_policy(
        iam.PolicyStatement(actions=["s3:ListBucket"], resources=[endpoint.data_capture_bucket.bucket_arn])
    )
    return stack, endpoint, analyst, bystander


def resources(stack: Stack) -> dict[str, Any]:
    from aws_cdk.assertions import Template

    return Template.from_stack(stack).to_json()["Resources"]


def arn_of(stack: Stack, role: iam.Role) -> dict[str, Any]:
    return {"Fn::GetAtt": [stack.resolve(role.node.default_child.logical_id), "Arn"]}


@ENVS
def test_captured_traffic_expires_after_the_configured_days_and_its_old_versions_after_a_week(env):
    stack, endpoint, _, _ = build(env, retention_days=14)
    bucket = resources(stack)[stack.resolve(endpoint.data_capture_bucket.node.default_child.logical_id)]
    rules = {r["Id"]: r for r in bucket["Properties"]["LifecycleConfiguration"]["Rules"]}
    assert rules["ExpireAllObjects"] == {"Id": "ExpireAllObjects", "ExpirationInDays": 14, "Status": "Enabled"}
    assert rules["ExpireNoncurrentVersions"]["NoncurrentVersionExpiration"] == {
        "NoncurrentDays": NONCURRENT_VERSION_DAYS
    }
    assert rules["RemoveExpiredDeleteMarkers"]["ExpiredObjectDeleteMarker"] is True
    assert DataCapture().retention_days == 30


@ENVS
def test_only_roles_granted_to_read_may_read_captures_and_decrypt_them_through_s3(env):
    stack, endpoint, analyst, bystander = build(env)
    found = resources(stack)
    root = stack.resolve(f"arn:{stack.partition}:iam::{stack.account}:root")
    (policy,) = [
        r
        for r in found.values()
        if r["Type"] == "AWS::S3::BucketPolicy"
        and r["Properties"]["Bucket"]
        == {"Ref": stack.resolve(endpoint.data_capture_bucket.node.default_child.logical_id)}
    ]
    (deny,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s.get("Sid") == "OnlyNamedRolesRead"]
    assert deny["Effect"] == "Deny" and deny["Principal"] == {"AWS": "*"}
    assert sorted(deny["Action"]) == sorted(READ_ACTIONS), (
        "only reads are denied: the deployer can still manage the bucket"
    )
    readers = deny["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
    assert readers == [root, arn_of(stack, analyst)]  # the endpoint role only writes; the bystander only lists

    key = found[stack.resolve(endpoint.key.node.default_child.logical_id)]
    (key_deny,) = [s for s in key["Properties"]["KeyPolicy"]["Statement"] if s["Effect"] == "Deny"]
    assert key_deny["Action"] == "kms:Decrypt"
    assert key_deny["Condition"]["StringEquals"] == {
        "kms:ViaService": stack.resolve(f"s3.{stack.region}.amazonaws.com")
    }
    decrypters = key_deny["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
    assert root in decrypters and arn_of(stack, endpoint.role) in decrypters and arn_of(stack, analyst) in decrypters
    assert arn_of(stack, bystander) not in decrypters and arn_of(stack, bystander) not in readers
    # Key administration stays with the account (the default key policy statement): nobody is locked out.
    assert any(s["Effect"] == "Allow" and s["Action"] == "kms:*" for s in key["Properties"]["KeyPolicy"]["Statement"])


def test_a_role_of_another_stack_is_named_with_add_reader():
    stack, endpoint, _, _ = build(BOUND)
    assert endpoint.data_capture is not None
    endpoint.data_capture.add_reader("arn:aws:iam::123456789012:role/analytics")
    found = json.dumps(resources(stack))
    assert found.count('"arn:aws:iam::123456789012:role/analytics"') == 2  # bucket policy and key policy


def test_eagle_datasets_expire_and_heads_are_kept():
    from support.eagle import build as build_eagle

    built = build_eagle()
    bucket = built.resources[built.stack.resolve(built.eagle.artifacts_bucket.node.default_child.logical_id)]
    rules = {r["Id"]: r for r in bucket["Properties"]["LifecycleConfiguration"]["Rules"]}
    assert rules["ExpireDatasets"] == {
        "Id": "ExpireDatasets",
        "ExpirationInDays": 90,
        "Prefix": "datasets/",
        "Status": "Enabled",
    }
    assert not [
        r
        for r in rules.values()
        if r.get("Prefix", "").startswith("jobs/") or ("ExpirationInDays" in r and "Prefix" not in r)
    ], "draft heads being served must never expire"


def test_captures_must_outlive_the_eagle_interval():
    data = {
        "endpoints": [
            {
                "name": "Chat",
                "instance_type": "ml.p5e.48xlarge",
                "data_capture": {"retention_days": 7},
                "models": [
                    {
                        "name": "qwen3-32b",
                        "model_data_s3_uri": "s3://my-weights/qwen3-32b/",
                        "architecture": "Qwen3ForCausalLM",
                        "eagle": {"schedule": "rate(7 days)"},
                    }
                ],
            }
        ]
    }
    with pytest.raises(
        ConfigurationError,
        match=r"endpoints\[0\]\.data_capture\.retention_days: got 7; allowed: more days "
        r"than models\[0\]\.eagle\.schedule \(rate\(7 days\), every 7 days\); fix: "
        r"keep captures longer than the EAGLE interval",
    ):
        parse_config(data, source="config/test.yaml")
    data["endpoints"][0]["data_capture"]["retention_days"] = 8
    parse_config(data, source="config/test.yaml")
