"""Who a role's trust policy lets in: the guard's trust findings on templates as CloudFormation holds them.

Each case is one ``AWS::IAM::Role`` in a template read by ``template_problems``, the function the guard's plugin
runs on every synthesized template; the synth-level probes are in ``test_guard_probes.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sagemaker_llm_cdk.core.policy_guard import PolicyGuard
from sagemaker_llm_cdk.core.policy_rules import template_problems
from sagemaker_llm_cdk.core.trust_rules import owner_account
from sagemaker_llm_cdk.sessions.trust import cognito_statements, pin_statements

ACCOUNT = "123456789012"
OTHER = "999999999999"
POOL = "us-east-1:0f6a8b1c-1111-4222-8333-944455556666"
OWN_ROOT = {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}, ":root"]]}
TRUST_RULES = {"ForeignAccountTrust", "OwnRootTrust", "CognitoTrustUnpinned"}


def trust(*statements: dict[str, Any]) -> dict[str, Any]:
    return {
        "Resources": {
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {"AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": list(statements)}},
            }
        }
    }


def rules(template: dict[str, Any], account: str | None = None) -> list[tuple[str, str]]:
    return [
        (f.rule, f.location)
        for f in template_problems(template, Path("T.template.json"), [], {}, account=account)
        if f.rule in TRUST_RULES
    ]


def allow(principal: Any, action: Any = "sts:AssumeRole", condition: dict[str, Any] | None = None) -> dict[str, Any]:
    statement = {"Effect": "Allow", "Principal": principal, "Action": action}
    if condition is not None:
        statement["Condition"] = condition
    return statement


COGNITO = {"Federated": "cognito-identity.amazonaws.com"}
AUD = {"StringEquals": {"cognito-identity.amazonaws.com:aud": POOL}}
AMR = {"ForAnyValue:StringLike": {"cognito-identity.amazonaws.com:amr": "authenticated"}}


# --------------------------------------------------------------------------- another account


@pytest.mark.parametrize(
    "principal",
    [
        {"AWS": f"arn:aws:iam::{OTHER}:root"},
        {"AWS": OTHER},
        {"AWS": [f"arn:aws:iam::{ACCOUNT}:role/ours", f"arn:aws:iam::{OTHER}:role/theirs"]},
        {"AWS": f"arn:aws-us-gov:iam::{OTHER}:user/ci"},
        {"AWS": {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":iam::{OTHER}:root"]]}},
    ],
    ids=["root", "account-id", "one-of-two", "user-other-partition", "joined-arn"],
)
def test_trust_of_another_account_without_external_id_or_organization_is_a_finding(principal):
    assert rules(trust(allow(principal)), account=ACCOUNT) == [
        ("ForeignAccountTrust", "AssumeRolePolicyDocument.Statement[0]")
    ]


@pytest.mark.parametrize(
    "condition",
    [
        {"StringEquals": {"sts:ExternalId": "a1b2c3d4-shared-secret"}},
        {"StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}},
        {"ForAnyValue:StringLike": {"aws:PrincipalOrgPaths": "o-a1b2c3d4e5/r-ab12/ou-ab12-11111111/*"}},
    ],
    ids=["external-id", "org-id", "org-path"],
)
def test_external_id_or_an_organization_bounds_another_accounts_trust(condition):
    assert rules(trust(allow({"AWS": f"arn:aws:iam::{OTHER}:root"}, condition=condition)), account=ACCOUNT) == []


@pytest.mark.parametrize(
    "condition",
    [
        {"StringNotEquals": {"sts:ExternalId": "x"}},
        {"StringEqualsIfExists": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}},
        {"StringLike": {"aws:PrincipalOrgID": "o-*"}},
        {"StringLike": {"sts:ExternalId": "*"}},
        {"ForAnyValue:StringLike": {"aws:PrincipalOrgPaths": "*"}},
        {"StringEquals": {"aws:PrincipalAccount": OTHER}},
    ],
    ids=["negated", "if-exists", "wild-org", "wild-external-id", "wild-path", "principal-account"],
)
def test_conditions_that_do_not_bound_another_accounts_trust(condition):
    found = rules(trust(allow({"AWS": f"arn:aws:iam::{OTHER}:root"}, condition=condition)), account=ACCOUNT)
    assert [r for r, _ in found] == ["ForeignAccountTrust"]


def test_an_account_is_foreign_unless_it_is_the_stacks_own():
    literal = trust(allow({"AWS": f"arn:aws:iam::{ACCOUNT}:role/ci"}))
    assert rules(literal, account=ACCOUNT) == []
    # With no account bound, a literal account cannot be shown to be the stack's own.
    assert [r for r, _ in rules(literal)] == ["ForeignAccountTrust"]
    same_template = trust(allow({"AWS": {"Fn::GetAtt": ["Caller", "Arn"]}}))
    assert rules(same_template) == []


# --------------------------------------------------------------------------- the own account's root


@pytest.mark.parametrize(
    "principal", [{"AWS": OWN_ROOT}, {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, {"AWS": ACCOUNT}], ids=str
)
def test_trust_of_the_whole_own_account_without_a_condition_is_a_finding(principal):
    assert rules(trust(allow(principal)), account=ACCOUNT) == [
        ("OwnRootTrust", "AssumeRolePolicyDocument.Statement[0]")
    ]


@pytest.mark.parametrize(
    "condition",
    [
        {"ArnEquals": {"aws:PrincipalArn": f"arn:aws:iam::{ACCOUNT}:role/chat-app"}},
        {
            "ArnLike": {
                "aws:PrincipalArn": f"arn:aws:iam::{ACCOUNT}:role/aws-reserved/sso.amazonaws.com/*AWSReservedSSO_X_*"
            }
        },
        {"StringEquals": {"aws:PrincipalTag/team": "ml"}},
        {"StringEquals": {"sts:RoleSessionName": "${aws:username}"}},
    ],
    ids=["principal-arn", "sso-permission-set", "principal-tag", "session-name"],
)
def test_a_condition_on_who_bounds_the_own_root(condition):
    assert rules(trust(allow({"AWS": OWN_ROOT}, condition=condition))) == []


@pytest.mark.parametrize(
    "condition",
    [
        {"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/*"}},
        {"ArnLike": {"aws:PrincipalArn": {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":iam::*:role/x"]]}}},
        {"StringEquals": {"aws:PrincipalAccount": ACCOUNT}},
        {"Bool": {"aws:SecureTransport": "true"}},
    ],
    ids=["any-account-arn", "any-account-joined", "principal-account", "unrelated"],
)
def test_conditions_that_do_not_say_who(condition):
    assert [r for r, _ in rules(trust(allow({"AWS": OWN_ROOT}, condition=condition)))] == ["OwnRootTrust"]


@pytest.mark.parametrize("pin", ["user_name", "source_identity"])
def test_the_front_doors_pins_bound_the_own_root(pin):
    assert rules(trust(allow({"AWS": OWN_ROOT}), *pin_statements(pin, account=ACCOUNT))) == []


def test_a_deny_of_another_action_or_without_a_condition_on_who_does_not_bound_it():
    unrelated = {
        "Effect": "Deny",
        "Principal": "*",
        "Action": "sts:TagSession",
        "Condition": {"StringNotEquals": {"aws:PrincipalArn": "x"}},
    }
    account_only = pin_statements("user_name", account=ACCOUNT)[2]  # OnlyThisAccountsUsersAssume alone
    for deny in (unrelated, account_only):
        assert [r for r, _ in rules(trust(allow({"AWS": OWN_ROOT}), deny))] == ["OwnRootTrust"]


def test_service_principals_and_deny_statements_are_not_trust_findings():
    assert rules(trust(allow({"Service": "sagemaker.amazonaws.com"}))) == []
    assert rules(trust({"Effect": "Deny", "Principal": {"AWS": f"arn:aws:iam::{OTHER}:root"}, "Action": "sts:*"})) == []


# --------------------------------------------------------------------------- Cognito identities


@pytest.mark.parametrize(
    ("condition", "missing"),
    [
        (None, "cognito-identity.amazonaws.com:aud or cognito-identity.amazonaws.com:amr"),
        (AUD, "cognito-identity.amazonaws.com:amr"),
        (AMR, "cognito-identity.amazonaws.com:aud"),
        ({"StringLike": {"cognito-identity.amazonaws.com:aud": "us-east-1:*"}, **AMR}, "aud"),
    ],
    ids=["neither", "no-amr", "no-aud", "wild-aud"],
)
def test_cognito_trust_needs_aud_and_amr(condition, missing):
    found = template_problems(
        trust(allow(COGNITO, "sts:AssumeRoleWithWebIdentity", condition)), Path("T.template.json"), [], {}
    )
    (finding,) = [f for f in found if f.rule == "CognitoTrustUnpinned"]
    assert missing in finding.text


def test_cognito_trust_with_aud_and_amr_or_the_front_doors_pin_passes():
    assert rules(trust(allow(COGNITO, "sts:AssumeRoleWithWebIdentity", {**AUD, **AMR}))) == []
    assert rules(trust(allow(COGNITO, "sts:AssumeRoleWithWebIdentity"), *cognito_statements([POOL]))) == []


# --------------------------------------------------------------------------- reading principals


@pytest.mark.parametrize(
    ("value", "owner"),
    [
        (f"arn:aws:iam::{OTHER}:root", (OTHER, True)),
        (OTHER, (OTHER, True)),
        (f"arn:aws:sts::{OTHER}:assumed-role/r/s", (OTHER, False)),
        (OWN_ROOT, ("<AWS::AccountId>", True)),
        ("*", None),
        ({"Fn::GetAtt": ["Role", "Arn"]}, None),
    ],
)
def test_owner_account(value, owner):
    assert owner_account(value) == owner


def test_each_trust_rule_has_a_fix_the_plugin_reports():
    assert set(PolicyGuard(None).rule_ids or []) >= TRUST_RULES  # type: ignore[arg-type]


# --------------------------------------------------------------------------- a stack bound to an account


def _bound_app(tmp_path: Path, principal: Any) -> tuple[Any, Any]:
    from aws_cdk import App, Environment, Stack
    from aws_cdk import aws_iam as iam
    from sagemaker_llm_cdk.core.grants import guard_wildcards

    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Bound", env=Environment(account=ACCOUNT, region="us-east-1"))
    iam.Role(stack, "Caller", assumed_by=principal(iam))
    guard_wildcards(app)
    return app, stack


@pytest.mark.synth
@pytest.mark.parametrize(
    ("principal", "rule"),
    [
        (lambda iam: iam.AccountPrincipal(ACCOUNT), "OwnRootTrust"),
        (lambda iam: iam.AccountPrincipal(OTHER), "ForeignAccountTrust"),
    ],
    ids=["own-literal-account", "other-account"],
)
def test_in_a_bound_stack_the_literal_account_is_the_stacks_own(tmp_path: Path, principal: Any, rule: str) -> None:
    from sagemaker_llm_cdk.core.policy_guard import problems_of

    app, stack = _bound_app(tmp_path, principal)
    with pytest.raises(RuntimeError, match=rf"Bound\.template\.json Caller[0-9A-F]+ .*\n.*\n.*\n.*Rule \S+::{rule}"):
        app.synth()
    # The reader of a written assembly judges the same way (the account from the assembly's manifest).
    lines = problems_of(stack)
    assert (
        len(lines) == 1 and ("no condition on who" if rule == "OwnRootTrust" else "neither sts:ExternalId") in lines[0]
    )


@pytest.mark.synth
def test_in_a_bound_stack_the_own_account_limited_to_a_permission_set_passes(tmp_path: Path) -> None:
    arn = f"arn:aws:iam::{ACCOUNT}:role/aws-reserved/sso.amazonaws.com/*AWSReservedSSO_ChatUsers_*"
    app, _ = _bound_app(
        tmp_path, lambda iam: iam.AccountPrincipal(ACCOUNT).with_conditions({"ArnLike": {"aws:PrincipalArn": arn}})
    )
    app.synth()


# --------------------------------------------------------------------------- Deny statements that bound nothing


@pytest.mark.parametrize(
    ("condition", "bounded"),
    [
        ({"StringNotLike": {"aws:PrincipalArn": "*"}}, False),  # every ARN is like '*': the Deny never applies
        ({"ArnNotLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/*"}}, False),  # any account's roles pass
        ({"Null": {"aws:PrincipalArn": "false"}}, False),  # denies only callers that have an ARN's absence reversed
        ({"ArnNotEquals": {"aws:PrincipalArn": f"arn:aws:iam::{ACCOUNT}:role/chat-app"}}, True),
        ({"StringNotEquals": {"aws:PrincipalTag/team": "ml"}}, True),
        ({"ForAnyValue:StringNotEquals": {"aws:username": ["alice", "bob"]}}, True),
    ],
    ids=["not-like-star", "not-like-any-account", "null-false", "one-role", "principal-tag", "user-names"],
)
def test_a_deny_bounds_the_own_root_only_when_its_values_name_who(condition, bounded):
    deny = {"Effect": "Deny", "Principal": "*", "Action": "sts:AssumeRole", "Condition": condition}
    found = [r for r, _ in rules(trust(allow({"AWS": OWN_ROOT}), deny))]
    assert found == ([] if bounded else ["OwnRootTrust"])
