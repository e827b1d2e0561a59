"""The policy guard's tables: what may be allowed on a wildcard, and where templates hold policies.

``WILDCARD_ONLY_ACTIONS``: actions with no resource type that may be allowed on ``Resource: '*'``, each with
the page that documents it and the condition key it needs (``WildcardOnly``). ``AWS_MANAGED_POLICIES``: the
AWS managed policies a template may attach by ARN, and to which roles (``ManagedPolicyUse``).
``IDENTITY_POLICIES`` and ``RESOURCE_POLICIES``: the resource types whose properties hold identity and
resource policies. ``LIMITING_CONDITION_KEYS``: the condition keys that limit who an ``Allow`` to every
principal reaches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

SAR = "https://docs.aws.amazon.com/service-authorization/latest/reference"


@dataclass(frozen=True)
class WildcardOnly:
    """Why an action may be allowed on ``Resource: '*'``, and what must come with it.

    ``source``: the page that documents it has no resource type (or that ``*`` is required).
    ``condition``: a condition key every statement allowing it on a wildcard must use (not ``...IfExists``, not
    ``*``), when one exists that limits what it reaches; ``None`` when no condition key narrows it.
    ``acknowledged``: allowed on ``*`` only under a scope that acknowledges it (``grants.grant``,
    ``grants.acknowledge_wildcard_only``), for actions that are harmless only where they are needed.
    """

    source: str
    condition: str | None = None
    acknowledged: bool = False

    def startswith(self, prefix: str) -> bool:
        """``source.startswith``: callers that read an entry as its source page keep working."""
        return self.source.startswith(prefix)

    def __str__(self) -> str:
        return self.source


_LOG_DELIVERY = (
    "https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs.html (IAM policy for logging to "
    "CloudWatch Logs: Resource '*')"
)

WILDCARD_ONLY_ACTIONS: Mapping[str, WildcardOnly] = {
    # X-Ray tracing of Lambda functions and Step Functions state machines: no resource, no condition key.
    "xray:PutTraceSegments": WildcardOnly(f"{SAR}/list_awsx-ray.html (no resource type)"),
    "xray:PutTelemetryRecords": WildcardOnly(f"{SAR}/list_awsx-ray.html (no resource type)"),
    "xray:GetSamplingRules": WildcardOnly(f"{SAR}/list_awsx-ray.html (no resource type)"),
    "xray:GetSamplingTargets": WildcardOnly(f"{SAR}/list_awsx-ray.html (no resource type)"),
    # Metrics: only the namespace can be limited, by the cloudwatch:namespace condition key, so it must be.
    "cloudwatch:PutMetricData": WildcardOnly(
        f"{SAR}/list_amazoncloudwatch.html (no resource type; cloudwatch:namespace condition)",
        condition="cloudwatch:namespace",
    ),
    # Pulling an image: the token call has no resource; the layer calls name the repository.
    "ecr:GetAuthorizationToken": WildcardOnly(f"{SAR}/list_amazonelasticcontainerregistry.html (no resource type)"),
    # Buying a capacity plan: searching offerings reads a catalogue, it has no resource.
    "sagemaker:SearchTrainingPlanOfferings": WildcardOnly(f"{SAR}/list_amazonsagemakerai.html (no resource type)"),
    # VPC placement: SageMaker describes the network before attaching interfaces (read-only, no resource).
    **{
        f"ec2:{action}": WildcardOnly(f"{SAR}/list_amazonec2.html (Describe* actions have no resource type)")
        for action in (
            "DescribeVpcs",
            "DescribeSubnets",
            "DescribeSecurityGroups",
            "DescribeNetworkInterfaces",
            "DescribeDhcpOptions",
        )
    },
    # Vended log delivery of Step Functions: its documentation requires these on '*'. PutResourcePolicy writes the
    # account's CloudWatch Logs resource policies, and none of them has a condition key, so each is allowed only
    # where a state machine's log delivery is acknowledged, never by this table alone.
    **{
        f"logs:{action}": WildcardOnly(_LOG_DELIVERY, acknowledged=True)
        for action in (
            "CreateLogDelivery",
            "GetLogDelivery",
            "UpdateLogDelivery",
            "DeleteLogDelivery",
            "ListLogDeliveries",
            "PutResourcePolicy",
            "DescribeResourcePolicies",
            "DescribeLogGroups",
        )
    },
}
"""Actions that may be allowed on ``Resource: '*'``, each with where that is documented and what it needs."""
_WILDCARD_ONLY = {action.lower(): entry for action, entry in WILDCARD_ONLY_ACTIONS.items()}


@dataclass(frozen=True)
class ManagedPolicyUse:
    """An AWS managed policy the guard cannot read: what it grants, and which roles (logical ids) may have it."""

    reason: str
    roles: str
    """A regular expression the attaching role's logical id must match in full."""


AWS_MANAGED_POLICIES: Mapping[str, ManagedPolicyUse] = {
    "service-role/AWSLambdaBasicExecutionRole": ManagedPolicyUse(
        "logs:CreateLogGroup/CreateLogStream/PutLogEvents: CDK's own custom resource providers (the S3 "
        "auto-delete-objects provider of removal: destroy) attach it to their fixed roles; no library function has it",
        roles=r"Custom[A-Za-z0-9]+CustomResourceProviderRole[0-9A-F]{8}",
    ),
}
"""AWS managed policies a template may attach by ARN (``ManagedPolicyArns``); any other is a finding, because the
guard cannot see its statements (``AmazonSageMakerFullAccess`` allows ``sagemaker:*`` on ``*``)."""

RESOURCE_POLICIES: Mapping[str, str] = {
    "AWS::S3::BucketPolicy": "PolicyDocument",
    "AWS::S3::AccessPoint": "Policy",
    "AWS::SNS::TopicPolicy": "PolicyDocument",
    "AWS::SQS::QueuePolicy": "PolicyDocument",
    "AWS::KMS::Key": "KeyPolicy",
    "AWS::KMS::ReplicaKey": "KeyPolicy",
    "AWS::SecretsManager::ResourcePolicy": "ResourcePolicy",
    "AWS::ECR::Repository": "RepositoryPolicyText",
    "AWS::Logs::ResourcePolicy": "PolicyDocument",
    "AWS::Events::EventBus": "Policy",
    "AWS::ApiGateway::RestApi": "Policy",
    "AWS::OpenSearchService::Domain": "AccessPolicies",
    "AWS::Backup::BackupVault": "AccessPolicy",
    "AWS::IAM::Role": "AssumeRolePolicyDocument",
}
"""Resource types whose property holds a resource policy (or a role's trust policy), as the guard reads it first;
every other policy-bearing property the schemas define is read through ``policy_properties`` (its table)."""
IDENTITY_POLICIES: Mapping[str, str] = {
    "AWS::IAM::Policy": "PolicyDocument",
    "AWS::IAM::ManagedPolicy": "PolicyDocument",
    "AWS::IAM::RolePolicy": "PolicyDocument",
    "AWS::IAM::UserPolicy": "PolicyDocument",
    "AWS::IAM::GroupPolicy": "PolicyDocument",
}
"""Identity policy resources (the inline ``Policies`` of ``AWS::IAM::Role``/``User``/``Group`` are read too)."""
_INLINE = ("AWS::IAM::Role", "AWS::IAM::User", "AWS::IAM::Group")
LIMITING_CONDITION_KEYS = frozenset(
    {
        "aws:sourcearn",
        "aws:sourceaccount",
        "aws:sourceowner",
        "aws:sourceorgid",
        "aws:sourceorgpaths",
        "aws:principalaccount",
        "aws:principalorgid",
        "aws:principalorgpaths",
        "aws:principalarn",
        "aws:sourcevpce",
        "aws:sourcevpc",
        "kms:calleraccount",
    }
)
"""Condition keys that limit who an ``Allow`` to every principal (``*``) reaches."""
