"""Every mistake in one round: each shipped config with several independent mistakes of different kinds injected
at once names every one of them in the first run (parsing and type errors are per item, never all-or-nothing)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sagemaker_llm_cdk import ConfigurationError
from sagemaker_llm_cdk.config.layers import load_layered
from sagemaker_llm_cdk.config.loading import parse_config

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted(
    [ROOT / "config" / n for n in ("default.yaml", "dev.yaml", "prod.yaml")]
    + list((ROOT / "config" / "examples").glob("*.yaml")),
    key=str,
)


def _model(data: dict[str, Any]) -> dict[str, Any]:
    return data["endpoints"][0]["models"][0]


Mistake = tuple[str, Callable[[dict[str, Any]], None], str]
MISTAKES: list[Mistake] = [
    ("an enum value at the top", lambda d: d.__setitem__("removal", "delete"), "removal: got 'delete'"),
    (
        "an unknown key in an endpoint",
        lambda d: d["endpoints"][0].__setitem__("instance_typo", "ml.g5.xlarge"),
        "endpoints[0].instance_typo: got 'ml.g5.xlarge'; allowed: known keys only",
    ),
    (
        "a model that does not fit its instance",
        lambda d: _model(d).__setitem__("accelerators", 64),
        "endpoints[0].models[0].accelerators: got 64; allowed: at most",
    ),
    (
        "a duplicate name next to a field error in the same item",
        lambda d: d["endpoints"][0]["models"].append({**copy.deepcopy(_model(d)), "min_memory_mb": 1}),
        "endpoints[0].models[{last}].name: got '{name}'",
    ),
    ("the same item's field error", lambda d: None, "endpoints[0].models[{last}].min_memory_mb: got 1"),
    ("a bad tag", lambda d: d.setdefault("tags", {}).__setitem__("aws:reserved", "x"), "tags"),
]


def test_adapter_manifest_problems_come_with_a_missing_max_rank_and_the_rest(tmp_path):
    """A manifest is read while the config loads, so its problems and the model's own come in one round."""
    from sagemaker_llm_cdk.config.loading import load_config

    (tmp_path / "adapters.yaml").write_text(
        "- {name: support, artifact_s3_uri: s3://my-adapters/a.tar.gz}\n- {name: Bad Name, artifact_s3_uri: not-s3}\n"
    )
    (tmp_path / "chat.yaml").write_text(
        "removal: delete\n"
        "endpoints:\n"
        "  - name: Chat\n"
        "    instance_type: ml.g6e.12xlarge\n"
        "    models:\n"
        "      - name: qwen3-8b\n"
        "        model_data_s3_uri: s3://my-weights/qwen3-8b/\n"
        "        architecture: Qwen3ForCausalLM\n"
        "        lora: {max_gpu_adapters: 4}\n"
        "        adapters_manifest: adapters.yaml\n"
    )
    with pytest.raises(ConfigurationError) as raised:
        load_config(tmp_path / "chat.yaml")
    message = str(raised.value)
    assert "removal: got 'delete'" in message
    assert "lora.max_rank" in message
    assert "endpoints[0].models[0].adapters_manifest[1].name: got 'Bad Name'" in message
    assert "endpoints[0].models[0].adapters_manifest[1].artifact_s3_uri: got 'not-s3'" in message
    assert f"where: {tmp_path / 'adapters.yaml'}" in message


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(ROOT / "config")))
def test_every_injected_mistake_is_named_in_the_first_round(path):
    data = load_layered(path)
    for _, inject, _ in MISTAKES:
        inject(data)
    last = len(data["endpoints"][0]["models"]) - 1
    name = data["endpoints"][0]["models"][last]["name"]
    with pytest.raises(ConfigurationError) as raised:
        parse_config(data, source=path.name)
    message = str(raised.value)
    missing = [what for what, _, expected in MISTAKES if expected.format(last=last, name=name) not in message]
    assert missing == [], f"not named in the first round: {missing}\n{message}"
