"""Cloud assemblies of this repository's app, synthesized in this interpreter from a config held in memory.

The update catalogue (``tools/update_catalogue/``, held by ``tests/tools/test_update_catalogue.py``) changes one
thing in a shipped config and compares the two assemblies with ``tools.change_report``. A synth here builds the
stack as ``app.py`` does (``LlmPlatformStack`` and its routers' stack, or the pipeline's ``attach_pipeline``) with
``cdk.json``'s feature flags and path metadata, as ``cdk synth`` passes them, but without the checks ``app.py``
attaches (cdk-nag and the built-in template validator run in ``make check`` and the app's own tests): the comparison
reads the templates only, and a synth takes a few seconds instead of many. CDK is imported only when a synth runs.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CDK_CONTEXT: dict[str, Any] = {
    **json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"],
    "aws:cdk:enable-path-metadata": True,
}


def config_data(path: Path) -> dict[str, Any]:
    """The config at ``path`` laid over what it extends, as plain data a test may change (a fresh copy)."""
    from sagemaker_llm_cdk.config.layers import load_layered

    data = load_layered(path)
    assert isinstance(data, dict), path
    return copy.deepcopy(data)


def synth_config(data: dict[str, Any], config_dir: Path, outdir: Path) -> float:
    """Synthesize the app's stacks for config ``data`` into ``outdir``; returns the seconds it took.

    ``config_dir`` is where the config's relative paths start (the JumpStart lock, adapter manifests)."""
    from aws_cdk import App, Environment
    from sagemaker_llm_cdk import parse_config

    from stacks import LlmPlatformStack
    from stacks.router_stage import add_app_routers

    start = time.monotonic()
    config = parse_config(data, source=str(config_dir))
    app = App(outdir=str(outdir), context=dict(CDK_CONTEXT), builtin_cloud_formation_validation=False)
    platform = LlmPlatformStack(
        app,
        config.stack_name,
        config=config,
        config_dir=config_dir,
        env=Environment(account=config.target.account, region=config.target.region),
    )
    add_app_routers(app, platform, config)  # as app.py does: a <stack name>Routers stack when the config has routers
    app.synth()
    return time.monotonic() - start


def pipeline_data(path: Path) -> dict[str, Any]:
    """The pipeline config at ``path`` as plain data a test may change."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def synth_pipeline(data: dict[str, Any], outdir: Path) -> float:
    """Synthesize the delivery pipeline (every stage's stacks in its own assembly) for pipeline config ``data``;
    stage configs given relative are found from the repository root, as ``make synth PIPELINE=...`` runs."""
    from aws_cdk import App

    from stacks.pipeline import attach_pipeline

    start = time.monotonic()
    data = copy.deepcopy(data)
    for wave in data.get("waves", []):
        for stage in wave.get("stages", []):
            stage["config"] = str(ROOT / stage["config"])
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir.parent / f"{outdir.name}.pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    app = App(outdir=str(outdir), context=dict(CDK_CONTEXT), builtin_cloud_formation_validation=False)
    attach_pipeline(app, path)
    app.synth()
    return time.monotonic() - start
