"""Reasoning, usage and structured output in both connectors, on the requests SageMaker would receive.

vLLM 0.26 answers the model's thinking as ``reasoning`` (message and stream delta), older vLLM as
``reasoning_content``: both are read, ``reasoning`` first. Families whose tool-call chains need their reasoning
back (GPT-OSS's Harmony analysis channel, Kimi K2, MiniMax-M2) get it on assistant tool-call messages. Streams ask
for usage (``stream_options``) on the component and on a front-door session, never on a buffered turn (vLLM
refuses ``stream_options`` without ``stream: true``). ``with_structured_output(method="json_schema")`` sends
``response_format``.
"""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langgraph")
pytest.importorskip("llama_index.core")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, ThinkingBlock, ToolCallBlock  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from sagemaker_llm_cdk.agents import SageMakerChatModel, SageMakerLlmCdkLLM  # noqa: E402
from sagemaker_llm_cdk.agents import langchain as lc  # noqa: E402
from sagemaker_llm_cdk.agents import llamaindex as li  # noqa: E402
from sagemaker_llm_cdk.agents.openai_format import reasoning_of  # noqa: E402
from sagemaker_llm_cdk.agents.options import REASONING_FAMILIES, sends_reasoning  # noqa: E402
from support.agents import COMPONENT, ENDPOINT, FrontDoor, Runtime, call, completion  # noqa: E402

USAGE = {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}


@tool
def get_weather(city: str) -> str:
    """The current temperature in a city, in degrees Celsius."""
    return json.dumps({"city": city, "celsius": 18})


def chunk(delta: dict, finish: str | None = None) -> dict:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def usage_chunk() -> dict:
    return {"id": "c", "object": "chat.completion.chunk", "choices": [], "usage": USAGE}


def tool_call_turn(reasoning: str = "Look it up.") -> dict:
    return completion(
        None, tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")], reasoning=reasoning, finish_reason="tool_calls"
    )


def assistant_sent(body: dict) -> dict:
    return next(m for m in body["messages"] if m["role"] == "assistant")


# ---------------------------------------------------------------------- reading reasoning, as vLLM names it


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"reasoning": "new"}, "new"),  # vLLM 0.26
        ({"reasoning_content": "old"}, "old"),  # older vLLM
        ({"reasoning": "new", "reasoning_content": "old"}, "new"),  # vLLM that sent both: the current name wins
        ({"content": "no thinking"}, None),
    ],
)
def test_reasoning_is_read_under_either_name_preferring_reasoning(message, expected):
    assert reasoning_of(message) == expected


def test_langchain_reads_reasoning_from_a_vllm_0_26_reply_and_stream():
    runtime = Runtime()
    runtime.answer(completion("Sunny.", reasoning="Check the sky."))
    runtime.stream(chunk({"role": "assistant", "reasoning": "Need "}), chunk({"reasoning": "it."}), chunk({}, "stop"))
    model = SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=runtime)
    assert model.invoke("Sky?").additional_kwargs["reasoning_content"] == "Check the sky."
    total = None
    for piece in model.stream("Sky?"):
        total = piece if total is None else total + piece
    assert total is not None and total.additional_kwargs["reasoning_content"] == "Need it."
    runtime.verify()


def test_llamaindex_reads_reasoning_from_a_vllm_0_26_reply():
    runtime = Runtime()
    runtime.answer(completion("Sunny.", reasoning="Check the sky."))
    llm = SageMakerLlmCdkLLM.for_component(ENDPOINT, COMPONENT, runtime_client=runtime)
    message = llm.chat([ChatMessage(role="user", content="Sky?")]).message
    assert message.content == "Sunny." and message.additional_kwargs["reasoning_content"] == "Check the sky."
    assert isinstance(message.blocks[0], ThinkingBlock) and message.blocks[0].content == "Check the sky."
    runtime.verify()


# ---------------------------------------------------------------------- reasoning sent back on tool-call messages


@pytest.mark.parametrize(
    ("send_reasoning", "model_family", "sent"),
    [
        (None, None, False),  # the default: off, the client cannot see the model's architecture
        (None, "gpt-oss", True),
        (None, "kimi-k2", True),
        (None, "minimax-m2", True),
        (False, "gpt-oss", False),  # an explicit False wins over the family
        (True, None, True),  # an explicit True for a family not listed
    ],
)
def test_when_reasoning_is_sent_back(send_reasoning, model_family, sent):
    assert sends_reasoning(send_reasoning, model_family) is sent


def test_an_unknown_model_family_is_refused_with_the_families_known():
    with pytest.raises(
        ValueError, match=r"model_family='gptoss' is not a family .* allowed: gpt-oss, kimi-k2, minimax-m2"
    ):
        SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=Runtime().stubbed, model_family="gptoss")
    with pytest.raises(ValueError, match=r"model_family='Qwen3' is not a family .* give send_reasoning=True"):
        SageMakerLlmCdkLLM.for_component(ENDPOINT, COMPONENT, runtime_client=Runtime().stubbed, model_family="Qwen3")
    assert set(REASONING_FAMILIES) == {"gpt-oss", "kimi-k2", "minimax-m2"}


def langchain_tool_round(runtime: Runtime, **options) -> list[dict]:
    """A tool-call turn, the tool's result, and the answer; the bodies SageMaker received."""
    runtime.answer(tool_call_turn())
    runtime.answer(completion("18 C in Oslo."))
    model = SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=runtime, **options)
    bound = model.bind_tools([get_weather])
    history: list = [HumanMessage("Oslo?")]
    reply = bound.invoke(history)
    history += [reply, ToolMessage(get_weather.invoke(reply.tool_calls[0]["args"]), tool_call_id="c1")]
    bound.invoke(history)
    runtime.verify()
    return runtime.bodies


def test_gpt_oss_tool_chains_keep_their_reasoning_in_langchain():
    bodies = langchain_tool_round(Runtime(), model_family="gpt-oss")
    assert assistant_sent(bodies[1]) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
        ],
        "reasoning": "Look it up.",
    }


def test_without_a_family_langchain_sends_no_reasoning_back():
    bodies = langchain_tool_round(Runtime())
    assert "reasoning" not in assistant_sent(bodies[1]) and "reasoning_content" not in assistant_sent(bodies[1])


def test_langchain_sends_reasoning_only_on_tool_call_messages_and_reads_reasoning_blocks():
    messages = [
        HumanMessage("Hi"),
        AIMessage("Hello.", additional_kwargs={"reasoning_content": "Greet back."}),  # no tool call: never sent
        AIMessage(
            [{"type": "reasoning", "reasoning": "Need the "}, {"type": "reasoning", "reasoning": "weather."}],
            tool_calls=[{"name": "get_weather", "args": {"city": "Rome"}, "id": "c2"}],
        ),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Bern"}, "id": "c3"}]),  # none to send
    ]
    sent = lc.to_openai_messages(messages, send_reasoning=True)
    assert sent[1] == {"role": "assistant", "content": "Hello."}
    assert sent[2]["reasoning"] == "Need the weather." and sent[2]["content"] is None
    assert "reasoning" not in sent[3]
    assert all("reasoning" not in m for m in lc.to_openai_messages(messages))


def test_kimi_tool_chains_keep_their_reasoning_in_a_llamaindex_function_agent():
    runtime = Runtime()
    front_door = FrontDoor(runtime)
    runtime.open_session("sess-1")
    runtime.stream(chunk({"role": "assistant", "reasoning": "Look it up."}), *tool_call_chunks(), usage_chunk())
    runtime.stream(chunk({"content": "18 C in Oslo."}, "stop"), usage_chunk())
    llm = SageMakerLlmCdkLLM.for_front_door(front_door, conversation="k", model_family="kimi-k2")
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(get_weather.func)], llm=llm)

    async def run() -> str:
        return str(await agent.run(user_msg="Oslo?"))

    assert asyncio.run(run()) == "18 C in Oslo."
    assert assistant_sent(runtime.bodies[-1])["reasoning"] == "Look it up."
    assert [s["SessionId"] for s in runtime.streamed] == ["sess-1", "sess-1"]
    runtime.verify()


def tool_call_chunks() -> list[dict]:
    piece = {"index": 0, "id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city"'}}
    return [
        chunk({"tool_calls": [piece]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ': "Oslo"}'}}]}),
        chunk({}, "tool_calls"),
    ]


def test_llamaindex_sends_a_thinking_block_back_only_when_asked():
    calls = ToolCallBlock(tool_call_id="c1", tool_name="get_weather", tool_kwargs={"city": "Oslo"})
    messages = [
        ChatMessage(role="user", content="Oslo?"),
        ChatMessage(role="assistant", blocks=[ThinkingBlock(content="Look it up."), calls]),
        ChatMessage(role="assistant", content="Done.", additional_kwargs={"reasoning": "Answer now."}),
    ]
    sent = li.to_openai_messages(messages, send_reasoning=True)
    assert sent[1]["reasoning"] == "Look it up." and sent[1]["tool_calls"][0]["id"] == "c1"
    assert sent[2] == {"role": "assistant", "content": "Done."}  # no tool call: never sent
    assert "reasoning" not in li.to_openai_messages(messages)[1]


# ---------------------------------------------------------------------- usage in streams


def test_a_front_door_stream_asks_for_usage_and_ends_with_it_in_langchain():
    runtime = Runtime()
    runtime.open_session("sess-1")
    runtime.stream(chunk({"content": "Ciao"}), chunk({"content": "!"}, "stop"), usage_chunk())
    model = SageMakerChatModel.for_front_door(FrontDoor(runtime), conversation="c1")
    chunks = list(model.stream("Hi"))
    assert chunks[-1].usage_metadata == {"input_tokens": 30, "output_tokens": 9, "total_tokens": 39}
    assert all(c.usage_metadata is None for c in chunks[:-1])
    assert runtime.bodies[-1]["stream"] is True and runtime.bodies[-1]["stream_options"] == {"include_usage": True}
    assert runtime.streamed[0]["SessionId"] == "sess-1"
    runtime.verify()


def test_a_front_door_stream_surfaces_usage_on_the_last_llamaindex_response():
    runtime = Runtime()
    runtime.open_session("sess-1")
    runtime.stream(chunk({"content": "Ciao"}, "stop"), usage_chunk())
    llm = SageMakerLlmCdkLLM.for_front_door(FrontDoor(runtime), conversation="c1")
    responses = list(llm.stream_chat([ChatMessage(role="user", content="Hi")]))
    assert responses[-1].additional_kwargs["usage"] == USAGE and responses[-1].raw["usage"] == USAGE
    assert responses[-1].message.content == "Ciao"
    assert runtime.bodies[-1]["stream_options"] == {"include_usage": True}
    runtime.verify()


def test_a_component_stream_surfaces_usage_on_the_last_llamaindex_response():
    runtime = Runtime()
    runtime.stream(chunk({"content": "Ciao"}, "stop"), usage_chunk())
    llm = SageMakerLlmCdkLLM.for_component(ENDPOINT, COMPONENT, runtime_client=runtime, streaming=True)
    response = llm.chat([ChatMessage(role="user", content="Hi")])
    assert response.additional_kwargs["usage"] == USAGE
    assert runtime.bodies[0]["stream_options"] == {"include_usage": True}
    runtime.verify()


def test_a_lost_session_is_answered_buffered_without_stream_options_and_with_usage():
    runtime = Runtime()
    front_door = FrontDoor(runtime)
    runtime.open_session("sess-1")
    runtime.lose_session("sess-1")
    runtime.answer(completion("Back."), session="sess-1")  # the front door's buffered turn
    model = SageMakerChatModel.for_front_door(front_door, conversation="c1")
    chunks = list(model.stream("Hi"))
    assert "".join(c.content for c in chunks) == "Back."
    assert chunks[-1].usage_metadata == {"input_tokens": 12, "output_tokens": 5, "total_tokens": 17}
    streamed, buffered = runtime.bodies[-2], runtime.bodies[-1]
    assert streamed["stream_options"] == {"include_usage": True}
    assert "stream" not in buffered and "stream_options" not in buffered
    assert front_door.paths == ["/open", "/invoke"]
    assert model.transport.conversation("c1").reopened is True
    runtime.verify()


# ---------------------------------------------------------------------- structured output


class Forecast(BaseModel):
    city: str
    celsius: float


def structured(runtime: Runtime) -> SageMakerChatModel:
    return SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=runtime)


def test_json_schema_structured_output_sends_response_format_and_parses_the_text():
    runtime = Runtime()
    runtime.answer(completion('{"city": "Lyon", "celsius": 21.5}', reasoning="Look it up."))
    result = structured(runtime).with_structured_output(Forecast, method="json_schema", strict=True).invoke("Lyon?")
    assert result == Forecast(city="Lyon", celsius=21.5)
    body = runtime.bodies[0]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "Forecast",
            "schema": Forecast.model_json_schema(),
            "strict": True,
        },
    }
    assert "tools" not in body and "tool_choice" not in body
    runtime.verify()


def test_json_schema_structured_output_with_a_dict_schema_and_the_raw_reply():
    runtime = Runtime()
    runtime.answer(completion('{"city": "Lyon"}'))
    runtime.answer(completion("not JSON"))
    schema = {"title": "Place", "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    model = structured(runtime).with_structured_output(schema, method="json_schema", include_raw=True)
    first = model.invoke("Lyon?")
    assert first["parsed"] == {"city": "Lyon"} and first["parsing_error"] is None
    assert isinstance(first["raw"], AIMessage)
    assert runtime.bodies[0]["response_format"]["json_schema"] == {"name": "Place", "schema": schema}
    second = model.invoke("Lyon?")
    assert second["parsed"] is None and second["parsing_error"] is not None
    runtime.verify()


def test_function_calling_structured_output_stays_a_required_tool_call():
    runtime = Runtime()
    runtime.answer(completion(None, tool_calls=[call("Forecast", {"city": "Lyon", "celsius": 21.5}, "c")]))
    result = structured(runtime).with_structured_output(Forecast, method="function_calling").invoke("Lyon?")
    assert result == Forecast(city="Lyon", celsius=21.5)
    assert runtime.bodies[0]["tool_choice"] == "required" and "response_format" not in runtime.bodies[0]
    runtime.verify()


def test_other_structured_output_methods_and_arguments_are_refused():
    model = structured(Runtime())
    with pytest.raises(ValueError, match=r"method='json_mode'\) is not supported; allowed: 'function_calling'"):
        model.with_structured_output(Forecast, method="json_mode")
    with pytest.raises(ValueError, match=r"with_structured_output got unsupported arguments: tools"):
        model.with_structured_output(Forecast, method="json_schema", tools=[])
