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
  (except the default key policy's ``kms:*`` for the key's own account root);
* role trust policies, beyond ``*`` (``trust_rules``): another account's principals without ``sts:ExternalId`` or
  an organization condition (``ForeignAccountTrust``), the own account root with no condition on who
  (``OwnRootTrust``), ``cognito-identity.amazonaws.com`` without ``aud`` and ``amr`` (``CognitoTrustUnpinned``);
* every other property that holds a policy or a principal, of every resource type CloudFormation's schemas define
  and of the library's custom resources (``policy_properties``: queue and topic inline policies, a table's
  ``ResourcePolicy``, ``AWS::Lambda::LayerVersionPermission``, ``Custom::SageMakerEndpointPolicy``, whose
  statements must name the endpoint's ARN, ...): read as resource or identity policies, principals that reach
  everyone refused; one the guard cannot read (a grammar that is not IAM's, a value behind an intrinsic) is an
  ``UnreadablePolicy``, never skipped; so is a user added to a group the template does not hold.

Action names are compared without regard to case, as IAM does (``S3:getobject`` is ``s3:GetObject``).

An acknowledgement (``Acknowledgement``) names a construct scope, a resource pattern *and* the actions allowed on
it, with the reason. ``grants.grant`` records exactly the resources and actions of its statement;
``grants.acknowledge_wildcard_only``, ``grants.allow_wildcard_actions``, ``nag.acknowledge_resource`` and
``nag.acknowledge`` of an ``AwsSolutions-IAM5`` finding record theirs (given, or else the actions the scope's
policies allow on that resource when the acknowledgement is made: what was reviewed with it). A statement added
later with another action on the same resource is a finding.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import jsii
from aws_cdk import (
    IPolicyValidationContext,
    IPolicyValidationPlugin,
    PolicyValidationPluginReport,
    PolicyViolatingResource,
    PolicyViolation,
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

from .policy_acknowledgements import _RECORDS, Acknowledgement, acknowledgements
from .policy_acknowledgements import _remember as _remember
from .policy_acknowledgements import allowed_now as allowed_now
from .policy_acknowledgements import stack_of as stack_of
from .policy_documents import _as_list as _as_list
from .policy_documents import _statements as _statements
from .policy_documents import render as render
from .policy_rules import GuardFinding, assembly_problems
from .policy_rules import template_key as template_key
from .policy_rules import template_problems as template_problems
from .policy_tables import AWS_MANAGED_POLICIES as AWS_MANAGED_POLICIES
from .policy_tables import RESOURCE_POLICIES as RESOURCE_POLICIES
from .policy_tables import WILDCARD_ONLY_ACTIONS as WILDCARD_ONLY_ACTIONS
from .policy_tables import WildcardOnly as WildcardOnly

PLUGIN_NAME = "SageMakerLlmPolicyGuard"
"""The validation plugin's name: its findings appear under it in CDK's report (and in ``nag-findings.md``)."""
_PLUGIN = "_sagemaker_llm_cdk_policy_guard"


def record(scope: IConstruct, resources: Iterable[str], actions: Iterable[str], reason: str) -> None:
    """Record that ``actions`` are acknowledged on each of ``resources`` (patterns as cdk-nag writes them) for the
    policies under ``scope``, and make sure the guard runs on ``scope``'s app. Raises ``ValueError`` (naming every
    problem) when they would allow more than a reviewed wildcard may (``breadth_problems``)."""
    from .policy_acknowledgements import refuse_breadth

    path = scope.node.path
    resources = list(resources)
    patterns = tuple(dict.fromkeys(a.lower() for a in actions))
    refuse_breadth(path, "an acknowledgement", resources, patterns)
    root = scope.node.root
    records: list[Acknowledgement] | None = getattr(root, _RECORDS, None)
    if records is None:
        records = []
        setattr(root, _RECORDS, records)
    records.extend(Acknowledgement(path, resource, patterns, reason) for resource in dict.fromkeys(resources))
    guard(root)


# ------------------------------------------------------------------ the plugin
def guard(scope: IConstruct) -> None:
    """Run the guard (``PolicyGuard``) at the synth of ``scope``'s app (added once per app)."""
    root = scope.node.root
    if getattr(root, _PLUGIN, None) is not None:
        return
    plugin = PolicyGuard(root)
    setattr(root, _PLUGIN, plugin)
    Validations.of(root).add_plugins(plugin)


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
    "ForeignAccountTrust": (
        "add a condition the other account's principals must meet: sts:ExternalId (StringEquals, for a third party) "
        "or aws:PrincipalOrgID (StringEquals o-...) for an account of your organization"
    ),
    "OwnRootTrust": (
        "name the principals that may assume the role (iam.ArnPrincipal, or a condition on aws:PrincipalArn / "
        "aws:PrincipalTag), or pin its sessions (SessionFrontDoor.grant_invoke_pinned)"
    ),
    "CognitoTrustUnpinned": (
        "use iam.FederatedPrincipal('cognito-identity.amazonaws.com', conditions={'StringEquals': "
        "{'cognito-identity.amazonaws.com:aud': <identity pool id>}, 'ForAnyValue:StringLike': "
        "{'cognito-identity.amazonaws.com:amr': 'authenticated'}}, 'sts:AssumeRoleWithWebIdentity')"
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
    return [
        f.line(outdir)
        for f in assembly_problems(
            templates, acknowledgements(root), _construct_paths(root), accounts=assembly_accounts(outdir)
        )
    ]


def assembly_accounts(outdir: Path) -> dict[str, str | None]:
    """template path (``template_key``) -> the account its stack is bound to (``None``: environment-agnostic), from
    the manifests of the cloud assembly in ``outdir`` and of its nested assemblies (a pipeline's stages): what CDK
    hands the plugin as ``stack_templates``, for a reader of the written assembly."""
    import json

    accounts: dict[str, str | None] = {}
    for manifest in sorted(outdir.rglob("manifest.json")):
        try:
            artifacts = json.loads(manifest.read_text(encoding="utf-8")).get("artifacts") or {}
        except (OSError, ValueError):
            continue
        for artifact in artifacts.values():
            if not isinstance(artifact, dict) or artifact.get("type") != "aws:cloudformation:stack":
                continue
            template = (artifact.get("properties") or {}).get("templateFile")
            account = str(artifact.get("environment", "")).removeprefix("aws://").split("/")[0]
            if isinstance(template, str):
                known = account.isdigit() and len(account) == 12
                accounts[template_key(manifest.parent / template)] = account if known else None
    return accounts


__all__ = [
    "AWS_MANAGED_POLICIES",
    "Acknowledgement",
    "GuardFinding",
    "PolicyGuard",
    "RESOURCE_POLICIES",
    "WILDCARD_ONLY_ACTIONS",
    "WildcardOnly",
    "allowed_now",
    "assembly_accounts",
    "assembly_problems",
    "guard",
    "record",
    "template_problems",
]
