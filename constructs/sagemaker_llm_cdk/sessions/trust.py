"""Trust policies that fix the session name a front-door owner is read from, and a reader that finds where they do not.

Under ``owner: session`` the router reads the owner from the caller ARN Lambda verified,
``arn:<p>:sts::<account>:assumed-role/<role>/<session name>``. ``AssumeRole`` and
``AssumeRoleWithWebIdentity`` take ``RoleSessionName`` from the caller (``GetFederationToken`` takes the
federated user's name from the caller too; the router refuses those), so unless the role's trust policy
fixes the name, whoever may assume the role may pick any name, including another person's, and continue
that person's conversations. What fixes it (AWS documents each key for role trust policies):

- ``user_name``: IAM users of the role's account, the session name equal to their user name
  (``sts:RoleSessionName`` = ``${aws:username}``). Role sessions (role chaining), other accounts' principals
  and web-identity or SAML sessions are denied: none of them has a user name that is theirs alone.
- ``source_identity``: people who signed in through an identity provider that sets the source identity
  (SAML attribute ``https://aws.amazon.com/SAML/Attributes/SourceIdentity``, OIDC claim
  ``https://aws.amazon.com/source_identity``). The source identity persists through role chaining and
  cannot be changed; a role session must already carry one (``aws:SourceIdentity``), and the session name
  must equal it (``sts:RoleSessionName`` = ``${aws:SourceIdentity}``, or ``${sts:SourceIdentity}`` for a
  web identity). SAML sessions are named by the identity provider and are left as they are.
- Cognito identity pools (``owner: cognito_identity``): the owner is the identity id in the request
  context, which Cognito assigned; the trust must pin the pool (``cognito-identity.amazonaws.com:aud``).

The pins are Deny statements added to the role's trust policy, so they hold whatever its Allow statements
say. A policy variable that cannot be resolved makes its statement not apply, so each variable's Deny comes
with a second Deny on the variable's key being absent (``Null``): the pair fails closed.

Pure: no AWS calls, no CDK; ``SessionFrontDoor.grant_invoke_pinned`` adds the statements, the live
preflight (``preflight.live.check_front_door_callers``) reads roles with ``session_name_choices``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

SessionNamePin = Literal["user_name", "source_identity"]
SESSION_NAME_PINS: tuple[str, ...] = ("user_name", "source_identity")
COGNITO_PROVIDER = "cognito-identity.amazonaws.com"
ASSUME_ACTIONS = ("sts:AssumeRole", "sts:AssumeRoleWithWebIdentity", "sts:AssumeRoleWithSAML")


def _deny(sid: str, actions: Sequence[str], condition: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    statement: dict[str, Any] = {"Sid": sid, "Effect": "Deny", "Principal": "*", "Action": list(actions)}
    if condition:
        statement["Condition"] = condition
    return statement


def pin_statements(pin: str, *, account: str, organization: str | None = None) -> list[dict[str, Any]]:
    """The Deny statements (IAM JSON) that fix the session names of a role's sessions, per ``pin``.

    :param pin: ``user_name`` or ``source_identity`` (see the module docstring).
    :param account: the role's account: with ``user_name`` only its IAM users may assume the role
        (a user name is unique within one account only); with ``source_identity`` only its role sessions may
        chain in, unless ``organization`` is given.
    :param organization: ``source_identity`` only: the AWS Organizations id (``o-...``) whose accounts' role
        sessions may chain in (``aws:PrincipalOrgID``) instead of the role's account alone. A source identity is
        whatever the first ``AssumeRole`` of a chain set (AWS does not check its value), so the pin trusts the
        accounts it names to let only identity providers set one (the live preflight reports roles that let a
        caller set any).
    """
    if pin == "user_name":
        return [
            _deny(
                "PinSessionNameToUserName",
                ["sts:AssumeRole"],
                {"StringNotEquals": {"sts:RoleSessionName": "${aws:username}"}},
            ),
            _deny("OnlyIamUsersAssume", ["sts:AssumeRole"], {"Null": {"aws:username": "true"}}),
            _deny(
                "OnlyThisAccountsUsersAssume",
                ["sts:AssumeRole"],
                {"StringNotEquals": {"aws:PrincipalAccount": account}},
            ),
            _deny("NoFederatedSessions", ["sts:AssumeRoleWithWebIdentity", "sts:AssumeRoleWithSAML"]),
        ]
    if pin == "source_identity":
        return [
            _deny(
                "PinSessionNameToSourceIdentity",
                ["sts:AssumeRole"],
                {"StringNotEquals": {"sts:RoleSessionName": "${aws:SourceIdentity}"}},
            ),
            _deny("OnlySessionsWithSourceIdentityAssume", ["sts:AssumeRole"], {"Null": {"aws:SourceIdentity": "true"}}),
            _deny(
                "PinWebIdentitySessionNameToSourceIdentity",
                ["sts:AssumeRoleWithWebIdentity"],
                {"StringNotEquals": {"sts:RoleSessionName": "${sts:SourceIdentity}"}},
            ),
            _deny(
                "OnlyWebIdentitiesWithSourceIdentity",
                ["sts:AssumeRoleWithWebIdentity"],
                {"Null": {"sts:SourceIdentity": "true"}},
            ),
            _deny(
                "OnlyTheseAccountsSessionsAssume" if organization else "OnlyThisAccountsSessionsAssume",
                ["sts:AssumeRole"],
                {"StringNotEquals": {"aws:PrincipalOrgID": organization}}
                if organization
                else {"StringNotEquals": {"aws:PrincipalAccount": account}},
            ),
        ]
    raise ValueError(f"pin must be one of {', '.join(SESSION_NAME_PINS)}, got {pin!r}")


def cognito_statements(identity_pools: Sequence[str]) -> list[dict[str, Any]]:
    """Deny statements that keep a role to the signed-in web identities of ``identity_pools`` (``aud``, and
    ``amr`` holding ``authenticated``: a guest identity has an id too, but no person behind it), nothing else.

    Role chaining and SAML would give sessions without a Cognito identity (the router refuses them under
    ``owner: cognito_identity``); other web identity providers would name their own sessions."""
    return [
        _deny(
            "OnlyTheseIdentityPools",
            ["sts:AssumeRoleWithWebIdentity"],
            {"StringNotEquals": {f"{COGNITO_PROVIDER}:aud": list(identity_pools)}},
        ),
        _deny(
            "OnlySignedInIdentities",
            ["sts:AssumeRoleWithWebIdentity"],
            # Every value of amr other than "authenticated" (guests carry ["unauthenticated"]); none at all too.
            {"ForAllValues:StringNotEquals": {f"{COGNITO_PROVIDER}:amr": "authenticated"}},
        ),
        _deny("OnlyCognitoIdentities", ["sts:AssumeRole", "sts:AssumeRoleWithSAML"]),
    ]


SET_SOURCE_IDENTITY = "sts:SetSourceIdentity"


def with_set_source_identity(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` (a role's trust policy) with ``sts:SetSourceIdentity`` added to every Allow that lets an AWS
    principal or an identity provider assume the role.

    IAM authorizes ``sts:SetSourceIdentity`` on the role being assumed whenever the request carries a source
    identity: one the caller sets, one a SAML or OIDC provider asserts, and one a role session already carries
    into a chained ``AssumeRole`` (IAM User Guide, "Monitor and control actions taken with assumed roles":
    "Permissions required to set source identity"). Without it in the trust policy, exactly the sessions the
    ``source_identity`` pin lets in are refused. Service principals are left as they are (a service sets none)."""
    statements = []
    for statement in _as_list(document.get("Statement")):
        if (
            isinstance(statement, Mapping)
            and statement.get("Effect") == "Allow"
            and any(_covers(_as_list(statement.get("Action")), a) for a in ASSUME_ACTIONS)
            and not _covers(_as_list(statement.get("Action")), SET_SOURCE_IDENTITY)
            and {"AWS", "Federated"} & set(_principals(statement))
        ):
            statement = {**statement, "Action": [*_as_list(statement.get("Action")), SET_SOURCE_IDENTITY]}
        statements.append(statement)
    return {**document, "Statement": statements}


def trusted_principals(document: Mapping[str, Any], action: str) -> list[Any]:
    """The AWS principals of ``document``'s Allow statements that cover ``action``, as written."""
    return [
        value
        for statement in _as_list(document.get("Statement"))
        if isinstance(statement, Mapping)
        and statement.get("Effect") == "Allow"
        and _covers(_as_list(statement.get("Action")), action)
        for value in (
            ["*"]
            if statement.get("Principal") == "*"
            else _as_list((statement.get("Principal") or {}).get("AWS"))
            if isinstance(statement.get("Principal"), Mapping)
            else []
        )
    ]


def missing_set_source_identity(document: Mapping[str, Any]) -> list[str]:
    """Where ``document`` lets a principal assume the role but not carry a source identity in: one sentence each
    (the ``source_identity`` pin then refuses every session it was meant for)."""
    found = []
    for index, statement in enumerate(_as_list(document.get("Statement"))):
        if not isinstance(statement, Mapping) or statement.get("Effect") != "Allow":
            continue
        actions = _as_list(statement.get("Action"))
        who = sorted(p for kind in ("AWS", "Federated") for p in _principals(statement).get(kind, []))
        if who and any(_covers(actions, a) for a in ASSUME_ACTIONS) and not _covers(actions, SET_SOURCE_IDENTITY):
            name = statement.get("Sid") or f"Statement[{index}]"
            found.append(f"{name} lets {', '.join(who)} assume the role but not {SET_SOURCE_IDENTITY}")
    return found


def pinned_to_source_identity(document: Mapping[str, Any]) -> bool:
    """Whether ``document`` carries the ``source_identity`` pin: ``sts:AssumeRole`` denied unless the session name
    is the source identity the calling session already carries (``${aws:SourceIdentity}``), with its ``Null`` Deny.
    Such a role accepts only a source identity set earlier in the chain, never a new one."""
    denies = _denies(document, "sts:AssumeRole")
    named = any(
        _condition_values(s, ("StringNotEquals",), "sts:RoleSessionName") == ["${aws:SourceIdentity}"] for s in denies
    )
    return named and any(_condition_values(s, ("Null",), "aws:SourceIdentity") == ["true"] for s in denies)


def source_identity_choices(document: Mapping[str, Any]) -> list[str]:
    """Where ``document`` (any role's trust policy) lets an AWS principal set a source identity of its choosing:
    one sentence each. Such a role's sessions can carry another person's name into a role pinned with
    ``source_identity``; a statement that fixes ``sts:SourceIdentity`` (a policy variable such as
    ``${aws:username}``, or wildcard-free literals) under ``StringEquals``/``StringLike``, or a Deny unless it does,
    does not let it. Identity providers (SAML, OIDC) assert the value themselves and are not reported."""
    found: list[str] = []
    if pinned_to_source_identity(document):
        return found  # only sessions that already carry one get in, and a source identity cannot be changed
    for index, statement in enumerate(_as_list(document.get("Statement"))):
        if not isinstance(statement, Mapping) or statement.get("Effect") != "Allow":
            continue
        who = _principals(statement).get("AWS", [])
        if not who or not _covers(_as_list(statement.get("Action")), SET_SOURCE_IDENTITY):
            continue
        if _fixed(_condition_values(statement, ("StringEquals", "StringLike"), "sts:SourceIdentity")):
            continue
        if _denied_unless(document, SET_SOURCE_IDENTITY, "sts:SourceIdentity"):
            continue
        name = statement.get("Sid") or f"Statement[{index}]"
        found.append(f"{name} lets {', '.join(sorted(who))} set any source identity ({SET_SOURCE_IDENTITY})")
    return found


def _denied_unless(document: Mapping[str, Any], action: str, key: str) -> bool:
    """The document fails closed for ``action`` unless ``key`` is fixed: the action is denied outright, or denied
    unless ``key`` equals wildcard-free literals or policy variables (``StringNotEquals``/``StringNotLike``), each
    variable with a ``Null`` Deny on its own key beside it (IAM does not apply a statement whose variable it
    cannot resolve, so without that Deny the pair fails open)."""
    denies = _denies(document, action)
    if any(not s.get("Condition") for s in denies):
        return True
    for statement in denies:
        values = _condition_values(statement, ("StringNotEquals", "StringNotLike"), key)
        if not values or not _fixed(values):
            continue
        variables = [v[2:-1].split(",")[0].strip() for v in values if v.startswith("${")]
        if all(any(_condition_values(other, ("Null",), name) == ["true"] for other in denies) for name in variables):
            return True
    return False


# --------------------------------------------------------------------------- reading a trust policy


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _covers(patterns: Iterable[Any], action: str) -> bool:
    return any(isinstance(p, str) and fnmatch.fnmatchcase(action.lower(), p.lower()) for p in patterns)


def _principals(statement: Mapping[str, Any]) -> dict[str, list[str]]:
    principal = statement.get("Principal")
    if principal == "*":
        return {"AWS": ["*"]}
    if not isinstance(principal, Mapping):
        return {}
    return {str(kind): [str(v) for v in _as_list(values)] for kind, values in principal.items()}


def _condition_values(statement: Mapping[str, Any], operators: Sequence[str], key: str) -> list[str] | None:
    condition = statement.get("Condition")
    if not isinstance(condition, Mapping):
        return None
    for operator, keys in condition.items():
        if str(operator) in operators and isinstance(keys, Mapping):  # ...IfExists passes when the key is absent
            for name, values in keys.items():
                if str(name).lower() == key.lower():
                    return [str(v) for v in _as_list(values)]
    return None


def _fixed(values: list[str] | None) -> bool:
    """Values that fix a name: each a policy variable (``${...}``) or a literal without wildcards."""
    if not values:
        return False
    return all((v.startswith("${") and v.endswith("}")) or not any(c in v for c in "*?$") for v in values)


def _denies(document: Mapping[str, Any], action: str) -> list[Mapping[str, Any]]:
    """The Deny statements of ``document`` that deny ``action`` to every principal."""
    return [
        s
        for s in _as_list(document.get("Statement"))
        if isinstance(s, Mapping)
        and s.get("Effect") == "Deny"
        and _principals(s).get("AWS") == ["*"]
        and _covers(_as_list(s.get("Action")), action)
    ]


def session_name_choices(document: Mapping[str, Any]) -> list[str]:
    """Where ``document`` (a role's trust policy) lets a caller choose its own session name: one sentence each.

    Empty when every way in fixes the name: service principals (the service names the session), SAML
    (the identity provider does), Cognito identities (the owner is their identity id, not the name),
    statements that require ``sts:RoleSessionName`` to be a policy variable or a literal, and actions the
    fail-closed Deny pairs of ``pin_statements`` cover."""
    found: list[str] = []
    for index, statement in enumerate(_as_list(document.get("Statement"))):
        if not isinstance(statement, Mapping) or statement.get("Effect") != "Allow":
            continue
        actions = _as_list(statement.get("Action"))
        name = statement.get("Sid") or f"Statement[{index}]"
        principals = _principals(statement)
        for action in ("sts:AssumeRole", "sts:AssumeRoleWithWebIdentity"):
            if not _covers(actions, action):
                continue
            if action == "sts:AssumeRole":
                who = principals.get("AWS", [])
            else:
                who = [p for p in principals.get("Federated", []) if p != COGNITO_PROVIDER]
            if not who:
                continue
            pinned = _fixed(_condition_values(statement, ("StringEquals", "StringLike"), "sts:RoleSessionName"))
            if pinned or _denied_unless(document, action, "sts:RoleSessionName"):
                continue
            found.append(f"{name} lets {', '.join(sorted(who))} call {action} with any RoleSessionName")
    return found


def cognito_pool_problems(document: Mapping[str, Any], identity_pools: Sequence[str]) -> list[str]:
    """How ``document`` falls short of serving only the Cognito identities of ``identity_pools``: one sentence each.

    Empty when some Allow statement trusts ``cognito-identity.amazonaws.com`` for
    ``sts:AssumeRoleWithWebIdentity`` and every such statement pins ``cognito-identity.amazonaws.com:aud``
    to pools of the list."""
    problems: list[str] = []
    trusting = []
    for index, statement in enumerate(_as_list(document.get("Statement"))):
        if (
            isinstance(statement, Mapping)
            and statement.get("Effect") == "Allow"
            and COGNITO_PROVIDER in _principals(statement).get("Federated", [])
            and _covers(_as_list(statement.get("Action")), "sts:AssumeRoleWithWebIdentity")
        ):
            trusting.append((statement.get("Sid") or f"Statement[{index}]", statement))
    if not trusting:
        return [f"no statement trusts {COGNITO_PROVIDER} for sts:AssumeRoleWithWebIdentity"]
    for name, statement in trusting:
        audiences = _condition_values(statement, ("StringEquals",), f"{COGNITO_PROVIDER}:aud")
        if not audiences:
            problems.append(f"{name} trusts the identities of every identity pool (no {COGNITO_PROVIDER}:aud)")
        elif not set(audiences) <= set(identity_pools):
            problems.append(
                f"{name} trusts identity pools {sorted(set(audiences) - set(identity_pools))}, "
                "which identity_pools does not list"
            )
    return problems


__all__ = [
    "ASSUME_ACTIONS",
    "COGNITO_PROVIDER",
    "SESSION_NAME_PINS",
    "SessionNamePin",
    "cognito_pool_problems",
    "SET_SOURCE_IDENTITY",
    "cognito_statements",
    "missing_set_source_identity",
    "pin_statements",
    "pinned_to_source_identity",
    "session_name_choices",
    "source_identity_choices",
    "trusted_principals",
    "with_set_source_identity",
]
