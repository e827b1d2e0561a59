"""Inference router custom resource: create, update, rename, delete and a failed create, against botocore's model.

Every request is checked with ``Stubber`` (shapes) and ``assert_valid_request`` (enums, lengths, patterns); the
scheduled check publishes the destinations the router cannot route to.
"""

from __future__ import annotations

from copy import deepcopy
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.stub import Stubber
from support.aws_model import assert_valid_request

ROUTER = "SageMakerLlm-Chat"
ARN = f"arn:aws:sagemaker:us-east-1:111111111111:inference-router/{ROUTER.lower()}"
EAST = "arn:aws:sagemaker:us-east-1:111111111111:inference-component/Prod-SageMakerLlm-qwen3-8b"
WEST = "arn:aws:sagemaker:us-west-2:222222222222:inference-component/Prod-SageMakerLlm-qwen3-8b"
ASYNC_ENDPOINT = "arn:aws:sagemaker:eu-west-1:222222222222:endpoint/batch-async"
NOW = datetime(2027, 1, 10, tzinfo=UTC)
STACK_ID = "arn:aws:cloudformation:us-east-1:111111111111:stack/Routers/guid"
OWNER = [
    {"Key": "sagemaker-llm-cdk:stack-id", "Value": STACK_ID},
    {"Key": "sagemaker-llm-cdk:logical-id", "Value": "ChatRouter"},
]
"""The owner tags the handler sets on a router that the resource ``ChatRouter`` of stack ``STACK_ID`` creates."""
TARGETS = [
    {
        "Name": "qwen3-8b",
        "Destinations": [{"ResourceArn": EAST}, {"ResourceArn": WEST}],
        "RoutingPreference": "LocalRegionFirst",
    }
]
PROPS: dict[str, Any] = {
    "ServiceToken": "arn:aws:lambda:us-east-1:111111111111:function:framework",
    "RouterName": ROUTER,
    "RoutingTargets": TARGETS,
    "Tags": [{"Key": "team", "Value": "llm"}],
}


@pytest.fixture
def router(load_handler):
    return load_handler("inference_router")


@pytest.fixture
def sm(router):
    stubber = Stubber(router._sagemaker())
    with stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def event(request_type: str, props: dict[str, Any] = PROPS, **extra: Any) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResourceType": "Custom::SageMakerInferenceRouter",
        "StackId": STACK_ID,
        "RequestId": "req-1",
        "LogicalResourceId": "ChatRouter",
        "ResourceProperties": props,
        **extra,
    }


def expect(sm: Stubber, operation: str, params: dict[str, Any], response: dict[str, Any] | None = None) -> None:
    api = "".join(part.capitalize() for part in operation.split("_"))
    assert_valid_request("sagemaker", api, params)
    sm.add_response(operation, response or {}, params)


def described(
    status: str = "InService",
    targets: list[dict[str, Any]] | None = None,
    reason: str | None = None,
    statuses: tuple[str, ...] = ("Routable", "Routable"),
) -> dict[str, Any]:
    routing = deepcopy(targets if targets is not None else TARGETS)
    for target in routing:
        for destination, routing_status in zip(target["Destinations"], statuses, strict=False):
            destination["RoutingStatus"] = routing_status
    answer = {
        "InferenceRouterName": ROUTER,
        "InferenceRouterArn": ARN,
        "RoutingTargets": routing,
        "Status": status,
        "CreationTime": NOW,
        "LastModifiedTime": NOW,
    }
    if reason is not None:
        answer["StatusReason"] = reason
    return answer


def expect_tags(sm: Stubber, tags: list[dict[str, str]], arn: str = ARN) -> None:
    expect(sm, "list_tags", {"ResourceArn": arn}, {"Tags": tags})


def expect_describe(sm: Stubber, answer: dict[str, Any] | None) -> None:
    params = {"InferenceRouterName": ROUTER}
    assert_valid_request("sagemaker", "DescribeInferenceRouter", params)
    if answer is None:
        sm.add_client_error(
            "describe_inference_router",
            service_error_code="ResourceNotFound",
            service_message=f"Inference router {ROUTER} not found",
            expected_params=params,
        )
    else:
        sm.add_response("describe_inference_router", answer, params)


# ------------------------------------------------------------------------------------------ create


def test_create_sends_the_targets_with_an_idempotency_token_and_returns_the_name(router, sm, lambda_context):
    token = router.client_token(event("Create"), ROUTER)
    expect(
        sm,
        "create_inference_router",
        {
            "InferenceRouterName": ROUTER,
            "RoutingTargets": TARGETS,
            "ClientToken": token,
            "Tags": [{"Key": "team", "Value": "llm"}, *OWNER],
        },
        {"InferenceRouterArn": ARN},
    )

    result = router.on_event(event("Create"), lambda_context)

    assert result == {"PhysicalResourceId": ROUTER, "Data": {"InferenceRouterArn": ARN, "InferenceRouterName": ROUTER}}


def test_tokens_identify_the_request(router):
    first = router.client_token(event("Create"), ROUTER)

    assert first == router.client_token(event("Create"), ROUTER)
    assert first != router.client_token(event("Create", RequestId="req-2"), ROUTER)
    assert first != router.client_token(event("Create"), "SageMakerLlm-Other")
    assert_valid_request(
        "sagemaker",
        "CreateInferenceRouter",
        {"InferenceRouterName": ROUTER, "RoutingTargets": TARGETS, "ClientToken": first},
    )


def test_an_async_target_is_sent_with_numbers_as_numbers(router, sm, lambda_context):
    targets = [
        {
            "Name": "batch",
            "Destinations": [{"ResourceArn": ASYNC_ENDPOINT}],
            "RoutingPreference": "InstancePoolOrder",
            "AsyncInferenceConfig": {
                "OutputConfig": {
                    "S3OutputPath": "s3://router-results/out/",
                    "S3FailurePath": "s3://router-results/failed/",
                    "KmsKeyId": "arn:aws:kms:us-east-1:111111111111:key/1234abcd-12ab-34cd-56ef-1234567890ab",
                    "NotificationConfig": {"ErrorTopic": "arn:aws:sns:us-east-1:111111111111:router-errors"},
                },
                "ClientConfig": {"MaxTimeInBacklogSeconds": "600"},
            },
        }
    ]
    props = {**PROPS, "RoutingTargets": targets, "Tags": []}
    sent = deepcopy(targets)
    sent[0]["AsyncInferenceConfig"]["ClientConfig"]["MaxTimeInBacklogSeconds"] = 600
    expect(
        sm,
        "create_inference_router",
        {
            "InferenceRouterName": ROUTER,
            "RoutingTargets": sent,
            "ClientToken": router.client_token(event("Create", props), ROUTER),
            "Tags": OWNER,
        },
        {"InferenceRouterArn": ARN},
    )

    router.on_event(event("Create", props), lambda_context)


def test_create_waits_for_in_service_then_returns_the_arn(router, sm, lambda_context):
    expect_describe(sm, described("Creating"))
    expect_describe(sm, described("InService"))
    done = {**event("Create"), "PhysicalResourceId": ROUTER}

    assert router.is_complete(done, lambda_context) == {"IsComplete": False}
    assert router.is_complete(done, lambda_context) == {
        "IsComplete": True,
        "Data": {"InferenceRouterArn": ARN, "InferenceRouterName": ROUTER},
    }


def test_a_failed_create_fails_the_deploy_with_the_status_reason(router, sm, lambda_context):
    expect_describe(
        sm, described("Failed", reason="Destination arn:aws:sagemaker:us-west-2:... is an asynchronous endpoint")
    )

    with pytest.raises(
        router.RouterFailedError,
        match=(
            r"Inference router 'SageMakerLlm-Chat' is Failed: Destination arn:aws:sagemaker:us-west-2:\.\.\. is an "
            r"asynchronous endpoint\. To do: correct the routing targets"
        ),
    ):
        router.is_complete({**event("Create"), "PhysicalResourceId": ROUTER}, lambda_context)


def test_a_name_another_router_holds_is_refused_and_never_adopted(router, sm, lambda_context):
    sm.add_client_error(
        "create_inference_router", service_error_code="ResourceAlreadyExists", service_message="already exists"
    )

    with pytest.raises(
        router.RouterFailedError,
        match=r"already exists in this account and region and was not created "
        r"by this request; nothing was changed",
    ):
        router.on_event(event("Create"), lambda_context)


def test_unknown_properties_are_refused_before_any_call(router, sm, lambda_context):
    with pytest.raises(
        router.RouterEventError,
        match=r"Invalid inference router properties \(the router was not "
        r"changed\):\n- Targets: unknown property \(misspelt\?\); allowed: RouterName, RoutingTargets, Tags",
    ):
        router.on_event(event("Create", {**PROPS, "Targets": TARGETS}), lambda_context)


def test_a_destination_that_is_no_sagemaker_arn_is_refused(router, sm, lambda_context):
    bad = {**PROPS, "RoutingTargets": [{"Name": "x", "Destinations": [{"ResourceArn": "arn:aws:s3:::bucket"}]}]}

    with pytest.raises(router.RouterEventError, match=r"ResourceArn"):
        router.on_event(event("Create", bad), lambda_context)


# ------------------------------------------------------------------------------------------ update


def test_update_sends_every_target_and_changes_only_the_tags_that_changed(router, sm, lambda_context):
    new_targets = [
        *TARGETS,
        {"Name": "qwen3-8b-sql", "Destinations": [{"ResourceArn": EAST.replace("qwen3-8b", "sql")}]},
    ]
    props = {**PROPS, "RoutingTargets": new_targets, "Tags": [{"Key": "team", "Value": "ml"}]}
    expect_describe(sm, described())
    expect(
        sm,
        "update_inference_router",
        {"InferenceRouterName": ROUTER, "RoutingTargets": new_targets},
        {"InferenceRouterArn": ARN},
    )
    expect_tags(sm, [{"Key": "team", "Value": "llm"}, {"Key": "cost-centre", "Value": "set-by-hand"}, *OWNER])
    expect(sm, "add_tags", {"ResourceArn": ARN, "Tags": [{"Key": "team", "Value": "ml"}]}, {"Tags": []})

    result = router.on_event(
        event("Update", props, PhysicalResourceId=ROUTER, OldResourceProperties=PROPS), lambda_context
    )

    assert result["PhysicalResourceId"] == ROUTER


def test_update_waits_until_the_router_shows_the_new_targets(router, sm, lambda_context):
    new_targets = [{"Name": "qwen3-8b", "Destinations": [{"ResourceArn": EAST}]}]
    props = {**PROPS, "RoutingTargets": new_targets}
    waiting = {**event("Update", props, PhysicalResourceId=ROUTER, OldResourceProperties=PROPS)}
    expect_describe(sm, described("Updating"))
    # InService but still the old targets (the update has not shown yet): sent again, idempotent
    expect_describe(sm, described("InService"))
    expect(
        sm,
        "update_inference_router",
        {"InferenceRouterName": ROUTER, "RoutingTargets": new_targets},
        {"InferenceRouterArn": ARN},
    )
    # SageMaker fills in its default RoutingPreference: still what was asked for
    expect_describe(sm, described("InService", [{**new_targets[0], "RoutingPreference": "LocalRegionFirst"}]))

    assert router.is_complete(waiting, lambda_context) == {"IsComplete": False}
    assert router.is_complete(waiting, lambda_context) == {"IsComplete": False}
    assert router.is_complete(waiting, lambda_context)["IsComplete"] is True


def test_an_update_while_the_router_changes_is_sent_when_it_settles(router, sm, lambda_context):
    props = {**PROPS, "RoutingTargets": [{"Name": "qwen3-8b", "Destinations": [{"ResourceArn": WEST}]}]}
    expect_describe(sm, described("Updating"))
    sm.add_client_error(
        "update_inference_router", service_error_code="ConflictException", service_message="The router is being updated"
    )
    expect_tags(sm, [{"Key": "team", "Value": "llm"}, *OWNER])

    result = router.on_event(
        event("Update", props, PhysicalResourceId=ROUTER, OldResourceProperties=PROPS), lambda_context
    )

    assert result["PhysicalResourceId"] == ROUTER


def test_a_failed_update_fails_the_deploy_with_the_status_reason(router, sm, lambda_context):
    expect_describe(sm, described("Failed", reason="Too many destinations"))

    with pytest.raises(router.RouterFailedError, match=r"is Failed: Too many destinations"):
        router.is_complete(
            {**event("Update", PROPS, PhysicalResourceId=ROUTER, OldResourceProperties=PROPS)}, lambda_context
        )


def test_a_rename_creates_a_new_router_so_cloudformation_deletes_the_old(router, sm, lambda_context):
    renamed = {**PROPS, "RouterName": "SageMakerLlm-Chat2"}
    update = event("Update", renamed, PhysicalResourceId=ROUTER, OldResourceProperties=PROPS)
    expect(
        sm,
        "create_inference_router",
        {
            "InferenceRouterName": "SageMakerLlm-Chat2",
            "RoutingTargets": TARGETS,
            "ClientToken": router.client_token(update, "SageMakerLlm-Chat2"),
            "Tags": [{"Key": "team", "Value": "llm"}, *OWNER],
        },
        {"InferenceRouterArn": ARN + "2"},
    )

    result = router.on_event(update, lambda_context)

    assert result["PhysicalResourceId"] == "SageMakerLlm-Chat2"


def test_an_async_target_is_settled_when_it_shows_what_was_asked_with_the_services_defaults(router, sm, lambda_context):
    asked = [
        {
            "Name": "batch",
            "Destinations": [{"ResourceArn": ASYNC_ENDPOINT}],
            "AsyncInferenceConfig": {
                "OutputConfig": {
                    "S3OutputPath": "s3://router-results/out/",
                    "S3FailurePath": "s3://router-results/failed/",
                }
            },
        }
    ]
    props = {**PROPS, "RoutingTargets": asked}
    waiting = event("Update", props, PhysicalResourceId=ROUTER, OldResourceProperties=PROPS)
    shown = deepcopy(asked)
    shown[0]["RoutingPreference"] = "LocalRegionFirst"
    shown[0]["AsyncInferenceConfig"]["ClientConfig"] = {"MaxTimeInBacklogSeconds": 900}
    expect_describe(sm, described("InService", shown, statuses=("Routable",)))

    assert router.is_complete(waiting, lambda_context)["IsComplete"] is True


def test_an_async_setting_the_router_does_not_show_yet_is_sent_again(router, sm, lambda_context):
    asked = [
        {
            "Name": "batch",
            "Destinations": [{"ResourceArn": ASYNC_ENDPOINT}],
            "AsyncInferenceConfig": {
                "OutputConfig": {
                    "S3OutputPath": "s3://router-results/out/",
                    "S3FailurePath": "s3://router-results/failed/",
                },
                "ClientConfig": {"MaxTimeInBacklogSeconds": 600},
            },
        }
    ]
    props = {**PROPS, "RoutingTargets": asked}
    waiting = event("Update", props, PhysicalResourceId=ROUTER, OldResourceProperties=PROPS)
    shown = deepcopy(asked)
    shown[0]["AsyncInferenceConfig"]["ClientConfig"] = {"MaxTimeInBacklogSeconds": 900}
    expect_describe(sm, described("InService", shown, statuses=("Routable",)))
    expect(
        sm,
        "update_inference_router",
        {"InferenceRouterName": ROUTER, "RoutingTargets": asked},
        {"InferenceRouterArn": ARN},
    )

    assert router.is_complete(waiting, lambda_context) == {"IsComplete": False}


def test_a_router_made_before_the_owner_tags_gets_them_on_its_next_update(router, sm, lambda_context):
    expect_describe(sm, described())
    expect(
        sm,
        "update_inference_router",
        {"InferenceRouterName": ROUTER, "RoutingTargets": TARGETS},
        {"InferenceRouterArn": ARN},
    )
    expect_tags(sm, [{"Key": "team", "Value": "llm"}])
    expect(sm, "add_tags", {"ResourceArn": ARN, "Tags": OWNER}, {"Tags": []})

    router.on_event(event("Update", PROPS, PhysicalResourceId=ROUTER, OldResourceProperties=PROPS), lambda_context)


def test_the_rollback_of_a_rename_brings_this_resources_earlier_router_back(router, sm, lambda_context):
    """Rollback of SageMakerLlm-Chat -> SageMakerLlm-Chat2: Update with the old properties, the new router as physical
    id; the old router is still there (the cleanup never ran) and carries this resource's owner tags."""
    renamed = {
        **PROPS,
        "RouterName": "SageMakerLlm-Chat2",
        "RoutingTargets": [{"Name": "qwen3-8b", "Destinations": [{"ResourceArn": EAST}]}],
    }
    rollback = event("Update", PROPS, PhysicalResourceId="SageMakerLlm-Chat2", OldResourceProperties=renamed)
    sm.add_client_error(
        "create_inference_router", service_error_code="ResourceAlreadyExists", service_message="already exists"
    )
    expect_describe(sm, described())
    expect_tags(sm, [{"Key": "team", "Value": "llm"}, *OWNER])
    expect(
        sm,
        "update_inference_router",
        {"InferenceRouterName": ROUTER, "RoutingTargets": TARGETS},
        {"InferenceRouterArn": ARN},
    )

    result = router.on_event(rollback, lambda_context)

    assert result == {"PhysicalResourceId": ROUTER, "Data": {"InferenceRouterArn": ARN, "InferenceRouterName": ROUTER}}


@pytest.mark.parametrize(
    "tags",
    [
        [],
        [
            {"Key": "sagemaker-llm-cdk:stack-id", "Value": STACK_ID},
            {"Key": "sagemaker-llm-cdk:logical-id", "Value": "OtherRouter"},
        ],
    ],
    ids=["untagged", "another-resource"],
)
def test_a_router_of_the_new_name_this_resource_did_not_create_is_never_adopted(router, sm, lambda_context, tags):
    renamed = {**PROPS, "RouterName": "SageMakerLlm-Chat2"}
    rollback = event("Update", PROPS, PhysicalResourceId="SageMakerLlm-Chat2", OldResourceProperties=renamed)
    sm.add_client_error(
        "create_inference_router", service_error_code="ResourceAlreadyExists", service_message="already exists"
    )
    expect_describe(sm, described())
    expect_tags(sm, tags)

    with pytest.raises(
        router.RouterFailedError,
        match=(
            r"An inference router named 'SageMakerLlm-Chat' already exists in this account and region and this "
            r"resource did not create it \(its tags sagemaker-llm-cdk:stack-id and sagemaker-llm-cdk:logical-id do not "
            r"name stack arn:aws:cloudformation:us-east-1:111111111111:stack/Routers/guid and resource ChatRouter\); "
            r"nothing was changed\. To do: delete it, or set router_name to another name\."
        ),
    ):
        router.on_event(rollback, lambda_context)


def test_a_router_being_deleted_is_not_brought_back(router, sm, lambda_context):
    renamed = {**PROPS, "RouterName": "SageMakerLlm-Chat2"}
    rollback = event("Update", PROPS, PhysicalResourceId="SageMakerLlm-Chat2", OldResourceProperties=renamed)
    sm.add_client_error(
        "create_inference_router", service_error_code="ResourceAlreadyExists", service_message="already exists"
    )
    expect_describe(sm, described("Deleting"))
    expect_tags(sm, OWNER)

    with pytest.raises(
        router.RouterFailedError,
        match=r"Inference router 'SageMakerLlm-Chat' is being deleted, so it "
        r"cannot take these properties; nothing was changed\. To do: "
        r"deploy again once it is gone\.",
    ):
        router.on_event(rollback, lambda_context)


def test_tags_of_the_owner_tags_prefix_and_too_many_tags_are_refused(router, sm, lambda_context):
    owner_like = {**PROPS, "Tags": [{"Key": "sagemaker-llm-cdk:stack-id", "Value": "mine"}]}
    with pytest.raises(
        router.RouterEventError,
        match=r"Tags\.0\.Key: .*tag key 'sagemaker-llm-cdk:stack-id' starts "
        r"with 'sagemaker-llm-cdk:', which the router's owner tags use; "
        r"rename the tag",
    ):
        router.on_event(event("Create", owner_like), lambda_context)
    many = {**PROPS, "Tags": [{"Key": f"k{i}", "Value": "v"} for i in range(49)]}
    with pytest.raises(router.RouterEventError, match=r"Tags: .*at most 48"):
        router.on_event(event("Create", many), lambda_context)


# ------------------------------------------------------------------------------------------ delete


def test_delete_waits_until_the_router_is_gone(router, sm, lambda_context):
    delete = event("Delete", PhysicalResourceId=ROUTER)
    expect(sm, "delete_inference_router", {"InferenceRouterName": ROUTER})
    expect_describe(sm, described("Deleting"))
    expect_describe(sm, None)

    assert router.on_event(delete, lambda_context) == {"PhysicalResourceId": ROUTER}
    assert router.is_complete(delete, lambda_context) == {"IsComplete": False}
    assert router.is_complete(delete, lambda_context) == {"IsComplete": True}


def test_a_delete_refused_while_the_router_changes_is_sent_again(router, sm, lambda_context):
    delete = event("Delete", PhysicalResourceId=ROUTER)
    sm.add_client_error("delete_inference_router", service_error_code="ConflictException", service_message="updating")
    expect_describe(sm, described("InService"))
    expect(sm, "delete_inference_router", {"InferenceRouterName": ROUTER})

    router.on_event(delete, lambda_context)
    assert router.is_complete(delete, lambda_context) == {"IsComplete": False}


def test_deleting_a_router_that_is_gone_succeeds(router, sm, lambda_context):
    sm.add_client_error("delete_inference_router", service_error_code="ResourceNotFound", service_message="not found")

    assert router.on_event(event("Delete", PhysicalResourceId=ROUTER), lambda_context) == {"PhysicalResourceId": ROUTER}


# ------------------------------------------------------------------------------------------ check


def test_the_check_publishes_unroutable_destinations_per_target_and_router(router, sm, lambda_context, monkeypatch):
    monkeypatch.setenv("ROUTER_NAME", ROUTER)
    monkeypatch.setenv("METRICS_NAMESPACE", "SageMakerLlm/InferenceRouter")
    expect_describe(sm, described("InService", statuses=("Routable", "Unroutable")))
    cw = Stubber(router._cloudwatch())
    router_dim = [{"Name": "InferenceRouterName", "Value": ROUTER}]
    target_dim = [*router_dim, {"Name": "RoutingTarget", "Value": "qwen3-8b"}]
    data = [
        {"MetricName": "UnroutableDestinations", "Dimensions": router_dim, "Unit": "Count", "Value": 1.0},
        {"MetricName": "UnroutableDestinations", "Dimensions": target_dim, "Unit": "Count", "Value": 1.0},
        {"MetricName": "UnknownDestinations", "Dimensions": router_dim, "Unit": "Count", "Value": 0.0},
        {"MetricName": "UnknownDestinations", "Dimensions": target_dim, "Unit": "Count", "Value": 0.0},
        {"MetricName": "RouterNotInService", "Dimensions": router_dim, "Unit": "Count", "Value": 0.0},
    ]
    params = {"Namespace": "SageMakerLlm/InferenceRouter", "MetricData": data}
    assert_valid_request("cloudwatch", "PutMetricData", params)
    cw.add_response("put_metric_data", {}, params)

    with cw:
        result = router.check({}, lambda_context)

    assert result == {"Status": "InService", "Unroutable": {"qwen3-8b": 1}}
    cw.assert_no_pending_responses()


def test_a_router_that_is_gone_counts_as_not_in_service(router):
    data = router.metric_data(ROUTER, None)

    assert {d["MetricName"]: d["Value"] for d in data if len(d["Dimensions"]) == 1} == {
        "UnroutableDestinations": 0.0,
        "UnknownDestinations": 0.0,
        "RouterNotInService": 1.0,
    }


def test_the_check_needs_its_environment(router, lambda_context, monkeypatch):
    monkeypatch.delenv("ROUTER_NAME", raising=False)
    monkeypatch.setenv("METRICS_NAMESPACE", "SageMakerLlm/InferenceRouter")

    with pytest.raises(router.RouterEventError, match=r"ROUTER_NAME"):
        router.check({}, lambda_context)


def test_the_owner_tags_are_the_ones_the_construct_allows_and_validates(router):
    """The construct's policy matches the owner tags by these keys and keeps ``tags`` within what the handler takes."""
    from sagemaker_llm_cdk.routing import router as construct

    assert (construct.STACK_TAG, construct.LOGICAL_ID_TAG) == (router.STACK_TAG, router.LOGICAL_ID_TAG)
    assert construct.MAX_TAGS == router.MAX_USER_TAGS
    assert router.owner_tags(event("Create")) == {t["Key"]: t["Value"] for t in OWNER}
