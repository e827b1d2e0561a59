"""Live preflight checks: read-only AWS calls, run only when credentials resolve and not ``--offline``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .context import (
    LAYER_ARN,
    POWERTOOLS_NAME,
    PreflightContext,
    _iso,
    _live,
    eagle_jobs,
    endpoint_instance_types,
    serves_on_demand_until_active,
)
from .findings import Finding, blocker, info, warning
from .offline import _layers

if TYPE_CHECKING:
    from ..settings.capacity import CapacityPlanSpec

SAGEMAKER_QUOTA_SERVICE = "sagemaker"
ENDPOINT_QUOTA_NAME = "{instance_type} for endpoint usage"
"""Service Quotas name of the per-instance-type endpoint quota (looked up by name, never by a guessed code)."""


# =============================================================== live checks
def _error_code(error: Exception) -> str:
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", type(error).__name__))


_NOT_FOUND = (
    "ResourceNotFound",
    "ResourceNotFoundException",
    "ValidationException",
    "404",
    "NoSuchKey",
    "NoSuchBucket",
    "NotFound",
    "ParameterNotFound",
)
_DENIED = ("AccessDenied", "AccessDeniedException", "403", "UnauthorizedOperation", "Forbidden")


@_live
def check_account(ctx: PreflightContext) -> Iterable[Finding]:
    target = ctx.config.target.account
    if target is not None and ctx.account is not None and ctx.account != target:
        yield blocker(
            "credentials.account",
            f"credentials are for account {ctx.account}, target.account is {target}",
            "the stacks are bound to target.account; CloudFormation refuses to deploy them elsewhere, and "
            "the live checks looked at the wrong account",
            f"use credentials for account {target}",
        )
    elif ctx.account is not None:
        yield info("credentials.account", f"live checks ran as account {ctx.account}")


@_live
def check_plans_live(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.clients is None or ctx.region is None:
        return
    sagemaker = ctx.clients.client("sagemaker", ctx.region)
    bound_by = {getattr(e, "capacity_plan", None): p for p, e in ctx.endpoints()}
    for index, plan in enumerate(ctx.config.capacity_plans):
        path = f"capacity_plans[{index}]"
        endpoint_path = bound_by.get(plan.plan_name)
        physical = ctx.plan_physical_name(plan)  # what the stacks buy or adopt, not always the config name
        try:
            described = sagemaker.describe_training_plan(TrainingPlanName=physical)
        except Exception as error:
            code = _error_code(error)
            if code in _DENIED:
                yield warning(
                    "plan.status",
                    f"not allowed to describe plan {plan.plan_name} ({code})",
                    "its status and window are unknown",
                    "allow sagemaker:DescribeTrainingPlan",
                    path,
                )
            elif code in _NOT_FOUND:
                if plan.effective_mode == "existing":
                    yield blocker(
                        "plan.status",
                        f"plan {plan.plan_name} does not exist in {ctx.region}",
                        "an existing plan must be there to bind",
                        "buy it first, or correct name/existing_plan_arn",
                        path,
                    )
                elif endpoint_path is not None:
                    yield blocker(
                        "plan.status",
                        f"plan {plan.plan_name} is not bought yet (no TrainingPlanName {physical}) "
                        f"and {endpoint_path} is bound to it",
                        "a newly bought plan is not Active until its start; the endpoint gets no instances",
                        "buy the plan first, bind it once it is Active",
                        path,
                    )
                else:
                    yield info(
                        "plan.status",
                        f"plan {plan.plan_name} is not bought yet: no TrainingPlanName {physical} (see plan.purchase)",
                        subject=path,
                    )
            else:
                yield warning(
                    "plan.status",
                    f"DescribeTrainingPlan {plan.plan_name} failed ({code})",
                    "its status and window are unknown",
                    "retry, or check the plan in the console",
                    path,
                )
            continue
        yield from _plan_findings(ctx, plan, described, path, endpoint_path)


MAX_S3_CHECKED = 100
"""S3 locations probed per run (one call each)."""
MAX_NAMES_CHECKED = 50
"""Names probed per run (one Describe call each); the rest are reported as not checked."""


@_live
def check_names_free(ctx: PreflightContext) -> Iterable[Finding]:
    """Fixed physical names (inference components, ``endpoint_name``) not already taken outside the stack, and not
    re-taken by a renamed endpoint: CloudFormation creates the new endpoint and its components before it deletes
    the old ones, so a component name the old endpoint still holds fails the create."""
    if ctx.clients is None or ctx.region is None:
        return
    from ..core.name_rules import as_prefix, prefixed_name

    # The names the stack creates: a pinned physical_name, else <stack name>-<name> (naming.component_name), each
    # with the endpoint name it goes on when the config pins that name (a generated one is known only after deploy).
    prefix = as_prefix(ctx.config.stack_name)
    names: list[tuple[str, str, str, str | None]] = []  # (config path, kind, name, endpoint name)
    for path, endpoint in ctx.endpoints():
        if endpoint.endpoint_name:
            names.append((f"{path}.endpoint_name", "endpoint", endpoint.endpoint_name, None))
        for m_index, model in enumerate(endpoint.models):
            names.append(
                (
                    f"{path}.models[{m_index}].name",
                    "inference component",
                    model.physical_name or prefixed_name(prefix, model.name),
                    endpoint.endpoint_name,
                )
            )
            for a_index, adapter in enumerate(model.adapters):
                names.append(
                    (
                        f"{path}.models[{m_index}].adapters[{a_index}].name",
                        "inference component",
                        adapter.physical_name or prefixed_name(prefix, adapter.name),
                        endpoint.endpoint_name,
                    )
                )
    if not names:
        return
    stack_exists = _stack_exists(ctx)
    sagemaker = ctx.clients.client("sagemaker", ctx.region)
    for path, kind, name, endpoint_name in names[:MAX_NAMES_CHECKED]:
        described: Mapping[str, Any] = {}
        try:
            if kind == "endpoint":
                sagemaker.describe_endpoint(EndpointName=name)
            else:
                described = sagemaker.describe_inference_component(InferenceComponentName=name)
        except Exception as error:
            if _error_code(error) not in _NOT_FOUND:
                yield warning(
                    "names.free",
                    f"could not check whether {kind} {name} exists ({_error_code(error)})",
                    "a name taken outside the stack fails the create",
                    "allow sagemaker:DescribeEndpoint and DescribeInferenceComponent",
                    path,
                )
            continue
        held_by = described.get("EndpointName")
        on = f" (on endpoint {held_by})" if held_by else ""
        if stack_exists is False:
            yield blocker(
                "names.free",
                f"{kind} {name} already exists{on} and stack {ctx.config.stack_name} does not",
                f"{kind} names are unique in an account and region; CloudFormation cannot create a second one",
                "rename it in the config, or delete the old one if nothing uses it",
                path,
            )
        elif stack_exists is True and held_by and endpoint_name and held_by != endpoint_name:
            yield blocker(
                "names.free",
                f"{kind} {name} is on endpoint {held_by}, and the config puts it on endpoint {endpoint_name}",
                "CloudFormation creates the renamed endpoint and its components before it deletes the old "
                "ones, so the create fails while the old endpoint still holds the name (after the new "
                "endpoint's instances were provisioned), and the update rolls back",
                "give the component a name new to the account as well (physical_name) in the same deploy, "
                "or keep the endpoint's name (docs/troubleshooting.md#a-deploy-that-fails-on-a-name)",
                path,
            )
        elif stack_exists is True:
            yield info(
                "names.free",
                f"{kind} {name} exists{on}; stack {ctx.config.stack_name} exists too (an update)",
                subject=path,
            )
    if len(names) > MAX_NAMES_CHECKED:
        yield info(
            "names.free", f"{len(names) - MAX_NAMES_CHECKED} more name(s) not checked (first {MAX_NAMES_CHECKED} only)"
        )


def _stack_exists(ctx: PreflightContext) -> bool | None:
    assert ctx.clients is not None
    try:
        ctx.clients.client("cloudformation", ctx.region).describe_stacks(StackName=ctx.config.stack_name)
    except Exception as error:
        if _error_code(error) == "ValidationError" and "does not exist" in str(error):
            return False
        return None
    return True


def _plan_findings(
    ctx: PreflightContext, plan: CapacityPlanSpec, described: Mapping[str, Any], path: str, endpoint_path: str | None
) -> Iterator[Finding]:
    status = described.get("Status")
    start, end = described.get("StartTime"), described.get("EndTime")
    window = (
        f"{_iso(start) if isinstance(start, datetime) else '?'} to {_iso(end) if isinstance(end, datetime) else '?'}"
    )
    targets = described.get("TargetResources") or []
    if targets and "endpoint" not in targets:
        yield blocker(
            "plan.target",
            f"plan {plan.plan_name} is for {', '.join(targets)}, not endpoints",
            "only plans bought with target 'endpoint' can serve an endpoint",
            "buy a plan for endpoints",
            path,
        )
    types = {s.get("InstanceType") for s in described.get("ReservedCapacitySummaries") or [] if s.get("InstanceType")}
    if types and plan.instance_type not in types:
        yield blocker(
            "plan.instances",
            f"plan {plan.plan_name} holds {', '.join(sorted(types))}, the config says {plan.instance_type}",
            "the endpoint's instance type must equal the plan's",
            "correct instance_type in the config",
            path,
        )
    total = described.get("TotalInstanceCount")
    if isinstance(total, int) and total < plan.instance_count:
        yield blocker(
            "plan.instances",
            f"plan {plan.plan_name} holds {total} instance(s), the config says {plan.instance_count}",
            "scaling and headroom were checked against more instances than exist",
            f"set instance_count to {total}",
            path,
        )
    if status == "Active":
        if isinstance(end, datetime):
            left = end - ctx.now
            if left <= timedelta(days=plan.expiry_warning_days):
                yield warning(
                    "plan.status",
                    f"plan {plan.plan_name} ends {_iso(end)} ({left.days} day(s) left)",
                    "after the end, invocations fail with a capacity error",
                    "renew or move the endpoint to on-demand capacity before then",
                    endpoint_path or path,
                )
        fee = described.get("UpfrontFee")
        paid = f", upfront fee {described.get('CurrencyCode', '')} {fee}".replace("  ", " ") if fee else ""
        yield info("plan.status", f"plan {plan.plan_name} is Active ({window}{paid})", subject=path)
    elif endpoint_path is not None:
        endpoint = next((e for p, e in ctx.endpoints() if p == endpoint_path), None)
        make = warning if serves_on_demand_until_active(ctx, endpoint) else blocker
        yield make(
            "plan.status",
            f"plan {plan.plan_name} is {status} ({window})",
            "a plan must be Active to serve an endpoint; the endpoint would get no instances and the deploy fail",
            "deploy the endpoint on on-demand capacity until the plan is Active"
            if status in ("Pending", "Scheduled")
            else "bind another plan or remove capacity_plan",
            endpoint_path,
        )
    else:
        yield info("plan.status", f"plan {plan.plan_name} is {status} ({window})", subject=path)


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
                if isinstance(name, str) and isinstance(value, (int, float)):
                    if applied or name not in values:
                        values[name] = float(value)
            token = response.get("NextToken")
            if not token:
                break
            request = {**request, "NextToken": token}
    return values


@_live
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


def _s3_locations(ctx: PreflightContext) -> Iterator[tuple[str, str, str]]:
    """(config path, what, s3 URI) of every S3 location the config reads at deploy or run time."""
    for path, endpoint in ctx.endpoints():
        for m_index, model in enumerate(endpoint.models):
            model_path = f"{path}.models[{m_index}]"
            yield f"{model_path}.model_data_s3_uri", "model weights", model.model_data_s3_uri
            for a_index, adapter in enumerate(model.adapters):
                yield (
                    f"{model_path}.adapters[{a_index}].artifact_s3_uri",
                    f"adapter {adapter.name}",
                    adapter.artifact_s3_uri,
                )
            if model.eagle is not None and model.eagle.dataset.s3_uri:
                yield f"{model_path}.eagle.dataset.s3_uri", "EAGLE dataset", model.eagle.dataset.s3_uri


@_live
def check_s3(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.clients is None:
        return
    s3 = ctx.clients.client("s3", ctx.region)
    locations = list(_s3_locations(ctx))
    found = 0
    for path, what, uri in locations[:MAX_S3_CHECKED]:
        bucket, _, key = uri[len("s3://") :].partition("/")
        try:
            if key.endswith(".tar.gz"):
                response = s3.head_object(Bucket=bucket, Key=key)
            else:
                response = s3.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
                if not response.get("KeyCount") and not response.get("Contents"):
                    yield blocker(
                        "s3.present",
                        f"{what}: nothing under {uri}",
                        "SageMaker fails the model or job when its data is missing",
                        f"upload the files to {uri}",
                        path,
                    )
                    continue
            headers = (response.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
            bucket_region = headers.get("x-amz-bucket-region")
            if ctx.region is not None and isinstance(bucket_region, str) and bucket_region != ctx.region:
                yield blocker(
                    "s3.region",
                    f"{what}: bucket {bucket} is in {bucket_region}, the endpoint in {ctx.region}",
                    "SageMaker reads model data and job inputs from buckets in its own region",
                    f"copy the data to a bucket in {ctx.region}",
                    path,
                )
                continue
        except Exception as error:
            code = _error_code(error)
            if code in _DENIED:
                yield warning(
                    "s3.present",
                    f"{what}: not allowed to read {uri} ({code})",
                    "whether the data is there is unknown (the endpoint's role has its own access)",
                    "allow s3:ListBucket / s3:GetObject on it for this check",
                    path,
                )
            elif code in _NOT_FOUND:
                yield blocker(
                    "s3.present",
                    f"{what}: {uri} does not exist ({code})",
                    "SageMaker fails the model or job when its data is missing",
                    f"upload it to {uri}",
                    path,
                )
            else:
                yield warning(
                    "s3.present",
                    f"{what}: {uri} could not be checked ({code})",
                    "the data may be missing",
                    "retry, or check with `aws s3 ls`",
                    path,
                )
            continue
        found += 1
    if found:
        yield info(
            "s3.present",
            f"{found} S3 location(s) found: "
            + ", ".join(u for _, _, u in locations[:3])
            + (" ..." if found > 3 else ""),
        )
    if len(locations) > MAX_S3_CHECKED:
        yield info(
            "s3.present",
            f"{len(locations) - MAX_S3_CHECKED} more S3 location(s) not checked (first {MAX_S3_CHECKED} only)",
        )


@_live
def check_layers_live(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.clients is None or ctx.region is None or ctx.partition is None:
        return
    client = ctx.clients.client("lambda", ctx.region)
    for where, arn in _layers(ctx):
        match = LAYER_ARN.match(arn or "")
        if arn is None or not match or match.group("region") != ctx.region:
            continue
        try:
            client.get_layer_version_by_arn(Arn=arn)
        except Exception as error:
            code = _error_code(error)
            if code in _NOT_FOUND:
                yield blocker(
                    "layer.present",
                    f"layer {arn} does not exist in {ctx.region}",
                    "every function using it fails to create",
                    "use a layer version published in the region",
                    where,
                )
            else:
                yield warning(
                    "layer.present",
                    f"layer {arn} could not be read ({code})",
                    "it may not exist here",
                    "allow lambda:GetLayerVersion, or check the layer in the console",
                    where,
                )
            continue
        yield info("layer.present", f"layer {arn} exists", subject=where)
        powertools = POWERTOOLS_NAME.match(match.group("name"))
        if powertools is None:
            continue
        name = (
            f"/aws/service/powertools/python/{powertools.group('arch')}/"
            f"{powertools.group('python')}.{powertools.group('minor')}/latest"
        )
        try:
            value = ctx.clients.client("ssm", ctx.region).get_parameter(Name=name)["Parameter"]["Value"]
        except Exception as error:
            yield info(
                "layer.latest",
                f"the latest Powertools layer could not be read from {name} ({_error_code(error)})",
                subject=where,
            )
            continue
        latest = LAYER_ARN.match(str(value))
        if latest and int(latest.group("version")) > int(match.group("version")):
            yield info(
                "layer.latest",
                f"Powertools layer version {latest.group('version')} is the latest in {ctx.region}; "
                f"the functions use {match.group('version')}",
                "newer layers carry fixes",
                "raise functions.POWERTOOLS_LAYER_VERSION after testing",
                where,
            )


TRUST_FIX = (
    "pin the session name in the role's trust policy (a Deny unless sts:RoleSessionName equals "
    "${aws:username}, or ${aws:SourceIdentity} for people signed in through an identity provider, each "
    "with a Null Deny on that key: docs/sessions-trust.md; SessionFrontDoor.grant_invoke_pinned writes "
    "them for a role defined in the app), or set sessions.owner: role when one backend keeps its users "
    "apart"
)


def _front_door_callers(ctx: PreflightContext) -> Iterator[tuple[str, Any, str]]:
    """(config path, sessions settings, role ARN) of every role a front door grants through ``sessions.callers``."""
    for endpoint_path, endpoint in ctx.endpoints():
        for index, model in enumerate(endpoint.models):
            sessions = getattr(model, "sessions", None)
            for c_index, arn in enumerate(getattr(sessions, "callers", ()) or ()):
                yield f"{endpoint_path}.models[{index}].sessions.callers[{c_index}]", sessions, arn


@_live
def check_front_door_callers(ctx: PreflightContext) -> Iterable[Finding]:
    """Read each front-door caller role's trust policy (iam:GetRole, read-only) against the owner mode.

    Under ``owner: session`` the owner includes the session name: a trust policy that lets a caller choose
    it lets that caller act as anyone else who assumes the role (and continue their conversations)."""
    if ctx.clients is None:
        return
    import json
    from urllib.parse import unquote

    from ..sessions.trust import cognito_pool_problems, session_name_choices

    callers = list(_front_door_callers(ctx))
    if not callers:
        return
    iam = ctx.clients.client("iam", ctx.region)
    for path, sessions, arn in callers:
        name = arn.rsplit("/", 1)[1]
        try:
            role = iam.get_role(RoleName=name)["Role"]
        except Exception as error:
            code = _error_code(error)
            if code in _DENIED:
                yield warning(
                    "sessions.trust",
                    f"not allowed to read role {name} ({code})",
                    "whether its callers can choose their session name is unknown",
                    "allow iam:GetRole on it for this check",
                    path,
                )
            elif code == "NoSuchEntity" or code in _NOT_FOUND:
                yield blocker(
                    "sessions.trust",
                    f"role {arn} does not exist",
                    "the stack attaches the front door's grant to it; CloudFormation fails the deploy",
                    "create the role first, or remove it from sessions.callers",
                    path,
                )
            else:
                yield warning(
                    "sessions.trust", f"GetRole {name} failed ({code})", "its trust policy is unknown", "retry", path
                )
            continue
        document = role.get("AssumeRolePolicyDocument") or {}
        if isinstance(document, str):  # the API's URL-encoded JSON, when no client decoded it
            document = json.loads(unquote(document))
        mode = sessions.owner
        if mode == "role":
            yield info(
                "sessions.trust",
                f"owner role: every session of {name} is one owner (its callers keep their users apart)",
                subject=path,
            )
            continue
        if mode == "cognito_identity":
            problems = cognito_pool_problems(document, sessions.identity_pools)
            for problem in problems:
                yield warning(
                    "sessions.trust",
                    f"role {name}: {problem}",
                    "owner cognito_identity serves the identities the role's trust lets in: those of "
                    "another pool would be served too, or none at all",
                    "trust cognito-identity.amazonaws.com with StringEquals "
                    "cognito-identity.amazonaws.com:aud set to the pools of sessions.identity_pools",
                    path,
                )
            if not problems:
                yield info("sessions.trust", f"role {name} trusts only the listed identity pools", subject=path)
            continue
        choices = session_name_choices(document)
        for choice in choices:
            yield warning(
                "sessions.trust",
                f"role {name}: {choice}",
                "under owner session the conversation owner includes the session name: a caller that "
                "chooses it can act as anyone else who assumes the role and continue their conversations",
                TRUST_FIX,
                path,
            )
        if not choices:
            yield info("sessions.trust", f"role {name}: no caller chooses its session name", subject=path)
