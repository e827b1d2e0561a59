"""Chat templates rendered into text prompts, undone into chat turns: ChatML (Qwen), Llama 3 and Llama 2 /
Mistral (``[INST]``). A prompt that is not clean template turns is one user message (:func:`text_messages`).
"""

from __future__ import annotations

import re

from dataset_messages import ROLE_MAP, Message
from dataset_skips import Skip

# (turn start, end of the role header, turn end) of the chat templates undone below
_TEMPLATES = (
    ("<|im_start|>", "\n", "<|im_end|>"),  # ChatML (Qwen, many others)
    ("<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>"),  # Llama 3
)


_INST_SYSTEM = re.compile(r"<<SYS>>\n?(.*?)\n?<</SYS>>", re.S)
_SPACE = re.compile(r"\s*")


def _inst_messages(text: str) -> list[Message] | None:
    """Undo the Llama 2 chat template (also Mistral's, which has no system part) rendered into a text prompt:
    ``<s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s><s>[INST] {user} [/INST]``.

    The template puts a space around each content (``[INST] `` + content.strip() + `` [/INST]``); contents are
    stripped of it, a final assistant text (a prefill the model continued) only on its left. None (use the
    prompt as one user message) unless the whole text is clean turns. One pass over the text (positions, no
    copies of the rest), so a prompt of many turns costs what its length does."""
    messages: list[Message] = []
    size = len(text)
    at = _SPACE.match(text).end()  # type: ignore[union-attr]  # \s* always matches
    while at < size:
        if text.startswith("<s>", at):
            at = _SPACE.match(text, at + 3).end()  # type: ignore[union-attr]
        if not text.startswith("[INST]", at):
            return None  # text between turns (or after the last): not a clean template
        close = text.find("[/INST]", at + 6)
        if close < 0:
            return None
        user = text[at + 6 : close]
        if "[INST]" in user:
            return None
        user = user.strip()
        if not messages:
            system = _INST_SYSTEM.match(user)
            if system is not None:
                messages.append(("system", system.group(1).strip()))
                user = user[system.end() :].strip()
        if "<<SYS>>" in user or "<</SYS>>" in user:
            return None  # a system part anywhere but at the start of the first turn
        messages.append(("user", user))
        at = close + 7
        end = text.find("</s>", at)
        answer = text[at:] if end < 0 else text[at:end]
        if "[INST]" in answer or "[/INST]" in answer:
            return None  # a turn without its </s>
        if end >= 0:
            messages.append(("assistant", answer.strip()))
            at = _SPACE.match(text, end + 4).end()  # type: ignore[union-attr]
        else:
            if answer.strip():  # the generation prompt, with a prefill the model continued
                messages.append(("assistant", answer.lstrip()))
            at = size
    return messages if messages else None


def _templated_messages(text: str) -> list[Message] | None:
    """Undo a ChatML (Qwen), Llama 3 or Llama 2 / Mistral (``[INST]``) chat template rendered into a text prompt.

    Returns None (use the prompt as one user message) unless the whole text is clean turns.
    """
    stripped = text.lstrip()
    if stripped.startswith(("[INST]", "<s>[INST]", "<s> [INST]")):
        return _inst_messages(stripped)
    if stripped.startswith("<|begin_of_text|>"):
        stripped = stripped[len("<|begin_of_text|>") :]
    template = next((candidate for candidate in _TEMPLATES if stripped.startswith(candidate[0])), None)
    if template is None:
        return None
    start, header_end, turn_end = template
    messages: list[Message] = []
    turns = stripped.split(start)[1:]
    for index, turn in enumerate(turns):
        name, found, rest = turn.partition(header_end)
        if not found:
            return None
        role = ROLE_MAP.get(name)
        if role is None:
            if not name.isalpha() or not name.islower():
                return None
            raise Skip("unsupported_message_role")  # tool, ipython, function, ...
        content, closed, tail = rest.partition(turn_end)
        if closed:
            if tail.strip():
                return None  # text between turns: not a clean template, keep the raw prompt
            messages.append((role, content))
        elif index == len(turns) - 1 and role == "assistant":
            if content.strip():  # the generation prompt, with a prefill the model continued
                messages.append((role, content))
        else:
            return None
    if not any(role == "user" for role, _ in messages):
        return None
    return messages


def text_messages(text: str) -> tuple[list[Message], str]:
    messages = _templated_messages(text)
    if messages is None:
        messages = [("user", text)]
    return messages, text
