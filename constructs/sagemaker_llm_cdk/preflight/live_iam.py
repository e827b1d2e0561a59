"""Live preflight check against IAM: the trust policies of the roles a session front door grants.

``check_front_door_callers`` reads each role of ``sessions.callers`` (``GetRole``, read-only) and checks its
trust policy against the owner mode: under ``owner: session`` no caller may choose its session name, under
``owner: cognito_identity`` the role trusts only the listed identity pools.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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
    import json
    from urllib.parse import unquote

    from ..sessions.trust import cognito_pool_problems, session_name_choices

    callers = list(_front_door_callers(ctx))
    if not callers:
        return
    iam = ctx.clients.client("iam", ctx.region)
    for path, sessions, arn in callers:
        name = arn.rsplit("/", 1)[1]
        try:
            role = iam.get_role(RoleName=name)["Role"]
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
        document = role.get("AssumeRolePolicyDocument") or {}
        if isinstance(document, str):  # the API's URL-encoded JSON, when no client decoded it
            document = json.loads(unquote(document))
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
