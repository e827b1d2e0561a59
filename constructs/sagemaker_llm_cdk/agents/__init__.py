"""Agent framework connectors for models served by this library: LangChain and LlamaIndex.

``SageMakerChatModel`` (LangChain ``BaseChatModel``, ``pip install 'sagemaker-llm-cdk[langchain]'``) and
``SageMakerLlmCdkLLM`` (LlamaIndex ``FunctionCallingLLM``, ``[llamaindex]``; ``SageMakerLLM`` is its former name,
kept) call a model's inference component
straight (``EndpointTransport``) or through the session front door (``FrontDoorTransport``), with tools,
structured output, reasoning content, streaming and async. The frameworks are imported only when their
connector is first used: importing this package (or the transports) needs botocore alone, like
``sagemaker_llm_cdk.client``. Which routing suits which agent: docs/agents.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .langchain import SageMakerChatModel
    from .llamaindex import SageMakerLLM, SageMakerLlmCdkLLM
    from .transport import ChatTransport, EndpointTransport, FrontDoorTransport, ModelCallError

_EXPORTS = {
    "SageMakerChatModel": ("langchain", "langchain"),
    "SageMakerLLM": ("llamaindex", "llamaindex"),
    "SageMakerLlmCdkLLM": ("llamaindex", "llamaindex"),
    "ChatTransport": ("transport", None),
    "EndpointTransport": ("transport", None),
    "FrontDoorTransport": ("transport", None),
    "ModelCallError": ("transport", None),
}

__all__ = [
    "ChatTransport",
    "EndpointTransport",
    "FrontDoorTransport",
    "ModelCallError",
    "SageMakerChatModel",
    "SageMakerLLM",
    "SageMakerLlmCdkLLM",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, extra = _EXPORTS[name]
    try:
        loaded = importlib.import_module(f"{__name__}.{module}")
    except ModuleNotFoundError as exc:
        if extra is None or (exc.name or "").startswith("sagemaker_llm_cdk"):
            raise
        raise ModuleNotFoundError(
            f"{name} needs the {extra} extra: pip install 'sagemaker-llm-cdk[{extra}]' ({exc.name} is missing)",
            name=exc.name,
        ) from exc
    value = getattr(loaded, name)
    globals()[name] = value
    return value
