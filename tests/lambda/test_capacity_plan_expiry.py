"""Daily capacity plan expiry check: CapacityPlanDaysLeft per plan, 0 for missing/expired plans."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from support.aws_model import assert_valid_request

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/"


@pytest.fixture
def expiry(load_handler, monkeypatch):
    mod = load_handler("capacity_plan_expiry")
    monkeypatch.setattr(mod, "_now", lambda: NOW)
    return mod


@pytest.fixture
def stubber(expiry):
    stub = Stubber(expiry._sagemaker())
    with stub:
        yield stub
        stub.assert_no_pending_responses()


def expect_describe(stubber: Stubber, name: str, response: dict[str, Any] | None = None, error: str | None = None):
    params = {"TrainingPlanName": name}
    assert_valid_request("sagemaker", "DescribeTrainingPlan", params)
    if error:
        stubber.add_client_error(
            "describe_training_plan",
            service_error_code=error,
            service_message=f"{error} for {name}",
            http_status_code=400,
            expected_params=params,
        )
    else:
        stubber.add_response("describe_training_plan", response, params)


def plan(name: str, status: str = "Active", ends_in: timedelta | None = timedelta(days=10, hours=12)) -> dict[str, Any]:
    body: dict[str, Any] = {
        "TrainingPlanArn": ARN + name,
        "TrainingPlanName": name,
        "Status": status,
        "StartTime": NOW - timedelta(days=20),
    }
    if ends_in is not None:
        body["EndTime"] = NOW + ends_in
    return body


def emf_records(out: str) -> dict[str, dict[str, Any]]:
    """EMF records on stdout by plan name (Logger JSON lines are skipped)."""
    records = {}
    for line in out.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "_aws" in record:
            records[record["TrainingPlanName"]] = record
    return records


def test_publishes_days_left_with_plan_name_dimension(expiry, stubber, lambda_context, monkeypatch, capsys):
    monkeypatch.setenv("TRAINING_PLAN_NAMES", "plan-a")
    expect_describe(stubber, "plan-a", plan("plan-a"))

    result = expiry.handler({"source": "aws.events"}, lambda_context)

    assert result == {"plans": [{"TrainingPlanName": "plan-a", "Status": "Active", "DaysLeft": 10.5}]}
    record = emf_records(capsys.readouterr().out)["plan-a"]
    assert record["CapacityPlanDaysLeft"] == [10.5]
    directive = record["_aws"]["CloudWatchMetrics"]
    assert directive == [
        {
            "Namespace": "SageMakerLlmTest",
            "Dimensions": [["TrainingPlanName"]],
            "Metrics": [{"Name": "CapacityPlanDaysLeft", "Unit": "Count"}],
        }
    ]
    assert "service" not in record


@pytest.mark.parametrize(
    ("describe", "status"),
    [
        ({"error": "ResourceNotFound"}, "NotFound"),
        ({"response": plan("p", status="Expired", ends_in=timedelta(days=-3))}, "Expired"),
        ({"response": plan("p", status="Failed", ends_in=None)}, "Failed"),
        ({"response": plan("p", status="Active", ends_in=timedelta(hours=-1))}, "Active"),
    ],
)
def test_missing_or_expired_plan_publishes_zero(expiry, stubber, lambda_context, monkeypatch, capsys, describe, status):
    monkeypatch.setenv("TRAINING_PLAN_NAMES", "p")
    expect_describe(stubber, "p", **describe)

    result = expiry.handler({}, lambda_context)

    assert result["plans"] == [{"TrainingPlanName": "p", "Status": status, "DaysLeft": 0.0}]
    assert emf_records(capsys.readouterr().out)["p"]["CapacityPlanDaysLeft"] == [0.0]


def test_one_failing_plan_does_not_stop_the_others(expiry, stubber, lambda_context, monkeypatch, capsys):
    monkeypatch.setenv("TRAINING_PLAN_NAMES", "plan-a, plan-b ,plan-c,")
    expect_describe(stubber, "plan-a", plan("plan-a", ends_in=timedelta(days=2)))
    expect_describe(stubber, "plan-b", error="AccessDeniedException")
    expect_describe(stubber, "plan-c", plan("plan-c", status="Scheduled", ends_in=timedelta(days=30)))

    with pytest.raises(expiry.CapacityPlanExpiryCheckError) as caught:
        expiry.handler({}, lambda_context)

    assert "1 of 3 capacity plans could not be checked" in str(caught.value)
    assert "plan-b (AccessDeniedException" in str(caught.value)
    records = emf_records(capsys.readouterr().out)
    assert set(records) == {"plan-a", "plan-c"}
    assert records["plan-a"]["CapacityPlanDaysLeft"] == [2.0]
    assert records["plan-c"]["CapacityPlanDaysLeft"] == [30.0]


def test_pending_plan_without_end_time_is_a_failure_not_a_zero(expiry, stubber, lambda_context, monkeypatch, capsys):
    monkeypatch.setenv("TRAINING_PLAN_NAMES", "p")
    expect_describe(stubber, "p", plan("p", status="Pending", ends_in=None))

    with pytest.raises(expiry.CapacityPlanExpiryCheckError, match="no EndTime"):
        expiry.handler({}, lambda_context)

    assert emf_records(capsys.readouterr().out) == {}


def test_empty_plan_list_is_a_configuration_error(expiry, lambda_context, monkeypatch):
    monkeypatch.setenv("TRAINING_PLAN_NAMES", " , ")

    with pytest.raises(
        ValueError, match="TRAINING_PLAN_NAMES: got ','; allowed: the comma-separated capacity plan names"
    ):
        expiry.handler({}, lambda_context)


# ----------------------------------------------------------------------------- status parameter (on_demand binding)

PARAMETER = "/sagemaker-llm/capacity-plans/p1/status"


@pytest.fixture
def ssm(expiry):
    stub = Stubber(expiry._ssm())
    with stub:
        yield stub
        stub.assert_no_pending_responses()


def expect_ssm(ssm: Stubber, operation: str, params: dict[str, Any], response: dict[str, Any]) -> None:
    assert_valid_request("ssm", "".join(p.capitalize() for p in operation.split("_")), params)
    ssm.add_response(operation, response, params)


def test_status_is_written_when_it_changed(expiry, stubber, ssm, monkeypatch, lambda_context):
    monkeypatch.setenv("TRAINING_PLAN_NAMES", "p1")
    monkeypatch.setenv("STATUS_PARAMETERS", f"p1={PARAMETER}")
    expect_describe(stubber, "p1", plan("p1", status="Active"))
    expect_ssm(ssm, "get_parameter", {"Name": PARAMETER}, {"Parameter": {"Name": PARAMETER, "Value": "Scheduled"}})
    expect_ssm(
        ssm,
        "put_parameter",
        {"Name": PARAMETER, "Value": "Active", "Type": "String", "Overwrite": True},
        {"Version": 2},
    )

    assert expiry.handler({}, lambda_context)["plans"][0]["Status"] == "Active"


def test_status_is_not_rewritten_when_unchanged(expiry, stubber, ssm, monkeypatch, lambda_context):
    monkeypatch.setenv("TRAINING_PLAN_NAMES", "p1")
    monkeypatch.setenv("STATUS_PARAMETERS", f"p1={PARAMETER}")
    expect_describe(stubber, "p1", plan("p1", status="Active"))
    expect_ssm(ssm, "get_parameter", {"Name": PARAMETER}, {"Parameter": {"Name": PARAMETER, "Value": "Active"}})

    expiry.handler({}, lambda_context)


def test_malformed_status_parameters_are_refused(expiry, monkeypatch, lambda_context):
    monkeypatch.setenv("TRAINING_PLAN_NAMES", "p1")
    monkeypatch.setenv("STATUS_PARAMETERS", "p1")
    with pytest.raises(
        ValueError, match="STATUS_PARAMETERS: got 'p1'; allowed: comma-separated <plan name>=/<parameter name> entries"
    ):
        expiry.handler({}, lambda_context)
