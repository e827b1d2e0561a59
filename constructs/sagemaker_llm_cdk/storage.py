"""Secure defaults for the buckets and keys the library creates."""
from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct


def secure_key(scope: Construct, id: str, *, description: str) -> kms.Key:
    """A customer-managed KMS key with yearly rotation, kept when the stack is deleted."""
    return kms.Key(
        scope,
        id,
        description=description,
        enable_key_rotation=True,
        removal_policy=RemovalPolicy.RETAIN,
    )


class SecureBucket(Construct):
    """A bucket that is TLS-only, private, versioned, KMS-encrypted, access-logged and retained.

    The access-log bucket uses S3-managed keys because S3 server access logging cannot
    deliver to a bucket encrypted with a customer-managed key.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        encryption_key: kms.IKey,
        access_logs: s3.IBucket | None = None,
        noncurrent_version_days: int = 90,
    ) -> None:
        super().__init__(scope, id)
        if access_logs is None:
            access_logs = s3.Bucket(
                self,
                "AccessLogs",
                encryption=s3.BucketEncryption.S3_MANAGED,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                enforce_ssl=True,
                versioned=True,
                object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
                removal_policy=RemovalPolicy.RETAIN,
                lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(365))],
            )
        self.access_logs = access_logs
        self.bucket = s3.Bucket(
            self,
            "Resource",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=encryption_key,
            bucket_key_enabled=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix=f"{id.lower()}/",
            removal_policy=RemovalPolicy.RETAIN,
            lifecycle_rules=[s3.LifecycleRule(noncurrent_version_expiration=Duration.days(noncurrent_version_days))],
        )
