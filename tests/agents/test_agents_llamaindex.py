"""The LlamaIndex connector against real llama-index-core, the SageMaker runtime stubbed offline.

A ``FunctionAgent`` (which streams every step) runs a two-tool loop end to end on the component and through the
session front door, where every turn must carry one session id; tools, structured output, reasoning and
async are checked on the requests SageMaker would receive.
"""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("llama_index.core")
# llama-index-core inspects pydantic models with inspect.getmembers, which touches deprecated attributes.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, ThinkingBlock, ToolCallBlock  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from sagemaker_llm_cdk.agents import SageMakerLLM  # noqa: E402
from support.agents import COMPONENT, ENDPOINT, FrontDoor, Runtime, call, completion  # noqa: E402


def get_weather(city: str) -> str:
    """The current temperature in a city, in degrees Celsius."""
    return json.dumps({"city": city, "celsius": 18})


def to_fahrenheit(celsius: float) -> str:
    """Convert degrees Celsius to Fahrenheit."""
    return str(round(celsius * 9 / 5 + 32, 1))


TOOLS = [FunctionTool.from_defaults(get_weather), FunctionTool.from_defaults(to_fahrenheit)]


def chunk(delta: dict, finish: str | None = None) -> dict:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def tool_call_stream(name: str, arguments: dict, id: str, *, reasoning: str | None = None) -> list[dict]:
    text = json.dumps(arguments)
    chunks = [chunk({"role": "assistant", "reasoning_content": reasoning})] if reasoning else []
    return chunks + [
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": text[:5]}}
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": text[5:]}}]}),
        chunk({}, "tool_calls"),
    ]


def queue_loop(runtime: Runtime) -> None:
    runtime.stream(*tool_call_stream("get_weather", {"city": "Paris"}, "call-1"))
    runtime.stream(*tool_call_stream("to_fahrenheit", {"celsius": 18}, "call-2", reasoning="Convert it."))
    runtime.stream(chunk({"content": "It is 64.4 F "}), chunk({"content": "in Paris."}, "stop"))


def check_loop(bodies: list[dict]) -> None:
    turns = [b for b in bodies if "messages" in b]
    assert len(turns) == 3
    assert [t["function"]["name"] for t in turns[0]["tools"]] == ["get_weather", "to_fahrenheit"]
    assert turns[0]["tool_choice"] == "auto"
    assert turns[1]["messages"][-2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call-1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call-1", "content": '{"city": "Paris", "celsius": 18}'},
    ]
    assert turns[2]["messages"][-1] == {"role": "tool", "tool_call_id": "call-2", "content": "64.4"}


def run_agent(llm: SageMakerLLM) -> str:
    agent = FunctionAgent(tools=TOOLS, llm=llm)

    async def run() -> str:
        return str(await agent.run(user_msg="Weather in Paris, in Fahrenheit?"))

    return asyncio.run(run())


def test_function_agent_runs_a_two_tool_loop_on_the_component():
    runtime = Runtime()
    queue_loop(runtime)
    answer = run_agent(SageMakerLLM.for_component(ENDPOINT, COMPONENT, runtime_client=runtime))
    assert answer == "It is 64.4 F in Paris."
    check_loop(runtime.bodies)
    assert all(s["InferenceComponentName"] == COMPONENT and "SessionId" not in s for s in runtime.streamed)
    runtime.verify()


def test_function_agent_keeps_one_front_door_session_across_its_turns():
    runtime = Runtime()
    front_door = FrontDoor(runtime)
    runtime.open_session("sess-1")
    queue_loop(runtime)
    llm = SageMakerLLM.for_front_door(front_door).with_conversation("chat-7")
    assert run_agent(llm) == "It is 64.4 F in Paris."
    assert [s["SessionId"] for s in runtime.streamed] == ["sess-1", "sess-1", "sess-1"]
    assert front_door.paths == ["/open"]  # the turns streamed on the session /open made
    check_loop(runtime.bodies)
    runtime.verify()


def test_buffered_chat_with_tools_through_the_front_door():
    runtime = Runtime()
    front_door = FrontDoor(runtime)
    runtime.open_session("sess-9")
    runtime.answer(
        completion(None, tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")], reasoning="Look it up."),
        session="sess-9",
    )
    runtime.answer(completion("Done."), session="sess-9")
    llm = SageMakerLLM.for_front_door(front_door, conversation="t")

    response = llm.chat_with_tools(TOOLS, user_msg="Oslo?", tool_required=True)
    selections = llm.get_tool_calls_from_response(response)
    assert [(s.tool_id, s.tool_name, s.tool_kwargs) for s in selections] == [("c1", "get_weather", {"city": "Oslo"})]
    assert response.message.additional_kwargs["reasoning_content"] == "Look it up."
    assert isinstance(response.message.blocks[0], ThinkingBlock)
    assert runtime.bodies[1]["tool_choice"] == "required" and runtime.bodies[1]["parallel_tool_calls"] is False

    history = [
        ChatMessage(role="user", content="Oslo?"),
        response.message,
        ChatMessage(role="tool", content="18", additional_kwargs={"tool_call_id": "c1"}),
    ]
    assert llm.chat(history).message.content == "Done."
    assert runtime.bodies[2]["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Oslo"}'
    assert front_door.paths == ["/open", "/invoke", "/invoke"]
    runtime.verify()


def test_no_tool_call_is_an_error_only_when_asked():
    runtime = Runtime()
    runtime.answer(completion("No tools needed."))
    llm = SageMakerLLM.for_component(ENDPOINT, COMPONENT, runtime_client=runtime)
    response = llm.chat_with_tools(TOOLS, user_msg="Hi")
    assert llm.get_tool_calls_from_response(response, error_on_no_tool_call=False) == []
    with pytest.raises(ValueError, match=r"the model called no tool \(it answered: 'No tools needed\.'\)"):
        llm.get_tool_calls_from_response(response)


class Forecast(BaseModel):
    city: str
    celsius: float


def test_structured_predict_through_a_tool_call():
    runtime = Runtime()
    runtime.answer(completion(None, tool_calls=[call("Forecast", {"city": "Lyon", "celsius": 21.5}, "c")]))
    from llama_index.core.prompts import PromptTemplate

    llm = SageMakerLLM.for_component(ENDPOINT, COMPONENT, runtime_client=runtime)
    result = llm.structured_predict(Forecast, PromptTemplate("Forecast for {city}"), city="Lyon")
    assert result == Forecast(city="Lyon", celsius=21.5)
    assert runtime.bodies[0]["tools"][0]["function"]["name"] == "Forecast"


def test_complete_and_async():
    runtime = Runtime()
    runtime.answer(completion("one"))
    runtime.answer(completion("two"))
    runtime.stream(chunk({"content": "th"}), chunk({"content": "ree"}, "stop"))
    llm = SageMakerLLM.for_component(ENDPOINT, COMPONENT, runtime_client=runtime, max_tokens=32)
    assert llm.complete("1").text == "one"

    async def run() -> tuple[str, str]:
        second = await llm.acomplete("2")
        pieces = [r.delta async for r in await llm.astream_complete("3")]
        return second.text, "".join(pieces)

    assert asyncio.run(run()) == ("two", "three")
    assert runtime.bodies[0] == {"messages": [{"role": "user", "content": "1"}], "max_tokens": 32}
    assert llm.metadata.is_function_calling_model and llm.metadata.num_output == 32
    runtime.verify()


def test_stream_chat_merges_tool_call_pieces():
    runtime = Runtime()
    runtime.stream(*tool_call_stream("get_weather", {"city": "Rome"}, "call-5"))
    llm = SageMakerLLM.for_component(ENDPOINT, COMPONENT, runtime_client=runtime)
    last = list(llm.stream_chat_with_tools(TOOLS, user_msg="Rome?"))[-1]
    blocks = [b for b in last.message.blocks if isinstance(b, ToolCallBlock)]
    assert [(b.tool_call_id, b.tool_name, b.tool_kwargs) for b in blocks] == [
        ("call-5", "get_weather", {"city": "Rome"})
    ]
