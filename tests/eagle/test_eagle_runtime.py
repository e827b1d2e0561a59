"""The EAGLE job's time limit: ``max_runtime_hours`` up to the 28 days AWS documents for an optimization job's
``StoppingCondition.MaxRuntimeInSeconds``, carried into the CreateOptimizationJob request, with the state machine's
timeout and its polling (within Step Functions' history limit) following it."""

from __future__ import annotations

import re

import botocore.session
import pytest
from conftest import load_handler_module
from sagemaker_llm_cdk import ConfigurationError
from sagemaker_llm_cdk.core.settings import validated
from sagemaker_llm_cdk.eagle.state_machine import (
    EVENTS_PER_POLL,
    HISTORY_EVENT_LIMIT,
    POLL_EVENT_BUDGET,
    POLL_INTERVAL,
    poll_interval,
    run_timeout,
)
from sagemaker_llm_cdk.settings.eagle import MAX_JOB_RUNTIME_HOURS, EagleSettings
from support.aws_model import assert_valid_request
from support.eagle import build, lid

JOB_CORE = load_handler_module("eagle_job", "eagle_job_core")
TWENTY_EIGHT_DAYS_SECONDS = 2_419_200


def test_the_bound_is_the_one_aws_documents_for_the_optimization_jobs_stopping_condition():
    sagemaker = botocore.session.get_session().get_service_model("sagemaker")
    condition = sagemaker.operation_model("CreateOptimizationJob").input_shape.members["StoppingCondition"]
    member = condition.members["MaxRuntimeInSeconds"]
    assert condition.name == "StoppingCondition"  # the training jobs' type, no optimization-job variant
    assert member.metadata == {"min": 1}  # no maximum in the shape ...
    assert "The maximum value is 28 days." in member.documentation  # ... only in its documentation
    assert MAX_JOB_RUNTIME_HOURS * 3600 == TWENTY_EIGHT_DAYS_SECONDS


@pytest.mark.parametrize("hours", [1, 72, 120, MAX_JOB_RUNTIME_HOURS])
def test_max_runtime_hours_up_to_28_days_is_accepted(hours):
    assert validated(EagleSettings, {"max_runtime_hours": hours}, where="eagle").max_runtime_hours == hours


@pytest.mark.parametrize(
    ("hours", "allowed"), [(MAX_JOB_RUNTIME_HOURS + 1, "at most 672"), (0, "at least 1")], ids=["673", "0"]
)
def test_max_runtime_hours_outside_1_to_672_is_refused_with_the_range_and_the_fix(hours, allowed):
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            f"max_runtime_hours: got {hours}; allowed: {allowed}; fix: set max_runtime_hours to a value {allowed}"
        ),
    ):
        validated(EagleSettings, {"max_runtime_hours": hours}, where="eagle")


def test_the_field_names_its_source_and_range_in_the_reference():
    description = EagleSettings.model_fields["max_runtime_hours"].description or ""
    assert "At most 672 (28 days)" in description and "SageMaker API Reference, StoppingCondition" in description


def test_polling_a_whole_run_stays_within_the_execution_history_limit():
    for hours in range(1, MAX_JOB_RUNTIME_HOURS + 1):
        interval, timeout = poll_interval(hours).to_seconds(), run_timeout(hours).to_seconds()
        assert timeout / interval * EVENTS_PER_POLL <= POLL_EVENT_BUDGET < HISTORY_EVENT_LIMIT, hours
        assert interval % 60 == 0
        if hours <= 143:  # every job up to about six days is described every 5 minutes, as before
            assert interval == POLL_INTERVAL.to_seconds(), hours
        else:  # and no less often than needed: a minute less would overrun the budget
            assert timeout / (interval - 60) * EVENTS_PER_POLL > POLL_EVENT_BUDGET, hours


def test_the_longest_run_fits_a_standard_execution():
    assert run_timeout(MAX_JOB_RUNTIME_HOURS).to_hours() == 695  # 672 + 6 (dataset) + 16 (start retries) + 1
    assert run_timeout(MAX_JOB_RUNTIME_HOURS).to_hours() < 365 * 24  # a Standard execution may run a year
    assert poll_interval(MAX_JOB_RUNTIME_HOURS).to_minutes() == 21


@pytest.mark.synth
@pytest.mark.parametrize(
    ("hours", "seconds", "wait_seconds"),
    [(120, 432_000, 300), (MAX_JOB_RUNTIME_HOURS, TWENTY_EIGHT_DAYS_SECONDS, 1260)],
    ids=["120h", "28d"],
)
def test_the_limit_reaches_the_job_request_and_the_state_machine(hours, seconds, wait_seconds):
    built = build(settings={"max_runtime_hours": hours})
    variables = built.resources[lid(built.stack, built.eagle.start_function)]["Properties"]["Environment"]["Variables"]
    assert variables["MAX_RUNTIME_SECONDS"] == str(seconds)

    # the start function reads that variable into the CreateOptimizationJob request
    settings = JOB_CORE.settings_from_env(
        {
            "ROLE_ARN": "arn:aws:iam::123456789012:role/eagle-job",
            "OUTPUT_S3_URI": "s3://eagle-output/jobs",
            "MAX_RUNTIME_SECONDS": variables["MAX_RUNTIME_SECONDS"],
        }
    )
    request = JOB_CORE.build_create_request(
        name="eagle-qwen3-32b-0123456789ab",
        settings=settings,
        model_s3_uri="s3://my-weights/qwen3-32b/",
        instance_type="ml.p5e.48xlarge",
        max_instance_count=1,
        training_data_uri="s3://eagle-data/datasets/run-1/",
        training_data_type="S3Prefix",
        model_name="qwen3-32b",
        run_id="run-1",
    )
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": seconds}
    request.pop("Tags")  # checked with the regex module in tests/lambda/test_eagle_job.py
    assert_valid_request("sagemaker", "CreateOptimizationJob", request)

    assert built.definition["TimeoutSeconds"] == run_timeout(hours).to_seconds() == (hours + 23) * 3600
    assert built.states()["WaitForJob"] == {"Type": "Wait", "Seconds": wait_seconds, "Next": "DescribeJob"}
