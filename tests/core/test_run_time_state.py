"""``RunTimeParameter``: run-time values live in a custom resource no update resets, with exact grants."""

from __future__ import annotations

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template
from sagemaker_llm_cdk.core.errors import ConfigurationError
from sagemaker_llm_cdk.core.removal import removal_note, set_removal
from sagemaker_llm_cdk.core.run_time_state import RESOURCE_TYPE, RunTimeParameter, RunTimeState

pytestmark = pytest.mark.synth

ENVS = {"agnostic": None, "bound": Environment(account="123456789012", region="us-east-1")}
NAME = "/sagemaker-llm/state/test/value"
PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/chat-p5e"


def stack_with(env: Environment | None = None, removal: str | None = None, **kwargs):
    stack = Stack(App(), "S", env=env)
    if removal:
        set_removal(stack, removal)  # type: ignore[arg-type]
    parameter = RunTimeParameter(stack, "Value", parameter_name=NAME, initial_value="none", description="d", **kwargs)
    return stack, parameter


def _arn(env: Environment | None, name: str) -> object:
    if env is None:
        return {
            "Fn::Join": [
                "",
                [
                    "arn:",
                    {"Ref": "AWS::Partition"},
                    ":ssm:",
                    {"Ref": "AWS::Region"},
                    ":",
                    {"Ref": "AWS::AccountId"},
                    f":parameter/{name.lstrip('/')}",
                ],
            ]
        }
    return {
        "Fn::Join": [
            "",
            ["arn:", {"Ref": "AWS::Partition"}, f":ssm:us-east-1:123456789012:parameter/{name.lstrip('/')}"],
        ]
    }


@pytest.mark.parametrize("env", ENVS.values(), ids=ENVS.keys())
def test_a_run_time_value_is_a_custom_resource_not_an_ssm_parameter_resource(env):
    stack, parameter = stack_with(env)
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::SSM::Parameter", 0)
    template.has_resource(
        RESOURCE_TYPE,
        {
            "Properties": {
                "ParameterName": NAME,
                "InitialValue": "none",
                "Removal": "retain",
                "Description": "d",
                "SeedFrom": Match.absent(),
                "PlanName": Match.absent(),
            },
            "DeletionPolicy": "Delete",  # the handler decides by Removal (and ownership), so it must be asked
            "Metadata": Match.object_like({"sagemaker-llm-cdk:run-time-state": NAME}),
        },
    )
    assert parameter.parameter_name == NAME
    assert stack.resolve(parameter.parameter_arn) == _arn(env, NAME)


@pytest.mark.parametrize("env", ENVS.values(), ids=ENVS.keys())
def test_the_function_may_touch_exactly_its_parameters_seeds_and_plans(env):
    stack, _ = stack_with(env, seed_from="/old/value", plan_name="chat-p5e", plan_arns=[PLAN_ARN])
    RunTimeParameter(stack, "Second", parameter_name=NAME + "2", initial_value="x", description="d")
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::Lambda::Function", 2)  # one handler and its framework for the whole stack
    policies = [
        p
        for p in template.find_resources("AWS::IAM::Policy").values()
        if "RunTimeStateFunctionRole" in str(p["Properties"]["Roles"])
    ]
    (policy,) = policies
    statements = {s.get("Sid"): s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s.get("Sid")}
    manage = [s for sid, s in statements.items() if sid.startswith("Manage")]
    assert [stack.resolve(s["Resource"]) for s in manage] == [_arn(env, NAME), _arn(env, NAME + "2")]
    assert all(sorted(s["Action"]) == ["ssm:AddTagsToResource", "ssm:GetParameter", "ssm:PutParameter"] for s in manage)
    # Delete's actions are on the state folder: a parameter that left the template has no named grant at cleanup.
    cleanup = statements["CleanUpRunTimeState"]
    assert sorted(cleanup["Action"]) == ["ssm:DeleteParameter", "ssm:ListTagsForResource", "ssm:RemoveTagsFromResource"]
    assert stack.resolve(cleanup["Resource"]) == _arn(env, "/sagemaker-llm/state/*")
    (seed,) = [s for sid, s in statements.items() if sid.startswith("Seed")]
    assert (seed["Action"], seed["Resource"]) == ("ssm:GetParameter", _arn(env, "/old/value"))
    (describe,) = [s for sid, s in statements.items() if sid.startswith("Describe")]
    assert (describe["Action"], describe["Resource"]) == ("sagemaker:DescribeTrainingPlan", PLAN_ARN)
    for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
        assert statement["Resource"] != "*" or sorted(statement["Action"]) == [
            "xray:PutTelemetryRecords",
            "xray:PutTraceSegments",
        ]


def test_grants_name_the_one_parameter():
    stack, parameter = stack_with()
    role = iam.Role(stack, "Reader", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    parameter.grant_read(role)
    parameter.grant_write(role)
    Template.from_stack(stack).has_resource_properties(
        "AWS::IAM::Policy",
        {
            "Roles": [{"Ref": Match.string_like_regexp("Reader")}],
            "PolicyDocument": {
                "Statement": [
                    {
                        "Action": [
                            "ssm:DescribeParameters",
                            "ssm:GetParameters",
                            "ssm:GetParameter",
                            "ssm:GetParameterHistory",
                        ],
                        "Effect": "Allow",
                        "Resource": _arn(None, NAME),
                    },
                    {"Action": "ssm:PutParameter", "Effect": "Allow", "Resource": _arn(None, NAME)},
                ]
            },
        },
    )


def test_the_stack_removal_mode_reaches_the_handler_and_the_note():
    stack, _ = stack_with(removal="destroy")
    Template.from_stack(stack).has_resource_properties(RESOURCE_TYPE, {"Removal": "destroy"})
    assert "cdk destroy deletes 2 x log group, 1 x run-time SSM parameter" in removal_note(stack)
    kept, _ = stack_with()
    assert "cdk destroy keeps 2 x log group, 1 x run-time SSM parameter" in removal_note(kept)


def test_one_service_per_stack():
    stack, parameter = stack_with()
    assert RunTimeState.of(parameter) is RunTimeState.of(stack)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"parameter_name": "has spaces"}, r"parameter_name: got 'has spaces'.*a fixed SSM parameter name"),
        ({"seed_from": "a b"}, r"seed_from: got 'a b'.*a fixed SSM parameter name"),
        ({"initial_value": ""}, r"initial_value: got ''.*1-4096 characters"),
        ({"plan_name": "chat-p5e"}, r"plan_arns: got \[\].*the plan's exact ARNs"),
    ],
    ids=["name", "seed", "empty value", "plan without arns"],
)
def test_bad_arguments_are_named(kwargs, message):
    stack = Stack(App(), "S")
    arguments = {"parameter_name": NAME, "initial_value": "none", "description": "d", **kwargs}
    with pytest.raises(ConfigurationError, match=message):
        RunTimeParameter(stack, "Value", **arguments)
