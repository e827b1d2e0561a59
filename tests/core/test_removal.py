"""Teardown: what `cdk destroy` keeps, and `removal: destroy` for non-production environments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment
from aws_cdk.assertions import Template
from sagemaker_llm_cdk import ConfigurationError, load_config, parse_config
from sagemaker_llm_cdk.core.removal import KEY_PENDING_DAYS, removal_note

from stacks import LlmPlatformStack

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
DATA = ("AWS::S3::Bucket", "AWS::Logs::LogGroup", "AWS::KMS::Key", "AWS::DynamoDB::Table")


def build(removal: str, env: Environment | None) -> tuple[dict[str, Any], str]:
    config = load_config(ROOT / "config" / "default.yaml").model_copy(update={"removal": removal})
    app = App(context=json.loads((ROOT / "cdk.json").read_text())["context"])
    stack = LlmPlatformStack(app, "SageMakerLlm", config=config, config_dir=ROOT / "config", env=env)
    note = removal_note(app)
    return Template.from_stack(stack).to_json()["Resources"], note


@pytest.fixture(
    scope="module",
    params=[("retain", None), ("destroy", None), ("destroy", Environment(account="123456789012", region="us-east-1"))],
    ids=["retain-agnostic", "destroy-agnostic", "destroy-bound"],
)
def built(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any], str]:
    removal, env = request.param
    resources, note = build(removal, env)
    return removal, resources, note


def of_type(resources: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in resources.values() if r["Type"] == kind]


def test_data_resources_follow_the_removal_setting(built):
    removal, resources, _ = built
    for kind in DATA:
        found = of_type(resources, kind)
        assert found, kind
        for resource in found:
            if kind == "AWS::DynamoDB::Table" and "TimeToLiveSpecification" in resource["Properties"]:
                assert resource["DeletionPolicy"] == "Delete"  # session table: ids with a TTL, never kept
                continue
            want = "Retain" if removal == "retain" else "Delete"
            assert resource["DeletionPolicy"] == want and resource["UpdateReplacePolicy"] == want, (kind, resource)


def test_destroy_empties_buckets_and_schedules_keys_and_retain_does_neither(built):
    removal, resources, _ = built
    buckets = of_type(resources, "AWS::S3::Bucket")
    auto_delete = of_type(resources, "Custom::S3AutoDeleteObjects")
    keys = of_type(resources, "AWS::KMS::Key")
    if removal == "retain":
        assert not auto_delete and all("PendingWindowInDays" not in k["Properties"] for k in keys)
    else:
        assert len(auto_delete) == len(buckets) == 6  # capture, EAGLE artifacts, the turn log and their access logs
        assert [k["Properties"]["PendingWindowInDays"] for k in keys] == [KEY_PENDING_DAYS] * len(keys)


@pytest.mark.parametrize("removal", ["retain", "destroy"])
def test_a_bought_capacity_plan_is_never_deleted(removal):
    """The purchase lives in the capacity stack of the reserved-capacity example; no removal mode deletes it."""
    config = load_config(ROOT / "config" / "examples" / "reserved-capacity.yaml").model_copy(
        update={"removal": removal}
    )
    app = App(context=json.loads((ROOT / "cdk.json").read_text())["context"])
    stack = LlmPlatformStack(app, "SageMakerLlm", config=config, config_dir=ROOT / "config" / "examples")
    assert stack.capacity is not None
    resources = Template.from_stack(stack.capacity).to_json()["Resources"]
    (plan,) = of_type(resources, "Custom::SageMakerCapacityPlan")
    assert plan["DeletionPolicy"] == "Retain" and plan["UpdateReplacePolicy"] == "Retain"
    note = removal_note(app)
    assert (
        "SageMakerLlmCapacity (removal: " + removal + "): cdk destroy keeps 1 x capacity plan (prepaid, never deleted)"
        in note
    )


def test_the_synth_note_says_what_stays(built):
    removal, _, note = built
    assert "capacity plan" not in note  # the default config buys nothing
    assert "SageMaker's own log groups (/aws/sagemaker/...)" in note
    if removal == "retain":
        (keeps,) = [line for line in note.splitlines() if " keeps " in line and line.startswith("SageMakerLlm ")]
        for part in (
            "1 x DynamoDB table",
            "6 x KMS key",
            "6 x S3 bucket",
            "15 x log group",
            "1 x run-time SSM parameter",
        ):
            assert part in keeps
        assert "set removal: destroy for non-production" in note
        assert "deletes 1 x DynamoDB table (made to be deleted" in note and "emptied" not in note
    else:
        assert (
            "deletes 2 x DynamoDB table, 6 x KMS key, 6 x S3 bucket, 15 x log group, 1 x run-time SSM parameter" in note
        )
        assert f"keys scheduled for deletion in {KEY_PENDING_DAYS} days" in note


def test_an_unknown_removal_mode_is_refused():
    data = {
        "removal": "delete",
        "endpoints": [
            {
                "name": "Chat",
                "instance_type": "ml.g6e.12xlarge",
                "models": [{"name": "m", "model_data_s3_uri": "s3://my-weights/m/"}],
            }
        ],
    }
    with pytest.raises(
        ConfigurationError,
        match=r"removal: got 'delete'; allowed: one of 'retain' or 'destroy'; fix: pick one of the listed values",
    ):
        parse_config(data, source="config/dev.yaml")
