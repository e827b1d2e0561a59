"""Deployment check custom resource: complete when what runs is what the template declared, fail on silent rollback."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.stub import Stubber
from support.aws_model import assert_valid_request

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
ENDPOINT = "Endpoint-abc123"
CONFIG = "EndpointConfig-new456"
OLD_CONFIG = "EndpointConfig-old123"
COMPONENT = "qwen3-8b"
MODEL = "EndpointQwenModel-new789"
OLD_MODEL = "EndpointQwenModel-old111"
ARN = "arn:aws:sagemaker:us-east-1:123456789012:"


@pytest.fixture
def check(load_handler):
    return load_handler("deployment_check")


@pytest.fixture
def stubber(check):
    stub = Stubber(check._sagemaker())
    with stub:
        yield stub
        stub.assert_no_pending_responses()


def event(request: str = "Update", components: list[dict[str, str]] | None = None, **props: Any) -> dict[str, Any]:
    properties = {
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:provider",
        "EndpointName": ENDPOINT,
        "EndpointConfigName": CONFIG,
        "Components": components if components is not None else [{"Name": COMPONENT, "ModelName": MODEL}],
        **props,
    }
    body: dict[str, Any] = {
        "RequestType": request,
        "ResourceProperties": properties,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/Test/1",
        "RequestId": "req-1",
        "LogicalResourceId": "Check",
        "ResourceType": "Custom::SageMakerDeploymentCheck",
    }
    if request != "Create":
        body["PhysicalResourceId"] = f"deployment-check/{ENDPOINT}"
    return body


def expect_endpoint(
    stubber: Stubber, *, status: str = "InService", config: str = CONFIG, error: str | None = None, **extra: Any
) -> None:
    params = {"EndpointName": ENDPOINT}
    assert_valid_request("sagemaker", "DescribeEndpoint", params)
    if error:
        stubber.add_client_error(
            "describe_endpoint",
            service_error_code=error,
            service_message=f"{error}: {ENDPOINT}",
            http_status_code=400,
            expected_params=params,
        )
        return
    response = {
        "EndpointName": ENDPOINT,
        "EndpointArn": ARN + "endpoint/" + ENDPOINT.lower(),
        "EndpointConfigName": config,
        "EndpointStatus": status,
        "CreationTime": NOW,
        "LastModifiedTime": NOW,
        **extra,
    }
    stubber.add_response("describe_endpoint", response, params)


def expect_component(
    stubber: Stubber,
    *,
    name: str = COMPONENT,
    status: str = "InService",
    model: str | None = MODEL,
    endpoint: str = ENDPOINT,
    error: str | None = None,
    **extra: Any,
) -> None:
    params = {"InferenceComponentName": name}
    assert_valid_request("sagemaker", "DescribeInferenceComponent", params)
    if error:
        stubber.add_client_error(
            "describe_inference_component",
            service_error_code=error,
            service_message=f"Could not find inference component {name}" if error == "ValidationException" else error,
            http_status_code=400,
            expected_params=params,
        )
        return
    spec: dict[str, Any] = {"ModelName": model} if model else {}
    spec.update(extra.pop("spec", {}))
    response = {
        "InferenceComponentName": name,
        "InferenceComponentArn": ARN + "inference-component/" + name,
        "EndpointName": endpoint,
        "EndpointArn": ARN + "endpoint/" + endpoint.lower(),
        "VariantName": "AllTraffic",
        "Specification": spec,
        "InferenceComponentStatus": status,
        "CreationTime": NOW,
        "LastModifiedTime": NOW,
        **extra,
    }
    stubber.add_response("describe_inference_component", response, params)


# ------------------------------------------------------------------ on_event
def test_on_event_create_names_the_check_after_the_endpoint_and_calls_nothing(check, stubber, lambda_context):
    assert check.on_event(event("Create"), lambda_context) == {"PhysicalResourceId": f"deployment-check/{ENDPOINT}"}


def test_on_event_delete_keeps_the_physical_id(check, stubber, lambda_context):
    assert check.on_event(event("Delete"), lambda_context) == {"PhysicalResourceId": f"deployment-check/{ENDPOINT}"}


def test_on_event_refuses_malformed_properties(check, stubber, lambda_context):
    with pytest.raises(check.DeploymentCheckFailed, match="invalid ResourceProperties: EndpointConfigName"):
        check.on_event(event("Create", EndpointConfigName="bad_name!"), lambda_context)


# --------------------------------------------------------------- is_complete
def test_config_and_model_match_is_complete(check, stubber, lambda_context):
    expect_endpoint(stubber)
    expect_component(stubber)
    result = check.is_complete(event(), lambda_context)
    assert result == {"IsComplete": True, "Data": {"EndpointConfigName": CONFIG, "ComponentsChecked": "1"}}


def test_silent_endpoint_rollback_fails_with_both_config_names(check, stubber, lambda_context):
    expect_endpoint(stubber, config=OLD_CONFIG)
    expect_component(stubber)
    with pytest.raises(check.DeploymentCheckFailed) as raised:
        check.is_complete(event(), lambda_context)
    message = str(raised.value)
    assert f"endpoint {ENDPOINT} is InService on endpoint config {OLD_CONFIG}, not {CONFIG}" in message
    assert "SageMaker rolled the update back" in message


def test_endpoint_still_updating_is_not_complete(check, stubber, lambda_context):
    expect_endpoint(
        stubber, status="Updating", config=OLD_CONFIG, PendingDeploymentSummary={"EndpointConfigName": CONFIG}
    )
    expect_component(stubber)
    assert check.is_complete(event(), lambda_context) == {"IsComplete": False}


@pytest.mark.parametrize("status", ["SystemUpdating", "RollingBack", "Creating"])
def test_endpoint_settling_is_not_complete(check, stubber, lambda_context, status):
    expect_endpoint(stubber, status=status)
    expect_component(stubber)
    assert check.is_complete(event(), lambda_context) == {"IsComplete": False}


def test_silent_component_rollback_fails_with_both_model_names(check, stubber, lambda_context):
    expect_endpoint(stubber)
    expect_component(stubber, model=OLD_MODEL)
    with pytest.raises(
        check.DeploymentCheckFailed,
        match=f"inference component {COMPONENT} is InService but serves model {OLD_MODEL}, not {MODEL}",
    ):
        check.is_complete(event(), lambda_context)


def test_component_updating_is_not_complete(check, stubber, lambda_context):
    expect_endpoint(stubber)
    expect_component(stubber, status="Updating", model=OLD_MODEL)
    assert check.is_complete(event(), lambda_context) == {"IsComplete": False}


def test_failed_component_fails_with_its_reason(check, stubber, lambda_context):
    expect_endpoint(stubber)
    expect_component(stubber, status="Failed", FailureReason="CUDA out of memory")
    with pytest.raises(
        check.DeploymentCheckFailed, match=f"inference component {COMPONENT} is Failed: CUDA out of memory"
    ):
        check.is_complete(event(), lambda_context)


def test_failure_wins_over_waiting(check, stubber, lambda_context):
    expect_endpoint(stubber, status="Failed", FailureReason="capacity")
    expect_component(stubber, status="Updating")
    with pytest.raises(check.DeploymentCheckFailed, match=f"endpoint {ENDPOINT} is Failed: capacity"):
        check.is_complete(event(), lambda_context)


def test_component_on_another_endpoint_fails(check, stubber, lambda_context):
    expect_endpoint(stubber)
    expect_component(stubber, endpoint="Other-endpoint")
    with pytest.raises(check.DeploymentCheckFailed, match="runs on endpoint Other-endpoint, not Endpoint-abc123"):
        check.is_complete(event(), lambda_context)


def test_missing_component_fails(check, stubber, lambda_context):
    expect_endpoint(stubber)
    expect_component(stubber, error="ValidationException")
    with pytest.raises(check.DeploymentCheckFailed, match=f"inference component {COMPONENT} does not exist"):
        check.is_complete(event(), lambda_context)


def test_throttled_describe_means_look_again(check, stubber, lambda_context):
    expect_endpoint(stubber, error="ThrottlingException")
    expect_component(stubber)
    assert check.is_complete(event(), lambda_context) == {"IsComplete": False}


def test_access_denied_fails_with_the_code(check, stubber, lambda_context):
    expect_endpoint(stubber, error="AccessDeniedException")
    expect_component(stubber)
    with pytest.raises(
        check.DeploymentCheckFailed, match=f"endpoint {ENDPOINT} could not be read \\(AccessDeniedException"
    ):
        check.is_complete(event(), lambda_context)


def test_adapter_artifact_is_compared(check, stubber, lambda_context):
    adapter = {"Name": "support-bot", "ArtifactUrl": "s3://adapters/support-v2.tar.gz"}
    expect_endpoint(stubber)
    expect_component(
        stubber,
        name="support-bot",
        model=None,
        spec={"BaseInferenceComponentName": COMPONENT, "Container": {"ArtifactUrl": "s3://adapters/support-v1.tar.gz"}},
    )
    with pytest.raises(
        check.DeploymentCheckFailed,
        match="serves artifact s3://adapters/support-v1.tar.gz, not s3://adapters/support-v2.tar.gz",
    ):
        check.is_complete(event(components=[adapter]), lambda_context)


def test_components_are_optional(check, stubber, lambda_context):
    expect_endpoint(stubber)
    result = check.is_complete(event(components=[]), lambda_context)
    assert result["IsComplete"] is True and result["Data"]["ComponentsChecked"] == "0"


def test_delete_is_complete_without_aws_calls(check, stubber, lambda_context):
    assert check.is_complete(event("Delete"), lambda_context) == {"IsComplete": True}


def test_message_fits_in_a_cloudformation_reason(check, stubber, lambda_context):
    components = [{"Name": f"model-{i}", "ModelName": f"Model-{i}"} for i in range(60)]
    expect_endpoint(stubber, config=OLD_CONFIG)
    for c in components:
        expect_component(stubber, name=c["Name"], model="Other-model")
    with pytest.raises(check.DeploymentCheckFailed) as raised:
        check.is_complete(event(components=components), lambda_context)
    assert len(str(raised.value)) <= check.MAX_MESSAGE_CHARS


def test_client_uses_adaptive_retries(check):
    config = check._sagemaker().meta.config
    assert config.retries["mode"] == "adaptive"


STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/Test/1"


@pytest.mark.parametrize(
    ("status", "rolling_back"), [("UPDATE_ROLLBACK_IN_PROGRESS", True), ("UPDATE_IN_PROGRESS", False)]
)
def test_on_event_update_tells_is_complete_whether_the_stack_rolls_back(
    check, stubber, lambda_context, status, rolling_back
):
    params = {"StackName": STACK_ID}
    assert_valid_request("cloudformation", "DescribeStacks", params)
    with Stubber(check._cloudformation()) as cfn:
        cfn.add_response(
            "describe_stacks",
            {"Stacks": [{"StackName": "Test", "StackId": STACK_ID, "CreationTime": NOW, "StackStatus": status}]},
            params,
        )
        answer = check.on_event(event("Update"), lambda_context)
        cfn.assert_no_pending_responses()
    assert answer.get("RollingBack", False) is rolling_back
    assert answer["PhysicalResourceId"] == f"deployment-check/{ENDPOINT}"


def test_on_event_update_checks_as_usual_when_the_stack_status_cannot_be_read(check, stubber, lambda_context):
    with Stubber(check._cloudformation()) as cfn:
        cfn.add_client_error(
            "describe_stacks",
            service_error_code="AccessDenied",
            http_status_code=403,
            expected_params={"StackName": STACK_ID},
        )
        assert "RollingBack" not in check.on_event(event("Update"), lambda_context)


def test_a_rollback_is_complete_at_once_without_aws_calls(check, stubber, lambda_context):
    result = check.is_complete({**event(), "RollingBack": True}, lambda_context)  # no response queued: no call
    assert result == {"IsComplete": True, "Data": {"EndpointConfigName": CONFIG, "ComponentsChecked": "0"}}
