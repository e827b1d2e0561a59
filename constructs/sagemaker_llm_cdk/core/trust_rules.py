"""Who a role's trust policy lets in: the guard's findings on ``AssumeRolePolicyDocument`` beyond ``Principal: *``.

A trust policy is a resource policy whose Allow makes someone a user of the role. Three ways in reach further than
their author usually means, and each has the condition that bounds it (IAM User Guide, "Access to AWS accounts
owned by third parties", "AWS global condition context keys", and Cognito's "Role trust and permissions"):

* ``ForeignAccountTrust``: a principal of another account (its root, its account id, or one of its users or
  roles) with neither ``sts:ExternalId`` (the confused-deputy guard for a third party) nor an organization
  condition (``aws:PrincipalOrgID``, ``aws:PrincipalOrgPaths``): every principal that account lets call
  ``sts:AssumeRole`` becomes a user of the role, and the account is not known to be yours.
* ``OwnRootTrust``: the role's own account (``arn:...:iam::<account>:root`` or the account id) with nothing that
  says who in it: every user and role whose identity policy allows ``sts:AssumeRole`` on ``*`` (administrators,
  CI roles, anything granted broadly) becomes one. A positive condition on who the caller is (``aws:PrincipalArn``,
  ``aws:PrincipalTag/...``, ``aws:username``, ``aws:userid``, ``sts:RoleSessionName``, a source identity,
  ``sts:ExternalId``), or a Deny of the same action unless such a key matches (the front door's pins), bounds it.
* ``CognitoTrustUnpinned``: ``cognito-identity.amazonaws.com`` without ``cognito-identity.amazonaws.com:aud`` (any
  identity pool of any account can then hand out the role) or without ``cognito-identity.amazonaws.com:amr``
  (guests and signed-in users alike). A Deny unless they match counts, as for the own root.

A condition counts only under a positive operator with wildcard-free values (``policy_documents._condition_keys``);
``aws:PrincipalOrgPaths`` may end in a wildcard (a path names an organization unit and what is under it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .policy_documents import _arn_text, _as_list, _condition_keys, _effect, _limits, _matches, render

COGNITO = "cognito-identity.amazonaws.com"
ORGANIZATION_KEYS = frozenset({"aws:principalorgid", "aws:principalorgpaths"})
"""Condition keys that keep another account's principals to an organization."""
FOREIGN_LIMITS = frozenset({"sts:externalid"}) | ORGANIZATION_KEYS
"""Condition keys that bound a trust of another account."""
CALLER_KEYS = frozenset(
    {
        "aws:principalarn",
        "aws:principaltag/",
        "aws:username",
        "aws:userid",
        "sts:rolesessionname",
        "sts:sourceidentity",
        "aws:sourceidentity",
        "sts:externalid",
    }
)
"""Condition keys that say who in an account may use a trust of the account (one ending in ``/`` names a family:
``aws:PrincipalTag/<key>``)."""
_PARTITION = r"(?:<AWS::Partition>|[^:<>]+)"
_NEGATED = re.compile(r"^(?:foranyvalue:|forallvalues:)?(?:stringnot\w*|arnnot\w*|null)$")


def trust_problems(
    statement: Mapping[str, Any], document: Sequence[Mapping[str, Any]], account: str | None
) -> list[tuple[str, str]]:
    """(rule, text) for each way ``statement`` (one statement of a role's trust policy ``document``) lets in more
    than it bounds; ``account``: the stack's account when it is known (else only ``AWS::AccountId`` is its own)."""
    if _effect(statement) != "Allow":
        return []
    actions = [a.lower() for a in _as_list(statement.get("Action")) if isinstance(a, str)]
    principal = statement.get("Principal")
    if not isinstance(principal, Mapping):
        return []  # '*' is BroadPrincipal's; no principal cannot apply
    problems: list[tuple[str, str]] = []
    if _covers(actions, "sts:assumerole"):
        problems += _account_problems(statement, document, account, _as_list(principal.get("AWS")))
    federated = [_arn_text(p) for p in _as_list(principal.get("Federated"))]
    if COGNITO in federated and _covers(actions, "sts:assumerolewithwebidentity"):
        problems += _cognito_problems(statement, document)
    return problems


def _covers(actions: Sequence[str], action: str) -> bool:
    return any(_matches(action, pattern) for pattern in actions)


def owner_account(value: Any) -> tuple[str, bool] | None:
    """(account, whole account) of an AWS principal: ``arn:<p>:iam::<account>:root`` or a bare account id is the
    whole account; another IAM or STS ARN is one principal of it. ``None`` when the value names no account (a
    reference to a role of the same template, ``*``)."""
    text = _arn_text(value)
    if re.fullmatch(r"\d{12}", text):
        return text, True
    match = re.fullmatch(rf"arn:{_PARTITION}:(?:iam|sts)::(<AWS::AccountId>|[^:<>]+):(.+)", text)
    if not match:
        return None
    return match.group(1), match.group(2) == "root"


def _own(owner: str, account: str | None) -> bool:
    return owner == "<AWS::AccountId>" or (account is not None and owner == account)


def _account_problems(
    statement: Mapping[str, Any], document: Sequence[Mapping[str, Any]], account: str | None, values: list[Any]
) -> list[tuple[str, str]]:
    keys = _condition_keys(statement) | _org_paths(statement)
    problems: list[tuple[str, str]] = []
    for value in values:
        owner = owner_account(value)
        if owner is None:
            continue
        name, whole = owner
        text = _arn_text(value)
        if not _own(name, account) and not (keys & FOREIGN_LIMITS):
            problems.append(
                (
                    "ForeignAccountTrust",
                    f"lets {text!r} of account {name} assume the role with neither sts:ExternalId nor "
                    "aws:PrincipalOrgID/aws:PrincipalOrgPaths: "
                    + (
                        "every principal that account allows sts:AssumeRole becomes a user of the role"
                        if whole
                        else "the account is not known to be yours"
                    ),
                )
            )
        elif _own(name, account) and whole and not _bounded(statement, document, "sts:assumerole", CALLER_KEYS):
            problems.append(
                (
                    "OwnRootTrust",
                    f"lets the whole account ({text!r}) assume the role with no condition on who: every user and "
                    "role allowed sts:AssumeRole on '*' becomes a user of it",
                )
            )
    return problems


def _cognito_problems(statement: Mapping[str, Any], document: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    missing = [
        key
        for key in (f"{COGNITO}:aud", f"{COGNITO}:amr")
        if not _bounded(statement, document, "sts:assumerolewithwebidentity", {key})
    ]
    if not missing:
        return []
    why = {
        f"{COGNITO}:aud": "any identity pool of any account may hand out the role",
        f"{COGNITO}:amr": "guests and signed-in identities alike may assume it",
    }
    return [
        (
            "CognitoTrustUnpinned",
            f"trusts {COGNITO} without {' or '.join(missing)}: " + "; ".join(why[k] for k in missing),
        )
    ]


def _org_paths(statement: Mapping[str, Any]) -> set[str]:
    """``aws:PrincipalOrgPaths`` under a positive operator whose every value names its organization (``o-...``)."""
    keys = _condition_keys(statement, exact=False)
    if "aws:principalorgpaths" not in keys:
        return set()
    condition = statement.get("Condition") or {}
    values = [
        v
        for body in condition.values()
        if isinstance(body, Mapping)
        for k, v in body.items()
        if str(k).lower() == "aws:principalorgpaths"
    ]
    paths = [p for v in values for p in _as_list(v)]
    named = bool(paths) and all(re.match(r"o-[a-z0-9]{10,32}/", render(p)) for p in paths)
    return {"aws:principalorgpaths"} if named else set()


def _named(key: str, keys: set[str] | frozenset[str]) -> bool:
    """Whether condition key ``key`` (lower case) is one of ``keys``, or of a family of them (``aws:principaltag/``)."""
    return key in keys or any(k.endswith("/") and key.startswith(k) for k in keys)


def _bounded(
    statement: Mapping[str, Any], document: Sequence[Mapping[str, Any]], action: str, keys: set[str] | frozenset[str]
) -> bool:
    """Whether ``statement``'s ``action`` is bounded by one of ``keys``: a positive, wildcard-free condition on it,
    or a Deny in ``document`` of the same action to every principal unless it matches: a negated operator whose
    every value limits as the positive one's would (``StringNotLike aws:PrincipalArn *`` denies nobody), or
    ``Null`` true."""
    if any(_named(k, keys) for k in _condition_keys(statement)):
        return True
    for other in document:
        if _effect(other) != "Deny" or other.get("Principal") not in ("*", {"AWS": "*"}):
            continue
        if not _covers([a.lower() for a in _as_list(other.get("Action")) if isinstance(a, str)], action):
            continue
        condition = other.get("Condition")
        if not isinstance(condition, Mapping):
            continue
        for operator, body in condition.items():
            name = str(operator).lower()
            if not (_NEGATED.match(name) and isinstance(body, Mapping)):
                continue
            positive = name.rsplit(":", 1)[-1].replace("not", "", 1)
            for key, value in body.items():
                values = _as_list(value)
                limits = (
                    [str(v).lower() for v in values] == ["true"]
                    if positive == "null"
                    else bool(values) and all(_limits(positive, v) for v in values)
                )
                if limits and _named(str(key).lower(), keys):
                    return True
    return False


__all__ = ["CALLER_KEYS", "COGNITO", "FOREIGN_LIMITS", "ORGANIZATION_KEYS", "owner_account", "trust_problems"]
