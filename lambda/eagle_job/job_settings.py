"""The deployment settings of the job functions, read and checked from their environment.

``start`` needs the job's role, output prefix, runtime limit and optional KMS key, VPC and training plan
(``StartSettings``); ``record`` needs the runs table, the report prefix, the promotion parameter and the speedup
threshold, and optionally the pre-trained head served while no head is promoted. A bad value is a deployment
problem: ``ConfigurationError``, naming every problem at once, before any AWS call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from job_errors import ConfigurationError
from llm_cdk_shared.env import Environment


@dataclass(frozen=True)
class StartSettings:
    """Deployment settings of the ``start`` function (from its environment)."""

    role_arn: str
    output_s3_uri: str
    max_runtime_seconds: int
    kms_key_arn: str | None = None
    subnet_ids: tuple[str, ...] = ()
    security_group_ids: tuple[str, ...] = ()
    training_plan_arns: tuple[str, ...] = ()


def settings_from_env(env: Mapping[str, str]) -> StartSettings:
    """Read and check the ``start`` environment; every problem is reported at once."""
    environment = Environment(env)
    role_arn = environment.text(
        "ROLE_ARN", required=True, allowed="the ARN of the IAM role the optimization job assumes"
    )
    output = environment.text("OUTPUT_S3_URI", required=True, prefix="s3://", allowed="an s3:// prefix for job outputs")
    runtime = environment.integer("MAX_RUNTIME_SECONDS", minimum=1)
    subnets = tuple(environment.csv("SUBNET_IDS"))
    groups = tuple(environment.csv("SECURITY_GROUP_IDS"))
    if bool(subnets) != bool(groups):
        environment.add(
            "SUBNET_IDS",
            ",".join(subnets) or None,
            "set together with SECURITY_GROUP_IDS (VpcConfig needs both) or both left empty",
            "set both SUBNET_IDS and SECURITY_GROUP_IDS, or neither",
        )
    if len(subnets) > 16:
        environment.add(
            "SUBNET_IDS", f"{len(subnets)} subnets", "1-16 subnets (CreateOptimizationJob)", "name at most 16 subnets"
        )
    if len(groups) > 5:
        environment.add(
            "SECURITY_GROUP_IDS",
            f"{len(groups)} groups",
            "1-5 security groups (CreateOptimizationJob)",
            "name at most 5 security groups",
        )
    plans = tuple(environment.csv("TRAINING_PLAN_ARNS"))
    if len(plans) > 1:
        environment.add(
            "TRAINING_PLAN_ARNS",
            f"{len(plans)} ARNs",
            "at most 1 training plan (CreateOptimizationJob)",
            "name one training plan ARN",
        )
    environment.check(ConfigurationError, "invalid function configuration")
    return StartSettings(
        role_arn=role_arn,
        output_s3_uri=output,
        max_runtime_seconds=runtime,
        kms_key_arn=environment.raw("KMS_KEY_ARN") or None,
        subnet_ids=subnets,
        security_group_ids=groups,
        training_plan_arns=plans,
    )


def record_settings() -> tuple[str, str, str, float]:
    """``record``'s (runs table, report prefix, promotion parameter, speedup threshold)."""
    environment = Environment()
    table = environment.text("RUNS_TABLE", required=True, allowed="the DynamoDB table of EAGLE runs")
    report = environment.text("REPORT_S3_URI", required=True, prefix="s3://", allowed="an s3:// prefix for run reports")
    parameter = environment.text(
        "PROMOTION_PARAMETER", required=True, allowed="the SSM parameter name of the approved draft head"
    )
    threshold = environment.number("SPEEDUP_THRESHOLD", above=0, allowed="a number > 0, e.g. 1.5")
    environment.check(ConfigurationError, "invalid function configuration")
    return table, report, parameter, threshold


def pretrained_settings() -> tuple[str | None, float | None]:
    """The pre-trained head served while no head is promoted, and its configured speedup (both optional)."""
    env = os.environ
    problems = []
    uri = env.get("PRETRAINED_HEAD_S3_URI", "").strip() or None
    if uri is not None and not uri.startswith("s3://"):
        problems.append(f"PRETRAINED_HEAD_S3_URI {uri!r} must be the s3:// URI of the pre-trained head")
    raw = env.get("PRETRAINED_HEAD_SPEEDUP", "").strip()
    speedup = None
    if raw:
        try:
            speedup = float(raw)
            if not (1.0 <= speedup < float("inf")):
                raise ValueError
        except ValueError:
            problems.append(f"PRETRAINED_HEAD_SPEEDUP {raw!r} must be a measured speedup >= 1, e.g. 1.8")
        if uri is None:
            problems.append("PRETRAINED_HEAD_SPEEDUP is set without PRETRAINED_HEAD_S3_URI (the head it measures)")
    if problems:
        raise ConfigurationError("invalid function configuration: " + "; ".join(problems))
    return uri, speedup
