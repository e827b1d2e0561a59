"""What the benchmark check records beside a run: the measurement's DynamoDB form, the comparison, the rollback.

The check writes each measurement into the run record (``benchmark_before`` / ``benchmark_after``), numbers as
Decimal, and reads the record back as plain values. After a head is served, ``compare`` sets the served speedup
(after / before output-token throughput) beside the optimization job's own figure; when serving the head is
slower than the tolerance allows, the check publishes ``rollback_commands``: this repository's rollback tool and
its AWS CLI equivalent, each followed by the deploy that serves the previous head.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

NO_HEAD = "none"
"""The promotion parameter's value while no head is approved."""


def to_attribute(value: Any) -> dict[str, Any]:
    """``value`` as one DynamoDB attribute (floats as Decimal)."""

    def convert(v: Any) -> Any:
        if isinstance(v, float):
            return Decimal(repr(v))
        if isinstance(v, dict):
            return {k: convert(x) for k, x in v.items()}
        if isinstance(v, list):
            return [convert(x) for x in v]
        return v

    from boto3.dynamodb.types import TypeSerializer  # only the record path needs it: not on the cold start

    return TypeSerializer().serialize(convert(value))


def from_attribute(attribute: dict[str, Any] | None) -> Any:
    """A DynamoDB attribute as a plain value (numbers as float); None for a missing one."""
    if not attribute:
        return None
    from boto3.dynamodb.types import TypeDeserializer

    value = TypeDeserializer().deserialize(attribute)

    def convert(v: Any) -> Any:
        if isinstance(v, Decimal):
            return float(v)
        if isinstance(v, dict):
            return {k: convert(x) for k, x in v.items()}
        if isinstance(v, list):
            return [convert(x) for x in v]
        return v

    return convert(value)


def compare(
    before: dict[str, Any] | None, after: dict[str, Any], *, tolerance: float, job_speedup: float | None
) -> dict[str, Any]:
    """Served speedup (after / before output-token throughput), beside the optimization job's own figure."""
    base = (before or {}).get("output_token_throughput") if (before or {}).get("parsed") else None
    with_head = after.get("output_token_throughput") if after.get("parsed") else None
    comparison: dict[str, Any] = {
        "job_speedup": job_speedup,
        "slowdown_tolerance": tolerance,
        "before_throughput": base,
        "after_throughput": with_head,
    }
    if base is None or with_head is None or base <= 0:
        return {
            **comparison,
            "served_speedup": None,
            "slower": None,
            "verdict": "not compared: "
            + (
                "no before measurement with a throughput"
                if base is None or base <= 0
                else "no after measurement with a throughput"
            ),
        }
    ratio = with_head / base
    slower = ratio < 1.0 - tolerance
    latency = {}
    for name in ("request_latency", "time_to_first_token", "inter_token_latency"):
        b = ((before or {}).get("metrics") or {}).get(name, {}).get("avg")
        a = (after.get("metrics") or {}).get(name, {}).get("avg")
        if b and a:
            latency[name] = a / b
    return {
        **comparison,
        "served_speedup": ratio,
        "latency_ratio": latency,
        "slower": slower,
        "verdict": (
            f"slower with the head: {ratio:.3f}x the throughput before (tolerance {tolerance:g})"
            if slower
            else f"{ratio:.3f}x the throughput before"
        ),
    }


def rollback_commands(
    *, parameter: str, table: str, region: str, previous_head: str | None, stack: str
) -> tuple[str, str]:
    """(the repository's rollback command, the AWS CLI equivalent), each followed by the deploy that serves it."""
    target = previous_head or NO_HEAD
    tool = (
        f"python -m tools.eagle_rollback --parameter {parameter} --table {table} --region {region}"
        f" && cdk deploy {stack}"
    )
    cli = (
        f"aws ssm put-parameter --name {parameter} --value {target} --type String --overwrite --region {region}"
        f" && cdk deploy {stack}"
    )
    return tool, cli
