"""Tests for core/policy_acknowledgements.py's breadth rules: an acknowledgement or a grant() names what it allows.

``*``, ``<service>:*``, an action pattern on ``*``, a resource over a whole service or every account, and
``iam:PassRole``/``sts:AssumeRole*``/``iam:*`` actions on a wildcard resource and KMS actions on ``*`` are refused
at the call,
whichever way the acknowledgement is made (``grant``, ``allow_wildcard_actions``, ``acknowledge_resource``).
"""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_iam as iam
from sagemaker_llm_cdk.core.grants import allow_wildcard_actions, grant
from sagemaker_llm_cdk.core.nag import acknowledge_resource
from sagemaker_llm_cdk.core.policy_acknowledgements import acknowledgements, breadth_problems

pytestmark = pytest.mark.synth

WHY = "reviewed"


def _role() -> iam.Role:
    stack = Stack(App(), "Breadth")
    return iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))


def _statements(role: iam.Role) -> list:
    policy = role.node.try_find_child("DefaultPolicy")
    return [] if policy is None else Stack.of(role).resolve(policy.document.to_json())["Statement"]


@pytest.mark.parametrize("action", ["*", "s3:*", "S3:*", "s3:?*", "*:*"])
def test_grant_refuses_every_action_of_a_service(action):
    role = _role()
    with pytest.raises(ValueError, match=r"Breadth/Role: grant refused: action .* allows every action .*list the"):
        grant(role, actions=[action], resources=["arn:aws:s3:::my-bucket/data/*"], reason=WHY)
    assert _statements(role) == []  # nothing was added


def test_grant_refuses_an_action_pattern_on_star():
    with pytest.raises(ValueError, match=r"action pattern 's3:Get\*' on resource '\*' .*name the resources"):
        grant(_role(), actions=["s3:Get*"], resources=["*"], reason=WHY)


def test_grant_allows_an_action_pattern_on_a_named_resource():
    role = _role()
    grant(role, actions=["s3:Get*"], resources=["arn:aws:s3:::my-bucket/data/*"], reason=WHY)
    assert _statements(role)[0]["Action"] == "s3:Get*"


@pytest.mark.parametrize(
    "resource",
    ["arn:aws:s3:::*", "arn:aws:s3:::*/*", "arn:aws:iam::*:role/*", "arn:aws:logs:us-east-1:123456789012:*", "arn:*"],
)
def test_grant_refuses_a_resource_over_a_whole_service_or_every_account(resource):
    with pytest.raises(ValueError, match=r"is a wildcard over a whole service or every account; name the account"):
        grant(_role(), actions=["s3:GetObject"], resources=[resource], reason=WHY)


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("iam:PassRole", "arn:aws:iam::123456789012:role/app-*"),
        ("iam:PassRole", "arn:aws:iam::123456789012:role/app-?"),
        ("sts:AssumeRole", "arn:aws:iam::123456789012:role/app-*"),
        ("sts:AssumeRoleWithWebIdentity", "arn:aws:iam::123456789012:role/app-*"),
        ("iam:CreateRole", "arn:aws:iam::123456789012:role/app-*"),
        ("iam:Pass*", "arn:aws:iam::123456789012:role/app-*"),
    ],
)
def test_grant_refuses_role_and_key_actions_on_a_wildcard(action, resource):
    with pytest.raises(
        ValueError, match=r"on wildcard resource .*never acknowledged on a wildcard; name the exact ARN"
    ):
        grant(_role(), actions=[action], resources=[resource], reason=WHY)


def test_key_actions_on_one_accounts_keys_stay_acknowledgeable():
    # A key made at deploy time in a named account and region (CDK Pipelines' replication keys), limited by alias.
    role = _role()
    grant(
        role,
        actions=["kms:Decrypt"],
        resources=["arn:aws:kms:us-east-1:123456789012:key/*"],
        conditions={"ForAnyValue:StringEquals": {"kms:ResourceAliases": ["alias/pipeline"]}},
        reason=WHY,
    )
    assert _statements(role)[0]["Action"] == "kms:Decrypt"


def test_grant_allows_role_and_key_actions_on_a_named_arn():
    role = _role()
    target = iam.Role(Stack.of(role), "Target", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
    grant(role, actions=["iam:PassRole"], resources=[target.role_arn])
    assert _statements(role)[0]["Action"] == "iam:PassRole"


def test_a_question_mark_is_a_wildcard_that_needs_a_reason():
    with pytest.raises(ValueError, match=r"wildcards \['arn:aws:s3:::my-bucket/dat\?'\] need a reason"):
        grant(_role(), actions=["s3:GetObject"], resources=["arn:aws:s3:::my-bucket/dat?"])


def test_one_error_names_every_problem():
    with pytest.raises(ValueError) as raised:
        grant(_role(), actions=["s3:*", "iam:PassRole"], resources=["arn:aws:iam::*:role/*"], reason=WHY)
    text = str(raised.value)
    assert text.startswith("Breadth/Role: grant refused:\n")
    assert "'s3:*' allows every action" in text
    assert "wildcard over a whole service or every account" in text
    assert "'iam:PassRole' on wildcard resource 'arn:aws:iam::*:role/*'" in text


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        ({"*": WHY}, r"Breadth/Role: an acknowledgement may not acknowledge .*\n  - action '\*' allows every"),
        ({"s3:List*": WHY}, r"action pattern 's3:list\*' on resource '\*'"),
        ({"kms:Decrypt": WHY}, r"'kms:decrypt' on resource '\*' reaches every KMS key the account holds"),
    ],
)
def test_allow_wildcard_actions_names_what_it_allows(actions, match):
    role = _role()
    with pytest.raises(ValueError, match=match):
        allow_wildcard_actions(role, actions)
    assert acknowledgements(role) == []


def test_acknowledge_resource_refuses_a_whole_service():
    role = _role()
    with pytest.raises(ValueError, match=r"resource 'arn:aws:iam::\*:role/\*' is a wildcard over a whole service"):
        acknowledge_resource(role, "arn:aws:iam::*:role/*", WHY, actions=["iam:GetRole"])
    with pytest.raises(ValueError, match=r"action 'sts:assumerole' on wildcard resource"):
        acknowledge_resource(role, "arn:aws:iam::123456789012:role/app-*", WHY, actions=["sts:AssumeRole"])


def test_single_named_actions_that_aws_allows_only_on_star_stay_allowed():
    assert (
        breadth_problems(["*"], ["pricing:GetProducts", "cloudwatch:PutMetricData", "ecr:GetAuthorizationToken"]) == []
    )
    role = _role()
    allow_wildcard_actions(role, {"pricing:GetProducts": "the Price List API has no resource type"})
    assert [a.actions for a in acknowledgements(role)] == [("pricing:getproducts",)]


def test_references_and_named_prefixes_stay_allowed():
    assert (
        breadth_problems(["<Bucket.Arn>/data-capture/*", "arn:<AWS::Partition>:s3:::<Bucket>/*"], ["s3:GetObject"])
        == []
    )
    assert breadth_problems(
        ['{"Fn::Sub":"arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:*"}'], ["logs:PutLogEvents"]
    )
