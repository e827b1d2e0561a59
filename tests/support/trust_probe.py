"""STS calls in moto with the role's trust policy evaluated, so a test can try to assume a role as someone else.

moto's STS returns credentials for any ``AssumeRole`` without reading the role's trust policy. ``TrustProbe``
reads it from moto's IAM (``GetRole``, the document as written) and evaluates it the way IAM documents for
the keys and operators the front door's pins use, before letting the call through to moto:

- a request is allowed when some Allow statement applies and no Deny statement does, for ``sts:AssumeRole`` and,
  when the request carries a source identity, for ``sts:SetSourceIdentity`` as well;
- a statement applies when its Principal, Action and every condition match;
- ``StringEquals``/``StringLike``/``ArnEquals``/``ArnLike`` are false for a key absent from the request; the
  negated operators (``StringNotEquals``, ``StringNotLike``) are true for it; ``Null`` tests presence;
- a policy variable (``${aws:username}``) whose key is absent leaves its statement unable to apply (IAM:
  "if AWS cannot resolve a variable this might cause the entire statement to be invalid"): for a Deny that
  fails open, which is why every pin comes with a ``Null`` Deny on the same key.

It is a model of IAM for these cases, not IAM: what it cannot evaluate (another operator, a principal form it
does not know) raises, so a test never passes on a statement the model skipped.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

_VARIABLE = re.compile(r"\$\{([^}]+)\}")


class Unresolved(Exception):
    """A policy variable's key is not in the request context."""


@dataclass
class Caller:
    """Who calls STS: its ARN, account, and the request context keys its credentials bring."""

    arn: str
    account: str
    keys: dict[str, str] = field(default_factory=dict)

    @classmethod
    def iam_user(cls, account: str, name: str) -> Caller:
        return cls(f"arn:aws:iam::{account}:user/{name}", account, {"aws:username": name, "aws:PrincipalType": "User"})

    @classmethod
    def role_session(cls, account: str, role: str, session: str, source_identity: str | None = None) -> Caller:
        keys = {"aws:PrincipalType": "AssumedRole"}
        if source_identity is not None:
            keys["aws:SourceIdentity"] = source_identity
        caller = cls(f"arn:aws:sts::{account}:assumed-role/{role}/{session}", account, keys)
        caller.keys["role_arn"] = f"arn:aws:iam::{account}:role/{role}"
        return caller


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _substitute(value: str, context: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        key = match.group(1).split(",")[0].strip()
        if key not in context:
            raise Unresolved(key)
        return context[key]

    return _VARIABLE.sub(one, value)


def _principal_matches(principal: Any, caller: Caller | None, federated: str | None) -> bool:
    if principal == "*":
        return True
    if not isinstance(principal, Mapping):
        raise AssertionError(f"the trust probe does not know the principal form {principal!r}")
    for kind, values in principal.items():
        for value in _list(values):
            if kind == "AWS" and caller is not None:
                if value == "*" or value == caller.arn or value == caller.keys.get("role_arn"):
                    return True
                if value in (caller.account, f"arn:aws:iam::{caller.account}:root"):
                    return True  # the account: its identity policies decide (the probe assumes they allow)
            elif kind == "Federated" and federated is not None and value == federated:
                return True
            elif kind not in ("AWS", "Federated", "Service"):
                raise AssertionError(f"the trust probe does not know principal kind {kind!r}")
    return False


def _condition_holds(operator: str, key: str, wanted: list[Any], context: Mapping[str, str]) -> bool:
    present = key in context
    if operator == "Null":
        return (not present) == (str(wanted[0]).lower() == "true")
    values = [_substitute(str(v), context) for v in wanted]
    if operator in ("StringEquals", "ArnEquals"):
        return present and context[key] in values
    if operator in ("StringLike", "ArnLike"):
        return present and any(fnmatch.fnmatchcase(context[key], v) for v in values)
    if operator == "StringNotEquals":
        return not present or context[key] not in values
    if operator == "StringNotLike":
        return not present or not any(fnmatch.fnmatchcase(context[key], v) for v in values)
    raise AssertionError(f"the trust probe does not evaluate condition operator {operator}")


def _applies(
    statement: Mapping[str, Any], action: str, caller: Caller | None, federated: str | None, context: Mapping[str, str]
) -> bool:
    if not any(fnmatch.fnmatchcase(action, a) for a in _list(statement.get("Action"))):
        return False
    if not _principal_matches(statement.get("Principal"), caller, federated):
        return False
    try:
        for operator, keys in (statement.get("Condition") or {}).items():
            for key, wanted in keys.items():
                if not _condition_holds(operator, key, _list(wanted), context):
                    return False
    except Unresolved:
        return False  # the statement cannot be evaluated: it does not apply
    return True


def trust_allows(
    document: Mapping[str, Any],
    action: str,
    context: Mapping[str, str],
    *,
    caller: Caller | None = None,
    federated: str | None = None,
) -> bool:
    """Whether the trust policy ``document`` lets ``caller`` (or the ``federated`` provider) call ``action``."""
    statements = [s for s in _list(document.get("Statement")) if isinstance(s, Mapping)]
    applying = [s for s in statements if _applies(s, action, caller, federated, context)]
    return any(s["Effect"] == "Allow" for s in applying) and not any(s["Effect"] == "Deny" for s in applying)


class TrustProbe:
    """moto STS behind the trust policy of the role being assumed (``assume_role`` as ``caller``)."""

    def __init__(self, iam: Any, sts: Any) -> None:
        self.iam = iam
        self.sts = sts

    def assume_role(self, caller: Caller, role_arn: str, session_name: str, source_identity: str | None = None) -> str:
        """The assumed-role ARN STS gives ``caller``; ``ClientError`` AccessDenied when the trust refuses."""
        document = self.iam.get_role(RoleName=role_arn.rsplit("/", 1)[1])["Role"]["AssumeRolePolicyDocument"]
        context = {
            **{k: v for k, v in caller.keys.items() if k != "role_arn"},
            "aws:PrincipalArn": caller.keys.get("role_arn", caller.arn),
            "aws:PrincipalAccount": caller.account,
            "sts:RoleSessionName": session_name,
        }
        if source_identity is not None or "aws:SourceIdentity" in caller.keys:
            context["sts:SourceIdentity"] = source_identity or caller.keys["aws:SourceIdentity"]
        # A request that carries a source identity (set now, or carried in by the calling session) is authorized
        # for sts:SetSourceIdentity on the role too (IAM User Guide, "Permissions required to set source identity").
        needed = ["sts:AssumeRole", *(["sts:SetSourceIdentity"] if "sts:SourceIdentity" in context else [])]
        for action in needed:
            if not trust_allows(document, action, context, caller=caller):
                raise ClientError(
                    {
                        "Error": {
                            "Code": "AccessDenied",
                            "Message": f"{caller.arn} is not authorized to perform: {action} on resource: {role_arn}",
                        }
                    },
                    "AssumeRole",
                )
        kwargs = {"SourceIdentity": source_identity} if source_identity else {}
        answer = self.sts.assume_role(RoleArn=role_arn, RoleSessionName=session_name, **kwargs)
        return str(answer["AssumedRoleUser"]["Arn"])


@contextmanager
def moto_roles(monkeypatch: Any) -> Iterator[Callable[..., str]]:
    """moto's IAM with test credentials; yields ``role(name, *statements, path="/")``, which creates a role whose
    trust policy holds ``statements`` and returns its ARN."""
    import json

    import boto3
    from moto import mock_aws

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        client = boto3.client("iam", region_name="us-east-1")

        def role(name: str, *statements: dict[str, Any], path: str = "/") -> str:
            document = {"Version": "2012-10-17", "Statement": list(statements)}
            created = client.create_role(RoleName=name, Path=path, AssumeRolePolicyDocument=json.dumps(document))
            return str(created["Role"]["Arn"])

        yield role
