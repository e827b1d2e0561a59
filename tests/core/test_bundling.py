"""Packages shipped in the Lambda assets: the pinned AWS SDK layer and the dataset builder's orjson.

Synthesizes real assets (CDK local bundling, pip from the package index once, then the cache) and
looks inside them: the layer holds exactly the pinned botocore, whose SageMaker model is the one the
handler tests' Stubber and ``aws_model`` checks use; the dataset asset holds orjson built for the
Lambda runtime's Python and architecture.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import boto3
import botocore
import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk.assertions import Match, Template
from sagemaker_llm_cdk.core import bundling
from sagemaker_llm_cdk.core.functions import SDK_FOLDERS, python_function, sdk_requirements
from support.aws_model import assert_valid_request

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]


def _asset_dirs(assembly_dir: str, stack_name: str) -> dict[str, Path]:
    """asset hash -> its staged folder (absolute or relative to the assembly)."""
    manifest = json.loads((Path(assembly_dir) / f"{stack_name}.assets.json").read_text())
    out = {}
    for digest, entry in manifest["files"].items():
        path = Path(entry["source"]["path"])
        out[digest] = path if path.is_absolute() else Path(assembly_dir) / path
    return out


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    app = App()
    stack = Stack(app, "Functions", env=Environment(account="123456789012", region="us-east-1"))
    job = python_function(stack, "Start", folder="eagle_job", handler="index.start", description="starts jobs")
    record = python_function(stack, "Record", folder="eagle_job", handler="index.record", description="records")
    dataset = python_function(stack, "Convert", folder="eagle_dataset", handler="index.convert", description="converts")
    assembly = app.synth()
    template = Template.from_stack(stack)
    resources = template.to_json()["Resources"]
    dirs = _asset_dirs(assembly.directory, stack.artifact_id)

    def asset_of(function) -> Path:
        key = resources[stack.resolve(function.node.default_child.logical_id)]["Properties"]["Code"]["S3Key"]
        return dirs[key.removesuffix(".zip")]

    (layer_id,) = [k for k, v in resources.items() if v["Type"] == "AWS::Lambda::LayerVersion"]
    layer_zip = dirs[resources[layer_id]["Properties"]["Content"]["S3Key"].removesuffix(".zip")]
    # The layer is staged as one zip (uploaded as it is): look at what Lambda will unpack.
    assert layer_zip.is_file() and layer_zip.suffix == ".zip"
    layer_dir = tmp_path_factory.mktemp("layer")
    with zipfile.ZipFile(layer_zip) as archive:
        names = archive.namelist()
        assert names and all(n.startswith("python/") and not n.endswith("/") for n in names)
        archive.extractall(layer_dir)
    return {
        "stack": stack,
        "template": template,
        "resources": resources,
        "layer_id": layer_id,
        "layer_dir": layer_dir,
        "job": job,
        "record": record,
        "dataset": dataset,
        "job_dir": asset_of(job),
        "dataset_dir": asset_of(dataset),
    }


def test_sdk_pins_are_the_sdk_the_tests_validate_requests_against():
    pins = bundling.pinned_versions(sdk_requirements())
    assert pins["botocore"] == botocore.__version__ and pins["boto3"] == boto3.__version__
    assert tuple(int(x) for x in pins["botocore"].split(".")[:2]) >= (1, 42)  # ModelSpeculativeDecodingConfig
    requirements = (ROOT / "requirements.txt").read_text()
    assert f"boto3=={pins['boto3']}" in requirements  # synth, tests and the functions run one SDK


def test_functions_that_call_sagemaker_get_one_sdk_layer_per_stack(synthesized):
    resources, layer_id = synthesized["resources"], synthesized["layer_id"]
    pins = bundling.pinned_versions(sdk_requirements())
    assert resources[layer_id]["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    assert resources[layer_id]["Properties"]["CompatibleArchitectures"] == ["x86_64"]
    assert pins["botocore"] in resources[layer_id]["Properties"]["Description"]
    stack = synthesized["stack"]
    for name in ("job", "record"):
        layers = resources[stack.resolve(synthesized[name].node.default_child.logical_id)]["Properties"]["Layers"]
        assert {"Ref": layer_id} in layers and len(layers) == 2  # Powertools + the SDK
    dataset_layers = resources[stack.resolve(synthesized["dataset"].node.default_child.logical_id)]["Properties"][
        "Layers"
    ]
    assert {"Ref": layer_id} not in dataset_layers  # S3 and SSM only: the runtime's SDK knows them
    assert {"eagle_job", "eagle_serving_model", "capacity_plan"} <= SDK_FOLDERS


def test_sdk_layer_holds_the_pinned_botocore_for_the_runtime(synthesized):
    python = synthesized["layer_dir"] / "python"
    pins = bundling.pinned_versions(sdk_requirements())
    for name, version in pins.items():
        dist = name.replace("-", "_")
        assert (python / f"{dist}-{version}.dist-info").is_dir(), f"{name}=={version} missing from the layer"
    init = (python / "botocore" / "__init__.py").read_text()
    assert f"__version__ = '{pins['botocore']}'" in init
    assert not (python / "bin").exists() and not list(python.rglob("__pycache__"))


def test_shipped_sagemaker_model_knows_the_requests_the_functions_send(synthesized):
    """The layer's SageMaker model is the venv's (so every Stubber test checks the shipped model) and has the APIs."""
    shipped = sorted(
        (synthesized["layer_dir"] / "python" / "botocore" / "data" / "sagemaker").glob("*/service-2.json*")
    )
    local = sorted((Path(botocore.__file__).parent / "data" / "sagemaker").glob("*/service-2.json*"))
    assert [p.name for p in shipped] == [p.name for p in local] and shipped
    assert shipped[-1].read_bytes() == local[-1].read_bytes()
    raw = shipped[-1].read_bytes()
    model = json.loads(gzip.decompress(raw) if shipped[-1].suffix == ".gz" else raw)
    for operation in ("CreateOptimizationJob", "SearchTrainingPlanOfferings", "CreateTrainingPlan"):
        assert operation in model["operations"]
    assert "ModelSpeculativeDecodingConfig" in model["shapes"]["OptimizationConfig"]["members"]
    assert_valid_request(
        "sagemaker",
        "CreateOptimizationJob",
        {
            "OptimizationJobName": "eagle-qwen3-32b-0123456789ab",
            "RoleArn": "arn:aws:iam::123456789012:role/JobRole",
            "ModelSource": {"S3": {"S3Uri": "s3://my-weights/qwen3-32b/"}},
            "DeploymentInstanceType": "ml.p5e.48xlarge",
            "OptimizationConfigs": [
                {
                    "ModelSpeculativeDecodingConfig": {
                        "Technique": "EAGLE",
                        "TrainingDataSource": {"S3Uri": "s3://a-bucket/datasets/r/data/m/", "S3DataType": "S3Prefix"},
                    }
                }
            ],
            "OutputConfig": {"S3OutputLocation": "s3://a-bucket/jobs/"},
            "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        },
    )


def test_dataset_asset_ships_orjson_for_python_313_on_x86_64_next_to_its_code(synthesized):
    folder = synthesized["dataset_dir"]
    assert (folder / "index.py").is_file() and (folder / "eagle_dataset_core.py").is_file()
    pins = bundling.pinned_versions(ROOT / "lambda" / "eagle_dataset" / "requirements.txt")
    assert (folder / f"orjson-{pins['orjson']}.dist-info").is_dir()
    (binary,) = (folder / "orjson").glob("orjson.cpython-*.so")
    assert binary.name == "orjson.cpython-313-x86_64-linux-gnu.so"
    job_folder = synthesized["job_dir"]
    # the SDK is the layer's; the handlers' shared package is copied in
    assert sorted(p.name for p in job_folder.iterdir()) == [
        "benchmark.py",
        "benchmark_output.py",
        "benchmark_record.py",
        "eagle_job_core.py",
        "index.py",
        "job_decision.py",
        "job_errors.py",
        "job_events.py",
        "job_outputs.py",
        "job_prices.py",
        "job_promotion.py",
        "job_request.py",
        "job_results.py",
        "job_run_record.py",
        "job_sagemaker.py",
        "job_settings.py",
        "job_start_checks.py",
        "job_status.py",
        "job_times.py",
        "job_watermark.py",
        "llm_cdk_shared",
    ]


def test_synthesized_assets_carry_the_shared_package_as_it_is_in_the_repository(synthesized):
    shared = ROOT / "lambda" / "_shared" / "llm_cdk_shared"
    expected = {p.name: p.read_bytes() for p in shared.glob("*.py")}
    assert "clients.py" in expected and "__init__.py" in expected
    for folder in (synthesized["job_dir"], synthesized["dataset_dir"]):
        assert {p.name: p.read_bytes() for p in (folder / "llm_cdk_shared").glob("*.py")} == expected, folder
        assert not list(folder.rglob("__pycache__"))


def test_asset_hashes_follow_the_requirements_and_sources(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# comment\norjson==3.13.0\n")
    first = bundling.requirements_hash(requirements)
    requirements.write_text("orjson==3.13.0\n\n")
    assert bundling.requirements_hash(requirements) == first  # comments and blank lines do not count
    requirements.write_text("orjson==3.12.0\n")
    assert bundling.requirements_hash(requirements) != first
    assert bundling.requirements_hash(requirements, "arm64") != bundling.requirements_hash(requirements)


def test_pip_installs_runtime_wheels_only():
    command = bundling.pip_command(Path("r.txt"), Path("/out"))
    joined = " ".join(command)
    assert "--only-binary=:all:" in command and "--python-version 3.13" in joined and "--implementation cp" in joined
    assert "--platform manylinux2014_x86_64" in joined and "--target /out" in joined


def _without_pip_module(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """The synthesizing Python has no pip (a `uv venv`, `python -m venv --without-pip`); PATH is ``path``."""
    real = bundling.importlib.util.find_spec
    monkeypatch.setattr(
        bundling.importlib.util, "find_spec", lambda name, *a: None if name == "pip" else real(name, *a)
    )
    monkeypatch.setenv("PATH", path)


def test_pip_is_the_synthesizing_pythons_own_when_it_has_one():
    assert bundling.find_pip() == [sys.executable, "-m", "pip"]


def test_a_python_without_pip_installs_with_the_pip_on_path_for_real(tmp_path, monkeypatch):
    """Any pip installs the runtime's wheels (the command names Python, platform and target), so a venv without
    pip synthesizes with the machine's: a real install of a small pinned wheel, through a `pip3` found on PATH."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "pip3").symlink_to(Path(sys.executable).with_name("pip"))
    _without_pip_module(monkeypatch, str(tools))
    assert bundling.find_pip() == [str(tools / "pip3")]
    monkeypatch.setenv(bundling.CACHE_ENV, str(tmp_path / "cache"))
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("pybase64==1.5.1\n")
    folder = bundling.cached_install(requirements)
    assert (folder / ".complete").is_file()
    (build,) = folder.glob("pybase64-1.5.1.dist-info")
    tags = [line for line in (build / "WHEEL").read_text().splitlines() if line.startswith("Tag: ")]
    assert tags and all(line.startswith("Tag: cp313-cp313-manylinux") and line.endswith("x86_64") for line in tags), (
        tags
    )


def test_no_pip_anywhere_is_one_clear_error_and_leaves_nothing(tmp_path, monkeypatch):
    _without_pip_module(monkeypatch, str(tmp_path / "empty"))
    monkeypatch.setenv(bundling.CACHE_ENV, str(tmp_path / "cache"))
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("orjson==3.13.0\n")
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            f"The Lambda packages are installed at synth with pip, and there is none: {sys.executable} has no pip "
            "module and no pip3 or pip is on PATH. Install pip into this environment (`python -m ensurepip`"
        ),
    ):
        bundling.cached_install(requirements)
    assert not list((tmp_path / "cache").iterdir())


def test_the_layer_archive_holds_the_cached_install_file_for_file(tmp_path):
    folder = bundling.cached_install(sdk_requirements())
    archive = bundling.cached_archive(sdk_requirements())
    assert bundling.cached_archive(sdk_requirements()) == archive  # made once
    files = {
        f"python/{p.relative_to(folder).as_posix()}": p
        for p in folder.rglob("*")
        if p.is_file() and p.name != ".complete" and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    with zipfile.ZipFile(archive) as bundle:
        infos = {i.filename: i for i in bundle.infolist()}
        assert set(infos) == set(files)
        for name in ("python/botocore/__init__.py", "python/boto3/session.py"):
            assert bundle.read(name) == files[name].read_bytes()
            assert infos[name].external_attr >> 16 == files[name].stat().st_mode & 0xFFFF
        assert {i.date_time for i in infos.values()} == {(1980, 1, 1, 0, 0, 0)}  # the content alone makes it


def test_a_warm_cache_installs_nothing(monkeypatch):
    bundling.cached_install(sdk_requirements())  # warm (the synth above filled it already)

    def no_pip(*args, **kwargs):
        raise AssertionError("pip ran although the install is cached")

    monkeypatch.setattr(subprocess, "run", no_pip)
    folder = bundling.cached_install(sdk_requirements())
    assert (folder / "botocore").is_dir()


def test_an_unreachable_index_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(bundling.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(
        subprocess,
        "run",
        lambda *a, **k: subprocess.CompletedProcess(
            a, 1, stdout="", stderr="ERROR: Could not find a version that satisfies the requirement orjson==3.13.0"
        ),
    )
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("orjson==3.13.0\n")
    with pytest.raises(
        RuntimeError,
        match=r"(?s)pip exit 1\): ERROR: Could not find a version.*needs the Python "
        r"package index .* or a filled cache in .*cache \(set SAGEMAKER_LLM_CDK_CACHE",
    ):
        bundling.cached_install(requirements)
    assert not list((tmp_path / "cache").iterdir())  # nothing half-installed is left to be taken for a cache


def test_environment_agnostic_stack_gets_the_layer_too():
    app = App()
    stack = Stack(app, "Agnostic")
    python_function(stack, "Start", folder="eagle_job", handler="index.start", description="starts jobs")
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::Lambda::LayerVersion", 1)
    template.has_resource_properties(
        "AWS::Lambda::Function", {"Layers": Match.array_with([{"Ref": Match.string_like_regexp("AwsSdkLayer")}])}
    )


def test_tool_and_editor_litter_beside_a_handler_is_not_shipped_and_keeps_the_asset(tmp_path, monkeypatch):
    """mypy, pytest, ruff or an editor run inside lambda/<name>/ leave files there; the function's staged code
    (and so its asset hash, and whether a deploy updates it) is the sources alone."""
    from sagemaker_llm_cdk.core import _assets

    handler = tmp_path / "handler"
    shutil.copytree(_assets.handler_dir("capacity_plan_expiry"), handler, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(_assets, "handler_dir", lambda name: str(handler))
    clean = Path(_assets.staged_handler("capacity_plan_expiry"))
    for litter in (
        ".mypy_cache/3.11/index.data.json",
        ".pytest_cache/v/cache/nodeids",
        ".ruff_cache/CACHEDIR.TAG",
        ".DS_Store",
        "__pycache__/index.cpython-313.pyc",
        "index.py~",
        ".index.py.swp",
        "notes.swp",
    ):
        (handler / litter).parent.mkdir(parents=True, exist_ok=True)
        (handler / litter).write_text("litter")
    littered = Path(_assets.staged_handler("capacity_plan_expiry"))
    assert littered == clean  # the same content hash: nothing to redeploy
    shipped = {p.relative_to(littered).as_posix() for p in littered.rglob("*") if p.is_file()}
    assert "index.py" in shipped and "llm_cdk_shared/__init__.py" in shipped
    assert not [name for name in shipped if "cache" in name or name.endswith(("~", ".swp", ".pyc", ".DS_Store"))], (
        shipped
    )
    (handler / "helpers.py").write_text("X = 1\n")  # a real source file does count
    assert Path(_assets.staged_handler("capacity_plan_expiry")) != clean
