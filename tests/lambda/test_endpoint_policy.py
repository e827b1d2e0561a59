"""Endpoint policy custom resource, request by request, against botocore's model: the statements a resource owns
are merged into the endpoint's policy (read, replace its own, keep the rest, check), removed on delete, and the
policy is deleted only when nothing is left; a bad event is refused before any AWS call.

Every request is checked with ``Stubber`` (shapes) and ``assert_valid_request`` (lengths, patterns). The sequences
CloudFormation sends (replacement, rollback, two stacks on one endpoint) are in test_endpoint_policy_lifecycle.py.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from botocore.stub import Stubber
from support.aws_model import assert_valid_request

ENDPOINT = "UsWest2-SageMakerLlm-Chat"
ENDPOINT_ARN = f"arn:aws:sagemaker:us-west-2:222222222222:endpoint/{ENDPOINT.lower()}"
STACK_ID = "arn:aws:cloudformation:us-west-2:222222222222:stack/Platform/guid"
STATEMENT = {
    "Sid": "DescribeForRouter",
    "Effect": "Allow",
    "Principal": {"AWS": "arn:aws:iam::111111111111:root"},
    "Action": "sagemaker:DescribeEndpoint",
    "Resource": ENDPOINT_ARN,
}
POLICY = json.dumps({"Version": "2012-10-17", "Statement": [STATEMENT]})
PROPS: dict[str, Any] = {
    "ServiceToken": "arn:aws:lambda:us-west-2:222222222222:function:framework",
    "EndpointName": ENDPOINT,
    "ResourcePolicy": POLICY,
}
OTHERS = [
    {
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::999999999999:root"},
        "Action": "sagemaker:DescribeEndpoint",
        "Resource": ENDPOINT_ARN,
    },
    {
        "Sid": "SomeoneElse",
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::888888888888:root"},
        "Action": "sagemaker:DescribeEndpoint",
        "Resource": ENDPOINT_ARN,
    },
]
NO_POLICY = {
    "service_error_code": "ValidationException",
    "service_message": f"Endpoint {ENDPOINT} does not have a resource policy.",
}


@pytest.fixture
def handler(load_handler):
    module = load_handler("endpoint_policy")
    module.SETTLE_SECONDS = 0.0
    return module


@pytest.fixture
def sm(handler):
    stubber = Stubber(handler._sagemaker())
    with stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def event(request_type: str, props: dict[str, Any] = PROPS, **extra: Any) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResourceType": "Custom::SageMakerEndpointPolicy",
        "StackId": STACK_ID,
        "RequestId": "req-1",
        "LogicalResourceId": "ChatPolicy",
        "ResourceProperties": props,
        **extra,
    }


def expect(sm: Stubber, operation: str, params: dict[str, Any], response: dict[str, Any] | None = None) -> None:
    api = "".join(part.capitalize() for part in operation.split("_"))
    assert_valid_request("sagemaker", api, params)
    sm.add_response(operation, response or {}, params)


def text(statements: list[dict[str, Any]], **top: Any) -> str:
    return json.dumps({"Version": "2012-10-17", **top, "Statement": statements}, separators=(",", ":"))


def has(sm: Stubber, policy: str | None, name: str = ENDPOINT) -> None:
    """GetEndpointPolicy answers ``policy`` (None: the endpoint has none)."""
    if policy is None:
        sm.add_client_error("get_endpoint_policy", expected_params={"EndpointName": name}, **NO_POLICY)
    else:
        expect(
            sm,
            "get_endpoint_policy",
            {"EndpointName": name},
            {"EndpointName": name, "EndpointArn": ENDPOINT_ARN, "ResourcePolicy": policy},
        )


def mine(handler, policy: str = POLICY, logical_id: str = "ChatPolicy") -> list[dict[str, Any]]:
    return handler.owned_statements(policy, handler.owner_mark(STACK_ID, logical_id))


def test_create_on_an_endpoint_without_a_policy_writes_the_statements_with_the_owner_mark(handler, sm, lambda_context):
    mark = "Cfn" + hashlib.sha256(f"{STACK_ID}/ChatPolicy".encode()).hexdigest()[:12]
    content = hashlib.sha256(
        json.dumps({k: v for k, v in STATEMENT.items() if k != "Sid"}, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()[:8]
    written = text([{**STATEMENT, "Sid": f"DescribeForRouter{mark}{content}"}])
    assert json.loads(written)["Statement"] == mine(handler)
    has(sm, None)
    expect(
        sm, "put_endpoint_policy", {"EndpointName": ENDPOINT, "ResourcePolicy": written}, {"EndpointArn": ENDPOINT_ARN}
    )
    has(sm, written)

    answer = handler.on_event(event("Create"), lambda_context)

    assert answer == {"PhysicalResourceId": ENDPOINT, "Data": {"EndpointArn": ENDPOINT_ARN}}


def test_create_keeps_every_statement_of_other_writers(handler, sm, lambda_context):
    current = json.dumps({"Version": "2012-10-17", "Id": "Shared", "Statement": OTHERS})
    written = text([*OTHERS, *mine(handler)], Id="Shared")
    has(sm, current)
    expect(
        sm, "put_endpoint_policy", {"EndpointName": ENDPOINT, "ResourcePolicy": written}, {"EndpointArn": ENDPOINT_ARN}
    )
    has(sm, written)

    handler.on_event(event("Create"), lambda_context)


def test_a_repeated_delivery_writes_nothing(handler, sm, lambda_context):
    has(sm, text([*OTHERS, *mine(handler)]))

    answer = handler.on_event(event("Create"), lambda_context)

    assert answer == {"PhysicalResourceId": ENDPOINT, "Data": {"EndpointArn": ENDPOINT_ARN}}


def test_update_replaces_its_own_statements_only(handler, sm, lambda_context):
    changed = {**PROPS, "ResourcePolicy": POLICY.replace("111111111111", "333333333333")}
    written = text([*OTHERS, *mine(handler, changed["ResourcePolicy"])])
    has(sm, text([OTHERS[0], *mine(handler), OTHERS[1]]))
    expect(
        sm, "put_endpoint_policy", {"EndpointName": ENDPOINT, "ResourcePolicy": written}, {"EndpointArn": ENDPOINT_ARN}
    )
    has(sm, written)

    answer = handler.on_event(
        event("Update", changed, PhysicalResourceId=ENDPOINT, OldResourceProperties=PROPS), lambda_context
    )

    assert answer["PhysicalResourceId"] == ENDPOINT


@pytest.mark.parametrize(
    ("name", "physical"),
    [("Other", "Other"), (ENDPOINT.lower(), ENDPOINT)],
    ids=["another endpoint", "the same endpoint in other letters"],
)
def test_the_physical_id_changes_with_the_endpoint_and_not_with_its_letter_case(
    handler, sm, lambda_context, name, physical
):
    # The statements name the endpoint they are attached to (the handler refuses another endpoint's ARN).
    policy = POLICY.replace(ENDPOINT.lower(), name.lower())
    has(sm, None, physical)
    written = text(mine(handler, policy))
    expect(
        sm, "put_endpoint_policy", {"EndpointName": physical, "ResourcePolicy": written}, {"EndpointArn": ENDPOINT_ARN}
    )
    has(sm, written, physical)

    answer = handler.on_event(
        event(
            "Update",
            {**PROPS, "EndpointName": name, "ResourcePolicy": policy},
            PhysicalResourceId=ENDPOINT,
            OldResourceProperties=PROPS,
        ),
        lambda_context,
    )

    assert answer["PhysicalResourceId"] == physical


def test_delete_removes_its_own_statements_and_keeps_the_rest(handler, sm, lambda_context):
    has(sm, text([OTHERS[0], *mine(handler), *mine(handler, logical_id="OtherPolicy"), OTHERS[1]]))
    written = text([OTHERS[0], *mine(handler, logical_id="OtherPolicy"), OTHERS[1]])
    expect(
        sm, "put_endpoint_policy", {"EndpointName": ENDPOINT, "ResourcePolicy": written}, {"EndpointArn": ENDPOINT_ARN}
    )
    has(sm, written)

    assert handler.on_event(event("Delete", PhysicalResourceId=ENDPOINT), lambda_context) == {
        "PhysicalResourceId": ENDPOINT
    }


def test_delete_of_the_last_statements_deletes_the_policy(handler, sm, lambda_context):
    has(sm, text(mine(handler)))
    expect(sm, "delete_endpoint_policy", {"EndpointName": ENDPOINT})
    has(sm, None)

    assert handler.on_event(event("Delete", PhysicalResourceId=ENDPOINT), lambda_context) == {
        "PhysicalResourceId": ENDPOINT
    }


@pytest.mark.parametrize(
    "answer",
    [NO_POLICY, {"service_error_code": "ResourceNotFound", "service_message": "Could not find endpoint"}],
    ids=["no policy", "no endpoint"],
)
def test_delete_with_nothing_there_writes_nothing(handler, sm, lambda_context, answer):
    sm.add_client_error("get_endpoint_policy", expected_params={"EndpointName": ENDPOINT}, **answer)

    assert handler.on_event(event("Delete", PhysicalResourceId=ENDPOINT), lambda_context) == {
        "PhysicalResourceId": ENDPOINT
    }


def test_delete_after_a_failed_create_calls_nothing(handler, sm, lambda_context):
    assert handler.on_event(event("Delete", PhysicalResourceId="req-1"), lambda_context) == {
        "PhysicalResourceId": "req-1"
    }
    assert handler.on_event(event("Delete", {"Bad": 1}, PhysicalResourceId=ENDPOINT), lambda_context) == {
        "PhysicalResourceId": ENDPOINT
    }


def test_access_denied_fails_the_request(handler, sm, lambda_context):
    from botocore.exceptions import ClientError

    sm.add_client_error(
        "get_endpoint_policy", service_error_code="AccessDeniedException", expected_params={"EndpointName": ENDPOINT}
    )
    with pytest.raises(ClientError, match="AccessDenied"):
        handler.on_event(event("Delete", PhysicalResourceId=ENDPOINT), lambda_context)


def test_a_missing_endpoint_is_named_in_the_failure(handler, sm, lambda_context):
    sm.add_client_error(
        "get_endpoint_policy",
        service_error_code="ResourceNotFound",
        service_message="Could not find",
        expected_params={"EndpointName": ENDPOINT},
    )
    sm.add_client_error(
        "put_endpoint_policy",
        service_error_code="ResourceNotFound",
        service_message="Could not find",
        expected_params={"EndpointName": ENDPOINT, "ResourcePolicy": text(mine(handler))},
    )
    with pytest.raises(handler.EndpointPolicyError, match=f"endpoint {ENDPOINT} does not exist"):
        handler.on_event(event("Create"), lambda_context)


@pytest.mark.parametrize("policy", ["not json", "[]"], ids=["not JSON", "not an object"])
def test_a_policy_it_cannot_read_is_left_as_it_is(handler, sm, lambda_context, policy):
    has(sm, policy)
    with pytest.raises(handler.EndpointPolicyError, match=f"endpoint {ENDPOINT} has a policy that is not"):
        handler.on_event(event("Create"), lambda_context)


def doc(*statements: Any) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({**PROPS, "EndpointName": "-bad"}, r"EndpointName"),
        ({**PROPS, "ResourcePolicy": "not json"}, r"must be a JSON policy document"),
        (
            {
                **PROPS,
                "ResourcePolicy": json.dumps(
                    {"Version": "2012-10-17", "Statement": [{"Sid": "é"}]}, ensure_ascii=False
                ),
            },
            r"ASCII characters only",
        ),
        ({**PROPS, "ResourcePolicy": "{}"}, r"with a Statement"),
        (
            {**PROPS, "ResourcePolicy": doc({**STATEMENT, "Sid": "Describe-For-Router"})},
            r"Statement\[0\]\.Sid: got 'Describe-For-Router'; allowed: letters and digits only",
        ),
        ({**PROPS, "ResourcePolicy": doc({**STATEMENT, "Sid": 7})}, r"Statement\[0\]\.Sid: got 7; allowed: letters"),
        (
            {**PROPS, "ResourcePolicy": doc(STATEMENT, STATEMENT)},
            r"Statement\[1\]\.Sid: got 'DescribeForRouter' twice; "
            r"allowed: each Sid once",
        ),
        ({**PROPS, "ResourcePolicy": doc("sagemaker:DescribeEndpoint")}, r"Statement\[0\] must be an object"),
        ({**PROPS, "Extra": 1}, r"Extra"),
    ],
)
def test_a_bad_event_is_refused_before_any_call(handler, sm, lambda_context, props, message):
    with pytest.raises(handler.EndpointPolicyError, match=message):
        handler.on_event(event("Create", props), lambda_context)


@pytest.mark.parametrize("field", ["StackId", "LogicalResourceId"])
def test_an_event_without_the_resources_identity_is_refused(handler, sm, lambda_context, field):
    """The owner mark is made of the stack id and the logical id: without them no statement can be told apart."""
    bad = event("Create")
    del bad[field]
    with pytest.raises(handler.EndpointPolicyError, match=field):
        handler.on_event(bad, lambda_context)
