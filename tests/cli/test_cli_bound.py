"""Every shipped config, the delivery pipeline and every example synthesize through the CLI bound to an account.

As a user types it: ``npx cdk synth -c config=...`` in the repository (or ``cd examples/<app> && npx cdk synth -c
account=... -c region=...``), with the CLI's default output folder. The CLI hands the app that folder as given,
relative (``CDK_OUTDIR=cdk.out``); a check that depends on paths (the policy guard knows each template's account by
its path) passes for an absolute temporary folder and can still fail there. A config with no ``target.account`` is
bound the way the README tells a user to: a config of their own that ``extends:`` it and names the account.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import cli

pytestmark = pytest.mark.cli

CONFIGS = sorted(
    str(p.relative_to(cli.ROOT))
    for p in [*(cli.ROOT / "config").glob("*.yaml"), *(cli.ROOT / "config" / "examples").glob("*.yaml")]
    if not p.name.endswith(".lock.yaml") and p.name != "pipeline.yaml"
)
EXAMPLES = sorted(p.parent.name for p in (cli.ROOT / "examples").glob("*/app.py"))
AZS = {f"availability-zones:account={cli.ACCOUNT}:region={cli.REGION}": [f"{cli.REGION}{z}" for z in "abcdef"]}
"""What the CLI caches in ``cdk.context.json`` after its availability-zone lookup (a VPC of a bound stack asks)."""


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cli.checkout(tmp_path_factory.mktemp("user") / "sagemaker-llm-cdk")


def _bound(checkout: Path, config: str) -> tuple[str, str]:
    """The config to synthesize and the account it is bound to: the shipped one when it names its account, else a
    user's own layer over it (``config/mine-<name>.yaml``: ``extends:`` and ``target``)."""
    text = (cli.ROOT / config).read_text(encoding="utf-8")
    data = yaml.safe_load(text) or {}
    account = (data.get("target") or {}).get("account")
    if account:
        return config, str(account)
    mine = checkout / "config" / f"mine-{Path(config).stem}.yaml"
    target = {"account": cli.ACCOUNT, **({} if (data.get("target") or {}).get("region") else {"region": cli.REGION})}
    mine.write_text(
        f"extends: {Path(config).relative_to('config').as_posix()}\ntarget: {json.dumps(target)}\n", encoding="utf-8"
    )
    return str(mine.relative_to(checkout)), cli.ACCOUNT


def _assert_bound(run: cli.Run, account: str) -> dict[str, dict]:
    assert run.returncode == 0, run.explain()
    stacks = run.stacks()
    assert stacks, run.explain()
    environments = {name: t["__environment__"] for name, t in stacks.items()}
    assert all(e.startswith(f"aws://{account}/") for e in environments.values()), environments
    return stacks


@pytest.mark.parametrize("config", CONFIGS)
def test_a_shipped_config_synthesizes_bound_to_its_account(checkout, config):
    path, account = _bound(checkout, config)
    run = cli.run(["npx", "cdk", "synth", "--quiet", "-c", f"config={path}"], checkout)
    stacks = _assert_bound(run, account)
    # The guard saw the account: each of the library's KMS keys grants its own account root (the default key
    # policy), which the guard allows only for a key's own account.
    keys = {
        name: json.dumps(resource["Properties"]["KeyPolicy"])
        for template in stacks.values()
        for name, resource in template.get("Resources", {}).items()
        if resource["Type"] == "AWS::KMS::Key"
    }
    assert keys and all(f":{account}:root" in policy for policy in keys.values()), keys


PIPELINES = [
    "config/pipeline.yaml",
    *sorted(str(p.relative_to(cli.ROOT)) for p in (cli.ROOT / "config" / "examples" / "pipelines").glob("*.yaml")),
]


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_a_delivery_pipeline_synthesizes_with_its_stage_accounts(checkout, pipeline):
    declared = yaml.safe_load((cli.ROOT / pipeline).read_text(encoding="utf-8"))
    expected = {str(declared["account"])} | {
        str(stage["account"])
        for wave in declared.get("waves", [])
        for stage in wave.get("stages", [])
        if stage.get("account")
    }
    run = cli.run(["npx", "cdk", "synth", "--quiet", "-c", f"pipeline={pipeline}"], checkout)
    assert run.returncode == 0, run.explain()
    environments = {t["__environment__"] for t in run.stacks().values()}
    accounts = {e.split("/")[2] for e in environments}
    assert len(expected) > 1 and expected <= accounts, (expected, environments)


@pytest.mark.parametrize("example", EXAMPLES)
def test_an_example_synthesizes_bound_to_an_account(checkout, example):
    folder = checkout / "examples" / example
    (folder / "cdk.context.json").write_text(json.dumps(AZS), encoding="utf-8")
    run = cli.run(
        ["npx", "cdk", "synth", "--quiet", "-c", f"account={cli.ACCOUNT}", "-c", f"region={cli.REGION}"], folder
    )
    _assert_bound(run, cli.ACCOUNT)
    assert (folder / "cdk.out" / "manifest.json").is_file()  # the CLI's default folder, relative to the app


def test_make_synth_of_an_account_bound_config(checkout):
    """``make synth CONFIG=config/dev.yaml``: the synth, cdk-nag inside, then cfn-lint over the same cdk.out."""
    run = cli.run(["make", "--no-print-directory", "synth", "CONFIG=config/dev.yaml"], checkout)
    stacks = _assert_bound(run, "111111111111")
    assert "SageMakerLlm" in stacks
    assert "cdk synth --quiet" in run.log and "-c config=config/dev.yaml" in run.log
