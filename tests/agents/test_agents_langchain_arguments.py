"""``SageMakerChatModel``'s arguments: langchain-aws' ``ChatSagemakerEndpoint`` names accepted and passed through
``for_component``, and every argument it does not know, or that contradicts another, refused with its name."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("langchain_core")

from botocore.awsrequest import AWSResponse
from sagemaker_llm_cdk.agents import SageMakerChatModel
from sagemaker_llm_cdk.agents.transport import EndpointTransport, FrontDoorTransport
from support.agents import COMPONENT, ENDPOINT, FrontDoor, Runtime, completion, event_message
from support.aws_model import assert_valid_request


def text_stream(runtime: Runtime, *pieces: str) -> None:
    chunks = [{"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    chunks[-1]["choices"][0]["finish_reason"] = "stop"
    runtime.stream(*chunks)


def test_for_component_takes_langchain_aws_names_and_uses_them(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDAGENTTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    model = SageMakerChatModel.for_component(
        "e", "c", region_name="eu-west-1", model_kwargs={"temperature": 0.3, "top_k": 20}, streaming=True
    )
    assert (model.endpoint_name, model.inference_component_name, model.streaming) == ("e", "c", True)
    sent = []

    def answer(request, **_):  # the stream, at the HTTP layer of the client the connector built
        sent.append(request)
        data = b'data: {"choices":[{"index":0,"delta":{"content":"Hi."},"finish_reason":"stop"}]}\n\n'
        headers = {"content-type": "application/vnd.amazon.eventstream"}
        return AWSResponse(request.url, 200, headers, _Raw(event_message(data)))

    model.transport.runtime.meta.events.register("before-send.sagemaker-runtime.*", answer)
    assert model.invoke("Hello").content == "Hi."
    assert sent[0].url == "https://runtime.sagemaker.eu-west-1.amazonaws.com/endpoints/e/invocations-response-stream"
    body = json.loads(sent[0].body)
    assert (body["temperature"], body["top_k"], body["stream"]) == (0.3, 20, True)


class _Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_):
        yield self.data

    def close(self) -> None:
        pass


def test_streaming_answers_invoke_from_the_stream_with_model_and_endpoint_kwargs():
    runtime = Runtime()
    text_stream(runtime, "Bonjour", " !")
    model = SageMakerChatModel.for_component(
        ENDPOINT,
        COMPONENT,
        client=runtime,
        streaming=True,
        max_tokens=64,
        model_kwargs={"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}, "min_tokens": 2},
        endpoint_kwargs={"CustomAttributes": "tenant=a"},
    )
    assert model.invoke("Hi", temperature=0.1).content == "Bonjour !"
    body = runtime.bodies[0]
    assert body["stream"] is True and body["max_tokens"] == 64 and body["temperature"] == 0.1
    assert (body["top_k"], body["min_tokens"]) == (20, 2)
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert runtime.streamed[0]["CustomAttributes"] == "tenant=a"
    assert_valid_request("sagemaker-runtime", "InvokeEndpointWithResponseStream", runtime.streamed[0])
    runtime.verify()


def test_built_as_chat_sagemaker_endpoint_is_built():
    runtime = Runtime()
    runtime.answer(completion("Hi."))
    model = SageMakerChatModel(
        endpoint_name=ENDPOINT, inference_component_name=COMPONENT, client=runtime, model_kwargs={"temperature": 0}
    )
    assert isinstance(model.transport, EndpointTransport) and model.transport.runtime is runtime
    assert model.invoke("Hello").content == "Hi."
    assert runtime.bodies[0]["temperature"] == 0
    runtime.verify()


def test_its_own_dump_validates_again_but_another_transport_with_client_options_does_not():
    model = SageMakerChatModel.for_component(ENDPOINT, COMPONENT, client=Runtime())
    assert SageMakerChatModel.model_validate(model.model_dump()).transport is model.transport
    other = EndpointTransport(ENDPOINT, "another-component", runtime_client=Runtime())
    with pytest.raises(ValueError, match=r"endpoint_name, inference_component_name describe the SageMaker runtime"):
        SageMakerChatModel(transport=other, endpoint_name=ENDPOINT, inference_component_name=COMPONENT)


def test_for_front_door_bounds_its_conversations():
    model = SageMakerChatModel.for_front_door(FrontDoor(Runtime()), max_conversations=8)
    assert isinstance(model.transport, FrontDoorTransport) and model.transport.max_conversations == 8


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"regoin_name": "eu-west-1"}, r"takes no argument 'regoin_name' \(did you mean 'region_name'\?\)"),
        ({"profile_name": "dev"}, r"takes no argument 'profile_name' \(did you mean 'credentials_profile_name'\?\)"),
        ({"top_k": 20}, r"takes no argument 'top_k' \(a request field: give it as model_kwargs=\{'top_k': \.\.\.\}\)"),
        ({"colour": "red"}, r"takes no argument 'colour'\. Its own arguments: client, .*endpoint_kwargs=\{\.\.\.\}"),
        ({"model_kwargs": {"messages": []}}, r"model_kwargs\['messages'\] cannot be set: the connector writes"),
        ({"model_kwargs": {"stream": True}}, r"model_kwargs\['stream'\] cannot be set: .*streaming=True"),
        ({"model_kwargs": {"stream_options": {}}}, r"model_kwargs\['stream_options'\] cannot be set"),
        (
            {"temperature": 0.2, "model_kwargs": {"temperature": 0.5}},
            r"temperature is given twice: temperature=0.2 and model_kwargs\['temperature'\]=0.5; keep one",
        ),
        (
            {"extra_body": {"top_k": 5}, "model_kwargs": {"top_k": 20}},
            r"top_k is given twice: extra_body\['top_k'\]=5 and model_kwargs\['top_k'\]=20",
        ),
        ({"endpoint_kwargs": {"SessionId": "s"}}, r"endpoint_kwargs\['SessionId'\] cannot be set"),
        ({"credentials_profile_name": "dev"}, r"credentials_profile_name='dev' with client=\.\.\.: the client has"),
        ({"region_name": "eu-west-1"}, r"region_name='eu-west-1' but the client given is in 'us-east-1'"),
        ({"inference_component_name": "x"}, r"for_component takes inference_component_name as its argument"),
    ],
)
def test_for_component_refuses_what_it_cannot_use(arguments, message):
    with pytest.raises(ValueError, match=message):
        SageMakerChatModel.for_component(ENDPOINT, COMPONENT, client=Runtime().stubbed, **arguments)


def test_two_spellings_of_one_client_must_agree():
    with pytest.raises(ValueError, match=r"runtime_client=.* and client=.* name one thing: give one of them"):
        SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=Runtime(), client=Runtime())
    with pytest.raises(ValueError, match=r"region='us-east-1' and region_name='eu-west-1' name one thing"):
        SageMakerChatModel.for_component(ENDPOINT, COMPONENT, region="us-east-1", region_name="eu-west-1")


def test_client_options_with_a_front_door_are_refused():
    with pytest.raises(ValueError, match=r"region_name describe the SageMaker runtime client .*FrontDoorTransport"):
        SageMakerChatModel.for_front_door(FrontDoor(Runtime()), region_name="eu-west-1")
    with pytest.raises(ValueError, match=r"endpoint_kwargs describe .*set the region and credentials on the Session"):
        SageMakerChatModel.for_front_door(FrontDoor(Runtime()), endpoint_kwargs={"CustomAttributes": "a"})


def test_without_transport_or_endpoint_it_says_what_it_needs():
    with pytest.raises(ValueError, match=r"needs where to send requests: endpoint_name and inference_component_name"):
        SageMakerChatModel(endpoint_name=ENDPOINT)
