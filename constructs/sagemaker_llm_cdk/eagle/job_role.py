"""The role SageMaker runs the EAGLE optimization jobs under, and the S3 prefix grants the loop hands out.

The job role (``JobRole``) reads the model's weights under their prefix and the training set under its prefix
(``datasets/`` of the artifacts bucket, or the user's dataset), writes only ``jobs/`` with the artifacts key,
writes its logs under ``/aws/sagemaker/`` and, in a VPC, manages the job's network interfaces. The grant of
reading one prefix (GetObject under it, ListBucket limited to it) is shared with the dataset functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import ArnFormat, Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

from ..core import grants
from ..core.settings import _S3_URI
from ..hosting.component_base import weights_owner
from .layout import JOBS

if TYPE_CHECKING:
    from .optimization import EagleOptimization

_DATASET_REASON = (
    "Read-only GetObject under one prefix: the training set is many JSONL shards under the dataset prefix."
)


def add_job_role(
    eagle: EagleOptimization, *, built: bool, dataset_bucket: str, dataset_prefix: str, model_data_key: kms.IKey | None
) -> None:
    """``eagle.job_role`` and its grants; sets ``model_objects_arn`` and ``dataset_objects_arn`` too.

    ``built``: the loop builds the training set under ``datasets/`` of its artifacts bucket; otherwise the job
    reads ``dataset_prefix`` of ``dataset_bucket``."""
    stack = Stack.of(eagle)
    eagle.job_role = iam.Role(
        eagle,
        "JobRole",
        assumed_by=grants.sagemaker_principal(eagle),
        description=f"Role of the EAGLE optimization jobs of {eagle.node.path}: reads the model and the dataset, "
        "writes the job output",
    )
    model_bucket, model_prefix = bucket_and_prefix(eagle.component.spec.model_data_s3_uri)
    eagle.model_objects_arn = grant_read_prefix(
        eagle,
        eagle.job_role,
        "Model",
        model_bucket,
        model_prefix,
        reason="Read-only GetObject under one prefix: the model's weights are many files under the model's S3 prefix.",
        owner=weights_owner(eagle.component.spec),
    )
    eagle.dataset_objects_arn = grant_read_prefix(
        eagle,
        eagle.job_role,
        "Dataset",
        None if built else dataset_bucket,
        dataset_prefix,
        reason=_DATASET_REASON,
        owner=None if built else {"StringEquals": {"s3:ResourceAccount": Aws.ACCOUNT_ID}},
    )
    grants.grant(
        eagle.job_role,
        sid="WriteJobOutput",
        actions=["s3:PutObject", "s3:AbortMultipartUpload"],
        resources=[eagle.artifacts_bucket.arn_for_objects(f"{JOBS}/*")],
        reason="Each optimization job writes its draft head and benchmarks under jobs/<job name>/, a "
        "name made at run time; PutObject only, only under jobs/.",
    )
    eagle.job_role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="ListJobOutput",
            actions=["s3:ListBucket"],
            resources=[eagle.artifacts_bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{JOBS}/*"]}},
        )
    )
    eagle.job_role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="UseArtifactsKey", actions=["kms:Decrypt", "kms:GenerateDataKey"], resources=[eagle.key.key_arn]
        )
    )
    if model_data_key is not None:
        model_data_key.grant_decrypt(eagle.job_role)
    grants.grant(
        eagle.job_role,
        sid="WriteJobLogs",
        actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
        resources=[
            stack.format_arn(
                service="logs",
                resource="log-group",
                resource_name="/aws/sagemaker/*",
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
        ],
        reason="SageMaker writes the job's logs to a log group under /aws/sagemaker/ whose name it chooses (not "
        "documented for optimization jobs); only that path.",
    )
    eagle.job_role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="PublishJobMetrics",
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringLike": {"cloudwatch:namespace": ["/aws/sagemaker/*", "AWS/SageMaker"]}},
        )
    )
    if eagle.component.endpoint.vpc is not None:
        _grant_job_network(eagle)


def _grant_job_network(eagle: EagleOptimization) -> None:
    endpoint = eagle.component.endpoint
    # Resource::* of the job role (these and PutMetricData) is acknowledged once, in acknowledge_eagle.
    eagle.job_role.add_to_principal_policy(
        iam.PolicyStatement(sid="DescribeNetwork", resources=["*"], actions=list(grants.NETWORK_DESCRIBE_ACTIONS))
    )
    grants.grant(
        eagle.job_role,
        sid="ManageJobNetworkInterfaces",
        actions=grants.NETWORK_INTERFACE_ACTIONS,
        resources=grants.network_interface_resources(eagle, endpoint.subnet_ids, endpoint.security_groups),
        reason="SageMaker creates the job's network interfaces in the endpoint's subnets under ids it makes at "
        "run time.",
    )


def grant_read_prefix(
    eagle: EagleOptimization,
    grantee: iam.IGrantable,
    what: str,
    bucket: str | None,
    prefix: str,
    *,
    reason: str,
    owner: dict[str, Any] | None = None,
) -> str:
    """GetObject under ``prefix`` and ListBucket limited to it; ``bucket`` None = the artifacts bucket.
    ``reason`` acknowledges the prefix's wildcard; ``owner``, a condition both statements carry (the bucket's
    ``s3:ResourceAccount``). Returns the objects ARN granted."""
    bucket_arn = eagle.artifacts_bucket.bucket_arn if bucket is None else bucket_arn_of(bucket)
    objects = f"{prefix}*" if not prefix.endswith(".tar.gz") else prefix
    grants.grant(
        grantee,
        sid=f"Read{what}",
        actions=["s3:GetObject"],
        resources=[f"{bucket_arn}/{objects}"],
        conditions=owner,
        reason=reason,
    )
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(
            sid=f"List{what}",
            actions=["s3:ListBucket"],
            resources=[bucket_arn],
            conditions={"StringLike": {"s3:prefix": [objects]}, **(owner or {})},
        )
    )
    return f"{bucket_arn}/{objects}"


def bucket_and_prefix(uri: str) -> tuple[str, str]:
    """The bucket and the key prefix of an ``s3://`` URI the settings models accepted."""
    match = _S3_URI.match(uri)
    assert match, uri  # validated by the settings models
    return match.group("bucket"), match.group("key") or ""


def bucket_arn_of(bucket: str) -> str:
    """The ARN of the bucket named ``bucket``, in the stack's partition."""
    return f"arn:{Aws.PARTITION}:s3:::{bucket}"
