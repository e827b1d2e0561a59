"""The live preflight reports roles that let a caller set any source identity and chain into a pinned role.

The roles are created in moto's IAM (``ListRoles`` and ``GetRole`` answer with the documents as written, and every
request goes through botocore's parameter validation); the one refusal moto cannot give (``AccessDenied`` on
``ListRoles``) is a Stubber, whose request is checked against botocore's service model too.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from sagemaker_llm_cdk import parse_config
from sagemaker_llm_cdk.preflight import LIVE_CHECKS, AwsClients, PreflightContext
from sagemaker_llm_cdk.preflight.live import check_source_identity_chains
from sagemaker_llm_cdk.sessions.trust import pin_statements, with_set_source_identity
from support.aws_model import assert_valid_request
from support.trust_probe import moto_roles

ACCOUNT = "123456789012"  # moto's account
ROOT = f"arn:aws:iam::{ACCOUNT}:root"
ROOT_TRUST = {"Effect": "Allow", "Principal": {"AWS": ROOT}, "Action": "sts:AssumeRole"}
SETS_ANY = {"Effect": "Allow", "Principal": {"AWS": ROOT}, "Action": ["sts:AssumeRole", "sts:SetSourceIdentity"]}
SETS_OWN_NAME = {**SETS_ANY, "Condition": {"StringEquals": {"sts:SourceIdentity": "${aws:username}"}}}


def document(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


PINNED = with_set_source_identity(document(ROOT_TRUST, *pin_statements("source_identity", account=ACCOUNT)))


def context(*, callers: tuple[str, ...] = (), templates: dict[str, Any] | None = None, iam: Any = None) -> Any:
    config = parse_config(
        {
            "endpoints": [
                {
                    "name": "Chat",
                    "instance_type": "ml.g6e.12xlarge",
                    "models": [
                        {
                            "name": "qwen3-8b",
                            "model_data_s3_uri": "s3://team-llm-weights/qwen3-8b/",
                            "sessions": {"callers": list(callers)},
                        }
                    ],
                }
            ]
        },
        source="test",
    )

    def factory(service: str, region: str | None) -> Any:
        return iam if iam is not None else boto3.client(service, region_name=region or "us-east-1")

    return PreflightContext(
        config=config,
        source="test",
        region="us-east-1",
        partition="aws",
        account=ACCOUNT,
        now=datetime(2030, 3, 17, tzinfo=UTC),
        templates=templates,
        clients=AwsClients(factory=factory),
    )


def template_with(trust: dict[str, Any]) -> dict[str, Any]:
    """A synthesized template holding one role with ``trust``, written as CDK writes the account root."""
    text = json.dumps(trust).replace(
        json.dumps(ROOT),
        json.dumps(
            {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}, ":root"]]}
        ),
    )
    return {
        "Resources": {
            "SignedInRole": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": json.loads(text)}}
        }
    }


@pytest.fixture
def iam(monkeypatch):
    with moto_roles(monkeypatch) as role:
        yield role


def test_a_role_that_lets_callers_set_any_source_identity_is_reported_for_a_pinned_template_role(iam):
    iam("bridge", SETS_ANY)
    iam("people", SETS_OWN_NAME)
    iam("plain", ROOT_TRUST)

    found = list(check_source_identity_chains(context(templates={"SageMakerLlm": template_with(PINNED)})))

    assert [(f.severity, f.subject) for f in found] == [("warning", "SageMakerLlm SignedInRole")]
    assert found[0].what.startswith("role bridge may set any source identity and chain into SignedInRole: ")
    assert "sts:SourceIdentity" in found[0].fix and "another person" in found[0].why


def test_a_pinned_caller_role_is_read_and_the_roles_it_lets_in_are_checked(iam):
    pinned = iam("chat-signed-in", *PINNED["Statement"])
    iam("bridge", SETS_ANY, path="/team/")

    (found,) = check_source_identity_chains(context(callers=(pinned,)))

    assert found.subject == "endpoints[0].models[0].sessions.callers[0]"
    assert f"chain into {pinned}" in found.what


def test_a_pinned_role_that_names_its_callers_lets_only_those_in(iam):
    named = iam("sso-people", SETS_OWN_NAME)
    iam("bridge", SETS_ANY)
    trust = document(
        {"Effect": "Allow", "Principal": {"AWS": named}, "Action": "sts:AssumeRole"},
        *pin_statements("source_identity", account=ACCOUNT),
    )
    (found,) = check_source_identity_chains(context(templates={"S": template_with(with_set_source_identity(trust))}))
    # bridge sets any source identity, but the pinned role trusts only sso-people, which fixes its own.
    assert (found.severity, found.what) == (
        "info",
        "no role of the account lets a caller set any source identity and chain into SignedInRole (2 roles read)",
    )


def test_pinned_roles_themselves_are_not_sources_and_nothing_is_read_without_a_pin(iam):
    iam("chat-signed-in", *PINNED["Statement"])  # allows sts:SetSourceIdentity, but only of a carried identity
    (found,) = check_source_identity_chains(context(templates={"S": template_with(PINNED)}))
    assert found.severity == "info"
    assert list(check_source_identity_chains(context(templates={"S": template_with(document(SETS_OWN_NAME))}))) == []


def test_a_refused_list_roles_is_a_warning_not_a_crash():
    client = boto3.client("iam", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(client)
    assert_valid_request("iam", "ListRoles", {})
    stub.add_client_error("list_roles", service_error_code="AccessDenied", http_status_code=403, expected_params={})
    with stub:
        (found,) = check_source_identity_chains(context(templates={"S": template_with(PINNED)}, iam=client))
    stub.assert_no_pending_responses()
    assert (found.severity, found.what) == ("warning", "ListRoles failed (AccessDenied)")
    assert "iam:ListRoles" in found.fix


def test_the_check_is_registered_live():
    assert check_source_identity_chains in LIVE_CHECKS


def test_a_caller_role_is_read_once_for_both_iam_checks(iam):
    """check_front_door_callers and check_source_identity_chains share one GetRole per caller (ctx.extra)."""
    from sagemaker_llm_cdk.preflight.live import check_front_door_callers

    pinned = iam("chat-signed-in", *PINNED["Statement"])
    client = boto3.client("iam", region_name="us-east-1")
    names: list[str] = []

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(client, name)

        def get_role(self, **kwargs: Any) -> Any:
            names.append(kwargs["RoleName"])
            return client.get_role(**kwargs)

    ctx = context(callers=(pinned,), iam=Counting())
    list(check_front_door_callers(ctx))
    list(check_source_identity_chains(ctx))
    assert names == ["chat-signed-in"]
