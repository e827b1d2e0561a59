"""Streamed front-door turns in the EAGLE turn log: the client's ``POST /log`` after a stream, against the handler.

The client (``sagemaker_llm_cdk.client``) streams straight from ``InvokeEndpointWithResponseStream`` on the session
the front door opened, assembles the reply (``StreamedReply``) and sends it to the front door's ``POST /log``, which
the real handler (lambda/session_router) answers here: the conversation table is DynamoDB under moto, the handler's
``InvokeEndpoint`` and Firehose ``PutRecord`` go through botocore's Stubber, the stream through support.agents'
event-stream stub; every AWS request is checked against botocore's service model. A LangGraph two-tool loop streamed
through the front door leaves turn-log records that the EAGLE dataset builder turns into one tool-calling training
record, exactly.
"""

from __future__ import annotations

import base64
import functools
import gzip
import io
import json
import logging
import operator
import time
from typing import Any

import boto3
import pytest
from botocore.credentials import Credentials
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from conftest import FakeLambdaContext, load_handler_module
from moto import mock_aws
from sagemaker_llm_cdk import client as client_module
from sagemaker_llm_cdk.client import FrontDoorError, SessionClient
from support.agents import COMPONENT, ENDPOINT, Runtime, call_pieces, chunk
from support.aws_model import assert_valid_request

TABLE = "llm-conversations"
STREAM = "SageMakerLlm-ChatTurns-AbC123"
CHAT_APP = "arn:aws:sts::123456789012:assumed-role/chat-app/alice@example.com"
OTHER_APP = "arn:aws:sts::123456789012:assumed-role/other-app/i-2"
SENT: list[dict[str, Any]] = []  # the PutRecord requests the handler really sent


def without_content_type(params: dict[str, Any]) -> dict[str, Any]:
    """The request without ContentType, whose Java pattern ``\\p{ASCII}*`` Python's ``re`` cannot compile (checked
    by hand here: ASCII, at most 1024 characters)."""
    params = dict(params)
    content_type = params.pop("ContentType", None)
    assert content_type is None or (content_type.isascii() and len(content_type) <= 1024)
    return params


@pytest.fixture(scope="module")
def sessions_table():
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "conversation_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "conversation_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield dynamodb


class HandlerClient(SessionClient):
    """A ``SessionClient`` whose requests are Function URL events answered by the handler (no HTTP, no Lambda)."""

    def __init__(self, handler: Any, runtime: Runtime, caller: str = CHAT_APP) -> None:
        super().__init__(
            "https://front-door.lambda-url.us-east-1.on.aws/",
            region="us-east-1",
            credentials=Credentials("AKIDAGENTTEST", "secret"),
            runtime_client=runtime,
        )
        self.handler, self.caller, self.paths = handler, caller, []

    def _post_once(self, path: str, payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        self.paths.append(path)
        response = self.handler(event(path, payload, self.caller), FakeLambdaContext())
        headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
        if response["statusCode"] != 200:
            raise client_module._error_from(
                response["statusCode"],
                response["body"].encode(),
                retry_after=client_module._retry_after(headers.get("retry-after")),
            )
        return json.loads(response["body"]), headers


def event(path: str, payload: Any, caller: str = CHAT_APP) -> dict[str, Any]:
    """A Function URL (payload 2.0) event signed by ``caller``."""
    body = payload if isinstance(payload, str) else json.dumps(payload)
    user_id = "AROAEXAMPLEROLEID0001:" + caller.rsplit("/", 1)[1]
    iam = {
        "accessKey": "ASIAEXAMPLEKEY000001",
        "accountId": "123456789012",
        "callerId": user_id,
        "cognitoIdentity": None,
        "principalOrgId": "o-exampleorg1",
        "userArn": caller,
        "userId": user_id,
    }
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json"},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "http": {"method": "POST", "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.9"},
            "requestId": "8a0b4b3e-0000-4000-8000-000000000001",
            "routeKey": "$default",
            "stage": "$default",
            "authorizer": {"iam": iam},
        },
        "body": base64.b64encode(body.encode()).decode(),
        "isBase64Encoded": True,
    }


class FrontDoor:
    """The handler with its AWS calls stubbed, a client talking to it, and what both sent."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, logging_on: bool = True) -> None:
        for name, value in {
            "ENDPOINT_NAME": ENDPOINT,
            "SESSIONS_TABLE": TABLE,
            "DEFAULT_COMPONENT": COMPONENT,
            "MAX_BODY_BYTES": "2000000",
        }.items():
            monkeypatch.setenv(name, value)
        if logging_on:
            monkeypatch.setenv("TURN_LOG_STREAM", STREAM)
        else:
            monkeypatch.delenv("TURN_LOG_STREAM", raising=False)
        self.mod = load_handler_module("session_router")
        self.model = Stubber(self.mod._sagemaker_runtime())
        self.model.activate()
        self.invoked: list[dict[str, Any]] = []
        self.mod._sagemaker_runtime().meta.events.register(
            "provide-client-params.sagemaker-runtime.InvokeEndpoint",
            lambda params, **_: self.invoked.append(dict(params)),
            unique_id="streamed-turn-log-invoked",
        )
        import turn_log  # the module the handler logs through (its sibling modules import it by name)

        self.firehose = Stubber(turn_log._firehose())
        SENT.clear()
        turn_log._firehose().meta.events.register(
            "provide-client-params.firehose.PutRecord",
            lambda params, **_: SENT.append(dict(params)),
            unique_id="streamed-turn-log-sent",
        )
        self.firehose.activate()
        self.runtime = Runtime()
        self.client = HandlerClient(self.mod.handler, self.runtime)

    def open_session(self, session: str) -> None:
        """The handler's next InvokeEndpoint opens a session SageMaker names ``session``."""
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1200))
        data = b'{"result": "created"}'
        self.model.add_response(
            "invoke_endpoint",
            {
                "Body": StreamingBody(io.BytesIO(data), len(data)),
                "ContentType": "application/json",
                "NewSessionId": f"{session}; Expires={expires}",
            },
            {
                "EndpointName": ENDPOINT,
                "InferenceComponentName": COMPONENT,
                "ContentType": "application/json",
                "SessionId": "NEW_SESSION",
                "Body": ANY,
            },
        )

    def accept_records(self, count: int, error: str | None = None) -> None:
        for _ in range(count):
            expected = {"DeliveryStreamName": STREAM, "Record": {"Data": ANY}}
            if error:
                self.firehose.add_client_error("put_record", service_error_code=error, expected_params=expected)
            else:
                self.firehose.add_response("put_record", {"RecordId": "r-1"}, expected)

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(params["Record"]["Data"]) for params in SENT]

    def verify(self) -> None:
        self.model.assert_no_pending_responses()
        self.firehose.assert_no_pending_responses()
        self.runtime.verify()
        for params in SENT:
            assert_valid_request("firehose", "PutRecord", params)
        for params in self.invoked:
            assert_valid_request("sagemaker-runtime", "InvokeEndpoint", without_content_type(params))
        for params in self.runtime.streamed:
            assert_valid_request("sagemaker-runtime", "InvokeEndpointWithResponseStream", without_content_type(params))

    def close(self) -> None:
        self.model.deactivate()
        self.firehose.deactivate()


@pytest.fixture
def front_door(sessions_table, monkeypatch):
    made = FrontDoor(monkeypatch)
    yield made
    made.close()


USAGE = chunk(None, usage={"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39})
CALL_1 = {"id": "call-1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
CALL_2 = {"id": "call-2", "type": "function", "function": {"name": "to_fahrenheit", "arguments": '{"celsius": 18}'}}
USER = {"role": "user", "content": "Weather in Paris, in Fahrenheit?"}


def queue_streamed_two_tool_loop(runtime: Runtime) -> None:
    runtime.stream(
        chunk({"role": "assistant", "reasoning": "Weather first."}),
        chunk({"content": "Let me check."}),
        *call_pieces("call-1", "get_weather", '{"city": "Paris"}'),
        chunk({}, "tool_calls"),
        USAGE,
    )
    runtime.stream(*call_pieces("call-2", "to_fahrenheit", '{"celsius": 18}'), chunk({}, "tool_calls"), USAGE)
    runtime.stream(chunk({"content": "It is 64.4 F"}), chunk({"content": " in Paris."}), chunk({}, "stop"), USAGE)


def streaming_agent(model: Any) -> Any:
    """The ReAct loop as a LangGraph graph whose model node streams each turn and merges the chunks."""
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool
    def get_weather(city: str) -> str:
        """The current temperature in a city, in degrees Celsius."""
        return json.dumps({"city": city, "celsius": 18})

    @tool
    def to_fahrenheit(celsius: float) -> str:
        """Convert degrees Celsius to Fahrenheit."""
        return str(round(celsius * 9 / 5 + 32, 1))

    tools = [get_weather, to_fahrenheit]
    bound = model.bind_tools(tools)

    def agent(state: MessagesState, config: Any) -> dict[str, Any]:
        return {"messages": [functools.reduce(operator.add, bound.stream(state["messages"], config))]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", RunnableLambda(agent))
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver())


def dataset(records_data: list[bytes]) -> tuple[list[tuple[str, bytes]], dict[str, Any]]:
    core = load_handler_module("eagle_dataset", "eagle_dataset_core")
    data = gzip.compress(b"".join(records_data))  # one Firehose object
    results = []
    for fast in (False, True):
        converter = core.BatchConverter(source="front_door", fast=fast)
        out = list(converter.convert_lines(core.iter_bounded_lines(core.iter_object_data([data]), 1 << 20)))
        results.append((out, converter.summary()))
    assert results[0][0] == results[1][0]  # the standard-library and orjson paths write the same bytes
    return results[0]


def test_a_streamed_langgraph_two_tool_loop_becomes_one_exact_tool_calling_training_record(front_door):
    pytest.importorskip("langgraph")
    from sagemaker_llm_cdk.agents import SageMakerChatModel

    front_door.open_session("sess-1")
    queue_streamed_two_tool_loop(front_door.runtime)
    front_door.accept_records(3)
    model = SageMakerChatModel.for_front_door(front_door.client)
    agent = streaming_agent(model)

    result = agent.invoke({"messages": [("user", USER["content"])]}, {"configurable": {"thread_id": "chat-42"}})

    assert result["messages"][-1].content == "It is 64.4 F in Paris."
    assert front_door.client.paths == ["/open", "/log", "/log", "/log"]  # each stream logged once it ended
    assert [params["SessionId"] for params in front_door.runtime.streamed] == ["sess-1"] * 3
    assert front_door.client.turns_not_logged == 0
    front_door.verify()

    records = front_door.records()
    first = {"role": "assistant", "content": "Let me check.", "tool_calls": [CALL_1]}
    second = {"role": "assistant", "content": None, "tool_calls": [CALL_2]}
    assert [r["component"] for r in records] == [COMPONENT] * 3  # the conversation's component, from its row
    assert [r["messages"][-1] for r in records[:2]] == [first, second]  # text and call of a streamed reply
    assert [r["dropped"] for r in records] == [["tool_definitions", "reasoning_content"], ["tool_definitions"]] + [
        ["tool_definitions"]
    ]
    weather = {"role": "tool", "tool_call_id": "call-1", "content": '{"city": "Paris", "celsius": 18}'}
    degrees = {"role": "tool", "tool_call_id": "call-2", "content": "64.4"}
    answer = {"role": "assistant", "content": "It is 64.4 F in Paris."}
    assert records[2]["messages"] == [USER, first, weather, second, degrees, answer]

    out, summary = dataset([params["Record"]["Data"] for params in SENT])
    line = json.dumps({"messages": [USER, first, weather, second, degrees, answer]}, separators=(",", ":"))
    assert out == [(COMPONENT, (line + "\n").encode())]
    assert (summary["records_in"], summary["converted"], summary["duplicates"]) == (3, 1, 0)
    assert summary["skipped"] == {"conversation_prefix": 2}  # the first two turns: prefixes of the third
    assert (summary["tool_calling"], summary["dropped"]) == (1, {"tool_definitions": 1})


def test_the_same_loop_by_hand_through_conversation_stream_logs_the_same_records(front_door):
    """Without a framework: three ``Conversation.stream`` turns, each request carrying the history so far."""
    front_door.open_session("sess-1")
    queue_streamed_two_tool_loop(front_door.runtime)
    front_door.accept_records(3)
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in ("a", "b")]
    first = {"role": "assistant", "content": "Let me check.", "tool_calls": [CALL_1]}
    second = {"role": "assistant", "content": None, "tool_calls": [CALL_2]}
    weather = {"role": "tool", "tool_call_id": "call-1", "content": "18 C"}
    degrees = {"role": "tool", "tool_call_id": "call-2", "content": "64.4"}
    chat = front_door.client.conversation()
    texts = []
    for history in ([USER], [USER, first, weather], [USER, first, weather, second, degrees]):
        texts.append("".join(client_module.text_of(e) for e in chat.stream({"messages": history, "tools": tools})))
    assert texts == ["Let me check.", "", "It is 64.4 F in Paris."]
    assert chat.turn_log is True and front_door.client.paths == ["/open", "/log", "/log", "/log"]
    front_door.verify()
    assert front_door.records()[2]["messages"] == [
        USER,
        first,
        weather,
        second,
        degrees,
        {"role": "assistant", "content": "It is 64.4 F in Paris."},
    ]


def test_a_turn_log_failure_never_fails_the_stream_and_is_counted(front_door, caplog):
    front_door.open_session("sess-1")
    front_door.runtime.stream(chunk({"content": "Hi"}), chunk({}, "stop"))
    front_door.accept_records(1, error="ServiceUnavailableException")
    chat = front_door.client.conversation()
    with caplog.at_level(logging.WARNING, logger="sagemaker_llm_cdk.client"):
        events = list(chat.stream({"messages": [USER]}))
    assert "".join(client_module.text_of(e) for e in events) == "Hi"
    assert front_door.client.turns_not_logged == 1
    assert "streamed turn not logged for EAGLE: 503 TurnLogUnavailable" in caplog.text
    front_door.verify()


def test_a_stream_read_partly_is_not_logged(front_door):
    front_door.open_session("sess-1")
    front_door.runtime.stream(chunk({"content": "Hi"}), chunk({"content": " there"}), chunk({}, "stop"))
    stream = front_door.client.conversation().stream({"messages": [USER]})
    next(stream)
    stream.close()
    assert front_door.client.paths == ["/open"] and SENT == []


def test_a_stream_on_a_lost_session_is_logged_once_by_the_buffered_turn(front_door):
    front_door.open_session("sess-1")
    front_door.runtime.lose_session("sess-1")
    turn = {"EndpointName": ENDPOINT, "InferenceComponentName": COMPONENT, "ContentType": "application/json"}
    front_door.model.add_client_error(  # the front door's turn on the old session: gone there too
        "invoke_endpoint",
        service_error_code="ValidationError",
        service_message="Session id sess-1 not found or expired",
        http_status_code=400,
        expected_params={**turn, "SessionId": "sess-1", "Body": ANY},
    )
    front_door.open_session("sess-2")
    reply = {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}]}
    data = json.dumps(reply).encode()
    front_door.model.add_response(
        "invoke_endpoint",
        {"Body": StreamingBody(io.BytesIO(data), len(data)), "ContentType": "application/json"},
        {**turn, "SessionId": "sess-2", "Body": ANY},
    )
    front_door.accept_records(1)
    chat = front_door.client.conversation()
    assert list(chat.stream({"messages": [USER]})) == [reply]
    assert front_door.client.paths == ["/open", "/invoke"]  # the front door logged the buffered turn itself
    assert chat.reopened is True and len(front_door.records()) == 1
    front_door.verify()


# ------------------------------------------------------------------ POST /log refuses what it must, with why


def post(front_door: FrontDoor, payload: Any, caller: str = CHAT_APP) -> dict[str, Any]:
    response = front_door.mod.handler(event("/log", payload, caller), FakeLambdaContext())
    response["json"] = json.loads(response["body"])
    return response


def opened(front_door: FrontDoor) -> dict[str, Any]:
    front_door.open_session("sess-1")
    answer = front_door.client.open()
    assert answer["turn_log"] is True and answer["session_id"] == "sess-1"
    return answer


REPLY = {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}]}


def log_request(conversation_id: str, **changes: Any) -> dict[str, Any]:
    request = {"conversation_id": conversation_id, "session_id": "sess-1", "body": {"messages": [USER]}}
    return {**request, "reply": REPLY, **changes}


def refused(response: dict[str, Any], status: int, code: str, field: str | None, match: str) -> None:
    assert response["statusCode"] == status, response
    error = response["json"]["error"]
    assert (error["code"], error.get("field")) == (code, field)
    with pytest.raises(FrontDoorError, match=match):
        raise client_module._error_from(status, response["body"].encode())


def test_a_log_is_written_under_the_conversations_component_and_answered(front_door):
    conversation = opened(front_door)["conversation_id"]
    front_door.accept_records(1)
    response = post(front_door, log_request(conversation))
    assert response["statusCode"] == 200
    assert response["json"] == {"conversation_id": conversation, "component": COMPONENT, "logged": True}
    assert [(r["component"], r["messages"]) for r in front_door.records()] == [
        (COMPONENT, [USER, {"role": "assistant", "content": "Hi"}])
    ]
    front_door.verify()


def test_another_callers_conversation_is_not_found_and_nothing_is_logged(front_door):
    conversation = opened(front_door)["conversation_id"]
    refused(
        post(front_door, log_request(conversation), caller=OTHER_APP),
        404,
        "ConversationNotFound",
        "conversation_id",
        r"404 ConversationNotFound: conversation '.*' has no open session for this caller",
    )
    assert SENT == []
    front_door.verify()


def test_a_log_for_another_session_of_the_conversation_is_refused(front_door):
    conversation = opened(front_door)["conversation_id"]
    refused(
        post(front_door, log_request(conversation, session_id="sess-0")),
        409,
        "SessionMismatch",
        "session_id",
        r"session_id 'sess-0' is not the session of conversation .*; log only a turn streamed on the session /open",
    )
    assert SENT == []


@pytest.mark.parametrize(
    ("changes", "status", "code", "field", "match"),
    [
        ({"body": {"prompt": "hi"}}, 400, "TurnNotLoggable", "body", r"\(request_not_chat\): body must be the chat"),
        (
            {"body": {"messages": [{"role": "tool", "content": "x"}]}},
            400,
            "TurnNotLoggable",
            "body",
            r"\(request_malformed_tool_call\): every assistant tool call needs an id",
        ),
        (
            {"reply": {"choices": [{"message": {"content": " "}}]}},
            400,
            "TurnNotLoggable",
            "reply",
            r"\(reply_without_answer\): reply must be a chat completion whose choices\[0\]\.message has text",
        ),
        (
            {"reply": {"choices": [{"message": {"content": None, "tool_calls": [{"function": {"name": "f"}}]}}]}},
            400,
            "TurnNotLoggable",
            "reply",
            r"\(reply_malformed_tool_call\): reply\.choices\[0\]\.message\.tool_calls must each have an id",
        ),
        (
            {"body": {"messages": [{"role": "user", "content": "q" * (1000 * 1024)}]}},
            413,
            "TurnNotLoggable",
            "reply",
            r"413 TurnNotLoggable: the turn cannot be logged \(too_large\): the record must fit Firehose's 1024000",
        ),
        ({"reply": "Hi"}, 400, "InvalidField", "reply", r"reply is required and must be a JSON object"),
        (
            {"session_id": "sess-1; Expires=2030-01-01T00:00:00Z"},
            400,
            "InvalidField",
            "session_id",
            r"session_id must be the session id the stream ran on, as /open returned it",
        ),
        ({"stream": True}, 400, "InvalidField", "stream", r"unknown field 'stream'; allowed fields: conversation_id"),
    ],
)
def test_a_log_no_record_can_hold_is_refused_with_its_reason(front_door, changes, status, code, field, match):
    conversation = opened(front_door)["conversation_id"]
    refused(post(front_door, log_request(conversation, **changes)), status, code, field, match)
    assert SENT == []


def test_a_log_over_the_body_limit_is_refused_before_anything_is_read(front_door):
    conversation = opened(front_door)["conversation_id"]
    huge = log_request(conversation, body={"messages": [{"role": "user", "content": "q" * 2_000_000}]})
    refused(post(front_door, huge), 413, "PayloadTooLarge", None, r"the limit is 2000000 bytes \(MAX_BODY_BYTES\)")


def test_a_firehose_failure_is_a_retryable_503(front_door):
    conversation = opened(front_door)["conversation_id"]
    front_door.accept_records(1, error="ServiceUnavailableException")
    response = post(front_door, log_request(conversation))
    refused(response, 503, "TurnLogUnavailable", None, r"refused the record \(ServiceUnavailableException\)")
    assert response["headers"]["Retry-After"] == "1"
    front_door.verify()


def test_with_logging_off_open_says_nothing_and_a_log_is_answered_not_logged(sessions_table, monkeypatch):
    front_door = FrontDoor(monkeypatch, logging_on=False)
    try:
        front_door.open_session("sess-1")
        answer = front_door.client.open()
        assert "turn_log" not in answer
        response = post(front_door, log_request(answer["conversation_id"]))
        assert response["statusCode"] == 200 and response["json"] == {
            "conversation_id": answer["conversation_id"],
            "component": COMPONENT,
            "logged": False,
            "reason": "turn_log_off",
        }
        front_door.runtime.stream(chunk({"content": "Hi"}), chunk({}, "stop"))
        chat = front_door.client.conversation(answer["conversation_id"])
        chat._adopt(answer)
        assert [client_module.text_of(e) for e in chat.stream({"messages": [USER]})] == ["Hi", ""]
        assert front_door.client.paths == ["/open"]  # the client sends no log when /open did not ask for them
        front_door.verify()
    finally:
        front_door.close()
