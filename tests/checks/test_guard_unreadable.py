"""What the policy guard cannot read is a finding, ``?`` is a wildcard, and only positive conditions limit.

Each probe is built as a contributor would write it (an L1 policy, role or raw ``CfnResource`` holding the shape),
synthesized with the guard applied (``grants.guard_wildcards``); the readable equivalent passes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, CfnMapping, CfnParameter, CfnResource, Fn, Stack
from sagemaker_llm_cdk.core.grants import guard_wildcards

pytestmark = pytest.mark.synth

TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "lambda.amazonaws.com"}}],
}


def _small(tmp_path: Path) -> tuple[App, Stack]:
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Small")
    guard_wildcards(app)
    return app, stack


def _policy(stack: Stack, document: Any) -> None:
    CfnResource(
        stack, "P", type="AWS::IAM::Policy", properties={"PolicyName": "p", "PolicyDocument": document, "Roles": ["r"]}
    )


def _statement(**values: Any) -> dict[str, Any]:
    return {"Sid": "Probe", "Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::kept/x", **values}


def _doc(*statements: Any) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def test_json_text_is_read(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    _policy(stack, json.dumps(_doc(_statement(Resource="*"))))
    with pytest.raises(
        RuntimeError,
        match=r"Small\.template\.json P PolicyDocument\.Statement\[0\] \(Sid Probe\): "
        r"allows \[.s3:GetObject.\] on .\*.",
    ):
        app.synth()


def test_text_that_is_not_json_is_unreadable(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    _policy(stack, "{not json")
    with pytest.raises(
        RuntimeError,
        match=r"Small\.template\.json P PolicyDocument: is text the guard cannot read as a JSON policy document",
    ):
        app.synth()


def test_a_statement_that_is_not_an_object_is_unreadable(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    _policy(stack, _doc("Allow everything"))
    with pytest.raises(
        RuntimeError, match=r"P PolicyDocument\.Statement\[0\]: is Allow everything, not a statement the guard can read"
    ):
        app.synth()


def test_a_statement_under_fn_if_is_read_in_both_branches(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    _policy(stack, _doc(Fn.condition_if("Prod", _statement(), _statement(Sid="Wide", Resource="*"))))
    with pytest.raises(
        RuntimeError,
        match=r"P PolicyDocument\.Statement\[0\]\.Fn::If\[2\] \(Sid Wide\): allows \['s3:GetObject'\] on '\*'",
    ):
        app.synth()


def test_literal_fn_if_branches_pass(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    _policy(stack, _doc(Fn.condition_if("Prod", _statement(), {"Ref": "AWS::NoValue"})))
    app.synth()


def test_a_fn_if_branch_that_is_not_literal_is_unreadable(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    _policy(stack, _doc(Fn.condition_if("Prod", _statement(), Fn.import_value("TheirStatement"))))
    with pytest.raises(
        RuntimeError, match=r"P PolicyDocument\.Statement\[0\]: is \{\"Fn::If\".*not a statement the guard can read"
    ):
        app.synth()


def test_a_ref_to_a_parameter_is_unreadable(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    CfnParameter(stack, "Target", default="*")
    _policy(stack, _doc(_statement(Resource={"Ref": "Target"})))
    with pytest.raises(
        RuntimeError,
        match=r"P PolicyDocument\.Statement\[0\] \(Sid Probe\): Resource holds <Target> \(a Ref to the template "
        r"parameter 'Target', chosen at deploy time \(Default '\*'; no AllowedValues or AllowedPattern that rule "
        r"out a wildcard\)\)",
    ):
        app.synth()


def test_a_parameter_whose_allowed_values_hold_no_wildcard_is_read(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    CfnParameter(
        stack, "Target", default="arn:aws:s3:::kept/x", allowed_values=["arn:aws:s3:::kept/x", "arn:aws:s3:::kept/y"]
    )
    _policy(stack, _doc(_statement(Resource={"Ref": "Target"})))
    app.synth()


def test_a_parameter_whose_allowed_pattern_excludes_wildcards_is_read(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    CfnParameter(stack, "Bucket", allowed_pattern=r"^[a-z0-9][a-z0-9.-]{2,62}$")
    _policy(stack, _doc(_statement(Resource=Fn.sub("arn:aws:s3:::${Bucket}/data/x"))))
    app.synth()


def test_a_parameter_whose_allowed_pattern_admits_a_wildcard_is_unreadable(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    CfnParameter(stack, "Target", allowed_pattern=r"^arn:aws:s3:::.+$")
    _policy(stack, _doc(_statement(Resource={"Ref": "Target"})))
    with pytest.raises(RuntimeError, match=r"no AllowedValues or AllowedPattern that rule out a wildcard"):
        app.synth()


@pytest.mark.parametrize(
    ("pattern", "excludes"),
    [
        (r"^[a-z0-9][a-z0-9._/-]{1,255}$", True),
        (r"^\w+$", True),
        (r"^(dev|prod)-[0-9]+$", True),
        (r"^.*$", False),
        (r"^[^a]+$", False),
        (r"^[a-z*]+$", False),
        (r"^a\?b$", False),
        (r"^[!-~]+$", False),
        (r"\S+", False),
        (r"(", False),
    ],
)
def test_which_allowed_patterns_rule_out_a_wildcard(pattern: str, excludes: bool) -> None:
    from sagemaker_llm_cdk.core.policy_documents import pattern_excludes_wildcards

    assert pattern_excludes_wildcards(pattern) is excludes


@pytest.mark.parametrize("key", ["Effect", "Principal", "Condition"])
def test_import_value_anywhere_in_a_trust_statement_is_unreadable(tmp_path: Path, key: str) -> None:
    app, stack = _small(tmp_path)
    value = {
        "Effect": Fn.import_value("X"),
        "Principal": {"AWS": Fn.import_value("X")},
        "Condition": {"StringEquals": {"aws:SourceAccount": Fn.import_value("X")}},
    }[key]
    statement = {**TRUST["Statement"][0], "Sid": "Trust", key: value}
    CfnResource(stack, "R", type="AWS::IAM::Role", properties={"AssumeRolePolicyDocument": _doc(statement)})
    with pytest.raises(
        RuntimeError,
        match=rf"R AssumeRolePolicyDocument\.Statement\[0\] \(Sid Trust\): {key} holds "
        r"\{\"Fn::ImportValue\":\"X\"\} \(Fn::ImportValue: chosen at deploy time\)",
    ):
        app.synth()


def test_find_in_map_to_a_wildcard_is_unreadable_and_to_literals_is_read(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    CfnMapping(stack, "Wide", mapping={"us-east-1": {"arn": "*"}})
    CfnMapping(stack, "Kept", mapping={"us-east-1": {"arn": "arn:aws:s3:::kept/x"}})
    _policy(
        stack,
        _doc(
            _statement(Sid="Kept", Resource=Fn.find_in_map("Kept", "us-east-1", "arn")),
            _statement(Sid="Wide", Resource=Fn.find_in_map("Wide", "us-east-1", "arn")),
        ),
    )
    with pytest.raises(
        RuntimeError, match=r"Statement\[1\] \(Sid Wide\): Resource holds \{\"Fn::FindInMap\""
    ) as raised:
        app.synth()
    assert "(Sid Kept)" not in str(raised.value)


def test_question_mark_is_a_wildcard(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    _policy(stack, _doc(_statement(Sid="Q", Resource="arn:aws:s3:::kep?/x"), _statement(Sid="QA", Action="s3:?*")))
    with pytest.raises(RuntimeError, match=r"\(Sid Q\): allows \['s3:GetObject'\] on 'arn:aws:s3:::kep\?/x'") as raised:
        app.synth()
    assert "(Sid QA): allows ['s3:?*']" in str(raised.value)


def _queue_policy(stack: Stack, condition: dict[str, Any]) -> None:
    statement = {
        "Sid": "Open",
        "Effect": "Allow",
        "Principal": "*",
        "Action": "sqs:SendMessage",
        "Resource": "arn:aws:sqs:us-east-1:123456789012:q",
        "Condition": condition,
    }
    CfnResource(
        stack, "Q", type="AWS::SQS::QueuePolicy", properties={"Queues": ["q"], "PolicyDocument": _doc(statement)}
    )


@pytest.mark.parametrize(
    "condition",
    [
        {"StringNotEquals": {"aws:SourceAccount": "123456789012"}},
        {"StringLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/*"}},
        {"ArnLike": {"aws:SourceArn": "arn:aws:sns:us-east-1:*:topic"}},
        {"StringEqualsIfExists": {"aws:SourceAccount": "123456789012"}},
        {"ForAllValues:StringEquals": {"aws:PrincipalOrgID": "o-abc"}},
    ],
    ids=["StringNotEquals", "StringLike-wildcard", "ArnLike-any-account", "IfExists", "ForAllValues"],
)
def test_conditions_that_do_not_limit_leave_everyone(tmp_path: Path, condition: dict[str, Any]) -> None:
    app, stack = _small(tmp_path)
    _queue_policy(stack, condition)
    with pytest.raises(
        RuntimeError, match=r"Q PolicyDocument\.Statement\[0\] \(Sid Open\): lets every principal \('\*'\)"
    ):
        app.synth()


@pytest.mark.parametrize(
    "condition",
    [
        {"StringEquals": {"aws:SourceAccount": "123456789012"}},
        {"ArnLike": {"aws:SourceArn": "arn:aws:sns:us-east-1:123456789012:topic-*"}},
        {"StringLike": {"aws:PrincipalArn": "arn:aws:iam::123456789012:role/kept"}},
    ],
    ids=["StringEquals", "ArnLike-own-account", "StringLike-exact"],
)
def test_positive_conditions_limit(tmp_path: Path, condition: dict[str, Any]) -> None:
    app, stack = _small(tmp_path)
    _queue_policy(stack, condition)
    app.synth()
