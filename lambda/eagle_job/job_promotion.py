"""The promotion parameter and the head it names: which head this run must beat, and promoting this run's head.

The parameter holds the plain S3 URI of the approved draft head, or ``none`` (``NO_HEAD``) while no head is
approved; the run that promoted a head is found by its draft URI in the runs table. ``decide_and_promote`` is
``record``'s promotion step: it finds the head served now (``served_incumbent``, see ``index``'s docstring),
decides (``job_decision.decide``), checks the draft head's objects exist, notes the head a rollback returns to
and writes the parameter unless a newer run holds it. The clients are the caller's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from job_decision import Decision, Incumbent, decide, pretrained_incumbent
from job_outputs import prefix_has_objects
from job_run_record import from_dynamo
from job_settings import pretrained_settings
from job_status import ended
from job_times import iso, parse_time
from llm_cdk_shared.aws_errors import not_found

if TYPE_CHECKING:  # names in annotations only
    from typing import TypeAlias

    from job_results import ResultsSummary

    RecordEvent: TypeAlias = Any  # job_events.models().RecordEvent, built on first use

logger = Logger()  # the function's logger (Powertools shares one per service)

#: Parameter value meaning "no approved draft head" (the value the parameter is created with).
NO_HEAD = "none"


@dataclass(frozen=True)
class Promotion:
    """What ``record`` decided about the run's head, the head it was compared with, and the head served before
    it was promoted (what a rollback returns to; None: no head)."""

    incumbent: Incumbent
    decision: Decision
    head_before: str | None

    @property
    def previous_head(self) -> str | None:
        """The run record's ``previous_head``: for a promoted run only (``none`` when no head was served)."""
        return (self.head_before or NO_HEAD) if self.decision.promote else None


def decide_and_promote(
    *,
    ssm: Any,
    dynamodb: Any,
    s3: Any,
    parameter: str,
    table: str,
    threshold: float,
    run: RecordEvent,
    status: str,
    results: ResultsSummary | None,
    previous: dict[str, Any] | None,
) -> Promotion:
    """Decide whether this run's head replaces the served one and, if so, write it to the parameter."""
    incumbent = served_incumbent(ssm, dynamodb, parameter, table, run, results, previous)
    decision = decide(
        status=status,
        failure_reason=run.job.FailureReason,
        results=results,
        threshold=threshold,
        results_uri=run.results_s3_uri,
        incumbent=incumbent,
    )
    if decision.promote and not prefix_has_objects(s3, run.draft_model_s3_uri):
        decision = Decision(False, f"{decision.reason}, but no draft head objects under {run.draft_model_s3_uri}")
    head_before = current_head(ssm, parameter) if decision.promote else None  # what a rollback returns to
    if head_before is not None and head_before == run.draft_model_s3_uri:  # a retry after this run promoted
        stored_before = (previous or {}).get("previous_head", {}).get("S")
        head_before = None if stored_before in (None, NO_HEAD) else stored_before
    if decision.promote:
        assert results is not None and results.speedup is not None
        decision = promote(
            ssm,
            dynamodb,
            parameter=parameter,
            table=table,
            run=run,
            speedup=results.speedup,
            completed_at=iso(ended(run.job)),
            decision=decision,
        )
    return Promotion(incumbent=incumbent, decision=decision, head_before=head_before)


def served_incumbent(
    ssm: Any,
    dynamodb: Any,
    parameter: str,
    table: str,
    run: RecordEvent,
    results: ResultsSummary | None,
    previous: dict[str, Any] | None,
) -> Incumbent:
    """The head served now, which this run's head must beat (see ``index``'s docstring)."""
    pretrained_uri, pretrained_speedup = pretrained_settings()
    current = current_head(ssm, parameter)
    if current is not None and current == run.draft_model_s3_uri:
        # a retry after this run promoted: compare with what the first attempt compared with
        basis = from_dynamo(previous).get("comparison_basis") if previous else None
        if isinstance(basis, dict):
            figures = tuple((str(f["source"]), float(f["speedup"])) for f in basis.get("figures") or [])
            return Incumbent(
                kind=str(basis.get("served_head", "none")),
                s3_uri=basis.get("s3_uri"),
                figures=figures,
                required=basis.get("served_head") == "pretrained",
                note=basis.get("note"),
            )
        return Incumbent()
    holder = (promoting_run(dynamodb, table, run.model_name, current) or {}) if current is not None else {}
    if current is not None and not other_weights(holder, run):
        if holder.get("speedup") is not None:
            return Incumbent(
                kind="promoted",
                s3_uri=current,
                figures=((f"run record {holder.get('run_id')}", float(holder["speedup"])),),
            )
        return Incumbent(kind="promoted", s3_uri=current, note="no run record promoted it (set by hand?)")
    # A head trained on other weights is not served (the serving model leaves it out): what is served is compared.
    if pretrained_uri is not None:
        return pretrained_incumbent(pretrained_uri, results, pretrained_speedup)
    return Incumbent()


def other_weights(holder: dict[str, Any], run: RecordEvent) -> bool:
    """True when the run that promoted the served head trained on other weights than this run: the deploy serves no
    head bound to weights the model no longer serves, so that head neither sets the bar nor blocks this one."""
    trained_on = holder.get("model_s3_uri")
    return isinstance(trained_on, str) and trained_on != run.model_s3_uri


def current_head(ssm: Any, parameter: str) -> str | None:
    """The draft head URI the parameter holds now; None when it holds none (or does not exist)."""
    try:
        value = ssm.get_parameter(Name=parameter)["Parameter"]["Value"].strip()
    except ClientError as exc:
        if not_found(exc, "ssm"):
            return None
        raise
    if not value or value.lower() == NO_HEAD:
        return None
    if value.startswith("{"):  # the JSON value written by the first version of this function
        try:
            legacy = json.loads(value)
        except ValueError:
            return None
        uri = legacy.get("draft_model_s3_uri") if isinstance(legacy, dict) else None
        return uri if isinstance(uri, str) and uri else None
    return value


def promoting_run(dynamodb: Any, table: str, model_name: str, draft_uri: str) -> dict[str, Any] | None:
    """The recorded run of ``model_name`` that promoted ``draft_uri``, if the runs table has one."""
    paginator = dynamodb.get_paginator("query")
    pages = paginator.paginate(
        TableName=table,
        KeyConditionExpression="#m = :m",
        FilterExpression="#u = :u AND #d = :d",
        ProjectionExpression="#r, #e, #s, #w",
        ExpressionAttributeNames={
            "#m": "model_name",
            "#u": "draft_model_s3_uri",
            "#d": "decision",
            "#r": "run_id",
            "#e": "ended_at",
            "#s": "speedup",
            "#w": "model_s3_uri",
        },
        ExpressionAttributeValues={":m": {"S": model_name}, ":u": {"S": draft_uri}, ":d": {"S": "promoted"}},
        ConsistentRead=True,
    )
    for page in pages:
        for item in page.get("Items", []):
            return from_dynamo(item)
    return None


def promote(
    ssm: Any,
    dynamodb: Any,
    *,
    parameter: str,
    table: str,
    run: RecordEvent,
    speedup: float,
    completed_at: str | None,
    decision: Decision,
) -> Decision:
    """Write this run's draft head URI to the parameter unless it holds it already, or holds the
    head of a run that completed later (looked up by its draft URI in the runs table)."""
    current = current_head(ssm, parameter)
    if current == run.draft_model_s3_uri:
        logger.info("draft head of this run is already promoted", extra={"parameter": parameter})
        return decision
    if current is not None:
        holder = promoting_run(dynamodb, table, run.model_name, current) or {}
        holder_done, this_done = parse_time(holder.get("ended_at")), parse_time(completed_at)
        if holder_done and this_done and holder_done > this_done and not other_weights(holder, run):
            return Decision(
                False,
                f"{decision.reason}, but run {holder.get('run_id')!r} (completed {holder.get('ended_at')}) "
                "is already promoted and is newer; not replacing it with this older run",
            )
    ssm.put_parameter(Name=parameter, Value=run.draft_model_s3_uri, Type="String", Overwrite=True)
    logger.info("draft head promoted", extra={"parameter": parameter, "speedup": speedup})
    return decision
