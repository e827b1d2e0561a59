"""The role SageMaker runs the EAGLE benchmark jobs under (``JobRole`` of ``EagleBenchmark``).

A benchmark job invokes this endpoint and this inference component only, writes its results under
``benchmarks/`` of the loop's artifacts bucket with the artifacts key, logs under ``/aws/sagemaker/``, reads the
workload's dataset when it has one (the user's prefix or the front door's turn log, with its key) and, in a
VPC, manages its network interfaces in the endpoint's subnets. The start function passes it to SageMaker only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

from ..core import grants
from .layout import BENCHMARKS

if TYPE_CHECKING:
    from .benchmark import EagleBenchmark


def benchmark_job_role(
    bench: EagleBenchmark,
    eagle: Any,
    *,
    component_arn: str,
    dataset_grant: tuple[str, str] | None,
    dataset_key: kms.IKey | None,
) -> iam.Role:
    """The benchmark jobs' role, with its grants. ``dataset_grant``: (bucket ARN, key prefix) of the workload's
    dataset, if any; ``dataset_key``: the key that dataset is encrypted with, if any."""
    stack = Stack.of(bench)
    endpoint = eagle.component.endpoint
    bucket, key = eagle.artifacts_bucket, eagle.key
    role = iam.Role(
        bench,
        "JobRole",
        assumed_by=grants.sagemaker_principal(bench),
        description=f"Role of the AI benchmark jobs of {eagle.node.path}: invokes the "
        "endpoint, reads the workload, writes benchmarks/",
    )
    grants.grant(
        role,
        sid="InvokeEndpoint",
        actions=[
            "sagemaker:InvokeEndpoint",
            "sagemaker:InvokeEndpointWithResponseStream",
            "sagemaker:DescribeEndpoint",
            "sagemaker:DescribeInferenceComponent",
        ],
        resources=[endpoint.endpoint_arn, component_arn],
    )
    grants.grant(
        role,
        sid="WriteBenchmarks",
        actions=["s3:PutObject", "s3:AbortMultipartUpload"],
        resources=[bucket.arn_for_objects(f"{BENCHMARKS}/*")],
        reason="Each benchmark job writes its results under benchmarks/<job name>/, a name made at run time.",
    )
    grants.grant(
        role,
        sid="ListBenchmarks",
        actions=["s3:ListBucket"],
        resources=[bucket.bucket_arn],
        conditions={"StringLike": {"s3:prefix": [f"{BENCHMARKS}/*"]}},
    )
    grants.grant(
        role,
        sid="UseArtifactsKey",
        actions=["kms:Decrypt", "kms:GenerateDataKey"],
        resources=[key.key_arn],
    )
    grants.grant(
        role,
        sid="WriteBenchmarkLogs",
        actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
        resources=[
            stack.format_arn(
                service="logs",
                resource="log-group",
                resource_name="/aws/sagemaker/*",
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
        ],
        reason="SageMaker jobs log to groups under /aws/sagemaker/ that it names per job type.",
    )
    if dataset_grant is not None:
        _grant_workload(role, dataset_grant, dataset_key)
    if endpoint.vpc is not None:
        grants.grant(
            role,
            sid="DescribeNetwork",
            resources=["*"],
            actions=grants.NETWORK_DESCRIBE_ACTIONS,
            reason="EC2 Describe actions have no resource-level permissions.",
        )
        grants.grant(
            role,
            sid="ManageNetworkInterfaces",
            actions=grants.NETWORK_INTERFACE_ACTIONS,
            resources=grants.network_interface_resources(bench, endpoint.subnet_ids, endpoint.security_groups),
            reason="The job's network interfaces are created at run time in the endpoint's subnets.",
        )
    return role


def _grant_workload(role: iam.Role, dataset_grant: tuple[str, str], dataset_key: kms.IKey | None) -> None:
    """Read (and list) every object under the workload dataset's prefix; decrypt with its key, if any."""
    bucket_arn, prefix = dataset_grant
    grants.grant(
        role,
        sid="ReadWorkload",
        actions=["s3:GetObject"],
        resources=[f"{bucket_arn}/{prefix}*"],
        reason="The workload's dataset is every object under its prefix (read only).",
    )
    grants.grant(
        role,
        sid="ListWorkload",
        actions=["s3:ListBucket"],
        resources=[bucket_arn],
        conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
    )
    if dataset_key is not None:
        grants.grant(role, sid="DecryptWorkload", actions=["kms:Decrypt"], resources=[dataset_key.key_arn])
