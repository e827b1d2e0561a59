"""Python Lambda functions the library creates: one shape for all of them.

Each function runs on Python 3.13 with Powertools for AWS Lambda from AWS's public layer,
has its own log group (kept one year), X-Ray tracing, and a role with nothing but
permission to write its own logs; callers grant the rest, narrowly.

Packages shipped with the code (``bundling``, installed at synth from the registry's wheels, no Docker):
functions whose folder is in ``SDK_FOLDERS`` (they call SageMaker APIs newer than the runtime's boto3)
get the stack's ``AwsSdkLayer`` with the pinned boto3/botocore of ``lambda/sdk-requirements.txt``; a
folder with its own ``requirements.txt`` gets those packages inside its asset.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import custom_resources as cr

from constructs import Construct

from . import bundling
from ._assets import handler_dir, staged_handler
from .accounts import powertools_account
from .grants import acknowledge_wildcard_only
from .nag import acknowledge

POWERTOOLS_LAYER_VERSION = 27
"""Version of the public layer AWSLambdaPowertoolsPythonV3-python313-x86_64 (Powertools 3.x, with pydantic)."""
RUNTIME = lambda_.Runtime.PYTHON_3_13
"""The newest Python runtime for which the pinned Powertools layer version is published."""
METRICS_NAMESPACE = "SageMakerLlm"
_DEFAULT_TIMEOUT = Duration.minutes(1)
"""``python_function``'s default timeout."""


def powertools_layer(scope: Construct, id: str = "PowertoolsLayer") -> lambda_.ILayerVersion:
    """AWS's public Powertools layer, once per stack."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(id)
    if existing is not None:
        return existing  # type: ignore[return-value]
    account = powertools_account(stack)  # per partition; a partition without a known account is refused
    arn = (
        f"arn:{Aws.PARTITION}:lambda:{Aws.REGION}:{account}:layer:"
        f"AWSLambdaPowertoolsPythonV3-python313-x86_64:{POWERTOOLS_LAYER_VERSION}"
    )
    return lambda_.LayerVersion.from_layer_version_arn(stack, id, arn)


SDK_FOLDERS = frozenset(
    {
        "eagle_job",
        "eagle_serving_model",
        "capacity_plan",
        "capacity_plan_expiry",
        "deployment_check",
        "inference_router",
    }
)
"""Handler folders whose functions call SageMaker and so run with the pinned SDK layer, not the runtime's boto3."""
SDK_REQUIREMENTS = "sdk-requirements.txt"


def sdk_requirements() -> Path:
    """``lambda/sdk-requirements.txt``: the exact boto3/botocore (and dependencies) the SDK layer holds."""
    return Path(handler_dir("eagle_job")).parent / SDK_REQUIREMENTS


def sdk_layer(scope: Construct, id: str = "AwsSdkLayer") -> lambda_.ILayerVersion:
    """The pinned AWS SDK as a Lambda layer, once per stack (one asset for every stack of the app)."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(id)
    if existing is not None:
        return existing  # type: ignore[return-value]
    requirements = sdk_requirements()
    pins = bundling.pinned_versions(requirements)
    return lambda_.LayerVersion(
        stack,
        id,
        code=bundling.packages_code(requirements),
        compatible_runtimes=[RUNTIME],
        compatible_architectures=[lambda_.Architecture.X86_64],
        description=f"boto3 {pins.get('boto3')} / botocore {pins.get('botocore')} for the sagemaker-llm-cdk functions",
    )


def python_function(
    scope: Construct,
    id: str,
    *,
    folder: str,
    handler: str = "index.handler",
    description: str,
    environment: Mapping[str, str] | None = None,
    timeout: Duration = _DEFAULT_TIMEOUT,
    memory_size: int = 256,
    reserved_concurrency: int | None = None,
    code: lambda_.Code | None = None,
    dead_letter_queue: sqs.IQueue | None = None,
) -> lambda_.Function:
    """A function whose code is ``lambda/<folder>/`` plus the handlers' shared package ``llm_cdk_shared``
    (``_assets.staged_handler``), or ``code`` (e.g. that staged folder with data files added);
    its role may only write its own log group. ``dead_letter_queue`` keeps the asynchronous events that still
    fail after Lambda's retries (for a function invoked asynchronously, such as by EventBridge Scheduler)."""
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
    if code is None:
        source = Path(staged_handler(folder))  # the folder plus the shared package llm_cdk_shared
        requirements = source / "requirements.txt"
        if requirements.is_file():
            code = bundling.handler_code(source, requirements)
        else:
            code = lambda_.Code.from_asset(str(source), exclude=["__pycache__", "*.pyc"])
    layers = [powertools_layer(scope)]
    if folder in SDK_FOLDERS:
        layers.append(sdk_layer(scope))
    function = lambda_.Function(
        scope,
        id,
        runtime=RUNTIME,
        architecture=lambda_.Architecture.X86_64,
        code=code,
        handler=handler,
        description=description,
        role=role,
        log_group=log_group,
        layers=layers,
        tracing=lambda_.Tracing.ACTIVE,
        timeout=timeout,
        memory_size=memory_size,
        reserved_concurrent_executions=reserved_concurrency,
        dead_letter_queue=dead_letter_queue,
        environment={
            "POWERTOOLS_SERVICE_NAME": folder,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            **(environment or {}),
        },
    )
    _acknowledge_function(function)
    return function


def _acknowledge_function(function: Any) -> None:
    """Every Lambda function made by ``functions.python_function``."""
    acknowledge(
        function,
        "AwsSolutions-L1",
        "Runtime is Python 3.13, the newest runtime the pinned Powertools public layer version is published "
        "for; functions.RUNTIME and POWERTOOLS_LAYER_VERSION move together.",
    )
    acknowledge_wildcard_only(
        function.role,
        "X-Ray PutTraceSegments and PutTelemetryRecords have no resource-level permissions; tracing needs them on '*'.",
    )


def provider_framework(
    scope: Construct, *, on_event: lambda_.Function, description: str
) -> tuple[cr.Provider, iam.Role]:
    """The custom resource framework (``custom_resources.Provider``) of one handler, as every construct of the library
    makes it: children ``ProviderLogs`` (kept one year), ``ProviderRole`` (it may only write those logs; the Provider
    grants it the invoke of ``on_event``) and ``Provider``. Returns ``(provider, role)``; the caller acknowledges the
    role's ``<function ARN>:*`` invoke with its own reason (``nag.acknowledge_resource``)."""
    framework_logs = logs.LogGroup(
        scope, "ProviderLogs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.RETAIN
    )
    role = iam.Role(
        scope, "ProviderRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=description
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[framework_logs.log_group_arn]
        )
    )
    provider = cr.Provider(
        scope, "Provider", on_event_handler=on_event, framework_on_event_role=role, log_group=framework_logs
    )
    return provider, role
