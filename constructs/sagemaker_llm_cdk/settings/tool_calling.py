"""Tool calling and reasoning output of a served model: the settings, the parsers each image ships, the defaults.

vLLM turns a model's raw text into OpenAI-style ``tool_calls`` and a separate ``reasoning`` (``reasoning_content``
before vLLM 0.26) only
when it is started with a tool-call parser and a reasoning parser named for the model's output format.
The LMI container passes them on from its options (djl-serving's ``VllmRbProperties``:
``enable_auto_tool_choice``, ``tool_call_parser``, ``enable_reasoning``, ``reasoning_parser``, set as
``OPTION_ENABLE_AUTO_TOOL_CHOICE``, ``OPTION_TOOL_CALL_PARSER``, ``OPTION_ENABLE_REASONING``,
``OPTION_REASONING_PARSER``). A name vLLM does not register makes the container fail at start-up, after
the instances are bought and the deploy has waited for them, so every name is checked here against the
parsers the model's image ships.

Sources. ``VLLM_TOOL_PARSERS`` and ``VLLM_REASONING_PARSERS`` are the names registered with vLLM's
``ToolParserManager`` and ``ReasoningParserManager`` in the PyPI wheels of each vLLM release the LMI
images in ``images.LMI_IMAGES`` run (``_TOOL_PARSERS_TO_REGISTER`` in ``vllm/tool_parsers/__init__.py`` and
``_REASONING_PARSERS_TO_REGISTER`` in ``vllm/reasoning/__init__.py`` for 0.26.0; the
``register_module`` decorators of ``vllm/entrypoints/openai/tool_parsers/`` and ``vllm/reasoning/`` for
0.10.2, 0.11.1 and 0.12.0), read with ``python -m tools.vllm_parsers <wheel>``; ``WHEELS`` records each
wheel's SHA-256. The option names come from djl-serving's ``vllm_rb_properties.py`` and
``lmi_vllm/vllm_async_service.py`` (the async engine, LMI's default, hands ``tool_call_parser`` and
``reasoning_parser`` to vLLM's ``OpenAIServingChat``; the rolling-batch engine builds the reasoning parser
only with ``enable_reasoning``, which also makes djl-serving check the name when the model loads).

Defaults. ``ARCHITECTURE_DEFAULTS`` holds the parser a model family documents for itself, each with where
it is written; ``tools: {}`` or ``reasoning: {}`` without a parser takes it, and a family with none must name
one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, NamedTuple

from pydantic import Field

from ..core.errors import ConfigurationError, Problem
from ..core.settings import Settings, field_rule
from . import images

if TYPE_CHECKING:
    from .model import ModelSpec

VLLM_TOOL_PARSERS: dict[str, frozenset[str]] = {
    "0.10.2": frozenset(
        {
            "deepseek_v3",
            "deepseek_v31",
            "glm45",
            "granite",
            "granite-20b-fc",
            "hermes",
            "hunyuan_a13b",
            "internlm",
            "jamba",
            "kimi_k2",
            "llama3_json",
            "llama4_json",
            "llama4_pythonic",
            "minimax",
            "mistral",
            "openai",
            "phi4_mini_json",
            "pythonic",
            "qwen3_coder",
            "seed_oss",
            "step3",
            "xlam",
        }
    ),
    "0.11.1": frozenset(
        {
            "deepseek_v3",
            "deepseek_v31",
            "ernie45",
            "glm45",
            "granite",
            "granite-20b-fc",
            "hermes",
            "hunyuan_a13b",
            "internlm",
            "jamba",
            "kimi_k2",
            "llama3_json",
            "llama4_json",
            "llama4_pythonic",
            "longcat",
            "minimax",
            "minimax_m2",
            "mistral",
            "olmo3",
            "openai",
            "phi4_mini_json",
            "pythonic",
            "qwen3_coder",
            "qwen3_xml",
            "seed_oss",
            "step3",
            "xlam",
        }
    ),
    "0.12.0": frozenset(
        {
            "deepseek_v3",
            "deepseek_v31",
            "ernie45",
            "glm45",
            "granite",
            "granite-20b-fc",
            "hermes",
            "hunyuan_a13b",
            "internlm",
            "jamba",
            "kimi_k2",
            "llama3_json",
            "llama4_json",
            "llama4_pythonic",
            "longcat",
            "minimax",
            "minimax_m2",
            "mistral",
            "olmo3",
            "openai",
            "phi4_mini_json",
            "pythonic",
            "qwen3_coder",
            "qwen3_xml",
            "seed_oss",
            "step3",
            "xlam",
        }
    ),
    "0.26": frozenset(
        {
            "apertus",
            "cohere_command3",
            "cohere_command4",
            "deepseek_v3",
            "deepseek_v31",
            "deepseek_v32",
            "deepseek_v4",
            "ernie45",
            "functiongemma",
            "gemma4",
            "gigachat3",
            "glm45",
            "glm47",
            "granite",
            "granite-20b-fc",
            "granite4",
            "hermes",
            "hunyuan_a13b",
            "hy_v3",
            "inkling",
            "internlm",
            "jamba",
            "kimi_k2",
            "lfm2",
            "llama3_json",
            "llama4_json",
            "llama4_pythonic",
            "longcat",
            "mimo",
            "minicpm5",
            "minimax_m2",
            "minimax_m3",
            "mistral",
            "olmo3",
            "openai",
            "phi4_mini_json",
            "poolside_v1",
            "pythonic",
            "qwen3_coder",
            "qwen3_xml",
            "seed_oss",
            "step3",
            "step3p5",
            "xlam",
        }
    ),
}
"""Tool-call parser names each vLLM release registers, by the ``vllm`` version ``images.LMI_IMAGES`` gives."""

THINK_TAGS: dict[str, tuple[str, str]] = {
    "deepseek_r1": ("<think>", "</think>"),
    "qwen3": ("<think>", "</think>"),
    "glm45": ("<think>", "</think>"),
}
"""Reasoning parsers that take the reasoning from between two tags of the generated text (vLLM's
``DeepSeekR1ReasoningParser``, ``Qwen3ReasoningParser`` and ``Glm4MoeModelReasoningParser``: start and end tokens
``<think>`` and ``</think>``), so an EAGLE dataset can write it back where the model generated it
(``eagle.dataset.reasoning``). Parsers of other grammars (channels, ``[THINK]`` tokens) are not listed."""

VLLM_REASONING_PARSERS: dict[str, frozenset[str]] = {
    "0.10.2": frozenset(
        {"deepseek_r1", "glm45", "granite", "hunyuan_a13b", "mistral", "openai_gptoss", "qwen3", "step3"}
    ),
    "0.11.1": frozenset(
        {
            "deepseek_r1",
            "deepseek_v3",
            "ernie45",
            "glm45",
            "granite",
            "hunyuan_a13b",
            "kimi_k2",
            "minimax_m2",
            "minimax_m2_append_think",
            "mistral",
            "olmo3",
            "openai_gptoss",
            "qwen3",
            "seed_oss",
            "step3",
        }
    ),
    "0.12.0": frozenset(
        {
            "deepseek_r1",
            "deepseek_v3",
            "ernie45",
            "glm45",
            "granite",
            "hunyuan_a13b",
            "kimi_k2",
            "minimax_m2",
            "minimax_m2_append_think",
            "mistral",
            "olmo3",
            "openai_gptoss",
            "qwen3",
            "seed_oss",
            "step3",
        }
    ),
    "0.26": frozenset(
        {
            "cohere_command3",
            "cohere_command4",
            "deepseek_r1",
            "deepseek_v3",
            "deepseek_v4",
            "ernie45",
            "gemma4",
            "glm45",
            "glm47",
            "granite",
            "holo2",
            "hunyuan_a13b",
            "hy_v3",
            "inkling",
            "kimi_k2",
            "mimo",
            "minimax_m2",
            "minimax_m2_append_think",
            "minimax_m3",
            "mistral",
            "nemotron_v3",
            "olmo3",
            "openai_gptoss",
            "poolside_v1",
            "qwen3",
            "seed_oss",
            "step3",
            "step3p5",
        }
    ),
}
"""Reasoning parser names each vLLM release registers, by the ``vllm`` version ``images.LMI_IMAGES`` gives."""

WHEELS: dict[str, str] = {
    "0.10.2": "vllm-0.10.2-cp38-abi3-manylinux1_x86_64.whl "
    "sha256:e0cba6110483d9bf25c4402d8655cf78d366dd13e4155210980cc3480ed98b7b",
    "0.11.1": "vllm-0.11.1-cp38-abi3-manylinux1_x86_64.whl "
    "sha256:077da60655466bab811f006ef93b90d45322e49fa0f204ffac6d48c32866b6d1",
    "0.12.0": "vllm-0.12.0-cp38-abi3-manylinux_2_31_x86_64.whl "
    "sha256:596673edcac5ea8ab8cb2d9b0200052978cd91d78a054926d9d0c6895d34237f",
    "0.26": "vllm-0.26.0-cp38-abi3-manylinux_2_28_x86_64.whl "
    "sha256:adb1e4c9b46d0dfdb094121ae5aad670a42412dd813ed4e5db069ed6a15006de",
}
"""The PyPI wheel each parser list was read from (``python -m tools.vllm_parsers <wheel>``)."""


class ArchitectureDefault(NamedTuple):
    """The parsers a model family documents for vLLM, and where it says so."""

    tool_parser: str | None
    reasoning_parser: str | None
    source: str


ARCHITECTURE_DEFAULTS: dict[str, ArchitectureDefault] = {
    "Qwen3ForCausalLM": ArchitectureDefault(
        "hermes",
        "qwen3",
        "Qwen's vLLM deployment guide (--enable-auto-tool-choice --tool-call-parser hermes) and "
        "vLLM's reasoning-outputs page (Qwen3 series: qwen3)",
    ),
    "Qwen3MoeForCausalLM": ArchitectureDefault(
        "hermes", "qwen3", "as Qwen3ForCausalLM: the Qwen3 MoE models share its chat template"
    ),
    "Qwen2ForCausalLM": ArchitectureDefault(
        "hermes", None, "Qwen's vLLM deployment guide (Qwen2.5: hermes); Qwen2.5 has no reasoning output"
    ),
    "LlamaForCausalLM": ArchitectureDefault(
        "llama3_json",
        None,
        "djl-serving's tool-calling guide and vLLM's tool-calling page (Llama 3.1/3.2: "
        "llama3_json); Llama 3 has no reasoning output",
    ),
    "MistralForCausalLM": ArchitectureDefault(
        "mistral",
        None,
        "djl-serving's integration test for Mistral 7B Instruct v0.3 and vLLM's tool-calling page (mistral)",
    ),
    "GptOssForCausalLM": ArchitectureDefault(
        "openai", "openai_gptoss", "vLLM's GPT-OSS recipe (--tool-call-parser openai --reasoning-parser openai_gptoss)"
    ),
}
"""Default parsers per Hugging Face architecture, used when a model sets ``tools: {}`` / ``reasoning: {}``."""

_PARSER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
PARSER_NAME_PATTERN = _PARSER_NAME.pattern


def _parser_name_problem(value: str) -> Problem | None:
    if _PARSER_NAME.match(value):
        return None
    return Problem(
        "",
        value,
        "a vLLM parser name: letters, digits, '_', '.', '-', at most 64 characters (e.g. hermes)",
        "copy the name from the list vLLM registers (settings/tool_calling.py)",
    )


class ToolCalling(Settings):
    """Tool (function) calling: vLLM parses the model's tool-call text into OpenAI ``tool_calls``.

    Sets ``OPTION_ENABLE_AUTO_TOOL_CHOICE=true`` (requests may send ``tool_choice: auto``) and
    ``OPTION_TOOL_CALL_PARSER``. The model's chat template must render tools (Qwen3's, Llama 3.1's and
    GPT-OSS's do; give another with ``environment: {OPTION_CHAT_TEMPLATE: ...}``).
    """

    parser: Annotated[
        str | None,
        field_rule(_parser_name_problem),
        Field(
            json_schema_extra={"pattern": PARSER_NAME_PATTERN},
            description=(
                "vLLM's tool-call parser for the model's output format, one the image's vLLM registers (vLLM 0.26: "
                "hermes, llama3_json, mistral, openai, pythonic, qwen3_coder, qwen3_xml, ...). Default: the one the "
                "model's architecture documents (Qwen3 and Qwen2.5: hermes, Llama 3: llama3_json, Mistral: mistral, "
                "GPT-OSS: openai); other architectures must name one."
            ),
        ),
    ] = None


class Reasoning(Settings):
    """Reasoning output: vLLM splits the model's thinking into ``reasoning``, apart from ``content``.

    Sets ``OPTION_ENABLE_REASONING=true`` and ``OPTION_REASONING_PARSER``. Agents then see the answer and tool
    calls without the thinking text; the EAGLE dataset builder writes the thinking back inside the model's think
    tags, where the model generated it, for the parsers of ``THINK_TAGS`` (``eagle.dataset.reasoning``).
    """

    parser: Annotated[
        str | None,
        field_rule(_parser_name_problem),
        Field(
            json_schema_extra={"pattern": PARSER_NAME_PATTERN},
            description=(
                "vLLM's reasoning parser, one the image's vLLM registers (vLLM 0.26: qwen3, deepseek_r1, "
                "openai_gptoss, mistral, granite, ...). Default: the one the model's architecture documents (Qwen3: "
                "qwen3, GPT-OSS: openai_gptoss); other architectures must name one."
            ),
        ),
    ] = None


def tool_parsers_of(spec: ModelSpec) -> tuple[frozenset[str], frozenset[str]] | None:
    """The tool-call and reasoning parser names the model's image ships; None when its vLLM is unknown."""
    image = images.lmi_image(images.tag_of(spec.image))
    if image is None or image.vllm not in VLLM_TOOL_PARSERS:
        return None
    return VLLM_TOOL_PARSERS[image.vllm], VLLM_REASONING_PARSERS[image.vllm]


QWEN3_CODER_PARSER = "qwen3_coder"
"""The tool-call parser of the Qwen3-Coder models, whose tool calls are XML (``<tool_call><function=...>``), not
the JSON the hermes parser reads: Qwen's Qwen3-Coder model cards serve them with ``--tool-call-parser
qwen3_coder``. They share the Qwen3 architectures, so the model is told apart by its name."""
_QWEN3_CODER = re.compile(r"qwen3[-_]?coder", re.IGNORECASE)


def is_qwen3_coder(spec: ModelSpec) -> bool:
    """A Qwen3 architecture whose name, JumpStart model id or weights location says Qwen3-Coder."""
    if spec.architecture not in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM"):
        return False
    names = (spec.name, getattr(spec, "model_id", None), getattr(spec, "model_data_s3_uri", None))
    return any(isinstance(n, str) and _QWEN3_CODER.search(n) for n in names)


def tool_parser(spec: ModelSpec) -> str | None:
    """The tool-call parser the model runs: ``tools.parser``, else ``qwen3_coder`` for a Qwen3-Coder model
    (``is_qwen3_coder``), else its architecture's default; None when off."""
    if spec.tools is None:
        return None
    if spec.tools.parser:
        return spec.tools.parser
    if is_qwen3_coder(spec):
        return QWEN3_CODER_PARSER
    default = ARCHITECTURE_DEFAULTS.get(spec.architecture or "")
    return default.tool_parser if default else None


def reasoning_parser(spec: ModelSpec) -> str | None:
    """The reasoning parser the model runs: ``reasoning.parser``, else its architecture's default; None when off."""
    if spec.reasoning is None:
        return None
    default = ARCHITECTURE_DEFAULTS.get(spec.architecture or "")
    return spec.reasoning.parser or (default.reasoning_parser if default else None)


def tool_calling_problems(spec: ModelSpec, *, image_known: bool = True) -> list[Problem]:
    """What is wrong with ``spec.tools`` and ``spec.reasoning``, in config terms (paths are the model's fields).

    ``image_known`` False (a JumpStart model before its lock is read) checks only what does not depend on the
    image; ``tool_environment`` checks the rest once the image is known.
    """
    problems: list[Problem] = []
    if spec.tools is None and spec.reasoning is None:
        return problems
    if image_known and not spec.is_lmi:
        for field in ("tools", "reasoning"):
            if getattr(spec, field) is not None:
                problems.append(
                    Problem(
                        field,
                        "set",
                        f"an LMI image (djl-inference): {field} sets the LMI container's "
                        f"vLLM options, which {spec.image} does not read",
                        f"use image: lmi, or remove {field} and configure the container through environment",
                    )
                )
        return problems
    shipped = tool_parsers_of(spec) if image_known else None
    image = images.lmi_image(images.tag_of(spec.image))
    what = f"{spec.image} ({image.tag}, vLLM {image.vllm})" if image else spec.image
    for field, chosen, kind, index in (
        ("tools", tool_parser(spec), "tool-call", 0),
        ("reasoning", reasoning_parser(spec), "reasoning", 1),
    ):
        if getattr(spec, field) is None:
            continue
        if chosen is None:
            defaults: dict[str, str] = {}
            for arch, default in ARCHITECTURE_DEFAULTS.items():
                name = default.tool_parser if index == 0 else default.reasoning_parser
                if name:
                    defaults[arch] = name
            families = ", ".join(f"{arch}: {name}" for arch, name in defaults.items())
            documented = sorted(set(defaults.values()))
            problems.append(
                Problem(
                    f"{field}.parser",
                    None,
                    f"a {kind} parser: architecture {spec.architecture or '(not given)'} documents no "
                    f"default (defaults exist for {families})",
                    f"set {field}.parser (e.g. {', '.join(documented)})"
                    + ("" if spec.architecture else ", or set architecture"),
                )
            )
            continue
        if shipped is not None and chosen not in shipped[index]:
            problems.append(
                Problem(
                    f"{field}.parser",
                    chosen,
                    f"one of the {kind} parsers image {what} ships: " + ", ".join(sorted(shipped[index])),
                    f"pick a listed parser, or an image whose vLLM has {chosen}",
                )
            )
    return problems


def tool_environment(spec: ModelSpec) -> dict[str, str]:
    """The LMI container variables for ``spec.tools`` and ``spec.reasoning`` (nothing when both are off).

    Raises ``ConfigurationError`` for a parser the (now known) image does not ship: a JumpStart model's image
    is only known once its lock entry is read.
    """
    if spec.tools is None and spec.reasoning is None:
        return {}
    problems = tool_calling_problems(spec)
    if problems:
        raise ConfigurationError(problems, source=spec.name)
    environment: dict[str, str] = {}
    tools, reasoning = tool_parser(spec), reasoning_parser(spec)
    if tools is not None:
        environment.update({"OPTION_ENABLE_AUTO_TOOL_CHOICE": "true", "OPTION_TOOL_CALL_PARSER": tools})
    if reasoning is not None:
        environment.update({"OPTION_ENABLE_REASONING": "true", "OPTION_REASONING_PARSER": reasoning})
    return environment
