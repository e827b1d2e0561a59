"""Live preflight checks against IAM: the trust policies of the roles a session front door grants.

``check_front_door_callers`` reads each role of ``sessions.callers`` (``GetRole``, read-only) and checks its
trust policy against the owner mode: under ``owner: session`` no caller may choose its session name, under
``owner: cognito_identity`` the role trusts only the listed identity pools.

``check_source_identity_chains`` reads every role of the account (``ListRoles``, read-only) when some role is
pinned to the source identity (``grant_invoke_pinned(pin="source_identity")`` in the templates, or a caller role
whose trust carries the pin), and reports each role that lets a caller set any source identity and whose sessions
the pinned role's trust lets in: AWS does not check a source identity's value, so such a role's session can carry
another person's name into the pinned role.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .context import PreflightContext
from .findings import Finding, blocker, info, warning
from .live_errors import _DENIED, _NOT_FOUND, _error_code

TRUST_FIX = (
    "pin the session name in the role's trust policy (a Deny unless sts:RoleSessionName equals "
    "${aws:username}, or ${aws:SourceIdentity} for people signed in through an identity provider, each "
    "with a Null Deny on that key: docs/sessions-trust.md; SessionFrontDoor.grant_invoke_pinned writes "
    "them for a role defined in the app), or set sessions.owner: role when one backend keeps its users "
    "apart"
)


def _front_door_callers(ctx: PreflightContext) -> Iterator[tuple[str, Any, str]]:
    """(config path, sessions settings, role ARN) of every role a front door grants through ``sessions.callers``."""
    for endpoint_path, endpoint in ctx.endpoints():
        for index, model in enumerate(endpoint.models):
            sessions = getattr(model, "sessions", None)
            for c_index, arn in enumerate(getattr(sessions, "callers", ()) or ()):
                yield f"{endpoint_path}.models[{index}].sessions.callers[{c_index}]", sessions, arn


def check_front_door_callers(ctx: PreflightContext) -> Iterable[Finding]:
    """Read each front-door caller role's trust policy (iam:GetRole, read-only) against the owner mode.

    Under ``owner: session`` the owner includes the session name: a trust policy that lets a caller choose
    it lets that caller act as anyone else who assumes the role (and continue their conversations)."""
    if ctx.clients is None:
        return

    from ..sessions.trust import (
        cognito_pool_problems,
        missing_set_source_identity,
        pinned_to_source_identity,
        session_name_choices,
    )

    callers = list(_front_door_callers(ctx))
    if not callers:
        return
    iam = ctx.clients.client("iam", ctx.region)
    for path, sessions, arn in callers:
        name = arn.rsplit("/", 1)[1]
        try:
            role = _get_role(ctx, iam, name)
        except Exception as error:
            code = _error_code(error)
            if code in _DENIED:
                yield warning(
                    "sessions.trust",
                    f"not allowed to read role {name} ({code})",
                    "whether its callers can choose their session name is unknown",
                    "allow iam:GetRole on it for this check",
                    path,
                )
            elif code == "NoSuchEntity" or code in _NOT_FOUND:
                yield blocker(
                    "sessions.trust",
                    f"role {arn} does not exist",
                    "the stack attaches the front door's grant to it; CloudFormation fails the deploy",
                    "create the role first, or remove it from sessions.callers",
                    path,
                )
            else:
                yield warning(
                    "sessions.trust", f"GetRole {name} failed ({code})", "its trust policy is unknown", "retry", path
                )
            continue
        document = _decoded(role.get("AssumeRolePolicyDocument"))
        mode = sessions.owner
        if mode == "role":
            yield info(
                "sessions.trust",
                f"owner role: every session of {name} is one owner (its callers keep their users apart)",
                subject=path,
            )
            continue
        if mode == "cognito_identity":
            problems = cognito_pool_problems(document, sessions.identity_pools)
            for problem in problems:
                yield warning(
                    "sessions.trust",
                    f"role {name}: {problem}",
                    "owner cognito_identity serves the identities the role's trust lets in: those of "
                    "another pool would be served too, or none at all",
                    "trust cognito-identity.amazonaws.com with StringEquals "
                    "cognito-identity.amazonaws.com:aud set to the pools of sessions.identity_pools",
                    path,
                )
            if not problems:
                yield info("sessions.trust", f"role {name} trusts only the listed identity pools", subject=path)
            continue
        if pinned_to_source_identity(document):
            for gap in missing_set_source_identity(document):
                yield warning(
                    "sessions.trust",
                    f"role {name}: {gap}",
                    "IAM authorizes sts:SetSourceIdentity on a role whenever the request carries a source identity, "
                    "so the source_identity pin then refuses every session it was written for",
                    "add sts:SetSourceIdentity to the Action of each Allow statement of the role's trust policy "
                    "(sessions.trust.with_set_source_identity writes it)",
                    path,
                )
        choices = session_name_choices(document)
        for choice in choices:
            yield warning(
                "sessions.trust",
                f"role {name}: {choice}",
                "under owner session the conversation owner includes the session name: a caller that "
                "chooses it can act as anyone else who assumes the role and continue their conversations",
                TRUST_FIX,
                path,
            )
        if not choices:
            yield info("sessions.trust", f"role {name}: no caller chooses its session name", subject=path)


def _pinned_roles(ctx: PreflightContext, iam: Any) -> Iterator[tuple[str, str, list[str]]]:
    """(subject, role, AWS principals its Allow statements trust for sts:AssumeRole) of every role pinned to the
    source identity: those of the synthesized templates, and the callers of the config whose trust is pinned."""
    from ..core.policy_documents import _arn_text
    from ..sessions.trust import pinned_to_source_identity, trusted_principals

    for template_name, template in sorted((ctx.templates or {}).items()):
        for logical_id, resource in sorted((template.get("Resources") or {}).items()):
            if not isinstance(resource, dict) or resource.get("Type") != "AWS::IAM::Role":
                continue
            document = (resource.get("Properties") or {}).get("AssumeRolePolicyDocument")
            if isinstance(document, dict) and pinned_to_source_identity(document):
                principals = [_arn_text(p) for p in trusted_principals(document, "sts:AssumeRole")]
                yield f"{template_name} {logical_id}", logical_id, [_bound(p, ctx) for p in principals]
    for path, _, arn in _front_door_callers(ctx):
        document = _role_document(ctx, iam, arn.rsplit("/", 1)[1])
        if document is not None and pinned_to_source_identity(document):
            yield path, arn, [_bound(str(p), ctx) for p in trusted_principals(document, "sts:AssumeRole")]


def _bound(text: str, ctx: PreflightContext) -> str:
    """A principal as the template writes it, with the deploying account and partition in place of references."""
    text = text.replace("<AWS::AccountId>", ctx.account or "<AWS::AccountId>")
    return text.replace("<AWS::Partition>", ctx.partition or "aws")


def _get_role(ctx: PreflightContext, iam: Any, name: str) -> dict[str, Any]:
    """``GetRole``'s ``Role``, read once per preflight run (``ctx.extra``): both checks here read the callers."""
    roles: dict[str, dict[str, Any]] = ctx.extra.setdefault("iam.roles", {})
    if name not in roles:
        roles[name] = iam.get_role(RoleName=name)["Role"]
    return roles[name]


def _role_document(ctx: PreflightContext, iam: Any, name: str) -> dict[str, Any] | None:
    try:
        return _decoded(_get_role(ctx, iam, name).get("AssumeRolePolicyDocument"))
    except Exception:  # check_front_door_callers reports what reading the role says
        return None


def _decoded(document: Any) -> dict[str, Any]:
    import json
    from urllib.parse import unquote

    if isinstance(document, str):  # the API's URL-encoded JSON, when no client decoded it
        document = json.loads(unquote(document))
    return document if isinstance(document, dict) else {}


def _lets_in(principals: Sequence[str], role_arn: str, account: str | None) -> bool:
    """Whether a trust naming ``principals`` for sts:AssumeRole lets sessions of ``role_arn`` in (its account's
    root or id lets every role of that account in, subject to the role's identity policy)."""
    role_account = role_arn.split(":")[4] if role_arn.count(":") >= 5 else account
    return any(p in ("*", role_arn, role_account) or p.endswith(f":iam::{role_account}:root") for p in principals)


def check_source_identity_chains(ctx: PreflightContext) -> Iterable[Finding]:
    """Report every role of the account that lets a caller set any source identity and whose sessions a role
    pinned to the source identity lets in (iam:ListRoles, read-only; nothing is read when no role is pinned)."""
    if ctx.clients is None:
        return
    from ..sessions.trust import source_identity_choices

    iam = ctx.clients.client("iam", ctx.region)
    pinned = list(_pinned_roles(ctx, iam))
    if not pinned:
        return
    try:
        roles = [r for page in iam.get_paginator("list_roles").paginate() for r in page.get("Roles", [])]
    except Exception as error:
        code = _error_code(error)
        yield warning(
            "sessions.source_identity",
            f"ListRoles failed ({code})",
            "whether a role of the account lets a caller set another person's source identity and chain into "
            f"{', '.join(p[1] for p in pinned)} is unknown",
            "allow iam:ListRoles for this check" if code in _DENIED else "retry",
        )
        return
    reported = 0
    for subject, pinned_role, principals in pinned:
        for role in sorted(roles, key=lambda r: str(r.get("Arn"))):
            arn = str(role.get("Arn", ""))
            if not _lets_in(principals, arn, ctx.account):
                continue
            for choice in source_identity_choices(_decoded(role.get("AssumeRolePolicyDocument"))):
                reported += 1
                yield warning(
                    "sessions.source_identity",
                    f"role {role.get('RoleName')} may set any source identity and chain into {pinned_role}: {choice}",
                    "AWS does not check a source identity's value: whoever may assume "
                    f"{role.get('RoleName')} can name itself after another person and, through that session, act "
                    "as that person at the front door (continue their conversations)",
                    f"fix the source identity in {role.get('RoleName')}'s trust (StringEquals sts:SourceIdentity "
                    "${aws:username}, or drop sts:SetSourceIdentity), or let only named roles into "
                    f"{pinned_role} (its trust names the account)",
                    subject,
                )
    if not reported:
        yield info(
            "sessions.source_identity",
            f"no role of the account lets a caller set any source identity and chain into "
            f"{', '.join(p[1] for p in pinned)} ({len(roles)} roles read)",
        )
