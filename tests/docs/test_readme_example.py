"""The README's example for other teams is the one constructs/README.md (PyPI's page) shows, and it synthesizes
with the library's checks, as a consumer's app would run it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
START, END = "<!-- example:start -->\n", "<!-- example:end -->"


def example(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    block = text.split(START, 1)[1].split(END, 1)[0]
    assert block.startswith("```python\n") and block.rstrip().endswith("```"), path
    return block.strip()[len("```python") : -3]


def test_both_readmes_show_the_same_example():
    assert example(ROOT / "README.md") == example(ROOT / "constructs" / "README.md")


def test_the_example_synthesizes_with_the_checks():
    """It runs as written (a failing check would raise from app.synth()); its cloud assembly holds the endpoint."""
    import json

    namespace: dict[str, object] = {}
    exec(compile(example(ROOT / "README.md"), "README.md example", "exec"), namespace)  # noqa: S102 - our own block
    out = Path(namespace["app"].outdir)  # type: ignore[attr-defined]
    template = json.loads((out / "Chat.template.json").read_text())
    types = {resource["Type"] for resource in template["Resources"].values()}
    assert {"AWS::SageMaker::Endpoint", "AWS::SageMaker::InferenceComponent", "AWS::KMS::Key"} <= types
    report = (
        json.loads((out / "validation-report.json").read_text()) if (out / "validation-report.json").exists() else {}
    )
    failures = [v for plugin in report.get("pluginReports", []) for v in plugin.get("violations", [])]
    assert failures == []
