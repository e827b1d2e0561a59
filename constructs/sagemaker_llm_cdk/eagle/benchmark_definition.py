"""The benchmark's Step Functions definition: measure before, wait for the deploy, measure after, compare.

``EagleBenchmark`` makes the functions and calls ``benchmark_definition`` once; every state is created under it
(so construct ids, and the template, are the benchmark's own). Each measurement is start -> wait -> check until
finished; a measurement without a throughput is published (``NotifyUnreadable*``) and fails the run, a head the
endpoint never served is published (``NotifyNotServed``), and a slower endpoint publishes the rollback command
(``NotifySlower``). Any other error is published with its cause (``NotifyFailure``) and fails the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

if TYPE_CHECKING:
    from .benchmark import EagleBenchmark

POLL_INTERVAL = Duration.minutes(5)
DEPLOY_CHECK_INTERVAL = Duration.hours(1)
LAMBDA_SERVICE_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
]


def benchmark_definition(bench: EagleBenchmark, eagle: Any) -> sfn.IChainable:
    """The benchmark's states, created under ``bench``; ``eagle`` is the loop (its topic and model name)."""
    topic, model = eagle.topic, eagle.model_name
    notify_failure = _notify_failure(bench, topic, model)
    unreadable = {
        phase: _notify_unreadable(bench, topic, model, phase, notify_failure) for phase in ("before", "after")
    }
    done = sfn.Succeed(bench, "Done")
    compared = _compare(bench, topic, model, notify_failure, done)
    after = _measure(bench, "after", notify_failure, unreadable["after"], compared)
    wait_deploy = _wait_for_deploy(bench, topic, model, notify_failure, done, after)

    prepare = sfn.Pass(
        bench,
        "Prepare",
        comment="The run id and the promoted head; phase 'after' skips 'before'.",
        parameters={
            "run_id": sfn.JsonPath.string_at("$.run_id"),
            "head": sfn.JsonPath.string_at("$.head"),
            "deploy": {"checks": 0},
        },
    )
    before = _measure(bench, "before", notify_failure, unreadable["before"], wait_deploy)
    prepare_after = sfn.Pass(
        bench,
        "PrepareAfter",
        parameters={
            "run_id": sfn.JsonPath.string_at("$.run_id"),
            "head": sfn.JsonPath.string_at("$.head"),
            "deploy": {"checks": 0},
        },
    )
    only_after = (
        sfn.Choice(bench, "OnlyAfter?")
        .when(sfn.Condition.string_equals("$.phase", "after"), prepare_after)
        .otherwise(prepare)
    )
    # a Choice rule on a missing path is a runtime error: test for the key first
    entry = sfn.Choice(bench, "PhaseGiven?").when(sfn.Condition.is_present("$.phase"), only_after).otherwise(prepare)
    prepare_after.next(after)
    prepare.next(before)
    return entry


def _notify_failure(bench: EagleBenchmark, topic: sns.ITopic, model: str) -> tasks.SnsPublish:
    """Publish the error and cause of any failed step, then fail the run (``BenchmarkFailed``)."""
    notify_failure = tasks.SnsPublish(
        bench,
        "NotifyFailure",
        topic=topic,
        subject=f"EAGLE benchmark failed: {model}"[:100],
        message=sfn.TaskInput.from_object(
            {
                "model_name": model,
                "run_id": sfn.JsonPath.string_at("$$.Execution.Name"),
                "execution": sfn.JsonPath.string_at("$$.Execution.Id"),
                "error": sfn.JsonPath.string_at("$.error.Error"),
                "cause": sfn.JsonPath.string_at("$.error.Cause"),
            }
        ),
        result_path=sfn.JsonPath.DISCARD,
    )
    notify_failure.next(sfn.Fail(bench, "BenchmarkFailed", error_path="$.error.Error", cause_path="$.error.Cause"))
    return notify_failure


def _notify_unreadable(
    bench: EagleBenchmark, topic: sns.ITopic, model: str, phase: str, notify_failure: sfn.IChainable
) -> tasks.SnsPublish:
    """Publish a ``phase`` measurement that gave no throughput, then fail the run (``Unreadable<Phase>``)."""
    note = tasks.SnsPublish(
        bench,
        f"NotifyUnreadable{phase.capitalize()}",
        topic=topic,
        subject=f"EAGLE benchmark unreadable: {model}"[:100],
        message=sfn.TaskInput.from_object(
            {
                "model_name": model,
                "run_id": sfn.JsonPath.string_at("$.run_id"),
                "phase": phase,
                "job_name": sfn.JsonPath.string_at(f"$.{phase}.job_name"),
                "status": sfn.JsonPath.string_at(f"$.{phase}.status"),
                "reason": sfn.JsonPath.string_at(f"$.{phase}.reason"),
                "output": sfn.JsonPath.string_at(f"$.{phase}.output_s3_uri"),
                "note": "No throughput was read from this benchmark job; nothing was compared. The run record "
                f"(benchmark_{phase}) holds the raw listing of its output.",
            }
        ),
        result_path=sfn.JsonPath.DISCARD,
    )
    note.add_catch(notify_failure, result_path="$.error")
    note.next(
        sfn.Fail(
            bench,
            f"Unreadable{phase.capitalize()}",
            error="BenchmarkUnreadable",
            cause=f"the {phase} benchmark gave no throughput; nothing compared",
        )
    )
    return note


def _compare(
    bench: EagleBenchmark, topic: sns.ITopic, model: str, notify_failure: sfn.IChainable, done: sfn.IChainable
) -> sfn.Choice:
    """``Slower?``: a slower endpoint publishes the rollback command (``NotifySlower``); either way ``done``."""
    notify_slower = tasks.SnsPublish(
        bench,
        "NotifySlower",
        topic=topic,
        subject=f"EAGLE head slower on the endpoint: {model}"[:100],
        message=sfn.TaskInput.from_object(
            {
                "model_name": model,
                "run_id": sfn.JsonPath.string_at("$.run_id"),
                "head": sfn.JsonPath.string_at("$.head"),
                "verdict": sfn.JsonPath.string_at("$.after.comparison.verdict"),
                "served_speedup": sfn.JsonPath.number_at("$.after.comparison.served_speedup"),
                "job_speedup": sfn.JsonPath.string_at("$.after.comparison.job_speedup"),
                "rollback_command": sfn.JsonPath.string_at("$.after.rollback_command"),
                "rollback_cli": sfn.JsonPath.string_at("$.after.rollback_cli"),
                "note": "Serving the head is slower than before it. Run rollback_command (or rollback_cli) and the "
                "next deploy serves the previous head, or none.",
            }
        ),
        result_path=sfn.JsonPath.DISCARD,
    )
    notify_slower.add_catch(notify_failure, result_path="$.error")
    notify_slower.next(done)
    return (
        sfn.Choice(bench, "Slower?")
        .when(sfn.Condition.boolean_equals("$.after.slower", True), notify_slower)
        .otherwise(done)
    )


def _wait_for_deploy(
    bench: EagleBenchmark,
    topic: sns.ITopic,
    model: str,
    notify_failure: sfn.IChainable,
    done: sfn.IChainable,
    after: sfn.IChainable,
) -> sfn.Wait:
    """``WaitForDeploy`` -> ``DeployCheck`` until the component serves the head (then ``after``), or give up and
    publish that the after measurement was not made (``NotifyNotServed``)."""
    notify_not_served = tasks.SnsPublish(
        bench,
        "NotifyNotServed",
        topic=topic,
        subject=f"EAGLE head not measured: {model}"[:100],
        message=sfn.TaskInput.from_object(
            {
                "model_name": model,
                "run_id": sfn.JsonPath.string_at("$.run_id"),
                "head": sfn.JsonPath.string_at("$.head"),
                "state": sfn.JsonPath.string_at("$.deploy.state"),
                "reason": sfn.JsonPath.string_at("$.deploy.reason"),
                "note": "The after measurement was not made. Once the head is served, start this state machine "
                'with input {"run_id": ..., "head": ..., "phase": "after"}.',
            }
        ),
        result_path=sfn.JsonPath.DISCARD,
    )
    notify_not_served.add_catch(notify_failure, result_path="$.error")
    notify_not_served.next(done)
    wait_deploy = sfn.Wait(bench, "WaitForDeploy", time=sfn.WaitTime.duration(DEPLOY_CHECK_INTERVAL))
    deploy_check = _step(
        bench,
        "DeployCheck",
        bench.serving_function,
        notify_failure,
        result_path="$.deploy",
        payload={"head": sfn.JsonPath.string_at("$.head"), "checks": sfn.JsonPath.number_at("$.deploy.checks")},
    )
    deployed = (
        sfn.Choice(bench, "HeadServed?")
        .when(
            sfn.Condition.string_equals("$.deploy.state", "serving"),
            after,
        )
        .when(sfn.Condition.boolean_equals("$.deploy.give_up", True), notify_not_served)
        .otherwise(wait_deploy)
    )
    wait_deploy.next(deploy_check).next(deployed)
    return wait_deploy


def _step(
    bench: EagleBenchmark,
    id: str,
    function: lambda_.IFunction,
    notify: sfn.IChainable,
    *,
    payload: dict[str, Any] | None = None,
    input_path: str | None = None,
    result_path: str,
) -> tasks.LambdaInvoke:
    """A Lambda task: the event is ``payload`` or, without one, the state input at ``input_path``."""
    step = tasks.LambdaInvoke(
        bench,
        id,
        lambda_function=function,
        payload_response_only=True,
        payload=sfn.TaskInput.from_object(payload) if payload is not None else None,
        input_path=input_path,
        retry_on_service_exceptions=False,
        result_path=result_path,
    )
    step.add_retry(errors=LAMBDA_SERVICE_ERRORS, interval=Duration.seconds(2), max_attempts=6, backoff_rate=2)
    step.add_catch(notify, result_path="$.error")
    return step


def _measure(
    bench: EagleBenchmark,
    phase: str,
    notify_failure: sfn.IChainable,
    notify_unreadable: sfn.IChainable,
    then: sfn.IChainable,
) -> sfn.IChainable:
    """Start -> wait -> check until finished; an unreadable result goes to ``notify_unreadable``."""
    path = f"$.{phase}"
    title = phase.capitalize()
    start = _step(
        bench,
        f"Start{title}",
        bench.start_function,
        notify_failure,
        result_path=path,
        payload={
            "phase": phase,
            "run_id": sfn.JsonPath.string_at("$.run_id"),
            "head": sfn.JsonPath.string_at("$.head"),
        },
    )
    start.add_retry(
        errors=["ResourceLimitExceededError"], interval=Duration.minutes(30), max_attempts=4, backoff_rate=2
    )  # 0.5 + 1 + 2 + 4 h = START_RETRY_HOURS
    wait = sfn.Wait(bench, f"Wait{title}", time=sfn.WaitTime.duration(POLL_INTERVAL))
    check = _step(bench, f"Check{title}", bench.check_function, notify_failure, result_path=path, input_path=path)
    finished = (
        sfn.Choice(bench, f"{title}Finished?")
        .when(
            sfn.Condition.boolean_equals(f"{path}.finished", False),
            wait,
        )
        .when(sfn.Condition.boolean_equals(f"{path}.ok", False), notify_unreadable)
        .otherwise(then)
    )
    skipped = (
        sfn.Choice(bench, f"{title}Skipped?")
        .when(sfn.Condition.boolean_equals(f"{path}.skipped", True), then)
        .otherwise(wait)
    )
    wait.next(check).next(finished)
    return start.next(skipped)
