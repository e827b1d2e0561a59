"""SecureBucket's access logs: delivered through the log bucket's policy whatever the app's feature flags say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template
from sagemaker_llm_cdk.core.storage import SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, SecureBucket

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
CDK_JSON = json.loads((ROOT / "cdk.json").read_text())["context"]
CONTEXTS = {
    "no-flags": {},  # an app whose cdk.json predates the flag (CDK < 2.60) or has no context at all
    "flag-off": {SERVER_ACCESS_LOGS_USE_BUCKET_POLICY: False},
    "cdk-json": CDK_JSON,
}
ENVS = {"agnostic": None, "bound": Environment(account="123456789012", region="eu-central-1")}


def buckets(context: dict[str, Any], env: Environment | None) -> tuple[Stack, SecureBucket, Template]:
    stack = Stack(App(context=context), "Store", env=env)
    bucket = SecureBucket(stack, "Data", encryption_key=kms.Key(stack, "Key"))
    return stack, bucket, Template.from_stack(stack)


@pytest.mark.parametrize("env", ENVS.values(), ids=ENVS.keys())
@pytest.mark.parametrize("context", CONTEXTS.values(), ids=CONTEXTS.keys())
def test_access_logs_reach_the_log_bucket_through_its_policy_not_an_acl(context, env):
    stack, bucket, template = buckets(context, env)
    logs_id = stack.get_logical_id(bucket.access_logs.node.default_child)  # type: ignore[arg-type]
    data_id = stack.get_logical_id(bucket.bucket.node.default_child)  # type: ignore[arg-type]
    log_bucket = template.to_json()["Resources"][logs_id]
    assert "AccessControl" not in log_bucket["Properties"]  # no LogDeliveryWrite ACL
    account = env.account if env else {"Ref": "AWS::AccountId"}
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": logs_id},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        {
                            "Action": "s3:PutObject",
                            "Effect": "Allow",
                            "Principal": {"Service": "logging.s3.amazonaws.com"},
                            "Resource": {"Fn::Join": ["", [{"Fn::GetAtt": [logs_id, "Arn"]}, "/data/*"]]},
                            "Condition": {
                                "ArnLike": {"aws:SourceArn": {"Fn::GetAtt": [data_id, "Arn"]}},
                                "StringEquals": {"aws:SourceAccount": account},
                            },
                        }
                    ]
                )
            },
        },
    )
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {"LoggingConfiguration": {"DestinationBucketName": {"Ref": logs_id}, "LogFilePrefix": "data/"}},
    )


@pytest.mark.parametrize("env", ENVS.values(), ids=ENVS.keys())
def test_the_buckets_do_not_depend_on_the_apps_feature_flags(env):
    """With or without cdk.json's flags the bucket resources are the same (the library's own flags are set)."""

    def storage(context: dict[str, Any]) -> dict[str, Any]:
        resources = buckets(context, env)[2].to_json()["Resources"]
        return {k: v for k, v in resources.items() if v["Type"] in ("AWS::S3::Bucket", "AWS::S3::BucketPolicy")}

    assert storage({}) == storage(CDK_JSON)
