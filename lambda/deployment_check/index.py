"""CloudFormation custom resource (on_event + is_complete) that fails a deployment SageMaker silently rolled back.

SageMaker's auto rollback returns an endpoint (or inference component) to its previous
config (or model) and reports it ``InService``; CloudFormation then records the update as
complete. This resource runs after the endpoint and its inference components and confirms
that what runs is what the template declared.

Environment variables
---------------------
POWERTOOLS_SERVICE_NAME   Logger service name (optional).
POWERTOOLS_LOG_LEVEL      Log level (optional, default INFO).

Event (from ``aws_cdk.custom_resources.Provider``; a CloudFormation custom resource event)
-----------------------------------------------------------------------------------------
RequestType: "Create" | "Update" | "Delete"
PhysicalResourceId: (Update/Delete, and is_complete) "deployment-check/<EndpointName>"
ResourceProperties:
    EndpointName         the endpoint's name
    EndpointConfigName   the endpoint config the template created (the endpoint must run it)
    Components           list of {"Name": str, "ModelName"?: str, "ArtifactUrl"?: str}: each
                         inference component must be InService on this endpoint and, when
                         given, serve that model (Specification.ModelName) / artifact
                         (Specification.Container.ArtifactUrl)
    ServiceToken         ignored

on_event returns {"PhysicalResourceId": ...}; on Create it calls no AWS API (the framework then polls
is_complete). On Update it reads the stack's status (DescribeStacks on the event's StackId): while
the stack is ``UPDATE_ROLLBACK_IN_PROGRESS`` the Update is CloudFormation's rollback (to this
resource after a later resource failed, or after this check itself failed the update), and
on_event adds ``"RollingBack": true`` to its answer, which the framework passes to is_complete.
A rollback is never checked nor waited for: is_complete completes at once without AWS calls.
Failing it, or waiting on an endpoint the rollback is itself moving back (until the framework's
total timeout fails it), would end the stack in ``UPDATE_ROLLBACK_FAILED``; the check's purpose,
failing a deployment, is met already. A status that cannot be read counts as not rolling back.
is_complete returns {"IsComplete": false} while the endpoint or a component is
Creating/Updating/SystemUpdating/RollingBack, {"IsComplete": true, "Data": {...}} when all
run what the template declares, and raises ``DeploymentCheckFailed`` (the stack update fails
with its message) when something settled on another config or model, failed, or is missing.
A describe call that is throttled or meets a 5xx (after botocore's adaptive retries) counts as
"not settled yet"; any other error (access denied, not found) fails the check. Delete
completes at once without AWS calls. The framework's total timeout bounds the waiting.
An event that is not a custom resource event (not a JSON object, RequestType other than
Create/Update/Delete, an Update or Delete without PhysicalResourceId) raises
``DeploymentCheckEventError`` (a ``DeploymentCheckFailed``) naming the field, before any AWS call;
ResourceProperties that are not an object, or miss or mistype a field, raise ``DeploymentCheckFailed``
("invalid ResourceProperties: ...") naming each one.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from llm_cdk_shared import clients, stack_status
from llm_cdk_shared.aws_errors import not_found
from llm_cdk_shared.problems import ShortError, shown
from llm_cdk_shared.problems import problems as validation_problems

if TYPE_CHECKING:  # names in annotations only; at run time nothing here is imported on a cold start
    from typing import TypeAlias

    # classes that _models() builds on first use: Any for annotations
    CheckProperties: TypeAlias = Any
    Component: TypeAlias = Any

logger = Logger()

_NAME = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
PHYSICAL_ID_PREFIX = "deployment-check/"
ENDPOINT_WAITING = frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack"})
ENDPOINT_FAILED = frozenset({"Failed", "OutOfService", "UpdateRollbackFailed", "Deleting"})
COMPONENT_WAITING = frozenset({"Creating", "Updating"})
RETRYABLE_CODES = frozenset(
    {"ThrottlingException", "Throttling", "RequestLimitExceeded", "InternalFailure", "ServiceUnavailable"}
)
MAX_MESSAGE_CHARS = 3000  # CloudFormation's status reason must stay well under 4 KB


class DeploymentCheckFailed(ShortError):
    """What runs is not what the template declared (or it failed); the message says what runs instead."""

    max_chars = MAX_MESSAGE_CHARS


class DeploymentCheckEventError(DeploymentCheckFailed):
    """The event is not a custom resource event this function can act on (no AWS call was made)."""


REQUEST_TYPES = ("Create", "Update", "Delete")


@functools.cache
def _models() -> SimpleNamespace:
    """The ResourceProperties models, built on the first event that has properties: a Delete, which has none,
    never imports pydantic (nor does the cold start)."""
    from pydantic import BaseModel, ConfigDict, Field

    class Component(BaseModel):
        model_config = ConfigDict(extra="forbid", populate_by_name=True, protected_namespaces=(), defer_build=True)

        name: str = Field(alias="Name", pattern=_NAME)
        model_name: str | None = Field(default=None, alias="ModelName", pattern=_NAME)
        artifact_url: str | None = Field(default=None, alias="ArtifactUrl", min_length=1, max_length=1024)

    class CheckProperties(BaseModel):
        model_config = ConfigDict(extra="ignore", populate_by_name=True, defer_build=True)

        endpoint_name: str = Field(alias="EndpointName", pattern=_NAME)
        endpoint_config_name: str = Field(alias="EndpointConfigName", pattern=_NAME)
        components: list[Component] = Field(default_factory=list, alias="Components", max_length=1000)

    return SimpleNamespace(Component=Component, CheckProperties=CheckProperties)


def __getattr__(name: str) -> Any:
    """``Component`` and ``CheckProperties`` as module attributes (PEP 562), built on first access."""
    if name in ("Component", "CheckProperties"):
        return getattr(_models(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


State = Literal["ok", "waiting", "failed"]


_sagemaker = clients.client_getter("sagemaker")
_cloudformation = clients.client_getter("cloudformation")
ROLLBACK_KEY = "RollingBack"
"""The key on_event's answer carries into is_complete's event (the Provider framework merges the two)."""


def _request_type(event: Any) -> str:
    """The event's RequestType, after the checks ``llm_cdk_shared.custom_resource.parse_event`` makes (a JSON
    object; RequestType one of the three; Update and Delete carry a PhysicalResourceId), made by hand so that a
    Delete imports no pydantic. Raises DeploymentCheckEventError naming the field, the value and what is allowed."""
    if not isinstance(event, dict):
        raise DeploymentCheckEventError(
            "Not a CloudFormation custom resource event (not a JSON object); nothing was checked."
        )
    problems = []
    request = event.get("RequestType")
    if "RequestType" not in event:
        problems.append("RequestType: required field is missing; fix: add RequestType")
    elif request not in REQUEST_TYPES:
        problems.append(f"RequestType: got {shown(request)}; allowed: 'Create', 'Update' or 'Delete'")
    physical_id = event.get("PhysicalResourceId")
    if request in ("Update", "Delete") and not (isinstance(physical_id, str) and physical_id):
        problems.append(
            f"PhysicalResourceId: got {shown(physical_id) if 'PhysicalResourceId' in event else '(missing)'}"
            f"; allowed: the resource's physical id (a non-empty string), which {request} events carry"
        )
    if problems:
        raise DeploymentCheckEventError(
            "Not a valid CloudFormation custom resource event (nothing was checked):\n- " + "\n- ".join(problems)
        )
    return str(request)


def _properties(event: dict[str, Any]) -> CheckProperties:
    from pydantic import ValidationError

    raw = event.get("ResourceProperties", {})
    if not isinstance(raw, dict):
        raise DeploymentCheckFailed(
            f"invalid ResourceProperties: got {shown(raw)}; allowed: a JSON object with "
            "EndpointName, EndpointConfigName and Components"
        )
    try:
        return _models().CheckProperties.model_validate(raw)
    except ValidationError as error:
        found = "; ".join(validation_problems(error, root="ResourceProperties"))
        raise DeploymentCheckFailed(f"invalid ResourceProperties: {found}") from None


def _unsettled(error: ClientError, what: str) -> tuple[State, str]:
    """A describe call that failed: transient errors mean "look again", the rest fail the check."""
    err = error.response.get("Error", {})
    code, message = err.get("Code", ""), err.get("Message", "")
    if not_found(error):
        return "failed", f"{what} does not exist ({code}: {message})"
    if code in RETRYABLE_CODES or error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500:
        return "waiting", f"{what} could not be read yet ({code}); trying again"
    return "failed", f"{what} could not be read ({code}: {message})"


# ------------------------------------------------------------------ checks
def check_endpoint(props: CheckProperties) -> tuple[State, str]:
    name, intended = props.endpoint_name, props.endpoint_config_name
    try:
        endpoint = _sagemaker().describe_endpoint(EndpointName=name)
    except ClientError as error:
        return _unsettled(error, f"endpoint {name}")
    status = endpoint["EndpointStatus"]
    running = endpoint.get("EndpointConfigName")
    if status in ENDPOINT_WAITING:
        pending = (endpoint.get("PendingDeploymentSummary") or {}).get("EndpointConfigName")
        return "waiting", f"endpoint {name} is {status} (runs {running}, deploying {pending or 'nothing new'})"
    if status in ENDPOINT_FAILED:
        reason = endpoint.get("FailureReason") or "no FailureReason given"
        return "failed", f"endpoint {name} is {status}: {reason}"
    if running != intended:
        return "failed", (
            f"endpoint {name} is {status} on endpoint config {running}, not {intended} which this deployment created: "
            "SageMaker rolled the update back (an auto-rollback alarm fired or the new fleet failed to start); see the "
            "alarms and the endpoint's events"
        )
    return "ok", f"endpoint {name} is {status} on {intended}"


def check_component(props: CheckProperties, component: Component) -> tuple[State, str]:
    name = component.name
    try:
        found = _sagemaker().describe_inference_component(InferenceComponentName=name)
    except ClientError as error:
        return _unsettled(error, f"inference component {name}")
    status = found.get("InferenceComponentStatus", "unknown")
    if status in COMPONENT_WAITING:
        return "waiting", f"inference component {name} is {status}"
    if status != "InService":
        reason = found.get("FailureReason") or "no FailureReason given"
        return "failed", f"inference component {name} is {status}: {reason}"
    problems = []
    if found.get("EndpointName") != props.endpoint_name:
        problems.append(f"runs on endpoint {found.get('EndpointName')}, not {props.endpoint_name}")
    spec = found.get("Specification") or {}
    if component.model_name is not None and spec.get("ModelName") != component.model_name:
        problems.append(
            f"serves model {spec.get('ModelName')}, not {component.model_name} which this deployment "
            "created: SageMaker rolled the update back (an auto-rollback alarm fired or the new copies "
            "failed to start)"
        )
    artifact = (spec.get("Container") or {}).get("ArtifactUrl")
    if component.artifact_url is not None and artifact != component.artifact_url:
        problems.append(f"serves artifact {artifact}, not {component.artifact_url}")
    if problems:
        return "failed", f"inference component {name} is InService but " + "; ".join(problems)
    return "ok", f"inference component {name} is InService as declared"


def evaluate(props: CheckProperties) -> tuple[State, list[str]]:
    """The overall state and one line per endpoint/component, failures first."""
    results = [check_endpoint(props)] + [check_component(props, c) for c in props.components]
    failed = [line for state, line in results if state == "failed"]
    if failed:
        return "failed", failed
    waiting = [line for state, line in results if state == "waiting"]
    if waiting:
        return "waiting", waiting
    return "ok", [line for _, line in results]


def rolling_back(stack_id: Any) -> bool:
    """Whether the stack is rolling an update back (``UPDATE_ROLLBACK_IN_PROGRESS``); False when unknown."""
    return stack_status.rolling_back(_cloudformation, stack_id, logger=logger, otherwise="the deployment is checked")


# ---------------------------------------------------------------- handlers
@logger.inject_lambda_context(log_event=False)
def on_event(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = _request_type(event)
    if request == "Delete":
        logger.info("Delete: nothing to do", extra={"physical_resource_id": event.get("PhysicalResourceId")})
        return {"PhysicalResourceId": event["PhysicalResourceId"]}
    props = _properties(event)
    logger.info(
        "Deployment check started",
        extra={
            "request_type": request,
            "endpoint_name": props.endpoint_name,
            "endpoint_config_name": props.endpoint_config_name,
            "components": [c.name for c in props.components],
        },
    )
    answer: dict[str, Any] = {"PhysicalResourceId": PHYSICAL_ID_PREFIX + props.endpoint_name}
    if request == "Update" and rolling_back(event.get("StackId")):
        logger.info("Rollback: the endpoint is not checked", extra={"endpoint_name": props.endpoint_name})
        answer[ROLLBACK_KEY] = True
    return answer


@logger.inject_lambda_context(log_event=False)
def is_complete(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if _request_type(event) == "Delete":
        return {"IsComplete": True}
    props = _properties(event)
    data = {"EndpointConfigName": props.endpoint_config_name, "ComponentsChecked": str(len(props.components))}
    if event.get(ROLLBACK_KEY) is True:
        logger.info("Rollback: complete without a check", extra={"endpoint_name": props.endpoint_name})
        return {"IsComplete": True, "Data": {**data, "ComponentsChecked": "0"}}
    state, lines = evaluate(props)
    extra = {"endpoint_name": props.endpoint_name, "endpoint_config_name": props.endpoint_config_name, "details": lines}
    if state == "failed":
        logger.error("Deployment does not run what the template declares", extra=extra)
        message = "Deployment check failed: " + " | ".join(lines)
        raise DeploymentCheckFailed(message[:MAX_MESSAGE_CHARS])
    if state == "waiting":
        logger.info("Waiting for the endpoint and components to settle", extra=extra)
        return {"IsComplete": False}
    logger.info("Deployment runs what the template declares", extra=extra)
    return {"IsComplete": True, "Data": data}
