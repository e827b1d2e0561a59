"""Capacity plan guard: an endpoint config is created or replaced only while its plan is Active."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from support.aws_model import assert_valid_request
from support.lifecycle import FakeClient, error

UTC = UTC
STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/s/guid"
PLAN = "chat-p5e-2027q1"
PLAN_ARN = f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/{PLAN}"
NOW = datetime(2027, 1, 10, tzinfo=UTC)
PROPS = {
    "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:framework",
    "PlanName": PLAN,
    "InstanceType": "ml.p5e.48xlarge",
    "MaxInstances": "2",
    "WhenNotActive": "fail",
    "Bound": "true",
    "EndpointConfigInputs": ["sha256:abc", "arn:aws:iam::123456789012:role/endpoint"],
    "UpdatePolicy": "BLUE_GREEN",
}


@pytest.fixture
def guard(load_handler, monkeypatch):
    module = load_handler("capacity_plan_guard")
    monkeypatch.setattr(module, "_now", lambda: NOW)
    return module


class StackStatus:
    """DescribeStacks of the events' stack (``support.lifecycle.FakeClient`` checks each request): ``status``."""

    def __init__(self) -> None:
        self.status = "UPDATE_IN_PROGRESS"

    def DescribeStacks(self, StackName: str) -> dict[str, Any]:  # noqa: N802,N803 - the API's names
        if StackName != STACK_ID:
            raise error("ValidationError", f"Stack with id {StackName} does not exist")
        return {"Stacks": [{"StackName": "s", "StackId": STACK_ID, "CreationTime": NOW, "StackStatus": self.status}]}


@pytest.fixture
def stack_status(guard) -> StackStatus:
    status = StackStatus()
    guard._cloudformation.inject(FakeClient("cloudformation", status))
    return status


@pytest.fixture
def sm(guard, stack_status):
    stubber = Stubber(guard._sagemaker())
    with stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def event(request_type: str, props: dict[str, Any] = PROPS, **extra: Any) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResourceType": "Custom::SageMakerCapacityPlanGuard",
        "StackId": STACK_ID,
        "RequestId": "r",
        "LogicalResourceId": "ChatCapacityGuard",
        "ResourceProperties": props,
        **extra,
    }


def plan(
    status: str = "Active",
    start: datetime = NOW - timedelta(days=5),
    days: int = 30,
    count: int = 2,
    instance_type: str = "ml.p5e.48xlarge",
    targets: tuple[str, ...] = ("endpoint",),
    in_use: int = 0,
) -> dict[str, Any]:
    return {
        "TrainingPlanArn": PLAN_ARN,
        "TrainingPlanName": PLAN,
        "Status": status,
        "StartTime": start,
        "EndTime": start + timedelta(days=days),
        "TotalInstanceCount": count,
        "TargetResources": list(targets),
        "InUseInstanceCount": in_use,
        "AvailableInstanceCount": count - in_use,
        "ReservedCapacitySummaries": [
            {
                "ReservedCapacityArn": "arn:aws:sagemaker:us-east-1:123456789012:reserved-capacity/rc-1",
                "InstanceType": instance_type,
                "TotalInstanceCount": count,
                "Status": status,
            }
        ],
    }


def expect_describe(sm: Stubber, response: dict[str, Any], name: str = PLAN) -> None:
    params = {"TrainingPlanName": name}
    assert_valid_request("sagemaker", "DescribeTrainingPlan", params)
    sm.add_response("describe_training_plan", response, params)


def test_an_active_plan_passes_and_returns_its_arn(guard, sm, lambda_context):
    expect_describe(sm, plan())

    result = guard.handler(event("Create"), lambda_context)

    assert result["Data"] == {
        "MlReservationArn": PLAN_ARN,
        "Status": "Active",
        "StartTime": "2027-01-05T00:00:00Z",
        "EndTime": "2027-02-04T00:00:00Z",
    }
    assert result["PhysicalResourceId"].startswith(f"{PLAN}/")


def test_a_scheduled_plan_fails_fast_with_status_dates_and_what_to_do(guard, sm, lambda_context):
    expect_describe(sm, plan(status="Scheduled", start=datetime(2027, 1, 4, tzinfo=UTC) + timedelta(days=30)))

    with pytest.raises(
        guard.PlanNotUsableError,
        match=(
            r"Capacity plan 'chat-p5e-2027q1' cannot serve the endpoint now: its status is Scheduled, not Active "
            r"\(status Scheduled, start 2027-02-03T00:00:00Z, end 2027-03-05T00:00:00Z\)\. The endpoint config was "
            r"not created or changed.*To do: deploy again after the plan starts \(2027-02-03T00:00:00Z\); or set "
            r"when_not_active: on_demand"
        ),
    ):
        guard.handler(event("Create"), lambda_context)


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (plan(status="Expired"), "its status is Expired, not Active"),
        (plan(start=NOW - timedelta(days=40)), "it ended at 2026-12-31T00:00:00Z"),
        (plan(targets=("training-job",)), "it targets training-job, not endpoints"),
        (plan(instance_type="ml.p5en.48xlarge"), "it reserves ml.p5en.48xlarge, not ml.p5e.48xlarge"),
        (plan(count=1), "it holds 1 instance(s) and the endpoint may scale to 2"),
    ],
)
def test_a_plan_that_cannot_serve_fails(guard, sm, lambda_context, response, expected):
    expect_describe(sm, response)
    with pytest.raises(guard.PlanNotUsableError) as caught:
        guard.handler(event("Update", PhysicalResourceId=f"{PLAN}/old", OldResourceProperties=PROPS), lambda_context)
    assert expected in str(caught.value)


def test_a_missing_plan_fails_and_says_how_to_buy_it(guard, sm, lambda_context):
    params = {"TrainingPlanName": PLAN}
    assert_valid_request("sagemaker", "DescribeTrainingPlan", params)
    sm.add_client_error(
        "describe_training_plan", "ResourceNotFound", "Training plan not found", 400, expected_params=params
    )
    with pytest.raises(guard.PlanNotUsableError, match=r"was not found .*-c purchase=<plan name>"):
        guard.handler(event("Create"), lambda_context)


def test_on_demand_while_not_active_never_fails(guard, sm, lambda_context):
    expect_describe(sm, plan(status="Scheduled", start=NOW + timedelta(days=3)))

    result = guard.handler(event("Create", {**PROPS, "WhenNotActive": "on_demand", "Bound": "false"}), lambda_context)

    assert result["Data"]["Status"] == "Scheduled" and result["Data"]["MlReservationArn"] == PLAN_ARN


def test_on_demand_bound_on_a_stale_status_fails_and_says_why(guard, sm, lambda_context):
    expect_describe(sm, plan(status="Expired"))
    with pytest.raises(guard.PlanNotUsableError, match="The plan's status parameter said Active"):
        guard.handler(event("Create", {**PROPS, "WhenNotActive": "on_demand"}), lambda_context)


def test_a_plan_given_by_arn_is_described_by_arn(guard, sm, lambda_context):
    expect_describe(sm, plan(), name=PLAN_ARN)
    assert guard.handler(event("Create", {**PROPS, "PlanName": PLAN_ARN}), lambda_context)["Data"]["Status"] == "Active"


def test_new_properties_give_a_new_physical_id(guard, sm, lambda_context):
    expect_describe(sm, plan())
    expect_describe(sm, plan())
    first = guard.handler(event("Create"), lambda_context)["PhysicalResourceId"]
    second = guard.handler(event("Create", {**PROPS, "EndpointConfigInputs": ["sha256:def"]}), lambda_context)
    assert first != second["PhysicalResourceId"]


def test_delete_calls_nothing(guard, sm, lambda_context):
    assert guard.handler(event("Delete", PhysicalResourceId=f"{PLAN}/x"), lambda_context) == {
        "PhysicalResourceId": f"{PLAN}/x"
    }


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"Bound": "yes"}, "Bound: got 'yes'; allowed: 'true' or 'false'"),
        ({"WhenNotActive": "wait"}, "WhenNotActive: got 'wait'; allowed: 'fail' or 'on_demand'"),
        ({"PlanName": "x" * 65}, "is not a training plan name"),
        ({"MaxInstances": "0"}, "MaxInstances '0' must be a whole number 1-1000"),
        ({"InstanceType": "p5e"}, "InstanceType 'p5e' is not a SageMaker instance type"),
        ({"PlanNmae": PLAN}, "PlanNmae: unknown property (misspelt?)"),
        ({"UpdatePolicy": "CANARY"}, "UpdatePolicy: got 'CANARY'; allowed: 'BLUE_GREEN', 'ROLLING' or 'NONE_FITS'"),
    ],
)
def test_properties_are_strict_and_checked_before_any_call(guard, sm, lambda_context, change, expected):
    with pytest.raises(guard.GuardEventError) as caught:
        guard.handler(event("Create", {**PROPS, **change}), lambda_context)
    assert expected in str(caught.value) and "nothing was checked" in str(caught.value)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"RequestType": "Upsert", "ResourceProperties": PROPS},
            "RequestType: got 'Upsert'; allowed: 'Create', 'Update' or 'Delete'",
        ),
        ({"ResourceProperties": PROPS}, "RequestType: required field is missing"),
        (
            {"RequestType": "Update", "ResourceProperties": PROPS},
            "Update events need PhysicalResourceId and OldResourceProperties",
        ),
        ({"RequestType": "Delete"}, "Delete events need PhysicalResourceId"),
    ],
)
def test_events_are_checked_before_any_call(guard, sm, lambda_context, body, expected):
    with pytest.raises(guard.GuardEventError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        guard.handler(body, lambda_context)


def update(props: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    return event("Update", props, PhysicalResourceId=f"{PLAN}/old", OldResourceProperties=old or PROPS)


@pytest.mark.parametrize(
    ("policy", "count", "in_use", "fits"),
    [
        ("BLUE_GREEN", 4, 2, True),
        ("BLUE_GREEN", 4, 3, False),
        ("ROLLING", 4, 3, True),
        ("ROLLING", 2, 2, False),
        ("NONE_FITS", 2, 2, False),
    ],
)
def test_an_update_on_the_plan_needs_free_instances(guard, sm, lambda_context, policy, count, in_use, fits):
    expect_describe(sm, plan(count=count, in_use=in_use))
    props = {**PROPS, "UpdatePolicy": policy}
    if fits:
        assert guard.handler(update(props), lambda_context)["Data"]["Status"] == "Active"
        return
    with pytest.raises(
        guard.PlanNotUsableError,
        match=(
            rf"cannot hold this update: the endpoint update needs \d free instance\(s\) of the plan "
            rf".*{in_use} in use\) "
            rf"and the plan has {count - in_use} available\. The new endpoint config was not created"
        ),
    ):
        guard.handler(update(props), lambda_context)


def test_binding_a_plan_for_the_first_time_needs_no_headroom_check(guard, sm, lambda_context):
    expect_describe(sm, plan(count=2, in_use=2))  # e.g. the plan is in use by nothing this guard knows of
    old = {**PROPS, "Bound": "false", "WhenNotActive": "on_demand"}
    result = guard.handler(update({**PROPS, "WhenNotActive": "on_demand"}, old), lambda_context)
    assert result["Data"]["Status"] == "Active"


@pytest.mark.parametrize(
    ("size", "count", "in_use", "fits"),
    [
        ({"Type": "INSTANCE_COUNT", "Value": "2"}, 64, 62, True),
        ({"Type": "INSTANCE_COUNT", "Value": "2"}, 64, 63, False),
        ({"Type": "CAPACITY_PERCENT", "Value": "5"}, 64, 40, True),  # 5% of 40 in use: 2 instances
        ({"Type": "CAPACITY_PERCENT", "Value": "5"}, 64, 63, False),  # 5% of 63 rounded up: 4, and 1 is free
        ({"Type": "CAPACITY_PERCENT", "Value": "33"}, 4, 3, True),  # 33% of 3 rounded up: 1
    ],
)
def test_a_rolling_update_needs_one_step_of_its_batch_size(guard, sm, lambda_context, size, count, in_use, fits):
    expect_describe(sm, plan(count=count, in_use=in_use))
    props = {**PROPS, "MaxInstances": str(count), "UpdatePolicy": "ROLLING", "RollingBatchSize": size}
    if fits:
        assert guard.handler(update(props), lambda_context)["Data"]["Status"] == "Active"
        return
    with pytest.raises(
        guard.PlanNotUsableError, match=(r"a rolling update starts one step of \d new instance\(s\) first")
    ):
        guard.handler(update(props), lambda_context)


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ({"Type": "COPY_COUNT", "Value": "1"}, "RollingBatchSize.Type: got 'COPY_COUNT'"),
        ({"Type": "INSTANCE_COUNT", "Value": "0"}, "RollingBatchSize.Value '0' must be a whole number 1-1000"),
        ({"Type": "CAPACITY_PERCENT", "Value": "150"}, "RollingBatchSize.Value 150 is more than 100 percent"),
    ],
)
def test_the_rolling_batch_size_is_checked_before_any_call(guard, sm, lambda_context, size, expected):
    with pytest.raises(guard.GuardEventError) as caught:
        guard.handler(event("Create", {**PROPS, "UpdatePolicy": "ROLLING", "RollingBatchSize": size}), lambda_context)
    assert expected in str(caught.value) and "nothing was checked" in str(caught.value)


def test_a_rollback_is_answered_from_the_plan_and_never_refused(guard, sm, stack_status, lambda_context):
    stack_status.status = "UPDATE_ROLLBACK_IN_PROGRESS"  # e.g. the rollback sends a replaced guard its old properties
    expect_describe(sm, plan(status="Expired"))

    result = guard.handler(update(PROPS, {**PROPS, "EndpointConfigInputs": ["sha256:new"]}), lambda_context)

    assert result["PhysicalResourceId"] == guard._physical_id(guard.parse_properties(PROPS))
    assert result["Data"] == {
        "MlReservationArn": PLAN_ARN,
        "Status": "Expired",
        "StartTime": "2027-01-05T00:00:00Z",
        "EndTime": "2027-02-04T00:00:00Z",
    }


def test_the_rollback_of_a_refused_update_is_told_by_its_physical_id(guard, sm, stack_status, lambda_context):
    stack_status.status = "UPDATE_IN_PROGRESS"  # as if unreadable: the physical id alone tells it
    own = guard._physical_id(guard.parse_properties(PROPS))
    expect_describe(sm, plan(status="Expired"))
    body = event("Update", PROPS, PhysicalResourceId=own, OldResourceProperties={**PROPS, "MaxInstances": "1"})

    assert guard.handler(body, lambda_context)["PhysicalResourceId"] == own
