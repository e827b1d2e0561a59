"""The two functions around each EAGLE optimization job: the one that starts it and the one that records its run.

``StartFunction`` creates the optimization job (names ``eagle-*`` only), passes the job role to SageMaker only,
and, when the loop builds its training set, moves the capture watermark with the job. ``RecordFunction`` reads
the job's results, writes the run record (DynamoDB) and the report (``reports/``), publishes the metrics and
promotes the head through the promotion parameter when it beats the head served so far.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration, Fn, Stack, Token
from aws_cdk import aws_iam as iam

from ..core import grants, nag
from ..core.functions import python_function
from .job_role import bucket_arn_of
from .layout import JOB_NAME_PREFIX, JOBS, REPORTS

if TYPE_CHECKING:
    from .optimization import EagleOptimization


def add_start_function(
    eagle: EagleOptimization, *, built: bool, dataset_bucket: str, dataset_prefix: str, plan_arns: list[str]
) -> None:
    """``eagle.start_function`` and ``eagle.job_arn_pattern`` (the optimization jobs it may create)."""
    stack = Stack.of(eagle)
    endpoint = eagle.component.endpoint
    start_env = {
        "ROLE_ARN": eagle.job_role.role_arn,
        "OUTPUT_S3_URI": f"s3://{eagle.artifacts_bucket.bucket_name}/{JOBS}",
        "MAX_RUNTIME_SECONDS": str(eagle.settings.max_runtime_hours * 3600),
        "KMS_KEY_ARN": eagle.key.key_arn,
    }
    if endpoint.vpc is not None:
        start_env["SUBNET_IDS"] = Fn.join(",", list(endpoint.subnet_ids))
        start_env["SECURITY_GROUP_IDS"] = Fn.join(",", [g.security_group_id for g in endpoint.security_groups])
    if plan_arns:
        start_env["TRAINING_PLAN_ARNS"] = Fn.join(",", plan_arns)
    eagle.start_function = python_function(
        eagle,
        "StartFunction",
        folder="eagle_job",
        handler="index.start",
        description=f"Starts the EAGLE optimization job of {eagle.model_name}",
        environment=start_env,
        timeout=Duration.minutes(2),
    )
    eagle.job_arn_pattern = stack.format_arn(
        service="sagemaker", resource="optimization-job", resource_name=f"{JOB_NAME_PREFIX}*"
    )
    grants.grant(
        eagle.start_function,
        sid="CreateEagleJobs",
        resources=[eagle.job_arn_pattern],
        actions=["sagemaker:CreateOptimizationJob", "sagemaker:DescribeOptimizationJob", "sagemaker:AddTags"],
        reason="Job names are made at run time from the run's inputs (eagle-<model>-<hash>); Create/Describe/"
        "AddTags on optimization jobs named eagle-* only.",
    )
    eagle.start_function.add_to_role_policy(
        iam.PolicyStatement(
            sid="PassJobRole",
            actions=["iam:PassRole"],
            resources=[eagle.job_role.role_arn],
            conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
        )
    )
    eagle.start_function.add_to_role_policy(
        iam.PolicyStatement(
            sid="FindDataset",
            actions=["s3:ListBucket"],
            resources=[bucket_arn_of(dataset_bucket)],
            conditions={"StringLike": {"s3:prefix": [f"{dataset_prefix}*"]}},
        )
    )
    if built:  # captured traffic: the start moves the capture watermark with the job, nothing else writes it
        eagle.start_function.add_to_role_policy(
            iam.PolicyStatement(
                sid="MoveWatermark",
                actions=["ssm:GetParameter", "ssm:PutParameter"],
                resources=[eagle.watermark_parameter.parameter_arn],
            )
        )


def add_record_function(eagle: EagleOptimization, pretrained_head: Any) -> None:
    """``eagle.record_function``: records each run and promotes its head when it is fast enough."""
    settings = eagle.settings
    eagle.record_function = python_function(
        eagle,
        "RecordFunction",
        folder="eagle_job",
        handler="index.record",
        description=f"Records the EAGLE run of {eagle.model_name} and promotes its head when it is fast enough",
        environment={
            "RUNS_TABLE": eagle.runs_table.table_name,
            "REPORT_S3_URI": f"s3://{eagle.artifacts_bucket.bucket_name}/{REPORTS}",
            "PROMOTION_PARAMETER": eagle.promotion_parameter_name,
            "SPEEDUP_THRESHOLD": f"{settings.speedup_threshold:g}",
            # the head served while the parameter holds none: a trained head must beat it to be promoted
            **_pretrained_environment(pretrained_head, settings.pretrained_head_speedup),
            # USD per million output tokens: the Price List API first, the shipped table's figure as the fallback
            **_price_environment(eagle),
        },
        timeout=Duration.minutes(5),
        memory_size=512,
    )
    _grant_record(eagle)


def _grant_record(eagle: EagleOptimization) -> None:
    stack = Stack.of(eagle)
    role = eagle.record_function.role
    assert role is not None
    bucket = eagle.artifacts_bucket
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="ListJobOutput",
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{JOBS}/*"]}},
        )
    )
    grants.grant(
        role,
        sid="ReadJobResults",
        actions=["s3:GetObject"],
        resources=[bucket.arn_for_objects(f"{JOBS}/*/results/*")],
        reason="The record function reads the benchmark files a job wrote under jobs/<job name>/results/; read-only.",
    )
    grants.grant(
        role,
        sid="WriteReports",
        actions=["s3:PutObject"],
        resources=[bucket.arn_for_objects(f"{REPORTS}/*")],
        reason="One JSON report per run under reports/<model>/<run id>.json; PutObject only, only under reports/.",
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(sid="ReadOnDemandPrices", actions=["pricing:GetProducts"], resources=["*"])
    )
    nag.acknowledge_resource(
        role,
        "*",
        "pricing:GetProducts has no resource type (Service Authorization Reference, AWS Price List); the record "
        "function reads the endpoint instance's on-demand price to record USD per million output tokens.",
        actions=["pricing:GetProducts"],
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="RecordRuns",
            actions=["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query"],
            resources=[eagle.runs_table.table_arn],
        )
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="UseArtifactsKey",
            actions=["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"],
            resources=[eagle.key.key_arn],
        )
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="PromoteDraftHead",
            actions=["ssm:GetParameter", "ssm:PutParameter"],
            resources=[
                stack.format_arn(
                    service="ssm", resource="parameter", resource_name=eagle.promotion_parameter_name.lstrip("/")
                )
            ],
        )
    )


def _price_environment(eagle: EagleOptimization) -> dict[str, str]:
    """The record function's price settings: ask the Price List API, and the shipped table's figure for the
    job's instance type in the stack's region (none when the table has no figure or the stack names no region).

    The table (``operations/prices.json``) is read as package data: the eagle layer does not import ``operations``.
    """
    table = json.loads(resources.files("sagemaker_llm_cdk.operations").joinpath("prices.json").read_text("utf-8"))
    env = {"PRICE_LIST_LOOKUP": "1", "SHIPPED_PRICE_DATE": str(table["read"]), **_plan_environment(eagle)}
    region = Stack.of(eagle).region
    if not Token.is_unresolved(region):
        cell = ((table["usages"]["Hosting"]["prices"].get(eagle.job_instance_type) or {}).get(region)) or {}
        if cell.get("usd_per_hour") is not None:
            env["SHIPPED_HOURLY_USD"] = str(cell["usd_per_hour"])
            env["SHIPPED_PRICE_DATE"] = str(cell.get("read") or table["read"])
    return env


def _plan_environment(eagle: EagleOptimization) -> dict[str, str]:
    """The record function's view of the capacity plan the endpoint runs on: ``CAPACITY_PLAN_BOUND``, and for a plan
    this app buys, of the job's instance type, its price cap (``max_upfront_fee_usd``) and instance-hours, whose
    quotient is the most an instance-hour of it costs: a run's USD per million tokens is priced at that, never at
    on-demand prices the plan does not pay. Known at synth, so the endpoint's stack reads nothing of the plan's. An
    existing plan (its fee unknown here) or one of another instance type leaves the on-demand price, with a note."""
    plan = getattr(eagle.component.endpoint, "capacity_plan", None)
    if plan is None:
        return {}
    env = {"CAPACITY_PLAN_BOUND": "1"}
    spec = getattr(plan, "spec", None)
    cap, days = getattr(spec, "max_upfront_fee_usd", None), getattr(spec, "duration_days", None)
    if cap is not None and days and getattr(plan, "instance_type", None) == eagle.job_instance_type:
        env["CAPACITY_PLAN_MAX_UPFRONT_FEE_USD"] = format(cap, "f")
        env["CAPACITY_PLAN_INSTANCE_HOURS"] = str(int(days) * 24 * int(plan.instance_count))
    return env


def _pretrained_environment(head: Any, configured: float | None) -> dict[str, str]:
    """The record function's view of the pre-trained head served before any promotion (none: {})."""
    if head is None:
        return {}
    speedup = configured if configured is not None else head.speedup
    return {
        "PRETRAINED_HEAD_S3_URI": head.s3_uri,
        **({"PRETRAINED_HEAD_SPEEDUP": f"{speedup:g}"} if speedup is not None else {}),
    }
