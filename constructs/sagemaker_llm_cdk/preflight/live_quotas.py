"""Live preflight check against Service Quotas: the instance quotas the endpoints and EAGLE jobs need.

``check_quotas`` reads SageMaker's quotas (the applied values over AWS's defaults) and compares each
endpoint instance type's quota (``ENDPOINT_QUOTA_NAME``, looked up by name) with the instances the config
may run on it, and each EAGLE job's optimization-job quota with the instances the job needs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .context import PreflightContext, eagle_jobs, endpoint_instance_types
from .findings import Finding, blocker, info, warning
from .live_errors import _error_code

SAGEMAKER_QUOTA_SERVICE = "sagemaker"
ENDPOINT_QUOTA_NAME = "{instance_type} for endpoint usage"
"""Service Quotas name of the per-instance-type endpoint quota (looked up by name, never by a guessed code)."""


def _quotas(ctx: PreflightContext) -> dict[str, float] | None:
    """``{quota name: value}`` of SageMaker's quotas (applied values over AWS defaults), or None when not readable."""
    assert ctx.clients is not None
    client = ctx.clients.client("service-quotas", ctx.region)
    values: dict[str, float] = {}
    for operation, applied in (("list_aws_default_service_quotas", False), ("list_service_quotas", True)):
        request: dict[str, Any] = {"ServiceCode": SAGEMAKER_QUOTA_SERVICE, "MaxResults": 100}
        for _ in range(50):
            response = getattr(client, operation)(**request)
            for quota in response.get("Quotas", []):
                name, value = quota.get("QuotaName"), quota.get("Value")
                if isinstance(name, str) and isinstance(value, (int, float)) and (applied or name not in values):
                    values[name] = float(value)
            token = response.get("NextToken")
            if not token:
                break
            request = {**request, "NextToken": token}
    return values


def check_quotas(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.clients is None or ctx.region is None:
        return
    try:
        quotas = _quotas(ctx)
    except Exception as error:
        yield warning(
            "quota",
            f"Service Quotas could not be read ({_error_code(error)})",
            "instance quotas decide whether the endpoint and the EAGLE job get instances",
            "allow servicequotas:ListServiceQuotas and ListAWSDefaultServiceQuotas, or check the console",
        )
        return
    assert quotas is not None
    needs: dict[str, tuple[int, list[str], bool]] = {}
    for path, endpoint in ctx.endpoints():
        on_plan = ctx.plan_of(endpoint) is not None
        for instance_type in endpoint_instance_types(endpoint):
            name = ENDPOINT_QUOTA_NAME.format(instance_type=instance_type)
            count, paths, plan_only = needs.get(name, (0, [], True))
            needs[name] = (count + endpoint.scaling.max_instances, [*paths, path], plan_only and on_plan)
    for name, (count, paths, plan_only) in sorted(needs.items()):
        value = quotas.get(name)
        where = ", ".join(paths)
        if value is None:
            yield warning(
                "quota.endpoint",
                f"no Service Quotas entry named {name!r}",
                "the instance type's endpoint quota could not be checked",
                "check the quota in the console",
                where,
            )
        elif value < count:
            make = warning if plan_only else blocker
            yield make(
                "quota.endpoint",
                f"quota {name!r} is {value:g}, the config may run {count}",
                "instances beyond the quota fail to launch"
                + (
                    " (the endpoint runs on a plan; whether plan instances count against it is not documented)"
                    if plan_only
                    else ""
                ),
                f"request an increase to {count} in Service Quotas, or lower scaling.max_instances",
                where,
            )
        else:
            yield info("quota.endpoint", f"quota {name!r} is {value:g}; the config needs up to {count}", subject=where)
    for path, _endpoint, eagle, job_type in eagle_jobs(ctx):
        matches = {n: v for n, v in quotas.items() if job_type in n and "optimization" in n.lower()}
        if not matches:
            yield warning(
                "quota.eagle-job",
                f"no Service Quotas entry names {job_type} for optimization jobs",
                "the EAGLE job's on-demand capacity could not be checked; with none, each run fails",
                "find the quota for optimization jobs in the Service Quotas console",
                path,
            )
            continue
        for name, value in sorted(matches.items()):
            if value < eagle.max_instance_count:
                yield blocker(
                    "quota.eagle-job",
                    f"quota {name!r} is {value:g}, the job needs {eagle.max_instance_count}",
                    "the optimization job cannot start; every scheduled run fails",
                    f"request {eagle.max_instance_count} in Service Quotas or pick another job_instance_type",
                    path,
                )
            else:
                yield info("quota.eagle-job", f"quota {name!r} is {value:g}", subject=path)
