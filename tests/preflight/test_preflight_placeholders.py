"""Preflight refuses a deploy that still reads from a bucket of the examples (bucket names are global)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sagemaker_llm_cdk import load_config, parse_config, run_preflight
from sagemaker_llm_cdk.preflight import exit_code
from sagemaker_llm_cdk.preflight.placeholders import EXAMPLE_BUCKETS

ROOT = Path(__file__).resolve().parents[2]
BUDGET = {"max_usd_per_month": 1_000_000, "notify_alarm_topic": True}


def _config(weights: str, *, adapters: list[dict[str, Any]] | None = None) -> Any:
    model: dict[str, Any] = {"name": "qwen3-8b", "model_data_s3_uri": weights, "accelerators": 1}
    if adapters:
        model["adapters"] = adapters
        model["lora"] = {"max_rank": 16}
    endpoint = {
        "name": "Chat",
        "instance_type": "ml.g6e.12xlarge",
        "scaling": {"min_instances": 1, "max_instances": 2},
        "models": [model],
    }
    return parse_config({"endpoints": [endpoint], "budget": BUDGET}, source="test.yaml")


def _example_findings(cfg: Any) -> list[Any]:
    findings = run_preflight(cfg, offline=True, region="us-east-1")
    return [f for f in findings if f.check == "s3.example-bucket"]


@pytest.mark.parametrize("bucket", sorted(EXAMPLE_BUCKETS))
def test_every_example_bucket_is_a_blocker(bucket):
    (found,) = _example_findings(_config(f"s3://{bucket}/qwen3-8b/"))
    assert found.severity == "blocker"
    assert found.subject == "endpoints[0].models[0].model_data_s3_uri"
    assert re.search(rf"s3://{re.escape(bucket)}/qwen3-8b/ \(model weights\) is in the example bucket", found.what)
    assert "a bucket your account owns" in found.fix


def test_each_location_is_its_own_finding_and_an_own_bucket_passes():
    adapters = [
        {"name": "sql", "artifact_s3_uri": "s3://my-llm-adapters/sql.tar.gz"},
        {"name": "law", "artifact_s3_uri": "s3://acme-llm-adapters/law.tar.gz"},
    ]
    found = _example_findings(_config("s3://acme-llm-weights/qwen3-8b/", adapters=adapters))
    assert [f.subject for f in found] == ["endpoints[0].models[0].adapters[0].artifact_s3_uri"]
    assert "(adapter sql)" in found[0].what


def test_the_shipped_default_cannot_be_deployed_as_it_is():
    cfg = load_config(ROOT / "config" / "default.yaml")
    findings = run_preflight(cfg, offline=True, region="us-east-1")
    assert [f for f in findings if f.check == "s3.example-bucket"]
    assert exit_code(findings) == 1


_GENERATED = re.compile(r"^(jumpstart-|sagemakerllm-)")
"""Bucket names the docs quote that are not placeholders: JumpStart's caches, names the stacks generate."""


def test_every_bucket_the_repository_names_is_a_known_example():
    # Any s3:// bucket in a shipped config, example or doc is a placeholder; the list must hold every one, so a
    # new example name cannot slip past the blocker.
    files = [
        *ROOT.glob("config/**/*.yaml"),
        *ROOT.glob("docs/**/*.md"),
        *ROOT.glob("examples/**/*"),
        ROOT / "README.md",
    ]
    named = set()
    for path in files:
        if path.is_file() and path.suffix in {".yaml", ".yml", ".md", ".py", ".json"}:
            named |= set(re.findall(r"s3://([a-z0-9][a-z0-9.-]{0,62})", path.read_text(encoding="utf-8")))
    placeholders = {name for name in named if not _GENERATED.match(name)}
    assert placeholders, "the scan found no bucket at all: the globs are wrong"
    assert placeholders <= EXAMPLE_BUCKETS, sorted(placeholders - EXAMPLE_BUCKETS)
