"""Every checkov skip the library puts on a Lambda function has a reason that is true of that function.

The default app, every config/examples/*.yaml and the default app with the EAGLE records check are synthesized in
this interpreter (``support.assemblies``) with the library's checkov defaults; each skip on a function is checked
by the rule for its check id (``RULES``), read from the template: a skip with no rule fails, so a new skip comes
with its rule.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sagemaker_llm_cdk.core.checkov import CHECKOV_REASONS
from support.assemblies import CDK_CONTEXT, ROOT, config_data

pytestmark = pytest.mark.synth

CONFIGS = ["default.yaml", *sorted(f"examples/{p.name}" for p in (ROOT / "config" / "examples").glob("*.yaml"))]
RECORDS_CHECK = "default.yaml+records_check"
SERVICES = {
    "sagemaker": "SageMaker",
    "logs": "CloudWatch Logs",
    "cloudwatch": "CloudWatch",
    "xray": "X-Ray",
    "dynamodb": "DynamoDB",
    "s3": "S3",
    "kms": "KMS",
    "ssm": "SSM Parameter Store",
    "states": "Step Functions",
    "lambda": "Lambda",
    "iam": "IAM",
    "firehose": "Firehose",
    "sqs": "SQS",
    "cloudformation": "CloudFormation",
    "pricing": "Price List",
}
"""IAM service prefix -> the name CKV_AWS_117's reason must use for it."""

_TEMPLATES: dict[str, dict[str, dict[str, Any]]] = {}


def templates(name: str) -> dict[str, dict[str, Any]]:
    """``{template file: resources}`` of the app for config ``name``, with the library's checkov defaults."""
    if name not in _TEMPLATES:
        from aws_cdk import App, Environment
        from sagemaker_llm_cdk import parse_config
        from sagemaker_llm_cdk.core.checkov import checkov_defaults

        from stacks import LlmPlatformStack

        path = ROOT / "config" / name.split("+")[0]
        data = config_data(path)
        if name == RECORDS_CHECK:
            data["endpoints"][0]["models"][0]["eagle"].setdefault("dataset", {})["records_check"] = "rate(1 hour)"
        out = Path(tempfile.mkdtemp(prefix="checkov-reasons-"))
        config = parse_config(data, source=str(path.parent))
        app = App(outdir=str(out), context=dict(CDK_CONTEXT), builtin_cloud_formation_validation=False)
        LlmPlatformStack(
            app,
            config.stack_name,
            config=config,
            config_dir=path.parent,
            env=Environment(account=config.target.account, region=config.target.region),
        )
        checkov_defaults(app)
        app.synth()
        _TEMPLATES[name] = {
            p.name: json.loads(p.read_text(encoding="utf-8")).get("Resources", {}) for p in out.glob("*.template.json")
        }
    return _TEMPLATES[name]


def _refs(value: Any) -> set[str]:
    """Every logical id a value refers to (Ref, Fn::GetAtt), however deep."""
    if isinstance(value, dict):
        found = {value["Ref"]} if isinstance(value.get("Ref"), str) else set()
        if isinstance(value.get("Fn::GetAtt"), list):
            found.add(value["Fn::GetAtt"][0])
        for item in value.values():
            found |= _refs(item)
        return found
    if isinstance(value, list):
        return set().union(*(_refs(item) for item in value)) if value else set()
    return set()


def _services(resources: dict[str, Any], role: str) -> set[str]:
    """The IAM service prefixes the policies attached to ``role`` allow."""
    found: set[str] = set()
    for resource in resources.values():
        if resource["Type"] != "AWS::IAM::Policy" or role not in _refs(resource["Properties"].get("Roles", [])):
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            if statement.get("Effect") == "Allow":
                actions = statement.get("Action", [])
                found |= {
                    action.split(":")[0].lower() for action in ([actions] if isinstance(actions, str) else actions)
                }
    return found


def _not_in_vpc(resources: dict[str, Any], function: str, comment: str) -> str | None:
    role = next(iter(_refs(resources[function]["Properties"]["Role"])))
    missing = sorted(prefix for prefix in _services(resources, role) if SERVICES.get(prefix, "\0") not in comment)
    return f"its role is granted {missing}, which the reason does not name" if missing else None


def _no_dead_letter_queue(resources: dict[str, Any], function: str, comment: str) -> str | None:
    if comment != CHECKOV_REASONS["CKV_AWS_116"]:
        return None  # a reason written for that one function
    for resource in resources.values():
        if resource["Type"] == "AWS::Scheduler::Schedule" and function in _refs(resource["Properties"]["Target"]):
            return "EventBridge Scheduler invokes it asynchronously, which the reason does not say"
        if resource["Type"] == "AWS::Events::Rule" and function in _refs(resource["Properties"].get("Targets", [])):
            alarmed = any(
                r["Type"] == "AWS::CloudWatch::Alarm"
                and r["Properties"].get("MetricName") == "Errors"
                and function in _refs(r["Properties"].get("Dimensions", []))
                for r in resources.values()
            )
            if not alarmed:
                return "an EventBridge rule invokes it asynchronously and no alarm watches its errors"
    return None


def _any(resources: dict[str, Any], function: str, comment: str) -> str | None:
    return None if comment.strip() else "the skip has no reason"


RULES: dict[str, Callable[[dict[str, Any], str, str], str | None]] = {
    "CKV_AWS_116": _no_dead_letter_queue,
    "CKV_AWS_117": _not_in_vpc,
    "CKV_AWS_115": _any,  # settings, not invocations: a reserved concurrency is set where one is wanted
    "CKV_AWS_173": _any,
}
"""Check id -> a rule: why its reason is not true of a function (None: it is)."""


@pytest.mark.parametrize("name", [*CONFIGS, RECORDS_CHECK])
def test_every_checkov_skip_on_a_function_is_true_of_it(name: str) -> None:
    failures, checked = [], 0
    for template, resources in templates(name).items():
        for function, resource in resources.items():
            if resource["Type"] != "AWS::Lambda::Function":
                continue
            for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
                rule = RULES.get(skip["id"])
                problem = rule(resources, function, skip.get("comment", "")) if rule else "no rule checks this skip"
                checked += 1
                if problem:
                    failures.append(f"{template} {function} {skip['id']}: {problem}")
    assert checked
    assert not failures, "\n".join(failures)


def test_the_records_check_keeps_its_failures_in_a_dead_letter_queue() -> None:
    """EventBridge Scheduler invokes the records check asynchronously: its function and its schedule send what
    still fails to one queue (KMS-encrypted, TLS-only, retention set), the schedule retries a few times within an
    hour, and the function needs no CKV_AWS_116 skip."""
    resources = templates(RECORDS_CHECK)["SageMakerLlm.template.json"]
    [function] = [
        lid for lid, r in resources.items() if r["Type"] == "AWS::Lambda::Function" and "CheckFunction" in lid
    ]
    [schedule] = [
        r for lid, r in resources.items() if r["Type"] == "AWS::Scheduler::Schedule" and "RecordsCheck" in lid
    ]
    properties = resources[function]["Properties"]
    [queue] = _refs(properties["DeadLetterConfig"]["TargetArn"])
    assert resources[queue]["Type"] == "AWS::SQS::Queue"
    assert _refs(schedule["Properties"]["Target"]["DeadLetterConfig"]["Arn"]) == {queue}
    assert schedule["Properties"]["Target"]["RetryPolicy"] == {
        "MaximumEventAgeInSeconds": 3600,
        "MaximumRetryAttempts": 3,
    }
    queue_properties = resources[queue]["Properties"]
    assert resources[next(iter(_refs(queue_properties["KmsMasterKeyId"])))]["Type"] == "AWS::KMS::Key"
    assert queue_properties["MessageRetentionPeriod"] == 14 * 24 * 3600
    [policy] = [
        r["Properties"]["PolicyDocument"]
        for r in resources.values()
        if r["Type"] == "AWS::SQS::QueuePolicy" and queue in _refs(r["Properties"]["Queues"])
    ]
    assert any(
        st["Effect"] == "Deny" and st.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
        for st in policy["Statement"]
    )
    skips = resources[function].get("Metadata", {}).get("checkov", {}).get("skip", [])
    assert "CKV_AWS_116" not in {skip["id"] for skip in skips}
