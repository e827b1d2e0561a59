"""The LlamaIndex connector's name and arguments: a ``class_name()`` of its own (not LlamaIndex's SageMaker LLM),
langchain-aws' argument names accepted and passed through ``for_component``, unknown arguments refused."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

from llama_index.core.base.llms.types import ChatMessage  # noqa: E402
from sagemaker_llm_cdk import agents  # noqa: E402
from sagemaker_llm_cdk.agents import SageMakerLLM, SageMakerLlmCdkLLM  # noqa: E402
from sagemaker_llm_cdk.agents.transport import FrontDoorTransport  # noqa: E402
from support.agents import COMPONENT, ENDPOINT, FrontDoor, Runtime, completion  # noqa: E402
from support.aws_model import assert_valid_request  # noqa: E402


def test_the_class_has_a_name_of_its_own_and_the_former_name_still_imports():
    assert SageMakerLlmCdkLLM.class_name() == "SageMakerLlmCdkLLM"
    assert SageMakerLlmCdkLLM.class_name() != "SageMakerLLM"  # LlamaIndex's own SageMaker LLM's class_name()
    assert SageMakerLLM is SageMakerLlmCdkLLM
    assert {"SageMakerLLM", "SageMakerLlmCdkLLM"} <= set(agents.__all__)
    llm = SageMakerLlmCdkLLM.for_component(ENDPOINT, COMPONENT, runtime_client=Runtime(), endpoint_kwargs={})
    assert llm.to_dict()["class_name"] == "SageMakerLlmCdkLLM"
    again = SageMakerLlmCdkLLM.from_dict(llm.to_dict())  # its own dump, with the transport it built, is taken back
    assert again.transport is llm.transport and again.endpoint_name == ENDPOINT


def test_for_component_takes_langchain_aws_names(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDAGENTTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    llm = SageMakerLlmCdkLLM.for_component(
        "e", "c", region_name="eu-west-1", model_kwargs={"top_k": 20}, streaming=True, endpoint_kwargs={}
    )
    assert llm.transport.runtime.meta.region_name == "eu-west-1"
    assert (llm.endpoint_name, llm.inference_component_name, llm.streaming) == ("e", "c", True)


def test_streaming_answers_chat_from_the_stream_with_model_and_endpoint_kwargs():
    runtime = Runtime()
    runtime.stream(
        {"choices": [{"index": 0, "delta": {"content": "Bon"}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {"content": "jour"}, "finish_reason": "stop"}]},
    )
    llm = SageMakerLlmCdkLLM(
        endpoint_name=ENDPOINT,
        inference_component_name=COMPONENT,
        client=runtime,
        streaming=True,
        temperature=0.2,
        model_kwargs={"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}},
        endpoint_kwargs={"InferenceId": "turn-1"},
    )
    response = llm.chat([ChatMessage(role="user", content="Hi")])
    assert response.message.content == "Bonjour"
    assert response.additional_kwargs["finish_reason"] == "stop"
    body = runtime.bodies[0]
    assert (body["stream"], body["temperature"], body["top_k"]) == (True, 0.2, 20)
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert runtime.streamed[0]["InferenceId"] == "turn-1"
    assert_valid_request("sagemaker-runtime", "InvokeEndpointWithResponseStream", runtime.streamed[0])
    runtime.verify()


def test_without_streaming_chat_is_one_buffered_call():
    runtime = Runtime()
    runtime.answer(completion("Hi."))
    llm = SageMakerLlmCdkLLM.for_component(ENDPOINT, COMPONENT, client=runtime, model_kwargs={"seed": 7})
    assert llm.chat([ChatMessage(role="user", content="Hello")]).message.content == "Hi."
    assert runtime.bodies[0]["seed"] == 7 and "stream" not in runtime.bodies[0]
    runtime.verify()


def test_for_front_door_bounds_its_conversations():
    llm = SageMakerLlmCdkLLM.for_front_door(FrontDoor(Runtime()), max_conversations=3, conversation="c")
    assert isinstance(llm.transport, FrontDoorTransport) and llm.transport.max_conversations == 3


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"profile_name": "dev"}, r"takes no argument 'profile_name' \(did you mean 'credentials_profile_name'\?\)"),
        ({"aws_region_name": "eu-west-1"}, r"takes no argument 'aws_region_name' \(did you mean 'region_name'\?\)"),
        ({"top_p": 0.9}, r"takes no argument 'top_p' \(a request field: give it as model_kwargs=\{'top_p': \.\.\.\}\)"),
        ({"colour": "red"}, r"takes no argument 'colour'\. Its own arguments: client, context_window, .*"),
        (
            {"max_tokens": 32, "model_kwargs": {"max_tokens": 64}},
            r"max_tokens is given twice: max_tokens=32 and model_kwargs\['max_tokens'\]=64",
        ),
        ({"model_kwargs": {"stream": True}}, r"model_kwargs\['stream'\] cannot be set"),
        ({"endpoint_kwargs": {"TargetModel": "m"}}, r"endpoint_kwargs\['TargetModel'\] is not accepted; allowed:"),
    ],
)
def test_for_component_refuses_what_it_cannot_use(arguments, message):
    with pytest.raises(ValueError, match=message):
        SageMakerLlmCdkLLM.for_component(ENDPOINT, COMPONENT, client=Runtime().stubbed, **arguments)


def test_client_options_with_a_front_door_are_refused():
    with pytest.raises(ValueError, match=r"credentials_profile_name describe the SageMaker runtime client"):
        SageMakerLlmCdkLLM.for_front_door(FrontDoor(Runtime()), credentials_profile_name="dev")
