"""Every app in examples/ synthesizes (cdk-nag included) and builds what its README line promises.

Each example runs with what ``cdk synth`` in its folder gives it: the folder's own ``cdk.json`` context
(the feature flags ``cdk init`` sets, the same as the repository's ``cdk.json``) plus the CLI's metadata
context, against the library in this repository. They run in this interpreter (``synthesize_in_process``:
no fresh Python and jsii runtime per synth); ``tests/repo/test_wheel.py`` runs every example through the real
``cdk synth`` CLI, with its ``cdk.json``, against the built wheel and checks the same feature-flag report.
"""

from __future__ import annotations

import json

import pytest
import sagemaker_llm_cdk
from support.examples import (
    CHECKS,
    EXAMPLES,
    ROOT,
    assert_flags_of_cdk_json,
    cdk_json_flags,
    cli_context,
    missing_exports,
    pending_reason,
    synthesize_in_process,
)

pytestmark = pytest.mark.synth


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
    # The context `cdk synth` passes: the folder's cdk.json context, then the CLI's own metadata keys.
    synth = synthesize_in_process(app, tmp_path / "out", context=cli_context(app.parent))
    CHECKS[name](synth)
    assert_flags_of_cdk_json(synth, app.parent / "cdk.json")


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
    synth = synthesize_in_process(app, tmp_path / "out", context=BOUND_CONTEXT)
    manifest = json.loads((synth.outdir / "manifest.json").read_text())
    environments = {
        artifact["environment"]
        for artifact in manifest["artifacts"].values()
        if artifact["type"] == "aws:cloudformation:stack"
    }
    assert environments == {"aws://123456789012/us-east-1"}, f"{name} ignores -c account/-c region: {environments}"
    CHECKS[name](synth)


@pytest.fixture(scope="module")
def example_templates(tmp_path_factory):
    """Every example synthesized as `cdk synth` in its folder would (``apply_checks`` inside each app.py)."""
    from tools.run_checkov import templates_in

    found = {}
    for name in sorted(CHECKS):
        app = EXAMPLES / name / "app.py"
        if missing_exports(app, set(sagemaker_llm_cdk.__all__)):
            continue
        outdir = tmp_path_factory.mktemp(name)
        synthesize_in_process(app, outdir, context=cli_context(app.parent))
        found[name] = templates_in(outdir)
    return found


def test_checkov_passes_on_every_example_template(example_templates):
    """The library's checkov reasons reach a consumer's app through ``apply_checks``: 0 failed, every skip with its
    reason, on each example's templates (one checkov run over all of them)."""
    from tools.run_checkov import CheckovError, find_checkov, run_checkov, summary_lines

    try:
        checkov = find_checkov()
    except CheckovError as missing:
        pytest.skip(str(missing))
    templates = [t for paths in example_templates.values() for t in paths]
    assert len(example_templates) == len(CHECKS) and templates
    result = run_checkov(templates, checkov=checkov)
    assert result.ok, "\n".join(summary_lines(result))
    assert not result.failed and not result.unexplained_skips
    assert {s.check_id for s in result.skipped} >= {"CKV_AWS_115", "CKV_AWS_158"}
