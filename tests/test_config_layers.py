"""Tests for constructs/sagemaker_llm_cdk/config_layers.py and the per-environment configs that use it."""
from __future__ import annotations

from pathlib import Path

import pytest

from sagemaker_llm_cdk import ConfigurationError, parse_config
from sagemaker_llm_cdk.config_layers import load_layered, load_layers, merge

ROOT = Path(__file__).resolve().parents[1]


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_merge_mappings_recursively_and_replaces_everything_else():
    base = {"a": {"x": 1, "y": [1, 2], "z": {"deep": True}}, "b": [1], "c": "keep"}
    overlay = {"a": {"y": [3], "z": {"more": 1}}, "b": [], "d": None}
    assert merge(base, overlay) == {"a": {"x": 1, "y": [3], "z": {"deep": True, "more": 1}}, "b": [], "c": "keep",
                                    "d": None}
    assert base == {"a": {"x": 1, "y": [1, 2], "z": {"deep": True}}, "b": [1], "c": "keep"}, "inputs are not changed"
    assert merge({"a": {"x": 1}}, {"a": "scalar"}) == {"a": "scalar"}


def test_file_without_extends_is_returned_as_read(tmp_path):
    path = write(tmp_path, "plain.yaml", "stack_name: A\ntags: {k: v}\n")
    layers = load_layers(path)
    assert layers.data == {"stack_name": "A", "tags": {"k": "v"}}
    assert layers.files == (path,)
    assert layers.source == str(path)


def test_chain_of_extends_relative_to_each_file(tmp_path):
    write(tmp_path, "shared/root.yaml", "stack_name: Root\ntags: {project: p, owner: o}\nendpoints: [1, 2]\n")
    write(tmp_path, "shared/base.yaml", "extends: root.yaml\ntags: {owner: team}\n")
    child = write(tmp_path, "env/dev.yaml", "extends: ../shared/base.yaml\ntags: {environment: dev}\nendpoints: [3]\n")
    layers = load_layers(child)
    assert layers.data == {"stack_name": "Root", "tags": {"project": "p", "owner": "team", "environment": "dev"},
                           "endpoints": [3]}
    assert [p.name for p in layers.files] == ["dev.yaml", "base.yaml", "root.yaml"]
    assert layers.source.startswith(f"{child} (extends ")
    assert load_layered(child) == layers.data


def test_list_of_bases_applies_left_to_right(tmp_path):
    write(tmp_path, "a.yaml", "tags: {from: a, a: 1}\n")
    write(tmp_path, "b.yaml", "tags: {from: b, b: 1}\n")
    child = write(tmp_path, "c.yaml", "extends: [a.yaml, b.yaml]\nstack_name: C\n")
    assert load_layered(child) == {"tags": {"from": "b", "a": 1, "b": 1}, "stack_name": "C"}


def test_a_cycle_is_refused_with_the_file_chain(tmp_path):
    write(tmp_path, "a.yaml", "extends: b.yaml\n")
    write(tmp_path, "b.yaml", "extends: c.yaml\n")
    write(tmp_path, "c.yaml", "extends: a.yaml\n")
    with pytest.raises(ConfigurationError) as error:
        load_layered(tmp_path / "a.yaml")
    message = str(error.value)
    assert "extends: got" in message and "break the cycle" in message
    assert f"{tmp_path / 'a.yaml'} -> {tmp_path / 'b.yaml'} -> {tmp_path / 'c.yaml'} -> {tmp_path / 'a.yaml'}" in message


def test_a_file_extending_itself_is_a_cycle(tmp_path):
    write(tmp_path, "self.yaml", "extends: ./self.yaml\n")
    with pytest.raises(ConfigurationError, match="break the cycle"):
        load_layered(tmp_path / "self.yaml")


def test_missing_base_names_the_extending_file(tmp_path):
    child = write(tmp_path, "dev.yaml", "extends: nope.yaml\n")
    with pytest.raises(ConfigurationError) as error:
        load_layered(child)
    message = str(error.value)
    assert f"problem(s) in {child} -> {tmp_path / 'nope.yaml'}" in message
    assert f"allowed: a readable YAML file; fix: check `extends` in {child}" in message


def test_missing_top_file_keeps_the_loader_message(tmp_path):
    with pytest.raises(ConfigurationError, match=r"allowed: a readable YAML file; fix: check the path .*-c config=PATH"):
        load_layered(tmp_path / "nope.yaml")


def test_syntax_error_in_a_base_names_the_chain_and_position(tmp_path):
    write(tmp_path, "base.yaml", "tags: [unclosed\n")
    child = write(tmp_path, "dev.yaml", "extends: base.yaml\n")
    with pytest.raises(ConfigurationError) as error:
        load_layered(child)
    message = str(error.value)
    assert f"in {child} -> {tmp_path / 'base.yaml'}:" in message
    assert "allowed: valid YAML" in message and "line " in message


def test_duplicate_keys_are_refused_in_every_layer(tmp_path):
    write(tmp_path, "base.yaml", "tags: {a: 1, a: 2}\n")
    child = write(tmp_path, "dev.yaml", "extends: base.yaml\n")
    with pytest.raises(ConfigurationError, match="key 'a' is given twice"):
        load_layered(child)


@pytest.mark.parametrize("value", ["[]", "3", "['']", "{file: base.yaml}"])
def test_extends_must_name_files(tmp_path, value):
    child = write(tmp_path, "dev.yaml", f"extends: {value}\n")
    with pytest.raises(ConfigurationError, match="allowed: a file name, or a non-empty list of file names"):
        load_layered(child)


def test_a_base_must_be_a_mapping(tmp_path):
    write(tmp_path, "base.yaml", "- just\n- a list\n")
    child = write(tmp_path, "dev.yaml", "extends: base.yaml\n")
    with pytest.raises(ConfigurationError, match="allowed: a mapping"):
        load_layered(child)


def test_environment_configs_share_the_base_and_validate():
    base = load_layered(ROOT / "config" / "base.yaml")
    dev = parse_config(load_layered(ROOT / "config" / "dev.yaml"), source="config/dev.yaml")
    prod = parse_config(load_layered(ROOT / "config" / "prod.yaml"), source="config/prod.yaml")
    for config, environment in ((dev, "dev"), (prod, "prod")):
        assert config.stack_name == base["stack_name"]
        assert config.tags == {**base["tags"], "environment": environment}
    assert (dev.target.account, prod.target.account) == ("111111111111", "222222222222")
    (dev_endpoint,) = dev.endpoints
    assert dev_endpoint.instance_type == "ml.g6e.12xlarge"
    assert dev_endpoint.scaling.min_instances == 0 and dev_endpoint.models[0].copies.min_copies == 0
    assert dev_endpoint.models[0].name == "qwen3-8b" and not dev.capacity_plans
    (prod_endpoint,) = prod.endpoints
    assert prod_endpoint.instance_type == "ml.p5e.48xlarge" and prod_endpoint.capacity_plan == "chat-p5e-2027q1"
    assert [plan.effective_mode for plan in prod.capacity_plans] == ["existing"], "the pipeline never buys capacity"
