"""Preflight of routers: the router's region offers the API (botocore's endpoint data); destinations given by ARN
exist and are of the kind the target needs (Stubber, read-only)."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import boto3
from botocore.stub import Stubber

from sagemaker_llm_cdk import load_config
from sagemaker_llm_cdk.preflight.context import AwsClients, PreflightContext
from sagemaker_llm_cdk.preflight.routers import api_regions, router_destinations, router_region

ROOT = Path(__file__).resolve().parents[1]
ASYNC = "arn:aws:sagemaker:us-east-1:111111111111:endpoint/batch"


def context(tmp_path: Path, routers: str, *, region: str = "us-east-1", clients: AwsClients | None = None) -> PreflightContext:
    data = (ROOT / "config" / "examples" / "router-two-regions.yaml").read_text().split("routers:")[0]
    (tmp_path / "c.yaml").write_text(data + "routers:\n" + routers)
    return PreflightContext(config=load_config(tmp_path / "c.yaml"), source="c.yaml", region=region, partition="aws",
                            now=datetime(2027, 1, 1, tzinfo=timezone.utc), clients=clients, account="111111111111")


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
    stubber.add_client_error("describe_endpoint", service_error_code="ValidationException",
                             service_message="Could not find endpoint", expected_params={"EndpointName": "batch"})
    stubber.add_response("describe_endpoint", {
        "EndpointName": "batch", "EndpointArn": ASYNC, "EndpointStatus": "InService",
        "CreationTime": datetime(2027, 1, 1), "LastModifiedTime": datetime(2027, 1, 1)}, {"EndpointName": "batch"})
    ctx = context(tmp_path, (
        "  - name: Chat\n    targets:\n      - name: batch\n        destinations: [{arn: " + ASYNC + "}]\n"
        "        async_inference: {s3_output_path: s3://router-results/out/, s3_failure_path: s3://router-results/f/}\n"),
        clients=AwsClients(factory=lambda service, region: client))

    with stubber:
        missing = list(router_destinations(ctx))
        real_time = list(router_destinations(ctx))

    assert [f.what for f in missing] == [f"routers[0].targets[0].destinations[0]: {ASYNC} does not exist"]
    assert [f.what for f in real_time] == ["routers[0].targets[0].destinations[0]: batch is a real-time endpoint"]
