"""Tool calling and reasoning in serving: ``tools`` / ``reasoning`` settings, the parsers each image ships, the
defaults per architecture, and the LMI container options they render (settings/tool_calling.py)."""

from __future__ import annotations

import io
import zipfile

import pytest
from sagemaker_llm_cdk import ConfigurationError, ModelSpec
from sagemaker_llm_cdk.settings import images
from sagemaker_llm_cdk.settings.tool_calling import (
    ARCHITECTURE_DEFAULTS,
    VLLM_REASONING_PARSERS,
    VLLM_TOOL_PARSERS,
    WHEELS,
    tool_environment,
)
from support.stacks import MODEL_URI, endpoint_stack, only, template_of

from tools import vllm_parsers

pytestmark = pytest.mark.synth

QWEN = {"name": "qwen3-32b", "model_data_s3_uri": MODEL_URI, "architecture": "Qwen3ForCausalLM"}


def spec(**changes: object) -> ModelSpec:
    return ModelSpec(**{**QWEN, **changes})  # type: ignore[arg-type]


# ------------------------------------------------------------------ rendering


def test_qwen3_takes_hermes_and_qwen3_when_no_parser_is_named():
    assert tool_environment(spec(tools={}, reasoning={})) == {
        "OPTION_ENABLE_AUTO_TOOL_CHOICE": "true",
        "OPTION_TOOL_CALL_PARSER": "hermes",
        "OPTION_ENABLE_REASONING": "true",
        "OPTION_REASONING_PARSER": "qwen3",
    }


@pytest.mark.parametrize(
    "architecture, tools, reasoning",
    [
        ("LlamaForCausalLM", "llama3_json", None),
        ("GptOssForCausalLM", "openai", "openai_gptoss"),
        ("Qwen3MoeForCausalLM", "hermes", "qwen3"),
        ("MistralForCausalLM", "mistral", None),
    ],
)
def test_architecture_defaults(architecture, tools, reasoning):
    assert ARCHITECTURE_DEFAULTS[architecture][:2] == (tools, reasoning)
    environment = tool_environment(spec(architecture=architecture, tools={}))
    assert environment == {"OPTION_ENABLE_AUTO_TOOL_CHOICE": "true", "OPTION_TOOL_CALL_PARSER": tools}


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "qwen3-coder-30b", "architecture": "Qwen3MoeForCausalLM"},
        {"name": "coder", "model_data_s3_uri": "s3://team-llm-weights/Qwen3-Coder-30B-A3B-Instruct/"},
        {"name": "coder", "model_data_s3_uri": "s3://team-llm-weights/qwen3_coder_small/"},
    ],
    ids=["name", "weights", "underscore"],
)
def test_a_qwen3_coder_model_takes_its_xml_tool_parser(fields):
    """Qwen3-Coder writes tool calls as XML, which hermes (the Qwen3 architectures' default) does not read."""
    assert tool_environment(spec(tools={}, **fields))["OPTION_TOOL_CALL_PARSER"] == "qwen3_coder"


def test_only_a_qwen3_architecture_is_told_apart_by_its_name():
    llama = spec(name="qwen3-coder-lookalike", architecture="LlamaForCausalLM", tools={})
    assert tool_environment(llama)["OPTION_TOOL_CALL_PARSER"] == "llama3_json"
    named = spec(name="qwen3-coder-30b", tools={"parser": "hermes"})
    assert tool_environment(named)["OPTION_TOOL_CALL_PARSER"] == "hermes"  # a named parser still wins


def test_a_named_parser_wins_over_the_default():
    assert tool_environment(spec(tools={"parser": "qwen3_xml"}))["OPTION_TOOL_CALL_PARSER"] == "qwen3_xml"


def test_nothing_is_rendered_when_both_are_off():
    assert tool_environment(spec()) == {}


def test_the_container_gets_the_options():
    stack, endpoint = endpoint_stack(models=[spec(tools={}, reasoning={"parser": "deepseek_r1"})])
    environment = only(template_of(stack), "AWS::SageMaker::Model")["Properties"]["PrimaryContainer"]["Environment"]
    assert environment == {
        "OPTION_MODEL_ID": "/opt/ml/model",
        "OPTION_TENSOR_PARALLEL_DEGREE": "1",
        "OPTION_ENABLE_AUTO_TOOL_CHOICE": "true",
        "OPTION_TOOL_CALL_PARSER": "hermes",
        "OPTION_ENABLE_REASONING": "true",
        "OPTION_REASONING_PARSER": "deepseek_r1",
    }
    assert endpoint.models[0].environment == environment


def test_the_options_count_against_the_container_limit():
    full = {f"V{i}": "x" for i in range(96)}
    with pytest.raises(
        ConfigurationError,
        match=r"environment: got '100 variables.*at most 100|"
        r"environment: got '102 variables",
    ):
        endpoint_stack(models=[spec(tools={}, reasoning={}, environment=full)])


def test_the_same_value_in_environment_is_accepted():
    assert spec(tools={}, environment={"OPTION_TOOL_CALL_PARSER": "hermes"}).tools is not None


# ------------------------------------------------------------------ refusals, in config terms


def test_a_parser_the_image_does_not_ship_is_refused_with_the_list():
    with pytest.raises(
        ConfigurationError,
        match=r"tools\.parser: got 'hermes2'; allowed: one of the tool-call parsers "
        r"image lmi \(0\.36\.0-lmi28\.0\.0-cu130, vLLM 0\.26\) ships: .*hermes",
    ):
        spec(tools={"parser": "hermes2"})


def test_a_reasoning_parser_the_image_does_not_ship_is_refused():
    with pytest.raises(
        ConfigurationError,
        match=r"reasoning\.parser: got 'hermes'; allowed: one of the reasoning "
        r"parsers .*openai_gptoss",
    ):
        spec(reasoning={"parser": "hermes"})


def test_an_older_image_is_checked_against_its_own_vllm():
    # qwen3_xml arrived after vLLM 0.10.2 (LMI 16)
    with pytest.raises(ConfigurationError, match=r"tools\.parser: got 'qwen3_xml'.*vLLM 0\.10\.2"):
        spec(tools={"parser": "qwen3_xml"}, image="lmi:0.34.0-lmi16.0.0-cu128")
    assert spec(tools={"parser": "qwen3_xml"}, image="lmi:0.35.0-lmi17.0.0-cu128").tools is not None


def test_an_architecture_without_a_documented_default_must_name_the_parser():
    with pytest.raises(
        ConfigurationError,
        match=r"tools\.parser: got None; allowed: a tool-call parser: architecture "
        r"Gemma3ForCausalLM documents no default .*fix: set tools\.parser",
    ):
        spec(architecture="Gemma3ForCausalLM", tools={})
    with pytest.raises(
        ConfigurationError,
        match=r"reasoning\.parser: got None; allowed: a reasoning parser: "
        r"architecture LlamaForCausalLM documents no default",
    ):
        spec(architecture="LlamaForCausalLM", reasoning={})


def test_no_architecture_and_no_parser_says_to_set_either():
    with pytest.raises(ConfigurationError, match=r"tools\.parser: got None.*\(not given\).*or set architecture"):
        ModelSpec(name="m", model_data_s3_uri=MODEL_URI, tools={})


def test_a_malformed_parser_name_is_refused():
    with pytest.raises(ConfigurationError, match=r"tools\.parser: got 'herm es'; allowed: a vLLM parser name"):
        spec(tools={"parser": "herm es"})


def test_a_non_lmi_image_cannot_take_the_options():
    with pytest.raises(ConfigurationError, match=r"tools: got 'set'; allowed: an LMI image \(djl-inference\)"):
        spec(tools={"parser": "hermes"}, image="123456789012.dkr.ecr.us-east-1.amazonaws.com/tgi:3.0")


def test_an_lmi_image_of_unknown_vllm_takes_any_well_formed_name():
    custom = "123456789012.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.40.0-lmi30.0.0-cu130"
    assert (
        tool_environment(spec(tools={"parser": "future_parser"}, image=custom))["OPTION_TOOL_CALL_PARSER"]
        == "future_parser"
    )


def test_environment_that_contradicts_the_settings_is_refused():
    with pytest.raises(
        ConfigurationError,
        match=r"environment\.OPTION_TOOL_CALL_PARSER: got 'mistral'; allowed: "
        r"'hermes', which the tools settings give",
    ):
        spec(tools={}, environment={"OPTION_TOOL_CALL_PARSER": "mistral"})
    with pytest.raises(
        ConfigurationError,
        match=r"environment\.OPTION_REASONING_PARSER: got 'deepseek_r1'; allowed: "
        r"'qwen3', which the reasoning settings give",
    ):
        spec(reasoning={}, environment={"OPTION_REASONING_PARSER": "deepseek_r1"})


def test_a_config_file_reports_the_problem_at_its_path(tmp_path):
    from sagemaker_llm_cdk import load_config

    config = tmp_path / "c.yaml"
    config.write_text(
        "endpoints:\n  - name: chat\n    instance_type: ml.g6e.12xlarge\n    models:\n"
        f"      - name: qwen3\n        model_data_s3_uri: {MODEL_URI}\n        architecture: Qwen3ForCausalLM\n"
        "        tools: {parser: nope}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigurationError, match=r"endpoints\[0\]\.models\[0\]\.tools\.parser: got 'nope'"):
        load_config(config)


# ------------------------------------------------------------------ the tables and their source


def test_every_image_in_the_table_has_parser_lists():
    for image in images.LMI_IMAGES.values():
        assert image.vllm in VLLM_TOOL_PARSERS and image.vllm in VLLM_REASONING_PARSERS and image.vllm in WHEELS


def test_every_default_is_shipped_by_the_default_image():
    vllm = images.LMI_IMAGES[images.DEFAULT_LMI_TAG].vllm
    for default in ARCHITECTURE_DEFAULTS.values():
        assert default.tool_parser is None or default.tool_parser in VLLM_TOOL_PARSERS[vllm]
        assert default.reasoning_parser is None or default.reasoning_parser in VLLM_REASONING_PARSERS[vllm]
        assert default.source


def _wheel(files: dict[str, str]) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    buffer.seek(0)
    return buffer


def test_the_reader_finds_lazy_tables_and_decorators(tmp_path):
    path = tmp_path / "vllm-0.0.0-py3-none-any.whl"
    path.write_bytes(
        _wheel(
            {
                "vllm/tool_parsers/__init__.py": "_TOOL_PARSERS_TO_REGISTER = {'hermes': ('h', 'H'), 'openai': ('o', "
                "'O')}\n"
                "for n in _TOOL_PARSERS_TO_REGISTER: ToolParserManager.register_lazy_module(n)",
                "vllm/entrypoints/openai/tool_parsers/x.py": "@ToolParserManager.register_module(['llama3_json', "
                "'llama4_json'])\n"
                "class X: ...",
                "vllm/reasoning/qwen3.py": "@ReasoningParserManager.register_module('qwen3')\nclass Q: ...",
                "vllm/other.py": "_TOOL_PARSERS_TO_REGISTER = {'not_a_parser': 1}",
            }
        ).getvalue()
    )
    assert vllm_parsers.names_in_wheel(path) == {
        "tool": {"hermes", "openai", "llama3_json", "llama4_json"},
        "reasoning": {"qwen3"},
    }
