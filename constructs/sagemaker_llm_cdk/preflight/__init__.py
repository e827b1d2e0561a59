"""Preflight: what would make a ``cdk deploy`` of a config fail, found before CloudFormation starts.

Run it as ``make preflight`` (this repository), ``python -m sagemaker_llm_cdk.preflight --config
config/default.yaml [--region R] [--offline]`` (any team, from the wheel), or call
``run_preflight`` from your own app or CI. Each finding is one line: severity (blocker, warning,
info), what, why, how to fix. Any blocker means the deploy would fail or spend money for nothing.

**Offline** (no AWS call): the target region supports every CloudFormation resource type the
synthesized templates use (cfn-lint's per-region schemas), the region's partition fits the
container image and Powertools layer accounts, every instance type is offered for its use
(botocore's enums), capacity-plan purchase windows are not in the past and can hold the plan,
a bound plan can be Active when the endpoint needs it, and a bound endpoint's update policy has
the headroom its plan allows.

**With credentials** (read-only calls, skipped with ``--offline`` or when no credentials
resolve): the account matches the config's target, each plan's status and window
(``DescribeTrainingPlan``), Service Quotas for each endpoint instance type and the EAGLE job
(matched by quota *name*, e.g. "ml.p5e.48xlarge for endpoint usage"), model weights, adapter
archives and datasets present in S3 (``HeadObject`` / ``ListObjectsV2`` with ``MaxKeys=1``),
the Powertools layer version present in the region (``GetLayerVersionByArn``, and the public SSM
parameter with the latest version), and on-demand prices (``pricing`` ``GetProducts``).

Other checks plug in with ``register_check`` (offline or live); each gets a ``PreflightContext``.
Settings added later are read by attribute, so they slot in without a change here:
``endpoints[].instance_pools[].instance_type`` (``endpoint_instance_types``: quotas, prices and
instance-type checks cover every pool), ``endpoints[].update_policy`` ``rolling`` with
``rolling_batch_instances`` (``update_policy``: headroom), the bound plan's ``when_not_active: on_demand``
(``serves_on_demand_until_active``: an inactive plan is then a warning, not a blocker).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import regions
from ..core.errors import ConfigurationError
from ..operations.pricing import PriceList, PriceLookup
from . import live as _live_checks  # noqa: F401
from . import offline as _offline  # noqa: F401  (registers the offline checks, in order, before the live ones)
from . import placeholders as _placeholders  # noqa: F401  (the example-bucket blocker, offline)
from . import routers as _router_checks  # noqa: F401  (routers: region offline, destinations live)
from .context import (
    LIVE_CHECKS,
    OFFLINE_CHECKS,
    AwsClients,
    Check,
    PreflightContext,
    endpoint_instance_types,
    register_check,
    serves_on_demand_until_active,
    update_policy,
)
from .costs import cost_findings
from .findings import SEVERITIES, Finding, Severity, blocker, exit_code, format_findings, info, summary_line, warning
from .live import _error_code

if TYPE_CHECKING:
    from ..settings.config import AppConfig

__all__ = [
    "LIVE_CHECKS",
    "OFFLINE_CHECKS",
    "SEVERITIES",
    "AwsClients",
    "Check",
    "Finding",
    "PreflightContext",
    "Severity",
    "blocker",
    "cost_findings",
    "endpoint_instance_types",
    "exit_code",
    "format_findings",
    "info",
    "main",
    "register_check",
    "run_preflight",
    "serves_on_demand_until_active",
    "summary_line",
    "synthesize",
    "update_policy",
    "warning",
]


# ====================================================================== run
def run_preflight(
    config: AppConfig | str | Path,
    *,
    region: str | None = None,
    templates: Mapping[str, Mapping[str, Any]] | None = None,
    offline: bool = False,
    session: Any = None,
    clients: AwsClients | None = None,
    prices: PriceLookup | None = None,
    now: datetime | None = None,
    checks: Sequence[Check] | None = None,
    live_checks: Sequence[Check] | None = None,
) -> list[Finding]:
    """Every finding for deploying ``config`` to ``region``; raises ``ConfigurationError`` for a bad config file.

    :param config: a validated ``AppConfig`` or the path of a config file.
    :param region: the target region. Default: ``target.region``, then the session's region.
    :param templates: ``{name: template}`` of the synthesized app (``regions.load_templates("cdk.out")``);
        without them resource types are not checked and images and layers come from the config.
    :param offline: make no AWS call. Default: live checks run when credentials resolve.
    :param session: a boto3 session for the live checks. Default: boto3's default session.
    :param clients: clients for the live checks (tests pass stubbed ones). Default: from ``session``.
    :param prices: a price lookup for the cost lines. Default: the Price List API when live, else none.
    :param now: the time windows are checked against. Default: now (UTC).
    """
    from ..config.loading import load_config
    from ..settings.config import AppConfig

    source = "config"
    if not isinstance(config, AppConfig):
        source = str(config)
        config = load_config(config)
    findings: list[Finding] = []
    if region is None:
        region = config.target.region
    if region is None and not offline:
        region = _session_region(session)
    partition = regions.partition_of(region) if region else None
    ctx = PreflightContext(
        config=config,
        source=source,
        region=region,
        partition=partition,
        now=now or datetime.now(UTC),
        templates=templates,
        offline=offline,
    )
    if not offline:
        clients = clients or AwsClients(session=session)
        account = _caller_account(clients, region, findings)
        if account is not None:
            ctx.clients, ctx.account = clients, account
            ctx.prices = prices or PriceList(client_for=lambda api_region: clients.client("pricing", api_region))
    elif prices is not None:
        ctx.prices = prices
    for check in [
        *(OFFLINE_CHECKS if checks is None else checks),
        *((LIVE_CHECKS if live_checks is None else live_checks) if ctx.live else []),
    ]:
        findings.extend(_safely(check, ctx))
    findings.extend(_safely(cost_findings, ctx))
    return findings


def _safely(check: Check, ctx: PreflightContext) -> list[Finding]:
    try:
        return list(check(ctx))
    except Exception as error:  # a broken check must not hide the others' findings
        name = getattr(check, "__name__", "check")
        return [
            warning(
                f"preflight.{name}",
                f"check {name} could not run ({type(error).__name__}: {error})",
                "its findings are missing",
                "report this to the library's maintainers",
            )
        ]


def _session_region(session: Any) -> str | None:
    try:
        import boto3

        region = (session or boto3.Session()).region_name
    except Exception:
        return None
    return region if isinstance(region, str) else None


def _caller_account(clients: AwsClients, region: str | None, findings: list[Finding]) -> str | None:
    """The account of the credentials, or None (and a warning: the live checks did not run) when none resolve."""
    from botocore.exceptions import NoCredentialsError, NoRegionError, PartialCredentialsError

    try:
        return str(clients.client("sts", region).get_caller_identity()["Account"])
    except (NoCredentialsError, PartialCredentialsError, NoRegionError) as error:
        findings.append(
            warning(
                "credentials",
                f"live checks skipped: {type(error).__name__}",
                "plan status, quotas, S3 data, layers and prices need read-only credentials",
                "run with credentials (e.g. AWS_PROFILE=...) or pass --offline to silence this",
            )
        )
    except Exception as error:
        findings.append(
            warning(
                "credentials",
                f"live checks skipped: STS GetCallerIdentity failed ({_error_code(error)})",
                "plan status, quotas, S3 data, layers and prices were not checked",
                "check the credentials, or pass --offline",
            )
        )
    return None


# ===================================================================== synth
def synthesize(
    app: str, *, config_path: str | Path, cwd: str | Path = ".", timeout: int = 900
) -> dict[str, dict[str, Any]]:
    """Run the CDK app command ``app`` as the CDK CLI would (``CDK_OUTDIR``, ``CDK_CONTEXT_JSON``).

    The context is ``cdk.json``'s (feature flags) plus ``config``. A command starting with
    ``python``/``python3`` runs with this interpreter, so the app sees the same packages.
    Returns the templates; raises ``RuntimeError`` with the app's last output lines when it fails.
    """
    command = shlex.split(app)
    if command and command[0] in ("python", "python3"):
        command[0] = sys.executable
    context = {**_cdk_json(Path(cwd)).get("context", {}), "config": str(config_path)}
    with tempfile.TemporaryDirectory(prefix="preflight-") as outdir:
        env = {**os.environ, "CDK_OUTDIR": outdir, "CDK_CONTEXT_JSON": json.dumps(context)}
        result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
            raise RuntimeError(tail or f"exit code {result.returncode}")
        return regions.load_templates(outdir)


def _cdk_json(cwd: Path) -> dict[str, Any]:
    try:
        data = json.loads((cwd / "cdk.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _app_command(cwd: Path) -> str | None:
    app = _cdk_json(cwd).get("app")
    return app if isinstance(app, str) else None


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``python -m sagemaker_llm_cdk.preflight --config FILE [--region R] [--offline]``.

    Exit codes: 0 no blocker, 1 at least one blocker, 2 a bad config file or bad arguments.
    """
    parser = argparse.ArgumentParser(
        prog="python -m sagemaker_llm_cdk.preflight",
        description="Find what would make a deploy of a config fail, before CloudFormation starts.",
    )
    parser.add_argument("--config", required=True, help="deployment config file (YAML)")
    parser.add_argument("--region", help="target region. Default: target.region, then your AWS CLI region")
    parser.add_argument(
        "--offline", action="store_true", help="make no AWS call (skip plan, quota, S3, layer and price checks)"
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--cdk-out", help="read the templates of an existing synth (e.g. cdk.out) instead of synthesizing"
    )
    source.add_argument("--app", help="CDK app command to synthesize with. Default: 'app' from ./cdk.json")
    source.add_argument(
        "--no-synth", action="store_true", help="check the config only (resource types are not checked)"
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON lines, then the summary")
    parser.add_argument(
        "--require-live",
        action="store_true",
        help="exit 2 when no AWS credentials resolve (the live checks could not run), as before a deploy",
    )
    args = parser.parse_args(argv)
    if args.require_live and args.offline:
        parser.error("--require-live needs the live checks: drop --offline")

    from ..config.loading import load_config

    try:
        config = load_config(args.config)
    except ConfigurationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    templates: dict[str, dict[str, Any]] | None = None
    early: list[Finding] = []
    if args.cdk_out:
        if not Path(args.cdk_out, "manifest.json").is_file() and not regions.template_files(args.cdk_out):
            print(
                f"error: --cdk-out {args.cdk_out}: no synthesized templates there; fix: run `make synth` first",
                file=sys.stderr,
            )
            return 2
        templates = regions.load_templates(args.cdk_out)
    elif not args.no_synth:
        app = args.app or _app_command(Path.cwd())
        if app is not None:
            print(f"preflight: synthesizing `{app}` with config {args.config} ...", file=sys.stderr)
            try:
                templates = synthesize(app, config_path=args.config)
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
                early.append(
                    blocker(
                        "synth",
                        "the app does not synthesize",
                        str(error).replace("\n", " | ")[-600:],
                        "fix the synth error (run `make synth`) and run preflight again",
                    )
                )
    findings = early + run_preflight(config, region=args.region, templates=templates, offline=args.offline)
    region = args.region or config.target.region or (None if args.offline else _session_region(None))
    live = any(f.check == "credentials.account" for f in findings)
    if args.json:
        for finding in findings:
            print(json.dumps(asdict(finding), sort_keys=True))
        print(summary_line(findings, source=args.config, region=region, live=live))
    else:
        print(format_findings(findings, source=args.config, region=region, live=live))
    if args.require_live and not live:
        skipped = next((f for f in findings if f.check == "credentials"), None)
        print(
            "error: a deploy needs AWS credentials and none resolved"
            + (f" ({skipped.what.removeprefix('live checks skipped: ')})" if skipped else "")
            + "; fix: set AWS_PROFILE (or sign in with `aws sso login`) for the target account, then run it again",
            file=sys.stderr,
        )
        return 2
    return exit_code(findings)
