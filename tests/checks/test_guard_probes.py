"""Probes of the policy guard: each way around the wildcard check, added to the default app as a contributor would
add it, must fail the check with a line naming the probe's statement (template, logical id, Sid or index).

One synth of the default app carries every probe (each statement is judged on its own, so each line is what that
probe alone would fail with); the clean default app passes. ``core/policy_guard.py`` is the guard.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Aws, Fn, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from sagemaker_llm_cdk import load_config
from sagemaker_llm_cdk.core.grants import acknowledge_wildcard_only, guard_wildcards
from sagemaker_llm_cdk.core.policy_guard import PLUGIN_NAME, allowed_now

from stacks import LlmPlatformStack, attach_checks
from stacks.checks import FAIL_SYNTH_CONTEXT, report_checks

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = "SageMakerLlm.template.json"


@dataclass(frozen=True)
class Probe:
    """One way around the guard: ``add`` puts it into the default app and returns the resource that holds it;
    the finding must name that resource's logical id and ``where`` (a Sid or a property index)."""

    name: str
    add: Callable[[Stack], Any]
    where: str
    rule: str


def _endpoint_role(stack: Stack) -> iam.IRole:
    return stack.endpoints["Chat"].role  # type: ignore[attr-defined, no-any-return]


def _default_policy(role: iam.IRole) -> Any:
    return role.node.find_child("DefaultPolicy").node.default_child


def _first(stack: Stack, kind: type, contains: str) -> Any:
    return next(c for c in stack.node.find_all() if isinstance(c, kind) and contains in c.node.path)


def _add(stack: Stack, statement: iam.PolicyStatement) -> Any:
    role = _endpoint_role(stack)
    role.add_to_principal_policy(statement)
    return _default_policy(role)


def _weights(stack: Stack) -> str:
    """The weights prefix the library acknowledged on the endpoint role for s3:GetObject (as the template has it)."""
    (resource,) = [
        r
        for r, actions in allowed_now(_endpoint_role(stack)).items()
        if "s3:GetObject" in actions and r.startswith("arn:") and ":s3:::" in r
    ]
    return resource.replace("<AWS::Partition>", Aws.PARTITION)


def not_resource(stack: Stack) -> Any:
    return _add(
        stack,
        iam.PolicyStatement(
            sid="ProbeNotResource", actions=["s3:GetObject"], not_resources=["arn:aws:s3:::the-one-kept-bucket/*"]
        ),
    )


def not_action(stack: Stack) -> Any:
    return _add(stack, iam.PolicyStatement(sid="ProbeNotAction", not_actions=["iam:*"], resources=["*"]))


def inline_role_policy(stack: Stack) -> Any:
    role = iam.Role(
        stack,
        "ProbeInlineRole",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        inline_policies={
            "Everything": iam.PolicyDocument(
                statements=[iam.PolicyStatement(sid="ProbeInline", actions=["s3:*"], resources=["*"])]
            )
        },
    )
    return role.node.default_child


def cfn_role_with_acknowledgement(stack: Stack) -> Any:
    role = iam.CfnRole(
        stack,
        "ProbeCfnRole",
        assume_role_policy_document={
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "lambda.amazonaws.com"}}
            ],
        },
        policies=[
            iam.CfnRole.PolicyProperty(
                policy_name="Plans",
                policy_document={
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "ProbeBuyPlans",
                            "Effect": "Allow",
                            "Action": "sagemaker:CreateTrainingPlan",
                            "Resource": "*",
                        }
                    ],
                },
            )
        ],
    )
    acknowledge_wildcard_only(role, "the library's own helper: it may not cover an action with resources")
    return role


def override_default_policy(stack: Stack) -> Any:
    policy = _default_policy(_endpoint_role(stack))
    policy.add_property_override(
        "PolicyDocument.Statement.40",
        {"Sid": "ProbeOverrideExtend", "Effect": "Allow", "Action": "sagemaker:ExtendTrainingPlan", "Resource": "*"},
    )
    return policy


def override_role_policies(stack: Stack) -> Any:
    cfn = _endpoint_role(stack).node.default_child
    cfn.add_property_override(
        "Policies",
        [
            {
                "PolicyName": "Plans",
                "PolicyDocument": {  # type: ignore[union-attr]
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "ProbeOverrideCreate",
                            "Effect": "Allow",
                            "Action": ["sagemaker:CreateTrainingPlan"],
                            "Resource": "*",
                        }
                    ],
                },
            }
        ],
    )
    return cfn


def new_action_on_acknowledged_resource(stack: Stack) -> Any:
    return _add(
        stack,
        iam.PolicyStatement(
            sid="ProbeDeleteWeights", actions=["s3:DeleteObject", "s3:PutObject"], resources=[_weights(stack)]
        ),
    )


def lowercase_new_action(stack: Stack) -> Any:
    return _add(
        stack, iam.PolicyStatement(sid="ProbeLowercase", actions=["S3:deleteobject"], resources=[_weights(stack)])
    )


def metrics_without_namespace(stack: Stack) -> Any:
    return _add(stack, iam.PolicyStatement(sid="ProbeMetrics", actions=["cloudwatch:PutMetricData"], resources=["*"]))


def lowercase_metrics(stack: Stack) -> Any:
    return _add(
        stack, iam.PolicyStatement(sid="ProbeMetricsLowercase", actions=["CloudWatch:putmetricdata"], resources=["*"])
    )


def log_resource_policy(stack: Stack) -> Any:
    role = iam.Role(stack, "ProbeLogsRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    role.add_to_policy(iam.PolicyStatement(sid="ProbeLogPolicy", actions=["logs:PutResourcePolicy"], resources=["*"]))
    return _default_policy(role)


def every_action(stack: Stack) -> Any:
    return _add(stack, iam.PolicyStatement(sid="ProbeStar", actions=["*"], resources=["arn:aws:s3:::my-weights"]))


def every_s3_action(stack: Stack) -> Any:
    return _add(stack, iam.PolicyStatement(sid="ProbeS3Star", actions=["s3:*"], resources=["arn:aws:s3:::my-weights"]))


def every_bucket(stack: Stack) -> Any:
    return _add(
        stack, iam.PolicyStatement(sid="ProbeAllBuckets", actions=["s3:GetObject"], resources=["arn:aws:s3:::*"])
    )


def wildcard_in_a_join(stack: Stack) -> Any:
    return _add(
        stack,
        iam.PolicyStatement(
            sid="ProbeJoin",
            actions=["s3:GetObject"],
            resources=[Fn.join("", ["arn:", Aws.PARTITION, ":s3:::", Aws.ACCOUNT_ID, "-*"])],
        ),
    )


def aws_managed_policy(stack: Stack) -> Any:
    role = _endpoint_role(stack)
    role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSageMakerFullAccess"))
    return role.node.default_child


def managed_policy_arns_override(stack: Stack) -> Any:
    function = _first(stack, lambda_.Function, "FrontDoor")
    cfn = function.role.node.default_child
    cfn.add_property_override("ManagedPolicyArns", ["arn:aws:iam::aws:policy/AdministratorAccess"])
    return cfn


def customer_managed_policy(stack: Stack) -> Any:
    policy = iam.ManagedPolicy(
        stack,
        "ProbeManagedPolicy",
        roles=[_endpoint_role(stack)],
        statements=[iam.PolicyStatement(sid="ProbeManaged", actions=["sagemaker:*"], resources=["*"])],
    )
    return policy.node.default_child


def public_bucket_policy(stack: Stack) -> Any:
    bucket = _first(stack, s3.Bucket, "DataCapture")
    bucket.add_to_resource_policy(
        iam.PolicyStatement(
            sid="ProbePublicRead",
            principals=[iam.AnyPrincipal()],
            actions=["s3:GetObject"],
            resources=[bucket.arn_for_objects("*")],
        )
    )
    return bucket.policy.node.default_child


def key_to_another_account(stack: Stack) -> Any:
    key = _first(stack, kms.Key, "Chat/Key")
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="ProbeKeyAdmin", principals=[iam.AccountPrincipal("999999999999")], actions=["kms:*"], resources=["*"]
        )
    )
    return key.node.default_child


def open_topic(stack: Stack) -> Any:
    topic = _first(stack, sns.Topic, "Monitoring")
    topic.add_to_resource_policy(
        iam.PolicyStatement(
            sid="ProbeTopic", principals=[iam.AnyPrincipal()], actions=["sns:Publish"], resources=[topic.topic_arn]
        )
    )
    return topic.node.find_child("Policy").node.default_child


def open_function(stack: Stack) -> Any:
    function = _first(stack, lambda_.Function, "FrontDoor")
    function.add_permission("ProbeAnyone", principal=iam.AnyPrincipal(), action="lambda:InvokeFunction")
    return function.node.find_child("ProbeAnyone")


def open_trust(stack: Stack) -> Any:
    return iam.Role(stack, "ProbeTrustRole", assumed_by=iam.AnyPrincipal()).node.default_child


def foreign_account_trust(stack: Stack) -> Any:
    return iam.Role(stack, "ProbeForeignTrust", assumed_by=iam.AccountPrincipal("999999999999")).node.default_child


def own_root_trust(stack: Stack) -> Any:
    return iam.Role(stack, "ProbeOwnRootTrust", assumed_by=iam.AccountRootPrincipal()).node.default_child


def cognito_trust(stack: Stack) -> Any:
    principal = iam.WebIdentityPrincipal("cognito-identity.amazonaws.com")
    return iam.Role(stack, "ProbeCognitoTrust", assumed_by=principal).node.default_child


PROBES = [
    Probe("NotResource in an Allow", not_resource, "(Sid ProbeNotResource)", "NotActionOrNotResource"),
    Probe("NotAction in an Allow", not_action, "(Sid ProbeNotAction)", "NotActionOrNotResource"),
    Probe(
        "inline role policy (iam.Role inline_policies)",
        inline_role_policy,
        "Policies[0] (Everything)",
        "UnacknowledgedWildcard",
    ),
    Probe(
        "CfnRole.Policies with the library's acknowledgement helper",
        cfn_role_with_acknowledgement,
        "(Sid ProbeBuyPlans)",
        "UnacknowledgedWildcard",
    ),
    Probe(
        "escape hatch on a library role's policy",
        override_default_policy,
        "(Sid ProbeOverrideExtend)",
        "UnacknowledgedWildcard",
    ),
    Probe(
        "escape hatch on a library role's inline policies",
        override_role_policies,
        "(Sid ProbeOverrideCreate)",
        "UnacknowledgedWildcard",
    ),
    Probe(
        "new action on an acknowledged resource",
        new_action_on_acknowledged_resource,
        "(Sid ProbeDeleteWeights)",
        "UnacknowledgedWildcard",
    ),
    Probe(
        "lowercase action on an acknowledged resource",
        lowercase_new_action,
        "(Sid ProbeLowercase)",
        "UnacknowledgedWildcard",
    ),
    Probe(
        "PutMetricData without cloudwatch:namespace",
        metrics_without_namespace,
        "(Sid ProbeMetrics)",
        "MissingCondition",
    ),
    Probe("PutMetricData spelled in lowercase", lowercase_metrics, "(Sid ProbeMetricsLowercase)", "MissingCondition"),
    Probe(
        "logs:PutResourcePolicy on '*' on a new role",
        log_resource_policy,
        "(Sid ProbeLogPolicy)",
        "UnacknowledgedWildcard",
    ),
    Probe("Action '*'", every_action, "(Sid ProbeStar)", "UnacknowledgedWildcard"),
    Probe("'s3:*'", every_s3_action, "(Sid ProbeS3Star)", "UnacknowledgedWildcard"),
    Probe("Resource arn:aws:s3:::*", every_bucket, "(Sid ProbeAllBuckets)", "UnacknowledgedWildcard"),
    Probe("wildcard inside Fn::Join", wildcard_in_a_join, "(Sid ProbeJoin)", "UnacknowledgedWildcard"),
    Probe("AWS managed policy by ARN", aws_managed_policy, "ManagedPolicyArns[0]", "UnreadablePolicy"),
    Probe("ManagedPolicyArns override", managed_policy_arns_override, "ManagedPolicyArns[0]", "UnreadablePolicy"),
    Probe("customer managed policy", customer_managed_policy, "(Sid ProbeManaged)", "UnacknowledgedWildcard"),
    Probe("bucket policy to Principal '*'", public_bucket_policy, "(Sid ProbePublicRead)", "BroadPrincipal"),
    Probe(
        "key policy kms:* to another account", key_to_another_account, "(Sid ProbeKeyAdmin)", "UnacknowledgedWildcard"
    ),
    Probe("topic policy to Principal '*'", open_topic, "(Sid ProbeTopic)", "BroadPrincipal"),
    Probe("Lambda permission to every principal", open_function, "Principal", "BroadPrincipal"),
    Probe("trust policy to every principal", open_trust, "AssumeRolePolicyDocument.Statement[0]", "BroadPrincipal"),
    Probe(
        "trust of another account's root, no condition",
        foreign_account_trust,
        "AssumeRolePolicyDocument.Statement[0]",
        "ForeignAccountTrust",
    ),
    Probe(
        "trust of the own account root, no condition",
        own_root_trust,
        "AssumeRolePolicyDocument.Statement[0]",
        "OwnRootTrust",
    ),
    Probe(
        "Cognito identity trust without aud and amr",
        cognito_trust,
        "AssumeRolePolicyDocument.Statement[0]",
        "CognitoTrustUnpinned",
    ),
]


def _default_app(out: Path) -> tuple[App, Stack]:
    context = {**json.loads((ROOT / "cdk.json").read_text())["context"], FAIL_SYNTH_CONTEXT: False}
    app = App(outdir=str(out), context=context)
    config = load_config(ROOT / "config" / "default.yaml")
    stack = LlmPlatformStack(app, config.stack_name, config=config, config_dir=ROOT / "config")
    return app, stack


def _guard_findings(out: Path) -> list[dict[str, Any]]:
    report = json.loads((out / "validation-report.json").read_text())
    return [
        v
        for plugin in report["pluginReports"]
        if plugin["pluginName"] == PLUGIN_NAME
        for v in plugin.get("violations", [])
    ]


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[str, Probe]], int]:
    out = tmp_path_factory.mktemp("probed")
    app, stack = _default_app(out)
    held = {}
    for probe in PROBES:
        resource = probe.add(stack)
        held[probe.name] = (str(stack.resolve(resource.logical_id)), probe)
    attach_checks(app)
    assembly = app.synth()
    return out, held, report_checks(assembly.directory, stream=open("/dev/null", "w"))


def test_there_is_a_probe_for_every_way_around() -> None:
    assert len(PROBES) >= 12
    assert len({p.name for p in PROBES}) == len(PROBES)


@pytest.mark.parametrize("probe", PROBES, ids=[p.name for p in PROBES])
def test_each_probe_fails_the_check_naming_its_statement(probed: Any, probe: Probe) -> None:
    out, held, status = probed
    assert status == 1, "report_checks passed a synth with probes in it"
    logical_id, _ = held[probe.name]
    lines = [
        v
        for v in _guard_findings(out)
        if v["description"].startswith(f"{TEMPLATE} {logical_id} ") and f" {probe.where}" in v["description"]
    ]
    assert lines, (
        f"no finding names {TEMPLATE} {logical_id} {probe.where}: "
        + "\n".join(v["description"] for v in _guard_findings(out))[:4000]
    )
    assert {v["ruleName"] for v in lines} >= {probe.rule} or any(probe.rule == v["ruleName"] for v in lines)
    assert all(v["severity"] == "fatal" for v in lines), "the guard's findings cannot be acknowledged"


def test_the_clean_default_app_passes(tmp_path: Path) -> None:
    app, _ = _default_app(tmp_path)
    attach_checks(app)
    assembly = app.synth()
    assert _guard_findings(tmp_path) == []
    with open("/dev/null", "w") as devnull:
        assert report_checks(assembly.directory, stream=devnull) == 0


# ------------------------------------------------------------------ each rule on its own, as the synth reports it
def _small(tmp_path: Path) -> tuple[App, Stack]:
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Small")
    guard_wildcards(app)
    return app, stack


def test_a_resource_policy_open_to_everyone_fails_the_synth(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    topic = sns.Topic(stack, "Topic", enforce_ssl=True)
    topic.add_to_resource_policy(
        iam.PolicyStatement(
            sid="Open", principals=[iam.AnyPrincipal()], actions=["sns:Publish"], resources=[topic.topic_arn]
        )
    )
    with pytest.raises(
        RuntimeError,
        match=r"Small\.template\.json TopicPolicy\w+ \(Small/Topic/Policy/Resource\) "
        r"PolicyDocument\.Statement\[\d\] \(Sid Open\): lets every principal \('\*'\)",
    ):
        app.synth()


def test_a_condition_that_limits_the_principal_passes(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    topic = sns.Topic(stack, "Topic", enforce_ssl=True)
    topic.add_to_resource_policy(
        iam.PolicyStatement(
            sid="Account",
            principals=[iam.AnyPrincipal()],
            actions=["sns:Publish"],
            resources=[topic.topic_arn],
            conditions={"StringEquals": {"aws:PrincipalAccount": "123456789012"}},
        )
    )
    app.synth()


def test_a_managed_policy_the_guard_cannot_read_fails_the_synth(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    role.add_managed_policy(
        iam.ManagedPolicy.from_managed_policy_arn(stack, "Theirs", "arn:aws:iam::123456789012:policy/x")
    )
    with pytest.raises(
        RuntimeError,
        match=r"Role\w+ \(Small/Role/Resource\) ManagedPolicyArns\[0\]: attaches the managed "
        r"policy 'arn:aws:iam::123456789012:policy/x', whose statements the template "
        r"does not hold",
    ):
        app.synth()


def test_a_wildcard_only_action_without_its_condition_fails_the_synth(tmp_path: Path) -> None:
    app, stack = _small(tmp_path)
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    role.add_to_policy(iam.PolicyStatement(sid="Metrics", actions=["cloudwatch:PutMetricData"], resources=["*"]))
    with pytest.raises(
        RuntimeError,
        match=r"\(Sid Metrics\): allows 'cloudwatch:PutMetricData' on a wildcard without "
        r"the cloudwatch:namespace condition",
    ):
        app.synth()
    role.add_to_policy(iam.PolicyStatement(sid="Kept", actions=["xray:PutTraceSegments"], resources=["*"]))


def test_a_guard_finding_cannot_be_acknowledged(tmp_path: Path) -> None:
    from aws_cdk import Acknowledgment, Validations

    app, stack = _small(tmp_path)
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    role.add_to_policy(iam.PolicyStatement(sid="Wide", actions=["s3:GetObject"], resources=["*"]))
    Validations.of(app).acknowledge(Acknowledgment(id=f"{PLUGIN_NAME}::UnacknowledgedWildcard", reason="try"))
    with pytest.raises(RuntimeError, match=r"\(Sid Wide\): allows \['s3:GetObject'\] on '\*'"):
        app.synth()


_PROBED_APP = '''"""app.py, its platform stack given one statement the policy guard refuses (Sid ProbeEveryAction)."""
import sys

from aws_cdk import aws_iam as iam

sys.path.insert(0, {root!r})
import app  # noqa: E402


class Probed(app.LlmPlatformStack):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        role = next(iter(self.endpoints.values())).role
        role.add_to_principal_policy(iam.PolicyStatement(sid="ProbeEveryAction", actions=["*"], resources=["*"]))


app.LlmPlatformStack = Probed
app.main()
'''


def test_a_guard_failure_through_app_py_prints_its_finding_once_without_a_traceback(tmp_path: Path) -> None:
    """Before: with the CDK's fail-synth context set (``-c``, cdk.json, CDK_CONTEXT_JSON), app.synth() raised jsii's
    ValidationFailed: a Python and JavaScript traceback and CDK's copy of every finding beside the app's summary.
    The app keeps reporting the checks itself: the finding once, exit status 1."""
    import os
    import subprocess
    import sys

    script = tmp_path / "probed_app.py"
    script.write_text(_PROBED_APP.format(root=str(ROOT)), encoding="utf-8")
    env = dict(os.environ, CDK_OUTDIR=str(tmp_path / "out"), CDK_CONTEXT_JSON=json.dumps({FAIL_SYNTH_CONTEXT: True}))
    env["PATH"] = os.pathsep.join([str(ROOT / "node_modules" / ".bin"), str(Path(sys.executable).parent), env["PATH"]])
    result = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "ValidationFailed" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.count("(Sid ProbeEveryAction): allows ['*'] on '*'") == 1, result.stderr[-3000:]
    assert "UnacknowledgedWildcard: SageMakerLlm/Chat/ExecutionRole/DefaultPolicy/Resource" in result.stderr
