"""Custom resource (provider framework on_event + is_complete) for a SageMaker inference router, and its health check.

CloudFormation has no resource type for inference routers, so ``InferenceRouter`` drives the API through this
function: ``CreateInferenceRouter`` / ``DescribeInferenceRouter`` / ``UpdateInferenceRouter`` /
``DeleteInferenceRouter``, and ``ListTags`` / ``AddTags`` / ``DeleteTags`` for its tags.

Environment variables
---------------------
POWERTOOLS_SERVICE_NAME   Logger service name (optional).
ROUTER_NAME               ``check`` only: the router the scheduled check describes.
METRICS_NAMESPACE         ``check`` only: the CloudWatch namespace it publishes to.

Event (``aws_cdk.custom_resources.Provider``), checked before any AWS call
--------------------------------------------------------------------------
RequestType "Create" | "Update" | "Delete" (Update and Delete carry PhysicalResourceId, Update
OldResourceProperties). ResourceProperties (strict: any other key is refused):
    RouterName       the InferenceRouterName (1-63 letters, digits and hyphens); the physical id
    RoutingTargets   the API's RoutingTargets, exactly (Name, Destinations[].ResourceArn, RoutingPreference,
                     AsyncInferenceConfig); numbers may come as strings, as CloudFormation passes them
    Tags             optional list of {Key, Value}, at most 48 (SageMaker's 50 less the two owner tags); no key
                     may start with ``sagemaker-llm-cdk:``, which the owner tags use
    ServiceToken     ignored

on_event
--------
Create: ``CreateInferenceRouter`` with a ``ClientToken`` made from the stack, the logical id and the request id, so
a repeated delivery of the same request creates nothing twice; returns the name as the physical id.
Every router this function creates carries two owner tags, ``sagemaker-llm-cdk:stack-id`` (the StackId) and
``sagemaker-llm-cdk:logical-id`` (the LogicalResourceId): they say which resource of which stack made it, and the
function's role may describe, update and delete a router only when they name its own stack and resource, so the
cleanup Delete of an old name still works after a rename has moved the role's policy to the new name.
Update, same name: ``UpdateInferenceRouter`` with the complete routing targets (the API replaces all of them),
then the tags brought to the properties (``ListTags``: the owner tags too, for a router made before they
existed); a ``ConflictException`` (the router is still changing) leaves the update to is_complete. Update, new
name: a new router is created and its name returned, so CloudFormation deletes the old one in the cleanup. If a
router of the new name exists and its owner tags name this stack and resource, it is this resource's earlier
router, still there because the cleanup has not run: the rollback of a rename can send exactly this (Update with
the old properties, the new router's name as physical id). It is brought to the properties and its name
returned, and CloudFormation deletes the newer router in the rollback's cleanup. A router of that name without
these tags is never adopted: the update fails and nothing is changed. Delete: ``DeleteInferenceRouter``; a
router that is not there is deleted already; a ``ConflictException`` leaves the delete to is_complete. A physical
id that is no router name (botocore's ``InferenceRouterName`` rule: what a failed Create may leave, or a hand-made
event) names nothing this function created: the Delete succeeds without any AWS call, and says so in the log.

is_complete
-----------
Create/Update: done when the router is ``InService`` with the routing targets asked for: the same targets, each with
the destinations asked for and every setting the properties give, as given (a setting they leave out may show
SageMaker's default, such as ``RoutingPreference`` or ``MaxTimeInBacklogSeconds``). An ``InService`` router that
still shows other targets gets the update sent again, which the API treats as idempotent; fails with the
router's ``StatusReason`` when it is ``Failed``. Returns Data
{InferenceRouterArn, InferenceRouterName}. Delete: done when ``DescribeInferenceRouter`` no longer finds it;
a router that is still there and not ``Deleting`` gets the delete sent again.

check (EventBridge Scheduler)
-----------------------------
``DescribeInferenceRouter`` and one ``PutMetricData``: per routing target and for the whole router, the number
of destinations whose ``RoutingStatus`` is ``Unroutable`` (``UnroutableDestinations``) and ``Unknown``
(``UnknownDestinations``), and ``RouterNotInService`` (1 unless the router is ``InService``).
"""

from __future__ import annotations

import functools
import hashlib
import re
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from llm_cdk_shared import clients
from llm_cdk_shared.aws_errors import error_code, error_message, not_found
from llm_cdk_shared.problems import ShortError

if TYPE_CHECKING:  # names in annotations only; nothing here is imported on a cold start
    from typing import TypeAlias

    from llm_cdk_shared.custom_resource import CustomResourceEvent as RouterEvent

    RouterProperties: TypeAlias = Any

logger = Logger()

RESOURCE_TYPE = "Custom::SageMakerInferenceRouter"
MAX_MESSAGE_CHARS = 3500
ROUTING_STATUSES = ("Routable", "Unroutable", "Unknown")
OWNER_TAG_PREFIX = "sagemaker-llm-cdk:"
STACK_TAG = f"{OWNER_TAG_PREFIX}stack-id"
"""Owner tag: the StackId of the stack whose resource created the router (the role's policy matches it)."""
LOGICAL_ID_TAG = f"{OWNER_TAG_PREFIX}logical-id"
"""Owner tag: the LogicalResourceId of the resource that created the router (the role's policy matches it)."""
MAX_USER_TAGS = 48
"""SageMaker's 50 tags per resource, less the two owner tags."""
_sagemaker = clients.client_getter("sagemaker", retries={"mode": "standard", "max_attempts": 5})
_cloudwatch = clients.client_getter("cloudwatch", retries={"mode": "standard", "max_attempts": 5})


class RouterError(ShortError):
    """What CloudFormation shows as the reason the deploy failed; kept short."""

    max_chars = MAX_MESSAGE_CHARS


class RouterEventError(RouterError):
    """Not an event this function can act on (no AWS call was made)."""


class RouterFailedError(RouterError):
    """SageMaker reports the router Failed, or refused the request."""


@functools.cache
def _models() -> SimpleNamespace:
    """The properties models, built on the first event that needs them: pydantic is not imported on a cold start."""
    from llm_cdk_shared import custom_resource
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    name_pattern = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, populate_by_name=True)

    class DestinationModel(_Strict):
        resource_arn: str = Field(
            alias="ResourceArn",
            min_length=20,
            max_length=2048,
            pattern=(
                r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:[0-9]{12}:(endpoint|inference-component)/"
                r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
            ),
        )

    class NotificationModel(_Strict):
        success_topic: str | None = Field(None, alias="SuccessTopic", min_length=20, max_length=2048)
        error_topic: str | None = Field(None, alias="ErrorTopic", min_length=20, max_length=2048)

    class OutputModel(_Strict):
        s3_output_path: str = Field(alias="S3OutputPath", min_length=1, max_length=512)
        s3_failure_path: str = Field(alias="S3FailurePath", min_length=1, max_length=512)
        kms_key_id: str | None = Field(None, alias="KmsKeyId", max_length=2048)
        notification_config: NotificationModel | None = Field(None, alias="NotificationConfig")

    class ClientModel(_Strict):
        max_time_in_backlog_seconds: int | None = Field(None, alias="MaxTimeInBacklogSeconds", ge=60, le=21600)

        @field_validator("max_time_in_backlog_seconds", mode="before")
        @classmethod
        def _number(cls, value: Any) -> Any:
            if isinstance(value, bool):
                raise ValueError("MaxTimeInBacklogSeconds must be a whole number, not true or false")
            if isinstance(value, str) and value.isdigit():
                return int(value)
            return value

    class AsyncModel(_Strict):
        output_config: OutputModel = Field(alias="OutputConfig")
        client_config: ClientModel | None = Field(None, alias="ClientConfig")

    class TargetModel(_Strict):
        name: str = Field(alias="Name", pattern=name_pattern)
        destinations: list[DestinationModel] = Field(alias="Destinations", min_length=1, max_length=10)
        routing_preference: str | None = Field(
            None, alias="RoutingPreference", pattern=r"^(LocalRegionFirst|InstancePoolOrder)$"
        )
        async_inference_config: AsyncModel | None = Field(None, alias="AsyncInferenceConfig")

    class TagModel(_Strict):
        key: str = Field(alias="Key", min_length=1, max_length=128)
        value: str = Field(alias="Value", max_length=256)

        @field_validator("key")
        @classmethod
        def _not_an_owner_tag(cls, value: str) -> str:
            if value.startswith(OWNER_TAG_PREFIX):
                raise ValueError(
                    f"tag key {value!r} starts with {OWNER_TAG_PREFIX!r}, which the router's owner tags "
                    "use; rename the tag"
                )
            return value

    class RouterProperties(_Strict):
        router_name: str = Field(alias="RouterName", pattern=name_pattern)
        routing_targets: list[TargetModel] = Field(alias="RoutingTargets", min_length=1, max_length=20)
        tags: list[TagModel] = Field(default_factory=list, alias="Tags", max_length=MAX_USER_TAGS)

    return SimpleNamespace(RouterProperties=RouterProperties, RouterEvent=custom_resource.CustomResourceEvent)


def __getattr__(name: str) -> Any:
    """``RouterProperties`` and ``RouterEvent`` as module attributes (PEP 562), built on first access."""
    if name in ("RouterProperties", "RouterEvent"):
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_event(event: Any) -> RouterEvent:
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_event(event, error=RouterEventError, not_done="the router was not changed")


def parse_properties(raw: Any) -> RouterProperties:
    from llm_cdk_shared import custom_resource

    return custom_resource.parse_properties(
        _models().RouterProperties,
        raw,
        error=RouterEventError,
        what="inference router",
        not_done="the router was not changed",
    )


def routing_targets(props: RouterProperties) -> list[dict[str, Any]]:
    """The request's ``RoutingTargets``, exactly as the API takes them (numbers as numbers, nothing empty)."""
    return [t.model_dump(by_alias=True, exclude_none=True) for t in props.routing_targets]


def client_token(event: dict[str, Any], name: str) -> str:
    """One token per CloudFormation request and router name: a repeated delivery reuses it, a new request does not."""
    seed = "|".join(str(event.get(key, "")) for key in ("StackId", "LogicalResourceId", "RequestId")) + f"|{name}"
    return hashlib.sha256(seed.encode()).hexdigest()


@functools.cache
def _router_name_rule() -> tuple[re.Pattern[str], int, int]:
    """botocore's rule for an ``InferenceRouterName`` (``DeleteInferenceRouter``'s input, from the service model the
    client loaded, or botocore's own when the client is a stand-in without one): its pattern (matched whole, as
    the service does) and its least and greatest length."""
    model = getattr(getattr(_sagemaker(), "meta", None), "service_model", None)
    if model is None:
        import botocore.session

        model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.operation_model("DeleteInferenceRouter").input_shape
    meta = shape.members["InferenceRouterName"].metadata
    return re.compile(meta["pattern"]), int(meta.get("min", 1)), int(meta.get("max", 63))


def is_router_name(name: str) -> bool:
    """Whether ``name`` may be an inference router's name (so a router this function created may have it)."""
    pattern, least, most = _router_name_rule()
    return least <= len(name) <= most and pattern.fullmatch(name) is not None


def _not_a_router(name: str) -> bool:
    """True, logged, when a Delete's physical id is no router name: no request is sent for it."""
    if is_router_name(name):
        return False
    logger.info(
        "Delete of a physical id that is no inference router name: nothing this function created has it, so nothing "
        "is deleted and no request is sent",
        extra={"physical_id": name[:100]},
    )
    return True


def _describe(name: str) -> dict[str, Any] | None:
    try:
        answer: dict[str, Any] = _sagemaker().describe_inference_router(InferenceRouterName=name)
        return answer
    except ClientError as error:
        if not_found(error):
            return None
        raise


def _covers(asked: Any, described: Any) -> bool:
    """Whether ``described`` shows everything ``asked`` sets: every member of a structure asked for, as asked (members
    it leaves out may hold SageMaker's defaults); anything else equal."""
    if isinstance(asked, dict):
        return isinstance(described, dict) and all(
            key in described and _covers(value, described[key]) for key, value in asked.items()
        )
    return bool(asked == described)


def _destinations(target: dict[str, Any]) -> list[str]:
    return sorted(str(d.get("ResourceArn", "")).lower() for d in target.get("Destinations") or [])


def _settled(described: dict[str, Any], asked: list[dict[str, Any]]) -> bool:
    """Whether the router shows the routing targets asked for: the same target names, each with the same destinations
    (ARNs compared in lowercase, RoutingStatus ignored) and every other setting asked for, as asked."""
    shown = {str(t.get("Name")): t for t in described.get("RoutingTargets") or []}
    if set(shown) != {t["Name"] for t in asked}:
        return False
    for target in asked:
        have = shown[target["Name"]]
        if _destinations(have) != _destinations(target):
            return False
        if not _covers({k: v for k, v in target.items() if k not in ("Name", "Destinations")}, have):
            return False
    return True


def owner_tags(event: dict[str, Any]) -> dict[str, str]:
    """The owner tags of the router this event's resource creates: its stack and logical id, as CloudFormation names
    them (the role's policy allows describe, update and delete on routers whose tags are these)."""
    return {STACK_TAG: str(event.get("StackId", "")), LOGICAL_ID_TAG: str(event.get("LogicalResourceId", ""))}


def _tags(arn: str) -> dict[str, str]:
    found: dict[str, str] = {}
    request: dict[str, Any] = {"ResourceArn": arn}
    while True:
        answer = _sagemaker().list_tags(**request)
        found.update({str(t.get("Key")): str(t.get("Value", "")) for t in answer.get("Tags") or []})
        if not answer.get("NextToken"):
            return found
        request["NextToken"] = answer["NextToken"]


def _create(event: dict[str, Any], props: RouterProperties, *, adopt: bool = False) -> dict[str, Any]:
    """Create the router; with ``adopt``, a router of that name whose owner tags name this stack and resource is
    brought to ``props`` instead (any other router of that name is refused)."""
    request: dict[str, Any] = {
        "InferenceRouterName": props.router_name,
        "RoutingTargets": routing_targets(props),
        "ClientToken": client_token(event, props.router_name),
        "Tags": [t.model_dump(by_alias=True) for t in props.tags]
        + [{"Key": k, "Value": v} for k, v in owner_tags(event).items()],
    }
    try:
        arn = _sagemaker().create_inference_router(**request)["InferenceRouterArn"]
    except ClientError as error:
        if error_code(error) == "ResourceAlreadyExists":
            if adopt:
                return _adopt(event, props)
            raise RouterFailedError(
                f"An inference router named '{props.router_name}' already exists in this account and region and was "
                "not created by this request; nothing was changed. To do: delete it, or set router_name to another "
                "name."
            ) from None
        raise RouterFailedError(
            f"CreateInferenceRouter refused '{props.router_name}': {error_code(error)}: {error_message(error)}"
        ) from None
    logger.info("Router creation started", extra={"router": props.router_name, "arn": arn})
    return {
        "PhysicalResourceId": props.router_name,
        "Data": {"InferenceRouterArn": arn, "InferenceRouterName": props.router_name},
    }


def _adopt(event: dict[str, Any], props: RouterProperties) -> dict[str, Any]:
    """The router named ``props.router_name`` exists: this resource's own earlier router (its owner tags name this
    stack and resource, as on the rollback of a rename, before the cleanup deleted it) is brought to ``props``;
    any other is refused, unchanged."""
    name = props.router_name
    described = _describe(name)
    if described is None:
        raise RouterFailedError(
            f"Inference router '{name}' was deleted while this request created it; nothing was "
            "changed. To do: deploy again."
        )
    tags = _tags(described["InferenceRouterArn"])
    mine = owner_tags(event)
    if any(tags.get(key) != value for key, value in mine.items()):
        raise RouterFailedError(
            f"An inference router named '{name}' already exists in this account and region and this resource did not "
            f"create it (its tags {STACK_TAG} and {LOGICAL_ID_TAG} do not name stack {mine[STACK_TAG]} and resource "
            f"{mine[LOGICAL_ID_TAG]}); nothing was changed. To do: delete it, or set router_name to another name."
        )
    if described.get("Status") == "Deleting":
        raise RouterFailedError(
            f"Inference router '{name}' is being deleted, so it cannot take these properties; "
            "nothing was changed. To do: deploy again once it is gone."
        )
    logger.info("This resource's earlier router is still there: brought to the properties", extra={"router": name})
    _send_update(props)
    _sync_tags(described["InferenceRouterArn"], event, props, event.get("OldResourceProperties") or {}, tags)
    return {
        "PhysicalResourceId": name,
        "Data": {"InferenceRouterArn": described["InferenceRouterArn"], "InferenceRouterName": name},
    }


def _send_update(props: RouterProperties) -> bool:
    """Send the complete routing targets; False when the router is still changing (is_complete sends them again)."""
    try:
        _sagemaker().update_inference_router(
            InferenceRouterName=props.router_name, RoutingTargets=routing_targets(props)
        )
    except ClientError as error:
        if error_code(error) == "ConflictException":
            logger.info(
                "Router is changing; the update is sent again when it settles", extra={"router": props.router_name}
            )
            return False
        raise RouterFailedError(
            f"UpdateInferenceRouter refused '{props.router_name}': {error_code(error)}: {error_message(error)}"
        ) from None
    return True


def _sync_tags(
    arn: str, event: dict[str, Any], props: RouterProperties, old: dict[str, Any], current: dict[str, str] | None = None
) -> None:
    """Bring the router's tags to the properties' and the owner tags: add what differs, remove what the old properties
    set and the new ones do not (tags set outside CloudFormation are left alone)."""
    have = _tags(arn) if current is None else current
    wanted = {**{t.key: t.value for t in props.tags}, **owner_tags(event)}
    before = {str(t.get("Key")) for t in (old.get("Tags") or []) if isinstance(t, dict)}
    gone = sorted((before - set(wanted)) & set(have))
    changed = [{"Key": k, "Value": v} for k, v in wanted.items() if have.get(k) != v]
    if gone:
        _sagemaker().delete_tags(ResourceArn=arn, TagKeys=gone)
    if changed:
        _sagemaker().add_tags(ResourceArn=arn, Tags=changed)


def _update(event: dict[str, Any], request: RouterEvent, props: RouterProperties) -> dict[str, Any]:
    old = request.old_resource_properties or {}
    if request.physical_resource_id != props.router_name:
        logger.info(
            "Router renamed: the router of the new name serves, CloudFormation deletes the other",
            extra={"old": request.physical_resource_id, "new": props.router_name},
        )
        return _create(event, props, adopt=True)
    described = _describe(props.router_name)
    if described is None:
        raise RouterFailedError(
            f"Inference router '{props.router_name}' was not found, so it cannot be updated (was it deleted outside "
            "CloudFormation?). To do: set router_name to a new name so CloudFormation creates a router with it."
        )
    _send_update(props)
    _sync_tags(described["InferenceRouterArn"], event, props, old)
    return {
        "PhysicalResourceId": props.router_name,
        "Data": {"InferenceRouterArn": described["InferenceRouterArn"], "InferenceRouterName": props.router_name},
    }


def _delete(name: str) -> None:
    try:
        _sagemaker().delete_inference_router(InferenceRouterName=name)
    except ClientError as error:
        if not_found(error):
            return
        if error_code(error) == "ConflictException":
            logger.info("Router is changing; the delete is sent again when it settles", extra={"router": name})
            return
        raise


@logger.inject_lambda_context(log_event=False)
def on_event(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse_event(event)
    if request.request_type == "Delete":
        name = str(request.physical_resource_id)
        if not _not_a_router(name):
            _delete(name)
        return {"PhysicalResourceId": name}
    props = parse_properties(request.resource_properties)
    if request.request_type == "Create":
        return _create(event, props)
    return _update(event, request, props)


@logger.inject_lambda_context(log_event=False)
def is_complete(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse_event(event)
    name = str(event.get("PhysicalResourceId") or request.physical_resource_id or "")
    if request.request_type == "Delete" and _not_a_router(name):
        return {"IsComplete": True}
    described = _describe(name)
    if request.request_type == "Delete":
        if described is None:
            logger.info("Router deleted", extra={"router": name})
            return {"IsComplete": True}
        if described.get("Status") in ("InService", "Failed"):
            _delete(name)
        return {"IsComplete": False}
    props = parse_properties(request.resource_properties)
    if described is None:
        raise RouterFailedError(
            f"Inference router '{name}' disappeared while CloudFormation waited for it; "
            "nothing else was changed. To do: deploy again."
        )
    status = described.get("Status")
    if status == "Failed":
        raise RouterFailedError(
            f"Inference router '{name}' is Failed: {described.get('StatusReason') or 'no reason given'}. "
            "To do: correct the routing targets (see StatusReason) and deploy again."
        )
    asked = routing_targets(props)
    if status != "InService":
        logger.info("Waiting for the router", extra={"router": name, "status": status})
        return {"IsComplete": False}
    if not _settled(described, asked):
        _send_update(props)
        return {"IsComplete": False}
    logger.info("Router InService with the routing targets asked for", extra={"router": name})
    return {
        "IsComplete": True,
        "Data": {"InferenceRouterArn": described["InferenceRouterArn"], "InferenceRouterName": name},
    }


def destination_counts(described: dict[str, Any] | None) -> dict[str, dict[str, int]]:
    """``{target name: {RoutingStatus: count}}`` of a DescribeInferenceRouter answer (every status, zero included)."""
    counts: dict[str, dict[str, int]] = {}
    for target in (described or {}).get("RoutingTargets") or []:
        per = counts.setdefault(str(target.get("Name")), dict.fromkeys(ROUTING_STATUSES, 0))
        for destination in target.get("Destinations") or []:
            status = destination.get("RoutingStatus") or "Unknown"
            per[status if status in per else "Unknown"] += 1
    return counts


def metric_data(name: str, described: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The check's datapoints: per target and for the router, Unroutable and Unknown counts; RouterNotInService."""
    counts = destination_counts(described)
    router = [{"Name": "InferenceRouterName", "Value": name}]
    data: list[dict[str, Any]] = []
    for metric, status in (("UnroutableDestinations", "Unroutable"), ("UnknownDestinations", "Unknown")):
        data.append(
            {
                "MetricName": metric,
                "Dimensions": router,
                "Unit": "Count",
                "Value": float(sum(per[status] for per in counts.values())),
            }
        )
        for target, per in sorted(counts.items()):
            data.append(
                {
                    "MetricName": metric,
                    "Unit": "Count",
                    "Value": float(per[status]),
                    "Dimensions": [*router, {"Name": "RoutingTarget", "Value": target}],
                }
            )
    in_service = described is not None and described.get("Status") == "InService"
    data.append(
        {"MetricName": "RouterNotInService", "Dimensions": router, "Unit": "Count", "Value": 0.0 if in_service else 1.0}
    )
    return data


@logger.inject_lambda_context(log_event=False)
def check(event: Any, context: Any) -> dict[str, Any]:
    from llm_cdk_shared.env import Environment

    env = Environment()
    name = env.text("ROUTER_NAME", required=True)
    namespace = env.text("METRICS_NAMESPACE", required=True)
    env.check(RouterEventError, "the router check")
    described = _describe(name)
    data = metric_data(name, described)
    for start in range(0, len(data), 1000):
        _cloudwatch().put_metric_data(Namespace=namespace, MetricData=data[start : start + 1000])
    unroutable = {
        target: per["Unroutable"] for target, per in destination_counts(described).items() if per["Unroutable"]
    }
    logger.info(
        "Router checked",
        extra={"router": name, "status": (described or {}).get("Status", "NotFound"), "unroutable": unroutable},
    )
    return {"Status": (described or {}).get("Status", "NotFound"), "Unroutable": unroutable}
