"""Secure defaults for the buckets and keys the library creates.

Buckets that hold user text (Data Capture: prompts and completions; EAGLE datasets built from
them) also get ``restrict_reads``: their objects can be read, and their key used through S3 to
decrypt, only by the roles of the same stack that are granted to read them (found in the
stack's IAM policies at synth), plus the account's root user as the break-glass way in.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Sequence
from typing import Any

import jsii
from aws_cdk import Duration, IStableAnyProducer, Lazy, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3

from constructs import Construct

from .checkov import checkov_skip
from .removal import destroying
from .tree import key

NONCURRENT_VERSION_DAYS = 7
"""Replaced or expired object versions in buckets of user text stay this long (to undo a mistaken delete)."""
READ_ACTIONS = ("s3:GetObject", "s3:GetObjectVersion")
"""What ``restrict_reads`` denies to every other principal: reading objects. Managing the bucket stays open."""


def secure_key(scope: Construct, id: str, *, description: str) -> kms.Key:
    """A customer-managed KMS key with yearly rotation, kept when the stack is deleted.

    With ``removal: destroy`` (``removal.set_removal``) the stack's Aspect schedules it for deletion instead.
    """
    return kms.Key(
        scope,
        id,
        description=description,
        enable_key_rotation=True,
        removal_policy=RemovalPolicy.RETAIN,
    )


SERVER_ACCESS_LOGS_USE_BUCKET_POLICY = "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"
"""CDK's feature flag (``cx_api.S3_SERVER_ACCESS_LOGS_USE_BUCKET_POLICY``) that ``SecureBucket`` sets for its
subtree."""


class SecureBucket(Construct):
    """A bucket that is TLS-only, private, versioned, KMS-encrypted, access-logged and retained
    (with ``removal: destroy``: emptied and deleted with the stack).

    The access-log bucket uses S3-managed keys because S3 server access logging cannot
    deliver to a bucket encrypted with a customer-managed key.

    ``expire_after_days`` maps a key prefix ("" for every object) to the days after which its
    objects expire; with versioning, an expired object stays as a noncurrent version for
    ``noncurrent_version_days`` more, then it is gone.
    """

    restricted_for: str | None = None
    """What ``restrict_reads`` limited its reads for (None: not limited)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        encryption_key: kms.IKey,
        access_logs: s3.IBucket | None = None,
        noncurrent_version_days: int = 90,
        expire_after_days: dict[str, int] | None = None,
    ) -> None:
        super().__init__(scope, id)
        # S3 delivers the server access logs through the log bucket's policy (logging.s3.amazonaws.com, only for
        # the source bucket and account), never through the legacy LogDeliveryWrite ACL, whatever feature flags
        # the app's cdk.json has (an app without this flag, from before CDK 2.60, would get the ACL).
        self.node.set_context(SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, True)
        destroy = destroying(self)  # removal: destroy empties and deletes the buckets with the stack
        if access_logs is None:
            access_logs = s3.Bucket(
                self,
                "AccessLogs",
                encryption=s3.BucketEncryption.S3_MANAGED,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                enforce_ssl=True,
                versioned=True,
                object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
                removal_policy=RemovalPolicy.DESTROY if destroy else RemovalPolicy.RETAIN,
                auto_delete_objects=destroy,
                lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(365))],
            )
        self.access_logs = access_logs
        rules = [
            s3.LifecycleRule(
                id="ExpireNoncurrentVersions",
                noncurrent_version_expiration=Duration.days(noncurrent_version_days),
                abort_incomplete_multipart_upload_after=Duration.days(7),
            )
        ]
        for prefix, days in sorted((expire_after_days or {}).items()):
            rules.append(
                s3.LifecycleRule(id=f"Expire{_rule_id(prefix)}", prefix=prefix or None, expiration=Duration.days(days))
            )
        if expire_after_days:
            rules.append(s3.LifecycleRule(id="RemoveExpiredDeleteMarkers", expired_object_delete_marker=True))
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
            removal_policy=RemovalPolicy.DESTROY if destroy else RemovalPolicy.RETAIN,
            auto_delete_objects=destroy,
            lifecycle_rules=rules,
        )
        self._extra_readers: list[str] = []
        if destroy:
            acknowledge_auto_delete_objects(Stack.of(self))

    def add_reader(self, principal_arn: str) -> None:
        """Let ``principal_arn`` (an IAM role ARN, e.g. of a role in another stack) pass ``restrict_reads``.

        Roles of this stack that are granted ``s3:GetObject`` on the bucket pass without this.
        """
        self._extra_readers.append(principal_arn)


def _rule_id(prefix: str) -> str:
    return "".join(part.capitalize() for part in prefix.replace("/", "-").split("-") if part) or "AllObjects"


def restrict_reads(bucket: SecureBucket, key: kms.Key | None, *, what: str) -> None:
    """Deny reading ``bucket``'s objects (and decrypting with ``key`` through S3) to every other principal.

    Allowed: the roles of the bucket's stack whose policies allow ``s3:GetObject`` on the bucket
    (for the key: ``kms:Decrypt`` on the key), the ARNs given to ``bucket.add_reader``, and the
    account's root user. Found at synth, so grants made after this call count.

    Only reads are denied, never bucket or key management: the CloudFormation execution role and
    account administrators keep every other action (update or delete the stack, change the
    policies), so nobody is locked out; reading user text needs a policy change, which
    CloudTrail records. The key's deny is limited to ``kms:ViaService s3.<region>.amazonaws.com``,
    so other uses of the key (an instance volume, a DynamoDB table) are unaffected.
    """
    stack = Stack.of(bucket)
    root = f"arn:{stack.partition}:iam::{stack.account}:root"
    bucket.bucket.add_to_resource_policy(
        iam.PolicyStatement(
            sid="OnlyNamedRolesRead",
            effect=iam.Effect.DENY,
            principals=[iam.AnyPrincipal()],
            actions=list(READ_ACTIONS),
            resources=[bucket.bucket.arn_for_objects("*")],
            conditions={
                "ArnNotEquals": {
                    "aws:PrincipalArn": Lazy.any(
                        _Readers(bucket.bucket.node.default_child, ("s3:GetObject",), [root], bucket._extra_readers)
                    )
                }
            },
        )
    )
    if key is not None:
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid=f"OnlyNamedRolesDecryptThroughS3{_rule_id(bucket.node.id)}",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["kms:Decrypt"],
                resources=["*"],
                conditions={
                    "StringEquals": {"kms:ViaService": f"s3.{stack.region}.amazonaws.com"},
                    "ArnNotEquals": {
                        "aws:PrincipalArn": Lazy.any(
                            _Readers(key.node.default_child, ("kms:Decrypt",), [root], bucket._extra_readers)
                        )
                    },
                },
            )
        )
    bucket.restricted_for = what


@jsii.implements(IStableAnyProducer)
class _Readers:
    """The ARNs of the stack's roles whose policies allow one of ``actions`` on ``target`` (a CfnResource)."""

    def __init__(self, target: Any, actions: Iterable[str], always: Sequence[str], extra: Sequence[str]) -> None:
        self._target = target
        self._actions = tuple(actions)
        self._always = list(always)
        self._extra = extra

    def produce(self) -> Any:
        stack = Stack.of(self._target)
        target_id = stack.resolve(self._target.logical_id)
        roles: list[str] = []
        nodes = stack.node.find_all()
        # The stack's own policies: not those of its nested stacks (one find_all per nested stack, where Stack.of
        # would be a round trip per policy). isinstance on the jsii proxy costs no round trip either.
        nested: set[str] = set()
        for node in nodes[1:]:
            if isinstance(node, Stack) and key(node) not in nested:
                nested.update(key(n) for n in node.node.find_all())
        policies: list[Any] = [n for n in nodes if isinstance(n, iam.CfnPolicy) and key(n) not in nested]
        # Every document resolved in one call (a Get for each, one Invoke for all).
        documents = stack.resolve([p.policy_document for p in policies]) if policies else []
        if not isinstance(documents, list) or len(documents) != len(policies):  # resolve drops undefined entries
            documents = [stack.resolve(p.policy_document) for p in policies]
        for node, document in zip(policies, documents, strict=True):
            document = document or {}
            if any(_grants(s, self._actions, target_id) for s in _as_list(document.get("Statement"))):
                roles += [r["Ref"] for r in stack.resolve(node.roles) or [] if isinstance(r, dict) and "Ref" in r]
        arns = [{"Fn::GetAtt": [role, "Arn"]} for role in dict.fromkeys(roles)]
        return [stack.resolve(a) for a in self._always + list(self._extra)] + arns


def _grants(statement: Any, actions: Sequence[str], target_id: str) -> bool:
    if not isinstance(statement, dict) or statement.get("Effect") != "Allow":
        return False
    allowed = [a for a in _as_list(statement.get("Action")) if isinstance(a, str)]
    if not any(fnmatch.fnmatchcase(action, pattern) for action in actions for pattern in allowed):
        return False
    return f'"{target_id}"' in json.dumps(statement.get("Resource"))


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def acknowledge_auto_delete_objects(stack: Stack) -> None:
    """CDK's bucket-emptying provider, present with ``removal: destroy`` (``removal.set_removal``)."""
    provider = stack.node.try_find_child("Custom::S3AutoDeleteObjectsCustomResourceProvider")
    handler = provider.node.try_find_child("Handler") if provider is not None else None
    if handler is None:
        return
    why = (
        "CDK's auto-delete-objects handler (removal: destroy) runs only when CloudFormation deletes a bucket, "
        "invoked synchronously by CloudFormation, and calls only S3 APIs: "
    )
    for check, detail in (
        ("CKV_AWS_115", "it needs no reserved concurrency, which would take from the account's pool"),
        ("CKV_AWS_116", "a failed call fails the stack deletion, so a dead-letter queue adds nothing"),
        ("CKV_AWS_117", "outside a VPC, which would need an S3 endpoint or NAT it has no use for"),
    ):
        checkov_skip(handler, check, why + detail + ".")
