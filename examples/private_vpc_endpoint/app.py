#!/usr/bin/env python3
"""Production network layout: an endpoint in private subnets with no route to the internet.

The VPC has isolated subnets only (no NAT gateway, no internet gateway) and one S3 gateway
endpoint (free), which carries the instances' S3 traffic: Data Capture writes. The model runs
with network isolation (the library's default, ``ModelSpec.network_isolation``): its container
has no network at all; SageMaker itself mounts the weights from S3 and pulls the LMI image. The
security group allows outbound traffic, but the subnets' only routes are the VPC itself and the
S3 gateway endpoint, so nothing leaves the VPC except to S3 in this region.

Synthesize with the library installed: ``cdk synth --app "python app.py"`` or
``CDK_OUTDIR=out python app.py``; environment-agnostic unless given ``-c account=... -c region=...``.
"""

from aws_cdk import App, CfnOutput, Environment, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from sagemaker_llm_cdk import EndpointOptions, LlmEndpoint, ModelSpec, apply_checks, checkov_skip

app = App()
# Environment-agnostic by default; `-c account=123456789012 -c region=us-east-1` binds the stack.
env = Environment(account=app.node.try_get_context("account"), region=app.node.try_get_context("region"))
stack = Stack(app, "PrivateChat", env=env)

vpc = ec2.Vpc(
    stack,
    "Vpc",
    max_azs=2,
    nat_gateways=0,
    subnet_configuration=[
        ec2.SubnetConfiguration(name="Private", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=20)
    ],
    gateway_endpoints={"S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3)},
    flow_logs={"All": ec2.FlowLogOptions(traffic_type=ec2.FlowLogTrafficType.ALL)},
)

endpoint = LlmEndpoint(
    stack,
    "Chat",
    settings=EndpointOptions(instance_type="ml.g6e.12xlarge"),
    vpc=vpc,
    vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
)
qwen = endpoint.add_model(
    "Qwen",
    ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-weights/qwen3-8b/", accelerators=1, min_memory_mb=32768),
)

caller = iam.Role(stack, "ChatApp", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
qwen.grant_invoke(caller)
CfnOutput(stack, "EndpointName", value=endpoint.endpoint_name)

# Your own resources get none of the library's checkov skips: acknowledge each finding on them with your reason.
checkov_skip(
    vpc.node.find_child("All").node.find_child("LogGroup"),
    "CKV_AWS_158",
    "VPC flow log records hold addresses, ports and verdicts, no payload; CloudWatch Logs encrypts them at rest.",
)
# CDK empties the default security group with a handler of its own (feature flag restrictDefaultSecurityGroup).
provider = stack.node.try_find_child("Custom::VpcRestrictDefaultSGCustomResourceProvider")
for check, why in (
    ("CKV_AWS_115", "runs once per deployment to empty the default security group's rules"),
    ("CKV_AWS_116", "invoked synchronously by CloudFormation: a failure fails the deployment"),
    ("CKV_AWS_117", "calls only the EC2 API; the VPC it would run in has no route to it"),
):
    if provider is not None:
        checkov_skip(provider.node.find_child("Handler"), check, f"CDK's default-security-group handler: {why}.")
apply_checks(app)  # cdk-nag AwsSolutions, the policy guard, checkov reasons for the library's resources
app.synth()
