"""Tests for constructs/sagemaker_llm_cdk/grants.py: wildcards acknowledged exactly, and a new '*' grant fails the
synth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, Environment, Stack, Validations
from aws_cdk import aws_iam as iam
from cdk_nag import AwsSolutionsChecks
from sagemaker_llm_cdk import EndpointOptions, LlmEndpoint, ModelSpec, load_config
from sagemaker_llm_cdk.core.grants import WILDCARD_ONLY_ACTIONS, grant, guard_wildcards, wildcard_problems
from sagemaker_llm_cdk.sessions.front_door import SessionFrontDoor
from sagemaker_llm_cdk.settings.sessions import SessionSettings

from stacks import LlmPlatformStack, attach_checks

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
BOUND = Environment(account="123456789012", region="us-east-1")
GUARD = "which no acknowledgement of that resource names"


def _role_stack(env: Environment | None = None) -> tuple[App, Stack, iam.Role]:
    app = App()
    stack = Stack(app, "Grants", env=env)
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack, role


def _statements(stack: Stack, role: iam.Role) -> list[dict]:
    policy = role.node.find_child("DefaultPolicy").node.default_child
    return stack.resolve(policy.policy_document)["Statement"]


@pytest.mark.parametrize("env", [None, BOUND], ids=["agnostic", "bound"])
def test_a_wildcard_only_grant_is_acknowledged_and_synthesizes(env: Environment | None) -> None:
    app, stack, role = _role_stack(env)
    grant(role, sid="Tracing", actions=["xray:PutTraceSegments"], resources=["*"], reason="X-Ray has no resource type.")
    app.synth()  # cdk-nag would fail on an unacknowledged IAM5[Resource::*]
    assert _statements(stack, role) == [
        {"Sid": "Tracing", "Action": "xray:PutTraceSegments", "Effect": "Allow", "Resource": "*"}
    ]


@pytest.mark.parametrize("env", [None, BOUND], ids=["agnostic", "bound"])
def test_an_action_with_resource_level_permissions_added_later_on_star_fails_the_synth(env: Environment | None) -> None:
    app, _, role = _role_stack(env)
    grant(
        role,
        actions=["cloudwatch:PutMetricData"],
        resources=["*"],
        reason="no resource type",
        conditions={"StringEquals": {"cloudwatch:namespace": "Mine"}},
    )
    role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
    with pytest.raises(
        RuntimeError,
        match=rf"Grants\.template\.json RoleDefaultPolicy\w+ \(Grants/Role/DefaultPolicy/Resource\) "
        rf"PolicyDocument\.Statement\[1\]: allows \['s3:GetObject'\] on '\*', {GUARD}",
    ):
        app.synth()


def test_a_wildcard_without_a_reason_is_refused() -> None:
    _, stack, role = _role_stack()
    with pytest.raises(ValueError, match=r"wildcards \['arn:aws:s3:::b/\*'\] need a reason"):
        grant(role, actions=["s3:GetObject"], resources=["arn:aws:s3:::b/*"])
    with pytest.raises(ValueError, match=r"wildcards \['s3:Get\*'\] need a reason"):
        grant(role, actions=["s3:Get*"], resources=["arn:aws:s3:::b/key"], reason="  ")


def test_a_named_action_on_star_is_refused_at_the_call() -> None:
    _, _, role = _role_stack()
    with pytest.raises(
        ValueError,
        match=r"actions \['s3:GetObject'\] have resource-level permissions and may not be "
        r"granted on '\*'; name the resources",
    ):
        grant(role, actions=["s3:GetObject", "xray:PutTraceSegments"], resources=["*"], reason="because")


@pytest.mark.parametrize("env", [None, BOUND], ids=["agnostic", "bound"])
def test_a_prefix_grant_acknowledges_exactly_its_resource(env: Environment | None) -> None:
    app, stack, role = _role_stack(env)
    grant(
        role,
        actions=["s3:GetObject"],
        resources=[f"arn:{stack.partition}:s3:::weights/model/*"],
        reason="many weight files under one prefix",
    )
    app.synth()
    # The acknowledgement names that resource only: another prefix is a new, unacknowledged finding.
    app2, stack2, role2 = _role_stack(env)
    grant(
        role2,
        actions=["s3:GetObject"],
        resources=[f"arn:{stack2.partition}:s3:::weights/model/*"],
        reason="many weight files under one prefix",
    )
    role2.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["arn:aws:s3:::other/*"]))
    with pytest.raises(RuntimeError, match=r"AwsSolutions-IAM5\[Resource::arn:aws:s3:::other/\*\]"):
        app2.synth()


def test_not_action_on_star_is_refused() -> None:
    app, stack, role = _role_stack()
    guard_wildcards(app)  # no library grant here to add the guard
    role.add_to_policy(iam.PolicyStatement(not_actions=["iam:*"], resources=["*"]))
    with pytest.raises(
        RuntimeError, match=r"Statement\[0\]: an Allow with NotAction allows every action but \['iam:\*'\]"
    ):
        app.synth()
    assert any("an Allow with NotAction" in p for p in wildcard_problems(stack))


def test_a_wildcard_only_action_needs_the_condition_its_entry_names() -> None:
    assert WILDCARD_ONLY_ACTIONS["cloudwatch:PutMetricData"].condition == "cloudwatch:namespace"
    _, _, role = _role_stack()
    with pytest.raises(
        ValueError,
        match=r"cloudwatch:PutMetricData on a wildcard needs the cloudwatch:namespace "
        r"condition that limits it",
    ):
        grant(role, actions=["CloudWatch:putMetricData"], resources=["*"], reason="no resource type")


@pytest.mark.parametrize("env", [None, BOUND], ids=["agnostic", "bound"])
def test_an_acknowledgement_names_its_actions_and_a_new_action_on_the_same_resource_fails(
    env: Environment | None,
) -> None:
    app, stack, role = _role_stack(env)
    objects = f"arn:{stack.partition}:s3:::weights/model/*"
    grant(role, sid="ReadWeights", actions=["s3:GetObject"], resources=[objects], reason="many weight files")
    role.add_to_policy(iam.PolicyStatement(sid="ReadAgain", actions=["S3:getobject"], resources=[objects]))  # the same
    role.add_to_policy(iam.PolicyStatement(sid="Widen", actions=["s3:DeleteObject"], resources=[objects]))
    with pytest.raises(
        RuntimeError,
        match=r"Statement\[2\] \(Sid Widen\): allows \['s3:DeleteObject'\] on "
        r"'arn:(aws|<AWS::Partition>):s3:::weights/model/\*'",
    ) as raised:
        app.synth()
    assert "Sid ReadAgain" not in str(raised.value) and "Sid ReadWeights" not in str(raised.value)


def test_acknowledge_resource_covers_the_actions_it_names() -> None:
    from sagemaker_llm_cdk.core.nag import acknowledge_resource

    app, stack, role = _role_stack()
    role.add_to_policy(
        iam.PolicyStatement(
            sid="Invoke",
            actions=["lambda:InvokeFunction"],
            resources=["arn:aws:lambda:us-east-1:123456789012:function:f:*"],
        )
    )
    acknowledge_resource(
        role,
        "arn:aws:lambda:us-east-1:123456789012:function:f:*",
        "every version of f",
        actions=["lambda:InvokeFunction"],
    )
    role.add_to_policy(
        iam.PolicyStatement(
            sid="Later",
            actions=["lambda:UpdateFunctionCode"],
            resources=["arn:aws:lambda:us-east-1:123456789012:function:f:*"],
        )
    )
    with pytest.raises(RuntimeError, match=r"\(Sid Later\): allows \['lambda:UpdateFunctionCode'\]"):
        app.synth()
    with pytest.raises(ValueError, match="names no action"):
        acknowledge_resource(role, "arn:aws:s3:::b/*", "why", actions=[])


def test_every_allowed_action_names_its_source() -> None:
    assert WILDCARD_ONLY_ACTIONS["ecr:GetAuthorizationToken"].source.startswith("https://docs.aws.amazon.com/")
    assert all(entry.source.startswith("https://docs.aws.amazon.com/") for entry in WILDCARD_ONLY_ACTIONS.values())
    # Log delivery (PutResourcePolicy writes the account's log resource policies) is allowed only where acknowledged.
    assert WILDCARD_ONLY_ACTIONS["logs:PutResourcePolicy"].acknowledged
    assert not [a for a, e in WILDCARD_ONLY_ACTIONS.items() if a.startswith("logs:") and not e.acknowledged]
    assert not [
        a
        for a in WILDCARD_ONLY_ACTIONS
        if a.split(":")[1].startswith(("Get", "Put", "Delete"))
        and a.startswith(("s3:", "kms:", "dynamodb:", "sagemaker:Invoke"))
    ]


@pytest.mark.parametrize("env", [None, BOUND], ids=["agnostic", "bound"])
def test_the_endpoint_keeps_wildcard_only_actions_in_statements_of_their_own(env: Environment | None) -> None:
    app = App()
    stack = Stack(app, "Chat", env=env)
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("m", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-bucket/model/"))
    on_star = [s for s in _statements(stack, endpoint.role) if s["Resource"] == "*"]
    assert sorted(s["Sid"] for s in on_star) == ["AuthenticateToEcr", "PublishSageMakerMetrics"]
    assert all(isinstance(s["Action"], str) for s in on_star), "one action per statement"


def test_a_star_grant_on_the_front_door_role_fails_the_synth_without_the_apps_checks() -> None:
    """An outside team's app: only the library's own guards (on its acknowledged roles) run."""
    app = App()
    stack = Stack(app, "Chat", env=BOUND)
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    base = endpoint.add_model(
        "m", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-bucket/model/", sessions=SessionSettings())
    )
    front_door = SessionFrontDoor(stack, "FrontDoor", endpoint=endpoint, default_component=base)
    front_door.function.add_to_role_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
    with pytest.raises(
        RuntimeError,
        match=rf"\(Chat/FrontDoor/.*DefaultPolicy/Resource\) PolicyDocument\.Statement\[\d+\]: "
        rf"allows \['s3:GetObject'\] on '\*', {GUARD}",
    ):
        app.synth()


def test_a_star_grant_on_any_role_of_the_default_app_fails_the_synth(tmp_path: Path) -> None:
    app = App(outdir=str(tmp_path), context=json.loads((ROOT / "cdk.json").read_text())["context"])
    config = load_config(ROOT / "config" / "default.yaml")
    stack = LlmPlatformStack(app, config.stack_name, config=config, config_dir=ROOT / "config")
    roles = [c for c in stack.node.find_all() if isinstance(c, iam.Role)]
    assert len(roles) >= 14
    for role in roles:
        role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
    attach_checks(app)
    with pytest.raises(RuntimeError) as raised:
        app.synth()
    message = str(raised.value)
    lines = message.splitlines()
    missed = [
        r.node.path
        for r in roles
        if not any(
            f"({r.node.path}/DefaultPolicy/Resource) " in line and "allows ['s3:GetObject'] on '*'" in line
            for line in lines
        )
    ]
    assert not missed, f"a '*' grant on these roles passed the synth: {missed}"
