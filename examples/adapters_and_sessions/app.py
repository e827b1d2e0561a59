#!/usr/bin/env python3
"""Endpoint with LoRA adapters and sessions: a base model, two adapters loaded on demand, and a
session front door (Lambda Function URL, IAM auth) that keeps each conversation on one instance.

Run: ``npx cdk synth`` in this folder (its ``cdk.json`` runs ``python3 app.py``) or ``CDK_OUTDIR=out python3 app.py``
(no AWS account needed; see ../README.md to install the library).
"""

from aws_cdk import App, CfnOutput, Environment, Stack
from aws_cdk import aws_iam as iam
from sagemaker_llm_cdk import (
    AdapterSpec,
    CopyScaling,
    EndpointOptions,
    LlmEndpoint,
    LoraAdapter,
    LoraSettings,
    ModelSpec,
    SessionFrontDoor,
    SessionSettings,
    apply_checks,
)

app = App()
# Environment-agnostic by default; `-c account=123456789012 -c region=us-east-1` binds the stacks.
env = Environment(account=app.node.try_get_context("account"), region=app.node.try_get_context("region"))
stack = Stack(app, "ChatWithAdapters", env=env)

endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
base = endpoint.add_model(
    "Qwen",
    ModelSpec(
        name="qwen3-8b",
        model_data_s3_uri="s3://my-weights/qwen3-8b/",
        accelerators=1,
        min_memory_mb=32768,
        copies=CopyScaling(min_copies=1, max_copies=4),
        lora=LoraSettings(
            max_gpu_adapters=4,
            max_cpu_adapters=16,  # adapters live on GPU, then CPU, then disk
            max_rank=16,
        ),  # the highest rank (r in adapter_config.json) of the adapters served
        sessions=SessionSettings(expiration_seconds=1800),  # stateful sessions in the LMI container
    ),
)
# Each adapter is its own inference component, named <stack name>-<name> (adapter.component_name):
# callers pass that as InferenceComponentName.
sql = LoraAdapter(
    base,
    "Sql",
    base=base,
    settings=AdapterSpec(name="qwen3-8b-sql", artifact_s3_uri="s3://my-adapters/qwen3-8b/sql.tar.gz"),
)
support = LoraAdapter(
    base,
    "Support",
    base=base,
    settings=AdapterSpec(name="qwen3-8b-support", artifact_s3_uri="s3://my-adapters/qwen3-8b/support.tar.gz"),
)

# Multi-turn chat, SigV4-signed: POST /open {"component": "ChatWithAdapters-qwen3-8b-sql"} -> conversation_id, then
# POST /invoke {"conversation_id": ..., "body": {...}} (see sagemaker_llm_cdk.client.SessionClient).
front_door = SessionFrontDoor(stack, "FrontDoor", endpoint=endpoint, default_component=base, components=[sql, support])
chat_app = iam.Role(stack, "ChatApp", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
front_door.grant_invoke_url(chat_app)
# A batch job that calls one adapter directly, without sessions.
reports = iam.Role(stack, "Reports", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
sql.grant_invoke(reports)

CfnOutput(stack, "FrontDoorUrl", value=front_door.url)
apply_checks(app)  # cdk-nag AwsSolutions, the policy guard, checkov reasons for the library's resources
app.synth()
