"""Every problem in one round, in the user's terms: library settings, config files and the app."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from sagemaker_llm_cdk import ConfigurationError, CopyScaling, ModelSpec


def test_a_settings_model_built_in_code_raises_the_same_lines_not_a_pydantic_error():
    with pytest.raises(ConfigurationError) as caught:
        ModelSpec(name="qwen_3", model_data_s3_uri="Qwen/Qwen3-32B", copies={"min_copies": 5, "max_copies": 1})
    error = caught.value
    assert not isinstance(error, ValidationError)
    assert str(error).startswith("3 problem(s) in ModelSpec:\n")
    assert [p.path for p in error.problems] == ["name", "model_data_s3_uri", "copies.min_copies"]
    assert error.problems[1].line() == (
        "model_data_s3_uri: got 'Qwen/Qwen3-32B'; allowed: an s3:// URI; Hugging Face Hub ids are not accepted; "
        "fix: copy the model's files to S3 (for example with `huggingface-cli download` then `aws s3 sync`) and give "
        "s3://bucket/prefix/")


def test_a_nested_model_built_alone_names_its_own_fields():
    with pytest.raises(ConfigurationError, match=r"1 problem\(s\) in CopyScaling:\n  - min_copies: got 5; allowed: at "
                       r"most max_copies \(1\); fix: lower min_copies or raise max_copies"):
        CopyScaling(min_copies=5, max_copies=1)
