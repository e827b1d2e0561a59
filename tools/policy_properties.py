"""The properties of CloudFormation resource types that hold an IAM policy or a principal, read from the schemas.

Usage: ``python -m tools.policy_properties > constructs/sagemaker_llm_cdk/core/policy_properties.json``

Every property path (nested ones too: ``Policies[].PolicyDocument``, ``ResourcePolicy.PolicyDocument``) of every
resource type cfn-lint ships a schema for, and of the library's own custom resources (``LIBRARY``), whose name
looks like a policy or a principal (``CANDIDATE``) is classified, in this order:

1. ``REVIEW``: a decision per type and path, for the ones the rules below would get wrong;
2. ``NOT_IAM``: names that are never an IAM policy (scaling, retry, lifecycle, TLS policies...), each with why,
   for the property or any property that holds it;
3. a flag or a number is never a policy;
4. ``Principal``/``Principals``/``*Principal`` holding text: a principal (``principal``);
5. a document (object or text) whose name ends in ``PolicyDocument``, ``PolicyText``, ``KeyPolicy``,
   ``ResourcePolicy``, ``AccessPolicies``/``AccessPolicy`` or is ``Policy``, and whose description (if any) does not
   say otherwise: an IAM resource policy (``resource``);
6. anything else is an error: the tool names it, and someone decides it in ``REVIEW``.

The output (``policy_properties.json``) holds the ``identity``, ``resource`` and ``principal`` paths per type, and
the schema set it was read from; ``tests/checks/test_policy_properties.py`` regenerates it from the installed
cfn-lint and fails when it differs (a schema added a policy-bearing property the guard would not read).
"""

from __future__ import annotations

import glob
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CANDIDATE = re.compile(r"(Polic(y|ies)|PolicyDocument|PolicyText|Principals?|^Statement)$")
"""Property names that may hold a policy document, one statement of one, or a principal."""

IDENTITY = "identity"
RESOURCE = "resource"
PRINCIPAL = "principal"
UNREAD = "unread"
STATEMENT = "statement"
KINDS = (IDENTITY, RESOURCE, PRINCIPAL, UNREAD, STATEMENT)
"""``identity``: an IAM identity policy; ``resource``: an IAM resource policy (or a role's trust policy);
``principal``: who a permission is given to; ``unread``: says who may do what in a grammar that is not IAM's
(Cedar, OpenSearch Serverless rules), which the guard does not read: a template that sets one fails;
``statement``: one statement of an IAM resource policy (an event bus policy's ``Statement``), read as a document
that holds only it."""

LIBRARY: dict[str, dict[str, str]] = {
    "Custom::SageMakerEndpointPolicy": {"ResourcePolicy": RESOURCE},
}
"""The library's own custom resources that carry a policy (``routing/endpoint_policy.py``): path -> kind."""

_IAM_IDENTITY = "an IAM identity policy"
REVIEW: dict[tuple[str, str], str] = {
    # IAM identity policies (the guard reads them with acknowledgements).
    ("AWS::IAM::Policy", "PolicyDocument"): IDENTITY,
    ("AWS::IAM::ManagedPolicy", "PolicyDocument"): IDENTITY,
    ("AWS::IAM::RolePolicy", "PolicyDocument"): IDENTITY,
    ("AWS::IAM::UserPolicy", "PolicyDocument"): IDENTITY,
    ("AWS::IAM::GroupPolicy", "PolicyDocument"): IDENTITY,
    ("AWS::IAM::Role", "Policies[].PolicyDocument"): IDENTITY,
    ("AWS::IAM::User", "Policies[].PolicyDocument"): IDENTITY,
    ("AWS::IAM::Group", "Policies[].PolicyDocument"): IDENTITY,
    ("AWS::SSO::PermissionSet", "InlinePolicy"): IDENTITY,
    ("AWS::RolesAnywhere::Profile", "SessionPolicy"): IDENTITY,
    ("AWS::Transfer::User", "Policy"): IDENTITY,
    ("AWS::EKS::PodIdentityAssociation", "Policy"): IDENTITY,
    # A role's trust policy is a resource policy of the role.
    ("AWS::IAM::Role", "AssumeRolePolicyDocument"): RESOURCE,
    # Resource policies whose names the rules do not recognise.
    ("AWS::AIOps::InvestigationGroup", "InvestigationGroupPolicy"): RESOURCE,
    ("AWS::Comprehend::DocumentClassifier", "ModelPolicy"): RESOURCE,
    ("AWS::Comprehend::EntityRecognizer", "ModelPolicy"): RESOURCE,
    ("AWS::ECR::RepositoryCreationTemplate", "RepositoryPolicy"): RESOURCE,
    ("AWS::EFS::FileSystem", "FileSystemPolicy"): RESOURCE,
    ("AWS::Logs::DeliveryDestination", "DeliveryDestinationPolicy.DeliveryDestinationPolicy"): RESOURCE,
    ("AWS::Logs::Destination", "DestinationPolicy"): RESOURCE,
    ("AWS::SageMaker::ModelPackageGroup", "ModelPackageGroupPolicy"): RESOURCE,
    ("AWS::IoT::Policy", "PolicyDocument"): IDENTITY,
    # Who may do what, in a grammar that is not IAM's.
    ("AWS::OpenSearchServerless::AccessPolicy", "Policy"): UNREAD,
    ("AWS::EC2::VerifiedAccessEndpoint", "PolicyDocument"): UNREAD,
    ("AWS::EC2::VerifiedAccessGroup", "PolicyDocument"): UNREAD,
    ("AWS::BedrockAgentCore::Policy", "Definition.Policy"): UNREAD,
    ("AWS::EKS::AccessEntry", "AccessPolicies"): UNREAD,
    ("AWS::BedrockAgentCore::Policy", "Definition.Cedar.Statement"): UNREAD,
    ("AWS::VerifiedPermissions::Policy", "Definition.Static.Statement"): UNREAD,
    ("AWS::VerifiedPermissions::PolicyTemplate", "Statement"): UNREAD,
    # One statement of an IAM resource policy.
    ("AWS::Events::EventBusPolicy", "Statement"): STATEMENT,
    ("AWS::BedrockAgentCore::Policy", "Definition.Policy.Statement"): (
        "not: inside Definition.Policy, which is refused as unread as a whole"
    ),
    ("AWS::WAFv2::RuleGroup", "Rules[].Statement"): "not: a WAF rule statement (request matching), not IAM",
    ("AWS::WAFv2::RuleGroup", "Rules[].Statement.NotStatement.Statement"): "not: a WAF rule statement, not IAM",
    ("AWS::WAFv2::WebACL", "Rules[].Statement"): "not: a WAF rule statement (request matching), not IAM",
    ("AWS::WAFv2::WebACL", "Rules[].Statement.NotStatement.Statement"): "not: a WAF rule statement, not IAM",
    # Containers: the document inside them is classified on its own path.
    ("AWS::IAM::Role", "Policies"): "not: a list of inline policies; each item's PolicyDocument is read",
    ("AWS::IAM::User", "Policies"): "not: a list of inline policies; each item's PolicyDocument is read",
    ("AWS::IAM::Group", "Policies"): "not: a list of inline policies; each item's PolicyDocument is read",
    ("AWS::EC2::ClientVpnEndpoint", "AuthorizationPolicy"): "not: holds the PolicyDocument, read on its own path",
    ("AWS::Logs::DeliveryDestination", "DeliveryDestinationPolicy"): (
        "not: holds the DeliveryDestinationPolicy document, read on its own path"
    ),
    # Named like a policy, but not an IAM policy or principal.
    ("AWS::Bedrock::Guardrail", "AutomatedReasoningPolicyConfig.Policies"): "not: ARNs of reasoning policies",
    ("AWS::CleanRoomsML::ConfiguredModelAlgorithmAssociation", "PrivacyConfiguration.Policies"): (
        "not: training data privacy settings"
    ),
    ("AWS::Cognito::UserPool", "Policies"): "not: password and sign-in rules",
    ("AWS::ECS::ExpressGatewayService", "ECSManagedResourceArns.AutoScaling.ApplicationAutoScalingPolicies"): (
        "not: ARNs of scaling policies (read-only)"
    ),
    ("AWS::CleanRooms::ConfiguredTable", "AnalysisRules[].Policy"): "not: an analysis rule (columns, aggregations)",
    ("AWS::CleanRooms::ConfiguredTableAssociation", "ConfiguredTableAssociationAnalysisRules[].Policy"): (
        "not: an analysis rule (allowed result receivers)"
    ),
    ("AWS::CleanRooms::IntermediateTable", "AnalysisRules[].Policy"): "not: an analysis rule (columns, aggregations)",
    ("AWS::Config::ConfigRule", "Source.CustomPolicyDetails.PolicyText"): "not: a Guard rule that evaluates resources",
    ("AWS::Config::OrganizationConfigRule", "OrganizationCustomPolicyRuleMetadata.PolicyText"): (
        "not: a Guard rule that evaluates resources"
    ),
    ("AWS::IVS::Channel", "MultitrackInputConfiguration.Policy"): "not: ALLOW or REQUIRE multitrack input",
    ("AWS::Logs::AccountPolicy", "PolicyDocument"): "not: a data protection, index or subscription filter policy",
    ("AWS::NetworkManager::CoreNetwork", "PolicyDocument"): "not: a core network routing policy",
    ("AWS::OpenSearchServerless::LifecyclePolicy", "Policy"): "not: index retention rules",
    ("AWS::OpenSearchServerless::SecurityPolicy", "Policy"): "not: encryption or network settings",
    ("AWS::ResilienceHub::ResiliencyPolicy", "Policy"): "not: recovery time and point objectives",
    ("AWS::SES::ReceiptFilter", "Filter.IpFilter.Policy"): "not: Block or Allow mail from addresses",
    ("AWS::SES::Tenant", "ReputationEntity.Policy"): "not: an SES reputation policy",
    ("AWS::Events::ApiDestination", "ArnForPolicy"): "not: an ARN (read-only)",
    ("AWS::Events::Connection", "ArnForPolicy"): "not: an ARN (read-only)",
    ("AWS::Kendra::Index", "UserContextPolicy"): "not: a document filtering mode (ATTRIBUTE_FILTER or USER_TOKEN)",
    ("AWS::LakeFormation::PrincipalPermissions", "Resource.LFTagPolicy"): "not: LF-tag conditions on a resource",
    ("AWS::Lambda::CodeSigningConfig", "CodeSigningPolicies"): "not: what to do with an invalid signature",
    ("AWS::Logs::LogGroup", "FieldIndexPolicies"): "not: log field indexes",
    ("AWS::MPA::ApprovalTeam", "Policies"): "not: ARNs of approval policies",
    ("AWS::MediaStore::Container", "CorsPolicy"): "not: CORS rules",
    ("AWS::MediaStore::Container", "MetricPolicy"): "not: metric publishing rules",
    ("AWS::NetworkFirewall::FirewallPolicy", "FirewallPolicy"): "not: network firewall rules",
    ("AWS::QuickSight::DataSet", "RowLevelPermissionDataSet.PermissionPolicy"): "not: GRANT_ACCESS or DENY_ACCESS",
    ("AWS::SES::Tenant", "ReputationEntity.Policy.ReputationEntityPolicy"): "not: an SES reputation policy ARN",
    ("AWS::SSM::Parameter", "Policies"): "not: parameter expiration and notification policies",
    ("AWS::Transfer::WebApp", "WebAppEndpointPolicy"): "not: FIPS or STANDARD endpoint choice",
    ("AWS::ElasticLoadBalancing::LoadBalancer", "Policies"): "not: load balancer listener and back-end policies",
}
"""Decisions per (type, path): a kind, or ``not: <why>`` for a property that is not an IAM policy or principal."""

NOT_IAM: dict[str, str] = {
    "ScalingPolicy": "an auto scaling policy (capacity targets), not IAM",
    "ScalingPolicies": "auto scaling policies (capacity targets), not IAM",
    "AutoScalingPolicy": "an auto scaling policy (capacity rules), not IAM",
    "ManagedScalingPolicy": "a managed scaling policy (capacity limits), not IAM",
    "ScaleInPolicy": "a scale-in policy (capacity), not IAM",
    "RetryPolicy": "a retry policy (attempts, back-off), not IAM",
    "RestartPolicy": "a container restart policy, not IAM",
    "RedrivePolicy": "a dead-letter redrive setting (target and count), not IAM",
    "RedriveAllowPolicy": "which queues may use this one as a dead-letter queue (by ARN), not an IAM document",
    "DeliveryPolicy": "an SNS delivery retry policy, not IAM",
    "FilterPolicy": "an SNS message filter, not IAM",
    "ReplayPolicy": "an SNS message replay setting, not IAM",
    "ArchivePolicy": "an SNS message archive retention setting, not IAM",
    "DataProtectionPolicy": "a data protection (masking) policy: its statements name data identifiers, not grants",
    "LifecyclePolicy": "a lifecycle (retention, transition) policy, not IAM",
    "LifecyclePolicies": "lifecycle (transition) policies, not IAM",
    "LifecyclePolicyText": "an ECR image lifecycle policy, not IAM",
    "DeletionPolicy": "what happens on delete, not IAM",
    "DataDeletionPolicy": "what happens to data on delete, not IAM",
    "DeletePropagationPolicy": "what happens on delete, not IAM",
    "UpdateReplacePolicy": "what happens on replacement, not IAM",
    "FSxLustreDeletionPolicy": "what happens on delete, not IAM",
    "SecurityPolicy": "a TLS security policy name, not IAM",
    "TLSSecurityPolicy": "a TLS security policy name, not IAM",
    "TlsPolicy": "a TLS requirement, not IAM",
    "HttpsPolicy": "an HTTPS requirement, not IAM",
    "ViewerProtocolPolicy": "an HTTP/HTTPS protocol choice, not IAM",
    "OriginProtocolPolicy": "an HTTP/HTTPS protocol choice, not IAM",
    "ContentSecurityPolicy": "an HTTP Content-Security-Policy header, not IAM",
    "ReferrerPolicy": "an HTTP Referrer-Policy header, not IAM",
    "ImagePullPolicy": "a Kubernetes image pull policy, not IAM",
    "DnsPolicy": "a Kubernetes DNS policy, not IAM",
    "RollingUpdatePolicy": "a deployment policy, not IAM",
    "BlueGreenUpdatePolicy": "a deployment policy, not IAM",
    "UpdatePolicy": "an update policy, not IAM",
    "UpgradePolicy": "an upgrade policy, not IAM",
    "TerminationPolicies": "instance termination order, not IAM",
    "ExcessCapacityTerminationPolicy": "instance termination behaviour, not IAM",
    "MixedInstancesPolicy": "instance types and purchase options, not IAM",
    "InstanceMaintenancePolicy": "instance replacement limits, not IAM",
    "InstanceLifecyclePolicy": "instance lifecycle settings, not IAM",
    "InstanceReusePolicy": "warm pool reuse settings, not IAM",
    "AvailabilityZoneImpairmentPolicy": "zone impairment handling, not IAM",
    "AutoTerminationPolicy": "cluster idle timeout, not IAM",
    "BackupPolicy": "a backup on/off setting, not IAM",
    "BackupRetentionPolicy": "backup retention, not IAM",
    "ClientPolicy": "an App Mesh TLS client policy, not IAM",
    "ActionFailurePolicy": "what to do when a mail action fails, not IAM",
    "RoutingPolicy": "a DNS routing choice, not IAM",
    "NotificationPolicy": "an upload notification setting, not IAM",
    "PasswordPolicy": "password rules, not IAM",
    "SignInPolicy": "sign-in factors, not IAM",
    "IngestionWaitPolicy": "a SPICE ingestion wait setting, not IAM",
    "ResourceRetentionPolicy": "resource retention on delete, not IAM",
    "FairsharePolicy": "a job scheduling share policy, not IAM",
    "QuotaSharePolicy": "a job scheduling quota policy, not IAM",
    "PullRequestBuildPolicy": "which pull requests build, not IAM",
    "ScriptCachingPolicy": "script caching behaviour, not IAM",
    "ExecutionPolicy": "when a script runs, not IAM",
    "SafeguardPolicy": "a database log setting, not IAM",
    "AnswerPolicy": "how a model answers, not IAM",
    "PitPolicy": "point-in-time snapshot schedule, not IAM",
    "CertificatePolicies": "X.509 certificate policy object identifiers, not IAM",
    "ApplicationPolicies": "X.509 application policy object identifiers, not IAM",
    "DefaultPolicy": "the kind of a default lifecycle policy, not IAM",
    "EnterprisePolicies": "browser enterprise policy files, not IAM",
    "ConfigurationPolicy": "a Security Hub configuration (standards and controls), not IAM",
    "WebContentFilteringPolicy": "a web content filter, not IAM",
    "BrowserPolicy": "a Chrome browser policy, not IAM",
    "KerberosPrincipal": "a Kerberos service principal name, not an AWS principal",
    "PrincipalIdClaim": "a token claim name, not a principal",
    "GuardrailPolicies": "ARNs of managed policies used as guardrails (a narrowing, not a grant)",
    "ManagedPolicies": "ARNs of managed policies attached to a permission set (read by name, not a document here)",
    "TrafficPolicy": "a DNS traffic policy, not IAM",
    "AccessLoggingPolicy": "where access logs go, not IAM",
    "AppCookieStickinessPolicy": "session stickiness, not IAM",
    "LBCookieStickinessPolicy": "session stickiness, not IAM",
    "ConnectionDrainingPolicy": "connection draining, not IAM",
    "AlpnPolicy": "a TLS ALPN choice, not IAM",
    "SslPolicy": "a TLS security policy name, not IAM",
    "NetworkAclCommonPolicy": "network ACL rules, not IAM",
    "NetworkFirewallPolicy": "network firewall rules, not IAM",
    "ThirdPartyFirewallPolicy": "firewall rules, not IAM",
    "AutoExportPolicy": "which file changes export, not IAM",
    "AutoImportPolicy": "which file changes import, not IAM",
    "SnapshotPolicy": "a volume snapshot schedule, not IAM",
    "TieringPolicy": "storage tiering, not IAM",
    "GameSessionCreationLimitPolicy": "a game session limit, not IAM",
    "ResourceCreationLimitPolicy": "a game session limit, not IAM",
    "NewGameSessionProtectionPolicy": "game session protection, not IAM",
    "GameServerProtectionPolicy": "instance protection, not IAM",
    "PlayerLatencyPolicies": "player latency caps, not IAM",
    "RecrawlPolicy": "crawler behaviour, not IAM",
    "SchemaChangePolicy": "crawler behaviour, not IAM",
    "ResourceAccessPolicies": "Greengrass local resource access (read-only/read-write), not IAM",
    "DeploymentPolicies": "Greengrass deployment behaviour, not IAM",
    "ComponentUpdatePolicy": "Greengrass deployment behaviour, not IAM",
    "ConfigurationValidationPolicy": "Greengrass deployment behaviour, not IAM",
    "FailureHandlingPolicy": "Greengrass deployment behaviour, not IAM",
    "AutoDisablePolicy": "pipeline auto-disable, not IAM",
    "DlRatePolicy": "a LoRaWAN rate policy, not IAM",
    "UlRatePolicy": "a LoRaWAN rate policy, not IAM",
    "ScaleOutPolicy": "a scale-out policy (capacity), not IAM",
    "RuntimePolicy": "runtime version management, not IAM",
    "ProtocolPolicy": "an HTTP/HTTPS protocol choice, not IAM",
    "VotingPolicy": "blockchain voting rules, not IAM",
    "ApprovalThresholdPolicy": "blockchain voting rules, not IAM",
    "LanguageSelectionPolicy": "audio language selection, not IAM",
    "FillPolicy": "ad avail suppression, not IAM",
    "StreamExceptionPolicy": "firewall stream handling, not IAM",
}
"""Property names (the last segment of a path) that are never an IAM policy or principal, each with why."""


def _schemas(base: Path) -> dict[str, dict[str, Any]]:
    """Type name -> schema: one per type over every region's provider list (a type has one schema)."""
    hashes: dict[str, str] = {}
    for provider in sorted(glob.glob(str(base / "providers" / "*.json"))):
        if provider.endswith("sam.json"):
            continue
        for kind, digest in json.loads(Path(provider).read_text(encoding="utf-8")).items():
            hashes.setdefault(kind, digest)
    return {k: json.loads((base / "resources" / f"{h}.json").read_text(encoding="utf-8")) for k, h in hashes.items()}


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/definitions/"):
        return node
    target = schema.get("definitions", {}).get(ref.rsplit("/", 1)[-1], {})
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def properties(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every property path of ``schema`` (``a.b``, ``list[].c``) with its resolved node (definitions followed once
    per branch, so recursive definitions end)."""

    def walk(node: dict[str, Any], path: str, seen: frozenset[str]) -> Iterator[tuple[str, dict[str, Any]]]:
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in seen:
                return
            seen = seen | {ref}
        node = _resolve(schema, node)
        for key in ("oneOf", "anyOf", "allOf"):
            for sub in node.get(key) or []:
                if isinstance(sub, dict):
                    yield from walk(sub, path, seen)
        items = node.get("items")
        if isinstance(items, dict):
            yield from walk(items, f"{path}[]", seen)
        for name, child in (node.get("properties") or {}).items():
            if isinstance(child, dict):
                child_path = f"{path}.{name}" if path else name
                yield child_path, _resolve(schema, child)
                yield from walk(child, child_path, seen)

    yield from walk(schema, "", frozenset())


_DOCUMENT = re.compile(r"(PolicyDocument|PolicyText|KeyPolicy|ResourcePolicy|AccessPolic(y|ies)|^Policy)$")


def _types(node: dict[str, Any]) -> set[str]:
    kind = node.get("type")
    found = set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()
    for key in ("oneOf", "anyOf"):
        for sub in node.get(key) or []:
            if isinstance(sub, dict):
                found |= _types(sub)
    return found


def classify(kind: str, path: str, node: dict[str, Any]) -> str:
    """``identity``, ``resource``, ``principal`` or ``not: <why>`` for one candidate property; raises ``ValueError``
    for one no rule decides."""
    name = path.rsplit(".", 1)[-1].removesuffix("[]")
    if (kind, path) in REVIEW:
        return REVIEW[(kind, path)]
    outer = [n for n in (s.removesuffix("[]") for s in path.split(".")) if n in NOT_IAM]
    if outer:  # the property, or one that holds it, is not IAM
        return f"not: {NOT_IAM[outer[-1]]}"
    types = _types(node)
    if types and types <= {"boolean", "integer", "number"}:
        return "not: a flag or a number"
    if re.search(r"Principals?$", name) and types <= {"string", "array", "object"}:
        return PRINCIPAL if types & {"string", "array"} else f"not: an object describing a principal ({types})"
    if _DOCUMENT.search(name) and (not types or types & {"object", "string"}):
        return RESOURCE
    raise ValueError(f"{kind} {path} ({sorted(types)}): {str(node.get('description', ''))[:120]!r}")


def table(base: Path) -> dict[str, Any]:
    """The classified table (see the module docstring), and the unresolved candidates."""
    out: dict[str, dict[str, list[str]]] = {k: {} for k in KINDS}
    unresolved: list[str] = []
    for kind, schema in sorted(_schemas(base).items()):
        for path, node in properties(schema):
            if not CANDIDATE.search(path.rsplit(".", 1)[-1]):
                continue
            try:
                decision = classify(kind, path, node)
            except ValueError as error:
                unresolved.append(str(error))
                continue
            if decision in KINDS:
                out[decision].setdefault(kind, [])
                if path not in out[decision][kind]:
                    out[decision][kind].append(path)
    for decided in out.values():  # a container of a classified document is read through it
        for paths in decided.values():
            paths[:] = [p for p in paths if not any(q.startswith(f"{p}.") for q in paths)]
    for kind, paths in LIBRARY.items():
        for path, decision in paths.items():
            out[decision].setdefault(kind, []).append(path)
    return {"unresolved": unresolved, **{k: {t: sorted(p) for t, p in sorted(v.items())} for k, v in out.items()}}


def _schema_base() -> Path:
    import cfnlint

    return Path(cfnlint.__file__).parent / "data" / "schemas"


def main() -> int:
    import cfnlint.version

    result = table(_schema_base())
    unresolved = result.pop("unresolved")
    if unresolved:
        print("decide these in tools/policy_properties.py REVIEW or NOT_IAM:", *unresolved, sep="\n  ", file=sys.stderr)
        return 1
    print(json.dumps({"cfn-lint": cfnlint.version.__version__, **result}, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
