"""CloudFormation custom resource (provider framework on_event): an endpoint binds a capacity plan only while Active.

AWS: "The training plan must be in the Active status to be used by an inference endpoint. The
endpoint only functions during the reservation window." An endpoint config bound to a plan that
is Pending, Scheduled, Expired or Failed gets no instances, and the deploy would wait for the
endpoint's create timeout before rolling back. This guard runs in seconds, before the endpoint
config is created or replaced (the config reads ``MlReservationArn`` from it, and the guard's
properties carry what the config is built from, so it runs whenever the config would change).

Environment variables
---------------------
POWERTOOLS_SERVICE_NAME   Logger service name (optional).

Event (``aws_cdk.custom_resources.Provider``), checked before any AWS call
--------------------------------------------------------------------------
RequestType: "Create" | "Update" | "Delete" (Update/Delete need PhysicalResourceId; Update needs
OldResourceProperties). ResourceProperties (strict: any other key is refused):
    PlanName              training plan name or ARN (1-64 character name)
    InstanceType          the endpoint's instance type (must be the plan's)
    MaxInstances          "1".."1000": the most instances the endpoint may run (at most the plan's)
    WhenNotActive         "fail" | "on_demand"
    Bound                 "true" (the endpoint config binds the plan) | "false" (it runs on demand)
    EndpointConfigInputs  list of strings (or lists of strings, where a deploy-time value is a list): a
                          digest of the endpoint config's create-only properties, then the values only
                          CloudFormation resolves (only compared by CloudFormation, so that any change of
                          the config runs the guard again)
    UpdatePolicy          "BLUE_GREEN" | "ROLLING" | "NONE_FITS": how the endpoint is updated to a new config
    RollingBatchSize      optional, with ROLLING: the endpoint's rolling step, {"Type": "INSTANCE_COUNT" |
                          "CAPACITY_PERCENT", "Value": "1".."1000" (a percent: "1".."100")}; absent: one instance
    ServiceToken          ignored

Returns
-------
{"PhysicalResourceId": "<plan>/<digest of the properties>", "Data": {MlReservationArn, Status,
StartTime, EndTime}}: a new physical id for every new set of properties, so a rollback deletes
the new one (no call) instead of sending this guard an update it might fail. Delete: no call.
CloudFormation's rollback of an update is never refused: refusing would end it in
``UPDATE_ROLLBACK_FAILED``, and the endpoint config it guards then is the old one, which exists.
A rollback is an Update whose PhysicalResourceId is already the one of its properties (the
rollback of an Update the guard refused: the physical id stayed the old one), or any Update
while the stack is ``UPDATE_ROLLBACK_IN_PROGRESS`` (DescribeStacks on the event's StackId: a
rollback that sends a replaced guard its old properties). It is answered from the plan as it is
now, unchecked; a stack status that cannot be read counts as no rollback.

Create/Update with Bound "true": DescribeTrainingPlan; fails unless the plan exists, targets
endpoints, is Active, has not ended, has the endpoint's instance type and holds MaxInstances.
With Bound "false" (``when_not_active: on_demand`` while the plan is not Active) it never fails
on the plan's status: the endpoint runs on demand.

Update from a bound config to a bound config (the endpoint moves to a new config on the same
plan): the update needs plan instances beside those in use, a second fleet for BLUE_GREEN
(``InUseInstanceCount``) or one step for ROLLING (``RollingBatchSize``: its instances, or its percent
of those in use rounded up, at least one); with fewer ``AvailableInstanceCount`` it fails now,
instead of the endpoint update waiting for instances until its timeout.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from llm_cdk_shared import clients, stack_status
from llm_cdk_shared.aws_errors import not_found
from llm_cdk_shared.problems import ShortError
from llm_cdk_shared.problems import shown as _shown

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    from llm_cdk_shared.custom_resource import CustomResourceEvent as GuardEvent

    # classes that _models() builds on first use: Any for annotations
    GuardProperties: TypeAlias = Any

logger = Logger()

RESOURCE_TYPE = "Custom::SageMakerCapacityPlanGuard"
MAX_MESSAGE_CHARS = 3500
TARGET_RESOURCE = "endpoint"
_PLAN_RE = re.compile(
    r"(arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/)?(?P<name>[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63})"
)
_INSTANCE_TYPE_RE = re.compile(r"ml\.[a-z0-9][a-z0-9-]*\.[a-z0-9]+")


_sagemaker = clients.client_getter("sagemaker", retries={"mode": "standard", "max_attempts": 5})
_cloudformation = clients.client_getter("cloudformation", retries={"mode": "standard", "max_attempts": 5})


def _now() -> datetime:
    return datetime.now(UTC)


class GuardError(ShortError):
    """What CloudFormation shows as the reason the deploy failed; kept short."""

    max_chars = MAX_MESSAGE_CHARS


class GuardEventError(GuardError):
    """Not an event this guard can act on (no AWS call was made)."""


class PlanNotUsableError(GuardError):
    """The plan cannot serve the endpoint now; the endpoint config was not created."""


def _iso(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


@functools.cache
def _models() -> SimpleNamespace:
    """The event and properties models, built on the first event: pydantic is not imported on a cold start."""
    from llm_cdk_shared import custom_resource
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    class RollingBatchSize(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

        type: Literal["INSTANCE_COUNT", "CAPACITY_PERCENT"] = Field(alias="Type")
        value: int = Field(alias="Value")

        @field_validator("value", mode="before")
        @classmethod
        def _value(cls, value: Any) -> int:
            if isinstance(value, str) and re.fullmatch(r"[0-9]{1,4}", value) and 1 <= int(value) <= 1000:
                return int(value)
            if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1000:
                return value
            raise ValueError(f"RollingBatchSize.Value {_shown(value)} must be a whole number 1-1000")

    class GuardProperties(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

        plan_name: str = Field(alias="PlanName")
        instance_type: str = Field(alias="InstanceType")
        max_instances: int = Field(alias="MaxInstances")
        when_not_active: Literal["fail", "on_demand"] = Field(alias="WhenNotActive")
        bound: Literal["true", "false"] = Field(alias="Bound")
        endpoint_config_inputs: list[str | list[str]] = Field(alias="EndpointConfigInputs", max_length=100)
        update_policy: Literal["BLUE_GREEN", "ROLLING", "NONE_FITS"] = Field(alias="UpdatePolicy")
        rolling_batch_size: RollingBatchSize | None = Field(None, alias="RollingBatchSize")

        @field_validator("rolling_batch_size", mode="after")
        @classmethod
        def _percent(cls, value: RollingBatchSize | None) -> RollingBatchSize | None:
            if value is not None and value.type == "CAPACITY_PERCENT" and value.value > 100:
                raise ValueError(f"RollingBatchSize.Value {value.value} is more than 100 percent")
            return value

        @field_validator("plan_name", mode="before")
        @classmethod
        def _plan(cls, value: Any) -> str:
            match = _PLAN_RE.fullmatch(value) if isinstance(value, str) else None
            if not match or len(match.group("name")) > 64:
                raise ValueError(
                    f"PlanName {_shown(value)} is not a training plan name (1-64 letters, digits and hyphens) or ARN"
                )
            return value

        @field_validator("instance_type", mode="before")
        @classmethod
        def _type(cls, value: Any) -> str:
            if not isinstance(value, str) or not _INSTANCE_TYPE_RE.fullmatch(value):
                raise ValueError(
                    f"InstanceType {_shown(value)} is not a SageMaker instance type, e.g. 'ml.p5e.48xlarge'"
                )
            return value

        @field_validator("max_instances", mode="before")
        @classmethod
        def _count(cls, value: Any) -> int:
            if isinstance(value, str) and re.fullmatch(r"[0-9]{1,4}", value) and 1 <= int(value) <= 1000:
                return int(value)
            if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1000:
                return value
            raise ValueError(f"MaxInstances {_shown(value)} must be a whole number 1-1000")

    return SimpleNamespace(
        GuardProperties=GuardProperties,
        RollingBatchSize=RollingBatchSize,
        GuardEvent=custom_resource.CustomResourceEvent,
    )


def __getattr__(name: str) -> Any:
    """``GuardProperties`` and ``GuardEvent`` (the shared custom resource event model: RequestType,
    PhysicalResourceId, properties) as module attributes (PEP 562), built on first access."""
    if name in ("GuardProperties", "GuardEvent"):
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_event(event: Any) -> GuardEvent:
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_event(event, error=GuardEventError, not_done="nothing was checked")  # GuardEvent


def parse_properties(raw: dict[str, Any]) -> GuardProperties:
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_properties(
        _models().GuardProperties,
        raw,
        error=GuardEventError,
        what="capacity plan guard",
        not_done="nothing was checked",
    )


def _physical_id(props: GuardProperties) -> str:
    digest = hashlib.sha256(json.dumps(props.model_dump(by_alias=True), sort_keys=True).encode()).hexdigest()[:16]
    name = _PLAN_RE.fullmatch(props.plan_name).group("name")  # type: ignore[union-attr]
    return f"{name}/{digest}"


def _describe(name: str) -> dict[str, Any] | None:
    try:
        return _sagemaker().describe_training_plan(TrainingPlanName=name)
    except ClientError as error:
        if not_found(error):
            return None
        raise


def _what_to_do(props: GuardProperties, status: str, start: datetime | None) -> str:
    if status in ("Pending", "Scheduled"):
        wait = (
            f"deploy again after the plan starts ({_iso(start)})" if start else "deploy again once the plan is Active"
        )
    elif status == "NotFound":
        wait = "buy it first (deploy its capacity stack with -c purchase=<plan name>) or correct the plan name"
    else:
        wait = "bind a new plan (reserve one, or extend this one before it ends)"
    return (
        f"To do: {wait}; or set when_not_active: on_demand on the plan to serve on on-demand capacity until "
        "then; or remove capacity_plan from the endpoint to run on demand now."
    )


def usability_problems(plan: dict[str, Any], props: GuardProperties, now: datetime) -> list[str]:
    problems = []
    status = plan.get("Status", "")
    end = plan.get("EndTime")
    targets = plan.get("TargetResources") or []
    if targets and TARGET_RESOURCE not in targets:
        problems.append(f"it targets {', '.join(targets)}, not endpoints (a plan is usable only by its target)")
    if status != "Active":
        problems.append(f"its status is {status or 'unknown'}, not Active")
    elif end is not None and end <= now:
        problems.append(f"it ended at {_iso(end)}")
    types = {s.get("InstanceType") for s in plan.get("ReservedCapacitySummaries") or [] if s.get("InstanceType")}
    if types and props.instance_type not in types:
        problems.append(f"it reserves {', '.join(sorted(t for t in types if t))}, not {props.instance_type}")
    total = plan.get("TotalInstanceCount")
    if total is not None and total < props.max_instances:
        problems.append(f"it holds {total} instance(s) and the endpoint may scale to {props.max_instances}")
    return problems


def headroom_problem(plan: dict[str, Any], props: GuardProperties) -> str | None:
    """Why the plan cannot hold the endpoint's update to a new config now; None when it can (or is unknown)."""
    available, in_use = plan.get("AvailableInstanceCount"), plan.get("InUseInstanceCount")
    if available is None or in_use is None:
        return None
    need = in_use if props.update_policy in ("BLUE_GREEN", "NONE_FITS") else rolling_step(props, in_use)
    if available >= need:
        return None
    how = (
        "a blue/green update starts a second fleet as large as the first"
        if props.update_policy != "ROLLING"
        else f"a rolling update starts one step of {need} new instance(s) first"
    )
    return (
        f"the endpoint update needs {need} free instance(s) of the plan ({how}; {in_use} in use) and the plan has "
        f"{available} available"
    )


def rolling_step(props: GuardProperties, in_use: int) -> int:
    """Instances one rolling step starts: ``RollingBatchSize`` (a percent of ``in_use`` rounded up, as AWS does
    not document its rounding), at least one; one without it."""
    size = props.rolling_batch_size
    if size is None:
        return 1
    if size.type == "CAPACITY_PERCENT":
        return max(1, -(-in_use * size.value // 100))
    return max(1, size.value)


def rolling_back(stack_id: Any) -> bool:
    """Whether the stack is rolling an update back (``UPDATE_ROLLBACK_IN_PROGRESS``); False when unknown."""
    return stack_status.rolling_back(_cloudformation, stack_id, logger=logger, otherwise="the plan is checked")


def restored(props: GuardProperties, physical_id: str) -> dict[str, Any]:
    """The answer to a rollback of a refused Update: the guard's id and the plan's data as they are, no check."""
    plan = _describe(props.plan_name)
    data = (
        {"MlReservationArn": "", "Status": "NotFound", "StartTime": "", "EndTime": ""}
        if plan is None
        else {
            "MlReservationArn": plan["TrainingPlanArn"],
            "Status": str(plan.get("Status") or ""),
            "StartTime": _iso(plan.get("StartTime")),
            "EndTime": _iso(plan.get("EndTime")),
        }
    )
    logger.info(
        "Guard returned to the properties it checked before (a rollback); not checked again",
        extra={"physical_resource_id": physical_id, "status": data["Status"]},
    )
    return {"PhysicalResourceId": physical_id, "Data": data}


def check(props: GuardProperties, old: dict[str, Any] | None = None) -> dict[str, Any]:
    name = _PLAN_RE.fullmatch(props.plan_name).group("name")  # type: ignore[union-attr]
    plan = _describe(props.plan_name)
    physical_id = _physical_id(props)
    if plan is None:
        if props.bound == "false":
            return {
                "PhysicalResourceId": physical_id,
                "Data": {"MlReservationArn": "", "Status": "NotFound", "StartTime": "", "EndTime": ""},
            }
        raise PlanNotUsableError(
            f"Capacity plan '{name}' was not found in this account and region, so the endpoint cannot bind it; the "
            "endpoint config was not created. " + _what_to_do(props, "NotFound", None)
        )
    data = {
        "MlReservationArn": plan["TrainingPlanArn"],
        "Status": str(plan.get("Status") or ""),
        "StartTime": _iso(plan.get("StartTime")),
        "EndTime": _iso(plan.get("EndTime")),
    }
    problems = usability_problems(plan, props, _now())
    if not problems and props.bound == "true" and isinstance(old, dict) and old.get("Bound") == "true":
        problem = headroom_problem(plan, props)
        if problem:
            raise PlanNotUsableError(
                f"Capacity plan '{name}' cannot hold this update: {problem}. The new endpoint config was not created, "
                "so nothing waits for instances. To do: lower scaling.max_instances or copies so fewer instances run, "
                "wait until the endpoint scales in, or bind a larger plan."
            )
    if problems and props.bound == "true":
        raise PlanNotUsableError(
            f"Capacity plan '{name}' cannot serve the endpoint now: {'; '.join(problems)} (status {data['Status']}, "
            f"start {data['StartTime'] or 'unknown'}, end {data['EndTime'] or 'unknown'}). The endpoint config was "
            "not created or changed, so nothing waits for instances. "
            + (
                "The plan's status parameter said Active: run the plan's daily check again or wait for it. "
                if props.when_not_active == "on_demand"
                else ""
            )
            + _what_to_do(props, data["Status"], plan.get("StartTime"))
        )
    logger.info(
        "Capacity plan checked",
        extra={"plan": name, "status": data["Status"], "bound": props.bound, "problems": problems},
    )
    return {"PhysicalResourceId": physical_id, "Data": data}


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse_event(event)
    if request.request_type == "Delete":
        return {"PhysicalResourceId": request.physical_resource_id}
    props = parse_properties(request.resource_properties)
    if request.request_type == "Update" and (
        request.physical_resource_id == _physical_id(props) or rolling_back(getattr(request, "StackId", None))
    ):
        return restored(props, _physical_id(props))
    return check(props, request.old_resource_properties)
