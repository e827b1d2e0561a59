"""A LlamaIndex LLM (``FunctionCallingLLM``) over a SageMaker inference component or the session front door.

``pip install 'sagemaker-llm-cdk[llamaindex]'`` (llama-index-core). The same requests as the LangChain connector
(LMI's OpenAI-compatible messages API, the same transports), so ``FunctionAgent``, ``predict_and_call`` and
``structured_predict`` run on your own endpoint::

    from sagemaker_llm_cdk.agents import SageMakerLlmCdkLLM

    llm = SageMakerLlmCdkLLM.for_front_door(SessionClient(url, region="us-east-1"), conversation="chat-42")
    agent = FunctionAgent(tools=[search, fetch], llm=llm)

Conversations. LlamaIndex has no thread id, so the LLM carries one: ``conversation`` (or
``llm.with_conversation(key)``, a copy on the same transport) maps to one front-door conversation, whose turns
reach one instance; without one, calls are stateless. Tool calls are kept on the assistant message both as
``ToolCallBlock`` blocks and as OpenAI ``tool_calls`` in ``additional_kwargs``; the model's reasoning (vLLM's
``reasoning``, older vLLM's ``reasoning_content``) as a ``ThinkingBlock`` and
``additional_kwargs["reasoning_content"]``, sent back on tool-call messages with ``send_reasoning`` /
``model_family``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Generator, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import ToolSelection
from pydantic import ConfigDict, Field, model_validator

from . import fields, options
from . import openai_format as oa
from .transport import DEFAULT_MAX_CONVERSATIONS, ChatTransport, FrontDoorTransport, ModelCallError

if TYPE_CHECKING:
    from llama_index.core.tools import BaseTool

__all__ = ["SageMakerLLM", "SageMakerLlmCdkLLM", "to_openai_messages"]


class SageMakerLlmCdkLLM(FunctionCallingLLM):
    """LlamaIndex function-calling LLM on a SageMaker endpoint's inference component (LMI's messages API).

    Not LlamaIndex's own ``SageMakerLLM`` (``llama-index-llms-sagemaker-endpoint``: a text-generation endpoint
    with a content handler): its ``class_name()`` is ``"SageMakerLlmCdkLLM"``, so serialized LLMs do not mix.
    ``SageMakerLLM`` is kept as another name of this class. The client options are langchain-aws' names
    (``endpoint_name``, ``inference_component_name``, ``region_name``, ``client``, ``credentials_profile_name``,
    ``endpoint_kwargs``), as are ``model_kwargs`` and ``streaming``; an argument it does not know is an error.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    transport: Any = Field(
        default=None,
        description=(
            "An EndpointTransport, FrontDoorTransport or any ChatTransport. Default: an EndpointTransport built "
            "from endpoint_name, inference_component_name and the client options."
        ),
    )
    conversation: str | None = Field(
        default=None, description=("The front-door conversation every call belongs to; default none (stateless).")
    )
    model: str = Field(default="sagemaker-lmi", description="The name reported in metadata.")
    context_window: int = Field(default=32768, description="The served model's context, tokens (OPTION_MAX_MODEL_LEN).")
    max_tokens: int | None = None
    temperature: float | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)
    model_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Fields merged into every request body (top_p, top_k, seed...)."
    )
    streaming: bool = Field(default=False, description="Answer chat() from the stream (the chunks joined).")
    endpoint_name: fields.EndpointName = None
    inference_component_name: fields.ComponentName = None
    region_name: fields.RegionName = None
    client: fields.Client = None
    credentials_profile_name: fields.ProfileName = None
    endpoint_kwargs: fields.EndpointKwargs = None
    send_reasoning: fields.SendReasoning = None
    model_family: fields.ModelFamily = None

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_arguments(cls, data: Any) -> Any:
        known = set(cls.model_fields) | {f.alias for f in cls.model_fields.values() if f.alias}
        options.refuse_unknown(cls, data, known, set(cls.model_fields) - set(FunctionCallingLLM.model_fields))
        return data

    @model_validator(mode="after")
    def _build_transport(self) -> SageMakerLlmCdkLLM:
        named = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        options.check_model_kwargs(self.model_kwargs, named, self.extra_body)
        options.sends_reasoning(self.send_reasoning, self.model_family)
        self.transport = options.build_transport(self)
        return self

    @classmethod
    def for_component(
        cls,
        endpoint_name: str,
        component: str,
        *,
        runtime_client: Any = None,
        region: str | None = None,
        **kwargs: Any,
    ) -> SageMakerLlmCdkLLM:
        """Straight to ``component`` on ``endpoint_name`` (``sagemaker:InvokeEndpoint``); stateless.

        ``runtime_client``/``region`` may also be spelt ``client``/``region_name``; ``credentials_profile_name``
        and ``endpoint_kwargs`` configure the client and its calls; any other keyword is a field of the LLM.
        """
        return cls(**options.component_arguments(endpoint_name, component, runtime_client, region, kwargs))

    @classmethod
    def for_front_door(cls, client: Any, *, component: str | None = None, **kwargs: Any) -> SageMakerLlmCdkLLM:
        """Through the session front door (``client.SessionClient``); ``max_conversations`` (default 1,024) bounds
        the conversations its ``FrontDoorTransport`` remembers."""
        limit = kwargs.pop("max_conversations", DEFAULT_MAX_CONVERSATIONS)
        return cls(transport=FrontDoorTransport(client, component=component, max_conversations=limit), **kwargs)

    def with_conversation(self, conversation: str) -> SageMakerLlmCdkLLM:
        """A copy of this LLM whose calls belong to ``conversation`` (same transport, so the same sessions)."""
        return self.model_copy(update={"conversation": conversation})

    @classmethod
    def class_name(cls) -> str:
        return "SageMakerLlmCdkLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.max_tokens or 256,
            is_chat_model=True,
            is_function_calling_model=True,
            model_name=self.model,
        )

    # ------------------------------------------------------------------ requests

    def _body(self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]) -> dict[str, Any]:
        known, other = options.split_model_kwargs(self.model_kwargs)
        named = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        parameters = {**known, **{k: v for k, v in named.items() if v is not None}}
        parameters.update({k: v for k, v in kwargs.items() if k in oa.GENERATION_KEYS})
        send_reasoning = options.sends_reasoning(self.send_reasoning, self.model_family)
        sent = to_openai_messages(messages, send_reasoning=send_reasoning)
        return oa.request_body(sent, parameters, {**other, **self.extra_body, **kwargs.get("extra_body", {})})

    def _conversation(self, kwargs: dict[str, Any]) -> str | None:
        chosen = kwargs.get("conversation") or self.conversation
        return str(chosen) if chosen else None

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        if self.streaming:
            last = None
            for response in self.stream_chat(messages, **kwargs):
                last = response
            if last is None:
                raise ModelCallError("the model's stream ended without a chunk")
            return ChatResponse(message=last.message, raw=last.raw, additional_kwargs=last.additional_kwargs)
        transport: ChatTransport = self.transport
        completion = transport.complete(self._body(messages, kwargs), conversation=self._conversation(kwargs))
        reply = oa.read_completion(completion)
        return ChatResponse(
            message=_assistant(reply),
            raw=completion,
            additional_kwargs={"usage": reply.usage, "finish_reason": reply.finish_reason},
        )

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        transport: ChatTransport = self.transport
        body = self._body(messages, kwargs)
        conversation = self._conversation(kwargs)

        def generate() -> Generator[ChatResponse, None, None]:
            deltas: list[oa.StreamDelta] = []
            for raw in transport.stream(body, conversation=conversation):
                delta = oa.read_chunk(raw)
                deltas.append(delta)
                so_far = oa.merge_stream(deltas)
                yield ChatResponse(
                    message=_assistant(so_far),
                    delta=delta.content,
                    raw=raw,
                    additional_kwargs={"usage": so_far.usage, "finish_reason": so_far.finish_reason},
                )

        return generate()

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        response = self.chat([ChatMessage(role=MessageRole.USER, content=prompt)], **kwargs)
        return CompletionResponse(text=response.message.content or "", raw=response.raw)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        def generate() -> Generator[CompletionResponse, None, None]:
            for response in self.stream_chat([ChatMessage(role=MessageRole.USER, content=prompt)], **kwargs):
                yield CompletionResponse(text=response.message.content or "", delta=response.delta, raw=response.raw)

        return generate()

    # Async: botocore has no asyncio client, so each blocking call runs in a worker thread.
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return await asyncio.to_thread(self.chat, messages, **kwargs)

    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseAsyncGen:
        iterator = await asyncio.to_thread(lambda: iter(self.stream_chat(messages, **kwargs)))

        async def generate() -> AsyncGenerator[ChatResponse, None]:
            while True:
                response = await asyncio.to_thread(next, iterator, None)
                if response is None:
                    return
                yield response

        return generate()

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return await asyncio.to_thread(self.complete, prompt, formatted, **kwargs)

    async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseAsyncGen:
        iterator = await asyncio.to_thread(lambda: iter(self.stream_complete(prompt, formatted, **kwargs)))

        async def generate() -> AsyncGenerator[CompletionResponse, None]:
            while True:
                response = await asyncio.to_thread(next, iterator, None)
                if response is None:
                    return
                yield response

        return generate()

    # ------------------------------------------------------------------ tools

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The chat call's arguments: messages, OpenAI tool schemas, ``tool_choice`` (``required`` when
        ``tool_required``, else ``auto``) and ``parallel_tool_calls``."""
        messages = list(chat_history or [])
        if user_msg is not None:
            messages.append(
                ChatMessage(role=MessageRole.USER, content=user_msg) if isinstance(user_msg, str) else user_msg
            )
        specs = [tool.metadata.to_openai_tool() for tool in tools]
        prepared: dict[str, Any] = {"messages": messages, **kwargs}
        if specs:
            prepared.update(
                {
                    "tools": specs,
                    "tool_choice": kwargs.get("tool_choice") or ("required" if tool_required else "auto"),
                    "parallel_tool_calls": allow_parallel_tool_calls,
                }
            )
        return prepared

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        calls = [block for block in response.message.blocks if isinstance(block, ToolCallBlock)]
        if not calls and error_on_no_tool_call:
            raise ValueError(f"the model called no tool (it answered: {str(response.message.content)[:200]!r})")
        selections = []
        for block in calls:
            arguments = block.tool_kwargs
            if isinstance(arguments, str):
                arguments, _ = oa.parse_arguments(arguments)
            selections.append(
                ToolSelection(tool_id=block.tool_call_id or "", tool_name=block.tool_name, tool_kwargs=arguments)
            )
        return selections


SageMakerLLM = SageMakerLlmCdkLLM
"""The former name of ``SageMakerLlmCdkLLM``, kept so existing imports work (``class_name()`` is the new one)."""


# ---------------------------------------------------------------------- messages


def _assistant(reply: oa.Reply) -> ChatMessage:
    blocks: list[Any] = []
    extra: dict[str, Any] = {}
    if reply.reasoning:
        blocks.append(ThinkingBlock(content=reply.reasoning))
        extra["reasoning_content"] = reply.reasoning
    if reply.content:
        blocks.append(TextBlock(text=reply.content))
    for call in reply.tool_calls:
        blocks.append(
            ToolCallBlock(
                tool_call_id=call.id,
                tool_name=call.name,
                tool_kwargs=call.arguments if call.error is None else call.raw_arguments,
            )
        )
    if reply.tool_calls:
        extra["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
            for c in reply.tool_calls
        ]
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks, additional_kwargs=extra)


def _content(message: ChatMessage) -> str | None:
    texts = [block.text for block in message.blocks if isinstance(block, TextBlock)]
    return "".join(texts) if texts else None


def _reasoning_of(message: ChatMessage) -> str | None:
    """An assistant message's reasoning: ``additional_kwargs["reasoning"]`` / ``["reasoning_content"]`` (what this
    LLM writes), else its ``ThinkingBlock``s."""
    found = oa.reasoning_of(message.additional_kwargs)
    if found:
        return found
    thoughts = [block.content for block in message.blocks if isinstance(block, ThinkingBlock) and block.content]
    return "".join(thoughts) or None


def to_openai_messages(messages: Sequence[ChatMessage], *, send_reasoning: bool = False) -> list[dict[str, Any]]:
    """LlamaIndex chat messages as chat-completions messages (assistant ``tool_calls``, ``tool`` results).

    ``send_reasoning``: an assistant message with tool calls also carries its reasoning as ``reasoning``, the field
    vLLM reads back (GPT-OSS's Harmony analysis channel, the chat template's ``reasoning_content``).
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.role.value if isinstance(message.role, MessageRole) else str(message.role)
        content = _content(message)
        if role == MessageRole.TOOL.value:
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": str(message.additional_kwargs.get("tool_call_id", "")),
                    "content": content or "",
                }
            )
            continue
        if role == MessageRole.ASSISTANT.value:
            calls = message.additional_kwargs.get("tool_calls") or [
                {
                    "id": block.tool_call_id,
                    "type": "function",
                    "function": {
                        "name": block.tool_name,
                        "arguments": block.tool_kwargs
                        if isinstance(block.tool_kwargs, str)
                        else json.dumps(block.tool_kwargs, ensure_ascii=False),
                    },
                }
                for block in message.blocks
                if isinstance(block, ToolCallBlock)
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                entry["tool_calls"] = calls
                reasoning = _reasoning_of(message) if send_reasoning else None
                if reasoning:
                    entry["reasoning"] = reasoning
            elif content is None:
                entry["content"] = ""
            out.append(entry)
            continue
        if role == MessageRole.CHATBOT.value:
            role = "assistant"
        elif role == MessageRole.DEVELOPER.value:
            role = "system"
        out.append({"role": role, "content": content or ""})
    return out
