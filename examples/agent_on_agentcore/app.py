#!/usr/bin/env python3
"""A LangGraph agent on Amazon Bedrock AgentCore Runtime that thinks with a model on your SageMaker endpoint.

Cost: the endpoint's instance bills per hour while it runs (one ml.g6e.2xlarge; the model scales to zero
copies when idle, the instance stays); AgentCore Runtime bills the agent's CPU and memory per second of
each session (see AgentCore pricing); the ECR image's storage bills per GB-month. Nothing here buys capacity.

What it builds: an endpoint serving Qwen3-8B with tool calling (vLLM's ``hermes`` parser) and reasoning output
(``qwen3``), and an ``AWS::BedrockAgentCore::Runtime`` running the container in ``agent/`` (a LangGraph ReAct
agent, ``sagemaker_llm_cdk.agents.SageMakerChatModel``). The runtime's role may call that one inference
component with ``sagemaker:InvokeEndpoint`` (nothing else on the endpoint), pull its own image from ECR, and
write its logs.

Deploy: build ``agent/`` for linux/arm64 and push it to an ECR repository in the stack's account and region,
then ``npx cdk deploy --parameters AgentRepository=<repository> --parameters AgentImageTag=<tag>``.
Invoke: ``aws bedrock-agentcore invoke-agent-runtime --agent-runtime-arn <output AgentRuntimeArn>
--runtime-session-id <33+ characters> --payload '{"prompt": "What is 17 * 23?"}' out.json`` (the same
session id keeps the conversation). Synthesize without an AWS account: ``npx cdk synth`` or
``CDK_OUTDIR=out python3 app.py``.
"""

from aws_cdk import Acknowledgment, App, Aws, CfnOutput, CfnParameter, Environment, Fn, Stack, Validations
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_iam as iam
from sagemaker_llm_cdk import CopyScaling, EndpointOptions, LlmEndpoint, ModelSpec, acknowledge_resource, apply_checks

app = App()
# Environment-agnostic by default; `-c account=123456789012 -c region=us-east-1` binds the stacks.
env = Environment(account=app.node.try_get_context("account"), region=app.node.try_get_context("region"))
stack = Stack(app, "AgentOnAgentCore", env=env)

endpoint = LlmEndpoint(stack, "Models", settings=EndpointOptions(instance_type="ml.g6e.2xlarge"))
qwen = endpoint.add_model(
    "Qwen",
    ModelSpec(
        name="qwen3-8b",
        model_data_s3_uri="s3://my-weights/qwen3-8b/",
        architecture="Qwen3ForCausalLM",
        accelerators=1,
        min_memory_mb=32768,
        copies=CopyScaling(min_copies=0, max_copies=1),
        tools={},  # vLLM's tool-call parser for Qwen3 (hermes): agents get OpenAI tool_calls
        reasoning={},  # and its reasoning parser (qwen3): the thinking comes apart from the answer
    ),
)

# The agent's container: CloudFormation needs an ECR image URI, and synth builds no image (no Docker needed).
repository = CfnParameter(
    stack,
    "AgentRepository",
    type="String",
    allowed_pattern=r"^[a-z0-9][a-z0-9._/-]{1,255}$",
    description="ECR repository (in this account and region) holding the image built from agent/",
    constraint_description="an ECR repository name, e.g. sagemaker-agents/react-agent",
)
tag = CfnParameter(
    stack,
    "AgentImageTag",
    type="String",
    allowed_pattern=r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$",
    description="the image's tag (built for linux/arm64)",
    constraint_description="an image tag, e.g. v1",
)
image_uri = Fn.join(
    "",
    [
        Aws.ACCOUNT_ID,
        ".dkr.ecr.",
        Aws.REGION,
        ".",
        Aws.URL_SUFFIX,
        "/",
        repository.value_as_string,
        ":",
        tag.value_as_string,
    ],
)
repository_arn = stack.format_arn(service="ecr", resource="repository", resource_name=repository.value_as_string)

role = iam.Role(
    stack,
    "AgentRole",
    assumed_by=iam.ServicePrincipal(
        "bedrock-agentcore.amazonaws.com",
        conditions={
            "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
            "ArnLike": {"aws:SourceArn": stack.format_arn(service="bedrock-agentcore", resource="*")},
        },
    ),
    description="AgentCore Runtime: the agent calls one inference component, pulls its image, writes its logs",
)
# Exactly what the agent calls: InvokeEndpoint on the endpoint and this component (IAM checks both ARNs).
role.add_to_policy(
    iam.PolicyStatement(actions=["sagemaker:InvokeEndpoint"], resources=[endpoint.endpoint_arn, qwen.component_arn])
)
role.add_to_policy(
    iam.PolicyStatement(actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"], resources=[repository_arn])
)
role.add_to_policy(iam.PolicyStatement(actions=["ecr:GetAuthorizationToken"], resources=["*"]))
# AgentCore names the runtime's log groups /aws/bedrock-agentcore/runtimes/<runtime id>-<endpoint>, the id being
# <runtime name>-<suffix AgentCore picks>: known only once the runtime exists, so a wildcard after the name.
RUNTIME_NAME = "react_agent"
runtime_logs = (
    f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:/aws/bedrock-agentcore/runtimes/{RUNTIME_NAME}-*"
)
LOG_ACTIONS = ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"]
role.add_to_policy(iam.PolicyStatement(actions=LOG_ACTIONS, resources=[runtime_logs]))
# AgentCore Runtime's observability, as AWS lists it for the execution role: traces to X-Ray and metrics in the
# bedrock-agentcore namespace. None of these actions has a resource type, so each takes only *.
XRAY_ACTIONS = ["xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"]
role.add_to_policy(iam.PolicyStatement(actions=XRAY_ACTIONS, resources=["*"]))
role.add_to_policy(
    iam.PolicyStatement(
        actions=["cloudwatch:PutMetricData"],
        resources=["*"],
        conditions={"StringEquals": {"cloudwatch:namespace": "bedrock-agentcore"}},
    )
)

runtime = agentcore.CfnRuntime(
    stack,
    "Agent",
    agent_runtime_name=RUNTIME_NAME,
    description="LangGraph ReAct agent on the qwen3-8b inference component",
    role_arn=role.role_arn,
    agent_runtime_artifact=agentcore.CfnRuntime.AgentRuntimeArtifactProperty(
        container_configuration=agentcore.CfnRuntime.ContainerConfigurationProperty(container_uri=image_uri)
    ),
    network_configuration=agentcore.CfnRuntime.NetworkConfigurationProperty(network_mode="PUBLIC"),
    protocol_configuration="HTTP",
    environment_variables={"ENDPOINT_NAME": endpoint.endpoint_name, "COMPONENT_NAME": qwen.component_name},
)
# Created once its role may pull the image and write logs (the role itself is already referenced).
runtime.add_resource_dependency(role.node.find_child("DefaultPolicy").node.default_child)

# Your own resources' findings are yours to acknowledge, each with its reason (and, for the policy guard, the
# actions it covers: an action added later on the same wildcard fails the synth).
Validations.of(role).acknowledge(
    Acknowledgment(
        id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        reason="ecr:GetAuthorizationToken, the X-Ray actions and cloudwatch:PutMetricData (limited to the "
        "bedrock-agentcore namespace) have no resource-level permissions: they take only *",
    )
)
acknowledge_resource(
    role,
    runtime_logs,
    "AgentCore names the runtime's log groups after the runtime id, known only once it exists",
    actions=LOG_ACTIONS,
)

CfnOutput(stack, "AgentRuntimeArn", value=runtime.attr_agent_runtime_arn)
CfnOutput(stack, "ComponentName", value=qwen.component_name)
apply_checks(app)  # cdk-nag AwsSolutions, the policy guard, checkov reasons for the library's resources
app.synth()
