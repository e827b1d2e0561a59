"""No front-door caller picks its own identity: pinned trust policies, the owner settings, and the live preflight.

The impersonation itself (same role, chosen session name) is probed through STS in
``tests/lambda/test_session_router.py`` (moto, with the trust policy evaluated by ``support.trust_probe``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template
from sagemaker_llm_cdk import ConfigurationError, EndpointOptions
from sagemaker_llm_cdk.sessions.trust import (
    cognito_pool_problems,
    cognito_statements,
    missing_set_source_identity,
    pin_statements,
    session_name_choices,
    source_identity_choices,
    with_set_source_identity,
)
from sagemaker_llm_cdk.settings.sessions import SessionSettings
from support.front_door import build, function_environment

pytestmark = pytest.mark.synth

ACCOUNT = "123456789012"
POOL = "us-east-1:0f6a8b1c-1111-4222-8333-944455556666"
ROOT_TRUST = {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "sts:AssumeRole"}


def document(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def trust_of(built: Any, role: iam.Role) -> dict[str, Any]:
    resources = built.template.to_json()["Resources"]
    return resources[built.resolve(role.node.default_child.logical_id)]["Properties"]["AssumeRolePolicyDocument"]


# --------------------------------------------------------------------------- reading trust policies


def test_a_role_any_principal_of_the_account_may_assume_lets_callers_choose_the_name():
    assert session_name_choices(document(ROOT_TRUST)) == [
        f"Statement[0] lets arn:aws:iam::{ACCOUNT}:root call sts:AssumeRole with any RoleSessionName"
    ]


@pytest.mark.parametrize("pin", ["user_name", "source_identity"])
def test_the_pins_fix_the_name(pin):
    assert session_name_choices(document(ROOT_TRUST, *pin_statements(pin, account=ACCOUNT))) == []


@pytest.mark.parametrize(
    ("statement", "chosen"),
    [
        ({**ROOT_TRUST, "Condition": {"StringEquals": {"sts:RoleSessionName": "${aws:username}"}}}, False),
        ({**ROOT_TRUST, "Condition": {"StringLike": {"sts:RoleSessionName": "batch"}}}, False),
        ({**ROOT_TRUST, "Condition": {"StringLike": {"sts:RoleSessionName": "app-*"}}}, True),
        ({**ROOT_TRUST, "Condition": {"StringEqualsIfExists": {"sts:RoleSessionName": "${aws:username}"}}}, True),
        ({"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}, False),
        (
            {
                "Effect": "Allow",
                "Principal": {"Federated": f"arn:aws:iam::{ACCOUNT}:saml-provider/Okta"},
                "Action": "sts:AssumeRoleWithSAML",
            },
            False,
        ),
        (
            {
                "Effect": "Allow",
                "Principal": {"Federated": "cognito-identity.amazonaws.com"},
                "Action": "sts:AssumeRoleWithWebIdentity",
            },
            False,
        ),
        (
            {
                "Effect": "Allow",
                "Principal": {"Federated": f"arn:aws:iam::{ACCOUNT}:oidc-provider/login.example.com"},
                "Action": "sts:AssumeRoleWithWebIdentity",
            },
            True,
        ),
        ({"Effect": "Allow", "Principal": "*", "Action": "sts:*"}, True),
    ],
    ids=[
        "user-name-variable",
        "one-literal-name",
        "wildcard-name",
        "if-exists",
        "service",
        "saml",
        "cognito",
        "other-oidc",
        "star",
    ],
)
def test_which_ways_in_let_a_caller_choose_the_name(statement, chosen):
    assert bool(session_name_choices(document(statement))) == chosen


def test_a_deny_pin_without_its_null_deny_does_not_count():
    half = pin_statements("user_name", account=ACCOUNT)[0]  # StringNotEquals ${aws:username} alone fails open
    assert session_name_choices(document(ROOT_TRUST, half)) != []


@pytest.mark.parametrize(
    ("values", "null_deny", "chosen"),
    [
        (["${aws:username}", "batch"], False, True),  # the variable unresolved: the whole Deny does not apply
        (["${aws:username}", "batch"], True, False),
        (["batch", "nightly"], False, False),  # literals alone cannot go unresolved
        (["app-*"], False, True),  # a pattern lets every name it matches through
    ],
    ids=["variable-and-literal", "with-null-deny", "literals", "pattern"],
)
def test_a_deny_on_the_session_name_fixes_it_only_when_it_cannot_fail_open(values, null_deny, chosen):
    deny = {
        "Effect": "Deny",
        "Principal": "*",
        "Action": "sts:AssumeRole",
        "Condition": {"StringNotEquals": {"sts:RoleSessionName": values}},
    }
    null = {
        "Effect": "Deny",
        "Principal": "*",
        "Action": "sts:AssumeRole",
        "Condition": {"Null": {"aws:username": "true"}},
    }
    statements = (ROOT_TRUST, deny, *([null] if null_deny else []))
    assert bool(session_name_choices(document(*statements))) == chosen


def test_cognito_trust_must_pin_the_listed_pools():
    cognito = {
        "Effect": "Allow",
        "Principal": {"Federated": "cognito-identity.amazonaws.com"},
        "Action": "sts:AssumeRoleWithWebIdentity",
    }
    pinned = {**cognito, "Condition": {"StringEquals": {"cognito-identity.amazonaws.com:aud": POOL}}}
    other = {**cognito, "Condition": {"StringEquals": {"cognito-identity.amazonaws.com:aud": "eu-west-1:x"}}}

    assert cognito_pool_problems(document(pinned), [POOL]) == []
    assert cognito_pool_problems(document(ROOT_TRUST), [POOL]) == [
        "no statement trusts cognito-identity.amazonaws.com for sts:AssumeRoleWithWebIdentity"
    ]
    assert "every identity pool" in cognito_pool_problems(document(cognito), [POOL])[0]
    assert "eu-west-1:x" in cognito_pool_problems(document(other), [POOL])[0]


# --------------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"owner": "cognito_identity"}, r"identity_pools: got \[\]; allowed: at least one identity pool id"),
        ({"identity_pools": [POOL]}, r"identity_pools: .*allowed: only with owner cognito_identity"),
        (
            {"owner": "cognito_identity", "identity_pools": ["us-east-1:nope"]},
            r"identity_pools\[0\]: got 'us-east-1:nope'; allowed: a Cognito identity pool id",
        ),
        (
            {"callers": ["arn:aws:sts::123456789012:assumed-role/chat/alice"]},
            r"callers\[0\]: .*allowed: an IAM role ARN",
        ),
        ({"callers": [f"arn:aws:iam::{ACCOUNT}:role/chat"] * 2}, r"callers: .*allowed: each role once"),
        ({"turn_log_retention_days": 0}, r"turn_log_retention_days"),
        ({"owner": "person"}, r"owner"),
    ],
)
def test_session_settings_rules(settings, match):
    with pytest.raises(ConfigurationError, match=match):
        SessionSettings(**settings)


def test_owner_defaults_and_turn_log_retention_default():
    settings = SessionSettings()
    assert (settings.owner, settings.identity_pools, settings.callers, settings.turn_log_retention_days) == (
        "session",
        (),
        (),
        30,
    )


def test_cognito_mode_and_its_pools_reach_the_handler():
    built = build(sessions=SessionSettings(owner="cognito_identity", identity_pools=(POOL,)), adapters=())
    env = function_environment(built)
    assert (env["OWNER_MODE"], env["IDENTITY_POOLS"]) == ("cognito_identity", POOL)
    assert "IDENTITY_POOLS" not in function_environment(build(adapters=()))


# --------------------------------------------------------------------------- grant_invoke_pinned


@pytest.fixture(scope="module")
def pinned() -> Any:
    built = build(adapters=())
    people = iam.Role(built.stack, "People", assumed_by=iam.AccountRootPrincipal())
    built.front_door.grant_invoke_pinned(people)
    federated = iam.Role(built.stack, "SignedIn", assumed_by=iam.AccountRootPrincipal())
    built.front_door.grant_invoke_pinned(federated, pin="source_identity")
    return built, people, federated


def test_grant_invoke_pinned_writes_the_pins_into_the_trust_policy(pinned):
    built, people, federated = pinned
    account = built.resolve(built.stack.account)

    for role, pin in ((people, "user_name"), (federated, "source_identity")):
        statements = trust_of(built, role)["Statement"]
        for expected in pin_statements(pin, account=account):
            assert {
                **expected,
                "Action": expected["Action"][0] if len(expected["Action"]) == 1 else expected["Action"],
            } in statements
        assert session_name_choices(trust_of(built, role)) == []
    assert built.front_door.pinned_roles == [people, federated]


def test_grant_invoke_pinned_grants_the_url(pinned):
    built, people, _ = pinned
    ref = built.resolve(people.role_name)
    actions = [
        s["Action"]
        for p in built.template.find_resources("AWS::IAM::Policy").values()
        if ref in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert "lambda:InvokeFunctionUrl" in json.dumps(actions)


def test_grant_invoke_pinned_under_cognito_mode_pins_the_pools():
    built = build(sessions=SessionSettings(owner="cognito_identity", identity_pools=(POOL,)), adapters=())
    app_users = iam.Role(
        built.stack,
        "AppUsers",
        assumed_by=iam.WebIdentityPrincipal(
            "cognito-identity.amazonaws.com", {"StringEquals": {"cognito-identity.amazonaws.com:aud": POOL}}
        ),
    )
    built.front_door.grant_invoke_pinned(app_users)

    statements = trust_of(built, app_users)["Statement"]
    assert cognito_statements([POOL])[0] | {"Action": "sts:AssumeRoleWithWebIdentity"} in statements
    assert cognito_pool_problems(trust_of(built, app_users), [POOL]) == []


@pytest.mark.parametrize(
    ("settings", "kwargs", "imported", "match"),
    [
        (SessionSettings(owner="role"), {}, False, r"owner: got 'role'; allowed: session or cognito_identity"),
        (
            SessionSettings(owner="cognito_identity", identity_pools=(POOL,)),
            {"pin": "user_name"},
            False,
            r"pin: got 'user_name'; allowed: nothing under owner cognito_identity",
        ),
        (
            SessionSettings(),
            {"pin": "nickname"},
            False,
            r"pin: got 'nickname'; allowed: one of user_name, source_identity",
        ),
        (SessionSettings(), {}, True, r"role: .*allowed: a role defined in this app"),
    ],
)
def test_grant_invoke_pinned_rules(settings, kwargs, imported, match):
    built = build(sessions=settings, adapters=())
    role = (
        iam.Role.from_role_arn(built.stack, "Imported", f"arn:aws:iam::{ACCOUNT}:role/chat")
        if imported
        else iam.Role(built.stack, "People", assumed_by=iam.AccountRootPrincipal())
    )
    with pytest.raises(ConfigurationError, match=match):
        built.front_door.grant_invoke_pinned(role, **kwargs)


def test_the_source_identity_pin_adds_set_source_identity_beside_every_way_in(pinned):
    built, people, federated = pinned
    (signed_in,) = [s for s in trust_of(built, federated)["Statement"] if s["Effect"] == "Allow"]
    assert signed_in["Action"] == ["sts:AssumeRole", "sts:SetSourceIdentity"]
    (users,) = [s for s in trust_of(built, people)["Statement"] if s["Effect"] == "Allow"]
    assert users["Action"] == "sts:AssumeRole"  # no source identity under user_name: nothing to add
    assert missing_set_source_identity(trust_of(built, federated)) == []
    assert missing_set_source_identity(trust_of(built, people)) == [
        f"Statement[0] lets {users['Principal']['AWS']} assume the role but not sts:SetSourceIdentity"
    ]


def test_set_source_identity_covers_allow_statements_added_after_the_pin():
    built = build(adapters=())
    role = iam.Role(built.stack, "SignedIn", assumed_by=iam.AccountRootPrincipal())
    built.front_door.grant_invoke_pinned(role, pin="source_identity")
    saml = iam.SamlProvider.from_saml_provider_arn(built.stack, "Okta", f"arn:aws:iam::{ACCOUNT}:saml-provider/Okta")
    role.assume_role_policy.add_statements(
        iam.PolicyStatement(actions=["sts:AssumeRoleWithSAML"], principals=[iam.SamlPrincipal(saml, {})])
    )
    built.app.synth()
    allows = [s for s in trust_of(built, role)["Statement"] if s["Effect"] == "Allow"]
    assert all("sts:SetSourceIdentity" in s["Action"] for s in allows) and len(allows) == 2


@pytest.mark.parametrize(
    ("organization", "condition"),
    [
        (None, {"StringNotEquals": {"aws:PrincipalAccount": ACCOUNT}}),
        ("o-a1b2c3d4e5", {"StringNotEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}}),
    ],
)
def test_the_source_identity_pin_admits_one_account_or_one_organization(organization, condition):
    (bound,) = [
        s
        for s in pin_statements("source_identity", account=ACCOUNT, organization=organization)
        if "aws:PrincipalAccount" in json.dumps(s) or "aws:PrincipalOrgID" in json.dumps(s)
    ]
    assert (bound["Effect"], bound["Action"], bound["Condition"]) == ("Deny", ["sts:AssumeRole"], condition)


def test_the_organization_setting_reaches_the_pin():
    built = build(sessions=SessionSettings(organization_id="o-a1b2c3d4e5"), adapters=())
    role = iam.Role(built.stack, "SignedIn", assumed_by=iam.AccountRootPrincipal())
    built.front_door.grant_invoke_pinned(role, pin="source_identity")
    assert {"StringNotEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}} in [
        s.get("Condition") for s in trust_of(built, role)["Statement"]
    ]


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"organization_id": "o-123"}, r"organization_id: got 'o-123'; allowed: an AWS Organizations id"),
        ({"organization_id": "r-a1b2c3d4e5"}, r"organization_id: got 'r-a1b2c3d4e5'"),
        (
            {"owner": "role", "organization_id": "o-a1b2c3d4e5"},
            r"organization_id: got 'o-a1b2c3d4e5'; allowed: only with owner session",
        ),
    ],
)
def test_organization_id_rules(settings, match):
    with pytest.raises(ConfigurationError, match=match):
        SessionSettings(**settings)


def test_with_set_source_identity_leaves_services_and_denies_alone():
    service = {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    deny = pin_statements("source_identity", account=ACCOUNT)[0]
    already = {**ROOT_TRUST, "Action": ["sts:AssumeRole", "sts:SetSourceIdentity"]}
    assert with_set_source_identity(document(service, deny, already))["Statement"] == [service, deny, already]


@pytest.mark.parametrize(
    ("statements", "chosen"),
    [
        ((ROOT_TRUST | {"Action": ["sts:AssumeRole", "sts:SetSourceIdentity"]},), True),
        ((ROOT_TRUST | {"Action": "sts:*"},), True),
        (
            (
                ROOT_TRUST
                | {
                    "Action": ["sts:AssumeRole", "sts:SetSourceIdentity"],
                    "Condition": {"StringEquals": {"sts:SourceIdentity": "${aws:username}"}},
                },
            ),
            False,
        ),
        (
            (
                ROOT_TRUST
                | {
                    "Action": ["sts:AssumeRole", "sts:SetSourceIdentity"],
                    "Condition": {"StringLike": {"sts:SourceIdentity": "*"}},
                },
            ),
            True,
        ),
        (
            (
                ROOT_TRUST | {"Action": ["sts:AssumeRole", "sts:SetSourceIdentity"]},
                {
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "sts:SetSourceIdentity",
                    "Condition": {"StringNotEquals": {"sts:SourceIdentity": "${aws:username}"}},
                },
                {
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "sts:SetSourceIdentity",
                    "Condition": {"Null": {"aws:username": "true"}},
                },
            ),
            False,
        ),
        (
            (
                {
                    "Effect": "Allow",
                    "Principal": {"Federated": f"arn:aws:iam::{ACCOUNT}:saml-provider/Okta"},
                    "Action": ["sts:AssumeRoleWithSAML", "sts:SetSourceIdentity"],
                },
            ),
            False,
        ),
        ((ROOT_TRUST,), False),
    ],
    ids=["any", "sts-star", "user-name", "wildcard", "deny-pair", "saml", "no-set"],
)
def test_which_roles_let_a_caller_set_any_source_identity(statements, chosen):
    assert bool(source_identity_choices(document(*statements))) == chosen


# --------------------------------------------------------------------------- callers from the config


def test_callers_are_granted_the_url():
    arn = f"arn:aws:iam::{ACCOUNT}:role/chat-app"
    built = build(sessions=SessionSettings(callers=(arn,)), adapters=())
    policies = [
        p
        for p in built.template.find_resources("AWS::IAM::Policy").values()
        if p["Properties"]["Roles"] == ["chat-app"]
    ]
    assert len(policies) == 1
    assert "lambda:InvokeFunctionUrl" in json.dumps(policies[0]["Properties"]["PolicyDocument"])


def test_callers_of_another_account_are_refused():
    from sagemaker_llm_cdk import LlmEndpoint, ModelSpec
    from sagemaker_llm_cdk.sessions.front_door import SessionFrontDoor

    stack = Stack(App(), "Chat", env=Environment(account=ACCOUNT, region="us-east-1"))
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    settings = SessionSettings(callers=("arn:aws:iam::210987654321:role/chat-app",))
    base = endpoint.add_model(
        "m", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-weights/qwen3-8b/", sessions=settings)
    )
    with pytest.raises(ConfigurationError, match=r"callers\[0\]: .*allowed: a role of the stack's account"):
        SessionFrontDoor(stack, "FrontDoor", endpoint=endpoint, default_component=base)


# --------------------------------------------------------------------------- live preflight


def preflight_context(sessions: dict[str, Any]) -> Any:
    from sagemaker_llm_cdk import parse_config
    from sagemaker_llm_cdk.preflight import AwsClients, PreflightContext

    config = parse_config(
        {
            "endpoints": [
                {
                    "name": "Chat",
                    "instance_type": "ml.g6e.12xlarge",
                    "models": [
                        {"name": "qwen3-8b", "model_data_s3_uri": "s3://my-weights/qwen3-8b/", "sessions": sessions}
                    ],
                }
            ]
        },
        source="test",
    )
    return PreflightContext(
        config=config,
        source="test",
        region="us-east-1",
        partition="aws",
        now=datetime(2030, 3, 17, tzinfo=UTC),
        clients=AwsClients(factory=lambda service, region: boto3.client(service, region_name=region or "us-east-1")),
    )


@pytest.fixture
def moto_iam(monkeypatch):
    from support.trust_probe import moto_roles

    with moto_roles(monkeypatch) as role:
        yield role


def findings(sessions: dict[str, Any]) -> list[Any]:
    from sagemaker_llm_cdk.preflight.live import check_front_door_callers

    return list(check_front_door_callers(preflight_context(sessions)))


def test_preflight_warns_about_a_caller_role_whose_trust_lets_callers_choose_the_name(moto_iam):
    chosen = moto_iam("chat-open", ROOT_TRUST)
    fixed = moto_iam("chat-pinned", ROOT_TRUST, *pin_statements("user_name", account=ACCOUNT))

    found = findings({"callers": [chosen, fixed]})

    assert [(f.severity, f.subject) for f in found] == [
        ("warning", "endpoints[0].models[0].sessions.callers[0]"),
        ("info", "endpoints[0].models[0].sessions.callers[1]"),
    ]
    assert "chat-open: Statement[0] lets" in found[0].what and "any RoleSessionName" in found[0].what
    assert "sts:RoleSessionName" in found[0].fix and "no caller chooses" in found[1].what


def test_preflight_under_role_mode_only_notes_the_shared_owner(moto_iam):
    arn = moto_iam("chat-backend", ROOT_TRUST)
    assert [(f.severity, f.what) for f in findings({"owner": "role", "callers": [arn]})] == [
        ("info", "owner role: every session of chat-backend is one owner (its callers keep their users apart)")
    ]


def test_preflight_under_cognito_mode_checks_the_pools(moto_iam):
    cognito = {
        "Effect": "Allow",
        "Principal": {"Federated": "cognito-identity.amazonaws.com"},
        "Action": "sts:AssumeRoleWithWebIdentity",
    }
    loose = moto_iam("app-users-any-pool", cognito)
    tight = moto_iam(
        "app-users", {**cognito, "Condition": {"StringEquals": {"cognito-identity.amazonaws.com:aud": POOL}}}
    )

    found = findings({"owner": "cognito_identity", "identity_pools": [POOL], "callers": [loose, tight]})

    assert [f.severity for f in found] == ["warning", "info"]
    assert "every identity pool" in found[0].what


def test_preflight_blocks_on_a_caller_role_that_does_not_exist(moto_iam):
    moto_iam("unrelated", ROOT_TRUST)
    (found,) = findings({"callers": [f"arn:aws:iam::{ACCOUNT}:role/missing"]})
    assert found.severity == "blocker" and "does not exist" in found.what


def test_preflight_reads_no_role_without_callers():
    assert findings({}) == []  # no IAM client is even created (no credentials needed)


def test_preflight_registers_the_check():
    from sagemaker_llm_cdk.preflight import LIVE_CHECKS
    from sagemaker_llm_cdk.preflight.live import check_front_door_callers

    assert check_front_door_callers in LIVE_CHECKS


def test_template_of_the_pinned_role_passes_cfn_shape(pinned):
    built, people, _ = pinned
    Template.from_stack(built.stack).has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    {
                        "Action": "sts:AssumeRole",
                        "Effect": "Allow",
                        "Principal": {
                            "AWS": {
                                "Fn::Join": [
                                    "",
                                    ["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}, ":root"],
                                ]
                            }
                        },
                    },
                    *[
                        {**s, "Action": s["Action"][0] if len(s["Action"]) == 1 else s["Action"]}
                        for s in pin_statements("user_name", account=built.resolve(built.stack.account))
                    ],
                ]
            }
        },
    )
