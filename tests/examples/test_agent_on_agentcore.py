"""The AgentCore example's agent (examples/agent_on_agentcore/agent/agent.py), run offline: its HTTP contract
(``GET /ping``, ``POST /invocations`` with the runtime's session header) and its two-tool loop on the connector,
the SageMaker runtime stubbed (tests/support/agents.py)."""

from __future__ import annotations

import importlib.util
import json
import threading
import urllib.request
from http.server import ThreadingHTTPServer

import pytest

pytest.importorskip("langgraph")

from sagemaker_llm_cdk.agents import SageMakerChatModel
from support.agents import COMPONENT, ENDPOINT, Runtime, call, completion
from support.examples import EXAMPLES


def load_agent():
    spec = importlib.util.spec_from_file_location(
        "agentcore_example_agent", EXAMPLES / "agent_on_agentcore" / "agent" / "agent.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


agent_module = load_agent()


def test_the_tools():
    assert agent_module.calculate.invoke({"expression": "(3 + 4) * 2 ** 2"}) == "28"
    assert agent_module.calculate.invoke({"expression": "__import__('os')"}).startswith("error: not arithmetic")
    assert agent_module.current_time.invoke({}).endswith("+00:00")


def test_invocations_run_the_loop_and_keep_the_session_as_the_thread():
    runtime = Runtime()
    runtime.answer(completion(None, tool_calls=[call("calculate", {"expression": "17 * 23"}, "c1")]))
    runtime.answer(completion("17 * 23 = 391."))
    runtime.answer(completion("You asked about 17 * 23."))
    agent = agent_module.build_agent(SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=runtime))
    server = ThreadingHTTPServer(("127.0.0.1", 0), agent_module.handler_for(agent))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    session = "a" * 33

    def invoke(payload: dict) -> tuple[int, dict]:
        request = urllib.request.Request(
            base + "/invocations",
            data=json.dumps(payload).encode(),
            method="POST",
            headers={"Content-Type": "application/json", agent_module.SESSION_HEADER: session},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    try:
        with urllib.request.urlopen(base + "/ping", timeout=10) as ping:
            assert json.loads(ping.read()) == {"status": "Healthy"}
        assert invoke({"prompt": "What is 17 * 23?"}) == (
            200,
            {"answer": "17 * 23 = 391.", "session_id": session, "finish_reason": "stop"},
        )
        assert invoke({"prompt": "What did I ask?"})[1]["answer"] == "You asked about 17 * 23."
        assert invoke({"text": "no prompt"}) == (400, {"error": 'the payload must be {"prompt": "<text>"}'})
    finally:
        server.shutdown()
    turns = runtime.bodies
    assert turns[0]["messages"][0]["role"] == "system" and [t["function"]["name"] for t in turns[0]["tools"]] == [
        "calculate",
        "current_time",
    ]
    # the session's second question carries its first exchange (the checkpointer, keyed by the session id)
    assert [m["role"] for m in turns[2]["messages"]] == ["system", "user", "assistant", "tool", "assistant", "user"]
    runtime.verify()


def _serve(agent) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), agent_module.handler_for(agent))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _post(base: str, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(
        base + "/invocations", data=body, method="POST", headers={agent_module.SESSION_HEADER: "b" * 33}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_failing_model_call_is_a_502_reply_not_a_dropped_connection():
    runtime = Runtime()
    runtime.stubber.add_client_error(
        "invoke_endpoint",
        service_error_code="ModelError",
        service_message="Received server error (500)",
        http_status_code=424,
    )
    agent = agent_module.build_agent(SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=runtime))
    server, base = _serve(agent)
    try:
        status, body = _post(base, json.dumps({"prompt": "What is 17 * 23?"}).encode())
        assert status == 502
        assert body["error"].startswith("the model call failed: ") and "ModelError" in body["error"]
        assert _post(base, b"{not json") == (400, {"error": body_error(b"{not json")})
    finally:
        server.shutdown()


def body_error(raw: bytes) -> str:
    try:
        json.loads(raw)
    except ValueError as exc:
        return f"the payload is not JSON: {exc}"
    raise AssertionError("valid JSON")


def test_an_answer_cut_at_max_tokens_is_reported_not_returned_empty():
    runtime = Runtime()
    runtime.answer(completion("", finish_reason="length"))
    agent = agent_module.build_agent(SageMakerChatModel.for_component(ENDPOINT, COMPONENT, runtime_client=runtime))
    server, base = _serve(agent)
    try:
        status, body = _post(base, json.dumps({"prompt": "Prove it."}).encode())
    finally:
        server.shutdown()
    assert status == 502 and body["finish_reason"] == "length"
    budget = agent_module.MAX_TOKENS
    assert body["error"].startswith(f"the model spent its whole max_tokens ({budget}) before answering")
