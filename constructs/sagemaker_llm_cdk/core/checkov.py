"""checkov acknowledgements: the reasons table (``CHECKOV_REASONS``), ``checkov_skip`` and the defaults aspect.

checkov reads skips from each resource's CloudFormation metadata (``Metadata: {checkov: {skip: [{id, comment}]}}``);
``tools/run_checkov.py`` fails on any finding that is not skipped, and on a skip without a comment.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnResource, Stack, Stage
from aws_cdk import aws_kinesisfirehose as firehose
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn

from constructs import IConstruct

from .tree import at_synth, constructs_in, is_library_construct, key, library_made, resource_type

_LOG_DELIVERY_ACTIONS = frozenset(
    {
        "logs:CreateLogDelivery",
        "logs:GetLogDelivery",
        "logs:UpdateLogDelivery",
        "logs:DeleteLogDelivery",
        "logs:ListLogDeliveries",
        "logs:PutResourcePolicy",
        "logs:DescribeResourcePolicies",
        "logs:DescribeLogGroups",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
    }
)
"""What CDK's Step Functions state machine grants on '*' for vended log delivery."""

CHECKOV_REASONS = {
    "CKV_AWS_115": (
        "No reserved concurrency by default: reserving takes concurrency from the account's regional pool (new "
        "accounts may have as little as 10, and 100 must stay unreserved), so it can fail the deployment. These "
        "functions run on CloudFormation events, Step Functions tasks, a daily schedule or IAM-signed front-door "
        "requests; functions.python_function(reserved_concurrency=...) sets a limit where one is wanted."
    ),
    "CKV_AWS_116": (
        "A dead-letter queue only keeps failed asynchronous events. These functions are invoked synchronously "
        "(the custom resource framework, Step Functions tasks, the front door's function URL) or their failures "
        "already surface: a failed custom resource fails the deployment, and the capacity plan's daily check has an "
        "alarm on its errors (EventBridge retries it twice)."
    ),
    "CKV_AWS_117": (
        "The functions call only AWS APIs over TLS with IAM (SageMaker and SageMaker Runtime, CloudWatch, CloudWatch "
        "Logs, X-Ray, DynamoDB, S3, KMS, SSM Parameter Store, Step Functions, Lambda, IAM PassRole, Firehose, "
        "the Price List; SQS for a dead-letter queue; CloudFormation to read their own stack's status) and hold no "
        "network-reachable data; running them in a VPC would need NAT or interface endpoints that the deployment "
        "does not otherwise have."
    ),
    "CKV_AWS_173": (
        "The environment holds only names and settings (Powertools service name, metric namespace, plan, table and "
        "endpoint names), no secrets; Lambda encrypts it at rest with an AWS-owned key."
    ),
    "CKV_AWS_158": (
        "CloudWatch Logs encrypts every log group at rest. The handlers log metadata only (log_event=False; names, "
        "counts, status codes, never prompts or completions), so a customer-managed key would add a key policy for "
        "the logs service principal and a key to pay for without protecting anything sensitive."
    ),
    "CKV_AWS_18": (
        "This is the access-log bucket of a SecureBucket: it receives the server access logs of the bucket next to "
        "it. Logging it in turn would need another bucket, and logging it to itself loops."
    ),
    "CKV_AWS_111": (
        "Step Functions delivers the waiter state machine's logs through CloudWatch Logs log-delivery actions "
        "(CreateLogDelivery, PutResourcePolicy, DescribeLogGroups, ...) that have no resource-level permissions; "
        "CDK's Provider framework grants that set on '*' for the waiter's log group (also acknowledged for cdk-nag "
        "in deployment_check)."
    ),
}
"""Why each checkov check that the library's resources fail is acknowledged (see ``checkov_defaults``)."""


def checkov_skip(construct_or_cfn_resource: IConstruct, check_id: str, comment: str) -> None:
    """Skip checkov's ``check_id`` on one resource, with ``comment`` as the reason.

    ``construct_or_cfn_resource`` is a ``CfnResource`` or an L2 construct whose
    ``node.default_child`` is one. Skips merge into the resource's ``checkov`` metadata; a
    check already skipped there keeps its first comment.
    """
    resource = construct_or_cfn_resource
    # isinstance first: no round trip for a CfnResource (is_cfn_resource asks the Node kernel)
    if not isinstance(resource, CfnResource) and not CfnResource.is_cfn_resource(resource):
        resource = construct_or_cfn_resource.node.default_child  # type: ignore[assignment]
        if resource is None or not (isinstance(resource, CfnResource) or CfnResource.is_cfn_resource(resource)):
            raise TypeError(
                f"{construct_or_cfn_resource.node.path}: not a CfnResource and has no CfnResource "
                "default child; pass the CfnResource to skip checkov checks on"
            )
    if not check_id.strip() or not comment.strip():
        raise ValueError(
            f"{resource.node.path}: a checkov skip needs a check id and a comment (got {check_id!r}, {comment!r})"
        )
    _add_skips(resource, [(check_id, comment)])  # type: ignore[arg-type]


def _add_skips(cfn: CfnResource, wanted: list[tuple[str, str]]) -> None:
    """Merge ``wanted`` (check id, comment) into ``cfn``'s ``checkov`` metadata: one read, at most one write."""
    metadata = dict(cfn.get_metadata("checkov") or {})
    skips = [dict(s) for s in metadata.get("skip", [])]
    added = False
    for check_id, comment in wanted:
        if any(s.get("id") == check_id for s in skips):
            continue
        skips.append({"id": check_id, "comment": comment})
        added = True
    if added:
        metadata["skip"] = skips
        cfn.add_metadata("checkov", metadata)


def made_by_library(node: IConstruct) -> bool:
    """Whether ``node`` was made inside one of this library's constructs (so its checks and settings apply).

    For a whole tree, ``tree.library_made`` answers for every construct at once, with fewer round trips.
    """
    # One round trip for every ancestor (``scopes``: root first, ``node`` last) instead of two per level.
    return any(is_library_construct(scope) for scope in node.node.scopes[:-1])


def _checkov_findings(resource: Any) -> list[str]:
    """The checks in ``CHECKOV_REASONS`` that ``resource`` (made by the library) fails as it is configured."""
    kind = resource_type(resource)
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
        if (
            owner is not None
            and getattr(owner, "access_logs", None) is bucket
            and resource.logging_configuration is None
        ):
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


def library_resources(scope: IConstruct, nodes: list[IConstruct] | None = None) -> set[str]:
    """``tree.key`` of every construct under ``scope`` that the library made, not only placed it in.

    A construct inside one of the library's constructs is the library's when that construct holds it (or an
    ancestor of it) in one of its attributes (``endpoint.role``, ``check.provider``, ``eagle.log_group``: what its
    code made and kept), or when it is a log group that such a function or state machine logs to (a function's
    own log group, a Provider's, a delivery stream's). Anything else under a library construct, such as your own
    function added to it, is yours: it gets none of the library's checkov skips.
    """
    if nodes is None:
        nodes = constructs_in(scope)
    inside = library_made(scope, nodes)  # under a library construct at all: the only candidates
    made: set[str] = set()
    for owner in nodes:
        if not is_library_construct(owner):
            continue
        prefix = owner.node.path + "/"
        for value in _held(owner):
            if key(value) not in inside or key(value) in made:
                continue
            if not value.node.path.startswith(prefix):
                continue  # given to the construct (your VPC, your role), not made by it
            made.update(key(n) for n in value.node.find_all())
    by_key = {key(n): n for n in nodes}
    log_groups: dict[tuple[str, str], str] = {}
    for node in nodes:
        if isinstance(node, logs.CfnLogGroup) and key(node) in inside:
            stack = Stack.of(node)
            log_groups[(stack.node.path, str(stack.resolve(node.logical_id)))] = key(node)
    for k in list(made):
        held = by_key.get(k)
        for target in _logs_to(held) if held is not None else []:
            found = log_groups.get((Stack.of(held).node.path, target))  # type: ignore[arg-type]
            if found is not None:
                made.add(found)
    return made


def _held(owner: Any) -> list[Any]:
    """Constructs an object of the library holds in its attributes (lists and dicts included): not the library's own
    constructs (each answers for itself), not stacks or stages."""
    out: list[Any] = []
    for value in vars(owner).values():
        for item in (
            value if isinstance(value, (list, tuple)) else value.values() if isinstance(value, dict) else [value]
        ):
            if (
                hasattr(item, "node")
                and hasattr(item, "__jsii_ref__")
                and not is_library_construct(item)
                and not isinstance(item, (Stack, Stage))
            ):
                out.append(item)
    return out


def _logs_to(node: Any) -> list[str]:
    """Logical ids of the log groups a function, state machine or delivery stream writes to (its logging settings)."""
    if isinstance(node, lambda_.CfnFunction):
        config = Stack.of(node).resolve(node.logging_config) or {}
        ref = config.get("logGroup") or config.get("LogGroup")
        return [ref["Ref"]] if isinstance(ref, dict) and "Ref" in ref else []
    if isinstance(node, sfn.CfnStateMachine):
        config = Stack.of(node).resolve(node.logging_configuration) or {}
        found = []
        for destination in config.get("destinations") or config.get("Destinations") or []:
            group = destination.get("cloudWatchLogsLogGroup") or destination.get("CloudWatchLogsLogGroup") or {}
            arn = group.get("logGroupArn") or group.get("LogGroupArn")
            if isinstance(arn, dict) and "Fn::GetAtt" in arn:
                found.append(arn["Fn::GetAtt"][0])
        return found
    if isinstance(node, firehose.CfnDeliveryStream):
        config = Stack.of(node).resolve(node.extended_s3_destination_configuration) or {}
        options = config.get("cloudWatchLoggingOptions") or config.get("CloudWatchLoggingOptions") or {}
        name = options.get("logGroupName") or options.get("LogGroupName")
        return [name["Ref"]] if isinstance(name, dict) and "Ref" in name else []
    return []


def _apply_defaults(scope: IConstruct) -> None:
    nodes = constructs_in(scope)
    made = library_resources(scope, nodes)
    for node in nodes:
        if isinstance(node, CfnResource) and key(node) in made:
            found = _checkov_findings(node)
            if found:
                _add_skips(node, [(check_id, CHECKOV_REASONS[check_id]) for check_id in found])


def checkov_defaults(scope: IConstruct) -> None:
    """Acknowledge, on every resource the library made under ``scope``, the checkov findings it has by design.

    Runs at synth, in the Aspects phase (``tree.at_synth``: one pass over the tree from Python, not a
    callback from the Node kernel per construct), so resources added after this call are covered. Only
    resources inside the library's constructs get skips, only for the checks they fail as configured,
    each with its reason from ``CHECKOV_REASONS``; your own resources are never skipped.
    """
    at_synth(scope, lambda: _apply_defaults(scope))
