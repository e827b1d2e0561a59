"""Daily check (EventBridge schedule) that publishes how many days each SageMaker capacity plan has left.

Environment variables
---------------------
TRAINING_PLAN_NAMES           Comma-separated training plan names (or ARNs) to check; required.
POWERTOOLS_METRICS_NAMESPACE  CloudWatch namespace for the metric; required.
POWERTOOLS_SERVICE_NAME       Logger service name (optional; NOT added as a metric dimension).
STATUS_PARAMETERS             Optional, comma-separated ``<plan name>=<SSM parameter name>``: each plan's
                              status (Active, Scheduled, ..., NotFound) is written there when it changed,
                              for endpoints that bind a plan only while it is Active (when_not_active on_demand).

Event
-----
Any EventBridge scheduled event; its content is not read.

Metric
------
For each plan, one EMF record: ``CapacityPlanDaysLeft`` (unit Count, float days until the
plan's EndTime, never negative) with exactly one dimension ``TrainingPlanName``. A plan that is
missing, Expired or Failed publishes 0 (no capacity left).

Returns
-------
{"plans": [{"TrainingPlanName": str, "Status": str, "DaysLeft": float}, ...]} for the plans
that were checked. If any plan could not be checked (e.g. throttling, access denied, no
EndTime), the others are still published and ``CapacityPlanExpiryCheckError`` is raised at the end.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from botocore.exceptions import ClientError
from llm_cdk_shared import clients, env
from llm_cdk_shared.aws_errors import not_found

logger = Logger()

METRIC_NAME = "CapacityPlanDaysLeft"
DIMENSION_NAME = "TrainingPlanName"
NO_CAPACITY_STATUSES = ("Expired", "Failed")
SECONDS_PER_DAY = 86_400


class CapacityPlanExpiryCheckError(Exception):
    """One or more plans could not be checked (the others were published)."""


_sagemaker = clients.client_getter("sagemaker")


def _now() -> datetime:
    return datetime.now(UTC)


MISCONFIGURED = "capacity plan expiry check misconfigured"


def plan_names_from_env(environment: env.Environment | None = None) -> list[str]:
    """``TRAINING_PLAN_NAMES`` (comma-separated, repeats dropped); ValueError when it names none.
    Given an ``environment``, the problem is added to it instead (the caller checks)."""
    reader = environment or env.Environment()
    names = reader.csv("TRAINING_PLAN_NAMES")
    if not names:
        reader.add(
            "TRAINING_PLAN_NAMES",
            reader.raw("TRAINING_PLAN_NAMES"),
            "the comma-separated capacity plan names to watch, e.g. 'llm-p5e-2026q1,llm-p5en-2026q2'",
        )
    if environment is None:
        reader.check(ValueError, MISCONFIGURED)
    return names


def days_left(plan: dict[str, Any], now: datetime) -> float:
    """Days until the plan's EndTime (0 when over or unusable); ValueError if it cannot be known."""
    if plan.get("Status") in NO_CAPACITY_STATUSES:
        return 0.0
    end = plan.get("EndTime")
    if end is None:
        raise ValueError(f"plan status is {plan.get('Status')!r} and it has no EndTime yet")
    return round(max(0.0, (end - now).total_seconds() / SECONDS_PER_DAY), 3)


def publish_days_left(plan_name: str, value: float) -> None:
    with single_metric(name=METRIC_NAME, unit=MetricUnit.Count, value=value) as metric:
        # Powertools adds a "service" dimension when POWERTOOLS_SERVICE_NAME is set; alarms
        # select this metric by TrainingPlanName alone, so keep that the only dimension.
        metric.service = None  # type: ignore[assignment]  # None: no service dimension
        metric.add_dimension(name=DIMENSION_NAME, value=plan_name)


_ssm = clients.client_getter("ssm", retries={"mode": "standard", "max_attempts": 5})


def status_parameters_from_env(environment: env.Environment | None = None) -> dict[str, str]:
    """``STATUS_PARAMETERS`` as {plan name: parameter name}; malformed entries raise ValueError (or, given an
    ``environment``, are added to it)."""
    reader = environment or env.Environment()
    out: dict[str, str] = {}
    for item in reader.csv("STATUS_PARAMETERS"):
        plan, sep, parameter = item.partition("=")
        if not sep or not plan.strip() or not parameter.strip().startswith("/"):
            reader.add("STATUS_PARAMETERS", item, "comma-separated <plan name>=/<parameter name> entries")
            continue
        out[plan.strip()] = parameter.strip()
    if environment is None:
        reader.check(ValueError, MISCONFIGURED)
    return out


def record_status(parameter: str, status: str) -> None:
    """Write ``status`` to the plan's status parameter, only when it changed (no needless versions)."""
    current = _ssm().get_parameter(Name=parameter)["Parameter"]["Value"]
    if current != status:
        _ssm().put_parameter(Name=parameter, Value=status, Type="String", Overwrite=True)
        logger.info("Capacity plan status recorded", extra={"parameter": parameter, "from": current, "to": status})


def check_plan(plan_name: str, now: datetime) -> dict[str, Any]:
    try:
        plan = _sagemaker().describe_training_plan(TrainingPlanName=plan_name)
    except ClientError as error:
        if not not_found(error):
            raise
        logger.error("Capacity plan not found; publishing 0 days left", extra={"training_plan_name": plan_name})
        publish_days_left(plan_name, 0.0)
        return {"TrainingPlanName": plan_name, "Status": "NotFound", "DaysLeft": 0.0}
    value = days_left(plan, now)
    status = plan.get("Status", "")
    publish_days_left(plan_name, value)
    logger.info(
        "Capacity plan checked",
        extra={
            "training_plan_name": plan_name,
            "status": status,
            "days_left": value,
            "end_time": plan["EndTime"].isoformat() if plan.get("EndTime") else None,
        },
    )
    return {"TrainingPlanName": plan_name, "Status": status, "DaysLeft": value}


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    environment = env.Environment()
    names = plan_names_from_env(environment)
    parameters = status_parameters_from_env(environment)
    environment.check(ValueError, MISCONFIGURED)  # every problem of the environment at once
    now = _now()
    results, failures = [], []
    for name in names:
        try:
            result = check_plan(name, now)
            results.append(result)
            if name in parameters:
                record_status(parameters[name], result["Status"] or "Unknown")
        except Exception as error:  # noqa: BLE001 - one plan failing must not stop the others
            code = error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else None
            logger.exception("Capacity plan check failed", extra={"training_plan_name": name, "error_code": code})
            failures.append(f"{name} ({code or type(error).__name__}: {str(error)[:200]})")
    if failures:
        raise CapacityPlanExpiryCheckError(
            f"{len(failures)} of {len(names)} capacity plans could not be checked (the others were published): "
            + "; ".join(failures)
        )
    return {"plans": results}
