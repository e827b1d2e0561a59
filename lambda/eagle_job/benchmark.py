"""Measure the endpoint with SageMaker AI benchmark jobs before and after a promoted EAGLE head is served.

Three handlers, steps of the benchmark state machine (``sagemaker_llm_cdk.eagle_benchmark``); no handler
waits: the state machine's Wait states poll.

``start(event, context)``: ``CreateAIBenchmarkJob`` on the endpoint and the model's inference component.
  Environment: ENDPOINT_NAME, COMPONENT_NAME, WORKLOAD_CONFIG_NAME, ROLE_ARN (passed to SageMaker),
  OUTPUT_S3_URI (each job writes under ``<OUTPUT_S3_URI>/<job name>/``), SERVING_MODEL_PREFIX (names of the
  models that serve a head), SUBNET_IDS / SECURITY_GROUP_IDS (optional, comma-separated, together).
  Event: ``{"phase": "before"|"after", "run_id", "head"}`` (``head``: the promoted head's S3 URI).
  Returns ``{"phase", "run_id", "head", "served_head", "skipped", "reason", "job_name", "job_arn",
  "output_s3_uri", "started_at"}``. ``before`` is skipped (nothing started) when the endpoint already
  serves ``head``; ``after`` raises ``HeadNotServedError`` unless it does. A job name is derived from the
  run, phase and head, so a retried start finds its job instead of starting a second one.

``check(event, context)``: ``DescribeAIBenchmarkJob``; when the job is terminal, reads its output and
  records the measurement in the run record (``benchmark_before`` / ``benchmark_after``).
  Environment: RUNS_TABLE, MODEL_NAME, MAX_SECONDS (then ``StopAIBenchmarkJob``), SLOWDOWN_TOLERANCE,
  PROMOTION_PARAMETER, STACK_NAME.
  Event: the ``start`` output. Returns it plus ``finished``, ``status`` and, once finished, ``ok`` (numbers
  were read), ``reason``, ``metrics``; for ``after`` also ``comparison`` (beside the optimization job's own
  ``speedup``), ``slower`` and ``rollback_command`` / ``rollback_cli``.
  The output layout of benchmark jobs is not documented (AIPerf writes ``profile_export_aiperf.json``):
  the raw listing is kept in the record, numbers are taken only from files that hold them, and a job whose
  output gives no throughput is ``ok: false`` (the state machine publishes it); nothing is made up.

``serving(event, context)``: is the head served yet? Environment: COMPONENT_NAME, SERVING_MODEL_PREFIX,
  PROMOTION_PARAMETER, DEPLOY_CHECKS. Event ``{"head", "checks"}``. Returns ``{"state": "serving" |
  "waiting" | "superseded", "served_head", "checks", "give_up"}``; superseded: the promotion parameter no
  longer names this head (rolled back, or a newer head).

Reading a benchmark job's output is ``benchmark_output``'s; the measurement's form in the run record, the
comparison and the rollback commands are ``benchmark_record``'s.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any, Literal

import benchmark_output
import benchmark_record
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from benchmark_output import read_metrics as read_metrics
from benchmark_record import compare, rollback_commands
from botocore.exceptions import ClientError
from llm_cdk_shared import clients
from llm_cdk_shared.problems import not_a_boolean
from llm_cdk_shared.problems import problems as validation_problems

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    from pydantic import BaseModel

    # classes that _models() builds on first use: Any for annotations
    CheckEvent: TypeAlias = Any
    ServingEvent: TypeAlias = Any
    StartEvent: TypeAlias = Any

logger = Logger()
metrics = Metrics()

CHANNEL = "eagle"
"""Additional model data channel of the draft head on the serving model (``speculative_decoding.CHANNEL``)."""
TERMINAL = frozenset({"Completed", "Failed", "Stopped"})
JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


class InvalidEventError(Exception):
    """The event does not have the documented shape (a caller's mistake)."""


class ConfigurationError(Exception):
    """The function's environment is incomplete (a deployment mistake)."""


class HeadNotServedError(Exception):
    """An ``after`` measurement was asked for while the endpoint does not serve the head."""


class ResourceLimitExceededError(Exception):
    """SageMaker refused the job for a quota; the state machine retries later."""


class BenchmarkConflictError(Exception):
    """A benchmark job of this name exists for another endpoint."""


# Throttling and transient errors are retried by botocore (clients.DEFAULT_RETRIES), as in every handler.
_sagemaker = clients.client_getter("sagemaker")
_s3 = clients.client_getter("s3")
_dynamodb = clients.client_getter("dynamodb")
_ssm = clients.client_getter("ssm")


@functools.cache
def _models() -> SimpleNamespace:
    """The event models, built on the first event: pydantic is not imported on a cold start."""
    from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

    class StartEvent(BaseModel):
        model_config = ConfigDict(extra="ignore")

        phase: Literal["before", "after"]
        run_id: str = Field(min_length=1, max_length=256)
        head: str = Field(min_length=1, max_length=1024, pattern=r"^s3://[^/]+/.*$")

    class CheckEvent(StartEvent):
        served_head: str | None = None
        skipped: bool = False
        job_name: str = Field(min_length=1, max_length=63)
        job_arn: str | None = None
        output_s3_uri: str = Field(min_length=1, max_length=1024, pattern=r"^s3://[^/]+/.*$")
        started_at: datetime

    class ServingEvent(BaseModel):
        model_config = ConfigDict(extra="ignore")

        head: str = Field(min_length=1, max_length=1024, pattern=r"^s3://[^/]+/.*$")
        checks: Annotated[int, BeforeValidator(not_a_boolean)] = Field(default=0, ge=0)

    return SimpleNamespace(StartEvent=StartEvent, CheckEvent=CheckEvent, ServingEvent=ServingEvent)


def __getattr__(name: str) -> Any:
    """``StartEvent``, ``CheckEvent`` and ``ServingEvent`` as module attributes (PEP 562), built on first access."""
    if name in ("StartEvent", "CheckEvent", "ServingEvent"):
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _parse(event: Any, model: type[BaseModel]) -> Any:
    from pydantic import ValidationError

    try:
        return model.model_validate(event)
    except ValidationError as error:  # field: got V; allowed: ... for each problem
        raise InvalidEventError(f"bad {model.__name__}: {'; '.join(validation_problems(error))}") from None


def _env(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise ConfigurationError(f"environment variable {name} is not set")
    return value


def _same_uri(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and a.rstrip("/") == b.rstrip("/")


def _code(error: ClientError) -> str:
    return error.response.get("Error", {}).get("Code", "")


def _served(component: str, serving_prefix: str) -> tuple[str | None, str]:
    """(head S3 URI the inference component serves or None, its status)."""
    described = _sagemaker().describe_inference_component(InferenceComponentName=component)
    status = described.get("InferenceComponentStatus", "")
    model = (described.get("Specification") or {}).get("ModelName") or ""
    if not model.startswith(f"{serving_prefix}-"):
        return None, status  # the component's own model: no head
    container = _sagemaker().describe_model(ModelName=model).get("PrimaryContainer") or {}
    for source in container.get("AdditionalModelDataSources") or []:
        if source.get("ChannelName") == CHANNEL:
            return (source.get("S3DataSource") or {}).get("S3Uri"), status
    return None, status


def job_name(model_name: str, run_id: str, phase: str, head: str) -> str:
    """``eagle-<model>-<b|a>-<hash>``: 63 characters at most, the same for a retry of the same measurement."""
    digest = hashlib.sha256(json.dumps([model_name, run_id, phase, head]).encode()).hexdigest()[:12]
    stem = re.sub(r"-+", "-", re.sub(r"[^a-zA-Z0-9]", "-", model_name)).strip("-")[:40].rstrip("-") or "model"
    name = f"eagle-{stem}-{phase[0]}-{digest}"
    assert JOB_NAME.match(name), name
    return name


# ------------------------------------------------------------------------------------------ start
@logger.inject_lambda_context(log_event=False)
def start(event: dict[str, Any], context: Any) -> dict[str, Any]:
    run: StartEvent = _parse(event, _models().StartEvent)
    endpoint, component = _env("ENDPOINT_NAME"), _env("COMPONENT_NAME")
    workload, role = _env("WORKLOAD_CONFIG_NAME"), _env("ROLE_ARN")
    output_base, serving_prefix = _env("OUTPUT_S3_URI").rstrip("/"), _env("SERVING_MODEL_PREFIX")
    logger.append_keys(run_id=run.run_id, phase=run.phase)
    served, status = _served(component, serving_prefix)
    result: dict[str, Any] = {"phase": run.phase, "run_id": run.run_id, "head": run.head, "served_head": served}
    serves_head = _same_uri(served, run.head)
    if run.phase == "before" and serves_head:
        return {
            **result,
            "skipped": True,
            "reason": f"{component} already serves {run.head}: a deploy came first, "
            "so there is nothing to measure without the head",
        }
    if run.phase == "after" and not serves_head:
        raise HeadNotServedError(
            f"{component} serves {served or 'no draft head'}, not {run.head}: deploy the model's "
            "stack first (cdk deploy), then measure"
        )
    name = job_name(component, run.run_id, run.phase, run.head)
    output = f"{output_base}/{name}/"
    request: dict[str, Any] = {
        "AIBenchmarkJobName": name,
        "BenchmarkTarget": {"Endpoint": {"Identifier": endpoint, "InferenceComponents": [{"Identifier": component}]}},
        "OutputConfig": {"S3OutputLocation": output},
        "AIWorkloadConfigIdentifier": workload,
        "RoleArn": role,
        "Tags": [
            {"Key": "eagle-run", "Value": re.sub(r"[^\w.:/=+\-@ ]", "-", run.run_id)[:256]},
            {"Key": "eagle-phase", "Value": run.phase},
        ],
    }
    subnets = [s for s in os.environ.get("SUBNET_IDS", "").split(",") if s]
    groups = [g for g in os.environ.get("SECURITY_GROUP_IDS", "").split(",") if g]
    if subnets or groups:
        if not (subnets and groups):
            raise ConfigurationError("SUBNET_IDS and SECURITY_GROUP_IDS must be set together")
        request["NetworkConfig"] = {"VpcConfig": {"Subnets": subnets, "SecurityGroupIds": groups}}
    try:
        arn = _sagemaker().create_ai_benchmark_job(**request)["AIBenchmarkJobArn"]
    except ClientError as error:
        code = _code(error)
        if code == "ResourceLimitExceeded":
            raise ResourceLimitExceededError(str(error)) from None
        if code != "ResourceInUse":
            raise
        existing = _sagemaker().describe_ai_benchmark_job(AIBenchmarkJobName=name)  # a retry: the job exists
        target = ((existing.get("BenchmarkTarget") or {}).get("Endpoint") or {}).get("Identifier", "")
        if target.split("/")[-1].lower() != endpoint.lower():
            raise BenchmarkConflictError(f"benchmark job {name} exists for {target}, not {endpoint}") from None
        arn = existing["AIBenchmarkJobArn"]
    logger.info("benchmark job started", extra={"job_name": name, "component_status": status})
    return {
        **result,
        "skipped": False,
        "reason": None,
        "job_name": name,
        "job_arn": arn,
        "output_s3_uri": output,
        "started_at": datetime.now(UTC).isoformat(),
    }


# ------------------------------------------------------------------------------------------ check
@metrics.log_metrics
@logger.inject_lambda_context(log_event=False)
def check(event: dict[str, Any], context: Any) -> dict[str, Any]:
    run: CheckEvent = _parse(event, _models().CheckEvent)
    table, model_name = _env("RUNS_TABLE"), _env("MODEL_NAME")
    try:
        max_seconds = int(_env("MAX_SECONDS"))
        tolerance = float(_env("SLOWDOWN_TOLERANCE"))
    except ValueError:
        raise ConfigurationError("MAX_SECONDS must be an integer and SLOWDOWN_TOLERANCE a number") from None
    logger.append_keys(run_id=run.run_id, phase=run.phase, job_name=run.job_name)
    described = _sagemaker().describe_ai_benchmark_job(AIBenchmarkJobName=run.job_name)
    status = described["AIBenchmarkJobStatus"]
    out = {**event, "status": status, "finished": False}
    if status not in TERMINAL:
        started = run.started_at
        if started.tzinfo is None:
            started = started.replace(tzinfo=UTC)
        if status == "InProgress" and (datetime.now(UTC) - started).total_seconds() > max_seconds:
            _sagemaker().stop_ai_benchmark_job(AIBenchmarkJobName=run.job_name)
            out["stop_requested"] = True
            logger.warning("benchmark job over its time limit: stop requested")
        return out

    if status == "Completed":
        measurement = benchmark_output.measure(_s3(), run.output_s3_uri)
        reason = (
            None
            if measurement["parsed"]
            else "the benchmark job completed but no output-token throughput was found in its output; "
            "the raw listing is in the run record"
        )
    else:
        measurement = {"parsed": False, "output_token_throughput": None, "metrics": {}}
        reason = f"benchmark job {status}: {described.get('FailureReason') or 'no reason given'}"
        if event.get("stop_requested"):  # an earlier poll stopped it at the limit
            reason += f" (stopped at the {max_seconds // 3600} h limit)"
    record = {
        "job_name": run.job_name,
        "job_arn": run.job_arn,
        "status": status,
        "served_head": run.served_head,
        "head": run.head,
        "output_s3_uri": run.output_s3_uri,
        "started_at": run.started_at.isoformat(),
        "ended_at": datetime.now(UTC).isoformat(),
        "reason": reason,
        **measurement,
    }
    key = {"model_name": {"S": model_name}, "run_id": {"S": run.run_id}}
    names = {"#m": f"benchmark_{run.phase}"}
    values = {":m": benchmark_record.to_attribute(record)}
    update = "SET #m = :m"
    result: dict[str, Any] = {
        **out,
        "finished": True,
        "ok": bool(measurement["parsed"]),
        "reason": reason,
        "metrics": measurement.get("metrics", {}),
        "output_token_throughput": measurement.get("output_token_throughput"),
    }
    metrics.add_dimension(name="ModelName", value=model_name)
    if not measurement["parsed"]:
        metrics.add_metric(name="EagleBenchmarkUnreadable", unit=MetricUnit.Count, value=1)
    if run.phase == "after":
        item = _dynamodb().get_item(TableName=table, Key=key, ConsistentRead=True).get("Item") or {}
        before = benchmark_record.from_attribute(item.get("benchmark_before"))
        job_speedup = benchmark_record.from_attribute(item.get("speedup"))
        comparison = compare(
            before,
            measurement,
            tolerance=tolerance,
            job_speedup=job_speedup if isinstance(job_speedup, float) else None,
        )
        names["#c"] = "benchmark_comparison"
        values[":c"] = benchmark_record.to_attribute(comparison)
        update += ", #c = :c"
        tool, cli = rollback_commands(
            parameter=_env("PROMOTION_PARAMETER"),
            table=table,
            region=os.environ.get("AWS_REGION", "<region>"),
            previous_head=benchmark_record.from_attribute(item.get("previous_head")),
            stack=os.environ.get("STACK_NAME", "<the model's stack>"),
        )
        result.update(
            comparison=comparison,
            slower=bool(comparison["slower"]),
            rollback_command=tool,
            rollback_cli=cli,
            reason=reason or comparison["verdict"],
        )
        if comparison["served_speedup"] is not None:
            metrics.add_metric(name="EagleServedSpeedup", unit=MetricUnit.NoUnit, value=comparison["served_speedup"])
            metrics.add_metric(name="EagleServedSlower", unit=MetricUnit.Count, value=1 if comparison["slower"] else 0)
    _dynamodb().update_item(
        TableName=table,
        Key=key,
        UpdateExpression=update,
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )
    logger.info("benchmark recorded", extra={"status": status, "ok": result["ok"], "reason": result["reason"]})
    return result


# ------------------------------------------------------------------------------------------ serving
@logger.inject_lambda_context(log_event=False)
def serving(event: dict[str, Any], context: Any) -> dict[str, Any]:
    ask: ServingEvent = _parse(event, _models().ServingEvent)
    component, serving_prefix = _env("COMPONENT_NAME"), _env("SERVING_MODEL_PREFIX")
    parameter = _env("PROMOTION_PARAMETER")
    try:
        limit = int(_env("DEPLOY_CHECKS"))
    except ValueError:
        raise ConfigurationError("DEPLOY_CHECKS must be an integer") from None
    checks = ask.checks + 1
    current = _ssm().get_parameter(Name=parameter)["Parameter"]["Value"].strip()
    if not _same_uri(current, ask.head):
        return {
            "state": "superseded",
            "served_head": None,
            "checks": checks,
            "give_up": True,
            "reason": f"{parameter} now holds {current}, not {ask.head}: rolled back or replaced; not measured",
        }
    served, status = _served(component, serving_prefix)
    if _same_uri(served, ask.head) and status == "InService":
        return {"state": "serving", "served_head": served, "checks": checks, "give_up": False, "reason": None}
    return {
        "state": "waiting",
        "served_head": served,
        "checks": checks,
        "give_up": checks >= limit,
        "reason": f"{component} serves {served or 'no draft head'} ({status}); the head is served after the next "
        "cdk deploy of the model's stack",
    }
