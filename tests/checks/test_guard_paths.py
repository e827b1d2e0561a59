"""The policy guard knows a template's account by its path in whatever form CDK gives it.

The CLI hands the app a relative output folder (``CDK_OUTDIR=cdk.out``) and CDK reports each stack's template path
as given; the guard resolves paths when it reads templates. Both sides must use one form, or a bound stack's own
account is never found and its KMS keys' default policy (``kms:*`` for the account root) fails the synth.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from aws_cdk import App
from sagemaker_llm_cdk.core.policy_guard import PolicyGuard, template_key

pytestmark = pytest.mark.synth

ACCOUNT = "123456789012"
KEY = {
    "Type": "AWS::KMS::Key",
    "Properties": {
        "KeyPolicy": {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "kms:*",
                    "Resource": "*",
                    "Principal": {
                        "AWS": {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":iam::{ACCOUNT}:root"]]}
                    },
                }
            ],
        }
    },
}


def _validate(outdir: str, template_path: str, account: str | None) -> list[str]:
    guard = PolicyGuard(App(outdir=outdir))
    context = SimpleNamespace(
        template_paths=[template_path],
        stack_templates=[SimpleNamespace(template_path=template_path, account_id=account)],
    )
    report = guard.validate(context)  # type: ignore[arg-type]
    return [v.description for v in report.violations]


@pytest.mark.parametrize("form", ["relative", "dotted", "absolute"])
def test_a_bound_stack_s_key_policy_passes_whatever_the_path_form(tmp_path, monkeypatch, form):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cdk.out").mkdir()
    (tmp_path / "cdk.out" / "Chat.template.json").write_text(json.dumps({"Resources": {"Key": KEY}}))
    path = {
        "relative": "cdk.out/Chat.template.json",
        "dotted": "./cdk.out/../cdk.out/Chat.template.json",
        "absolute": str(tmp_path / "cdk.out" / "Chat.template.json"),
    }[form]
    assert _validate("cdk.out", path, ACCOUNT) == []


def test_another_account_s_root_still_fails(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cdk.out").mkdir()
    (tmp_path / "cdk.out" / "Chat.template.json").write_text(json.dumps({"Resources": {"Key": KEY}}))
    (problem,) = _validate("cdk.out", "cdk.out/Chat.template.json", "210987654321")
    assert (
        "Key KeyPolicy.Statement[0]: allows ['kms:*'] to AWS ['arn:<AWS::Partition>:iam::123456789012:root']" in problem
    )


def test_template_key_is_one_form(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert (
        template_key("cdk.out/A.template.json")
        == template_key(tmp_path / "cdk.out" / "A.template.json")
        == template_key("./x/../cdk.out/A.template.json")
        == str(tmp_path / "cdk.out" / "A.template.json")
    )
