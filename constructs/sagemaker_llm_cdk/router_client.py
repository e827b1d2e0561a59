"""``RouterClient``: an application's client of a SageMaker inference router (boto3 only).

Imports nothing from CDK, jsii or pydantic, so an application container needs only boto3::

    from sagemaker_llm_cdk.router_client import RouterClient

    router = RouterClient("SageMakerLlm-Chat", region="us-east-1")
    answer = router.invoke("qwen3-8b", {"messages": [{"role": "user", "content": "Hello"}]})
    answer.body, answer.destination_arn, answer.routing_reason   # who served it, and why

What the runtime API (``sagemaker-inference-router-runtime``) documents, and this client follows:

* ``InvokeInferenceRouter``: at most 6 MB of request body; the model has 60 seconds per attempt; when a
  destination returns a retryable error before the model answers, the router retries once on another
  destination, so AWS says to set the client's read timeout to at least 170 seconds (``READ_TIMEOUT``). The
  answer names the destination that served it (``InvokedRoutedResourceArn``) and why the router chose it
  (``RoutingReason``: ``local-preferred``, ``capacity-available``, ``only-healthy`` or ``failover``).
* ``InvokeInferenceRouterAsync``: the input is already in S3 in the router's region; the answer says where the
  result and a failure will be written (``OutputLocation``, ``FailureLocation``).
* No streaming: the runtime API has no streaming operation (nothing like
  ``InvokeEndpointWithResponseStream``), so ``invoke`` returns the whole body; stream from the endpoint itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SERVICE = "sagemaker-inference-router-runtime"
READ_TIMEOUT = 170
"""Seconds. AWS: "Because a request can make two attempts, set your client read timeout to at least 170 seconds"."""
CONNECT_TIMEOUT = 10
MAX_BODY_BYTES = 6 * 1024 * 1024
"""InvokeInferenceRouter's request limit (6 MB; a larger body fails with HTTP 413)."""
RETRIES: dict[str, Any] = {"mode": "standard", "max_attempts": 3}
"""botocore retries throttling and transient errors (``ThrottlingException``, ``ModelNotReadyException``, 5xx);
the router itself already retries once on another destination, so the client keeps to three attempts."""


@dataclass(frozen=True)
class RouterResponse:
    """What ``invoke`` returns: the model's body and which destination served it, and why."""

    body: bytes
    content_type: str | None
    destination_arn: str | None
    """``InvokedRoutedResourceArn``: the endpoint or inference component that served the request."""
    routing_reason: str | None
    """``RoutingReason``: local-preferred, capacity-available, only-healthy or failover."""
    production_variant: str | None = None
    custom_attributes: str | None = None

    @property
    def destination_region(self) -> str | None:
        """The region of the destination that served the request (from its ARN)."""
        parts = (self.destination_arn or "").split(":")
        return parts[3] if len(parts) > 5 else None

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True)
class AsyncSubmission:
    """What ``invoke_async`` returns: where the result (or the failure) will land in S3."""

    inference_id: str | None
    output_location: str | None
    failure_location: str | None


class RouterClient:
    """Invokes one inference router. ``client`` (a ``sagemaker-inference-router-runtime`` client) is for tests."""

    def __init__(
        self,
        router_name: str,
        *,
        region: str | None = None,
        session: Any = None,
        client: Any = None,
        read_timeout: int = READ_TIMEOUT,
        connect_timeout: int = CONNECT_TIMEOUT,
    ) -> None:
        if read_timeout < READ_TIMEOUT:
            raise ValueError(
                f"read_timeout {read_timeout} s is below the {READ_TIMEOUT} s AWS documents for a request "
                "that the router retries on a second destination"
            )
        self.router_name = router_name
        if client is None:
            import boto3
            from botocore.config import Config

            session = session or boto3.Session()
            client = session.client(
                SERVICE,
                region_name=region,
                config=Config(
                    read_timeout=read_timeout,
                    connect_timeout=connect_timeout,
                    retries=dict(RETRIES),
                    user_agent_appid="sagemaker-llm-cdk",
                ),
            )
        self.client = client

    def invoke(
        self,
        target: str,
        body: bytes | str | Mapping[str, Any],
        *,
        content_type: str = "application/json",
        accept: str | None = None,
        inference_id: str | None = None,
        prefix_aware_id: str | None = None,
        custom_attributes: str | None = None,
    ) -> RouterResponse:
        """Send ``body`` (bytes, text, or a mapping sent as JSON) to routing target ``target``; the whole answer
        comes back at once (the runtime API has no streaming)."""
        payload = (
            body if isinstance(body, bytes) else body.encode() if isinstance(body, str) else json.dumps(body).encode()
        )
        if not payload:
            raise ValueError("the body can't be empty")
        if len(payload) > MAX_BODY_BYTES:
            raise ValueError(f"the body is {len(payload)} bytes; InvokeInferenceRouter takes at most {MAX_BODY_BYTES}")
        request: dict[str, Any] = {
            "InferenceRouterName": self.router_name,
            "RoutingTargetName": target,
            "Body": payload,
            "ContentType": content_type,
        }
        for key, value in (
            ("Accept", accept),
            ("InferenceId", inference_id),
            ("PrefixAwareId", prefix_aware_id),
            ("CustomAttributes", custom_attributes),
        ):
            if value is not None:
                request[key] = value
        answer = self.client.invoke_inference_router(**request)
        raw = answer.get("Body", b"")
        return RouterResponse(
            body=raw.read() if hasattr(raw, "read") else bytes(raw),
            content_type=answer.get("ContentType"),
            destination_arn=answer.get("InvokedRoutedResourceArn"),
            routing_reason=answer.get("RoutingReason"),
            production_variant=answer.get("InvokedProductionVariant"),
            custom_attributes=answer.get("CustomAttributes"),
        )

    def invoke_async(
        self,
        target: str,
        input_location: str,
        *,
        content_type: str | None = None,
        accept: str | None = None,
        inference_id: str | None = None,
        output_path_extension: str | None = None,
        filename: str | None = None,
        request_ttl_seconds: int | None = None,
        invocation_timeout_seconds: int | None = None,
        custom_attributes: str | None = None,
    ) -> AsyncSubmission:
        """Submit the S3 object ``input_location`` (in the router's region and account) to asynchronous target
        ``target``; returns where the result and the failure details will be written."""
        request: dict[str, Any] = {
            "InferenceRouterName": self.router_name,
            "RoutingTargetName": target,
            "InputLocation": input_location,
        }
        for key, value in (
            ("ContentType", content_type),
            ("Accept", accept),
            ("InferenceId", inference_id),
            ("S3OutputPathExtension", output_path_extension),
            ("Filename", filename),
            ("RequestTTLSeconds", request_ttl_seconds),
            ("InvocationTimeoutSeconds", invocation_timeout_seconds),
            ("CustomAttributes", custom_attributes),
        ):
            if value is not None:
                request[key] = value
        answer = self.client.invoke_inference_router_async(**request)
        return AsyncSubmission(
            inference_id=answer.get("InferenceId"),
            output_location=answer.get("OutputLocation"),
            failure_location=answer.get("FailureLocation"),
        )
