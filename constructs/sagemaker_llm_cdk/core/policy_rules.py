"""The policy guard's rules over one synthesized template, and the findings they make.

``template_problems`` reads every identity policy (with the inline policies of roles, users and groups and
their managed policy attachments), every resource policy and every ``AWS::Lambda::Permission`` of a template
and returns a ``GuardFinding`` for each statement or attachment it refuses (see ``policy_guard``);
``assembly_problems`` does so for a cloud assembly's templates and the nested stack templates beside them.
``template_key`` is the one form of a template's path the guard's maps are keyed by.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .policy_acknowledgements import Acknowledgement
from .policy_documents import (
    MAPPINGS,
    _arn_text,
    _as_list,
    _broad_action,
    _condition_keys,
    _effect,
    _intrinsic,
    _read_statements,
    _wild,
    render,
    statement_unreadable,
    unreadable,
)
from .policy_properties import schema_reads
from .policy_tables import (
    _INLINE,
    _WILDCARD_ONLY,
    AWS_MANAGED_POLICIES,
    IDENTITY_POLICIES,
    LIMITING_CONDITION_KEYS,
    RESOURCE_POLICIES,
)
from .trust_rules import trust_problems


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
            with contextlib.suppress(ValueError):
                template = self.template.relative_to(relative_to)
        where = f" ({self.construct_path})" if self.construct_path else ""
        return f"{template} {self.logical_id}{where} {self.location}: {self.text}"


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
    parameters = {**(template.get("Parameters") or {}), MAPPINGS: template.get("Mappings") or {}}
    findings: list[GuardFinding] = []
    for logical_id, resource in resources.items():
        if not isinstance(resource, dict):
            continue
        construct_path = paths.get((str(path), logical_id)) or str(
            (resource.get("Metadata") or {}).get("aws:cdk:path", "")
        )
        mine = [
            r
            for r in records
            if construct_path and (construct_path == r.scope or construct_path.startswith(r.scope + "/"))
        ]
        findings += [
            GuardFinding(rule, path, logical_id, location, text, construct_path)
            for rule, location, text in _resource_problems(logical_id, resource, resources, mine, account, parameters)
        ]
    return findings


def _resource_problems(
    logical_id: str,
    resource: Mapping[str, Any],
    resources: Mapping[str, Any],
    mine: Sequence[Acknowledgement],
    account: str | None,
    parameters: Mapping[str, Any],
) -> list[tuple[str, str, str]]:
    """(rule, location, text) of every refused statement or attachment of one resource; ``mine``: the
    acknowledgements whose scope holds it."""
    kind = str(resource.get("Type", ""))
    properties = resource.get("Properties") or {}
    problems: list[tuple[str, str, str]] = []

    def found(rule: str, location: str, text: str) -> None:
        problems.append((rule, location, text))

    documents: list[tuple[str, Any]] = []
    if kind in IDENTITY_POLICIES:
        documents.append((IDENTITY_POLICIES[kind], properties.get(IDENTITY_POLICIES[kind])))
    if kind in _INLINE:
        for p, policy in enumerate(_as_list(properties.get("Policies"))):
            if not isinstance(policy, dict) or _intrinsic(policy):
                found(
                    "UnreadablePolicy", f"Policies[{p}]", f"is {render(policy)[:160]}, not a policy the guard can read"
                )
                continue
            name = policy.get("PolicyName") if isinstance(policy, dict) else None
            label = f"Policies[{p}]" + (f" ({render(name)})" if name is not None else "")
            documents.append(
                (f"{label}.PolicyDocument", policy.get("PolicyDocument") if isinstance(policy, dict) else None)
            )
        for m, arn in enumerate(_as_list(properties.get("ManagedPolicyArns"))):
            problem = _attachment_problem(arn, logical_id, resources)
            if problem:
                found("UnreadablePolicy", f"ManagedPolicyArns[{m}]", problem)
    read: list[tuple[str, Any, bool]] = [(where, document, True) for where, document in documents]
    if kind in RESOURCE_POLICIES:
        read.append((RESOURCE_POLICIES[kind], properties.get(RESOURCE_POLICIES[kind]), False))
    extra, schema_problems = schema_reads(kind, properties, parameters, _handled(kind))
    read += extra
    problems += schema_problems
    for location, group in _groups(kind, properties):
        problem = _group_problem(group, resources)
        if problem:
            found("UnreadablePolicy", location, problem)
    for where, document, identity in read:
        statements, unread = _read_statements(document)
        document_statements = [s for _, s in statements]
        for label, text in unread:
            found("UnreadablePolicy", f"{where}.{label}" if label else where, text)
        for label, statement in statements:
            location = _statement_location(where, label, statement)
            for text in statement_unreadable(statement, parameters):
                found("UnreadablePolicy", location, text)
            judged = (
                _identity_problems(statement, mine) if identity else _resource_policy_problems(statement, kind, account)
            )
            if kind == ENDPOINT_POLICY and not identity:
                judged += _endpoint_resource_problems(statement, properties.get("EndpointName"))
            if kind == "AWS::IAM::Role" and where == "AssumeRolePolicyDocument":
                judged += trust_problems(statement, document_statements, account)
            for rule, text in judged:
                found(rule, location, text)
    if kind == "AWS::Lambda::Permission":
        for key in ("Principal", "Action", "SourceArn", "SourceAccount", "PrincipalOrgID"):
            deploy_time = unreadable(properties.get(key), parameters)
            if deploy_time:
                found("UnreadablePolicy", key, f"holds {'; '.join(deploy_time)}: the guard cannot read what it allows")
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
    return problems


ENDPOINT_POLICY = "Custom::SageMakerEndpointPolicy"
"""The library's endpoint policy (``routing/endpoint_policy.py``): each statement must name the endpoint's ARN."""


def _handled(kind: str) -> set[str]:
    """The property paths of ``kind`` that ``_resource_problems`` reads itself (the table's others are read too)."""
    paths = {p for p in (IDENTITY_POLICIES.get(kind), RESOURCE_POLICIES.get(kind)) if p}
    if kind in _INLINE:
        paths.add("Policies[].PolicyDocument")
    if kind == "AWS::Lambda::Permission":
        paths.add("Principal")
    return paths


def _endpoint_resource_problems(statement: Mapping[str, Any], endpoint_name: Any) -> list[tuple[str, str]]:
    """An endpoint policy's ``Allow`` must name the endpoint's own ARN (``...:endpoint/<EndpointName>``) in every
    ``Resource``: ``PutEndpointPolicy`` stores what it is given, and ``*`` or another resource says more than the
    policy can mean."""
    if _effect(statement) != "Allow":
        return []
    name = endpoint_name.lower() if isinstance(endpoint_name, str) else None
    resources = [_arn_text(r) for r in _as_list(statement.get("Resource"))]
    bad = [
        r
        for r in resources
        if _wild(r)
        or not (match := re.fullmatch(r"arn:[^:]+:sagemaker:[^:]*:[^:]*:endpoint/(.+)", r))
        or (name is not None and match.group(1).lower() != name)
    ]
    if resources and not bad:
        return []
    return [
        (
            "UnacknowledgedWildcard",
            f"allows {[render(a) for a in _as_list(statement.get('Action'))]} on {bad or 'no Resource'}: an endpoint "
            f"policy's Resource must be the endpoint's ARN (arn:<partition>:sagemaker:<region>:<account>:endpoint/"
            f"{endpoint_name if isinstance(endpoint_name, str) else '<EndpointName>'})",
        )
    ]


def _groups(kind: str, properties: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(location, group) of every IAM group a user is added to (``AWS::IAM::User`` ``Groups``, and
    ``AWS::IAM::UserToGroupAddition`` ``GroupName``)."""
    if kind == "AWS::IAM::User":
        return [(f"Groups[{i}]", g) for i, g in enumerate(_as_list(properties.get("Groups")))]
    if kind == "AWS::IAM::UserToGroupAddition":
        return [("GroupName", properties.get("GroupName"))]
    return []


def _group_problem(group: Any, resources: Mapping[str, Any]) -> str | None:
    """Why adding a user to ``group`` is refused: the template does not hold the group, so its policies are unread."""
    if isinstance(group, dict) and list(group) == ["Ref"]:
        target = resources.get(group["Ref"])
        if isinstance(target, dict) and target.get("Type") == "AWS::IAM::Group":
            return None
    held = {
        (r.get("Properties") or {}).get("GroupName")
        for r in resources.values()
        if isinstance(r, dict) and r.get("Type") == "AWS::IAM::Group"
    }
    if isinstance(group, str) and group in held:
        return None
    return (
        f"adds a user to the group {render(group)!r}, which the template does not hold: the guard cannot read the "
        "policies the user gets from it (define the group in this template and Ref it)"
    )


def _statement_location(where: str, label: str, statement: Mapping[str, Any]) -> str:
    sid = statement.get("Sid")
    return f"{where}.{label}" + (f" (Sid {render(sid)})" if sid else "")


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
        wild = _wild(resource)
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
    if any(_wild(r) for r in resources):
        keys = _condition_keys(statement, exact=False)
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
