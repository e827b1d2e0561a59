"""Tests for constructs/sagemaker_llm_cdk/config_layers.py and the per-environment configs that use it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sagemaker_llm_cdk import ConfigurationError, parse_config
from sagemaker_llm_cdk.config.layers import load_layered, load_layers, merge

ROOT = Path(__file__).resolve().parents[2]


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_merge_mappings_recursively_and_replaces_everything_else():
    base = {"a": {"x": 1, "y": [1, 2], "z": {"deep": True}}, "b": [1], "c": "keep"}
    overlay = {"a": {"y": [3], "z": {"more": 1}}, "b": [], "d": None}
    assert merge(base, overlay) == {
        "a": {"x": 1, "y": [3], "z": {"deep": True, "more": 1}},
        "b": [],
        "c": "keep",
        "d": None,
    }
    assert base == {"a": {"x": 1, "y": [1, 2], "z": {"deep": True}}, "b": [1], "c": "keep"}, "inputs are not changed"
    assert merge({"a": {"x": 1}}, {"a": "scalar"}) == {"a": "scalar"}


def test_file_without_extends_is_returned_as_read(tmp_path):
    path = write(tmp_path, "plain.yaml", "stack_name: A\ntags: {k: v}\n")
    layers = load_layers(path)
    assert layers.data == {"stack_name": "A", "tags": {"k": "v"}}
    assert layers.files == (path,)
    assert layers.source == str(path)


def test_chain_of_extends_relative_to_each_file(tmp_path):
    write(tmp_path, "shared/root.yaml", "stack_name: Root\ntags: {project: p, owner: o}\nextra: [1, 2]\n")
    write(tmp_path, "shared/base.yaml", "extends: root.yaml\ntags: {owner: team}\n")
    child = write(tmp_path, "env/dev.yaml", "extends: ../shared/base.yaml\ntags: {environment: dev}\nextra: [3]\n")
    layers = load_layers(child)
    assert layers.data == {
        "stack_name": "Root",
        "tags": {"project": "p", "owner": "team", "environment": "dev"},
        "extra": [3],
    }
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
    assert (
        f"{tmp_path / 'a.yaml'} -> {tmp_path / 'b.yaml'} -> {tmp_path / 'c.yaml'} -> {tmp_path / 'a.yaml'}" in message
    )


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
    with pytest.raises(
        ConfigurationError, match=r"allowed: a readable YAML file; fix: check the path .*-c config=PATH"
    ):
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


# ------------------------------------------------------------------ lists of named items merge by name
BASE = """
endpoints:
  - name: Chat
    instance_type: ml.p5e.48xlarge
    scaling: {min_instances: 1, max_instances: 2}
    models:
      - name: big
        accelerators: 2
        adapters:
          - {name: big-support, artifact_s3_uri: s3://a/support.tar.gz}
          - {name: big-sql, artifact_s3_uri: s3://a/sql.tar.gz}
      - name: small
        accelerators: 1
  - name: Batch
    instance_type: ml.g6e.12xlarge
capacity_plans:
  - {name: plan-a, instance_type: ml.p5e.48xlarge, instance_count: 2}
  - {existing_plan_arn: "arn:aws:sagemaker:us-east-1:123456789012:training-plan/unnamed", instance_count: 1}
"""


def layered(tmp_path, overlay: str):
    write(tmp_path, "base.yaml", BASE)
    return load_layered(write(tmp_path, "env.yaml", "extends: base.yaml\n" + overlay))


def test_named_items_merge_by_name_at_every_level(tmp_path):
    data = layered(
        tmp_path,
        """
endpoints:
  - name: Chat
    scaling: {max_instances: 4}
    models:
      - name: big
        adapters:
          - {name: big-sql, artifact_s3_uri: s3://b/sql-v2.tar.gz}
          - {name: big-code, artifact_s3_uri: s3://b/code.tar.gz}
  - name: Extra
    instance_type: ml.g5.12xlarge
capacity_plans:
  - {name: plan-a, instance_count: 4}
""",
    )
    chat, batch, extra = data["endpoints"]
    assert chat["instance_type"] == "ml.p5e.48xlarge" and chat["scaling"] == {"min_instances": 1, "max_instances": 4}
    big, small = chat["models"]
    assert (big["name"], big["accelerators"], small["name"]) == ("big", 2, "small")
    assert big["adapters"] == [
        {"name": "big-support", "artifact_s3_uri": "s3://a/support.tar.gz"},
        {"name": "big-sql", "artifact_s3_uri": "s3://b/sql-v2.tar.gz"},
        {"name": "big-code", "artifact_s3_uri": "s3://b/code.tar.gz"},
    ], "base order, new appended"
    assert batch == {"name": "Batch", "instance_type": "ml.g6e.12xlarge"}
    assert extra == {"name": "Extra", "instance_type": "ml.g5.12xlarge"}
    plan, unnamed = data["capacity_plans"]
    assert plan == {"name": "plan-a", "instance_type": "ml.p5e.48xlarge", "instance_count": 4}
    assert "existing_plan_arn" in unnamed, "an item without a name is kept"


def test_delete_removes_an_item_and_replace_swaps_it_whole(tmp_path):
    data = layered(
        tmp_path,
        """
endpoints:
  - {name: Batch, $delete: true}
  - name: Chat
    models:
      - {name: small, $delete: true}
      - name: big
        $replace: true
        accelerators: 8
""",
    )
    (chat,) = data["endpoints"]
    assert chat["models"] == [{"name": "big", "accelerators": 8}], "replaced whole: its adapters are gone too"
    assert "$delete" not in str(data) and "$replace" not in str(data)


def test_other_lists_still_replace(tmp_path):
    write(tmp_path, "base.yaml", "checks: {nag_warning_packs: [serverless]}\nendpoints: [{name: A, tags: [x, y]}]\n")
    data = load_layered(
        write(
            tmp_path,
            "env.yaml",
            "extends: base.yaml\nchecks: {nag_warning_packs: []}\nendpoints: [{name: A, tags: [z]}]\n",
        )
    )
    assert data == {"checks": {"nag_warning_packs": []}, "endpoints": [{"name": "A", "tags": ["z"]}]}


@pytest.mark.parametrize(
    ("overlay", "message"),
    [
        (
            "endpoints: [{name: Nope, $delete: true}]",
            r"endpoints\[0\]\.name: got 'Nope'; allowed: a name in the list it extends: Chat, Batch; "
            r"fix: correct the name, or remove the \$delete item",
        ),
        (
            "endpoints: [{name: Chat, $delete: true, instance_type: ml.g5.xlarge}]",
            r"endpoints\[0\]\.instance_type: got 'ml.g5.xlarge'; allowed: \{name: Chat, \$delete: true\} "
            r"and nothing else; fix: remove instance_type",
        ),
        ("endpoints: [{name: Chat, $delete: yes please}]", r"allowed: \{name: Chat, \$delete: true\} and nothing else"),
        (
            "endpoints: [{name: Chat, models: [{name: tiny, $replace: true}]}]",
            r"endpoints\[0\]\.models\[0\]\.name: got 'tiny'; allowed: a name in the list it extends: big, small; "
            r"fix: correct the name, or remove \$replace",
        ),
        (
            "endpoints: [{name: Chat}, {name: Chat}]",
            r"endpoints\[1\]\.name: got 'Chat'; allowed: a name not used by endpoints\[0\] of this file",
        ),
        (
            "endpoints: [{name: New, models: [{name: m, $delete: true}]}]",
            r"endpoints\[0\]\.models\[0\]\.\$delete: got True; allowed: nothing: \$delete applies to an item of a list "
            r"this file extends",
        ),
    ],
)
def test_misused_markers_and_repeated_names_are_refused_with_the_file(tmp_path, overlay, message):
    with pytest.raises(ConfigurationError, match=message) as error:
        layered(tmp_path, overlay)
    assert f"{tmp_path / 'env.yaml'}" in str(error.value)


def test_markers_in_a_file_that_extends_nothing_are_refused(tmp_path):
    path = write(tmp_path, "plain.yaml", "endpoints: [{name: A, $delete: true}]\n")
    with pytest.raises(ConfigurationError, match=r"endpoints\[0\]\.\$delete: got True; allowed: nothing"):
        load_layered(path)


def test_prod_and_dev_say_only_what_differs_from_base():
    base = load_layered(ROOT / "config" / "base.yaml")
    prod = parse_config(load_layered(ROOT / "config" / "prod.yaml"), source="config/prod.yaml")
    dev = parse_config(load_layered(ROOT / "config" / "dev.yaml"), source="config/dev.yaml")
    prod_text = (ROOT / "config" / "prod.yaml").read_text()
    assert "models:" not in prod_text and "adapters:" not in prod_text, "prod.yaml repeats nothing of base.yaml"
    (chat,) = prod.endpoints
    (base_chat,) = base["endpoints"]
    assert [a.name for a in chat.models[0].adapters] == [a["name"] for a in base_chat["models"][0]["adapters"]]
    assert chat.capacity_plan == "chat-p5e-2027q1" and chat.instance_type == base_chat["instance_type"]
    (dev_chat,) = dev.endpoints
    assert [m.name for m in dev_chat.models] == ["qwen3-8b"], "dev deletes base's qwen3-32b and adds its own model"
    assert [a.name for a in dev_chat.models[0].adapters] == ["qwen3-8b-support"]
    assert dev_chat.data_capture.sampling_percentage == 100
    assert dev_chat.data_capture.json_content_types == ("application/json",), "merged from base"


# ------------------------------------------------------------------ schemas and modelines
# Every deployment config; lock files (jumpstart.lock.yaml: written by `make jumpstart-lock`) are data, not configs.
CONFIGS = sorted(p for p in (ROOT / "config").glob("*.yaml") if not p.name.endswith(".lock.yaml"))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_every_config_names_its_schema_on_the_first_line(config):
    from tools.schemas import MODELINE, schema_for

    first = config.read_text(encoding="utf-8").splitlines()[0]
    assert first == MODELINE.format(schema=schema_for(config)), f"{config.name}: put the modeline on line 1"


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_every_config_is_valid_against_the_schema_its_editor_uses(config):
    import json
    from datetime import date, datetime

    import jsonschema
    import yaml

    from tools.schemas import schema_for

    schema = json.loads((ROOT / "config" / schema_for(config)).read_text())
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    as_json = json.loads(json.dumps(data, default=lambda v: v.isoformat() if isinstance(v, (date, datetime)) else v))
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(as_json), key=str)
    assert not errors, "\n".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5])


def test_published_schemas_are_current():
    from tools.schemas import render, schemas

    for name, schema in schemas().items():
        assert (ROOT / "config" / name).read_text() == render(schema), f"run `make schema` and commit config/{name}"


def test_instance_types_are_enums_editors_complete():
    from sagemaker_llm_cdk.config.loading import json_schema
    from sagemaker_llm_cdk.core import service_model

    for layer in (False, True):
        definitions = json_schema(layer=layer)["$defs"]
        endpoint = definitions["EndpointSpec"]["properties"]["instance_type"]
        assert (
            endpoint["enum"] == sorted(service_model.endpoint_instance_types())
            and "ml.p5e.48xlarge" in endpoint["enum"]
        )
        plan = definitions["CapacityPlanSpec"]["properties"]["instance_type"]
        assert plan["enum"] == sorted(service_model.capacity_plan_instance_types())
        (job,) = [
            b
            for b in definitions["EagleSettings"]["properties"]["job_instance_type"]["anyOf"]
            if b.get("type") == "string"
        ]
        assert job["enum"] == sorted(service_model.optimization_instance_types())


def test_the_layer_schema_requires_nothing_and_allows_the_markers():
    import jsonschema
    from sagemaker_llm_cdk.config.loading import json_schema

    layer, whole = json_schema(layer=True), json_schema()
    overlay = {"extends": "base.yaml", "endpoints": [{"name": "Chat", "models": [{"name": "m", "$delete": True}]}]}
    assert not list(jsonschema.Draft202012Validator(layer).iter_errors(overlay))
    assert list(jsonschema.Draft202012Validator(whole).iter_errors(overlay)), "a whole config still needs every field"
    wrong = {"endpoints": [{"name": "Chat", "instance_type": "ml.p5e.48xlargee"}]}
    assert [e.validator for e in jsonschema.Draft202012Validator(layer).iter_errors(wrong)] == ["enum"]


def test_an_empty_named_list_changes_nothing(tmp_path):
    data = layered(tmp_path, "endpoints: []\ncapacity_plans: []\n")
    assert [e["name"] for e in data["endpoints"]] == ["Chat", "Batch"] and len(data["capacity_plans"]) == 2
