"""tools/same_templates.py: two synth_all folders are the same when every template is byte-identical or differs
only in the asset hashes its asset manifests name; anything else is a difference, shown."""

from __future__ import annotations

import json
from pathlib import Path

from tools import same_templates

OLD, NEW = "a" * 64, "b" * 64


def _assembly(root: Path, template: dict, asset: str) -> Path:
    folder = root / "config-default"
    folder.mkdir(parents=True)
    (folder / "S.template.json").write_text(json.dumps(template, indent=1), encoding="utf-8")
    manifest = {"files": {asset: {"displayName": "Fn/Code", "source": {"path": f"asset.{asset}"}}}}
    (folder / "S.assets.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def _function(asset: str, memory: int = 256) -> dict:
    return {"Resources": {"Fn": {"Properties": {"Code": {"S3Key": f"{asset}.zip"}, "MemorySize": memory}}}}


def test_identical_templates_are_the_same(tmp_path):
    before = _assembly(tmp_path / "before", _function(OLD), OLD)
    after = _assembly(tmp_path / "after", _function(OLD), OLD)
    lines, ok = same_templates.compare(before, after)
    assert ok and lines == ["config-default: 1 identical"]


def test_a_changed_asset_hash_alone_is_named_and_passes(tmp_path):
    before = _assembly(tmp_path / "before", _function(OLD), OLD)
    after = _assembly(tmp_path / "after", _function(NEW), NEW)
    lines, ok = same_templates.compare(before, after)
    assert ok and lines == ["config-default: 0 identical; asset hashes only: S.template.json (Fn/Code)"]


def test_any_other_change_is_a_difference(tmp_path):
    before = _assembly(tmp_path / "before", _function(OLD), OLD)
    after = _assembly(tmp_path / "after", _function(NEW, memory=512), NEW)
    lines, ok = same_templates.compare(before, after)
    assert not ok and "config-default/S.template.json differs" in lines[0] and '+    "MemorySize": 512' in lines[0]


def test_a_hash_no_manifest_names_is_a_difference(tmp_path):
    template = {"Resources": {"Fn": {"Properties": {"Name": OLD}}}}
    before = _assembly(tmp_path / "before", template, NEW)
    after = _assembly(tmp_path / "after", {"Resources": {"Fn": {"Properties": {"Name": "c" * 64}}}}, NEW)
    assert same_templates.compare(before, after)[1] is False


def test_a_pipeline_publish_step_destination_hash_follows_its_asset(tmp_path):
    step = "cdk-assets publish {}:111111111111-us-east-1-{}"
    before = _assembly(tmp_path / "before", {"Step": step.format(OLD, "0a1b2c3d")}, OLD)
    after = _assembly(tmp_path / "after", {"Step": step.format(NEW, "9f8e7d6c")}, NEW)
    assert same_templates.compare(before, after)[1] is True
