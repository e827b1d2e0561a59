"""The library as other teams get it: build the wheel, install it in a fresh virtualenv with only its
declared dependencies, and synthesize the example apps from outside the repository, Lambda code included.

Slow (under a minute): select with ``pytest -m wheel``, leave out with ``-m "not wheel"``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import tomllib
import warnings
import zipfile
from pathlib import Path

import pytest
from support.examples import (
    CHECKS,
    EXAMPLES,
    LAMBDA_ROOT,
    ROOT,
    assert_flags_of_cdk_json,
    child_env,
    missing_exports,
    pending_reason,
    read_assembly,
    synthesize_with_cli,
)

pytestmark = pytest.mark.synth

LIBRARY = ROOT / "constructs" / "sagemaker_llm_cdk"
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "constructs", "lambda")
"""What setuptools reads to build the wheel (those that exist); copied so the build sees a clean tree."""
CLI_EXAMPLE = "capacity_plan_endpoint"
"""The example synthesized with `cdk synth` itself (the model + adapter + Lambda consumer, always runnable)."""
BOUND = {"account": "123456789012", "region": "us-east-1"}
TEAM_APP = """\
from aws_cdk import App, Environment, Stack
from sagemaker_llm_cdk import EndpointOptions, LlmEndpoint, ModelSpec, apply_checks

app = App()
stack = Stack(app, "TeamChat", env=Environment(account="123456789012", region="eu-west-1"))
endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
endpoint.add_model("Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://team-weights/qwen3-8b/",
                                     accelerators=1, min_memory_mb=32768))
apply_checks(app)
app.synth()
"""
"""An outside team's app as the README's "For other teams" has them write it: a stack bound to an account in code."""
SETUPTOOLS_WARNING = re.compile(
    r"BuildBackendWarning|SetuptoolsDeprecationWarning|SetuptoolsWarning|"
    r"absent from the `packages` configuration"
)


def handler_folders() -> list[Path]:
    return sorted(p for p in LAMBDA_ROOT.iterdir() if (p / "index.py").is_file())


SHARED_PACKAGE_DIR = LAMBDA_ROOT / "_shared" / "llm_cdk_shared"


def packaged_files() -> set[str]:
    """Every file the wheel must hold: the library's modules and py.typed, every handler file, the handlers' README."""
    files = {
        f"sagemaker_llm_cdk/{p.relative_to(LIBRARY).as_posix()}"
        for p in LIBRARY.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    for folder in handler_folders():
        files |= {
            f"sagemaker_llm_cdk/_lambda/{folder.name}/{p.relative_to(folder).as_posix()}"
            for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
        }
    files |= {
        f"sagemaker_llm_cdk/_lambda/_shared/llm_cdk_shared/{p.relative_to(SHARED_PACKAGE_DIR).as_posix()}"
        for p in SHARED_PACKAGE_DIR.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    return files | {"sagemaker_llm_cdk/_lambda/README.md", "sagemaker_llm_cdk/py.typed"}


def test_every_handler_folder_is_a_listed_package():
    """setuptools ships (and stays quiet about) lambda/<name>/ only when pyproject.toml lists it."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    missing = [
        f"sagemaker_llm_cdk._lambda.{f.name}"
        for f in handler_folders()
        if f"sagemaker_llm_cdk._lambda.{f.name}" not in listed
    ]
    assert not missing, f"add {missing} to [tool.setuptools] packages in pyproject.toml"
    assert "sagemaker_llm_cdk._lambda._shared.llm_cdk_shared" in listed, "the handlers' shared package must ship too"


def run(command: list[str | Path], **kwargs) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=900, **kwargs)
    assert result.returncode == 0, f"{command} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


@pytest.mark.wheel
def test_consumer_apps_synthesize_from_the_installed_wheel(tmp_path):
    timings: dict[str, float] = {}
    clock = time.monotonic()

    def lap(what: str) -> None:
        nonlocal clock
        now = time.monotonic()
        timings[what] = round(now - clock, 1)
        clock = now

    # 1. Build the wheel as `make dist` does, from a clean copy of the build inputs.
    source = tmp_path / "src"
    source.mkdir()
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif path.is_file():
            shutil.copy2(path, source / name)
    dist = tmp_path / "dist"
    build = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--verbose", "--wheel-dir", dist, source])
    noise = sorted(
        {line.strip() for line in (build.stdout + build.stderr).splitlines() if SETUPTOOLS_WARNING.search(line)}
    )
    assert not noise, "the build warns:\n" + "\n".join(noise)
    (wheel,) = dist.glob("sagemaker_llm_cdk-*-py3-none-any.whl")
    lap("build wheel")

    # 2. It holds the library, py.typed and every handler file, and nothing of the app or the tests.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    version = re.search(r'^__version__ = "([^"]+)"', (LIBRARY / "__init__.py").read_text(), re.M).group(1)
    assert wheel.name == f"sagemaker_llm_cdk-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"sagemaker_llm_cdk-{version}.dist-info/METADATA").decode()
    assert not packaged_files() - names, f"missing from the wheel: {sorted(packaged_files() - names)}"
    assert {n.split("/")[0] for n in names} == {"sagemaker_llm_cdk", f"sagemaker_llm_cdk-{version}.dist-info"}
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    requires = sorted(
        line.removeprefix("Requires-Dist: ") for line in metadata.splitlines() if line.startswith("Requires-Dist: ")
    )
    extras = [r for r in requires if "extra ==" in r]
    assert len(requires) - len(extras) == len(project["dependencies"]), requires
    assert len(extras) == sum(len(v) for v in project.get("optional-dependencies", {}).values()), extras

    # 3. A fresh virtualenv with the wheel and its declared dependencies only (nothing from this repo's venv).
    #    The venv gets no pip of its own (ensurepip costs seconds): this interpreter's pip installs into it
    #    (`pip --python`), so the venv holds exactly the wheel and what its metadata asks for.
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    lap("create venv")
    pip = [sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check"]
    run([*pip, "install", "--no-compile", "--quiet", wheel])
    lap("pip install wheel + dependencies")
    run([*pip, "check"])
    probe = run(
        [
            python,
            "-c",
            (
                "import importlib.util, json, sagemaker_llm_cdk as m\n"
                "from sagemaker_llm_cdk.core._assets import handler_dir, shared_package_dir\n"
                "print(json.dumps({'file': m.__file__, 'version': m.__version__, 'all': m.__all__,\n"
                "  'handler': handler_dir('capacity_plan_expiry'),\n"
                "  'shared': str(shared_package_dir()),\n"
                "  'powertools': importlib.util.find_spec('aws_lambda_powertools') is not None}))"
            ),
        ],
        cwd=tmp_path,
        env=child_env(venv / "bin", write_bytecode=True),
    )
    installed = json.loads(probe.stdout.strip().splitlines()[-1])
    site = str(venv / "lib")
    assert installed["file"].startswith(site) and installed["handler"].startswith(site), installed
    assert installed["shared"].startswith(site), installed  # the shared package comes from the wheel, not the repo
    assert installed["version"] == version
    assert not installed["powertools"], "the fresh venv sees a package the wheel does not declare"

    # 4. The example apps, copied out of the repository with their cdk.json, synthesize as a consumer runs them,
    #    with that interpreter as `python3` (cdk-nag runs in each). One of them (CLI_EXAMPLE) goes through
    #    `cdk synth` exactly as a user types it (the CLI reads cdk.json, runs the app, CDK's template validator
    #    on). The others synthesize in one process of the venv's interpreter with the context the CLI gives
    #    (tests/support/examples.py as a script): the same app code against the installed wheel, without a
    #    Node CLI, a Python and a jsii runtime per example. CDK's validator is off there (CDK_VALIDATION=false):
    #    its verdict on every example is tests/examples/test_examples.py's (same app, same cdk.json context).
    consumer = tmp_path / "consumer"
    env = child_env(venv / "bin", write_bytecode=True)
    pending, in_process = [], []
    for name in sorted(CHECKS):
        app = EXAMPLES / name / "app.py"
        missing = missing_exports(app, set(installed["all"]))
        if missing:
            pending.append(f"{name}: {pending_reason(missing)}")
            continue
        (consumer / name).mkdir(parents=True)
        shutil.copy2(app, consumer / name / "app.py")
        shutil.copy2(app.parent / "cdk.json", consumer / name / "cdk.json")
        if name != CLI_EXAMPLE:
            in_process += [consumer / name, tmp_path / "out" / name]
    synths = {}
    if CLI_EXAMPLE in {p.name for p in consumer.iterdir()}:
        # Bound to an account, into the CLI's default folder (relative cdk.out), as a team deploys it.
        synths[CLI_EXAMPLE] = synthesize_with_cli(consumer / CLI_EXAMPLE, env=env, context=BOUND)
        lap(f"cdk synth {CLI_EXAMPLE}")
    # Another team's own app, its stack bound to an account in code, through the CLI's default folder.
    team = consumer / "team_app"
    team.mkdir()
    (team / "app.py").write_text(TEAM_APP, encoding="utf-8")
    shutil.copy2(EXAMPLES / CLI_EXAMPLE / "cdk.json", team / "cdk.json")
    team_synth = synthesize_with_cli(team, env=env)
    assert team_synth.outdir == team / "cdk.out" and set(team_synth.stacks) == {"TeamChat"}
    assert any(
        r["Type"] == "AWS::SageMaker::InferenceComponent" for r in team_synth.stacks["TeamChat"]["Resources"].values()
    )
    lap("cdk synth of a team's bound app")
    if in_process:
        run(
            [python, ROOT / "tests" / "support" / "examples.py", *in_process],
            cwd=tmp_path,
            env={**env, "CDK_VALIDATION": "false"},
        )
        synths |= {
            app_dir.name: read_assembly(outdir)
            for app_dir, outdir in zip(in_process[::2], in_process[1::2], strict=True)
        }
        lap(f"synth {len(in_process) // 2} examples in one process")
    for name, synth in sorted(synths.items()):
        CHECKS[name](synth)
        assert_flags_of_cdk_json(synth, EXAMPLES / name / "cdk.json")  # the flags of the example's own cdk.json
    assert "capacity_plan_endpoint" not in " ".join(pending), "the model + adapter + Lambda consumer must always run"

    # 5. Preflight runs from the wheel as a module, offline; without the [preflight] extra (no cfn-lint)
    #    the resource-type check says it was skipped instead of failing.
    configs = tmp_path / "configs"
    configs.mkdir()
    for name in ("base.yaml", "dev.yaml"):  # the team's own buckets in place of the examples, as a deploy needs
        text = (ROOT / "config" / name).read_text().replace("s3://my-llm-", "s3://acme-llm-")
        (configs / name).write_text(text)
    command = [
        python,
        "-m",
        "sagemaker_llm_cdk.preflight",
        "--config",
        configs / "dev.yaml",
        "--offline",
        "--region",
        "us-east-1",
    ]
    checked = run([*command, "--no-synth"], cwd=tmp_path, env=env)
    assert (
        checked.stdout.strip()
        .splitlines()[-1]
        .startswith(f"preflight of {configs / 'dev.yaml'} for us-east-1 (offline): 0 blocker(s)")
    )
    synthesized = sorted((tmp_path / "out").glob("*/manifest.json"))
    if synthesized:
        skipped = run([*command, "--cdk-out", synthesized[0].parent], cwd=tmp_path, env=env)
        assert "cfn-lint is not installed, so resource types were not checked" in skipped.stdout
    lap("preflight from the wheel")
    print("wheel test timings (s):", json.dumps(timings))
    if pending:
        warnings.warn("examples not synthesized from the wheel: " + "; ".join(pending), stacklevel=1)
