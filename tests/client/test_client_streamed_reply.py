"""``client.StreamedReply``: a streamed reply assembled into the chat completion a buffered turn returns, which the
client sends to the front door's turn log after a stream (the handler side: tests/sessions/test_streamed_turn_log.py).
"""

from __future__ import annotations

from sagemaker_llm_cdk.client import StreamedReply
from support.agents import call_pieces, chunk

USAGE = chunk(None, usage={"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39})
CALL_1 = {"id": "call-1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}


def test_a_stream_is_assembled_into_the_chat_completion_a_buffered_turn_returns():
    reply = StreamedReply()
    for event in [
        chunk({"role": "assistant", "reasoning_content": "Think"}),  # older vLLM's name
        chunk({"reasoning": "ing."}),
        chunk({"content": "Both:"}),
        *call_pieces("call-1", "get_weather", '{"city": "Paris"}'),
        chunk({"tool_calls": [{"index": 1, "id": "call-2", "function": {"name": "to_", "arguments": {"celsius": 1}}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"name": "fahrenheit"}}]}),
        chunk({}, "tool_calls"),
        USAGE,
    ]:
        reply.add(event)
    assert reply.completion() == {
        "object": "chat.completion",
        "id": "chatcmpl-7",
        "model": "/opt/ml/model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Both:",
                    "reasoning": "Thinking.",
                    "tool_calls": [
                        CALL_1,
                        {
                            "id": "call-2",
                            "type": "function",
                            "function": {"name": "to_fahrenheit", "arguments": '{"celsius":1}'},
                        },
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39},
    }
    only_call = StreamedReply()
    for event in call_pieces("call-1", "get_weather", "{}"):
        only_call.add(event)
    assert only_call.completion()["choices"][0]["message"]["content"] is None  # null beside a call, as vLLM's


def test_other_streams_are_assembled_as_text():
    reply = StreamedReply()
    for event in [{"token": {"text": "Hel"}}, "lo", {"choices": [{"index": 0, "text": "!", "finish_reason": "stop"}]}]:
        reply.add(event)
    assert reply.completion()["choices"] == [
        {"index": 0, "message": {"role": "assistant", "content": "Hello!"}, "finish_reason": "stop"}
    ]
