"""Endpoint policy custom resource: attach, replace, move to another endpoint and delete, against botocore's model.

Every request is checked with ``Stubber`` (shapes) and ``assert_valid_request`` (lengths, patterns); a missing
policy or endpoint on delete is fine, a bad event is refused before any AWS call.
"""
from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.stub import Stubber
from support.aws_model import assert_valid_request

ENDPOINT = "UsWest2-SageMakerLlm-Chat"
ENDPOINT_ARN = f"arn:aws:sagemaker:us-west-2:222222222222:endpoint/{ENDPOINT.lower()}"
POLICY = json.dumps({"Version": "2012-10-17", "Statement": [{
    "Sid": "DescribeForRouter", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111111111111:root"},
    "Action": "sagemaker:DescribeEndpoint", "Resource": ENDPOINT_ARN}]})
PROPS: dict[str, Any] = {"ServiceToken": "arn:aws:lambda:us-west-2:222222222222:function:framework",
                         "EndpointName": ENDPOINT, "ResourcePolicy": POLICY}


@pytest.fixture
def handler(load_handler):
    return load_handler("endpoint_policy")


@pytest.fixture
def sm(handler):
    stubber = Stubber(handler._sagemaker())
    with stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def event(request_type: str, props: dict[str, Any] = PROPS, **extra: Any) -> dict[str, Any]:
    return {"RequestType": request_type, "ResourceType": "Custom::SageMakerEndpointPolicy",
            "StackId": "arn:aws:cloudformation:us-west-2:222222222222:stack/Platform/guid", "RequestId": "req-1",
            "LogicalResourceId": "ChatPolicy", "ResourceProperties": props, **extra}


def expect(sm: Stubber, operation: str, params: dict[str, Any], response: dict[str, Any] | None = None) -> None:
    api = "".join(part.capitalize() for part in operation.split("_"))
    assert_valid_request("sagemaker", api, params)
    sm.add_response(operation, response or {}, params)


def test_create_puts_the_policy_and_names_the_endpoint(handler, sm, lambda_context):
    expect(sm, "put_endpoint_policy", {"EndpointName": ENDPOINT, "ResourcePolicy": POLICY}, {"EndpointArn": ENDPOINT_ARN})

    answer = handler.on_event(event("Create"), lambda_context)

    assert answer == {"PhysicalResourceId": ENDPOINT, "Data": {"EndpointArn": ENDPOINT_ARN}}


def test_update_replaces_the_policy_and_a_new_endpoint_is_a_new_physical_id(handler, sm, lambda_context):
    changed = {**PROPS, "ResourcePolicy": POLICY.replace("111111111111", "333333333333")}
    expect(sm, "put_endpoint_policy", {"EndpointName": ENDPOINT, "ResourcePolicy": changed["ResourcePolicy"]},
           {"EndpointArn": ENDPOINT_ARN})
    expect(sm, "put_endpoint_policy", {"EndpointName": "Other", "ResourcePolicy": POLICY}, {"EndpointArn": ENDPOINT_ARN})

    same = handler.on_event(event("Update", changed, PhysicalResourceId=ENDPOINT, OldResourceProperties=PROPS),
                            lambda_context)
    moved = handler.on_event(event("Update", {**PROPS, "EndpointName": "Other"}, PhysicalResourceId=ENDPOINT,
                                   OldResourceProperties=PROPS), lambda_context)

    assert same["PhysicalResourceId"] == ENDPOINT
    assert moved["PhysicalResourceId"] == "Other"


def test_delete_removes_the_policy_and_a_missing_one_is_fine(handler, sm, lambda_context):
    expect(sm, "delete_endpoint_policy", {"EndpointName": ENDPOINT})
    sm.add_client_error("delete_endpoint_policy", service_error_code="ResourceNotFound",
                        service_message="Could not find endpoint", expected_params={"EndpointName": ENDPOINT})

    assert handler.on_event(event("Delete", PhysicalResourceId=ENDPOINT), lambda_context) == {
        "PhysicalResourceId": ENDPOINT}
    assert handler.on_event(event("Delete", PhysicalResourceId=ENDPOINT), lambda_context) == {
        "PhysicalResourceId": ENDPOINT}


def test_delete_after_a_failed_create_calls_nothing(handler, sm, lambda_context):
    assert handler.on_event(event("Delete", PhysicalResourceId="req-1"), lambda_context) == {"PhysicalResourceId": "req-1"}
    assert handler.on_event(event("Delete", {"Bad": 1}, PhysicalResourceId=ENDPOINT), lambda_context) == {
        "PhysicalResourceId": ENDPOINT}


def test_access_denied_fails_the_deploy(handler, sm, lambda_context):
    from botocore.exceptions import ClientError

    sm.add_client_error("delete_endpoint_policy", service_error_code="AccessDeniedException",
                        expected_params={"EndpointName": ENDPOINT})
    with pytest.raises(ClientError, match="AccessDenied"):
        handler.on_event(event("Delete", PhysicalResourceId=ENDPOINT), lambda_context)


def test_a_missing_endpoint_is_named_in_the_failure(handler, sm, lambda_context):
    sm.add_client_error("put_endpoint_policy", service_error_code="ResourceNotFound", service_message="Could not find",
                        expected_params={"EndpointName": ENDPOINT, "ResourcePolicy": POLICY})
    with pytest.raises(handler.EndpointPolicyError, match=f"endpoint {ENDPOINT} does not exist"):
        handler.on_event(event("Create"), lambda_context)


@pytest.mark.parametrize(("props", "message"), [
    ({**PROPS, "EndpointName": "-bad"}, r"EndpointName"),
    ({**PROPS, "ResourcePolicy": "not json"}, r"must be a JSON policy document"),
    ({**PROPS, "ResourcePolicy": json.dumps({"Version": "2012-10-17", "Statement": [{"Sid": "é"}]},
                                            ensure_ascii=False)}, r"ASCII characters only"),
    ({**PROPS, "ResourcePolicy": "{}"}, r"with a Statement"),
    ({**PROPS, "Extra": 1}, r"Extra"),
])
def test_a_bad_event_is_refused_before_any_call(handler, sm, lambda_context, props, message):
    with pytest.raises(handler.EndpointPolicyError, match=message):
        handler.on_event(event("Create", props), lambda_context)
