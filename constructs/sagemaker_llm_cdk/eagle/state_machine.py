"""The EAGLE loop's Step Functions definition: build the dataset, start and watch the optimization job, record,
promote and notify; with the retry, polling and batching constants it runs by.

``EagleOptimization`` makes the functions, roles and buckets and calls ``definition`` once; every state is
created under it (so construct ids, and the template, are the loop's own).

The capture watermark moves in one place only: StartJob moves it together with the job (claim, create, commit in
one invocation; ``lambda/eagle_job``). Plan, convert and finalize only read it or say where it would go, so a run
that trains nothing, fails, or is aborted before its job exists leaves it where it was, and a run whose job exists
has moved it: every capture window is trained on once. Every Task retries the errors its service documents as
transient (``Retry`` on each; the test walks the rendered definition).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from .layout import DATASETS, MAP_RESULTS

if TYPE_CHECKING:
    from .optimization import EagleOptimization

POLL_INTERVAL = Duration.minutes(5)
"""WaitForJob's wait, unless the job's limit needs a longer one (:func:`poll_interval`)."""
HISTORY_EVENT_LIMIT = 25_000
"""Step Functions' hard quota on one Standard execution's history, events: past it the execution fails."""
EVENTS_PER_POLL = 9
"""History events of one WaitForJob -> DescribeJob -> JobFinished? round: the Wait's entered and exited, the
Task's entered, scheduled, started, succeeded and exited, the Choice's entered and exited."""
POLL_EVENT_BUDGET = 18_000
"""Events the job's wait loop may use; the other 7,000 are the dataset, start retries, record and outcome's."""
START_RETRY_INTERVAL = Duration.minutes(30)
START_RETRY_ATTEMPTS = 6
START_RETRY_BACKOFF = 2
START_RETRY_MAX_DELAY = Duration.hours(4)
DATASET_BUDGET_HOURS = 6
"""Time allowed for building the dataset, in the state machine's timeout."""
CONVERT_BATCH_OBJECTS = 25
"""Capture objects per convert invocation (Distributed Map batch)."""
CONVERT_CONCURRENCY = 20
TOLERATED_FAILURE_PERCENTAGE = 5
LAMBDA_SERVICE_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
]
DESCRIBE_RETRY_ERRORS = [
    "SageMaker.ThrottlingException",
    "SageMaker.SageMakerException",
    "SageMaker.InternalFailureException",
    "SageMaker.ServiceUnavailableException",
]
SNS_RETRY_ERRORS = [
    f"{prefix}.{name}"
    for prefix in ("SNS", "Sns")
    for name in ("ThrottledException", "InternalErrorException", "KMSThrottlingException", "KmsThrottlingException")
]
"""Publish's transient errors (botocore: InternalErrorException, KMSThrottlingException; ThrottledException is SNS's
throttling error). Step Functions names an error ``<Service>.<SDK exception class>``: the optimized integration's
service is written ``SNS`` and the AWS SDK integration's ``Sns`` (with ``KmsThrottlingException``), so both are
listed; a name that never occurs costs nothing."""
START_EXECUTION_RETRY_ERRORS = [
    "StepFunctions.ExecutionLimitExceededException",
    "StepFunctions.KmsThrottlingException",
    "StepFunctions.SfnException",
]
"""StartExecution's transient errors (botocore: ExecutionLimitExceeded, KmsThrottlingException); throttling is not
in its model and arrives as the service's own exception (``SfnException``)."""
EMPTY_WATERMARK = '{"v":1,"after":{}}'
"""The dataset builder's watermark format with nothing consumed yet (``lambda/eagle_dataset``)."""


def start_retry_hours() -> float:
    """Longest total wait of the StartJob retries on ResourceLimitExceededError, hours."""
    total, delay = 0.0, START_RETRY_INTERVAL.to_seconds()
    for _ in range(START_RETRY_ATTEMPTS):
        total += min(delay, START_RETRY_MAX_DELAY.to_seconds())
        delay *= START_RETRY_BACKOFF
    return total / 3600


def run_timeout(max_runtime_hours: int) -> Duration:
    """The state machine's timeout: the job's limit plus dataset, start retries, polling and an hour."""
    return Duration.hours(max_runtime_hours + DATASET_BUDGET_HOURS + math.ceil(start_retry_hours()) + 1)


def poll_interval(max_runtime_hours: int) -> Duration:
    """WaitForJob's wait: :data:`POLL_INTERVAL`, or the whole minutes that keep a wait loop lasting the whole
    :func:`run_timeout` within :data:`POLL_EVENT_BUDGET` history events (jobs over about 143 hours; 21 minutes for
    28 days, the longest an optimization job may run)."""
    polls = POLL_EVENT_BUDGET // EVENTS_PER_POLL
    minutes = math.ceil(run_timeout(max_runtime_hours).to_minutes() / polls)
    return Duration.minutes(max(int(POLL_INTERVAL.to_minutes()), minutes))


# ================================================================ state machine
def definition(eagle: EagleOptimization, *, dataset_prefix_uri: str) -> sfn.IChainable:
    """The loop's states, every one created under ``eagle``: dataset, job start, wait loop, record, outcome."""
    notify_failure = _notify_failure(eagle)
    done = sfn.Succeed(eagle, "Done")

    prepare = sfn.Pass(
        eagle,
        "Prepare",
        comment="The run id is the execution name; the input is ignored.",
        parameters={
            "run": {
                "run_id": sfn.JsonPath.string_at("$$.Execution.Name"),
                "started_at": sfn.JsonPath.string_at("$$.Execution.StartTime"),
            }
        },
    )
    start = _start_job(eagle, notify_failure)
    _watch_job(eagle, start, done, notify_failure)

    if eagle.settings.dataset.source in ("capture", "front_door"):
        first = _capture_dataset(eagle, start, notify_failure, done)
    else:
        first = _user_dataset(eagle, start, notify_failure, dataset_prefix_uri)
    return prepare.next(first)


def _notify_failure(eagle: EagleOptimization) -> tasks.SnsPublish:
    """Publish the error and cause of any failed step, then fail the run (``RunFailed``)."""
    notify_failure = tasks.SnsPublish(
        eagle,
        "NotifyFailure",
        topic=eagle.topic,
        subject=f"EAGLE run failed: {eagle.model_name}"[:100],
        message=sfn.TaskInput.from_object(
            {
                "model_name": eagle.model_name,
                "run_id": sfn.JsonPath.string_at("$$.Execution.Name"),
                "execution": sfn.JsonPath.string_at("$$.Execution.Id"),
                "error": sfn.JsonPath.string_at("$.error.Error"),
                "cause": sfn.JsonPath.string_at("$.error.Cause"),
            }
        ),
        result_path=sfn.JsonPath.DISCARD,
    )
    _retry_notification(notify_failure)
    notify_failure.next(sfn.Fail(eagle, "RunFailed", error_path="$.error.Error", cause_path="$.error.Cause"))
    return notify_failure


def _start_job(eagle: EagleOptimization, notify_failure: sfn.IChainable) -> tasks.LambdaInvoke:
    """``StartJob``: create the optimization job (and move the watermark with it); quota errors retried for hours."""
    settings = eagle.settings
    start = _lambda_step(
        eagle,
        "StartJob",
        eagle.start_function,
        notify_failure,
        result_path="$.start",
        payload={
            "model_name": eagle.model_name,
            "model_s3_uri": eagle.component.spec.model_data_s3_uri,
            "architecture": eagle.component.spec.architecture,
            "deployment_instance_type": eagle.job_instance_type,
            "max_instance_count": settings.max_instance_count,
            "training_data": {
                "s3_uri": sfn.JsonPath.string_at("$.dataset.training_data_s3_uri"),
                "s3_data_type": sfn.JsonPath.string_at("$.dataset.s3_data_type"),
            },
            "run_id": sfn.JsonPath.string_at("$.run.run_id"),
            "dataset_summary": sfn.JsonPath.object_at("$.dataset.summary"),
            # a gated JumpStart model: the licence accepted in config (accept_eula) reaches ModelSource.S3
            **({"accept_eula": True} if eagle.component.accepts_eula else {}),
            # captured traffic: the job's start moves the watermark with the job (null: it stays)
            **(
                {"watermark": sfn.JsonPath.object_at("$.dataset.watermark_commit")}
                if settings.dataset.source in ("capture", "front_door")
                else {}
            ),
        },
    )
    start.add_retry(
        errors=["ResourceLimitExceededError"],
        interval=START_RETRY_INTERVAL,
        max_attempts=START_RETRY_ATTEMPTS,
        backoff_rate=START_RETRY_BACKOFF,
        max_delay=START_RETRY_MAX_DELAY,
    )
    return start


def _watch_job(
    eagle: EagleOptimization, start: tasks.LambdaInvoke, done: sfn.IChainable, notify_failure: sfn.IChainable
) -> None:
    """After ``start``: wait, describe the job until it is terminal, then record the run and act on its outcome."""
    interval = poll_interval(eagle.settings.max_runtime_hours)
    wait = sfn.Wait(eagle, "WaitForJob", time=sfn.WaitTime.duration(interval))
    describe = tasks.CallAwsService(
        eagle,
        "DescribeJob",
        service="sagemaker",
        action="describeOptimizationJob",
        parameters={"OptimizationJobName": sfn.JsonPath.string_at("$.start.job_name")},
        iam_resources=[eagle.job_arn_pattern],
        iam_action="sagemaker:DescribeOptimizationJob",
        result_path="$.start.job",
    )
    describe.add_retry(errors=DESCRIBE_RETRY_ERRORS, interval=Duration.seconds(30), max_attempts=6, backoff_rate=2)
    describe.add_catch(notify_failure, result_path="$.error")

    record = _lambda_step(
        eagle, "RecordRun", eagle.record_function, notify_failure, result_path="$.record", input_path="$.start"
    )  # the start output plus "job" (the final describe)
    job_outcome = _job_outcome(eagle, done, notify_failure)
    job_state = (
        sfn.Choice(eagle, "JobFinished?")
        .when(
            sfn.Condition.or_(
                *[
                    sfn.Condition.string_equals("$.start.job.OptimizationJobStatus", status)
                    for status in ("COMPLETED", "FAILED", "STOPPED")
                ]
            ),
            record.next(job_outcome),
        )
        .otherwise(wait)
    )
    start.next(wait).next(describe).next(job_state)


def _job_outcome(eagle: EagleOptimization, done: sfn.IChainable, notify_failure: sfn.IChainable) -> sfn.Choice:
    """``JobSucceeded?``: unreadable results and failed jobs are published and fail the run; a promoted head
    starts the benchmark (when there is one); any other completed job succeeds."""
    notify_job_failed = _notify_job_failed(eagle)
    notify_unparsed = _notify_unparsed(eagle, notify_failure)
    job_outcome = sfn.Choice(eagle, "JobSucceeded?").when(
        sfn.Condition.and_(
            sfn.Condition.string_equals("$.start.job.OptimizationJobStatus", "COMPLETED"),
            sfn.Condition.boolean_equals("$.record.results_unparsed", True),
        ),
        notify_unparsed,
    )
    if eagle.benchmark is not None:  # a promoted head is measured on the endpoint, before and after it is served
        job_outcome.when(
            sfn.Condition.and_(
                sfn.Condition.string_equals("$.start.job.OptimizationJobStatus", "COMPLETED"),
                sfn.Condition.string_equals("$.record.decision", "promoted"),
            ),
            _start_benchmark(eagle, done, notify_failure),
        )
    job_outcome.when(
        sfn.Condition.string_equals("$.start.job.OptimizationJobStatus", "COMPLETED"),
        done,
    ).otherwise(notify_job_failed)
    return job_outcome


def _notify_job_failed(eagle: EagleOptimization) -> tasks.SnsPublish:
    """Publish the job's failure reason, then fail the run (``JobFailed``)."""
    notify_job_failed = tasks.SnsPublish(
        eagle,
        "NotifyJobFailed",
        topic=eagle.topic,
        subject=f"EAGLE job failed: {eagle.model_name}"[:100],
        message=sfn.TaskInput.from_object(
            {
                "model_name": eagle.model_name,
                "run_id": sfn.JsonPath.string_at("$.run.run_id"),
                "job_name": sfn.JsonPath.string_at("$.start.job_name"),
                "status": sfn.JsonPath.string_at("$.start.job.OptimizationJobStatus"),
                "failure_reason": sfn.JsonPath.string_at("$.record.failure_reason"),
                "report": sfn.JsonPath.string_at("$.record.report_s3_uri"),
            }
        ),
        result_path=sfn.JsonPath.DISCARD,
    )
    _retry_notification(notify_job_failed)
    notify_job_failed.next(
        sfn.Fail(eagle, "JobFailed", error="OptimizationJobFailed", cause_path="$.start.job.OptimizationJobStatus")
    )
    return notify_job_failed


def _notify_unparsed(eagle: EagleOptimization, notify_failure: sfn.IChainable) -> tasks.SnsPublish:
    """Publish a completed job whose results could not be read, then fail the run (``ResultsUnparsed``)."""
    # The output layout of optimization jobs is not documented: a completed job whose results give no
    # numbers is never promoted (the record function decides so) and is published with the raw listing's
    # size and the report, then the run fails so it shows among failed executions.
    notify_unparsed = tasks.SnsPublish(
        eagle,
        "NotifyResultsUnparsed",
        topic=eagle.topic,
        subject=f"EAGLE results unreadable: {eagle.model_name}"[:100],
        message=sfn.TaskInput.from_object(
            {
                "model_name": eagle.model_name,
                "run_id": sfn.JsonPath.string_at("$.run.run_id"),
                "job_name": sfn.JsonPath.string_at("$.start.job_name"),
                "reason": sfn.JsonPath.string_at("$.record.reason"),
                "output_objects": sfn.JsonPath.number_at("$.record.output_listing_count"),
                "results_files": sfn.JsonPath.list_at("$.record.results_files"),
                "report": sfn.JsonPath.string_at("$.record.report_s3_uri"),
                "note": "The job completed but its results could not be read; the head was not promoted. "
                "The run record and report hold the raw listing of the job's output.",
            }
        ),
        result_path=sfn.JsonPath.DISCARD,
    )
    _retry_notification(notify_unparsed)
    notify_unparsed.add_catch(notify_failure, result_path="$.error")
    notify_unparsed.next(
        sfn.Fail(
            eagle,
            "ResultsUnparsed",
            error="ResultsUnparsed",
            cause="the optimization job's results could not be parsed; nothing promoted",
        )
    )
    return notify_unparsed


def _user_dataset(
    eagle: EagleOptimization, start: sfn.IChainable, notify_failure: sfn.IChainable, dataset_prefix_uri: str
) -> sfn.IChainable:
    """An ``s3`` or ``builtin`` dataset: check its format on a sample, then train on it as it is."""
    dataset = eagle.settings.dataset
    validate = _lambda_step(
        eagle,
        "ValidateDataset",
        eagle.validate_function,
        notify_failure,
        result_path="$.validation",
        payload={"s3_uri": dataset.s3_uri, "s3_data_type": "S3Prefix"},
    )
    use_dataset = sfn.Pass(
        eagle,
        "UseDataset",
        result_path="$.dataset",
        parameters={
            "training_data_s3_uri": dataset.s3_uri,
            "s3_data_type": "S3Prefix",
            "summary": {
                key: value
                for key, value in {
                    "source": dataset.source,
                    "builtin_name": dataset.builtin_name,
                    "s3_uri": dataset_prefix_uri,
                    "format": sfn.JsonPath.string_at("$.validation.format"),
                }.items()
                if value is not None
            },
        },
    )
    return validate.next(use_dataset).next(start)


def _start_benchmark(eagle: EagleOptimization, done: sfn.IChainable, notify_failure: sfn.IChainable) -> sfn.IChainable:
    """Start the benchmark state machine for the promoted head (execution name = this run's id); a redriven
    run whose benchmark already started goes on to ``done``."""
    assert eagle.benchmark is not None
    start = tasks.StepFunctionsStartExecution(
        eagle,
        "StartBenchmark",
        state_machine=eagle.benchmark.state_machine,
        name=sfn.JsonPath.string_at("$.run.run_id"),
        input=sfn.TaskInput.from_object(
            {
                "run_id": sfn.JsonPath.string_at("$.run.run_id"),
                "head": sfn.JsonPath.string_at("$.record.draft_model_s3_uri"),
            }
        ),
        result_path=sfn.JsonPath.DISCARD,
    )
    start.add_retry(errors=START_EXECUTION_RETRY_ERRORS, interval=Duration.seconds(5), max_attempts=6, backoff_rate=2)
    start.add_catch(done, errors=["StepFunctions.ExecutionAlreadyExistsException"], result_path=sfn.JsonPath.DISCARD)
    start.add_catch(notify_failure, result_path="$.error")
    return start.next(done)


def _capture_dataset(
    eagle: EagleOptimization, start: sfn.IChainable, notify_failure: sfn.IChainable, done: sfn.IChainable
) -> sfn.IChainable:
    """Captured traffic: plan the new capture objects, convert them (Distributed Map), finalize the dataset, and
    train only when enough new records arrived."""
    plan, nothing_new = _plan_dataset(eagle, notify_failure, done)
    convert_map = _convert_captures(eagle, notify_failure)
    finalize, summarize = _finalize_dataset(eagle, notify_failure)
    enough = _enough_records(eagle, summarize.next(start), done)
    any_new = (
        sfn.Choice(eagle, "AnyNewCaptures?")
        .when(
            sfn.Condition.number_equals("$.plan.object_count", 0),
            nothing_new,
        )
        .otherwise(convert_map.next(finalize).next(enough))
    )
    return plan.next(any_new)


def _plan_dataset(
    eagle: EagleOptimization, notify_failure: sfn.IChainable, done: sfn.IChainable
) -> tuple[tasks.LambdaInvoke, sfn.Pass]:
    """``PlanDataset`` (the capture objects after the watermark) and ``NoNewCaptures`` (nothing to train on)."""
    plan = _lambda_step(
        eagle,
        "PlanDataset",
        eagle.plan_function,
        notify_failure,
        result_path="$.plan",
        payload={
            "capture_bucket": eagle.capture_bucket.bucket_name,
            "capture_prefix": eagle.capture_prefix,
            "output_bucket": eagle.artifacts_bucket.bucket_name,
            "output_prefix": DATASETS,
            "run_id": sfn.JsonPath.string_at("$.run.run_id"),
            "watermark_parameter": eagle.watermark_parameter.parameter_name,
        },
    )
    nothing_new = sfn.Pass(
        eagle,
        "NoNewCaptures",
        result_path="$.outcome",
        parameters={"trained": False, "reason": "no new Data Capture objects since the last run"},
    )
    nothing_new.next(done)
    return plan, nothing_new


def _convert_captures(eagle: EagleOptimization, notify_failure: sfn.IChainable) -> sfn.DistributedMap:
    """``ConvertCaptures``: the planned objects in batches to the convert function, results to ``map-results/``."""
    dataset = eagle.settings.dataset
    bucket = eagle.artifacts_bucket
    assert eagle.convert_function is not None
    convert = tasks.LambdaInvoke(
        eagle,
        "ConvertBatch",
        lambda_function=eagle.convert_function,
        payload_response_only=True,
        retry_on_service_exceptions=False,
    )
    convert.add_retry(errors=LAMBDA_SERVICE_ERRORS, interval=Duration.seconds(2), max_attempts=6, backoff_rate=2)
    convert_map = sfn.DistributedMap(
        eagle,
        "ConvertCaptures",
        item_reader=sfn.S3JsonItemReader(bucket=bucket, key=sfn.JsonPath.string_at("$.plan.manifest_key")),
        item_batcher=sfn.ItemBatcher(
            max_items_per_batch=CONVERT_BATCH_OBJECTS,
            batch_input={
                "capture_bucket": eagle.capture_bucket.bucket_name,
                "capture_prefix": eagle.capture_prefix,
                "output_bucket": bucket.bucket_name,
                "output_prefix": DATASETS,
                "source": dataset.source,
                "run_id.$": "$.run.run_id",  # BatchInput keys are not rendered from JsonPath tokens
            },
        ),
        result_writer_v2=sfn.ResultWriterV2(bucket=bucket, prefix=MAP_RESULTS),
        tolerated_failure_percentage=TOLERATED_FAILURE_PERCENTAGE,
        max_concurrency=CONVERT_CONCURRENCY,
        label="ConvertCaptures",
        result_path="$.map",
    )
    convert_map.item_processor(convert)
    convert_map.add_catch(notify_failure, result_path="$.error")
    return convert_map


def _finalize_dataset(eagle: EagleOptimization, notify_failure: sfn.IChainable) -> tuple[tasks.LambdaInvoke, sfn.Pass]:
    """``FinalizeDataset`` (where the watermark would move, the counts) and ``SummarizeDataset`` (the run's view)."""
    finalize = _lambda_step(
        eagle,
        "FinalizeDataset",
        eagle.finalize_function,
        notify_failure,
        result_path="$.dataset",
        payload={
            "plan": sfn.JsonPath.object_at("$.plan"),
            "results": sfn.JsonPath.object_at("$.map.ResultWriterDetails"),
            "target_component": eagle.model_name,
        },
    )
    summarize = sfn.Pass(
        eagle,
        "SummarizeDataset",
        result_path="$.dataset.summary",
        parameters={
            "source": eagle.settings.dataset.source,
            "records": sfn.JsonPath.number_at("$.dataset.records"),
            "unattributed": sfn.JsonPath.number_at("$.dataset.unattributed"),
            "empty": sfn.JsonPath.string_at("$.dataset.empty"),
            "component": sfn.JsonPath.string_at("$.dataset.component"),
            "complete": sfn.JsonPath.string_at("$.dataset.complete"),
            "failed_batches": sfn.JsonPath.number_at("$.dataset.failed_batches"),
            "summary_s3_uri": sfn.JsonPath.string_at("$.dataset.summary_s3_uri"),
        },
    )
    return finalize, summarize


def _enough_records(eagle: EagleOptimization, train: sfn.IChainable, done: sfn.IChainable) -> sfn.Choice:
    """``EnoughNewRecords?``: ``train`` at ``min_new_records`` or more, else succeed with the reason."""
    dataset = eagle.settings.dataset
    not_enough = sfn.Pass(
        eagle,
        "NotEnoughRecords",
        result_path="$.outcome",
        parameters={
            "trained": False,
            "reason": sfn.JsonPath.format(
                "{} new records for "
                + eagle.model_name
                + ", below min_new_records "
                + str(dataset.min_new_records)
                + "; the captures count again next run. {}",
                sfn.JsonPath.string_at("$.dataset.records"),
                sfn.JsonPath.string_at("$.dataset.reason"),
            ),
        },
    )
    not_enough.next(done)  # nothing to undo: the watermark moves only with a started job

    return (
        sfn.Choice(eagle, "EnoughNewRecords?")
        .when(
            sfn.Condition.or_(
                sfn.Condition.boolean_equals("$.dataset.empty", True),
                sfn.Condition.number_less_than("$.dataset.records", dataset.min_new_records),
            ),
            not_enough,
        )
        .otherwise(train)
    )


def _retry_notification(publish: tasks.SnsPublish) -> None:
    """SNS throttling and internal errors are retried: a run's outcome is not lost to a busy topic."""
    publish.add_retry(errors=SNS_RETRY_ERRORS, interval=Duration.seconds(2), max_attempts=6, backoff_rate=2)


def _lambda_step(
    eagle: EagleOptimization,
    id: str,
    function: lambda_.IFunction | None,
    notify_failure: sfn.IChainable,
    *,
    result_path: str,
    payload: Mapping[str, Any] | None = None,
    input_path: str | None = None,
) -> tasks.LambdaInvoke:
    """A Lambda task returning its payload at ``result_path``; Lambda service errors retried, the rest to SNS.

    The event is ``payload`` or, without one, the state input at ``input_path``."""
    assert function is not None
    step = tasks.LambdaInvoke(
        eagle,
        id,
        lambda_function=function,
        payload_response_only=True,
        payload=sfn.TaskInput.from_object(dict(payload)) if payload is not None else None,
        input_path=input_path,
        retry_on_service_exceptions=False,
        result_path=result_path,
    )
    step.add_retry(errors=LAMBDA_SERVICE_ERRORS, interval=Duration.seconds(2), max_attempts=6, backoff_rate=2)
    step.add_catch(notify_failure, result_path="$.error")
    return step
