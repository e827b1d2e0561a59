#!/usr/bin/env python3
"""Capacity-plan endpoint: an endpoint that runs only on reserved GPU capacity (a SageMaker
training plan), serving a base model and one LoRA adapter.

The plan here is one you already bought (``mode="existing"``): nothing is purchased. The endpoint
binds it through a guard that checks, in seconds at deploy time, that the plan is Active (it fails
the deploy with the plan's status and dates otherwise). To have a stack buy a plan, give
``duration_days`` and ``max_upfront_fee_usd`` instead and deploy with ``-c purchase=<plan name>``
(paid upfront, never refunded; keep the plan in its own stack, see ``CapacityPlanSpec``). A daily
check publishes the plan's days left and alarms before it ends.

Run: ``npx cdk synth`` in this folder (its ``cdk.json`` runs ``python3 app.py``) or ``CDK_OUTDIR=out python3 app.py``
(no AWS account needed; see ../README.md to install the library).
"""

from aws_cdk import App, CfnOutput, Environment, Stack
from aws_cdk import aws_iam as iam
from sagemaker_llm_cdk import (
    AdapterSpec,
    CapacityPlan,
    CapacityPlanSpec,
    CopyScaling,
    EndpointOptions,
    InstanceScaling,
    LlmEndpoint,
    LoraAdapter,
    LoraSettings,
    ModelSpec,
    apply_checks,
)

app = App()
# Environment-agnostic by default; `-c account=123456789012 -c region=us-east-1` binds the stacks.
env = Environment(account=app.node.try_get_context("account"), region=app.node.try_get_context("region"))
stack = Stack(app, "ReservedChat", env=env)

plan = CapacityPlan(
    stack,
    "Plan",
    settings=CapacityPlanSpec(
        mode="existing",
        name="chat-p5e-2027q1",  # the plan's name in this account and region
        instance_type="ml.p5e.48xlarge",  # checked at synth: the endpoint must use the same type ...
        instance_count=2,  # ... and at most this many instances
        expiry_warning_days=7,
    ),
)
endpoint = LlmEndpoint(
    stack,
    "Chat",
    settings=EndpointOptions(
        instance_type="ml.p5e.48xlarge", scaling=InstanceScaling(min_instances=1, max_instances=2)
    ),
    capacity_plan=plan,
)
qwen = endpoint.add_model(
    "Qwen",
    ModelSpec(
        name="qwen3-32b",
        model_data_s3_uri="s3://my-weights/qwen3-32b/",
        accelerators=2,
        min_memory_mb=65536,
        copies=CopyScaling(min_copies=1, max_copies=8, target_concurrent_requests_per_copy=8),
        lora=LoraSettings(max_rank=16),  # the highest rank (r) of the adapters served
    ),
)
support = LoraAdapter(
    qwen,
    "Support",
    base=qwen,
    settings=AdapterSpec(name="qwen3-32b-support", artifact_s3_uri="s3://my-adapters/qwen3-32b/support.tar.gz"),
)

caller = iam.Role(stack, "ChatApp", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
qwen.grant_invoke(caller)
support.grant_invoke(caller)
CfnOutput(stack, "EndpointName", value=endpoint.endpoint_name)
apply_checks(app)  # cdk-nag AwsSolutions, the policy guard, checkov reasons for the library's resources
app.synth()
