"""A LangGraph agent served by Amazon Bedrock AgentCore Runtime, thinking with a model on your SageMaker endpoint.

AgentCore Runtime's HTTP contract: the container listens on port 8080 and answers ``GET /ping`` and
``POST /invocations`` (the JSON payload ``InvokeAgentRuntime`` was given); the runtime's session id comes in the
``X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`` header. The standard library serves it, so the image needs only
the packages in requirements.txt. Each AgentCore session runs in its own microVM for its lifetime, so the
in-memory checkpointer keeps a session's conversation, keyed by that session id as the LangGraph thread id.

The model is called through ``sagemaker_llm_cdk.agents.SageMakerChatModel`` on the inference component named by
``ENDPOINT_NAME`` / ``COMPONENT_NAME`` (``sagemaker:InvokeEndpoint`` only: the stack grants nothing else).
"""

from __future__ import annotations

import ast
import json
import logging
import operator
import os
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.messages import SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from sagemaker_llm_cdk.agents import SageMakerChatModel

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
MAX_TOKENS = int(os.environ.get("MAX_TOKENS", "4096"))
"""Tokens per model turn. Qwen3 thinks before it answers: with 1,024 a hard question can spend them all on
thinking and end with an empty answer (``finish_reason: length``), which ``answer`` reports instead of hiding."""
LOG = logging.getLogger("agent")


class PayloadError(ValueError):
    """The caller's payload is not ``{"prompt": "<text>"}``: a 400, never a model call."""


class TokenBudgetError(RuntimeError):
    """The model stopped at ``max_tokens`` before it wrote an answer."""


SYSTEM = "You are a concise assistant. Use the tools for arithmetic and for the current time."
_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
}


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression with + - * / ** and parentheses, e.g. "(3 + 4) * 2"."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.operand))
        raise ValueError(f"not arithmetic: {ast.unparse(node)}")

    try:
        return str(value(ast.parse(expression, mode="eval").body))
    except (ValueError, SyntaxError, ZeroDivisionError) as exc:
        return f"error: {exc}"


@tool
def current_time() -> str:
    """The current date and time in UTC, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")


TOOLS = [calculate, current_time]


def build_agent(model: Any) -> Any:
    """The ReAct loop: the model, then the tools while it calls them, then the model again."""
    bound = model.bind_tools(TOOLS)

    def think(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [bound.invoke([SystemMessage(SYSTEM), *state["messages"]], config)]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", think)
    graph.add_node("tools", ToolNode(TOOLS))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver())


def answer(agent: Any, payload: dict[str, Any], session_id: str) -> dict[str, Any]:
    """One invocation: ``{"prompt": "..."}`` -> ``{"answer": "...", "session_id": ...}``."""
    prompt = payload.get("prompt") if isinstance(payload, dict) else None
    if not isinstance(prompt, str) or not prompt.strip():
        raise PayloadError('the payload must be {"prompt": "<text>"}')
    result = agent.invoke({"messages": [("user", prompt)]}, {"configurable": {"thread_id": session_id}})
    last = result["messages"][-1]
    finish = (getattr(last, "response_metadata", None) or {}).get("finish_reason")
    if finish == "length" and not str(last.content).strip():
        raise TokenBudgetError(
            f"the model spent its whole max_tokens ({MAX_TOKENS}) before answering (finish_reason: length); "
            "raise MAX_TOKENS on the runtime, or ask a narrower question"
        )
    return {"answer": last.content, "session_id": session_id, "finish_reason": finish}


def handler_for(agent: Any) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/ping":
                self._send(200, {"status": "Healthy"})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:  # noqa: N802
            if self.path != "/invocations":
                self._send(404, {"error": "not found"})
                return
            try:
                try:
                    payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                except ValueError as exc:
                    raise PayloadError(f"the payload is not JSON: {exc}") from None
                self._send(200, answer(agent, payload, self.headers.get(SESSION_HEADER) or "default"))
            except PayloadError as exc:
                self._send(400, {"error": str(exc)})
            except TokenBudgetError as exc:
                self._send(502, {"error": str(exc), "finish_reason": "length"})
            except Exception as exc:  # the model or a tool failed: the caller gets a reply, never a dropped connection
                LOG.exception("invocation failed")  # the traceback, not the prompt
                self._send(502, {"error": f"the model call failed: {type(exc).__name__}: {str(exc)[:300]}"})

        def log_message(self, format: str, *args: Any) -> None:
            pass  # prompts stay out of the logs

    return Handler


def main() -> None:
    model = SageMakerChatModel.for_component(
        os.environ["ENDPOINT_NAME"],
        os.environ["COMPONENT_NAME"],
        region=os.environ.get("AWS_REGION"),
        temperature=0.2,
        max_tokens=MAX_TOKENS,
    )
    ThreadingHTTPServer(("0.0.0.0", 8080), handler_for(build_agent(model))).serve_forever()  # noqa: S104


if __name__ == "__main__":
    main()
