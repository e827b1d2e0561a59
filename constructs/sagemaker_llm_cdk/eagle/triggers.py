"""What starts an EAGLE run on its own: the schedule, and the scheduled check for new records.

The schedule (``settings.schedule``, EventBridge Scheduler, ``Schedule`` with ``ScheduleRole``) starts a run at
its rate. The new-records check (``settings.dataset.records_check``, off by default) is a small function that
Scheduler invokes (``RecordsCheck`` with ``RecordsCheckRole``): it counts the captured records after the watermark
and starts a run once ``min_new_records`` arrived and none is in progress. Its failures are kept in a
KMS-encrypted dead-letter queue (``RecordsCheckDeadLetters``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Aws, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sqs as sqs

from ..core import grants
from ..core.functions import python_function
from ..core.nag import acknowledge, nag_form
from ..core.storage import secure_key

if TYPE_CHECKING:
    from .optimization import EagleOptimization


def add_schedule(eagle: EagleOptimization, expression: str) -> None:
    """``eagle.schedule`` (with ``schedule_role``): starts a run at ``expression``."""
    eagle.schedule_role = iam.Role(
        eagle,
        "ScheduleRole",
        assumed_by=iam.ServicePrincipal(
            "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
        ),
        description=f"Lets EventBridge Scheduler start the EAGLE runs of {eagle.model_name}",
    )
    eagle.schedule = scheduler.Schedule(
        eagle,
        "Schedule",
        schedule=scheduler.ScheduleExpression.expression(expression),
        target=scheduler_targets.StepFunctionsStartExecution(
            eagle.state_machine, input=scheduler.ScheduleTargetInput.from_object({}), role=eagle.schedule_role
        ),
        description=f"Starts an EAGLE optimization run of {eagle.model_name}",
    )


def add_records_check(eagle: EagleOptimization, expression: str, min_new_records: int) -> None:
    """A scheduled function that counts new captured records (no conversion) and starts a run once enough arrived.

    EventBridge Scheduler invokes it asynchronously: a check that still fails after Lambda's two retries, or an
    invocation Scheduler could not deliver within its retry policy, is kept in ``records_check_dead_letters``
    (KMS-encrypted, TLS-only, 14 days) rather than lost with only a log line."""
    eagle.records_check_dead_letters_key = secure_key(
        eagle,
        "RecordsCheckDeadLettersKey",
        description=f"Encrypts the failed new-records checks of {eagle.model_name}",
    )
    eagle.records_check_dead_letters = sqs.Queue(
        eagle,
        "RecordsCheckDeadLetters",
        encryption=sqs.QueueEncryption.KMS,
        encryption_master_key=eagle.records_check_dead_letters_key,
        enforce_ssl=True,
        retention_period=Duration.days(14),
    )
    acknowledge(
        eagle.records_check_dead_letters,
        "AwsSolutions-SQS3",
        "This queue is the dead-letter queue of the new-records check (its function and its schedule); "
        "a dead-letter queue has none of its own.",
    )
    eagle.check_function = python_function(
        eagle,
        "CheckFunction",
        folder="eagle_dataset",
        handler="index.check",
        description=f"Starts an EAGLE run of {eagle.model_name} once {min_new_records} new records were captured",
        environment={
            "STATE_MACHINE_ARN": eagle.state_machine_arn,
            "WATERMARK_PARAMETER": eagle.watermark_parameter.parameter_name,
            "CAPTURE_BUCKET": eagle.capture_bucket.bucket_name,
            "CAPTURE_PREFIX": eagle.capture_prefix,
            "MIN_NEW_RECORDS": str(min_new_records),
        },
        timeout=Duration.minutes(5),
        memory_size=512,
        reserved_concurrency=1,
        dead_letter_queue=eagle.records_check_dead_letters,
    )
    _grant_check(eagle)
    _schedule_check(eagle, expression, min_new_records)


def _grant_check(eagle: EagleOptimization) -> None:
    """The check counts this endpoint's captured records after the watermark and starts this state machine."""
    assert eagle.check_function is not None
    role = eagle.check_function.role
    assert role is not None
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="ListCaptures",
            actions=["s3:ListBucket"],
            resources=[eagle.capture_bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{eagle.capture_prefix}*"]}},
        )
    )
    grants.grant(
        role,
        sid="ReadCaptures",
        actions=["s3:GetObject"],
        resources=[eagle.capture_bucket.arn_for_objects(f"{eagle.capture_prefix}*")],
        reason="Data Capture writes one object per capture file under data-capture/<endpoint>/; the check "
        "reads (GetObject only) this endpoint's folder to count new records.",
    )
    if eagle.source_key is not None:
        role.add_to_principal_policy(
            iam.PolicyStatement(sid="DecryptCaptures", actions=["kms:Decrypt"], resources=[eagle.source_key.key_arn])
        )
    eagle.watermark_parameter.grant_read(role)
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="SeeRunningRuns", actions=["states:ListExecutions"], resources=[eagle.state_machine_arn]
        )
    )
    eagle.state_machine.grant_start_execution(role)


def _schedule_check(eagle: EagleOptimization, expression: str, min_new_records: int) -> None:
    """``eagle.records_check`` (with ``records_check_role``): Scheduler invokes the check at ``expression``."""
    assert eagle.check_function is not None
    eagle.records_check_role = iam.Role(
        eagle,
        "RecordsCheckRole",
        assumed_by=iam.ServicePrincipal(
            "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
        ),
        description=f"Lets EventBridge Scheduler run the new-records check of {eagle.model_name}",
    )
    eagle.records_check = scheduler.Schedule(
        eagle,
        "RecordsCheck",
        schedule=scheduler.ScheduleExpression.expression(expression),
        # One check is worth little an hour later (the next one counts afresh): a few tries within the hour.
        target=scheduler_targets.LambdaInvoke(
            eagle.check_function,
            role=eagle.records_check_role,
            input=scheduler.ScheduleTargetInput.from_object({}),
            dead_letter_queue=eagle.records_check_dead_letters,
            retry_attempts=3,
            max_event_age=Duration.hours(1),
        ),
        description=f"Counts new captured records of {eagle.model_name}; starts a run at {min_new_records}",
    )
    acknowledge(
        eagle.records_check_role,
        "AwsSolutions-IAM5",
        "CDK's Scheduler target grants lambda:InvokeFunction on the "
        "check function and its versions (<arn>:*); that one function only.",
        finding="Resource::" + nag_form(eagle.records_check_role, f"{eagle.check_function.function_arn}:*"),
    )
