"""LLM request shapes read as chat turns: OpenAI chat completions, text prompts (``prompt``, ``inputs``,
``text_inputs``, ``text``, with a rendered chat template undone), chat messages passed as ``inputs``, JumpStart
Llama 2 dialogs and Hugging Face conversational inputs; and whether the request asks for the prompt to be echoed
in the response (:func:`echoes_prompt`).
"""

from __future__ import annotations

from typing import Any

from dataset_messages import Message, chat_messages
from dataset_skips import Skip
from dataset_templates import text_messages


def echoes_prompt(request: Any) -> bool | None:
    """What the request says about prompt echo: ``return_full_text`` (in ``parameters`` as LMI and
    TGI take it, or at the top level as Hugging Face pipelines do). ``None`` when it says nothing."""
    if not isinstance(request, dict):
        return None
    parameters = request.get("parameters")
    value = parameters.get("return_full_text") if isinstance(parameters, dict) else None
    if value is None:
        value = request.get("return_full_text")
    return value if isinstance(value, bool) else None


def request_to_messages(request: Any) -> tuple[list[Message], str | None]:
    """Known LLM request shapes -> ([(role, content)...], raw prompt text or None).

    The prompt text is returned so a response that echoes it can be trimmed; it is ``None``
    when the request says ``return_full_text: false`` (the response is then never an echo).
    Raises ``Skip`` with the reason when the request is not usable.
    """
    if isinstance(request, str):
        if not request:
            raise Skip("unsupported_request_shape")
        return text_messages(request)  # a bare text prompt carries no return_full_text
    if not isinstance(request, dict):
        raise Skip("unsupported_request_shape")
    if "messages" in request:  # OpenAI chat completions (also LMI/TGI Messages API)
        return chat_messages(request["messages"]), None
    for key in ("prompt", "inputs", "text_inputs", "text"):
        if key not in request:
            continue
        value = request[key]
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
            value = value[0]
        if isinstance(value, str) and value:
            messages, prompt = text_messages(value)
            return messages, (None if echoes_prompt(request) is False else prompt)
        if (
            key == "inputs"
            and isinstance(value, list)
            and value
            and all(isinstance(v, dict) and "role" in v for v in value)
        ):
            return chat_messages(value), None  # chat messages passed as "inputs"
        if key == "inputs" and isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
            return chat_messages(value[0]), None  # JumpStart Llama 2 chat: a batch of one dialog
        if key == "inputs" and isinstance(value, dict):
            return _hf_conversation(value), None
        raise Skip("unsupported_request_shape")  # token ids, batches, empty prompts
    raise Skip("unsupported_request_shape")


def _hf_conversation(inputs: dict[str, Any]) -> list[Message]:
    """HuggingFace conversational pipeline inputs: past_user_inputs/generated_responses/text."""
    users = inputs.get("past_user_inputs") or []
    answers = inputs.get("generated_responses") or []
    text = inputs.get("text")
    if (
        not isinstance(text, str)
        or not isinstance(users, list)
        or not isinstance(answers, list)
        or len(users) != len(answers)
    ):
        raise Skip("unsupported_request_shape")
    messages: list[Message] = []
    for user, answer in zip(users, answers, strict=True):
        if not isinstance(user, str) or not isinstance(answer, str):
            raise Skip("unsupported_request_shape")
        messages += [("user", user), ("assistant", answer)]
    messages.append(("user", text))
    return messages
