"""The LangChain connector against real langchain-core and LangGraph, the SageMaker runtime stubbed offline.

A LangGraph ReAct agent runs a two-tool loop end to end on the component and through the session front door
(where every turn of the thread must carry one session id); messages, tools, structured output, streaming
(tool-call chunks and reasoning content) and async are checked on the requests SageMaker would receive.
"""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel
from sagemaker_llm_cdk.agents import SageMakerChatModel
from sagemaker_llm_cdk.agents.transport import FrontDoorTransport, ModelCallError
from support.agents import COMPONENT, ENDPOINT, FrontDoor, Runtime, call, completion


@tool
def get_weather(city: str) -> str:
    """The current temperature in a city, in degrees Celsius."""
    return json.dumps({"city": city, "celsius": 18})


@tool
def to_fahrenheit(celsius: float) -> str:
    """Convert degrees Celsius to Fahrenheit."""
    return str(round(celsius * 9 / 5 + 32, 1))


def create_react_agent(model, tools, *, checkpointer=None):
    """The ReAct loop as a LangGraph graph: the model node, then tools while it calls them."""
    bound = model.bind_tools(tools)

    def agent(state: MessagesState, config) -> dict:
        return {"messages": [bound.invoke(state["messages"], config)]}

    async def aagent(state: MessagesState, config) -> dict:
        return {"messages": [await bound.ainvoke(state["messages"], config)]}

    from langchain_core.runnables import RunnableLambda

    graph = StateGraph(MessagesState)
    graph.add_node("agent", RunnableLambda(agent, afunc=aagent))
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def queue_two_tool_loop(runtime: Runtime, *, session: str | None = None) -> None:
    if session is not None:
        runtime.open_session(session)
    runtime.answer(
        completion(None, tool_calls=[call("get_weather", {"city": "Paris"}, "call-1")], finish_reason="tool_calls"),
        session=session,
    )
    runtime.answer(
        completion(
            None,
            tool_calls=[call("to_fahrenheit", {"celsius": 18}, "call-2")],
            reasoning="18 C, so convert.",
            finish_reason="tool_calls",
        ),
        session=session,
    )
    runtime.answer(completion("It is 64.4 F in Paris."), session=session)


def check_loop_requests(bodies: list[dict]) -> None:
    turns = [b for b in bodies if "messages" in b]
    assert len(turns) == 3
    assert [t["function"]["name"] for t in turns[0]["tools"]] == ["get_weather", "to_fahrenheit"]
    assert turns[0]["messages"] == [{"role": "user", "content": "Weather in Paris, in Fahrenheit?"}]
    second = turns[1]["messages"]
    assert second[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call-1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    }
    assert second[2] == {"role": "tool", "tool_call_id": "call-1", "content": '{"city": "Paris", "celsius": 18}'}
    assert turns[2]["messages"][-1] == {"role": "tool", "tool_call_id": "call-2", "content": "64.4"}


def test_langgraph_agent_runs_a_two_tool_loop_on_the_component():
    runtime = Runtime()
    queue_two_tool_loop(runtime)
    model = SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=runtime)
    agent = create_react_agent(model, [get_weather, to_fahrenheit])

    result = agent.invoke({"messages": [("user", "Weather in Paris, in Fahrenheit?")]})

    assert result["messages"][-1].content == "It is 64.4 F in Paris."
    assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert result["messages"][3].additional_kwargs["reasoning_content"] == "18 C, so convert."
    check_loop_requests(runtime.bodies)
    runtime.verify()


def test_a_langgraph_thread_keeps_one_front_door_session_across_its_turns():
    runtime = Runtime()
    front_door = FrontDoor(runtime)
    queue_two_tool_loop(runtime, session="sess-1")  # Stubber checks SessionId on every turn
    model = SageMakerChatModel.for_front_door(front_door)
    agent = create_react_agent(model, [get_weather, to_fahrenheit], checkpointer=InMemorySaver())

    result = agent.invoke(
        {"messages": [("user", "Weather in Paris, in Fahrenheit?")]}, {"configurable": {"thread_id": "chat-42"}}
    )

    assert result["messages"][-1].content == "It is 64.4 F in Paris."
    assert front_door.paths == ["/open", "/invoke", "/invoke", "/invoke"]
    assert model.transport.session_of("chat-42") == "sess-1"
    check_loop_requests(runtime.bodies)

    # The thread's next question stays on the same session; another thread gets its own.
    runtime.answer(completion("Still 64.4 F."), session="sess-1")
    agent.invoke({"messages": [("user", "And now?")]}, {"configurable": {"thread_id": "chat-42"}})
    runtime.open_session("sess-2")
    runtime.answer(completion("Hello."), session="sess-2")
    agent.invoke({"messages": [("user", "Hi")]}, {"configurable": {"thread_id": "chat-43"}})
    assert front_door.paths[-3:] == ["/invoke", "/open", "/invoke"]
    model.transport.close_all()
    assert front_door.paths[-2:] == ["/close", "/close"]
    runtime.verify()


def test_without_a_thread_the_front_door_call_is_stateless():
    runtime = Runtime()
    front_door = FrontDoor(runtime)
    runtime.answer(completion("Hi."))
    assert SageMakerChatModel.for_front_door(front_door).invoke("Hello").content == "Hi."
    assert front_door.paths == ["/invoke"]
    runtime.verify()


def test_a_bound_conversation_wins_over_the_thread():
    runtime = Runtime()
    front_door = FrontDoor(runtime)
    runtime.open_session("sess-1")
    runtime.answer(completion("A"), session="sess-1")
    runtime.answer(completion("B"), session="sess-1")
    model = SageMakerChatModel.for_front_door(front_door).bind(conversation="ticket-7")
    model.invoke("one", {"configurable": {"thread_id": "x"}})
    model.invoke("two", {"configurable": {"thread_id": "y"}})
    assert front_door.paths == ["/open", "/invoke", "/invoke"]
    runtime.verify()


def test_messages_are_sent_in_chat_completions_form():
    runtime = Runtime()
    runtime.answer(completion("ok"))
    model = SageMakerChatModel.for_component(
        ENDPOINT,
        COMPONENT,
        runtime_client=runtime,
        temperature=0.2,
        max_tokens=64,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    reply = model.invoke(
        [
            SystemMessage("Be brief."),
            HumanMessage([{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]),
            AIMessage("", tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c1"}]),
            ToolMessage("done", tool_call_id="c1"),
        ],
        stop=["\n\n"],
    )
    assert runtime.bodies[0] == {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi there"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ],
        "temperature": 0.2,
        "max_tokens": 64,
        "stop": ["\n\n"],
        "chat_template_kwargs": {"enable_thinking": False},
    }
    assert reply.usage_metadata == {"input_tokens": 12, "output_tokens": 5, "total_tokens": 17}
    assert reply.response_metadata["finish_reason"] == "stop"


def test_tool_choice_in_openai_terms():
    runtime = Runtime()
    for _ in range(3):
        runtime.answer(completion(None, tool_calls=[call("get_weather", {"city": "Oslo"}, "c")]))
    model = SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=runtime)
    model.bind_tools([get_weather], tool_choice="any").invoke("x")
    model.bind_tools([get_weather], tool_choice="get_weather").invoke("x")
    model.bind_tools([get_weather], tool_choice="auto").invoke("x")
    assert [b["tool_choice"] for b in runtime.bodies] == [
        "required",
        {"type": "function", "function": {"name": "get_weather"}},
        "auto",
    ]
    with pytest.raises(ValueError, match=r"tool_choice 'nope' names no bound tool \(get_weather\)"):
        model.bind_tools([get_weather], tool_choice="nope")


def test_arguments_that_are_not_json_become_an_invalid_tool_call():
    runtime = Runtime()
    runtime.answer(
        completion(
            None,
            tool_calls=[
                {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": "{city: Paris"}}
            ],
        )
    )
    reply = SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=runtime).invoke("x")
    assert reply.tool_calls == []
    assert reply.invalid_tool_calls[0]["args"] == "{city: Paris"
    assert "not JSON" in reply.invalid_tool_calls[0]["error"]


class Forecast(BaseModel):
    city: str
    celsius: float


def test_structured_output_through_a_required_tool_call():
    runtime = Runtime()
    runtime.answer(completion(None, tool_calls=[call("Forecast", {"city": "Lyon", "celsius": 21.5}, "c")]))
    model = SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=runtime)
    assert model.with_structured_output(Forecast).invoke("Lyon?") == Forecast(city="Lyon", celsius=21.5)
    assert runtime.bodies[0]["tool_choice"] == "required"
    assert runtime.bodies[0]["tools"][0]["function"]["name"] == "Forecast"


def test_a_reply_that_is_not_a_completion_is_an_error():
    runtime = Runtime()
    runtime.answer({"error": "model not loaded"})
    with pytest.raises(ModelCallError, match=r"the model answered without choices"):
        SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=runtime).invoke("x")


# ---------------------------------------------------------------------- streaming and async


def stream_chunks() -> list[dict]:
    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    return [
        chunk({"role": "assistant", "reasoning_content": "Need the "}),
        chunk({"reasoning_content": "weather."}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call-9",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"ci'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Rome"}'}}]}),
        chunk({}, "tool_calls"),
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39},
        },
    ]


def merged(chunks) -> AIMessage:
    total = None
    for piece in chunks:
        total = piece if total is None else total + piece
    return total


def test_stream_on_the_component_merges_tool_call_pieces_and_reasoning():
    runtime = Runtime()
    runtime.stream(*stream_chunks(), split=17)
    model = SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=runtime)
    message = merged(model.bind_tools([get_weather]).stream("Rome?"))
    assert message.tool_calls == [
        {"name": "get_weather", "args": {"city": "Rome"}, "id": "call-9", "type": "tool_call"}
    ]
    assert message.additional_kwargs["reasoning_content"] == "Need the weather."
    assert message.usage_metadata["total_tokens"] == 39
    assert runtime.bodies[0]["stream"] is True
    assert runtime.bodies[0]["stream_options"] == {"include_usage": True}
    assert {k: v for k, v in runtime.streamed[0].items() if k != "Body"} == {
        "EndpointName": ENDPOINT,
        "InferenceComponentName": COMPONENT,
        "ContentType": "application/json",
    }


def test_stream_through_the_front_door_uses_the_open_session():
    runtime = Runtime()
    front_door = FrontDoor(runtime)
    runtime.open_session("sess-1")
    runtime.stream(
        {"choices": [{"index": 0, "delta": {"content": "Ciao"}}]},
        {"choices": [{"index": 0, "delta": {"content": "!"}, "finish_reason": "stop"}]},
    )
    model = SageMakerChatModel.for_front_door(front_door, conversation="c1")
    assert "".join(c.content for c in model.stream("Hi")) == "Ciao!"
    assert front_door.paths == ["/open"]  # the stream went straight to SageMaker on the session /open made
    assert runtime.streamed[0]["SessionId"] == "sess-1"


def test_a_stateless_front_door_stream_is_one_buffered_chunk():
    runtime = Runtime()
    front_door = FrontDoor(runtime)
    runtime.answer(completion(None, tool_calls=[call("get_weather", {"city": "Bern"}, "c")]))
    chunks = [c for c in SageMakerChatModel.for_front_door(front_door).stream("Bern?") if c.tool_call_chunks]
    assert len(chunks) == 1 and chunks[0].tool_calls[0]["args"] == {"city": "Bern"}
    assert front_door.paths == ["/invoke"]
    assert "stream" not in runtime.bodies[0] and "stream_options" not in runtime.bodies[0]


def test_async_invoke_and_stream():
    runtime = Runtime()
    front_door = FrontDoor(runtime)
    runtime.open_session("sess-1")
    runtime.answer(completion("async ok"), session="sess-1")
    runtime.stream(
        {"choices": [{"index": 0, "delta": {"content": "a"}}]}, {"choices": [{"index": 0, "delta": {"content": "b"}}]}
    )
    model = SageMakerChatModel.for_front_door(front_door)

    async def run() -> tuple[str, str]:
        config = {"configurable": {"thread_id": "t-async"}}
        first = await model.ainvoke("one", config)
        pieces = [c.content async for c in model.astream("two", config)]
        return first.content, "".join(pieces)

    assert asyncio.run(run()) == ("async ok", "ab")
    assert front_door.paths == ["/open", "/invoke"]
    assert runtime.streamed[0]["SessionId"] == "sess-1"
    runtime.verify()


def test_async_agent_loop_keeps_the_session():
    runtime = Runtime()
    front_door = FrontDoor(runtime)
    queue_two_tool_loop(runtime, session="sess-1")
    agent = create_react_agent(SageMakerChatModel.for_front_door(front_door), [get_weather, to_fahrenheit])
    result = asyncio.run(
        agent.ainvoke(
            {"messages": [("user", "Weather in Paris, in Fahrenheit?")]},
            {"configurable": {"thread_id": "async-thread"}},
        )
    )
    assert result["messages"][-1].content == "It is 64.4 F in Paris."
    assert front_door.paths == ["/open", "/invoke", "/invoke", "/invoke"]
    runtime.verify()


def test_the_transport_type_is_reported():
    runtime = Runtime()
    model = SageMakerChatModel(transport=FrontDoorTransport(FrontDoor(runtime), component=COMPONENT))
    assert model._identifying_params["transport"] == "FrontDoorTransport"
    assert model._llm_type == "sagemaker-lmi-chat"
