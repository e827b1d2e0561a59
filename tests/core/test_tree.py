"""core/tree.py: synth-time passes from Python instead of a Python Aspect the Node kernel calls per construct."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, CfnResource, Environment, Stack, Stage
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from sagemaker_llm_cdk import EndpointOptions, LlmEndpoint, ModelSpec
from sagemaker_llm_cdk.core.checkov import checkov_defaults, made_by_library
from sagemaker_llm_cdk.core.storage import SecureBucket
from sagemaker_llm_cdk.core.tree import PASS_ID, at_synth, constructs_in, key, library_made, resource_type

pytestmark = pytest.mark.synth

BOUND = Environment(account="123456789012", region="us-east-1")


def library_app(env: Environment | None = None) -> tuple[App, Stack]:
    app = App()
    stack = Stack(app, "Endpoint", env=env)
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-weights/qwen3-8b/"))
    logs.LogGroup(stack, "MyLogs")  # not the library's
    return app, stack


@pytest.mark.parametrize("env", [None, BOUND], ids=["agnostic", "bound"])
def test_library_made_answers_as_made_by_library_for_every_construct(env: Environment | None) -> None:
    app, stack = library_app(env)
    nodes = constructs_in(app)
    made = library_made(app, nodes)
    assert {key(n) for n in nodes if made_by_library(n)} == made
    paths = {n.node.path for n in nodes if key(n) in made}
    assert "Endpoint/Chat/Resource" in paths and "Endpoint/MyLogs/Resource" not in paths
    assert "Endpoint/Chat" not in paths  # the library construct itself is not made inside one
    # Scoped at the stack, and at a construct inside a library construct (everything under it is the library's).
    assert library_made(stack) == made
    chat = stack.node.find_child("Chat")
    inner = chat.node.find_child("Resource")
    assert library_made(inner) == {key(inner)}


def test_resource_type_reads_the_l1_class_and_asks_a_plain_resource() -> None:
    app = App()
    stack = Stack(app, "S")
    bucket = s3.CfnBucket(stack, "B")
    plain = CfnResource(stack, "P", type="AWS::Logs::LogGroup")
    assert resource_type(bucket) == "AWS::S3::Bucket" == bucket.cfn_resource_type
    assert resource_type(plain) == "AWS::Logs::LogGroup"
    proxy = stack.node.find_child("B")  # a construct handed back by the kernel: same answer
    assert resource_type(proxy) == "AWS::S3::Bucket"  # type: ignore[arg-type]


def test_constructs_in_stops_at_nested_stages_as_aspects_do() -> None:
    app = App()
    top = Stack(app, "Top")
    stage = Stage(app, "Dev")
    inner = Stack(stage, "Inner")
    s3.CfnBucket(inner, "B")
    paths = [n.node.path for n in constructs_in(app)]
    assert paths[0] == "" and "Top" in paths
    assert not any(p.startswith("Dev") for p in paths)
    assert [n.node.path for n in constructs_in(stage)][:2] == ["Dev", "Dev/Inner"]
    assert top.node.path == "Top"


def test_at_synth_runs_once_per_synth_after_the_app_is_built(tmp_path: Path) -> None:
    app = App(outdir=str(tmp_path))
    seen: list[list[str]] = []
    at_synth(app, lambda: seen.append([n.node.path for n in constructs_in(app)]))
    at_synth(app, lambda: seen.append(["second"]))
    stack = Stack(app, "Later")  # added after at_synth: the pass sees it
    s3.CfnBucket(stack, "B")
    assert seen == []
    app.synth()
    assert len(seen) == 2 and "Later/B" in seen[0] and seen[1] == ["second"]
    assert len(app.node.find_child(PASS_ID).node.children) == 0  # one leaf, no resources
    body = json.loads((tmp_path / "Later.template.json").read_text())
    assert list(body["Resources"]) == ["B"]


def test_checkov_defaults_cover_resources_added_after_the_call(tmp_path: Path) -> None:
    app = App(outdir=str(tmp_path))
    checkov_defaults(app)  # before anything exists
    stack = Stack(app, "Endpoint", env=BOUND)
    SecureBucket(stack, "Data", encryption_key=kms.Key(stack, "Key"))  # makes its access-log bucket: CKV_AWS_18
    logs.LogGroup(stack, "MyLogs")
    s3.Bucket(stack, "MyBucket")
    app.synth()
    body = json.loads((tmp_path / "Endpoint.template.json").read_text())
    skipped = {
        logical: [s["id"] for s in r.get("Metadata", {}).get("checkov", {}).get("skip", [])]
        for logical, r in body["Resources"].items()
    }
    buckets = sorted(k for k, r in body["Resources"].items() if r["Type"] == "AWS::S3::Bucket")
    assert {b: skipped[b] for b in buckets if skipped[b]} == {
        next(b for b in buckets if "AccessLogs" in b): ["CKV_AWS_18"]
    }
    assert len(buckets) == 3 and any(b.startswith("MyBucket") for b in buckets)
    assert skipped[next(k for k in body["Resources"] if k.startswith("MyLogs"))] == []
