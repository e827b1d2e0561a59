"""The front door's turn log holds people's text: it expires by config and only the roles that need it read it."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match, Template
from sagemaker_llm_cdk import (
    ConfigurationError,
    EagleOptimization,
    EndpointOptions,
    LlmEndpoint,
    ModelSpec,
    PromotionParameter,
)
from sagemaker_llm_cdk.core.storage import NONCURRENT_VERSION_DAYS, READ_ACTIONS
from sagemaker_llm_cdk.sessions.turn_log import ERROR_PREFIX

pytestmark = pytest.mark.synth

ENV = Environment(account="123456789012", region="us-east-1")
MODEL = "qwen3-8b"


def build(*, sessions: dict[str, Any] | None = None, turn_log_kwargs: dict[str, Any] | None = None) -> Any:
    from sagemaker_llm_cdk import SessionFrontDoor, TurnLog

    app = App()
    promos = Stack(app, "Promos", env=ENV)
    stack = Stack(app, "Main", env=ENV)
    llm = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    component = llm.add_model(
        "Qwen",
        ModelSpec(
            name=MODEL,
            model_data_s3_uri="s3://my-weights/qwen3-8b/",
            architecture="Qwen3ForCausalLM",
            sessions=sessions or {},
        ),
    )
    front_door = SessionFrontDoor(stack, "FrontDoor", endpoint=llm, default_component=component)
    turn_log = TurnLog(stack, "Turns", **(turn_log_kwargs or {}))
    front_door.log_turns(turn_log)
    eagle = EagleOptimization(
        stack,
        "QwenEagle",
        component=component,
        turn_log=turn_log,
        promotion_parameter=PromotionParameter(promos, "QwenHead", model_name=MODEL).parameter,
        settings={"dataset": {"source": "front_door"}},
    )
    return stack, turn_log, eagle


def resources(stack: Stack) -> dict[str, Any]:
    return Template.from_stack(stack).to_json()["Resources"]


def logical_id(stack: Stack, construct: Any) -> str:
    return str(stack.resolve(construct.node.default_child.logical_id))


@pytest.fixture(scope="module")
def built() -> Any:
    return build(sessions={"turn_log_retention_days": 14})


def test_turns_expire_after_the_front_doors_setting_and_old_versions_after_a_week(built):
    stack, turn_log, _ = built
    bucket = resources(stack)[logical_id(stack, turn_log.bucket)]
    rules = {r["Id"]: r for r in bucket["Properties"]["LifecycleConfiguration"]["Rules"]}

    # Every object, the failed deliveries under front-door-errors/ (full turns too) included.
    assert rules["ExpireAllObjects"] == {"Id": "ExpireAllObjects", "ExpirationInDays": 14, "Status": "Enabled"}
    assert rules["ExpireNoncurrentVersions"]["NoncurrentVersionExpiration"] == {
        "NoncurrentDays": NONCURRENT_VERSION_DAYS
    }
    assert turn_log.retention_days == 14


def test_only_the_roles_granted_to_read_turns_may_read_or_decrypt_them(built):
    stack, turn_log, eagle = built
    found = resources(stack)
    bucket_id = logical_id(stack, turn_log.bucket)
    (policy,) = [
        r
        for r in found.values()
        if r["Type"] == "AWS::S3::BucketPolicy" and r["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    (deny,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s.get("Sid") == "OnlyNamedRolesRead"]
    readers = deny["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]

    assert deny["Effect"] == "Deny" and deny["Principal"] == {"AWS": "*"} and deny["Action"] == list(READ_ACTIONS)
    dataset_roles = {logical_id(stack, f.role) for f in (eagle.convert_function,) if f.role is not None}
    assert dataset_roles and all({"Fn::GetAtt": [r, "Arn"]} in readers for r in dataset_roles)
    delivery = {"Fn::GetAtt": [logical_id(stack, turn_log.role), "Arn"]}
    assert delivery not in readers  # Firehose writes; it never reads a turn
    key = found[logical_id(stack, turn_log.bucket.encryption_key)]
    (key_deny,) = [
        s
        for s in key["Properties"]["KeyPolicy"]["Statement"]
        if s.get("Sid", "").startswith("OnlyNamedRolesDecryptThroughS3")
    ]
    assert (
        key_deny["Effect"] == "Deny"
        and key_deny["Condition"]["StringEquals"]["kms:ViaService"] == "s3.us-east-1.amazonaws.com"
    )


def test_a_turn_log_alone_keeps_turns_30_days():
    from sagemaker_llm_cdk import TurnLog

    stack = Stack(App(), "Alone", env=ENV)
    turn_log = TurnLog(stack, "Turns")
    Template.from_stack(stack).has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LifecycleConfiguration": {
                "Rules": Match.array_with([{"Id": "ExpireAllObjects", "ExpirationInDays": 30, "Status": "Enabled"}])
            }
        },
    )
    assert turn_log.retention_days == 30


def test_a_given_bucket_expires_both_prefixes_and_is_told_who_reads_it_is_its_own_business():
    from sagemaker_llm_cdk import TurnLog

    stack = Stack(App(), "Given", env=ENV)
    bucket = s3.Bucket(stack, "Mine")
    TurnLog(stack, "Turns", bucket=bucket, retention_days=10)
    Template.from_stack(stack).has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LifecycleConfiguration": {
                "Rules": [
                    {"Id": "ExpireTurns", "Prefix": "front-door/", "ExpirationInDays": 10, "Status": "Enabled"},
                    {"Id": "ExpireFailedTurns", "Prefix": ERROR_PREFIX, "ExpirationInDays": 10, "Status": "Enabled"},
                ]
            }
        },
    )
    Annotations.from_stack(stack).has_warning("/Given/Turns", Match.string_like_regexp("who may read them"))


def test_retention_given_to_the_turn_log_must_agree_with_the_front_door():
    with pytest.raises(
        ConfigurationError,
        match=r"retention_days: got 10; allowed: 14, the turn_log_retention_days "
        r"of Main/FrontDoor",
    ):
        build(sessions={"turn_log_retention_days": 14}, turn_log_kwargs={"retention_days": 10})


@pytest.mark.parametrize("days", [0, 3651, 1.5])
def test_turn_log_retention_days_is_validated(days):
    from sagemaker_llm_cdk import TurnLog

    with pytest.raises(ConfigurationError, match=r"retention_days: got .*; allowed: whole days from 1 to 3650"):
        TurnLog(Stack(App(), "Bad"), "Turns", retention_days=days)
