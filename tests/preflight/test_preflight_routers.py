"""Preflight of routers: the router's region offers the API (botocore's endpoint data); destinations given by ARN
exist and are of the kind the target needs (Stubber, read-only)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import boto3
from botocore.stub import Stubber
from sagemaker_llm_cdk import load_config
from sagemaker_llm_cdk.preflight.context import AwsClients, PreflightContext
from sagemaker_llm_cdk.preflight.routers import api_regions, router_destinations, router_region

ROOT = Path(__file__).resolve().parents[2]
ASYNC = "arn:aws:sagemaker:us-east-1:111111111111:endpoint/batch"


def context(
    tmp_path: Path, routers: str, *, region: str = "us-east-1", clients: AwsClients | None = None
) -> PreflightContext:
    data = (ROOT / "config" / "examples" / "router-two-regions.yaml").read_text().split("routers:")[0]
    (tmp_path / "c.yaml").write_text(data + "routers:\n" + routers)
    return PreflightContext(
        config=load_config(tmp_path / "c.yaml"),
        source="c.yaml",
        region=region,
        partition="aws",
        now=datetime(2027, 1, 1, tzinfo=UTC),
        clients=clients,
        account="111111111111",
    )


def test_the_api_regions_come_from_botocore():
    assert {"us-east-1", "us-west-2"} <= api_regions()


def test_a_home_region_without_the_api_is_a_blocker(tmp_path, monkeypatch):
    import sagemaker_llm_cdk.preflight.routers as routers

    monkeypatch.setattr(routers, "api_regions", lambda: frozenset({"us-east-1"}))
    ctx = context(tmp_path, "  - {name: Chat, home_region: eu-south-9, targets: [{name: q, model: qwen3-8b}]}\n")

    (finding,) = router_region(ctx)
    assert finding.severity == "blocker" and "eu-south-9" in finding.what


def test_a_missing_or_real_time_destination_of_an_async_target_is_a_blocker(tmp_path):
    client = boto3.client("sagemaker", region_name="us-east-1")
    stubber = Stubber(client)
    stubber.add_client_error(
        "describe_endpoint",
        service_error_code="ValidationException",
        service_message="Could not find endpoint",
        expected_params={"EndpointName": "batch"},
    )
    stubber.add_response(
        "describe_endpoint",
        {
            "EndpointName": "batch",
            "EndpointArn": ASYNC,
            "EndpointStatus": "InService",
            "CreationTime": datetime(2027, 1, 1),
            "LastModifiedTime": datetime(2027, 1, 1),
        },
        {"EndpointName": "batch"},
    )
    ctx = context(
        tmp_path,
        (
            "  - name: Chat\n    targets:\n      - name: batch\n        destinations: [{arn: " + ASYNC + "}]\n"
            "        async_inference: {s3_output_path: s3://router-results/out/, s3_failure_path: s3://router-results/f/}\n"
        ),
        clients=AwsClients(factory=lambda service, region: client),
    )

    with stubber:
        missing = list(router_destinations(ctx))
        real_time = list(router_destinations(ctx))

    assert [f.what for f in missing] == [f"routers[0].targets[0].destinations[0]: {ASYNC} does not exist"]
    assert [f.what for f in real_time] == ["routers[0].targets[0].destinations[0]: batch is a real-time endpoint"]


CALLER = "arn:aws:iam::111111111111:role/app/Caller"
ROUTER_ARN = "arn:aws:sagemaker:us-east-1:111111111111:inference-router/SageMakerLlm-Chat"
COMPONENT = "arn:aws:sagemaker:us-east-1:111111111111:inference-component/SageMakerLlm-qwen3-8b"
REMOTE = "arn:aws:sagemaker:us-west-2:222222222222:inference-component/Prod-SageMakerLlm-qwen3-8b"
REMOTE_ENDPOINT = "arn:aws:sagemaker:us-west-2:222222222222:endpoint/prod-chat"


def simulated(stubber: Stubber, action: str, decisions: dict[str, str], **page: object) -> None:
    from support.aws_model import assert_valid_request

    request = {"PolicySourceArn": CALLER, "ActionNames": [action], "ResourceArns": list(decisions)}
    assert_valid_request("iam", "SimulatePrincipalPolicy", request)
    stubber.add_response(
        "simulate_principal_policy",
        {
            "EvaluationResults": [
                {"EvalActionName": action, "EvalResourceName": arn, "EvalDecision": decision}
                for arn, decision in decisions.items()
            ],
            "IsTruncated": False,
            **page,
        },
        request,
    )


def caller_context(tmp_path: Path, client: object) -> PreflightContext:
    return context(
        tmp_path,
        (
            "  - name: Chat\n    callers: ["
            + CALLER
            + "]\n    targets:\n      - name: qwen3-8b\n        model: qwen3-8b\n"
            "        destinations: [{arn: " + REMOTE + ", endpoint_name: prod-chat}]\n"
        ),
        clients=AwsClients(factory=lambda service, region: client),
    )


def test_a_caller_without_a_permission_is_a_blocker_per_action_and_resource(tmp_path):
    from sagemaker_llm_cdk.preflight.routers import router_callers

    client = boto3.client("iam", region_name="us-east-1")
    stubber = Stubber(client)
    simulated(stubber, "sagemaker:InvokeInferenceRouter", {ROUTER_ARN: "allowed"})
    simulated(
        stubber,
        "sagemaker:InvokeEndpoint",
        {COMPONENT: "allowed", REMOTE: "implicitDeny", REMOTE_ENDPOINT: "explicitDeny"},
    )
    with stubber:
        findings = list(router_callers(caller_context(tmp_path, client)))
    stubber.assert_no_pending_responses()

    assert [(f.severity, f.what) for f in findings] == [
        ("blocker", f"routers[0].callers[0]: {CALLER} may not sagemaker:InvokeEndpoint on {REMOTE} (implicitDeny)"),
        (
            "blocker",
            f"routers[0].callers[0]: {CALLER} may not sagemaker:InvokeEndpoint on {REMOTE_ENDPOINT} (explicitDeny)",
        ),
    ]


def test_a_caller_with_every_permission_passes_and_a_failed_simulation_is_a_warning(tmp_path):
    from sagemaker_llm_cdk.preflight.routers import router_callers

    client = boto3.client("iam", region_name="us-east-1")
    stubber = Stubber(client)
    simulated(stubber, "sagemaker:InvokeInferenceRouter", {ROUTER_ARN: "allowed"})
    simulated(
        stubber, "sagemaker:InvokeEndpoint", {COMPONENT: "allowed", REMOTE: "allowed", REMOTE_ENDPOINT: "allowed"}
    )
    stubber.add_client_error(
        "simulate_principal_policy",
        service_error_code="AccessDenied",
        expected_params={
            "PolicySourceArn": CALLER,
            "ActionNames": ["sagemaker:InvokeInferenceRouter"],
            "ResourceArns": [ROUTER_ARN],
        },
    )
    with stubber:
        allowed = list(router_callers(caller_context(tmp_path, client)))
        denied = list(router_callers(caller_context(tmp_path, client)))

    assert allowed == []
    assert [(f.severity, f.what) for f in denied] == [
        ("warning", f"routers[0].callers[0]: could not simulate {CALLER}'s policies (AccessDenied)")
    ]
