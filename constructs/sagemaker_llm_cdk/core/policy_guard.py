"""The policy guard: one check over the synthesized templates that no acknowledgement can hide a grant from.

cdk-nag acknowledges ``AwsSolutions-IAM5`` per wildcard *string*: ``Resource::*`` on a role covers every action
that role will ever be allowed on ``*``, and ``Resource::arn:...:bucket/*`` every action on those objects. The
guard closes that gap. It runs as a CDK validation plugin (``PolicyGuard``), so it reads each template as it is
deployed, after every Aspect, escape hatch (``add_property_override``) and override, in every stack, nested stack
and Stage of the app (a pipeline's stages included); its findings are ``fatal``, which CDK lets nobody
acknowledge. In every policy it finds:

* identity policies (``AWS::IAM::Policy``, ``ManagedPolicy``, ``RolePolicy``/``UserPolicy``/``GroupPolicy``, and
  the inline ``Policies`` of roles, users and groups): an ``Allow`` with ``NotAction`` or ``NotResource`` (a
  wildcard in disguise); an action on a resource that holds ``*`` (plain or inside ``Fn::Join``/``Fn::Sub``), or
  the action ``*`` or ``<service>:*`` on anything, unless an acknowledgement of the same resource pattern names
  that action, or the action is in ``WILDCARD_ONLY_ACTIONS``; an action of ``WILDCARD_ONLY_ACTIONS`` allowed on a
  wildcard without the condition its entry requires (``cloudwatch:PutMetricData`` without
  ``cloudwatch:namespace``); a managed policy attached by ARN that the template does not hold (its statements
  cannot be read), unless ``AWS_MANAGED_POLICIES`` lists it;
* resource policies (``RESOURCE_POLICIES``: bucket, key, topic, queue and other policies, role trust policies,
  ``AWS::Lambda::Permission``): an ``Allow`` to every principal (``*``) with no condition that limits who it is,
  an ``Allow`` with ``NotPrincipal``, ``NotAction`` or ``NotResource``, and the action ``*``/``<service>:*``
  (except the default key policy's ``kms:*`` for the key's own account root).

Action names are compared without regard to case, as IAM does (``S3:getobject`` is ``s3:GetObject``).

An acknowledgement (``Acknowledgement``) names a construct scope, a resource pattern *and* the actions allowed on
it, with the reason. ``grants.grant`` records exactly the resources and actions of its statement;
``grants.acknowledge_wildcard_only``, ``grants.allow_wildcard_actions``, ``nag.acknowledge_resource`` and
``nag.acknowledge`` of an ``AwsSolutions-IAM5`` finding record theirs (given, or else the actions the scope's
policies allow on that resource when the acknowledgement is made: what was reviewed with it). A statement added
later with another action on the same resource is a finding.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import (
    IPolicyValidationContext,
    IPolicyValidationPlugin,
    PolicyValidationPluginReport,
    PolicyViolatingResource,
    PolicyViolation,
    Stack,
    Stage,
    Validations,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs

from constructs import IConstruct

SAR = "https://docs.aws.amazon.com/service-authorization/latest/reference"
PLUGIN_NAME = "SageMakerLlmPolicyGuard"
"""The validation plugin's name: its findings appear under it in CDK's report (and in ``nag-findings.md``)."""


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
"""Resource types whose property holds a resource policy (or a role's trust policy), as the guard reads it."""
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


# ------------------------------------------------------------------ acknowledgements
@dataclass(frozen=True)
class Acknowledgement:
    """A reviewed wildcard: under construct ``scope`` (a path), ``actions`` (lower-case patterns) on ``resource``
    (a pattern, as cdk-nag writes it), with ``reason``."""

    scope: str
    resource: str
    actions: tuple[str, ...]
    reason: str

    def covers(self, resource: str, action: str) -> bool:
        return _matches(resource, self.resource) and any(_matches(action, pattern) for pattern in self.actions)


_RECORDS = "_sagemaker_llm_cdk_policy_acknowledgements"
_PLUGIN = "_sagemaker_llm_cdk_policy_guard"
_STACK = "_sagemaker_llm_cdk_stack"


def stack_of(construct: IConstruct) -> Stack:
    """``Stack.of(construct)``, asked once per construct object (a construct never moves to another stack)."""
    stack: Stack | None = getattr(construct, _STACK, None)
    if stack is None:
        stack = Stack.of(construct)
        _remember(construct, _STACK, stack)
    return stack


def _remember(construct: Any, name: str, value: Any) -> None:
    try:
        setattr(construct, name, value)
    except AttributeError:  # a jsii proxy of several interfaces takes no new attribute: ask again next time
        pass


def render(value: Any) -> str:
    """A resolved CloudFormation value as cdk-nag writes it in a finding id (``Ref`` -> ``<X>``, joins joined)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((kind, arg),) = value.items()
        if kind == "Ref":
            return f"<{arg}>"
        if kind == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>" if isinstance(arg, list) else f"<{arg}>"
        if kind == "Fn::Join" and isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list):
            return str(arg[0]).join(render(part) for part in arg[1])
    # Any other intrinsic (Fn::Sub, Fn::Select, Fn::FindInMap, ...): cdk-nag writes it as compact JSON.
    return json.dumps(value, separators=(",", ":"))


def _arn_text(value: Any) -> str:
    """``render``, with ``Fn::Sub`` written out (``${AWS::Partition}`` -> ``<AWS::Partition>``): for reading ARNs."""
    if isinstance(value, dict) and list(value) == ["Fn::Sub"]:
        body = value["Fn::Sub"]
        text = body[0] if isinstance(body, list) and body else body
        if isinstance(text, str):
            return re.sub(r"\$\{([^}!]+)\}", r"<\1>", text)
    return render(value)


def record(scope: IConstruct, resources: Iterable[str], actions: Iterable[str], reason: str) -> None:
    """Record that ``actions`` are acknowledged on each of ``resources`` (patterns as cdk-nag writes them) for the
    policies under ``scope``, and make sure the guard runs on ``scope``'s app."""
    root = scope.node.root
    records: list[Acknowledgement] | None = getattr(root, _RECORDS, None)
    if records is None:
        records = []
        setattr(root, _RECORDS, records)
    path = scope.node.path
    patterns = tuple(dict.fromkeys(a.lower() for a in actions))
    records.extend(Acknowledgement(path, resource, patterns, reason) for resource in dict.fromkeys(resources))
    guard(root)


def acknowledgements(root: IConstruct) -> list[Acknowledgement]:
    """Every acknowledgement recorded in ``root``'s app."""
    return list(getattr(root.node.root, _RECORDS, []))


def allowed_now(scope: IConstruct, resource: str | None = None) -> dict[str, list[str]]:
    """What the policies under ``scope`` allow right now: resource (as cdk-nag writes it) -> actions, for the
    wildcard resources (or only ``resource``). ``Resource: '*'`` lists only actions of ``WILDCARD_ONLY_ACTIONS``:
    an acknowledgement made from this can never cover an action with resource-level permissions on ``*``.

    Reads each document's statements as they are (``PolicyDocument.to_json``), never resolving the document itself:
    that would freeze and merge its statements (and fix a stable ``Lazy``) before the app is complete.
    """
    found: dict[str, list[str]] = {}
    for document in _current_documents(scope):
        for statement in _statements(document):
            if _effect(statement) != "Allow":
                continue
            actions = [a for a in _as_list(statement.get("Action")) if isinstance(a, str)]
            for value in _as_list(statement.get("Resource")):
                text = render(value)
                if (resource is not None and text != resource) or (resource is None and "*" not in text):
                    continue
                chosen = [a for a in actions if a.lower() in _WILDCARD_ONLY] if text == "*" else actions
                found.setdefault(text, [])
                found[text] += [a for a in chosen if a not in found[text]]
    return found


def _current_documents(scope: IConstruct) -> list[Any]:
    # L2 policies (a role's DefaultPolicy, iam.ManagedPolicy): their documents' statements. An L1 policy made
    # directly: its document when it is one, or plain JSON. Inline role policies are not read: name their actions.
    nodes = scope.node.find_all()
    documents: list[Any] = []
    l2_paths: set[str] = set()
    for node in nodes:
        if isinstance(node, (iam.Policy, iam.ManagedPolicy)):
            l2_paths.add(node.node.path + "/Resource")
            documents.append(stack_of(node).resolve(node.document.to_json()))
    for node in nodes:
        if isinstance(node, (iam.CfnPolicy, iam.CfnManagedPolicy)) and node.node.path not in l2_paths:
            value = node.policy_document
            if isinstance(value, iam.PolicyDocument):
                value = value.to_json()
            if isinstance(value, dict):
                documents.append(stack_of(node).resolve(value))
    return documents


# ------------------------------------------------------------------ the plugin
def guard(scope: IConstruct) -> None:
    """Run the guard (``PolicyGuard``) at the synth of ``scope``'s app (added once per app)."""
    root = scope.node.root
    if getattr(root, _PLUGIN, None) is not None:
        return
    plugin = PolicyGuard(root)
    setattr(root, _PLUGIN, plugin)
    Validations.of(root).add_plugins(plugin)


@dataclass(frozen=True)
class GuardFinding:
    """One statement (or attachment) the guard refuses, where it is, and what to do."""

    rule: str
    template: Path
    logical_id: str
    location: str
    text: str
    construct_path: str = ""

    def line(self, relative_to: Path | None = None) -> str:
        template = self.template
        if relative_to is not None:
            try:
                template = self.template.relative_to(relative_to)
            except ValueError:
                pass
        where = f" ({self.construct_path})" if self.construct_path else ""
        return f"{template} {self.logical_id}{where} {self.location}: {self.text}"


_FIX = {
    "UnacknowledgedWildcard": (
        "name the resources and actions; if a wildcard is unavoidable, acknowledge it with its actions "
        "(sagemaker_llm_cdk.core.grants.grant(..., reason=...) or nag.acknowledge_resource(scope, resource, reason, "
        "actions=[...])); an action with no resource type goes into grants.WILDCARD_ONLY_ACTIONS with the Service "
        "Authorization Reference page that says so"
    ),
    "NotActionOrNotResource": "list the actions and resources the statement allows instead",
    "MissingCondition": "add the condition (see grants.WILDCARD_ONLY_ACTIONS)",
    "BroadPrincipal": (
        "name the principals, or limit them with aws:SourceArn, aws:SourceAccount or aws:PrincipalOrgID"
    ),
    "UnreadablePolicy": (
        "write the statements into the template (iam.ManagedPolicy or a role policy) so the guard "
        "reads them, or list an AWS managed policy in policy_guard.AWS_MANAGED_POLICIES with what it "
        "grants"
    ),
}


@jsii.implements(IPolicyValidationPlugin)
class PolicyGuard:
    """CDK validation plugin: ``template_problems`` on every template of the app, as written to the assembly."""

    def __init__(self, root: IConstruct) -> None:
        self._root = root

    @property
    def name(self) -> str:
        return PLUGIN_NAME

    @property
    def version(self) -> str | None:
        return None

    @property
    def rule_ids(self) -> list[str] | None:
        return sorted(_FIX)

    def validate(self, context: IPolicyValidationContext) -> PolicyValidationPluginReport:
        paths = [Path(p) for p in context.template_paths]
        accounts = {template_key(s.template_path): s.account_id for s in (context.stack_templates or [])}
        findings = assembly_problems(
            paths, acknowledgements(self._root), _construct_paths(self._root), accounts=accounts
        )
        outdir = Path(self._root.outdir if isinstance(self._root, Stage) else ".").resolve()
        violations = [
            PolicyViolation(
                rule_name=f.rule,
                description=f.line(outdir),
                fix=_FIX[f.rule],
                severity="fatal",
                violating_resources=[
                    PolicyViolatingResource(
                        locations=[f.location], resource_logical_id=f.logical_id, template_path=str(f.template)
                    )
                ],
            )
            for f in findings
        ]
        return PolicyValidationPluginReport(success=not violations, violations=violations)


_NAMED = (
    iam.CfnPolicy,
    iam.CfnManagedPolicy,
    iam.CfnRole,
    iam.CfnUser,
    iam.CfnGroup,
    s3.CfnBucketPolicy,
    sns.CfnTopicPolicy,
    sqs.CfnQueuePolicy,
    kms.CfnKey,
    lambda_.CfnPermission,
)
"""L1 classes whose construct path the guard's lines name (others are named by template and logical id)."""


def _construct_paths(root: IConstruct) -> dict[tuple[str, str], str]:
    """(template path, logical id) -> construct path of every policy-holding L1 (``_NAMED``) in ``root``'s app: what
    acknowledgements cover is found by path. One pass over the tree, a few round trips per such resource."""
    out: dict[tuple[str, str], str] = {}
    templates: dict[str, str] = {}
    for node in root.node.find_all():
        if not isinstance(node, _NAMED):
            continue
        stack = stack_of(node)
        key = stack.node.path
        if key not in templates:
            templates[key] = template_key(Path(Stage.of(stack).outdir) / stack.template_file)  # type: ignore[union-attr]
        out[(templates[key], str(stack.resolve(node.logical_id)))] = node.node.path
    return out


def template_key(path: str | Path) -> str:
    """The one form of a template's path that every map of the guard is keyed by and looked up with: absolute and
    resolved. The CLI hands the app a relative output folder (``CDK_OUTDIR=cdk.out``) and CDK reports template paths
    as given, so a map keyed by the path as given and read with the resolved one would find nothing."""
    return str(Path(path).resolve())


def assembly_problems(
    templates: Sequence[Path],
    records: Sequence[Acknowledgement],
    paths: Mapping[tuple[str, str], str] | None = None,
    *,
    accounts: Mapping[str, str | None] | None = None,
) -> list[GuardFinding]:
    """``template_problems`` for each of ``templates`` and the nested stack templates beside them."""
    seen: set[Path] = set()
    findings: list[GuardFinding] = []
    for template in templates:
        template = Path(template_key(template))
        account = (accounts or {}).get(str(template))
        for path in [template, *sorted(template.parent.glob("*.nested.template.json"))]:
            if path in seen:
                continue
            seen.add(path)
            try:
                body = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            findings += template_problems(body, path, records, paths or {}, account=account)
    return findings


def template_problems(
    template: Mapping[str, Any],
    path: Path,
    records: Sequence[Acknowledgement],
    paths: Mapping[tuple[str, str], str],
    *,
    account: str | None = None,
) -> list[GuardFinding]:
    """Every policy statement or attachment of one template that the guard refuses (see the module docstring)."""
    resources = template.get("Resources") or {}
    findings: list[GuardFinding] = []
    for logical_id, resource in resources.items():
        if not isinstance(resource, dict):
            continue
        kind = str(resource.get("Type", ""))
        properties = resource.get("Properties") or {}
        construct_path = paths.get((str(path), logical_id)) or str(
            (resource.get("Metadata") or {}).get("aws:cdk:path", "")
        )
        mine = [
            r
            for r in records
            if construct_path and (construct_path == r.scope or construct_path.startswith(r.scope + "/"))
        ]

        def found(rule: str, location: str, text: str) -> None:
            findings.append(GuardFinding(rule, path, logical_id, location, text, construct_path))

        documents: list[tuple[str, Any]] = []
        if kind in IDENTITY_POLICIES:
            documents.append((IDENTITY_POLICIES[kind], properties.get(IDENTITY_POLICIES[kind])))
        if kind in _INLINE:
            for p, policy in enumerate(_as_list(properties.get("Policies"))):
                name = policy.get("PolicyName") if isinstance(policy, dict) else None
                label = f"Policies[{p}]" + (f" ({render(name)})" if name is not None else "")
                documents.append(
                    (f"{label}.PolicyDocument", policy.get("PolicyDocument") if isinstance(policy, dict) else None)
                )
            for m, arn in enumerate(_as_list(properties.get("ManagedPolicyArns"))):
                problem = _attachment_problem(arn, logical_id, resources)
                if problem:
                    found("UnreadablePolicy", f"ManagedPolicyArns[{m}]", problem)
        for where, document in documents:
            for i, statement in _numbered(_parsed(document)):
                for rule, text in _identity_problems(statement, mine):
                    found(rule, _statement_location(where, i, statement), text)
        if kind in RESOURCE_POLICIES:
            where = RESOURCE_POLICIES[kind]
            for i, statement in _numbered(_parsed(properties.get(where))):
                for rule, text in _resource_policy_problems(statement, kind, account):
                    found(rule, _statement_location(where, i, statement), text)
        if kind == "AWS::Lambda::Permission":
            principal = render(properties.get("Principal"))
            limited = any(properties.get(k) for k in ("SourceArn", "SourceAccount", "PrincipalOrgID"))
            if principal == "*" and not limited:
                found(
                    "BroadPrincipal",
                    "Principal",
                    f"lets every principal ('*') {render(properties.get('Action'))} "
                    "with no SourceArn, SourceAccount or PrincipalOrgID",
                )
            if _broad_action(render(properties.get("Action")).lower()):
                found("UnacknowledgedWildcard", "Action", f"allows {render(properties.get('Action'))!r}")
    return findings


def _statement_location(where: str, index: int, statement: Mapping[str, Any]) -> str:
    sid = statement.get("Sid")
    return f"{where}.Statement[{index}]" + (f" (Sid {sid})" if sid else "")


def _identity_problems(statement: Mapping[str, Any], records: Sequence[Acknowledgement]) -> list[tuple[str, str]]:
    if _effect(statement) != "Allow":
        return []
    problems: list[tuple[str, str]] = []
    for key, what in (("NotAction", "every action but"), ("NotResource", "every resource but")):
        if key in statement:
            problems.append(
                (
                    "NotActionOrNotResource",
                    f"an Allow with {key} allows {what} "
                    f"{[render(v) for v in _as_list(statement[key])]}: a wildcard that no acknowledgement "
                    "names",
                )
            )
    if problems:
        return problems
    actions = _as_list(statement.get("Action"))
    odd = [a for a in actions if not isinstance(a, str)]
    if odd:
        problems.append(("UnreadablePolicy", f"actions {[render(a) for a in odd]} are not plain names"))
    names = [a for a in actions if isinstance(a, str)]
    resources = [render(r) for r in _as_list(statement.get("Resource"))]
    unacknowledged: dict[str, list[str]] = {}
    for resource in resources:
        wild = "*" in resource
        for action in names:
            lower = action.lower()
            entry = _WILDCARD_ONLY.get(lower)
            if entry is not None and not entry.acknowledged:
                continue
            if not wild and not _broad_action(lower) and entry is None:
                continue
            if any(r.covers(resource, lower) for r in records):
                continue
            unacknowledged.setdefault(resource, []).append(action)
    for resource, bad in unacknowledged.items():
        problems.append(
            (
                "UnacknowledgedWildcard",
                f"allows {bad} on {resource!r}, which no acknowledgement of that "
                "resource names (cdk-nag's IAM5 acknowledgement of the resource string would hide them)",
            )
        )
    if any("*" in r for r in resources):
        keys = _condition_keys(statement)
        for action in names:
            entry = _WILDCARD_ONLY.get(action.lower())
            if entry is not None and entry.condition and entry.condition.lower() not in keys:
                problems.append(
                    (
                        "MissingCondition",
                        f"allows {action!r} on a wildcard without the "
                        f"{entry.condition} condition that limits it ({entry.source})",
                    )
                )
    return problems


def _resource_policy_problems(statement: Mapping[str, Any], kind: str, account: str | None) -> list[tuple[str, str]]:
    if _effect(statement) != "Allow":
        return []
    problems: list[tuple[str, str]] = []
    for key in ("NotPrincipal", "NotAction", "NotResource"):
        if key in statement:
            problems.append(
                (
                    "NotActionOrNotResource",
                    f"an Allow with {key} ({render(statement[key])}) reaches everything it does not list",
                )
            )
    principal = statement.get("Principal")
    everyone = principal == "*" or (
        isinstance(principal, dict) and any(render(p) == "*" for p in _as_list(principal.get("AWS")))
    )
    if everyone and not (_condition_keys(statement) & LIMITING_CONDITION_KEYS):
        problems.append(
            (
                "BroadPrincipal",
                f"lets every principal ('*') {[render(a) for a in _as_list(statement.get('Action'))]} "
                "with no condition that limits who (aws:SourceArn, aws:SourceAccount, aws:PrincipalOrgID, ...)",
            )
        )
    broad = [render(a) for a in _as_list(statement.get("Action")) if _broad_action(render(a).lower())]
    if broad and not (kind in ("AWS::KMS::Key", "AWS::KMS::ReplicaKey") and _own_root(principal, account)):
        problems.append(("UnacknowledgedWildcard", f"allows {broad} to {_principal_text(principal)}"))
    return problems


_PARTITION = r"(?:<AWS::Partition>|[^:<>]+)"


def _principal_text(principal: Any) -> str:
    if isinstance(principal, dict):
        return ", ".join(f"{kind} {[_arn_text(v) for v in _as_list(value)]}" for kind, value in principal.items())
    return _arn_text(principal)


def _own_root(principal: Any, account: str | None) -> bool:
    """Whether ``principal`` is only this account's root (the default key policy's administrator statement)."""
    if not isinstance(principal, dict) or list(principal) != ["AWS"]:
        return False
    values = _as_list(principal["AWS"])
    accounts = {"<AWS::AccountId>"} | ({account} if account else set())
    return len(values) == 1 and any(
        re.fullmatch(rf"arn:{_PARTITION}:iam::{re.escape(a)}:root", _arn_text(values[0])) for a in accounts
    )


def _attachment_problem(arn: Any, logical_id: str, resources: Mapping[str, Any]) -> str | None:
    if isinstance(arn, dict) and list(arn) == ["Ref"]:
        target = resources.get(arn["Ref"]) or {}
        if isinstance(target, dict) and target.get("Type") == "AWS::IAM::ManagedPolicy":
            return None  # read where it is
    text = _arn_text(arn)
    match = re.fullmatch(rf"arn:{_PARTITION}:iam::aws:policy/(.+)", text)
    use = AWS_MANAGED_POLICIES.get(match.group(1)) if match else None
    if use is not None and re.fullmatch(use.roles, logical_id):
        return None
    if match:
        return (
            f"attaches the AWS managed policy {match.group(1)!r}, whose statements the template does not hold "
            "(not in policy_guard.AWS_MANAGED_POLICIES for this role)"
        )
    return f"attaches the managed policy {text!r}, whose statements the template does not hold"


def _broad_action(action: str) -> bool:
    return action == "*" or action.endswith(":*")


def _condition_keys(statement: Mapping[str, Any]) -> set[str]:
    """Condition keys of ``statement`` that limit it: not under ``...IfExists`` or ``Null``, no value ``*``."""
    keys: set[str] = set()
    for operator, body in (statement.get("Condition") or {}).items():
        if not isinstance(body, dict) or str(operator).endswith("IfExists") or operator == "Null":
            continue
        for key, value in body.items():
            if all(render(v) not in ("*", "") for v in _as_list(value)) and _as_list(value):
                keys.add(str(key).lower())
    return keys


def _matches(text: str, pattern: str) -> bool:
    """IAM's pattern match: ``*`` any run of characters, ``?`` one; nothing else is special."""
    if text == pattern:
        return True
    if "*" not in pattern and "?" not in pattern:
        return False
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, text, flags=re.DOTALL) is not None


def _parsed(document: Any) -> Any:
    if isinstance(document, str):  # AWS::Logs::ResourcePolicy and others hold the policy as JSON text
        try:
            return json.loads(document)
        except ValueError:
            return None
    return document


def _statements(document: Any) -> list[dict[str, Any]]:
    return [s for _, s in _numbered(document)]


def _numbered(document: Any) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(document, dict):
        return []
    return [(i, s) for i, s in enumerate(_as_list(document.get("Statement"))) if isinstance(s, dict)]


def _effect(statement: Mapping[str, Any]) -> str:
    return "Deny" if statement.get("Effect") == "Deny" else "Allow"  # IAM has no default: read anything else as Allow


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def problems_of(scope: IConstruct) -> list[str]:
    """The guard's findings for ``scope``'s app, from its last synth's templates (one line each): for tests and
    tools that hold the app after ``app.synth()``."""
    root = scope.node.root
    outdir = Path(root.outdir if isinstance(root, Stage) else ".").resolve()
    templates = sorted(
        p
        for p in outdir.rglob("*.template.json")
        if not p.name.endswith(".nested.template.json") and not any(part.startswith("asset.") for part in p.parts)
    )
    return [f.line(outdir) for f in assembly_problems(templates, acknowledgements(root), _construct_paths(root))]


__all__ = [
    "AWS_MANAGED_POLICIES",
    "Acknowledgement",
    "GuardFinding",
    "PolicyGuard",
    "RESOURCE_POLICIES",
    "WILDCARD_ONLY_ACTIONS",
    "WildcardOnly",
    "allowed_now",
    "assembly_problems",
    "guard",
    "record",
    "template_problems",
]
