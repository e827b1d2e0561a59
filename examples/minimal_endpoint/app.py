#!/usr/bin/env python3
"""Minimal endpoint: one model on one GPU instance, invocable by one role.

Run with the library installed (see ../README.md): ``npx cdk synth`` in this folder (its ``cdk.json``
runs ``python3 app.py`` with the feature flags ``cdk init`` sets), or ``CDK_OUTDIR=out python3 app.py``.
No AWS account is needed to synthesize: the stack is environment-agnostic.
"""

from aws_cdk import App, CfnOutput, Environment, Stack
from aws_cdk import aws_iam as iam
from sagemaker_llm_cdk import EndpointOptions, LlmEndpoint, ModelSpec, apply_checks

app = App()
# Environment-agnostic by default; `-c account=123456789012 -c region=us-east-1` binds the stacks.
env = Environment(account=app.node.try_get_context("account"), region=app.node.try_get_context("region"))
stack = Stack(app, "MinimalEndpoint", env=env)

endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
qwen = endpoint.add_model(
    "Qwen",
    ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-weights/qwen3-8b/", accelerators=1, min_memory_mb=32768),
)

# Your application's role: it may invoke this model only.
caller = iam.Role(stack, "ChatApp", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
qwen.grant_invoke(caller)
CfnOutput(stack, "EndpointName", value=endpoint.endpoint_name)

# The library's checks: cdk-nag AwsSolutions (the library acknowledges its own findings, each with a reason;
# yours still fail the synth), the policy guard, and checkov reasons for the library's own resources only.
apply_checks(app)
app.synth()
