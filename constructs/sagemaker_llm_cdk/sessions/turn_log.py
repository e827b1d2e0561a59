"""``TurnLog``: every completed front-door turn as chat-completions JSONL in S3, through Kinesis Data Firehose.

A second EAGLE dataset source that does not depend on Data Capture (part of Model Monitor, which AWS
has closed to new customers). The session front door's function (``lambda/session_router/turn_log.py``)
puts one record per completed turn (buffered turns as it answers them, streamed ones as the client sends them to
its ``POST /log`` after the stream)::

    {"component": "<inference component>", "messages": [{"role": ..., "content": ...}, ...,
     {"role": "assistant", "content": "<the answer>"}], "created_at": "<ISO time>"}

so each record names the component that answered it: adapter traffic never trains a base model's head.
Firehose buffers them (``buffering``: 5 minutes or 64 MiB, whichever first), gzips them and writes
``<prefix>yyyy/MM/dd/HH/<file>.gz`` into ``bucket`` encrypted with the bucket's key; records it cannot
deliver go under ``<prefix>errors/<error type>/yyyy/MM/dd/HH/``. The stream itself is encrypted with
``key`` (a customer-managed KMS key). ``EagleOptimization`` reads the prefix as ``source: front_door``
with the same watermark, settle time and counts as captured traffic (the dataset builder reads gzip by
its bytes).

Retention: the turns are people's text. In the bucket ``TurnLog`` creates, every object (turns and failed
deliveries) expires after ``retention_days`` (default ``DEFAULT_TURN_LOG_RETENTION_DAYS``, 30; a front door
that logs into it applies its ``sessions.turn_log_retention_days``), replaced versions after 7 more days,
and only the roles granted to read (``grant_read``: the EAGLE dataset functions, a benchmark's job role) may
read the objects or decrypt them through S3 (``core.storage.restrict_reads``). A bucket given as ``bucket``
gets the same expiry for the two prefixes when it is a ``s3.Bucket`` of this app; who may read it is its
owner's business (a synth warning says so).

Cost: Firehose bills per GB ingested (a turn is a few KB); nothing is written without traffic.
"""

from __future__ import annotations

from typing import Any

import jsii
from aws_cdk import Annotations, ArnFormat, Duration, IStableNumberProducer, Lazy, RemovalPolicy, Size, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesisfirehose as firehose
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3

from constructs import Construct

from ..core.errors import ConfigurationError, Problem
from ..core.nag import acknowledge, nag_form
from ..core.storage import NONCURRENT_VERSION_DAYS, SecureBucket, restrict_reads, secure_key
from ..settings.sessions import DEFAULT_TURN_LOG_RETENTION_DAYS

DEFAULT_PREFIX = "front-door/"
ERROR_PREFIX = "front-door-errors/"
"""Failed deliveries: kept apart from the turns so the dataset builder never reads them as data."""
DEFAULT_BUFFERING_INTERVAL = Duration.minutes(5)
DEFAULT_BUFFERING_SIZE = Size.mebibytes(64)


class TurnLog(Construct):
    """A Firehose stream (``Resource``) from the front door to S3; ``grant_put(grantee)`` for the writer.

    Children: ``Resource`` (``AWS::KinesisFirehose::DeliveryStream``), ``Key`` (stream encryption),
    ``DeliveryRole``, ``DeliveryLogs``, and ``Bucket`` + ``BucketKey`` unless ``bucket`` is given. Attributes:
    ``cfn_delivery_stream``, ``delivery_stream_name``, ``delivery_stream_arn``, ``bucket``, ``prefix``, ``key``,
    ``role``, ``retention_days``, ``secure_bucket`` (the ``SecureBucket`` it created, else None).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        bucket: s3.IBucket | None = None,
        prefix: str = DEFAULT_PREFIX,
        buffering_interval: Duration = DEFAULT_BUFFERING_INTERVAL,
        buffering_size: Size = DEFAULT_BUFFERING_SIZE,
        retention_days: int | None = None,
    ) -> None:
        """
        :param bucket: where the turns go. Default: a new TLS-only, KMS-encrypted bucket (``Bucket``) whose
            objects expire after ``retention_days`` and only the roles granted to read may read.
        :param prefix: key prefix of the turns; ends with ``/``. Default: ``front-door/``.
        :param buffering_interval: longest time a record waits in Firehose (60-900 s). Default: 5 minutes.
        :param buffering_size: largest batch before a file is written (1-128 MiB). Default: 64 MiB.
        :param retention_days: days a turn is kept (1-3650). Default: the front door's
            ``turn_log_retention_days`` when one logs into it (``SessionFrontDoor.log_turns``), else 30.
        """
        super().__init__(scope, id)
        self._check_inputs(prefix, retention_days)
        self._retention_days = retention_days
        self._retention_given = retention_days is not None
        days = Lazy.number(_Days(self))  # read at synth: log_turns may still apply the front door's setting
        self.secure_bucket: SecureBucket | None = None
        self.bucket = self._turns_bucket(bucket, prefix, days)
        self.prefix = prefix
        self.key = secure_key(self, "Key", description=f"Encrypts the Firehose stream of {self.node.path}")
        stack = Stack.of(self)
        self.role = self._delivery_role(stack)
        log_group, log_stream = self._delivery_logs(stack)
        self._delivery_stream(log_group, log_stream, buffering_interval, buffering_size)
        self._acknowledge_prefixes()
        self._let_firehose_use_key(stack)

    def _check_inputs(self, prefix: str, retention_days: int | None) -> None:
        problems = []
        if not prefix.endswith("/") or prefix.startswith("/"):
            problems.append(
                Problem(
                    "prefix", prefix, "a key prefix ending in '/' (not starting with '/')", "write e.g. front-door/"
                )
            )
        if retention_days is not None and not (isinstance(retention_days, int) and 1 <= retention_days <= 3650):
            problems.append(
                Problem(
                    "retention_days",
                    retention_days,
                    "whole days from 1 to 3650",
                    "leave it out (30 days, or the front door's turn_log_retention_days)",
                )
            )
        if problems:
            raise ConfigurationError(problems, source=self.node.path)

    def _turns_bucket(self, bucket: s3.IBucket | None, prefix: str, days: float) -> s3.IBucket:
        """The given bucket, with the turns' expiry when it is an ``s3.Bucket`` of this app, else a new one."""
        if bucket is None:
            bucket_key = secure_key(self, "BucketKey", description=f"Encrypts the front-door turns of {self.node.path}")
            self.secure_bucket = SecureBucket(
                self,
                "Bucket",
                encryption_key=bucket_key,
                noncurrent_version_days=NONCURRENT_VERSION_DAYS,
                expire_after_days={"": days},  # type: ignore[dict-item]  # a number token
            )
            # Turns are people's text: only the roles granted to read them (grant_read) may read or decrypt.
            restrict_reads(self.secure_bucket, bucket_key, what="front-door turns")
            bucket = self.secure_bucket.bucket
        elif isinstance(bucket, s3.Bucket):
            for rule_id, rule_prefix in (("ExpireTurns", prefix), ("ExpireFailedTurns", ERROR_PREFIX)):
                bucket.add_lifecycle_rule(id=rule_id, prefix=rule_prefix, expiration=Duration.days(days))
            Annotations.of(self).add_warning_v2(
                "sagemaker-llm-cdk:turn-log-bucket-readers",
                "the turn log writes people's text into a bucket it did not create: its objects under "
                f"{prefix} and {ERROR_PREFIX} expire, but who may read them is that bucket's policy. Leave bucket "
                "out for one that only the granted roles can read (core.storage.restrict_reads).",
            )
        else:
            Annotations.of(self).add_warning_v2(
                "sagemaker-llm-cdk:turn-log-bucket-retention",
                "the turn log writes people's text into an imported bucket: neither its expiry nor who may read "
                "it is set here. Give that bucket an expiration lifecycle rule and a read restriction, or leave "
                "bucket out.",
            )
        return bucket

    def _delivery_role(self, stack: Stack) -> iam.Role:
        """The delivery role, narrow (the L2 DeliveryStream grants read/write/delete on the whole bucket): write
        only under the two prefixes, with the bucket's key, and only for this account's Firehose."""
        bucket, prefix = self.bucket, self.prefix
        role = iam.Role(
            self,
            "DeliveryRole",
            assumed_by=iam.ServicePrincipal(
                "firehose.amazonaws.com", conditions={"StringEquals": {"sts:ExternalId": stack.account}}
            ),
            description=f"Lets Firehose write the front-door turns of {self.node.path} to S3",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="FindBucket",
                actions=["s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads"],
                resources=[bucket.bucket_arn],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="WriteTurns",
                actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                resources=[bucket.arn_for_objects(f"{prefix}*"), bucket.arn_for_objects(f"{ERROR_PREFIX}*")],
            )
        )
        if bucket.encryption_key is not None:
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="EncryptTurns",
                    actions=["kms:GenerateDataKey", "kms:Decrypt"],
                    resources=[bucket.encryption_key.key_arn],
                    conditions={"StringEquals": {"kms:ViaService": f"s3.{stack.region}.{stack.url_suffix}"}},
                )
            )
        return role

    def _delivery_logs(self, stack: Stack) -> tuple[logs.LogGroup, logs.LogStream]:
        """The log group and stream Firehose writes delivery errors to, and the role's right to write there."""
        log_group = logs.LogGroup(
            self, "DeliveryLogs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.RETAIN
        )
        log_stream = logs.LogStream(
            self,
            "DeliveryLogStream",
            log_group=log_group,
            log_stream_name="S3Delivery",
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="LogDeliveryErrors",
                actions=["logs:PutLogEvents"],
                resources=[
                    stack.format_arn(
                        service="logs",
                        resource="log-group",
                        resource_name=f"{log_group.log_group_name}:log-stream:{log_stream.log_stream_name}",
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    )
                ],
            )
        )
        return log_group, log_stream

    def _delivery_stream(
        self, log_group: logs.LogGroup, log_stream: logs.LogStream, buffering_interval: Duration, buffering_size: Size
    ) -> None:
        """The DirectPut stream (``Resource``): gzip files under the turns prefix, failures under the error prefix."""
        bucket, prefix = self.bucket, self.prefix
        destination: dict[str, Any] = {
            "bucketArn": bucket.bucket_arn,
            "roleArn": self.role.role_arn,
            "prefix": f"{prefix}!{{timestamp:yyyy/MM/dd/HH}}/",
            "errorOutputPrefix": f"{ERROR_PREFIX}!{{firehose:error-output-type}}/!{{timestamp:yyyy/MM/dd/HH}}/",
            "bufferingHints": {
                "intervalInSeconds": int(buffering_interval.to_seconds()),
                "sizeInMBs": int(buffering_size.to_mebibytes()),
            },
            "compressionFormat": "GZIP",
            "cloudWatchLoggingOptions": {
                "enabled": True,
                "logGroupName": log_group.log_group_name,
                "logStreamName": log_stream.log_stream_name,
            },
        }
        if bucket.encryption_key is not None:
            destination["encryptionConfiguration"] = {
                "kmsEncryptionConfig": {"awskmsKeyArn": bucket.encryption_key.key_arn}
            }
        self.cfn_delivery_stream = firehose.CfnDeliveryStream(
            self,
            "Resource",
            delivery_stream_type="DirectPut",
            delivery_stream_encryption_configuration_input=firehose.CfnDeliveryStream.DeliveryStreamEncryptionConfigurationInputProperty(
                key_type="CUSTOMER_MANAGED_CMK", key_arn=self.key.key_arn
            ),
            extended_s3_destination_configuration=destination,
        )
        self.cfn_delivery_stream.node.add_dependency(self.role)
        self.delivery_stream_name: str = self.cfn_delivery_stream.ref
        self.delivery_stream_arn: str = self.cfn_delivery_stream.attr_arn

    def _acknowledge_prefixes(self) -> None:
        bucket, prefix = self.bucket, self.prefix
        for objects, why in (
            (f"{prefix}*", "Firehose names each file by delivery time under the turns prefix"),
            (f"{ERROR_PREFIX}*", "Firehose writes undeliverable records under the error prefix"),
        ):
            acknowledge(
                self.role,
                "AwsSolutions-IAM5",
                f"{why}; PutObject/AbortMultipartUpload only, that prefix only.",
                finding="Resource::" + nag_form(self.role, bucket.arn_for_objects(objects)),
            )

    def _let_firehose_use_key(self, stack: Stack) -> None:
        # Firehose encrypts the stream with the key through a grant it creates on CreateDeliveryStream.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("firehose.amazonaws.com")],
                actions=["kms:GenerateDataKey", "kms:Decrypt"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
            )
        )

    @property
    def retention_days(self) -> int:
        """Days a logged turn is kept before it expires."""
        return self._retention_days if self._retention_days is not None else DEFAULT_TURN_LOG_RETENTION_DAYS

    def keep_for(self, days: int, *, by: str) -> None:
        """Keep the turns ``days`` days (what ``SessionFrontDoor.log_turns`` applies from its settings).

        Refused when ``retention_days`` was given to the constructor and says otherwise: two settings of one
        bucket's expiry would leave one of them silently unused."""
        if self._retention_given and days != self._retention_days:
            raise ConfigurationError(
                [
                    Problem(
                        "retention_days",
                        self._retention_days,
                        f"{days}, the turn_log_retention_days of {by} that logs into it (one expiry per turn log)",
                        "leave retention_days out of TurnLog, or make the two equal",
                    )
                ],
                source=self.node.path,
            )
        self._retention_days = days

    def grant_put(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to put records (``firehose:PutRecord``/``PutRecordBatch`` on this stream only)."""
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["firehose:PutRecord", "firehose:PutRecordBatch"],
            resource_arns=[self.delivery_stream_arn],
        )

    def grant_read(self, grantee: iam.IGrantable) -> None:
        """Allow ``grantee`` to list and read the turns (the prefix only) and decrypt them."""
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{self.prefix}*"]}},
            )
        )
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=["s3:GetObject"], resources=[self.bucket.arn_for_objects(f"{self.prefix}*")])
        )
        if self.bucket.encryption_key is not None:
            self.bucket.encryption_key.grant_decrypt(grantee)


@jsii.implements(IStableNumberProducer)
class _Days:
    """``turn_log.retention_days`` at synth time."""

    def __init__(self, turn_log: TurnLog) -> None:
        self._turn_log = turn_log

    def produce(self) -> int:
        return self._turn_log.retention_days


__all__ = ["TurnLog", "DEFAULT_PREFIX"]
