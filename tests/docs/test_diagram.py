"""tools/diagram.py: the picture shows the system; CDK's own machinery (provider frameworks, waiter state
machines, log-retention functions, bucket-notification handlers, hashed singletons) is left out and edges
through it join their ends."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_cdk import App, CustomResource, Duration, Environment, RemovalPolicy, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import custom_resources as cr

from tools.diagram import collect, is_internal, mermaid

pytestmark = pytest.mark.synth

CODE = lambda_.Code.from_inline("def handler(event, context):\n    return {}\n")


def function(stack: Stack, name: str, **kwargs) -> lambda_.Function:
    return lambda_.Function(
        stack, name, runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler", code=CODE, **kwargs
    )


def synth(out: Path, env: Environment | None = None) -> Path:
    app = App(outdir=str(out), context={"aws:cdk:enable-path-metadata": True})
    stack = Stack(app, "System", env=env)
    on_event, is_complete = function(stack, "OnEvent"), function(stack, "IsComplete")
    provider = cr.Provider(
        stack,
        "Provider",
        on_event_handler=on_event,
        is_complete_handler=is_complete,
        query_interval=Duration.seconds(30),
        total_timeout=Duration.minutes(30),
    )
    CustomResource(stack, "Check", service_token=provider.service_token, resource_type="Custom::Check")
    bucket = s3.Bucket(stack, "Uploads", removal_policy=RemovalPolicy.DESTROY, auto_delete_objects=True)
    bucket.add_event_notification(s3.EventType.OBJECT_CREATED, s3n.LambdaDestination(function(stack, "Ingest")))
    function(stack, "Reporter", log_retention=logs.RetentionDays.ONE_WEEK)
    app.synth()
    return out


def test_internal_resources_are_left_out_and_edges_join_through_them(tmp_path: Path) -> None:
    for env in (None, Environment(account="123456789012", region="us-east-1")):
        nodes = collect(synth(tmp_path / str(env is None), env))
        labels = sorted(n.label for n in nodes.values())
        assert labels == [
            "Custom resource: Check",
            "Lambda: Ingest",
            "Lambda: IsComplete",
            "Lambda: OnEvent",
            "Lambda: Reporter",
            "S3 bucket: Uploads",
        ], labels
        by_label = {n.label: n.key for n in nodes.values()}
        check = nodes[by_label["Custom resource: Check"]]
        # Custom resource -> framework-onEvent -> (OnEvent, waiter state machine -> framework-isComplete -> IsComplete)
        assert check.refs == {by_label["Lambda: OnEvent"], by_label["Lambda: IsComplete"]}
        text = mermaid(nodes)
        for hidden in ("framework", "waiter", "LogRetention", "BucketNotificationsHandler", "CustomResourceProvider"):
            assert hidden not in text


def test_is_internal_names_what_it_leaves_out() -> None:
    assert is_internal("AWS::Lambda::Function", "S/Plan/Provider/framework-onEvent/Resource")
    assert is_internal("AWS::StepFunctions::StateMachine", "S/Plan/Provider/waiter-state-machine/Resource")
    assert is_internal("AWS::Lambda::Function", "S/LogRetentionaae0aa3c5b4d4f87b02d85b201efdd8a/Resource")
    assert is_internal("AWS::Lambda::Function", "S/AWS679f53fac002430cb0da5b7982bd2287/Resource")
    assert is_internal("Custom::S3BucketNotifications", "S/Uploads/Notifications/Resource")
    assert not is_internal("AWS::Lambda::Function", "S/Plan/OnEvent/Resource")
    assert not is_internal("AWS::SageMaker::Endpoint", "S/Chat/Resource")
