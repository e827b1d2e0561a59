"""Capacity plan custom resource: buys at most once, within the fee cap and window, never cancels."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from botocore.stub import Stubber
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.aws_model import assert_valid_request
from support.properties import examples

UTC = UTC
ACCOUNT_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/"
PLAN = "llm-p5e-2026q1"
PLAN_ARN = ACCOUNT_ARN + PLAN
T0 = datetime(2026, 1, 10, 11, 30, tzinfo=UTC)

PROPS = {
    "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:provider",
    "PlanName": PLAN,
    "InstanceType": "ml.p5e.48xlarge",
    "InstanceCount": "4",
    "DurationDays": "7",
    "MaxUpfrontFeeUsd": "100000",
    "Purchase": "approved",
}
WINDOW = {"StartTimeAfter": "2026-01-10T00:00:00Z", "EndTimeBefore": "2026-02-10T00:00:00Z"}


def _snake(operation: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in operation).lstrip("_")


class StubbedSageMaker:
    """Stubber on the handler's client; every expected request is also checked against the model."""

    def __init__(self, client: Any) -> None:
        self.stubber = Stubber(client)

    def expect(self, operation: str, params: dict[str, Any], response: dict[str, Any]) -> None:
        assert_valid_request("sagemaker", operation, params)
        self.stubber.add_response(_snake(operation), response, params)

    def expect_error(self, operation: str, params: dict[str, Any], code: str, message: str = "") -> None:
        assert_valid_request("sagemaker", operation, params)
        self.stubber.add_client_error(
            _snake(operation),
            service_error_code=code,
            service_message=message,
            http_status_code=400,
            expected_params=params,
        )


@pytest.fixture
def cp(load_handler):
    return load_handler("capacity_plan")


@pytest.fixture
def sm(cp):
    stub = StubbedSageMaker(cp._sagemaker())
    with stub.stubber:
        yield stub
        stub.stubber.assert_no_pending_responses()


def event(request_type: str, props: dict[str, str], old: dict[str, str] | None = None, physical_id: str | None = None):
    body = {
        "RequestType": request_type,
        "ServiceToken": props.get("ServiceToken", ""),
        "ResponseURL": "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/x",
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/llm/guid",
        "RequestId": "req-1",
        "LogicalResourceId": "CapacityPlan",
        "ResourceType": "Custom::SageMakerCapacityPlan",
        "ResourceProperties": props,
    }
    if old is not None:
        body["OldResourceProperties"] = old
    if physical_id is not None:
        body["PhysicalResourceId"] = physical_id
    return body


def offering(
    oid: str,
    fee: str,
    start: datetime,
    days: int = 7,
    currency: str = "USD",
    instance_type: str = "ml.p5e.48xlarge",
    extra_hours: int = 0,
) -> dict[str, Any]:
    hours = days * 24 + extra_hours
    return {
        "TrainingPlanOfferingId": oid,
        "TargetResources": ["endpoint"],
        "DurationHours": hours,
        "DurationMinutes": 0,
        "UpfrontFee": fee,
        "CurrencyCode": currency,
        "ReservedCapacityOfferings": [
            {
                "InstanceType": instance_type,
                "InstanceCount": 4,
                "AvailabilityZone": "us-east-1a",
                "DurationHours": hours,
                "DurationMinutes": 0,
                "StartTime": start,
                "EndTime": start + timedelta(hours=hours),
            }
        ],
    }


def plan(
    name: str = PLAN,
    status: str = "Scheduled",
    instance_type: str = "ml.p5e.48xlarge",
    count: int = 4,
    days: int = 7,
    start: datetime = T0,
    fee: str = "80000.00",
    targets=("endpoint",),
) -> dict[str, Any]:
    return {
        "TrainingPlanArn": ACCOUNT_ARN + name,
        "TrainingPlanName": name,
        "Status": status,
        "DurationHours": days * 24,
        "DurationMinutes": 0,
        "StartTime": start,
        "EndTime": start + timedelta(days=days),
        "UpfrontFee": fee,
        "CurrencyCode": "USD",
        "TotalInstanceCount": count,
        "TargetResources": list(targets),
        "ReservedCapacitySummaries": [
            {
                "ReservedCapacityArn": "arn:aws:sagemaker:us-east-1:123456789012:reserved-capacity/rc-1234567890",
                "InstanceType": instance_type,
                "TotalInstanceCount": count,
                "Status": status,
            }
        ],
    }


def search_params(props: dict[str, str] = PROPS) -> dict[str, Any]:
    params: dict[str, Any] = {
        "TargetResources": ["endpoint"],
        "InstanceType": props["InstanceType"],
        "InstanceCount": int(props["InstanceCount"]),
        "DurationHours": int(props["DurationDays"]) * 24,
    }
    if props.get("StartTimeAfter"):
        params["StartTimeAfter"] = datetime.fromisoformat(props["StartTimeAfter"])
    if props.get("EndTimeBefore"):
        params["EndTimeBefore"] = datetime.fromisoformat(props["EndTimeBefore"])
    return params


def expect_not_found(sm: StubbedSageMaker, name: str = PLAN) -> None:
    sm.expect_error(
        "DescribeTrainingPlan", {"TrainingPlanName": name}, "ResourceNotFound", f"Training plan {name} not found"
    )


def expect_purchase(sm: StubbedSageMaker, offering_id: str, bought: dict[str, Any]) -> None:
    sm.expect(
        "CreateTrainingPlan",
        {"TrainingPlanName": PLAN, "TrainingPlanOfferingId": offering_id},
        {"TrainingPlanArn": PLAN_ARN},
    )
    sm.expect("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, bought)


# ----------------------------------------------------------------------------- Create


def test_create_buys_cheapest_offering_within_cap(cp, sm, lambda_context):
    expect_not_found(sm)
    sm.expect(
        "SearchTrainingPlanOfferings",
        search_params(),
        {
            "TrainingPlanOfferings": [
                offering("tpo-over-cap", "150000.00", T0),
                offering("tpo-dear", "95000.00", T0),
                offering("tpo-cheap", "80000.00", T0 + timedelta(days=3)),
            ]
        },
    )
    expect_purchase(sm, "tpo-cheap", plan(status="Pending", start=T0 + timedelta(days=3)))

    result = cp.handler(event("Create", PROPS), lambda_context)

    assert result["PhysicalResourceId"] == PLAN_ARN
    assert result["Data"] == {
        "TrainingPlanArn": PLAN_ARN,
        "TrainingPlanName": PLAN,
        "StartTime": "2026-01-13T11:30:00Z",
        "EndTime": "2026-01-20T11:30:00Z",
        "UpfrontFee": "80000.00",
        "CurrencyCode": "USD",
        "InstanceType": "ml.p5e.48xlarge",
        "InstanceCount": "4",
        "Status": "Pending",
    }
    assert all(isinstance(v, str) for v in result["Data"].values())
    assert len(json.dumps(result)) < 4000


def test_create_breaks_fee_tie_by_earliest_start(cp, sm, lambda_context):
    expect_not_found(sm)
    sm.expect(
        "SearchTrainingPlanOfferings",
        search_params(),
        {
            "TrainingPlanOfferings": [
                offering("tpo-later", "80000.00", T0 + timedelta(days=5)),
                offering("tpo-earlier", "80000", T0 + timedelta(days=1)),
            ]
        },
    )
    expect_purchase(sm, "tpo-earlier", plan(status="Pending"))

    assert cp.handler(event("Create", PROPS), lambda_context)["PhysicalResourceId"] == PLAN_ARN


def test_create_with_no_offering_within_cap_lists_offerings_and_buys_nothing(cp, sm, lambda_context):
    props = {**PROPS, "MaxUpfrontFeeUsd": "50000"}
    expect_not_found(sm)
    sm.expect(
        "SearchTrainingPlanOfferings",
        search_params(props),
        {
            "TrainingPlanOfferings": [
                offering(f"tpo-{i}", f"{60000 + i * 1000}.00", T0 + timedelta(days=i)) for i in range(8)
            ]
        },
    )
    # No CreateTrainingPlan is queued: the Stubber would fail the test on any purchase attempt.

    with pytest.raises(cp.NoCapacityOfferingError) as caught:
        cp.handler(event("Create", props), lambda_context)

    message = str(caught.value)
    assert "nothing was bought" in message
    assert "MaxUpfrontFeeUsd 50000" in message
    assert "raise MaxUpfrontFeeUsd to at least 60000.00" in message
    listed = [line for line in message.splitlines() if line.startswith("- ")]
    assert len(listed) == 5  # at most five, the cheapest first
    assert listed[0].startswith("- 60000.00 USD, start 2026-01-10T11:30:00Z, end 2026-01-17T11:30:00Z, 7d 0h")
    assert "64000.00" in listed[4] and "65000.00" not in message
    assert len(message.encode()) < 4000


def test_create_filters_offerings_outside_the_window(cp, sm, lambda_context):
    props = {**PROPS, **WINDOW}
    expect_not_found(sm)
    sm.expect(
        "SearchTrainingPlanOfferings",
        search_params(props),
        {
            "TrainingPlanOfferings": [
                offering("tpo-too-early", "10000.00", datetime(2026, 1, 9, 11, 30, tzinfo=UTC)),
                offering("tpo-too-late", "20000.00", datetime(2026, 2, 5, 11, 30, tzinfo=UTC)),
                offering("tpo-fits", "90000.00", datetime(2026, 1, 20, 11, 30, tzinfo=UTC)),
            ]
        },
    )
    expect_purchase(sm, "tpo-fits", plan(status="Pending", start=datetime(2026, 1, 20, 11, 30, tzinfo=UTC)))

    assert cp.handler(event("Create", props), lambda_context)["Data"]["StartTime"] == "2026-01-20T11:30:00Z"


def test_create_with_only_out_of_window_offerings_says_why(cp, sm, lambda_context):
    props = {**PROPS, **WINDOW}
    expect_not_found(sm)
    sm.expect(
        "SearchTrainingPlanOfferings",
        search_params(props),
        {
            "TrainingPlanOfferings": [
                offering("tpo-too-late", "20000.00", datetime(2026, 2, 5, 11, 30, tzinfo=UTC)),
            ]
        },
    )

    with pytest.raises(cp.NoCapacityOfferingError, match="ends after EndTimeBefore 2026-02-10T00:00:00Z"):
        cp.handler(event("Create", props), lambda_context)


def test_create_skips_offerings_of_another_duration_or_instance_type(cp, sm, lambda_context):
    expect_not_found(sm)
    sm.expect(
        "SearchTrainingPlanOfferings",
        search_params(),
        {
            "TrainingPlanOfferings": [
                offering("tpo-longer", "1000.00", T0, days=14),
                offering("tpo-other-type", "2000.00", T0, instance_type="ml.p5.48xlarge"),
                offering("tpo-right", "3000.00", T0, extra_hours=-1),  # 6d 23h still counts as 7 days
            ]
        },
    )
    expect_purchase(sm, "tpo-right", plan(status="Pending"))

    assert cp.handler(event("Create", PROPS), lambda_context)["PhysicalResourceId"] == PLAN_ARN


def test_create_with_no_offerings_at_all_buys_nothing(cp, sm, lambda_context):
    expect_not_found(sm)
    sm.expect("SearchTrainingPlanOfferings", search_params(), {"TrainingPlanOfferings": []})

    with pytest.raises(cp.NoCapacityOfferingError, match=r"No capacity plan offering for plan .*nothing was bought"):
        cp.handler(event("Create", PROPS), lambda_context)


def test_create_refuses_non_usd_offerings(cp, sm, lambda_context):
    expect_not_found(sm)
    sm.expect(
        "SearchTrainingPlanOfferings",
        search_params(),
        {
            "TrainingPlanOfferings": [
                offering("tpo-eur", "1000.00", T0, currency="EUR"),
            ]
        },
    )

    with pytest.raises(cp.CapacityPlanCurrencyError, match=r"priced in EUR, not USD.*nothing was bought"):
        cp.handler(event("Create", PROPS), lambda_context)


def test_create_ignores_non_usd_offering_when_a_usd_one_fits(cp, sm, lambda_context):
    expect_not_found(sm)
    sm.expect(
        "SearchTrainingPlanOfferings",
        search_params(),
        {
            "TrainingPlanOfferings": [
                offering("tpo-eur", "1000.00", T0, currency="EUR"),
                offering("tpo-usd", "90000.00", T0),
            ]
        },
    )
    expect_purchase(sm, "tpo-usd", plan(status="Pending"))

    assert cp.handler(event("Create", PROPS), lambda_context)["PhysicalResourceId"] == PLAN_ARN


def test_create_after_partial_failure_adopts_existing_plan_without_buying(cp, sm, lambda_context):
    sm.expect("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, plan(status="Active"))
    # No search and no purchase are queued.

    result = cp.handler(event("Create", PROPS), lambda_context)

    assert result["PhysicalResourceId"] == PLAN_ARN
    assert result["Data"]["Status"] == "Active"
    assert result["Data"]["EndTime"] == "2026-01-17T11:30:00Z"


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        (plan(count=8), "InstanceCount is 8, declared 4"),
        (plan(instance_type="ml.p5en.48xlarge"), "InstanceType is ml.p5en.48xlarge, declared ml.p5e.48xlarge"),
        (plan(days=14), "duration is 14d 0h, declared DurationDays 7"),
        (plan(targets=("training-job",)), "it targets training-job, not endpoints"),
    ],
)
def test_create_refuses_existing_plan_of_another_shape(cp, sm, lambda_context, existing, expected):
    sm.expect("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, existing)
    if expected.startswith("duration"):  # an extension could explain it: the plan's history has none
        sm.expect("DescribeTrainingPlanExtensionHistory", {"TrainingPlanArn": PLAN_ARN}, {"TrainingPlanExtensions": []})

    with pytest.raises(cp.CapacityPlanConflictError) as caught:
        cp.handler(event("Create", PROPS), lambda_context)

    assert expected in str(caught.value)
    assert "Nothing was bought" in str(caught.value)
    assert "new PlanName" in str(caught.value)


def test_create_refuses_existing_failed_plan(cp, sm, lambda_context):
    failed = {**plan(status="Failed"), "StatusMessage": "Payment declined"}
    sm.expect("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, failed)

    with pytest.raises(cp.CapacityPlanConflictError, match=r"status is Failed \(Payment declined\)"):
        cp.handler(event("Create", PROPS), lambda_context)


def test_create_adopts_plan_created_concurrently_instead_of_buying_again(cp, sm, lambda_context):
    expect_not_found(sm)
    sm.expect(
        "SearchTrainingPlanOfferings",
        search_params(),
        {"TrainingPlanOfferings": [offering("tpo-cheap", "80000.00", T0)]},
    )
    sm.expect_error(
        "CreateTrainingPlan",
        {"TrainingPlanName": PLAN, "TrainingPlanOfferingId": "tpo-cheap"},
        "ResourceInUse",
        "Training plan already exists",
    )
    sm.expect("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, plan(status="Pending"))

    assert cp.handler(event("Create", PROPS), lambda_context)["PhysicalResourceId"] == PLAN_ARN


def test_create_reports_offering_when_bought_plan_is_not_readable_yet(cp, sm, lambda_context):
    expect_not_found(sm)
    sm.expect(
        "SearchTrainingPlanOfferings",
        search_params(),
        {"TrainingPlanOfferings": [offering("tpo-cheap", "80000.00", T0)]},
    )
    sm.expect(
        "CreateTrainingPlan",
        {"TrainingPlanName": PLAN, "TrainingPlanOfferingId": "tpo-cheap"},
        {"TrainingPlanArn": PLAN_ARN},
    )
    sm.expect_error("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, "ResourceNotFound", "not found")

    result = cp.handler(event("Create", PROPS), lambda_context)

    assert result["PhysicalResourceId"] == PLAN_ARN
    assert result["Data"]["Status"] == "Pending"
    assert result["Data"]["UpfrontFee"] == "80000.00"
    assert result["Data"]["StartTime"] == "2026-01-10T11:30:00Z"


def test_create_propagates_unexpected_describe_errors_without_buying(cp, sm, lambda_context):
    sm.expect_error("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, "AccessDeniedException", "not authorized")

    with pytest.raises(Exception, match="AccessDeniedException"):
        cp.handler(event("Create", PROPS), lambda_context)


# ----------------------------------------------------------------------------- Update / Delete


def test_update_with_same_identity_buys_nothing_and_keeps_id(cp, sm, lambda_context):
    old = {**PROPS, **WINDOW}
    new = {**old, "MaxUpfrontFeeUsd": "120000", "StartTimeAfter": "2026-01-10T00:00:00+00:00"}
    sm.expect("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, plan(status="Active"))

    result = cp.handler(event("Update", new, old=old, physical_id=PLAN_ARN), lambda_context)

    assert result["PhysicalResourceId"] == PLAN_ARN
    assert result["Data"]["TrainingPlanArn"] == PLAN_ARN
    assert result["Data"]["Status"] == "Active"


def test_create_adopts_a_plan_its_extension_made_longer(cp, sm, lambda_context):
    extended = {**plan(days=17), "StartTime": T0}
    sm.expect("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, extended)
    sm.expect(
        "DescribeTrainingPlanExtensionHistory",
        {"TrainingPlanArn": PLAN_ARN},
        {
            "TrainingPlanExtensions": [
                {
                    "TrainingPlanExtensionOfferingId": "tpeo-failed",
                    "StartDate": T0 + timedelta(days=3),
                    "Status": "Failed",
                },
                {
                    "TrainingPlanExtensionOfferingId": "tpeo-1",
                    "StartDate": T0 + timedelta(days=7),
                    "Status": "Active",
                    "EndDate": T0 + timedelta(days=17),
                    "DurationHours": 240,
                },
            ]
        },
    )

    result = cp.handler(event("Create", {**PROPS, "Purchase": "not-approved", **WINDOW}), lambda_context)

    assert result["PhysicalResourceId"] == PLAN_ARN
    assert result["Data"]["EndTime"] == "2026-01-27T11:30:00Z"  # as the plan is now, extended


@pytest.fixture
def cfn(cp):
    """The stack's status as DescribeStacks answers it (``stack_status``), checked against the model."""
    stub = Stubber(cp._cloudformation())
    with stub:
        yield stub
        stub.assert_no_pending_responses()


STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/llm/guid"


def stack_status(cfn: Stubber, status: str) -> None:
    assert_valid_request("cloudformation", "DescribeStacks", {"StackName": STACK_ID})
    cfn.add_response(
        "describe_stacks",
        {"Stacks": [{"StackName": "llm", "StackId": STACK_ID, "StackStatus": status, "CreationTime": T0}]},
        {"StackName": STACK_ID},
    )


def test_update_back_from_a_refused_change_is_accepted_while_the_stack_rolls_back(cp, sm, cfn, lambda_context):
    refused = {**PROPS, "InstanceCount": "8"}
    stack_status(cfn, "UPDATE_ROLLBACK_IN_PROGRESS")
    sm.expect("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, plan(status="Active"))

    result = cp.handler(event("Update", PROPS, old=refused, physical_id=PLAN_ARN), lambda_context)

    assert result["PhysicalResourceId"] == PLAN_ARN and result["Data"]["InstanceCount"] == "4"


def test_a_change_is_refused_when_the_stack_status_cannot_be_read(cp, sm, cfn, lambda_context):
    cfn.add_client_error(
        "describe_stacks",
        service_error_code="AccessDenied",
        http_status_code=403,
        expected_params={"StackName": STACK_ID},
    )

    with pytest.raises(cp.CapacityPlanImmutableError, match="InstanceCount 8 -> 4"):
        cp.handler(event("Update", PROPS, old={**PROPS, "InstanceCount": "8"}, physical_id=PLAN_ARN), lambda_context)


def test_update_changing_identity_is_refused_naming_fields(cp, sm, cfn, lambda_context):
    new = {**PROPS, "InstanceCount": "8", "DurationDays": "14", "EndTimeBefore": "2026-03-01T00:00:00Z"}
    stack_status(cfn, "UPDATE_IN_PROGRESS")

    with pytest.raises(cp.CapacityPlanImmutableError) as caught:
        cp.handler(event("Update", new, old=PROPS, physical_id=PLAN_ARN), lambda_context)

    message = str(caught.value)
    assert "InstanceCount 4 -> 8" in message
    assert "DurationDays 7 -> 14" in message
    assert "EndTimeBefore (not set) -> 2026-03-01T00:00:00Z" in message
    assert "InstanceType" not in message and "StartTimeAfter" not in message
    assert "new PlanName" in message


def test_update_renaming_plan_is_refused(cp, sm, lambda_context):
    with pytest.raises(cp.CapacityPlanImmutableError, match=f"PlanName {PLAN} -> other-plan"):
        cp.handler(
            event("Update", {**PROPS, "PlanName": "other-plan"}, old=PROPS, physical_id=PLAN_ARN), lambda_context
        )


def test_update_of_missing_plan_fails_clearly(cp, sm, lambda_context):
    expect_not_found(sm)

    with pytest.raises(cp.CapacityPlanNotFoundError, match="was not found"):
        cp.handler(event("Update", PROPS, old=PROPS, physical_id=PLAN_ARN), lambda_context)


def test_delete_retains_plan_and_calls_nothing(cp, sm, lambda_context):
    # The Stubber has no responses queued, so any AWS call would fail this test.
    result = cp.handler(event("Delete", PROPS, physical_id=PLAN_ARN), lambda_context)

    assert result == {"PhysicalResourceId": PLAN_ARN}


def test_delete_with_invalid_properties_still_succeeds(cp, sm, lambda_context):
    assert cp.handler(event("Delete", {"PlanName": "-"}, physical_id="failed-create"), lambda_context) == {
        "PhysicalResourceId": "failed-create"
    }


# ----------------------------------------------------------------------------- validation


def test_missing_consent_property_is_refused_before_any_call(cp, sm, lambda_context):
    props = {k: v for k, v in PROPS.items() if k != "Purchase"}

    with pytest.raises(cp.CapacityPlanPropertiesError, match="Purchase: required field is missing; fix: add Purchase"):
        cp.handler(event("Create", props), lambda_context)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({"Purchase": "true"}, "Purchase is 'true'; it must be 'approved' (consent given on the deploy command)"),
        (
            {"PurchaseAcknowledged": "true"},
            "PurchaseAcknowledged: unknown property (misspelt?); allowed: ConsentName, DurationDays",
        ),
        ({"StartTimeAftr": "2026-01-10T00:00:00Z"}, "StartTimeAftr: unknown property (misspelt?)"),
        ({"PlanName": "a-" * 32 + "b"}, "is not a valid training plan name; use 1-64 letters"),
        ({"InstanceCount": "3"}, "InstanceCount 3 is not offered; use one of 1, 2, 4, 8, 16, 32, 64"),
        ({"InstanceCount": "four"}, "InstanceCount must be a whole number, got 'four'"),
        ({"DurationDays": "183"}, "DurationDays 183 is out of range; use whole days 1-182"),
        ({"DurationDays": "0"}, "DurationDays 0 is out of range"),
        ({"PlanName": "my_plan"}, "PlanName 'my_plan' is not a valid training plan name"),
        ({"InstanceType": "p5e.48xlarge"}, "InstanceType 'p5e.48xlarge' is not a SageMaker instance type"),
        ({"MaxUpfrontFeeUsd": "$1,000"}, "MaxUpfrontFeeUsd '$1,000' is not a number"),
        ({"MaxUpfrontFeeUsd": "Infinity"}, "must be a finite amount greater than 0"),
        ({"MaxUpfrontFeeUsd": "0"}, "must be a finite amount greater than 0"),
        ({"StartTimeAfter": "2026-01-10"}, "StartTimeAfter '2026-01-10' has no time zone"),
        ({"EndTimeBefore": "next week"}, "EndTimeBefore 'next week' is not an ISO-8601 date-time"),
        (
            {"StartTimeAfter": "2026-02-01T00:00:00Z", "EndTimeBefore": "2026-01-01T00:00:00Z"},
            "EndTimeBefore 2026-01-01T00:00:00Z must be later than StartTimeAfter",
        ),
        (
            {"StartTimeAfter": "2026-01-01T00:00:00Z", "EndTimeBefore": "2026-01-05T00:00:00Z"},
            "shorter than DurationDays 7",
        ),
    ],
)
def test_invalid_properties_are_refused_with_clear_message(cp, sm, lambda_context, override, expected):
    with pytest.raises(cp.CapacityPlanPropertiesError) as caught:
        cp.handler(event("Create", {**PROPS, **override}), lambda_context)

    assert expected in str(caught.value)
    assert "nothing was bought" in str(caught.value)


def test_every_invalid_property_is_reported_at_once(cp, sm, lambda_context):
    props = {**PROPS, "InstanceCount": "3", "DurationDays": "500", "Purchase": "no"}

    with pytest.raises(cp.CapacityPlanPropertiesError) as caught:
        cp.handler(event("Create", props), lambda_context)

    assert [line.split()[0] for line in str(caught.value).splitlines()[1:]] == ["-", "-", "-"]
    for field in ("InstanceCount", "DurationDays", "Purchase"):
        assert field in str(caught.value)


def test_optional_empty_window_strings_mean_no_window(cp):
    props = cp.parse_properties({**PROPS, "StartTimeAfter": "", "EndTimeBefore": " "})
    assert props.start_time_after is None and props.end_time_before is None


# ----------------------------------------------------------------------------- properties (hypothesis)

_text = st.one_of(
    st.text(max_size=120), st.sampled_from(["", "true", "4", "7", "1e9", "NaN", "-0", "2026-01-01T00:00:00Z"])
)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(sorted(PROPS) + ["StartTimeAfter", "EndTimeBefore", "Other"]), _text))
def test_any_properties_either_parse_or_fail_with_short_message(cp, raw):
    try:
        props = cp.parse_properties(raw)
    except cp.CapacityPlanPropertiesError as error:
        assert len(str(error).encode()) < 4000
        assert "nothing was bought" in str(error)
    else:
        assert props.instance_count in (1, 2, 4, 8, 16, 32, 64)
        assert 1 <= props.duration_days <= 182
        assert props.max_upfront_fee_usd > 0
        assert props.purchase in ("approved", "not-approved")


_fees = st.one_of(
    st.decimals(min_value=0, max_value=10**7, places=2, allow_nan=False, allow_infinity=False).map(str),
    st.text(max_size=12),
)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    st.lists(st.tuples(_fees, st.sampled_from(["USD", "USD", "EUR", ""]), st.integers(0, 60)), max_size=12),
    st.decimals(min_value=1, max_value=10**7, places=2, allow_nan=False, allow_infinity=False),
)
def test_selection_never_exceeds_cap_and_picks_the_cheapest(cp, raw_offerings, cap):
    props = cp.parse_properties({**PROPS, "MaxUpfrontFeeUsd": str(cap)})
    offerings = [
        cp.Offering.from_api(offering(f"tpo-{i}", fee, T0 + timedelta(days=d), currency=cur))
        for i, (fee, cur, d) in enumerate(raw_offerings)
    ]
    affordable = [o.fee for o in offerings if o.currency == "USD" and o.fee is not None and o.fee <= cap]
    try:
        chosen = cp.select_offering(offerings, props)
    except (cp.NoCapacityOfferingError, cp.CapacityPlanCurrencyError) as error:
        assert not affordable
        assert len(str(error).encode()) < 4000
    else:
        assert chosen.currency == "USD"
        assert chosen.fee is not None and chosen.fee <= cap
        assert chosen.fee == min(affordable)


def test_parse_fee_reads_api_strings(cp):
    assert cp.parse_fee("1,234.50") == Decimal("1234.50")
    assert cp.parse_fee("xxxx.xx") is None
    assert cp.parse_fee("-1") is None
    assert cp.parse_fee(None) is None


# ----------------------------------------------------------------------------- consent given at deploy


def test_create_without_consent_never_searches_or_buys(cp, sm, lambda_context):
    expect_not_found(sm)  # the only call: no SearchTrainingPlanOfferings, no CreateTrainingPlan

    with pytest.raises(
        cp.CapacityPlanConsentError,
        match=(
            rf"'{PLAN}' does not exist and this deploy did not approve buying it; nothing was bought\. To buy 4 x "
            r"ml\.p5e\.48xlarge for 7 days .*at most 100000 USD.*deploy this stack with -c purchase=" + PLAN
        ),
    ):
        cp.handler(event("Create", {**PROPS, "Purchase": "not-approved"}), lambda_context)


def test_without_consent_the_message_names_the_config_name_the_deploy_command_takes(cp, sm, lambda_context):
    """PlanName is stack-prefixed; the consent is -c purchase=<config name> (ConsentName)."""
    prefixed = "SageMakerLlm-" + PLAN
    expect_not_found(sm, prefixed)

    with pytest.raises(
        cp.CapacityPlanConsentError,
        match=(rf"Capacity plan '{prefixed}' does not exist .*deploy this stack with -c purchase={PLAN}\.$"),
    ):
        cp.handler(
            event("Create", {**PROPS, "PlanName": prefixed, "ConsentName": PLAN, "Purchase": "not-approved"}),
            lambda_context,
        )


@pytest.mark.parametrize("value", ["llm_p5e", "x" * 65, ""])
def test_a_bad_consent_name_is_refused_before_any_call(cp, sm, lambda_context, value):
    with pytest.raises(
        cp.CapacityPlanPropertiesError,
        match=re.escape(f"nothing was bought):\n- ConsentName '{value}' is not a valid plan name; use 1-64"),
    ):
        cp.handler(event("Create", {**PROPS, "ConsentName": value}), lambda_context)


def test_create_without_consent_adopts_a_plan_bought_earlier(cp, sm, lambda_context):
    sm.expect("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, plan(status="Active"))

    result = cp.handler(event("Create", {**PROPS, "Purchase": "not-approved"}), lambda_context)

    assert result["PhysicalResourceId"] == PLAN_ARN and result["Data"]["Status"] == "Active"


def test_update_dropping_the_consent_buys_nothing(cp, sm, lambda_context):
    sm.expect("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, plan(status="Active"))

    result = cp.handler(
        event("Update", {**PROPS, "Purchase": "not-approved"}, old=PROPS, physical_id=PLAN_ARN), lambda_context
    )

    assert result["PhysicalResourceId"] == PLAN_ARN


# ----------------------------------------------------------------------------- the event itself


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"RequestType": "Replace"}, "RequestType: got 'Replace'; allowed: 'Create', 'Update' or 'Delete'"),
        ({"RequestType": None}, "RequestType: got None; allowed: 'Create', 'Update' or 'Delete'"),
        ({"ResourceType": "Custom::Other"}, "ResourceType 'Custom::Other' is not served here"),
    ],
)
def test_bad_events_are_refused_before_any_call(cp, sm, lambda_context, change, expected):
    with pytest.raises(cp.CapacityPlanEventError) as caught:
        cp.handler({**event("Create", PROPS), **change}, lambda_context)
    assert expected in str(caught.value) and "nothing was done" in str(caught.value)


def test_missing_request_type_is_refused(cp, sm, lambda_context):
    body = event("Create", PROPS)
    del body["RequestType"]
    with pytest.raises(cp.CapacityPlanEventError, match="RequestType: required field is missing"):
        cp.handler(body, lambda_context)


def test_update_needs_physical_id_and_old_properties(cp, sm, lambda_context):
    with pytest.raises(
        cp.CapacityPlanEventError, match="Update events need PhysicalResourceId and OldResourceProperties"
    ):
        cp.handler(event("Update", PROPS), lambda_context)


def test_delete_needs_a_physical_id(cp, sm, lambda_context):
    with pytest.raises(cp.CapacityPlanEventError, match="Delete events need PhysicalResourceId"):
        cp.handler(event("Delete", PROPS), lambda_context)


def test_non_object_event_is_refused(cp, sm, lambda_context):
    with pytest.raises(cp.CapacityPlanEventError, match="not a JSON object"):
        cp.handler(["Create"], lambda_context)


# ----------------------------------------------------------------------------- extension (ExtendTrainingPlan)

EXT = {
    "ServiceToken": PROPS["ServiceToken"],
    "PlanName": PLAN,
    "ExtendUntil": "2026-01-27T11:30:00Z",
    "MaxUpfrontFeeUsd": "50000",
    "Extend": "approved",
}
PLAN_END = T0 + timedelta(days=7)  # plan() ends here: 2026-01-17T11:30:00Z


def ext_event(request_type: str, props: dict[str, str], **kwargs: Any) -> dict[str, Any]:
    body = event(request_type, props, **kwargs)
    body["ResourceType"] = "Custom::SageMakerCapacityPlanExtension"
    return body


def ext_offering(
    oid: str, fee: str, days: int = 10, start: datetime = PLAN_END, currency: str = "USD"
) -> dict[str, Any]:
    return {
        "TrainingPlanExtensionOfferingId": oid,
        "AvailabilityZone": "us-east-1a",
        "StartDate": start,
        "EndDate": start + timedelta(days=days),
        "DurationHours": days * 24,
        "UpfrontFee": fee,
        "CurrencyCode": currency,
    }


def expect_plan_and_history(
    sm: StubbedSageMaker, history: list[dict[str, Any]] | None = None, status: str = "Active"
) -> None:
    sm.expect("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, plan(status=status))
    sm.expect(
        "DescribeTrainingPlanExtensionHistory", {"TrainingPlanArn": PLAN_ARN}, {"TrainingPlanExtensions": history or []}
    )


def test_extension_buys_the_cheapest_offering_that_reaches_the_date(cp, sm, lambda_context):
    expect_plan_and_history(sm)
    sm.expect(
        "SearchTrainingPlanOfferings",
        {"TrainingPlanArn": PLAN_ARN, "DurationHours": 240},
        {
            "TrainingPlanOfferings": [],
            "TrainingPlanExtensionOfferings": [
                ext_offering("tpeo-dear", "45000.00"),
                ext_offering("tpeo-short", "1000.00", days=5),
                ext_offering("tpeo-gap", "2000.00", start=PLAN_END + timedelta(days=1)),
                ext_offering("tpeo-cheap", "30000.00"),
                ext_offering("tpeo-over", "60000.00"),
            ],
        },
    )
    sm.expect("ExtendTrainingPlan", {"TrainingPlanExtensionOfferingId": "tpeo-cheap"}, {"TrainingPlanExtensions": []})

    result = cp.handler(ext_event("Create", EXT), lambda_context)

    assert result == {
        "PhysicalResourceId": f"{PLAN}/extended-until-2026-01-27T11:30:00Z",
        "Data": {
            "TrainingPlanArn": PLAN_ARN,
            "EndTime": "2026-01-27T11:30:00Z",
            "UpfrontFee": "30000.00",
            "CurrencyCode": "USD",
            "ExtensionOfferingId": "tpeo-cheap",
        },
    }


def test_extension_is_never_bought_twice(cp, sm, lambda_context):
    expect_plan_and_history(
        sm,
        history=[
            {
                "TrainingPlanExtensionOfferingId": "tpeo-cheap",
                "Status": "Pending",
                "EndDate": datetime(2026, 1, 27, 11, 30, tzinfo=UTC),
                "UpfrontFee": "30000.00",
                "CurrencyCode": "USD",
            }
        ],
    )

    result = cp.handler(ext_event("Create", EXT), lambda_context)  # retry: no Search, no Extend queued

    assert result["Data"]["ExtensionOfferingId"] == "tpeo-cheap"


def test_a_plan_already_long_enough_is_not_extended(cp, sm, lambda_context):
    sm.expect("DescribeTrainingPlan", {"TrainingPlanName": PLAN}, plan(status="Active", days=30))

    result = cp.handler(ext_event("Create", EXT), lambda_context)

    assert result["Data"]["UpfrontFee"] == "" and result["Data"]["EndTime"] == "2026-02-09T11:30:00Z"


def test_extension_without_consent_buys_nothing_and_says_how(cp, sm, lambda_context):
    expect_plan_and_history(sm)

    with pytest.raises(
        cp.CapacityPlanConsentError,
        match=(
            rf"ends 2026-01-17T11:30:00Z; extending it to 2026-01-27T11:30:00Z \(10 days, at most 50000 USD.*"
            rf"Deploy this stack with -c extend={PLAN}"
        ),
    ):
        cp.handler(ext_event("Create", {**EXT, "Extend": "not-approved"}), lambda_context)


def test_extension_without_a_fitting_offering_buys_nothing(cp, sm, lambda_context):
    expect_plan_and_history(sm)
    sm.expect(
        "SearchTrainingPlanOfferings",
        {"TrainingPlanArn": PLAN_ARN, "DurationHours": 240},
        {"TrainingPlanOfferings": [], "TrainingPlanExtensionOfferings": [ext_offering("tpeo-over", "60000.00")]},
    )

    with pytest.raises(cp.NoCapacityOfferingError, match=r"60000\.00 USD.*above MaxUpfrontFeeUsd 50000"):
        cp.handler(ext_event("Create", EXT), lambda_context)


def test_an_expired_plan_cannot_be_extended(cp, sm, lambda_context):
    expect_plan_and_history(sm, status="Expired")

    with pytest.raises(cp.CapacityPlanConflictError, match="is Expired .*only Active or Scheduled plans"):
        cp.handler(ext_event("Create", EXT), lambda_context)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"Extend": "yes"}, "Extend is 'yes'; it must be 'approved'"),
        ({"ExtendUntil": "2026-01-27"}, "ExtendUntil '2026-01-27' has no time zone"),
        ({"ExtendUntl": "2026-01-27T00:00:00Z"}, "ExtendUntl: unknown property (misspelt?)"),
        ({"MaxUpfrontFeeUsd": "-5"}, "must be a finite amount greater than 0"),
    ],
)
def test_extension_properties_are_strict(cp, sm, lambda_context, change, expected):
    with pytest.raises(cp.CapacityPlanPropertiesError) as caught:
        cp.handler(ext_event("Create", {**EXT, **change}), lambda_context)
    assert expected in str(caught.value)


def test_extension_delete_retains_and_calls_nothing(cp, sm, lambda_context):
    result = cp.handler(ext_event("Delete", EXT, physical_id="x/extended-until-y"), lambda_context)
    assert result == {"PhysicalResourceId": "x/extended-until-y"}
