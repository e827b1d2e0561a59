"""Roll an EAGLE draft head back: the promotion parameter to the previous head, or to ``none``.

    python -m tools.eagle_rollback --parameter /sagemaker-llm/state/eagle/<model>/draft-head \\
        --table <the *EagleRuns table> [--to previous|none] [--dry-run]

The parameter is what the platform stack reads on every deploy (``AWS::SSM::Parameter::Value``), so
after this command the next ``cdk deploy`` serves the previous head (``--to previous``, the default:
the ``previous_head`` the run that promoted the current head recorded) or no head at all (``--to
none``: the model's inference component goes back to the plain model). Nothing else changes until
that deploy. Prints what it did; exits 1 with the reason when there is nothing to roll back.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

NO_HEAD = "none"


def _promoting_run(dynamodb: Any, table: str, head: str) -> dict[str, Any] | None:
    """The run record that promoted ``head`` (newest first if several)."""
    found: list[dict[str, Any]] = []
    paginator = dynamodb.get_paginator("scan")
    for page in paginator.paginate(
        TableName=table,
        FilterExpression="#u = :u AND #d = :d",
        ExpressionAttributeNames={"#u": "draft_model_s3_uri", "#d": "decision"},
        ExpressionAttributeValues={":u": {"S": head}, ":d": {"S": "promoted"}},
        ConsistentRead=True,
    ):
        found.extend(page.get("Items", []))
    found.sort(key=lambda item: item.get("ended_at", {}).get("S", ""), reverse=True)
    return found[0] if found else None


def rollback(
    ssm: Any, dynamodb: Any, *, parameter: str, table: str, to: str = "previous", dry_run: bool = False
) -> tuple[str, str]:
    """``(old value, new value)`` of the parameter after rolling back; raises ``LookupError`` with the reason."""
    current = ssm.get_parameter(Name=parameter)["Parameter"]["Value"].strip()
    if current.lower() == NO_HEAD:
        raise LookupError(f"{parameter} holds no head ('{NO_HEAD}'): nothing to roll back")
    target = NO_HEAD
    if to == "previous":
        run = _promoting_run(dynamodb, table, current)
        if run is None:
            raise LookupError(f"no run in {table} promoted {current}; use --to none to withdraw it")
        target = run.get("previous_head", {}).get("S") or NO_HEAD
        if target == current:
            target = NO_HEAD
    if not dry_run:
        ssm.put_parameter(Name=parameter, Value=target, Type="String", Overwrite=True)
    return current, target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--parameter", required=True, help="the promotion parameter, /sagemaker-llm/state/eagle/<model>/draft-head"
    )
    parser.add_argument("--table", required=True, help="the model's EAGLE runs table (stack output *EagleRuns)")
    parser.add_argument(
        "--to", choices=["previous", "none"], default="previous", help="previous head (default) or none"
    )
    parser.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    parser.add_argument("--region", help="AWS region (default: the CLI's)")
    args = parser.parse_args(argv)
    import boto3

    session = boto3.Session(region_name=args.region)
    try:
        old, new = rollback(
            session.client("ssm"),
            session.client("dynamodb"),
            parameter=args.parameter,
            table=args.table,
            to=args.to,
            dry_run=args.dry_run,
        )
    except LookupError as error:
        print(f"eagle_rollback: {error}", file=sys.stderr)
        return 1
    verb = "would set" if args.dry_run else "set"
    print(
        f"{verb} {args.parameter}: {old} -> {new}\nnext: cdk deploy the platform stack; it then serves "
        f"{'no draft head' if new == NO_HEAD else new}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
