"""CloudFormation custom resource: the SageMaker model that serves a base model with its EAGLE draft head.

Why a custom resource: ``AWS::SageMaker::Model`` has no ``AdditionalModelDataSources`` (the
CloudFormation schema stops at ``ModelDataSource``), but serving a draft head needs it: SageMaker
mounts each additional source at ``/opt/ml/additional-model-data-sources/<ChannelName>/`` and the
LMI container's ``OPTION_SPECULATIVE_CONFIG`` points vLLM at that folder. This function calls
``CreateModel`` with exactly the properties CloudFormation passes, so the model still changes only
through a stack deployment.

``handler(event, context)`` (CloudFormation invokes it directly; it answers on ``ResponseURL``)
  ResourceProperties::
    {"ModelNamePrefix": "qwen3-32b-eagle",          # 1-50 chars, letters, digits, hyphens
     "ExecutionRoleArn": "arn:aws:iam::...:role/...",
     "PrimaryContainer": {<CreateModel ContainerDefinition>},
     "VpcConfig": {"SecurityGroupIds": [...], "Subnets": [...]},   # optional
     "EnableNetworkIsolation": "true",                               # optional, default false
     "PromotedHead": {"S3Uri": "<the promotion parameter's value>",  # optional: a model with a promotion
                      "ReadablePrefix": "s3://<artifacts bucket>/jobs/",
                      "Fallback": {<S3DataSource of the pre-trained head>}}}  # optional
  Create/Update: the model name is ``<prefix>-<12 hex of sha256(role, container, vpc)>`` of the model
  it creates, so the same properties always give the same model (a retried or no-op update reuses it,
  found with DescribeModel) and any change gives a new model; CloudFormation then deletes the old one
  (Delete with the old physical id) after the inference component has moved to the new one.
  Data returned: ``ModelName``, ``ModelArn``, ``DraftHead`` (the head served: an s3:// URI, or
  ``none``). Delete: ``DeleteModel`` of a name this function made; a missing model is fine.

A promoted head is served only when it is one this stack's endpoint role may read and was trained on the
weights the model serves now (``PromotedHead``): its URI is ``<ReadablePrefix><job name>/draft/``, and
``DescribeOptimizationJob`` of that job says it completed, wrote that head, and trained on the container's
``ModelDataSource`` S3 URI. Otherwise (a parameter kept from a deleted stack pointing at the old stack's
bucket, a head written by hand, a head trained on weights the config has since changed) the model is made
without it: with the pre-trained head (``Fallback``) when the model has one, else with no draft head and no
``OPTION_SPECULATIVE_CONFIG``, and a warning says which head was not served and why. The create never fails
over a head the endpoint could not load.

A malformed event never leaves CloudFormation waiting: every problem is answered ``FAILED`` on the
``ResponseURL`` with a reason naming the field, the value and what is allowed, before any AWS call
(RequestType other than Create/Update/Delete, StackId/RequestId/LogicalResourceId that are not strings,
ResourceProperties that are not an object or hold an unknown key, a CreateModel request that botocore's
model of SageMaker refuses: a wrong type, a missing or unknown member). Only an event that has no
``https://`` ResponseURL (or is no JSON object) cannot be answered: it raises ``EventError``. A Delete
whose physical id or properties are not those of a model this function made succeeds without an AWS call.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.request
from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from llm_cdk_shared import clients
from llm_cdk_shared.aws_errors import not_found
from llm_cdk_shared.problems import shown

logger = Logger()

PREFIX_MAX = 50
_NAME_PART = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*")
_REASON_MAX = 3000
_LINE_MAX = 300  # a problem line quotes at most this much of a value
PHYSICAL_ID_MAX = 1024
REQUEST_TYPES = ("Create", "Update", "Delete")
ENVELOPE_FIELDS = ("StackId", "RequestId", "LogicalResourceId")
PROPERTY_NAMES = (
    "ModelNamePrefix",
    "ExecutionRoleArn",
    "PrimaryContainer",
    "VpcConfig",
    "EnableNetworkIsolation",
    "PromotedHead",
    "ServiceToken",
    "ServiceTimeout",
)
"""What the construct sets, and what CloudFormation adds to a custom resource's properties (its own settings)."""


_sagemaker = clients.client_getter("sagemaker")


CHANNEL = "eagle"
"""The draft head's channel in ``AdditionalModelDataSources``."""
SPECULATIVE_OPTION = "OPTION_SPECULATIVE_CONFIG"
NO_HEAD = "none"
"""The promotion parameter's value while no head is promoted."""
JOB_NAME_PREFIX = "eagle-"
"""Optimization jobs of the EAGLE loop are named ``eagle-<model>-<hash>`` (``eagle.layout.JOB_NAME_PREFIX``)."""
_JOB_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")


class PropertiesError(ValueError):
    """The resource properties are not what this function needs."""


class EventError(ValueError):
    """Not a CloudFormation custom resource event that can be answered (no JSON object, or no ResponseURL)."""


def model_name(properties: dict[str, Any], container: Any = None) -> str:
    """``<ModelNamePrefix>-<12 hex>``: deterministic for the model's role, container (``container``, default the
    properties' ``PrimaryContainer``) and network."""
    prefix = properties.get("ModelNamePrefix")
    if not isinstance(prefix, str) or not (1 <= len(prefix) <= PREFIX_MAX) or not _NAME_PART.fullmatch(prefix):
        raise PropertiesError(
            f"ModelNamePrefix {shown(prefix)} must be 1-{PREFIX_MAX} letters, digits and hyphens, starting and ending "
            "with a letter or digit"
        )
    digest = hashlib.sha256(
        json.dumps(
            [
                properties.get("ExecutionRoleArn"),
                properties.get("PrimaryContainer") if container is None else container,
                properties.get("VpcConfig"),
            ]
            + ([True] if _isolated(properties) else []),
            sort_keys=True,
            separators=(",", ":"),
        ).encode()
    ).hexdigest()[:12]
    return f"{prefix}-{digest}"


def create_request(properties: dict[str, Any], container: Any = None) -> dict[str, Any]:
    """The CreateModel request for these properties (with ``container``, default their ``PrimaryContainer``)."""
    role = properties.get("ExecutionRoleArn")
    container = properties.get("PrimaryContainer") if container is None else container
    if not isinstance(role, str) or not role.startswith("arn:"):
        raise PropertiesError(f"ExecutionRoleArn {shown(role)} must be an IAM role ARN")
    if not isinstance(container, dict) or not container.get("Image"):
        raise PropertiesError("PrimaryContainer must be a CreateModel ContainerDefinition with an Image")
    name = model_name(properties, container)
    container = _with_boolean_accept_eula(container)
    request: dict[str, Any] = {
        "ModelName": name,
        "ExecutionRoleArn": role,
        "PrimaryContainer": container,
    }
    if "VpcConfig" in properties:  # as given: botocore's model checks it (an empty or mistyped one is refused)
        request["VpcConfig"] = properties["VpcConfig"]
    if _isolated(properties):
        request["EnableNetworkIsolation"] = True
    return request


def promoted_head(properties: dict[str, Any]) -> dict[str, Any] | None:
    """``PromotedHead`` checked: None when absent or while the parameter holds ``none``."""
    head = properties.get("PromotedHead")
    if head is None:
        return None
    if not isinstance(head, dict) or sorted(set(head) - {"Fallback"}) != ["ReadablePrefix", "S3Uri"]:
        raise PropertiesError(
            f"PromotedHead: got {shown(head)}; allowed: an object of S3Uri (the promotion "
            "parameter's value), ReadablePrefix (s3://<bucket>/<prefix>/) and, optionally, Fallback "
            "(the pre-trained head's S3DataSource)"
        )
    uri, readable = head["S3Uri"], head["ReadablePrefix"]
    if not isinstance(readable, str) or not readable.startswith("s3://") or not readable.endswith("/"):
        raise PropertiesError(
            f"PromotedHead.ReadablePrefix: got {shown(readable)}; allowed: an s3://<bucket>/<prefix>/ URI ending in '/'"
        )
    if "Fallback" in head and not isinstance(head["Fallback"], dict):
        raise PropertiesError(f"PromotedHead.Fallback: got {shown(head['Fallback'])}; allowed: an S3DataSource object")
    if not isinstance(uri, str):
        raise PropertiesError(f"PromotedHead.S3Uri: got {shown(uri)}; allowed: the promotion parameter's value")
    if uri.strip().lower() == NO_HEAD:
        return None
    return head


def served_container(properties: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The container to create and the draft head it serves (an s3:// URI or ``none``).

    The promoted head is left out (see the module docstring) when ``unservable_reason`` finds a reason: the
    pre-trained head (``Fallback``) takes its channel, or, without one, the model runs with no draft head."""
    container = properties.get("PrimaryContainer")
    head = promoted_head(properties)
    if not isinstance(container, dict):
        raise PropertiesError("PrimaryContainer must be a CreateModel ContainerDefinition with an Image")
    channel = _channel(container)
    served = channel.get("S3DataSource", {}).get("S3Uri", NO_HEAD) if channel else NO_HEAD
    if head is None or channel is None or served != head["S3Uri"]:
        return container, served
    reason = unservable_reason(head, container)
    if reason is None:
        return container, served
    fallback = head.get("Fallback")
    sources = [source for source in container.get("AdditionalModelDataSources") or [] if source is not channel]
    environment = dict(container.get("Environment") or {})
    if fallback is not None:
        sources.append({**channel, "S3DataSource": fallback})
        now = str(fallback.get("S3Uri", NO_HEAD))
        instead = f"the pre-trained head {now}"
    else:
        environment.pop(SPECULATIVE_OPTION, None)
        now, instead = NO_HEAD, "no draft head (the base model alone)"
    changed = {
        key: value for key, value in container.items() if key not in ("AdditionalModelDataSources", "Environment")
    }
    if sources:
        changed["AdditionalModelDataSources"] = sources
    if environment or "Environment" in container:
        changed["Environment"] = environment
    logger.warning(
        f"promoted draft head {served} not served: {reason}; serving {instead}",
        extra={"draft_head": served, "served_instead": now},
    )
    return changed, now


def unservable_reason(head: dict[str, Any], container: dict[str, Any]) -> str | None:
    """Why the promoted head must not be served with ``container``, or None when it may."""
    uri, readable = head["S3Uri"], head["ReadablePrefix"]
    if not uri.startswith(readable):
        return (
            f"it is not under {readable}, the only draft heads this stack's endpoint role may read (a value kept "
            "from another stack, or from a deleted one: write a head of this stack, or none, to the parameter)"
        )
    rest = uri[len(readable) :]
    job, _, tail = rest.partition("/")
    if tail != "draft/" or not _JOB_NAME.fullmatch(job) or not job.startswith(JOB_NAME_PREFIX):
        return f"it is not the draft/ folder of one of this stack's optimization jobs ({readable}<job name>/draft/)"
    weights = ((container.get("ModelDataSource") or {}).get("S3DataSource") or {}).get("S3Uri")
    try:
        described = _sagemaker().describe_optimization_job(OptimizationJobName=job)
    except ClientError as exc:
        if not not_found(exc):
            raise
        return f"no optimization job {job} in this account and region tells which weights it was trained on"
    status = described.get("OptimizationJobStatus")
    if status != "COMPLETED":
        return f"its optimization job {job} is {status}, not COMPLETED"
    output = ((described.get("OutputConfig") or {}).get("S3OutputLocation") or "").rstrip("/") + "/draft/"
    if output != uri:
        return f"optimization job {job} wrote its head to {output}, not to {uri}"
    trained_on = ((described.get("ModelSource") or {}).get("S3") or {}).get("S3Uri")
    if trained_on != weights:
        return (
            f"it was trained on the weights {trained_on} and the model now serves {weights} (a head is bound to "
            "the weights it was trained on; the next EAGLE run trains one for these)"
        )
    return None


def _channel(container: dict[str, Any]) -> dict[str, Any] | None:
    """The container's draft head channel, if it has one."""
    for source in container.get("AdditionalModelDataSources") or []:
        if isinstance(source, dict) and source.get("ChannelName") == CHANNEL:
            return source
    return None


def _isolated(properties: dict[str, Any]) -> bool:
    """``EnableNetworkIsolation``: CloudFormation passes booleans as the strings "true"/"false"."""
    value = properties.get("EnableNetworkIsolation", "false")
    if value not in (True, False, "true", "false"):
        raise PropertiesError(f"EnableNetworkIsolation {shown(value)} must be true or false")
    return value in (True, "true")


def _with_boolean_accept_eula(container: dict[str, Any]) -> dict[str, Any]:
    """CloudFormation hands custom-resource properties over as strings: an accepted licence
    (``ModelAccessConfig.AcceptEula``, "true") becomes the boolean CreateModel wants, on the gated model's
    ``ModelDataSource`` and on each ``AdditionalModelDataSources`` entry (a gated pre-trained draft head)."""
    model_source = container.get("ModelDataSource")
    source = model_source.get("S3DataSource") if isinstance(model_source, dict) else None
    if isinstance(source, dict) and isinstance(source.get("ModelAccessConfig"), dict):
        container = {
            **container,
            "ModelDataSource": {
                **container["ModelDataSource"],
                "S3DataSource": _boolean_access(source, "ModelDataSource.S3DataSource"),
            },
        }
    extra = container.get("AdditionalModelDataSources")
    if isinstance(extra, list):
        converted = []
        for index, channel in enumerate(extra):
            inner = channel.get("S3DataSource") if isinstance(channel, dict) else None
            if isinstance(inner, dict) and isinstance(inner.get("ModelAccessConfig"), dict):
                channel = {
                    **channel,
                    "S3DataSource": _boolean_access(inner, f"AdditionalModelDataSources[{index}].S3DataSource"),
                }
            converted.append(channel)
        container = {**container, "AdditionalModelDataSources": converted}
    return container


def _boolean_access(source: dict[str, Any], where: str) -> dict[str, Any]:
    access = source["ModelAccessConfig"]
    if "AcceptEula" not in access:
        raise PropertiesError(f"{where}.ModelAccessConfig needs AcceptEula (true or false)")
    value = access["AcceptEula"]
    if isinstance(value, str):
        if value.lower() not in ("true", "false"):
            raise PropertiesError(f"{where}.ModelAccessConfig.AcceptEula {shown(value)} must be true or false")
        value = value.lower() == "true"
    if not isinstance(value, bool):
        raise PropertiesError(f"{where}.ModelAccessConfig.AcceptEula {shown(value)} must be true or false")
    return {**source, "ModelAccessConfig": {**access, "AcceptEula": value}}


def check_request(request: dict[str, Any]) -> None:
    """PropertiesError listing every problem botocore's model of CreateModel finds in ``request`` (a wrong type, a
    missing or unknown member), before any AWS call: the checks botocore makes when the request is sent."""
    from botocore.validate import ParamValidator

    shape = _sagemaker().meta.service_model.operation_model("CreateModel").input_shape
    report = ParamValidator().validate(request, shape)
    if report.has_errors():
        lines = [
            line if len(line) <= _LINE_MAX else line[: _LINE_MAX - 3] + "..."
            for line in report.generate_report().splitlines()
            if line.strip()
        ]
        raise PropertiesError(
            "the CreateModel request of these properties is invalid (nothing was created):\n" + "\n".join(lines)
        )


def _properties(event: dict[str, Any], kind: str) -> dict[str, Any]:
    """ResourceProperties as an object (a Delete reads only ModelNamePrefix: anything else there is no model made)."""
    properties = event.get("ResourceProperties", {})
    if not isinstance(properties, dict):
        if kind == "Delete":
            return {}
        raise PropertiesError(
            f"ResourceProperties: got {shown(properties)}; allowed: a JSON object of {', '.join(PROPERTY_NAMES[:-2])}"
        )
    unknown = sorted(key for key in properties if key not in PROPERTY_NAMES)
    if unknown and kind != "Delete":
        raise PropertiesError(
            f"ResourceProperties: unknown {', '.join(shown(k) for k in unknown)} (misspelt?); "
            f"allowed: {', '.join(PROPERTY_NAMES)}; nothing was created"
        )
    return properties


def _envelope_value(event: dict[str, Any], name: str) -> str:
    """The event's ``name`` (StackId, RequestId, LogicalResourceId) to echo in the answer; "" when it is not one."""
    value = event.get(name)
    return value if isinstance(value, str) and 0 < len(value) <= PHYSICAL_ID_MAX else ""


def _event_problems(event: dict[str, Any]) -> list[str]:
    """What is wrong with the event's own fields (not its properties)."""
    problems = []
    kind = event.get("RequestType")
    if kind not in REQUEST_TYPES:
        problems.append(
            f"RequestType: got {shown(kind) if 'RequestType' in event else '(missing)'}; "
            "allowed: 'Create', 'Update' or 'Delete'"
        )
    for name in ENVELOPE_FIELDS:
        if not _envelope_value(event, name):
            problems.append(
                f"{name}: got {shown(event.get(name)) if name in event else '(missing)'}; allowed: the "
                f"non-empty string (at most {PHYSICAL_ID_MAX} characters) CloudFormation sends"
            )
    return problems


def _create_or_reuse(properties: dict[str, Any]) -> tuple[str, dict[str, str]]:
    request = create_request(properties)
    check_request(request)  # the properties' own problems, before any AWS call
    container, head = served_container(properties)
    if container is not properties["PrimaryContainer"]:  # the promoted head left out
        request = create_request(properties, container)
        check_request(request)
    name = request["ModelName"]
    try:
        arn = _sagemaker().describe_model(ModelName=name)["ModelArn"]
        logger.info("model exists; reusing it", extra={"model_name": name})
    except ClientError as exc:
        if not not_found(exc):
            raise
        arn = _sagemaker().create_model(**request)["ModelArn"]
        logger.info("model created", extra={"model_name": name})
    return name, {"ModelName": name, "ModelArn": arn, "DraftHead": head}


def _delete(physical_id: str, properties: dict[str, Any]) -> None:
    prefix = properties.get("ModelNamePrefix")
    if (
        not isinstance(prefix, str)
        or not isinstance(physical_id, str)
        or not re.fullmatch(re.escape(prefix) + r"-[0-9a-f]{12}", physical_id)
    ):
        logger.info("nothing to delete: the physical id is not a model this function made")
        return
    try:
        _sagemaker().delete_model(ModelName=physical_id)
        logger.info("model deleted", extra={"model_name": physical_id})
    except ClientError as exc:
        if not not_found(exc):
            raise


def _respond(
    event: dict[str, Any], context: Any, status: str, physical_id: str, data: dict[str, str], reason: str = ""
) -> None:
    body = json.dumps(
        {
            "Status": status,
            "Reason": (reason or f"See CloudWatch log stream {context.log_stream_name}")[:_REASON_MAX],
            "PhysicalResourceId": physical_id,
            **{name: _envelope_value(event, name) for name in ENVELOPE_FIELDS},
            "Data": data,
        }
    ).encode()
    request = urllib.request.Request(
        event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - CloudFormation's presigned URL
        response.read()


def _response_url(event: Any) -> str:
    """Where to answer; EventError (nothing was done, nobody can be answered) without one."""
    if not isinstance(event, dict):
        raise EventError(
            f"Not a CloudFormation custom resource event (got {shown(event)}, not a JSON object); "
            "nothing was done and there is no ResponseURL to answer on."
        )
    url = event.get("ResponseURL")
    if not isinstance(url, str) or not url.startswith("https://"):
        raise EventError(
            f"ResponseURL: got {shown(url) if 'ResponseURL' in event else '(missing)'}; allowed: the "
            "https:// presigned URL CloudFormation sends. Nothing was done and CloudFormation cannot be "
            "answered."
        )
    return url


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> None:
    _response_url(event)
    kind = event.get("RequestType")
    given_id = event.get("PhysicalResourceId")
    # Any id this function gives is short (a model name, a log stream name); a longer one is not ours, and echoing it
    # could push the answer past CloudFormation's 4096-byte limit, so it would never arrive.
    physical_id = (
        given_id if isinstance(given_id, str) and 0 < len(given_id) <= PHYSICAL_ID_MAX else context.log_stream_name
    )
    logger.append_keys(
        request_type=kind if isinstance(kind, str) else None,
        logical_id=event.get("LogicalResourceId") if isinstance(event.get("LogicalResourceId"), str) else None,
    )
    try:
        data: dict[str, str] = {}
        problems = _event_problems(event)
        if problems:
            raise EventError(
                "Not a valid CloudFormation custom resource event (nothing was done):\n- " + "\n- ".join(problems)
            )
        properties = _properties(event, str(kind))
        if kind in ("Create", "Update"):
            physical_id, data = _create_or_reuse(properties)
        else:
            _delete(physical_id, properties)
    except Exception as exc:  # noqa: BLE001 - CloudFormation must always get an answer
        logger.exception("request failed")
        message = exc.response["Error"].get("Message", str(exc)) if isinstance(exc, ClientError) else str(exc)
        _respond(event, context, "FAILED", physical_id, {}, f"{type(exc).__name__}: {message}")
        return
    _respond(event, context, "SUCCESS", physical_id, data)
