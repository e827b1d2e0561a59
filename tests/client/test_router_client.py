"""RouterClient against the runtime model (sagemaker-inference-router-runtime) with Stubber: the serving destination
and the reason, a remote destination after failover, asynchronous submissions, the documented timeouts."""

from __future__ import annotations

import io
import subprocess
import sys

import boto3
import pytest
from botocore.stub import Stubber
from sagemaker_llm_cdk.router_client import READ_TIMEOUT, RouterClient
from support.aws_model import assert_valid_request

pytestmark = pytest.mark.synth

WEST = "arn:aws:sagemaker:us-west-2:222222222222:inference-component/UsWest2-SageMakerLlm-qwen3-8b"
EAST = "arn:aws:sagemaker:us-east-1:111111111111:inference-component/UsEast1-SageMakerLlm-qwen3-8b"


@pytest.fixture
def stubbed():
    client = boto3.client("sagemaker-inference-router-runtime", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield RouterClient("SageMakerLlm-Chat", client=client), stubber
        stubber.assert_no_pending_responses()


def expect_invoke(stubber: Stubber, destination: str, reason: str, body: bytes = b'{"choices": []}') -> None:
    params = {
        "InferenceRouterName": "SageMakerLlm-Chat",
        "RoutingTargetName": "qwen3-8b",
        "Body": b'{"messages": [{"role": "user", "content": "Hi"}]}',
        "ContentType": "application/json",
    }
    assert_valid_request("sagemaker-inference-router-runtime", "InvokeInferenceRouter", params)
    stubber.add_response(
        "invoke_inference_router",
        {
            "Body": io.BytesIO(body),
            "ContentType": "application/json",
            "InvokedRoutedResourceArn": destination,
            "RoutingReason": reason,
        },
        params,
    )


def test_a_local_answer_names_its_destination_and_reason(stubbed):
    router, stubber = stubbed
    expect_invoke(stubber, EAST, "local-preferred")

    answer = router.invoke("qwen3-8b", {"messages": [{"role": "user", "content": "Hi"}]})

    assert answer.json() == {"choices": []}
    assert (answer.destination_arn, answer.routing_reason, answer.destination_region) == (
        EAST,
        "local-preferred",
        "us-east-1",
    )


@pytest.mark.parametrize("reason", ["failover", "capacity-available", "only-healthy"])
def test_a_failover_answer_names_the_remote_destination(stubbed, reason):
    router, stubber = stubbed
    expect_invoke(stubber, WEST, reason)

    answer = router.invoke("qwen3-8b", {"messages": [{"role": "user", "content": "Hi"}]})

    assert (
        answer.destination_arn == WEST and answer.destination_region == "us-west-2" and answer.routing_reason == reason
    )


def test_async_returns_where_the_result_lands(stubbed):
    router, stubber = stubbed
    params = {
        "InferenceRouterName": "SageMakerLlm-Chat",
        "RoutingTargetName": "batch",
        "InputLocation": "s3://router-inputs/req-1.json",
        "RequestTTLSeconds": 3600,
    }
    assert_valid_request("sagemaker-inference-router-runtime", "InvokeInferenceRouterAsync", params)
    stubber.add_response(
        "invoke_inference_router_async",
        {
            "InferenceId": "req-1",
            "OutputLocation": "s3://router-results/out/req-1.out",
            "FailureLocation": "s3://router-results/failed/req-1.out",
        },
        params,
    )

    submission = router.invoke_async("batch", "s3://router-inputs/req-1.json", request_ttl_seconds=3600)

    assert submission.output_location == "s3://router-results/out/req-1.out"
    assert submission.failure_location == "s3://router-results/failed/req-1.out"


def test_the_client_waits_as_long_as_aws_documents():
    router = RouterClient("SageMakerLlm-Chat", region="us-east-1")

    assert router.client.meta.config.read_timeout == READ_TIMEOUT >= 170
    with pytest.raises(ValueError, match=r"read_timeout 60 s is below the 170 s AWS documents"):
        RouterClient("SageMakerLlm-Chat", region="us-east-1", read_timeout=60)


def test_bodies_aws_refuses_are_refused_before_sending(stubbed):
    router, _ = stubbed
    with pytest.raises(ValueError, match=r"the body can't be empty"):
        router.invoke("qwen3-8b", b"")
    with pytest.raises(ValueError, match=r"takes at most 6291456"):
        router.invoke("qwen3-8b", b"x" * (6 * 1024 * 1024 + 1))


def test_the_runtime_api_has_no_streaming_operation():
    model = boto3.client("sagemaker-inference-router-runtime", region_name="us-east-1").meta.service_model
    assert sorted(model.operation_names) == ["InvokeInferenceRouter", "InvokeInferenceRouterAsync"]


def test_the_client_imports_no_cdk_jsii_or_pydantic():
    code = (
        "import sys; import sagemaker_llm_cdk.router_client; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aws_cdk', 'jsii', 'pydantic', 'constructs')))"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"
    )
