"""``eagle.dataset.reasoning``: which think tags the dataset builder writes a captured reply's reasoning inside,
resolved against the model's reasoning parser, and the configs it refuses."""

from __future__ import annotations

from typing import Any

import pytest
from sagemaker_llm_cdk import ConfigurationError
from sagemaker_llm_cdk.settings.eagle import EagleDataset
from support.eagle import build, lid

pytestmark = pytest.mark.synth


def convert_environment(**kwargs: Any) -> dict[str, Any]:
    built = build(**kwargs)
    function = built.resources[lid(built.stack, built.eagle.convert_function)]
    return dict(function["Properties"]["Environment"]["Variables"])


@pytest.mark.parametrize(
    ("reasoning", "dataset", "tags"),
    [
        ({}, {}, "<think>|</think>"),  # Qwen3ForCausalLM's default parser: qwen3
        ({"parser": "deepseek_r1"}, {"reasoning": "keep"}, "<think>|</think>"),
        ({}, {"reasoning": "drop"}, None),
        (None, {}, None),  # no reasoning parser: nothing to write back
        ({"parser": "granite"}, {}, None),  # a parser whose grammar is not think tags
    ],
    ids=["auto-qwen3", "keep-deepseek", "drop", "no-parser", "other-grammar"],
)
def test_the_convert_function_gets_the_models_think_tags(reasoning, dataset, tags):
    model = {} if reasoning is None else {"reasoning": reasoning}
    env = convert_environment(model=model, settings={"dataset": dataset})
    assert env.get("REASONING_TAGS") == tags


@pytest.mark.parametrize(
    ("reasoning", "match"),
    [
        (
            None,
            r"settings\.dataset\.reasoning: got 'keep'; allowed: a model whose reasoning parser .*no reasoning parser",
        ),
        ({"parser": "granite"}, r"settings\.dataset\.reasoning: got 'keep'; .*reasoning parser 'granite'"),
    ],
    ids=["no-parser", "other-grammar"],
)
def test_keep_needs_a_parser_with_known_tags(reasoning, match):
    model = {} if reasoning is None else {"reasoning": reasoning}
    with pytest.raises(ConfigurationError, match=match):
        build(model=model, settings={"dataset": {"reasoning": "keep"}})


@pytest.mark.parametrize("source", ["front_door", "s3"])
def test_reasoning_is_a_capture_setting(source):
    extra = {"s3_uri": "s3://team-datasets/chat/"} if source == "s3" else {}
    with pytest.raises(ConfigurationError, match=r"reasoning: got 'keep'; allowed: only with source capture"):
        EagleDataset(source=source, reasoning="keep", **extra)
    assert EagleDataset(source=source, **extra).reasoning == "auto"
