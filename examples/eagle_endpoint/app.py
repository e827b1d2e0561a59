#!/usr/bin/env python3
"""EAGLE-enabled endpoint: the model's captured traffic trains an EAGLE draft head every week; a
head that makes decoding at least 1.5x faster is recorded and served from the next deploy.

Two stacks: ``EaglePromotions`` holds the SSM parameter with the approved head and is deployed
first (``cdk deploy --all`` orders them); ``EagleChat`` holds the endpoint and the optimization
loop (Step Functions, Lambda, an encrypted artifacts bucket, a run table).

Run: ``npx cdk synth`` in this folder (its ``cdk.json`` runs ``python3 app.py``) or ``CDK_OUTDIR=out python3 app.py``
(no AWS account needed; see ../README.md to install the library).
"""

from aws_cdk import App, CfnOutput, Environment, Stack
from aws_cdk import aws_iam as iam
from sagemaker_llm_cdk import (
    DataCapture,
    EagleDataset,
    EagleOptimization,
    EagleSettings,
    EndpointOptions,
    LlmEndpoint,
    ModelSpec,
    PromotionParameter,
    apply_checks,
)

app = App()
# Environment-agnostic by default; `-c account=123456789012 -c region=us-east-1` binds the stacks.
env = Environment(account=app.node.try_get_context("account"), region=app.node.try_get_context("region"))
promotions = Stack(app, "EaglePromotions", env=env)
stack = Stack(app, "EagleChat", env=env)

head = PromotionParameter(promotions, "QwenHead", model_name="qwen3-8b")

# Data Capture stores requests and responses as JSON: the loop's training data.
endpoint = LlmEndpoint(
    stack,
    "Chat",
    settings=EndpointOptions(
        instance_type="ml.g6e.12xlarge",
        data_capture=DataCapture(sampling_percentage=20, json_content_types=("application/json",)),
    ),
)
qwen = endpoint.add_model(
    "Qwen",
    ModelSpec(
        name="qwen3-8b",
        model_data_s3_uri="s3://my-weights/qwen3-8b/",
        architecture="Qwen3ForCausalLM",  # from the model's config.json; EAGLE supports a fixed list
        accelerators=1,
        min_memory_mb=32768,
    ),
)
eagle = EagleOptimization(
    stack,
    "QwenEagle",
    component=qwen,
    promotion_parameter=head.parameter,
    settings=EagleSettings(
        schedule="rate(7 days)", speedup_threshold=1.5, dataset=EagleDataset(source="capture", min_new_records=1000)
    ),
)

# An operator role that may start a run by hand (aws stepfunctions start-execution ...), for the people of one IAM
# Identity Center permission set: the trust names who may assume it, not the whole account.
sso_roles = f"arn:{stack.partition}:iam::{stack.account}:role/aws-reserved/sso.amazonaws.com"
operators = f"{sso_roles}/*AWSReservedSSO_MlOperators_*"
operator = iam.Role(
    stack,
    "Operator",
    assumed_by=iam.AccountRootPrincipal().with_conditions({"ArnLike": {"aws:PrincipalArn": operators}}),
)
eagle.grant_start_run(operator)
CfnOutput(stack, "StateMachineArn", value=eagle.state_machine.state_machine_arn)
apply_checks(app)  # cdk-nag AwsSolutions, the policy guard, checkov reasons for the library's resources
app.synth()
