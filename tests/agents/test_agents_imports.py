"""sagemaker_llm_cdk.agents stays light: importing it (and its transports) loads no framework, no aws_cdk, no jsii;
a connector whose framework is missing says which extra installs it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sagemaker_llm_cdk.agents.transport import EndpointTransport

pytestmark = pytest.mark.synth


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_the_package_and_its_transports_import_no_framework():
    result = run(
        "import sys, sagemaker_llm_cdk.agents as a, sagemaker_llm_cdk.agents.options; a.EndpointTransport\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'langchain_core', 'langgraph', 'llama_index', 'aws_cdk', 'jsii', 'pydantic'}))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "name, blocked, extra",
    [
        ("SageMakerChatModel", "langchain_core", "langchain"),
        ("SageMakerLlmCdkLLM", "llama_index", "llamaindex"),
        ("SageMakerLLM", "llama_index", "llamaindex"),
    ],
)
def test_a_missing_framework_names_the_extra(name, blocked, extra):
    result = run(
        f"import sys; sys.modules[{blocked!r}] = None\n"
        f"import sagemaker_llm_cdk.agents as a\n"
        f"try:\n    getattr(a, {name!r})\nexcept ModuleNotFoundError as e:\n    print(e)"
    )
    assert result.returncode == 0, result.stderr
    assert f"{name} needs the {extra} extra: pip install 'sagemaker-llm-cdk[{extra}]'" in result.stdout


def test_an_unknown_name_is_an_attribute_error():
    import sagemaker_llm_cdk.agents as agents

    with pytest.raises(AttributeError, match=r"has no attribute 'SageMakerEmbeddings'"):
        agents.SageMakerEmbeddings  # noqa: B018


def test_the_endpoint_transport_needs_both_names():
    with pytest.raises(ValueError, match=r"endpoint_name and component are required \(the stack prints both\)"):
        EndpointTransport("", "SageMakerLlm-qwen3-32b", runtime_client=object())
