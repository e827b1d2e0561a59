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
     "EnableNetworkIsolation": "true"}                               # optional, default false
  Create/Update: the model name is ``<prefix>-<12 hex of sha256(role, container, vpc)>``, so the
  same properties always give the same model (a retried or no-op update reuses it, found with
  DescribeModel) and any change gives a new model; CloudFormation then deletes the old one
  (Delete with the old physical id) after the inference component has moved to the new one.
  Data returned: ``ModelName``, ``ModelArn``. Delete: ``DeleteModel`` of a name this function
  made; a missing model is fine.
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

logger = Logger()

PREFIX_MAX = 50
_NAME_PART = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*")
_REASON_MAX = 3000


_sagemaker = clients.client_getter("sagemaker")


class PropertiesError(ValueError):
    """The resource properties are not what this function needs."""


def model_name(properties: dict[str, Any]) -> str:
    """``<ModelNamePrefix>-<12 hex>``: deterministic for the model's role, container and network."""
    prefix = properties.get("ModelNamePrefix")
    if not isinstance(prefix, str) or not (1 <= len(prefix) <= PREFIX_MAX) or not _NAME_PART.fullmatch(prefix):
        raise PropertiesError(
            f"ModelNamePrefix {prefix!r} must be 1-{PREFIX_MAX} letters, digits and hyphens, starting and ending "
            "with a letter or digit"
        )
    digest = hashlib.sha256(json.dumps(
        [properties.get("ExecutionRoleArn"), properties.get("PrimaryContainer"), properties.get("VpcConfig")]
        + ([True] if _isolated(properties) else []),
        sort_keys=True, separators=(",", ":"),
    ).encode()).hexdigest()[:12]
    return f"{prefix}-{digest}"


def create_request(properties: dict[str, Any]) -> dict[str, Any]:
    """The CreateModel request for these properties."""
    role = properties.get("ExecutionRoleArn")
    container = properties.get("PrimaryContainer")
    if not isinstance(role, str) or not role.startswith("arn:"):
        raise PropertiesError(f"ExecutionRoleArn {role!r} must be an IAM role ARN")
    if not isinstance(container, dict) or not container.get("Image"):
        raise PropertiesError("PrimaryContainer must be a CreateModel ContainerDefinition with an Image")
    container = _with_boolean_accept_eula(container)
    request: dict[str, Any] = {
        "ModelName": model_name(properties),
        "ExecutionRoleArn": role,
        "PrimaryContainer": container,
    }
    vpc = properties.get("VpcConfig")
    if vpc:
        request["VpcConfig"] = vpc
    if _isolated(properties):
        request["EnableNetworkIsolation"] = True
    return request


def _isolated(properties: dict[str, Any]) -> bool:
    """``EnableNetworkIsolation``: CloudFormation passes booleans as the strings "true"/"false"."""
    value = properties.get("EnableNetworkIsolation", "false")
    if value not in (True, False, "true", "false"):
        raise PropertiesError(f"EnableNetworkIsolation {value!r} must be true or false")
    return value in (True, "true")


def _with_boolean_accept_eula(container: dict[str, Any]) -> dict[str, Any]:
    """CloudFormation hands custom-resource properties over as strings: an accepted licence
    (``ModelAccessConfig.AcceptEula``, "true") becomes the boolean CreateModel wants, on the gated model's
    ``ModelDataSource`` and on each ``AdditionalModelDataSources`` entry (a gated pre-trained draft head)."""
    source = (container.get("ModelDataSource") or {}).get("S3DataSource") or {}
    if isinstance(source, dict) and isinstance(source.get("ModelAccessConfig"), dict):
        container = {**container, "ModelDataSource": {**container["ModelDataSource"], "S3DataSource": _boolean_access(
            source, "ModelDataSource.S3DataSource")}}
    extra = container.get("AdditionalModelDataSources")
    if isinstance(extra, list):
        converted = []
        for index, channel in enumerate(extra):
            inner = channel.get("S3DataSource") if isinstance(channel, dict) else None
            if isinstance(inner, dict) and isinstance(inner.get("ModelAccessConfig"), dict):
                channel = {**channel, "S3DataSource": _boolean_access(
                    inner, f"AdditionalModelDataSources[{index}].S3DataSource")}
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
            raise PropertiesError(f"{where}.ModelAccessConfig.AcceptEula {value!r} must be true or false")
        value = value.lower() == "true"
    if not isinstance(value, bool):
        raise PropertiesError(f"{where}.ModelAccessConfig.AcceptEula {value!r} must be true or false")
    return {**source, "ModelAccessConfig": {**access, "AcceptEula": value}}


def _create_or_reuse(properties: dict[str, Any]) -> tuple[str, dict[str, str]]:
    request = create_request(properties)
    name = request["ModelName"]
    try:
        arn = _sagemaker().describe_model(ModelName=name)["ModelArn"]
        logger.info("model exists; reusing it", extra={"model_name": name})
    except ClientError as exc:
        if not not_found(exc):
            raise
        arn = _sagemaker().create_model(**request)["ModelArn"]
        logger.info("model created", extra={"model_name": name})
    return name, {"ModelName": name, "ModelArn": arn}


def _delete(physical_id: str, properties: dict[str, Any]) -> None:
    prefix = properties.get("ModelNamePrefix")
    if not isinstance(prefix, str) or not re.fullmatch(re.escape(prefix) + r"-[0-9a-f]{12}", physical_id or ""):
        logger.info("nothing to delete: the physical id is not a model this function made")
        return
    try:
        _sagemaker().delete_model(ModelName=physical_id)
        logger.info("model deleted", extra={"model_name": physical_id})
    except ClientError as exc:
        if not not_found(exc):
            raise


def _respond(event: dict[str, Any], context: Any, status: str, physical_id: str, data: dict[str, str],
             reason: str = "") -> None:
    body = json.dumps({
        "Status": status,
        "Reason": (reason or f"See CloudWatch log stream {context.log_stream_name}")[:_REASON_MAX],
        "PhysicalResourceId": physical_id,
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
        "Data": data,
    }).encode()
    request = urllib.request.Request(
        event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - CloudFormation's presigned URL
        response.read()


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> None:
    kind = event.get("RequestType")
    properties = event.get("ResourceProperties") or {}
    physical_id = event.get("PhysicalResourceId") or context.log_stream_name
    logger.append_keys(request_type=kind, logical_id=event.get("LogicalResourceId"))
    try:
        data: dict[str, str] = {}
        if kind in ("Create", "Update"):
            physical_id, data = _create_or_reuse(properties)
        elif kind == "Delete":
            _delete(physical_id, properties)
        else:
            raise PropertiesError(f"unknown RequestType {kind!r}")
    except Exception as exc:  # noqa: BLE001 - CloudFormation must always get an answer
        logger.exception("request failed")
        message = exc.response["Error"].get("Message", str(exc)) if isinstance(exc, ClientError) else str(exc)
        _respond(event, context, "FAILED", physical_id, {}, f"{type(exc).__name__}: {message}")
        return
    _respond(event, context, "SUCCESS", physical_id, data)
