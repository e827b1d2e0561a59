"""checkov acknowledgements: the reasons table (``CHECKOV_REASONS``), ``checkov_skip`` and the defaults aspect.

checkov reads skips from each resource's CloudFormation metadata (``Metadata: {checkov: {skip: [{id, comment}]}}``);
``tools/run_checkov.py`` fails on any finding that is not skipped, and on a skip without a comment.
"""
from __future__ import annotations

from typing import Any

import jsii
from aws_cdk import Aspects, CfnResource, IAspect, Stack
from constructs import IConstruct

_LIBRARY = __name__.split(".")[0]

_LOG_DELIVERY_ACTIONS = frozenset({
    "logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
    "logs:CreateLogStream", "logs:PutLogEvents",
})
"""What CDK's Step Functions state machine grants on '*' for vended log delivery."""

CHECKOV_REASONS = {
    "CKV_AWS_115": (
        "No reserved concurrency by default: reserving takes concurrency from the account's regional pool (new "
        "accounts may have as little as 10, and 100 must stay unreserved), so it can fail the deployment. These "
        "functions run on CloudFormation events, a daily schedule or IAM-signed front-door requests; "
        "functions.python_function(reserved_concurrency=...) sets a limit where one is wanted."),
    "CKV_AWS_116": (
        "A dead-letter queue only keeps failed asynchronous events. These functions are invoked synchronously "
        "(the custom resource framework, the front door's function URL) or their failures already surface: a "
        "failed custom resource fails the deployment, and the capacity plan's daily check has an alarm on its "
        "errors (EventBridge retries it twice)."),
    "CKV_AWS_117": (
        "The functions call only AWS APIs (SageMaker, SageMaker Runtime, CloudWatch, DynamoDB) over TLS with IAM "
        "and hold no network-reachable data; running them in a VPC would need NAT or interface endpoints that the "
        "deployment does not otherwise have."),
    "CKV_AWS_173": (
        "The environment holds only names and settings (Powertools service name, metric namespace, plan, table and "
        "endpoint names), no secrets; Lambda encrypts it at rest with an AWS-owned key."),
    "CKV_AWS_158": (
        "CloudWatch Logs encrypts every log group at rest. The handlers log metadata only (log_event=False; names, "
        "counts, status codes, never prompts or completions), so a customer-managed key would add a key policy for "
        "the logs service principal and a key to pay for without protecting anything sensitive."),
    "CKV_AWS_18": (
        "This is the access-log bucket of a SecureBucket: it receives the server access logs of the bucket next to "
        "it. Logging it in turn would need another bucket, and logging it to itself loops."),
    "CKV_AWS_111": (
        "Step Functions delivers the waiter state machine's logs through CloudWatch Logs log-delivery actions "
        "(CreateLogDelivery, PutResourcePolicy, DescribeLogGroups, ...) that have no resource-level permissions; "
        "CDK's Provider framework grants that set on '*' for the waiter's log group (also acknowledged for cdk-nag "
        "in deployment_check)."),
}
"""Why each checkov check that the library's resources fail is acknowledged (see ``checkov_defaults``)."""


def checkov_skip(construct_or_cfn_resource: IConstruct, check_id: str, comment: str) -> None:
    """Skip checkov's ``check_id`` on one resource, with ``comment`` as the reason.

    ``construct_or_cfn_resource`` is a ``CfnResource`` or an L2 construct whose
    ``node.default_child`` is one. Skips merge into the resource's ``checkov`` metadata; a
    check already skipped there keeps its first comment.
    """
    resource = construct_or_cfn_resource
    if not CfnResource.is_cfn_resource(resource):
        resource = construct_or_cfn_resource.node.default_child  # type: ignore[assignment]
        if resource is None or not CfnResource.is_cfn_resource(resource):
            raise TypeError(f"{construct_or_cfn_resource.node.path}: not a CfnResource and has no CfnResource "
                            "default child; pass the CfnResource to skip checkov checks on")
    if not check_id.strip() or not comment.strip():
        raise ValueError(f"{resource.node.path}: a checkov skip needs a check id and a comment (got {check_id!r}, "
                         f"{comment!r})")
    cfn: CfnResource = resource  # type: ignore[assignment]
    metadata = dict(cfn.get_metadata("checkov") or {})
    skips = [dict(s) for s in metadata.get("skip", [])]
    if any(s.get("id") == check_id for s in skips):
        return
    skips.append({"id": check_id, "comment": comment})
    metadata["skip"] = skips
    cfn.add_metadata("checkov", metadata)


def made_by_library(node: IConstruct) -> bool:
    """Whether ``node`` was made inside one of this library's constructs (so its checks and settings apply)."""
    # One round trip for every ancestor (``scopes``: root first, ``node`` last) instead of two per level.
    return any(type(scope).__module__.startswith(_LIBRARY + ".") for scope in node.node.scopes[:-1])


def _checkov_findings(resource: Any) -> list[str]:
    """The checks in ``CHECKOV_REASONS`` that ``resource`` (made by the library) fails as it is configured."""
    kind = resource.cfn_resource_type
    if kind == "AWS::Lambda::Function":
        found = []
        if resource.reserved_concurrent_executions is None:
            found.append("CKV_AWS_115")
        if resource.dead_letter_config is None:
            found.append("CKV_AWS_116")
        if resource.vpc_config is None:
            found.append("CKV_AWS_117")
        if resource.kms_key_arn is None:  # the L2 sets Environment lazily; a function without one passes anyway
            found.append("CKV_AWS_173")
        return found
    if kind == "AWS::Logs::LogGroup":
        return ["CKV_AWS_158"] if resource.kms_key_id is None else []
    if kind == "AWS::S3::Bucket":
        bucket = resource.node.scope
        owner = bucket.node.scope if bucket is not None else None
        # A SecureBucket's access-log bucket (storage.SecureBucket.access_logs), found without importing storage.
        if (owner is not None and getattr(owner, "access_logs", None) is bucket
                and resource.logging_configuration is None):
            return ["CKV_AWS_18"]
        return []
    if kind == "AWS::IAM::Policy":
        document = Stack.of(resource).resolve(resource.policy_document) or {}
        wildcard_actions: set[str] = set()
        for statement in document.get("Statement", []):
            resources = statement.get("Resource")
            if resources == "*" or (isinstance(resources, list) and "*" in resources):
                actions = statement.get("Action", [])
                wildcard_actions.update([actions] if isinstance(actions, str) else actions)
        if wildcard_actions & {"logs:CreateLogDelivery"} and wildcard_actions <= _LOG_DELIVERY_ACTIONS:
            return ["CKV_AWS_111"]
        return []
    return []


@jsii.implements(IAspect)
class _CheckovDefaults:
    def visit(self, node: IConstruct) -> None:
        if isinstance(node, CfnResource) and made_by_library(node):  # CDK calls this for every construct
            for check_id in _checkov_findings(node):
                checkov_skip(node, check_id, CHECKOV_REASONS[check_id])


def checkov_defaults(scope: IConstruct) -> None:
    """Acknowledge, on every resource the library made under ``scope``, the checkov findings it has by design.

    Runs as an Aspect at synth, so resources added after this call are covered. Only resources
    inside the library's constructs get skips, only for the checks they fail as configured, each
    with its reason from ``CHECKOV_REASONS``; your own resources are never skipped.
    """
    Aspects.of(scope).add(_CheckovDefaults())
