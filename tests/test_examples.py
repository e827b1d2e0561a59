"""Every app in examples/ synthesizes (cdk-nag included) and builds what its README line promises.

Each example runs in a fresh interpreter, as a user runs it (``CDK_OUTDIR=out python app.py``),
against the library in this repository. ``tests/test_wheel.py`` runs them against the built wheel.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import sagemaker_llm_cdk
from support.examples import CHECKS, EXAMPLES, child_env, missing_exports, pending_reason, synthesize


def test_every_example_is_tested_and_listed():
    folders = sorted(p.parent.name for p in EXAMPLES.glob("*/app.py"))
    assert folders == sorted(CHECKS)
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for folder in folders:
        assert f"`{folder}/`" in readme, f"examples/README.md has no line for {folder}"


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_example_synthesizes(name, tmp_path):
    app = EXAMPLES / name / "app.py"
    missing = missing_exports(app, set(sagemaker_llm_cdk.__all__))
    if missing:
        pytest.skip(pending_reason(missing))
    env = child_env()
    # The child imports the library from where this process does (the repository).
    env["PYTHONPATH"] = str(Path(sagemaker_llm_cdk.__file__).resolve().parents[1])
    CHECKS[name](synthesize(sys.executable, app, tmp_path / "out", env=env))


BOUND_CONTEXT = {"account": "123456789012", "region": "us-east-1"}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_example_synthesizes_in_an_account_and_region_bound_stack(name, tmp_path):
    """The same example bound to a concrete environment (``-c account=... -c region=...``): cdk-nag's
    finding ids then hold us-east-1 and 123456789012 where the agnostic synth has tokens, and every
    acknowledgement must still match."""
    import json

    app = EXAMPLES / name / "app.py"
    missing = missing_exports(app, set(sagemaker_llm_cdk.__all__))
    if missing:
        pytest.skip(pending_reason(missing))
    env = child_env()
    env["PYTHONPATH"] = str(Path(sagemaker_llm_cdk.__file__).resolve().parents[1])
    env["CDK_CONTEXT_JSON"] = json.dumps(BOUND_CONTEXT)
    synth = synthesize(sys.executable, app, tmp_path / "out", env=env)
    manifest = json.loads((synth.outdir / "manifest.json").read_text())
    environments = {artifact["environment"] for artifact in manifest["artifacts"].values()
                    if artifact["type"] == "aws:cloudformation:stack"}
    assert environments == {"aws://123456789012/us-east-1"}, f"{name} ignores -c account/-c region: {environments}"
    CHECKS[name](synth)
