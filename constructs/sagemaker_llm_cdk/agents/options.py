"""The connectors' constructor arguments, checked once, in langchain-aws' terms where they mean the same thing.

Framework-free (like ``transport``): both connectors call these from their pydantic validators, so a mistake is
one ``ValueError`` naming the argument, the value, what is allowed and how to fix it, never an argument
silently ignored.

langchain-aws' ``ChatSagemakerEndpoint`` names taken as they are: ``endpoint_name``, ``inference_component_name``,
``region_name``, ``client`` (a boto3/botocore ``sagemaker-runtime`` client), ``credentials_profile_name`` (a
profile of the AWS config files), ``model_kwargs`` (merged into every request body), ``endpoint_kwargs``
(extra ``InvokeEndpoint`` parameters) and ``streaming`` (a buffered call is answered from the stream).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from .openai_format import GENERATION_KEYS
from .transport import EndpointTransport

__all__ = [
    "CLIENT_OPTIONS",
    "REASONING_FAMILIES",
    "build_transport",
    "check_model_kwargs",
    "component_arguments",
    "refuse_unknown",
    "sends_reasoning",
    "split_model_kwargs",
]

CLIENT_OPTIONS = (
    "endpoint_name",
    "inference_component_name",
    "region_name",
    "client",
    "credentials_profile_name",
    "endpoint_kwargs",
)
"""The arguments that describe the runtime client the connector builds (the component route only)."""

BODY_KEYS_OF_THE_CONNECTOR = {
    "messages": "the connector writes the messages from the conversation it is given",
    "stream": "the connector sets it when it streams (streaming=True, or .stream())",
    "stream_options": "the connector asks for usage when it streams; vLLM refuses it on a buffered call",
}
"""Request-body fields ``model_kwargs`` may not set, and why."""

HINTS = {
    "region": "region_name",
    "aws_region_name": "region_name",
    "profile_name": "credentials_profile_name",
    "profile": "credentials_profile_name",
    "runtime_client": "client",
    "component": "inference_component_name",
    "component_name": "inference_component_name",
    "inference_component": "inference_component_name",
    "endpoint": "endpoint_name",
}
"""Names users bring from other SageMaker connectors (LlamaIndex's, the transports'), and the name used here."""


REASONING_FAMILIES = {
    "gpt-oss": "vLLM renders it as the Harmony analysis channel, which GPT-OSS expects until its final answer",
    "kimi-k2": "Kimi K2's chat template renders the prior reasoning of a tool-call chain",
    "minimax-m2": "MiniMax-M2's chat template keeps the reasoning of the turns of a tool-call chain",
}
"""Model families whose tool-call chains need the assistant's earlier reasoning sent back, and why.

The client cannot see the served model's architecture, so the caller names the family (``model_family=``)."""


def sends_reasoning(send_reasoning: bool | None, model_family: str | None) -> bool:
    """Whether assistant tool-call messages carry their ``reasoning`` back to the model.

    ``send_reasoning`` True or False decides; None (the default) sends it when ``model_family`` is one of
    ``REASONING_FAMILIES``, else not. An unknown ``model_family`` is refused.
    """
    if model_family is not None and model_family not in REASONING_FAMILIES:
        raise ValueError(
            f"model_family={model_family!r} is not a family the connector knows; allowed: "
            f"{', '.join(REASONING_FAMILIES)} (those whose tool-call chains need their reasoning sent back). "
            "For another model leave model_family unset and give send_reasoning=True to send it anyway"
        )
    if send_reasoning is not None:
        return send_reasoning
    return model_family is not None


def refuse_unknown(owner: type, data: Any, known: Iterable[str], own: Iterable[str]) -> None:
    """Raise for any key of ``data`` that is not one of ``known`` (the model's fields and aliases).

    ``own`` (the connector's own fields, not its framework's) is what the message lists as allowed.
    """
    if not isinstance(data, Mapping):
        return
    names = set(known)
    unknown = [key for key in data if key not in names]
    if not unknown:
        return
    problems = []
    for key in unknown:
        if key in GENERATION_KEYS:
            problems.append(f"{key!r} (a request field: give it as model_kwargs={{{key!r}: ...}})")
            continue
        hint = HINTS.get(str(key)) or next(iter(difflib.get_close_matches(str(key), names, n=1, cutoff=0.75)), None)
        problems.append(f"{key!r}" + (f" (did you mean {hint!r}?)" if hint else ""))
    raise ValueError(
        f"{owner.__name__} takes no argument {', '.join(problems)}. Its own arguments: "
        f"{', '.join(sorted(own))}, plus its framework's ({owner.__mro__[1].__name__}); generation fields the "
        "model reads go in model_kwargs={...}, InvokeEndpoint parameters in endpoint_kwargs={...}"
    )


def check_model_kwargs(
    model_kwargs: Mapping[str, Any], fields: Mapping[str, Any], extra_body: Mapping[str, Any]
) -> None:
    """``model_kwargs`` sets no field the connector writes, and none also set by a named field or ``extra_body``."""
    for key in model_kwargs:
        if key in BODY_KEYS_OF_THE_CONNECTOR:
            raise ValueError(
                f"model_kwargs[{key!r}] cannot be set: {BODY_KEYS_OF_THE_CONNECTOR[key]}; remove it from model_kwargs"
            )
        if fields.get(key) is not None:
            raise ValueError(
                f"{key} is given twice: {key}={fields[key]!r} and model_kwargs[{key!r}]={model_kwargs[key]!r}; "
                "keep one of them"
            )
        if key in extra_body:
            raise ValueError(
                f"{key} is given twice: extra_body[{key!r}]={extra_body[key]!r} and "
                f"model_kwargs[{key!r}]={model_kwargs[key]!r}; keep one of them"
            )


def split_model_kwargs(model_kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``model_kwargs`` as (generation fields the connector knows, any other body field)."""
    known = {k: v for k, v in model_kwargs.items() if k in GENERATION_KEYS}
    other = {k: v for k, v in model_kwargs.items() if k not in GENERATION_KEYS}
    return known, other


def build_transport(model: Any) -> Any:
    """The model's transport: the one it was given, or an ``EndpointTransport`` built from its client options.

    ``model`` has ``transport`` and the ``CLIENT_OPTIONS`` as attributes. A given transport takes none of the
    options (it has its own client: a ``SessionClient`` for the front door); a built one needs ``endpoint_name``
    and ``inference_component_name``.
    """
    given = [name for name in CLIENT_OPTIONS if getattr(model, name) is not None]
    owner = type(model).__name__
    if model.transport is not None:
        if given and not _built_from(model.transport, model):
            raise ValueError(
                f"{owner}: {', '.join(given)} describe the SageMaker runtime client the connector builds for "
                f"endpoint_name and inference_component_name, but it was given a transport "
                f"({type(model.transport).__name__}), which has its own. Give either transport=... or "
                f"{owner}.for_component(...) / endpoint_name=... with these; through the front door, set the "
                "region and credentials on the SessionClient"
            )
        return model.transport
    if not model.endpoint_name or not model.inference_component_name:
        raise ValueError(
            f"{owner} needs where to send requests: endpoint_name and inference_component_name (the stack prints "
            f"both, *EndpointName and *ComponentName; got endpoint_name={model.endpoint_name!r}, "
            f"inference_component_name={model.inference_component_name!r}), or transport=... "
            f"({owner}.for_component / {owner}.for_front_door)"
        )
    client = model.client
    if client is not None:
        if model.credentials_profile_name is not None:
            raise ValueError(
                f"credentials_profile_name={model.credentials_profile_name!r} with client=...: the client has its "
                "own credentials; give one of them"
            )
        region = getattr(getattr(client, "meta", None), "region_name", None)
        if model.region_name is not None and region is not None and region != model.region_name:
            raise ValueError(
                f"region_name={model.region_name!r} but the client given is in {region!r}; give one of them "
                "(the client's region is the one used)"
            )
    return EndpointTransport(
        model.endpoint_name,
        model.inference_component_name,
        runtime_client=client,
        region=model.region_name,
        credentials_profile_name=model.credentials_profile_name,
        endpoint_kwargs=model.endpoint_kwargs,
    )


def _built_from(transport: Any, model: Any) -> bool:
    """Whether ``transport`` is the one these options built (a model validated again from its own dump)."""
    return (
        isinstance(transport, EndpointTransport)
        and transport.endpoint_name == model.endpoint_name
        and transport.component == model.inference_component_name
        and transport.endpoint_kwargs == (model.endpoint_kwargs or {})
    )


def component_arguments(
    endpoint_name: str,
    component: str,
    runtime_client: Any,
    region: str | None,
    kwargs: dict[str, Any],
) -> dict[str, Any]:
    """``for_component``'s arguments as the model's fields (``runtime_client``/``region`` are langchain-aws'
    ``client``/``region_name``; giving both spellings with different values is refused)."""
    arguments = dict(kwargs)
    for old, new, value in (("runtime_client", "client", runtime_client), ("region", "region_name", region)):
        if value is None:
            continue
        if arguments.get(new) is not None and arguments[new] is not value and arguments[new] != value:
            raise ValueError(f"{old}={value!r} and {new}={arguments[new]!r} name one thing: give one of them")
        arguments[new] = value
    for name, value in (("endpoint_name", endpoint_name), ("inference_component_name", component)):
        if name in arguments:
            raise ValueError(f"for_component takes {name} as its argument; do not give it again as a keyword")
        arguments[name] = value
    return arguments
