"""A LangChain chat model over a SageMaker inference component or the session front door.

``pip install 'sagemaker-llm-cdk[langchain]'`` (langchain-core; LangGraph for agents). The model speaks LMI's
OpenAI-compatible messages API, so tools, tool calls, reasoning and streaming work as they do with OpenAI's
chat models, served by your own endpoint::

    from sagemaker_llm_cdk.agents import SageMakerChatModel

    model = SageMakerChatModel.for_component("SageMakerLlm-chat", "SageMakerLlm-qwen3-32b", region="us-east-1")
    # or, keeping each LangGraph thread on one instance through the front door:
    model = SageMakerChatModel.for_front_door(SessionClient(url, region="us-east-1"))
    agent = create_react_agent(model, [search, fetch])
    agent.invoke({"messages": [("user", "...")]}, {"configurable": {"thread_id": "chat-42"}})

Conversations. Through the front door, the conversation of a call is, first, ``conversation=`` bound on the model
(``model.bind(conversation="chat-42")`` or the ``conversation`` field), else the LangGraph thread id of the run
(``configurable.thread_id``), else none: the call is stateless. Each conversation is one front-door conversation,
so its turns carry one SageMaker session id and reach one instance; ``model.transport.close(key)`` ends it.

Streaming uses ``InvokeEndpointWithResponseStream`` (on a conversation's open session through the front door;
a stateless front-door call is answered buffered, as one chunk, because a stream cannot create a session).
Async methods run the blocking botocore call in a worker thread (botocore has no asyncio client).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import invalid_tool_call, tool_call, tool_call_chunk
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig, RunnableMap, RunnablePassthrough
from langchain_core.runnables.config import ensure_config, run_in_executor
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, model_validator

from . import fields, options
from . import openai_format as oa
from .transport import DEFAULT_MAX_CONVERSATIONS, ChatTransport, FrontDoorTransport

__all__ = ["SageMakerChatModel", "to_openai_messages"]


class SageMakerChatModel(BaseChatModel):
    """LangChain chat model on a SageMaker endpoint's inference component (LMI's OpenAI-compatible messages API).

    Build it with ``for_component`` (straight to the component, stateless), ``for_front_door`` (one SageMaker
    session per conversation), or as langchain-aws' ``ChatSagemakerEndpoint`` is built (``endpoint_name=``,
    ``inference_component_name=``, ``region_name=``, ``client=``, ``credentials_profile_name=``); any
    ``ChatTransport`` works. Generation fields (``temperature``, ``max_tokens``, ...) and ``model_kwargs`` go into
    every request; ``extra_body`` adds any other field LMI/vLLM reads (e.g.
    ``{"chat_template_kwargs": {"enable_thinking": False}}``). An argument it does not know is an error.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    transport: Any = Field(
        default=None,
        description=(
            "Where requests go: an EndpointTransport, FrontDoorTransport or any ChatTransport. Default: an "
            "EndpointTransport built from endpoint_name, inference_component_name and the client options."
        ),
    )
    conversation: str | None = Field(
        default=None,
        description=("The conversation every call belongs to. Default: the LangGraph thread id of the run, else none."),
    )
    model_name: str = Field(default="sagemaker-lmi", description="Reported as ls_model_name in traces.")
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    seed: int | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)
    model_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="Fields merged into every request body (temperature, max_tokens, top_k...), as langchain-aws'.",
    )
    streaming: bool = Field(
        default=False, description="Answer invoke() from InvokeEndpointWithResponseStream (the chunks joined)."
    )
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
        options.refuse_unknown(cls, data, known, set(cls.model_fields) - set(BaseChatModel.model_fields))
        return data

    @model_validator(mode="after")
    def _build_transport(self) -> SageMakerChatModel:
        named = {k: getattr(self, k) for k in ("temperature", "top_p", "max_tokens", "stop", "seed")}
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
    ) -> SageMakerChatModel:
        """Straight to ``component`` on ``endpoint_name`` (``sagemaker:InvokeEndpoint``); stateless.

        ``runtime_client``/``region`` may also be spelt ``client``/``region_name``; ``credentials_profile_name``
        and ``endpoint_kwargs`` configure the client and its calls; any other keyword is a field of the model.
        """
        return cls(**options.component_arguments(endpoint_name, component, runtime_client, region, kwargs))

    @classmethod
    def for_front_door(cls, client: Any, *, component: str | None = None, **kwargs: Any) -> SageMakerChatModel:
        """Through the session front door (``client.SessionClient``): each conversation stays on one instance.

        ``max_conversations`` (default 1,024) bounds the conversations its ``FrontDoorTransport`` remembers.
        """
        limit = kwargs.pop("max_conversations", DEFAULT_MAX_CONVERSATIONS)
        return cls(transport=FrontDoorTransport(client, component=component, max_conversations=limit), **kwargs)

    @property
    def _llm_type(self) -> str:
        return "sagemaker-lmi-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        transport = self.transport
        return {
            "model_name": self.model_name,
            "transport": type(transport).__name__,
            "component": getattr(transport, "component", None),
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "sagemaker"
        params["ls_model_name"] = self.model_name
        return params

    # ------------------------------------------------------------------ tools

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | bool | dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools (OpenAI function schemas, Pydantic classes, functions or LangChain tools).

        ``tool_choice``: ``auto``, ``none``, ``any``/``required`` (some tool must be called) or a tool's name.
        ``auto`` needs the model served with a tool-call parser (``tools:`` in its settings); ``required`` and a
        named tool use vLLM's guided decoding.
        """
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        names = [tool["function"]["name"] for tool in formatted if "function" in tool]
        choice = oa.openai_tool_choice(tool_choice, names)
        if choice is not None:
            kwargs["tool_choice"] = choice
        return super().bind(tools=formatted, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        method: str = "function_calling",
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """The model's answer as ``schema`` (a Pydantic class, a TypedDict or a JSON schema).

        ``method="function_calling"`` (default): ``schema`` is a tool the model must call (``tool_choice:
        required``). ``method="json_schema"``: ``schema`` goes as ``response_format: {"type": "json_schema",
        "json_schema": {"name", "schema"[, "strict"]}}`` (vLLM's guided decoding) and the answer's text is parsed
        (into the Pydantic class, else a dict). Any other method is refused.
        """
        if method == "function_calling":
            return super().with_structured_output(schema, include_raw=include_raw, strict=strict, **kwargs)
        if method != "json_schema":
            raise ValueError(
                f"with_structured_output(method={method!r}) is not supported; allowed: 'function_calling' (a required "
                "tool call, the default) or 'json_schema' (response_format with the schema)"
            )
        if kwargs:
            raise ValueError(f"with_structured_output got unsupported arguments: {', '.join(sorted(kwargs))}")
        parser: Runnable[Any, Any]
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            json_schema, parser = schema.model_json_schema(), PydanticOutputParser(pydantic_object=schema)
        else:
            json_schema, parser = convert_to_json_schema(schema), JsonOutputParser()
        described: dict[str, Any] = {"name": str(json_schema.get("title") or "output"), "schema": json_schema}
        if strict is not None:
            described["strict"] = strict
        llm = self.bind(
            response_format={"type": "json_schema", "json_schema": described},
            ls_structured_output_format={"kwargs": {"method": "json_schema", "strict": strict}, "schema": json_schema},
        )
        if not include_raw:
            return llm | parser
        parsed = RunnablePassthrough.assign(parsed=itemgetter("raw") | parser, parsing_error=lambda _: None)
        unparsed = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=llm) | parsed.with_fallbacks([unparsed], exception_key="parsing_error")

    # ------------------------------------------------------------------ calls
    # The run's config reaches _generate/_stream only through these entry points: its thread id is passed on as
    # ``conversation`` (a bound or explicit ``conversation`` wins).

    def invoke(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AIMessage:
        return super().invoke(input, config, stop=stop, **_with_thread(config, kwargs))

    async def ainvoke(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AIMessage:
        return await super().ainvoke(input, config, stop=stop, **_with_thread(config, kwargs))

    def stream(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> Iterator[AIMessageChunk]:
        return super().stream(input, config, stop=stop, **_with_thread(config, kwargs))

    async def astream(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[AIMessageChunk]:
        async for chunk in super().astream(input, config, stop=stop, **_with_thread(config, kwargs)):
            yield chunk

    def _body(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        known, other = options.split_model_kwargs(self.model_kwargs)
        named: dict[str, Any] = {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}
        named.update({"stop": stop or self.stop, "seed": self.seed})
        parameters = {**known, **{k: v for k, v in named.items() if v is not None}}
        parameters.update({k: v for k, v in kwargs.items() if k in oa.GENERATION_KEYS})
        send_reasoning = options.sends_reasoning(self.send_reasoning, self.model_family)
        sent = to_openai_messages(messages, send_reasoning=send_reasoning)
        return oa.request_body(sent, parameters, {**other, **self.extra_body, **kwargs.get("extra_body", {})})

    def _conversation(self, kwargs: dict[str, Any], run_manager: Any = None) -> str | None:
        """``conversation`` bound, passed or set on the model, else the run's thread id (from the config given to
        ``invoke``/``stream``, or the config current in a LangGraph node)."""
        chosen = kwargs.get("conversation") or self.conversation
        if chosen:
            return str(chosen)
        thread = ensure_config().get("configurable", {}).get("thread_id")
        return str(thread) if thread is not None else None

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        transport: ChatTransport = self.transport
        completion = transport.complete(
            self._body(messages, stop, kwargs), conversation=self._conversation(kwargs, run_manager)
        )
        reply = oa.read_completion(completion)
        message = _ai_message(reply)
        info = {"finish_reason": reply.finish_reason}
        return ChatResult(
            generations=[ChatGeneration(message=message, generation_info=info)],
            llm_output={"model_name": reply.model or self.model_name, "id": reply.id},
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        transport: ChatTransport = self.transport
        body = self._body(messages, stop, kwargs)
        for raw in transport.stream(body, conversation=self._conversation(kwargs, run_manager)):
            delta = oa.read_chunk(raw)
            chunk = ChatGenerationChunk(
                message=_ai_chunk(delta, last=delta.usage is not None and not (raw.get("choices") or [])),
                generation_info={"finish_reason": delta.finish_reason} if delta.finish_reason else None,
            )
            if run_manager is not None and delta.content:
                run_manager.on_llm_new_token(delta.content, chunk=chunk)
            yield chunk

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        kwargs.setdefault("conversation", self._conversation(kwargs, run_manager))
        return await run_in_executor(None, self._generate, messages, stop, None, **kwargs)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        kwargs.setdefault("conversation", self._conversation(kwargs, run_manager))
        iterator = await run_in_executor(None, lambda: iter(self._stream(messages, stop, None, **kwargs)))
        done = ChatGenerationChunk(message=AIMessageChunk(content=""))  # the end marker, never yielded
        while True:
            chunk: ChatGenerationChunk = await run_in_executor(None, next, iterator, done)
            if chunk is done:
                return
            if run_manager is not None and chunk.text:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


def _with_thread(config: RunnableConfig | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    thread = (config or {}).get("configurable", {}).get("thread_id")
    if thread is not None and not kwargs.get("conversation"):
        return {**kwargs, "conversation": str(thread)}
    return kwargs


# ---------------------------------------------------------------------- messages


def _text(content: Any) -> Any:
    """Text content stays text; a list of blocks keeps its text and image parts in OpenAI's shape."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append({"type": "text", "text": block})
        elif isinstance(block, dict) and block.get("type") in ("text", "image_url"):
            parts.append({k: v for k, v in block.items() if k in ("type", "text", "image_url")})
    if all(part["type"] == "text" for part in parts):
        return "".join(part["text"] for part in parts)
    return parts


def to_openai_messages(messages: Sequence[BaseMessage], *, send_reasoning: bool = False) -> list[dict[str, Any]]:
    """LangChain messages as chat-completions messages: assistant ``tool_calls`` and ``tool`` results included.

    ``send_reasoning``: an assistant message with tool calls also carries its reasoning
    (``additional_kwargs["reasoning"]`` or ``["reasoning_content"]``, or its ``reasoning`` content blocks) as
    ``reasoning``, the field vLLM reads back (GPT-OSS's Harmony analysis channel, the chat template's
    ``reasoning_content``).
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            out.append({"role": "system", "content": _text(message.content)})
        elif isinstance(message, HumanMessage):
            out.append({"role": "user", "content": _text(message.content)})
        elif isinstance(message, AIMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": _text(message.content) or None}
            calls: list[dict[str, Any]] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["args"], ensure_ascii=False)},
                }
                for call in message.tool_calls
            ]
            calls += [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["args"] or ""},
                }
                for call in message.invalid_tool_calls
            ]
            if calls:
                entry["tool_calls"] = calls
                reasoning = _reasoning_of(message) if send_reasoning else None
                if reasoning:
                    entry["reasoning"] = reasoning
            if entry["content"] is None and not calls:
                entry["content"] = ""
            out.append(entry)
        elif isinstance(message, ToolMessage):
            out.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": _tool_content(message.content)}
            )
        elif isinstance(message, ChatMessage):
            out.append({"role": message.role, "content": _text(message.content)})
        else:
            raise ValueError(f"cannot send a {type(message).__name__} to the model")
    return out


def _reasoning_of(message: AIMessage) -> str | None:
    """The reasoning an assistant message carries: in ``additional_kwargs`` (what this connector writes), else
    its ``reasoning`` content blocks (LangChain's standard blocks)."""
    found = oa.reasoning_of(message.additional_kwargs)
    if found:
        return found
    if isinstance(message.content, list):
        parts = [
            block["reasoning"]
            for block in message.content
            if isinstance(block, dict) and block.get("type") == "reasoning" and isinstance(block.get("reasoning"), str)
        ]
        return "".join(parts) or None
    return None


def _tool_content(content: Any) -> str:
    text = _text(content)
    return text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)


def _usage(reply_usage: dict[str, int] | None) -> UsageMetadata | None:
    if not reply_usage:
        return None
    prompt, completion = reply_usage.get("prompt_tokens", 0), reply_usage.get("completion_tokens", 0)
    return UsageMetadata(
        input_tokens=prompt, output_tokens=completion, total_tokens=reply_usage.get("total_tokens", prompt + completion)
    )


def _ai_message(reply: oa.Reply) -> AIMessage:
    calls = [tool_call(name=c.name, args=c.arguments, id=c.id) for c in reply.tool_calls if c.error is None]
    invalid = [
        invalid_tool_call(name=c.name, args=c.raw_arguments, id=c.id, error=c.error)
        for c in reply.tool_calls
        if c.error is not None
    ]
    extra = {"reasoning_content": reply.reasoning} if reply.reasoning is not None else {}
    return AIMessage(
        content=reply.content,
        tool_calls=calls,
        invalid_tool_calls=invalid,
        additional_kwargs=extra,
        usage_metadata=_usage(reply.usage),
        response_metadata={"finish_reason": reply.finish_reason, "model_name": reply.model},
        id=reply.id,
    )


def _ai_chunk(delta: oa.StreamDelta, *, last: bool = False) -> AIMessageChunk:
    """One stream chunk; ``last`` for vLLM's closing usage chunk (no choices), which then is the run's last chunk
    (LangChain adds no empty one after it), so ``usage_metadata`` is on the last ``AIMessageChunk``."""
    chunks = [
        tool_call_chunk(name=p["name"], args=p["arguments"], id=p["id"], index=p["index"]) for p in delta.tool_calls
    ]
    extra = {"reasoning_content": delta.reasoning} if delta.reasoning else {}
    metadata = {"finish_reason": delta.finish_reason} if delta.finish_reason else {}
    return AIMessageChunk(
        content=delta.content,
        tool_call_chunks=chunks,
        additional_kwargs=extra,
        usage_metadata=_usage(delta.usage),
        response_metadata=metadata,
        chunk_position="last" if last else None,
    )
