"""How a connector's chat request reaches the model: straight to the inference component, or through the front door.

Framework-free (botocore and ``sagemaker_llm_cdk.client`` only): the LangChain and LlamaIndex connectors build an
OpenAI-style chat-completions body (LMI's messages API, which the LMI container serves on InvokeEndpoint) and hand
it to a transport with the conversation it belongs to.

- ``EndpointTransport``: ``InvokeEndpoint`` / ``InvokeEndpointWithResponseStream`` with ``InferenceComponentName``.
  Stateless: each request goes where the endpoint's routing sends it (least outstanding requests by default,
  or prefix-aware). Needs ``sagemaker:InvokeEndpoint`` (and ``InvokeEndpointWithResponseStream`` to stream) on the
  endpoint and the component.
- ``FrontDoorTransport``: the session front door (``client.SessionClient``). Each conversation key (a LangGraph
  thread id, a chat id) maps to one front-door conversation, so all its turns reach one instance, whose KV
  cache still holds the earlier turns' prefix. A request with no conversation key is sent stateless through
  the front door. Streaming uses the conversation's open session on ``InvokeEndpointWithResponseStream``
  (SageMaker cannot create a stateful session with a streaming call; the front door opens it with a buffered
  one first); a completed stream is sent to the front door's turn log when it logs turns (``client`` module).
  Needs ``front_door.grant_invoke_url`` (and ``grant_stream`` to stream).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from ..client import Conversation, FrontDoorError, SessionClient, iter_stream_events, parse_stream

__all__ = [
    "DEFAULT_MAX_CONVERSATIONS",
    "ENDPOINT_KWARGS",
    "ChatTransport",
    "EndpointTransport",
    "FrontDoorTransport",
    "ModelCallError",
]

DEFAULT_MAX_CONVERSATIONS = 1024
"""How many conversations a ``FrontDoorTransport`` remembers by default (least recently used forgotten first)."""


class ModelCallError(RuntimeError):
    """The model answered with something that is not a chat completion (an error object, text, nothing)."""


class ChatTransport(Protocol):
    """Sends one chat-completions body; ``conversation`` (or None: stateless) names the conversation it belongs to."""

    def complete(self, body: dict[str, Any], *, conversation: str | None = None) -> dict[str, Any]:
        """The model's chat-completion object."""
        ...

    def stream(self, body: dict[str, Any], *, conversation: str | None = None) -> Iterator[dict[str, Any]]:
        """The model's chat-completion chunks, parsed, in order."""
        ...


def _completion(answer: Any) -> dict[str, Any]:
    if isinstance(answer, (bytes, bytearray)):
        try:
            answer = json.loads(answer)
        except ValueError:
            raise ModelCallError(f"the model answered with text that is not JSON: {answer[:200]!r}") from None
    if not isinstance(answer, dict) or not isinstance(answer.get("choices"), list) or not answer["choices"]:
        raise ModelCallError(f"the model answered without choices (is it LMI's messages API?): {str(answer)[:300]}")
    return answer


def _chunks(events: Iterator[Any]) -> Iterator[dict[str, Any]]:
    for event in events:
        if isinstance(event, dict) and "error" in event and "choices" not in event:
            raise ModelCallError(f"the model's stream failed: {str(event['error'])[:300]}")
        if isinstance(event, dict):
            yield event


def _encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


ENDPOINT_KWARGS = ("CustomAttributes", "InferenceId", "TargetContainerHostname", "TargetVariant")
"""``endpoint_kwargs`` an ``EndpointTransport`` passes on: the parameters of both ``InvokeEndpoint`` and
``InvokeEndpointWithResponseStream`` that it does not set itself."""

_SET_BY_THE_TRANSPORT = {
    "EndpointName": "endpoint_name",
    "InferenceComponentName": "the component (inference_component_name)",
    "Body": "the request body",
    "ContentType": "application/json",
    "Accept": "application/json",
    "SessionId": "stateless here; the front door (for_front_door) carries a session id",
}


def check_endpoint_kwargs(endpoint_kwargs: Any) -> dict[str, str]:
    """``endpoint_kwargs`` as a dict of ``ENDPOINT_KWARGS`` with string values, or why not."""
    if endpoint_kwargs is None:
        return {}
    if not isinstance(endpoint_kwargs, Mapping):
        raise ValueError(f"endpoint_kwargs must be a dict of InvokeEndpoint parameters, got {endpoint_kwargs!r}")
    checked = {}
    for key, value in endpoint_kwargs.items():
        if key in _SET_BY_THE_TRANSPORT:
            raise ValueError(
                f"endpoint_kwargs[{key!r}] cannot be set: the connector sets {key} itself "
                f"({_SET_BY_THE_TRANSPORT[key]}); remove it"
            )
        if key not in ENDPOINT_KWARGS:
            raise ValueError(
                f"endpoint_kwargs[{key!r}] is not accepted; allowed: {', '.join(ENDPOINT_KWARGS)} (the parameters "
                "of both InvokeEndpoint and InvokeEndpointWithResponseStream that the connector does not set)"
            )
        if not isinstance(value, str):
            raise ValueError(f"endpoint_kwargs[{key!r}] must be a string, got {value!r}")
        checked[key] = value
    return checked


def runtime_client_for(region: str | None, credentials_profile_name: str | None = None) -> Any:
    """A botocore ``sagemaker-runtime`` client in ``region`` (default: the configured one), with the default
    credentials or those of the profile ``credentials_profile_name`` (what ``boto3.Session(profile_name=...)``
    reads)."""
    import botocore.session
    from botocore.config import Config
    from botocore.exceptions import NoRegionError, ProfileNotFound

    session = (
        botocore.session.get_session()
        if credentials_profile_name is None
        else botocore.session.Session(profile=credentials_profile_name)
    )
    try:
        return session.create_client(
            "sagemaker-runtime",
            region_name=region,
            config=Config(read_timeout=70, retries={"mode": "standard", "total_max_attempts": 3}),
        )
    except ProfileNotFound:
        found = ", ".join(sorted(botocore.session.Session().available_profiles)) or "none"
        raise ValueError(
            f"credentials_profile_name={credentials_profile_name!r}: no such profile in the AWS config files "
            f"(~/.aws/config, ~/.aws/credentials; profiles found: {found}); name one of them, or leave it unset "
            "for the default credentials"
        ) from None
    except NoRegionError:
        raise ValueError(
            "no region: give region_name='...' (the endpoint's region), or set AWS_REGION or the profile's region"
        ) from None


class EndpointTransport:
    """``InvokeEndpoint`` on one inference component of an endpoint (stateless).

    :param endpoint_name: the endpoint (stack output ``*EndpointName``).
    :param component: the inference component (stack output ``*ComponentName``), or an adapter's component.
    :param runtime_client: a botocore (or boto3) ``sagemaker-runtime`` client. Default: one made in ``region``
        with the default credentials, or those of ``credentials_profile_name``.
    :param region: the endpoint's region, when ``runtime_client`` is not given.
    :param credentials_profile_name: a profile of the AWS config files, when ``runtime_client`` is not given.
    :param endpoint_kwargs: more parameters of each call, from ``ENDPOINT_KWARGS`` (e.g. ``CustomAttributes``).
    """

    def __init__(
        self,
        endpoint_name: str,
        component: str,
        *,
        runtime_client: Any = None,
        region: str | None = None,
        credentials_profile_name: str | None = None,
        endpoint_kwargs: Mapping[str, str] | None = None,
    ) -> None:
        if not endpoint_name or not component:
            raise ValueError("endpoint_name and component are required (the stack prints both)")
        self.endpoint_kwargs = check_endpoint_kwargs(endpoint_kwargs)
        if runtime_client is None:
            runtime_client = runtime_client_for(region, credentials_profile_name)
        self.endpoint_name = endpoint_name
        self.component = component
        self.runtime = runtime_client

    def complete(self, body: dict[str, Any], *, conversation: str | None = None) -> dict[str, Any]:
        response = self.runtime.invoke_endpoint(
            EndpointName=self.endpoint_name,
            InferenceComponentName=self.component,
            ContentType="application/json",
            Accept="application/json",
            Body=_encode(body),
            **self.endpoint_kwargs,
        )
        return _completion(response["Body"].read())

    def stream(self, body: dict[str, Any], *, conversation: str | None = None) -> Iterator[dict[str, Any]]:
        response = self.runtime.invoke_endpoint_with_response_stream(
            EndpointName=self.endpoint_name,
            InferenceComponentName=self.component,
            ContentType="application/json",
            Body=_encode({"stream_options": {"include_usage": True}, **body, "stream": True}),
            **self.endpoint_kwargs,
        )
        return _chunks(parse_stream(iter_stream_events(response["Body"])))


class FrontDoorTransport:
    """The session front door: one front-door conversation per conversation key, so its turns stay on one instance.

    :param client: the front door's ``SessionClient``.
    :param component: the inference component to talk to. Default: the front door's base model.
    :param max_conversations: how many conversation keys it remembers (``DEFAULT_MAX_CONVERSATIONS``, 1,024).
        Past that, the least recently used key is forgotten, not closed: its session expires after the model's
        ``sessions.expiration_seconds`` idle, and a later turn of that key opens a new conversation (a new
        session, so possibly another instance, without the cached prefix).

    ``close(key)`` ends one conversation's session, ``close_all()`` every one this transport remembers (sessions
    also expire after the model's ``sessions.expiration_seconds`` idle).
    """

    def __init__(
        self, client: SessionClient, *, component: str | None = None, max_conversations: int = DEFAULT_MAX_CONVERSATIONS
    ) -> None:
        if isinstance(max_conversations, bool) or not isinstance(max_conversations, int) or max_conversations < 1:
            raise ValueError(
                f"max_conversations must be a whole number of conversations, at least 1 (default "
                f"{DEFAULT_MAX_CONVERSATIONS}), got {max_conversations!r}"
            )
        self.client = client
        self.component = component
        self.max_conversations = max_conversations
        self.forgotten = 0
        """How many conversations were forgotten to stay within ``max_conversations``."""
        self._conversations: OrderedDict[str, Conversation] = OrderedDict()
        self._lock = threading.Lock()

    def conversation(self, key: str) -> Conversation:
        """The front-door conversation of ``key``, created on first use (opened on its first turn)."""
        with self._lock:
            found = self._conversations.get(key)
            if found is None or found.closed:
                found = self._conversations[key] = self.client.conversation(component=self.component)
            self._conversations.move_to_end(key)
            while len(self._conversations) > self.max_conversations:
                self._conversations.popitem(last=False)
                self.forgotten += 1
            return found

    def session_of(self, key: str) -> str | None:
        """The SageMaker session id ``key``'s turns carry now (None before its first turn, or once forgotten)."""
        with self._lock:
            found = self._conversations.get(key)
        return found.session_id if found is not None else None

    @property
    def remembered(self) -> int:
        """How many conversations it remembers now (at most ``max_conversations``)."""
        return len(self._conversations)

    def complete(self, body: dict[str, Any], *, conversation: str | None = None) -> dict[str, Any]:
        if conversation is None:
            return _completion(self.client.invoke(body, component=self.component)["body"])
        return _completion(self.conversation(conversation).send(body)["body"])

    def stream(self, body: dict[str, Any], *, conversation: str | None = None) -> Iterator[dict[str, Any]]:
        body = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        if conversation is None:
            # No session to stream on, and a stream cannot create one: one buffered turn, replayed as one chunk
            # (its usage included).
            return iter(_as_chunks(self.complete(body)))
        # Conversation.stream asks for usage (vLLM then ends the stream with a chunk holding it), falls back to a
        # buffered turn with ``body`` as given when SageMaker no longer has the session (vLLM refuses
        # ``stream_options`` without ``stream: true``) and sends the completed stream to the front door's turn log.
        return _chunks(_replay_buffered(self.conversation(conversation).stream(body, usage=True)))

    def close(self, key: str) -> None:
        with self._lock:
            found = self._conversations.pop(key, None)
        if found is not None:
            found.close()

    def close_all(self) -> None:
        with self._lock:
            found, self._conversations = list(self._conversations.values()), OrderedDict()
        errors = []
        for conversation in found:
            try:
                conversation.close()
            except FrontDoorError as exc:
                errors.append(exc)
        if errors:
            raise errors[0]


def _replay_buffered(events: Iterator[Any]) -> Iterator[Any]:
    """A stream's events; a whole completion (the front door's buffered fallback for a lost session) as a chunk."""
    for event in events:
        if isinstance(event, dict) and event.get("object") == "chat.completion":
            yield from _as_chunks(event)
        else:
            yield event


def _as_chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """A whole chat completion as a stream: one chunk of it all (``message`` becomes ``delta``, tool calls
    indexed), then, if it has ``usage``, a chunk of the usage alone with no choices, as vLLM ends a stream."""
    chunk = _as_chunk({k: v for k, v in completion.items() if k != "usage"})
    if not isinstance(completion.get("usage"), dict):
        return [chunk]
    closing = {k: v for k, v in chunk.items() if k != "choices"}
    return [chunk, {**closing, "choices": [], "usage": completion["usage"]}]


def _as_chunk(completion: dict[str, Any]) -> dict[str, Any]:
    """A whole chat completion as one streamed chunk (``message`` becomes ``delta``, tool calls indexed)."""
    choices = []
    for choice in completion.get("choices", []):
        message = dict(choice.get("message") or {})
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            message["tool_calls"] = [{**call, "index": call.get("index", i)} for i, call in enumerate(calls)]
        choices.append(
            {"index": choice.get("index", 0), "delta": message, "finish_reason": choice.get("finish_reason")}
        )
    chunk = {k: v for k, v in completion.items() if k != "choices"}
    chunk.update({"object": "chat.completion.chunk", "choices": choices})
    return chunk
