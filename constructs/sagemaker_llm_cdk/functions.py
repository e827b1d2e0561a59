"""Python Lambda functions the library creates: one shape for all of them.

Each function runs on Python 3.13 with Powertools for AWS Lambda from AWS's public layer,
has its own log group (kept one year), X-Ray tracing, and a role with nothing but
permission to write its own logs; callers grant the rest, narrowly.
"""
from __future__ import annotations

from typing import Mapping

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from . import acknowledgements
from ._assets import handler_dir
from .images import powertools_account

POWERTOOLS_LAYER_VERSION = 27
"""Version of the public layer AWSLambdaPowertoolsPythonV3-python313-x86_64 (Powertools 3.x, with pydantic)."""
RUNTIME = lambda_.Runtime.PYTHON_3_13
"""The newest Python runtime for which the pinned Powertools layer version is published."""
METRICS_NAMESPACE = "SageMakerLlm"


def powertools_layer(scope: Construct, id: str = "PowertoolsLayer") -> lambda_.ILayerVersion:
    """AWS's public Powertools layer, once per stack."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(id)
    if existing is not None:
        return existing  # type: ignore[return-value]
    account = powertools_account(stack)  # per partition; a partition without a known account is refused
    arn = (f"arn:{Aws.PARTITION}:lambda:{Aws.REGION}:{account}:layer:"
           f"AWSLambdaPowertoolsPythonV3-python313-x86_64:{POWERTOOLS_LAYER_VERSION}")
    return lambda_.LayerVersion.from_layer_version_arn(stack, id, arn)


def python_function(
    scope: Construct,
    id: str,
    *,
    folder: str,
    handler: str = "index.handler",
    description: str,
    environment: Mapping[str, str] | None = None,
    timeout: Duration = Duration.minutes(1),
    memory_size: int = 256,
    reserved_concurrency: int | None = None,
    code: lambda_.Code | None = None,
) -> lambda_.Function:
    """A function whose code is ``lambda/<folder>/`` (or ``code``, e.g. that folder staged with data files);
    its role may only write its own log group."""
    log_group = logs.LogGroup(
        scope,
        f"{id}Logs",
        retention=logs.RetentionDays.ONE_YEAR,
        removal_policy=RemovalPolicy.RETAIN,
    )
    role = iam.Role(
        scope,
        f"{id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"Runs {description}",
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
            resources=[log_group.log_group_arn],
        )
    )
    function = lambda_.Function(
        scope,
        id,
        runtime=RUNTIME,
        architecture=lambda_.Architecture.X86_64,
        code=code or lambda_.Code.from_asset(handler_dir(folder), exclude=["__pycache__", "*.pyc"]),
        handler=handler,
        description=description,
        role=role,
        log_group=log_group,
        layers=[powertools_layer(scope)],
        tracing=lambda_.Tracing.ACTIVE,
        timeout=timeout,
        memory_size=memory_size,
        reserved_concurrent_executions=reserved_concurrency,
        environment={
            "POWERTOOLS_SERVICE_NAME": folder,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            **(environment or {}),
        },
    )
    acknowledgements.function(function)
    return function
