"""Every app in examples/ synthesizes (cdk-nag included) and builds what its README line promises.

Each example runs as a user runs it: ``cdk synth`` in its folder with the pinned CLI, so the folder's
own ``cdk.json`` supplies the app command and the feature flags ``cdk init`` sets (the same as the
repository's ``cdk.json``), against the library in this repository. ``tests/test_wheel.py`` runs them
against the built wheel.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import sagemaker_llm_cdk
from support.examples import (
    CHECKS,
    EXAMPLES,
    ROOT,
    cdk_json_flags,
    child_env,
    feature_flag_report,
    missing_exports,
    pending_reason,
    synthesize,
    synthesize_with_cli,
)


def test_every_example_is_tested_and_listed():
    folders = sorted(p.parent.name for p in EXAMPLES.glob("*/app.py"))
    assert folders == sorted(CHECKS)
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for folder in folders:
        assert f"`{folder}/`" in readme, f"examples/README.md has no line for {folder}"


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_example_has_its_own_cdk_json_with_the_repository_feature_flags(name):
    path = EXAMPLES / name / "cdk.json"
    assert path.is_file(), f"examples/{name} has no cdk.json: `cdk synth` there would run with every feature flag unset"
    example = json.loads(path.read_text(encoding="utf-8"))
    assert example["app"] == "python3 app.py", "a consumer runs the example with the Python that has the library"
    flags = cdk_json_flags(path)
    assert flags == cdk_json_flags(ROOT / "cdk.json"), "keep the examples' flags equal to the repository's cdk.json"
    assert len(flags) > 80
    assert "config" not in example["context"], "the team app's config context means nothing to an example"


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_example_synthesizes_with_its_own_cdk_json(name, tmp_path):
    app = EXAMPLES / name / "app.py"
    missing = missing_exports(app, set(sagemaker_llm_cdk.__all__))
    if missing:
        pytest.skip(pending_reason(missing))
    # `python3` on PATH is this interpreter's (the repository venv); the child imports the library from where this
    # process does (the repository).
    env = child_env(Path(sys.executable).parent)
    env["PYTHONPATH"] = str(Path(sagemaker_llm_cdk.__file__).resolve().parents[1])
    synth = synthesize_with_cli(app.parent, tmp_path / "out", env=env)
    CHECKS[name](synth)
    # The flags the app saw are exactly those cdk.json sets (CDK's feature-flag report in the assembly).
    report = feature_flag_report(synth.outdir)
    in_effect = {flag: info["userValue"] for flag, info in report.items() if "userValue" in info}
    assert in_effect == {k: v for k, v in cdk_json_flags(app.parent / "cdk.json").items() if k in report}
    assert in_effect["@aws-cdk/aws-iam:minimizePolicies"] is True and len(in_effect) > 70


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
