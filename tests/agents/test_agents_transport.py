"""The transports without a framework: the front door's bounded conversation memory, the component route's
runtime client (region, credentials profile) and its extra InvokeEndpoint parameters, checked on the wire."""

from __future__ import annotations

import json

import botocore.session
import pytest
from botocore.awsrequest import AWSResponse
from sagemaker_llm_cdk.agents.transport import (
    DEFAULT_MAX_CONVERSATIONS,
    ENDPOINT_KWARGS,
    EndpointTransport,
    FrontDoorTransport,
    check_endpoint_kwargs,
)
from support.agents import COMPONENT, ENDPOINT, FrontDoor, Runtime, completion
from support.aws_model import assert_valid_request


class Wire:
    """What a real botocore client sent (URL, headers, parameters), answered with one chat completion."""

    def __init__(self, client) -> None:
        self.requests: list = []
        self.params: list[dict] = []
        client.meta.events.register("provide-client-params.sagemaker-runtime.*", self._params)
        client.meta.events.register("before-send.sagemaker-runtime.*", self._send)

    def _params(self, params, model, **_):
        self.params.append((model.name, dict(params)))

    def _send(self, request, **_):
        self.requests.append(request)
        body = json.dumps(completion("Hi.")).encode()
        return AWSResponse(request.url, 200, {"content-type": "application/json"}, _Raw(body))


class _Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_):
        yield self.data

    def read(self, *_):
        data, self.data = self.data, b""
        return data

    def close(self) -> None:
        pass


@pytest.fixture
def no_aws_config(tmp_path, monkeypatch):
    """AWS config files of the test's own, and no credentials or region from the environment."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    config, credentials = tmp_path / "config", tmp_path / "credentials"
    config.write_text("[profile agents]\nregion = ap-southeast-2\n")
    credentials.write_text("[agents]\naws_access_key_id = AKIDPROFILEAGENTS\naws_secret_access_key = secret\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


# ---------------------------------------------------------------------- the front door's memory


def test_the_front_door_remembers_the_most_recently_used_conversations_only():
    transport = FrontDoorTransport(FrontDoor(Runtime()), max_conversations=2)
    a, b = transport.conversation("a"), transport.conversation("b")
    assert transport.conversation("a") is a  # "a" is now the most recently used
    c = transport.conversation("c")  # one too many: "b" is forgotten
    assert (transport.remembered, transport.forgotten) == (2, 1)
    assert transport.conversation("a") is a and transport.conversation("c") is c
    assert not b.closed  # forgotten, not closed: its session expires on its own
    assert transport.conversation("b") is not b  # a later turn of "b" starts a new conversation
    assert transport.session_of("a") is None  # never opened


def test_the_front_door_memory_is_bounded_by_default():
    transport = FrontDoorTransport(FrontDoor(Runtime()))
    assert transport.max_conversations == DEFAULT_MAX_CONVERSATIONS == 1024
    for key in range(DEFAULT_MAX_CONVERSATIONS + 50):
        transport.conversation(f"thread-{key}")
    assert transport.remembered == 1024 and transport.forgotten == 50
    assert transport.session_of("thread-0") is None


def test_close_all_closes_what_it_remembers_and_forgets_it():
    runtime = Runtime()
    transport = FrontDoorTransport(FrontDoor(runtime), max_conversations=1)
    runtime.open_session("sess-1")
    runtime.answer(completion("Hi."), session="sess-1")
    transport.complete({"messages": []}, conversation="a")
    assert transport.session_of("a") == "sess-1"
    transport.close_all()
    assert transport.remembered == 0 and transport.client.paths == ["/open", "/invoke", "/close"]
    runtime.verify()


@pytest.mark.parametrize("limit", [0, -1, True, 2.5, "10"])
def test_max_conversations_must_be_a_positive_whole_number(limit):
    with pytest.raises(ValueError, match=r"max_conversations must be a whole number of conversations, at least 1"):
        FrontDoorTransport(FrontDoor(Runtime()), max_conversations=limit)


# ---------------------------------------------------------------------- the component route's client


def test_endpoint_kwargs_are_parameters_of_both_invoke_operations_the_transport_does_not_set():
    model = botocore.session.get_session().get_service_model("sagemaker-runtime")
    for operation in ("InvokeEndpoint", "InvokeEndpointWithResponseStream"):
        members = set(model.operation_model(operation).input_shape.members)
        assert set(ENDPOINT_KWARGS) <= members
        assert not set(ENDPOINT_KWARGS) & {"EndpointName", "InferenceComponentName", "Body", "SessionId"}


def test_the_client_is_built_in_the_region_given_and_sends_the_endpoint_kwargs(no_aws_config, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENVAGENTS")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    transport = EndpointTransport(
        ENDPOINT, COMPONENT, region="eu-west-1", endpoint_kwargs={"CustomAttributes": "trace=on", "InferenceId": "i-1"}
    )
    wire = Wire(transport.runtime)
    assert transport.complete({"messages": [{"role": "user", "content": "Hi"}]})["choices"][0]["message"]
    request = wire.requests[0]
    assert request.url.startswith("https://runtime.sagemaker.eu-west-1.amazonaws.com/endpoints/SageMakerLlm-chat/")
    assert request.headers["X-Amzn-SageMaker-Custom-Attributes"] == b"trace=on"
    assert request.headers["X-Amzn-SageMaker-Inference-Id"] == b"i-1"
    operation, params = wire.params[0]
    assert operation == "InvokeEndpoint" and params["CustomAttributes"] == "trace=on"
    assert_valid_request("sagemaker-runtime", operation, params)


def test_a_credentials_profile_signs_the_calls_and_gives_its_region(no_aws_config):
    transport = EndpointTransport(ENDPOINT, COMPONENT, credentials_profile_name="agents")
    wire = Wire(transport.runtime)
    transport.complete({"messages": []})
    request = wire.requests[0]
    assert request.url.startswith("https://runtime.sagemaker.ap-southeast-2.amazonaws.com/")
    assert b"Credential=AKIDPROFILEAGENTS/" in request.headers["Authorization"]


def test_an_unknown_profile_is_named_with_the_profiles_found(no_aws_config):
    with pytest.raises(ValueError, match=r"credentials_profile_name='nope': no such profile .*profiles found: agents"):
        EndpointTransport(ENDPOINT, COMPONENT, credentials_profile_name="nope")


def test_no_region_at_all_says_how_to_give_one(no_aws_config):
    with pytest.raises(ValueError, match=r"no region: give region_name='...' \(the endpoint's region\)"):
        EndpointTransport(ENDPOINT, COMPONENT)


def test_endpoint_kwargs_go_on_the_stream_too():
    runtime = Runtime()
    runtime.stream({"choices": [{"index": 0, "delta": {"content": "Hi."}, "finish_reason": "stop"}]})
    transport = EndpointTransport(ENDPOINT, COMPONENT, runtime_client=runtime, endpoint_kwargs={"TargetVariant": "v"})
    assert [c["choices"][0]["delta"]["content"] for c in transport.stream({"messages": []})] == ["Hi."]
    assert runtime.streamed[0]["TargetVariant"] == "v"
    assert_valid_request("sagemaker-runtime", "InvokeEndpointWithResponseStream", runtime.streamed[0])
    runtime.verify()


@pytest.mark.parametrize(
    "endpoint_kwargs, message",
    [
        ({"SessionId": "s"}, r"endpoint_kwargs\['SessionId'\] cannot be set: the connector sets SessionId itself"),
        ({"InferenceComponentName": "x"}, r"endpoint_kwargs\['InferenceComponentName'\] cannot be set"),
        ({"Body": "{}"}, r"endpoint_kwargs\['Body'\] cannot be set"),
        (
            {"TargetModel": "m.tar.gz"},
            r"endpoint_kwargs\['TargetModel'\] is not accepted; allowed: CustomAttributes, InferenceId, "
            r"TargetContainerHostname, TargetVariant",
        ),
        ({"CustomAttributes": 7}, r"endpoint_kwargs\['CustomAttributes'\] must be a string, got 7"),
        (["CustomAttributes"], r"endpoint_kwargs must be a dict of InvokeEndpoint parameters"),
    ],
)
def test_endpoint_kwargs_that_conflict_or_do_not_exist_are_refused(endpoint_kwargs, message):
    with pytest.raises(ValueError, match=message):
        check_endpoint_kwargs(endpoint_kwargs)
    with pytest.raises(ValueError, match=message):
        EndpointTransport(ENDPOINT, COMPONENT, runtime_client=Runtime(), endpoint_kwargs=endpoint_kwargs)
