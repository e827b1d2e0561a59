"""sagemaker-llm-client (clients/pyproject.toml) installs alone: its wheel, boto3 and nothing else in a fresh
virtualenv, and importing the client modules loads no CDK, jsii, constructs or pydantic."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "clients"
HEAVY = ("aws_cdk", "jsii", "constructs", "pydantic", "cdk_nag", "yaml")
"""Top-level modules an application container must not need (the library's, not the client's, dependencies)."""
MAX_VENV_MB = 60
"""About 27 MB today, botocore's service data most of it; aws-cdk-lib alone would add several hundred MB."""
CHECK = """
import importlib.metadata, json, sys
import sagemaker_llm_cdk.client as client, sagemaker_llm_cdk.router_client as router
heavy = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[1].split(",")))
print(json.dumps({"heavy": heavy, "client": client.SessionClient.__name__, "router": router.RouterClient.__name__,
                  "files": [str(p) for p in importlib.metadata.files("sagemaker-llm-client") if p.suffix == ".py"],
                  "distributions": sorted(d.metadata["Name"].lower() for d in importlib.metadata.distributions())}))
"""


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, capture_output=True, text=True, timeout=240, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, args))}\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    return result


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory):
    """The wheel `make dist-client` builds, installed with boto3 (the version this checkout pins, from pip's
    cache or the registry) into a virtualenv of its own; pip runs from outside it, so the venv holds no pip."""
    tmp = tmp_path_factory.mktemp("client")
    start = time.monotonic()
    import shutil

    shutil.rmtree(CLIENTS / "build", ignore_errors=True)  # setuptools reuses it: a module no longer listed would stay
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp / "dist"), str(CLIENTS)])
    (wheel,) = (tmp / "dist").glob("sagemaker_llm_client-*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    pins = [f"boto3=={version('boto3')}", f"botocore=={version('botocore')}"]
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--find-links",
            str(tmp / "dist"),
            str(wheel),
            *pins,
        ]
    )
    return {"python": python, "venv": venv, "wheel": wheel, "seconds": time.monotonic() - start}


def test_the_wheel_holds_only_the_client_modules_built_from_the_librarys_files(client_venv):
    import zipfile

    names = sorted(
        n for n in zipfile.ZipFile(client_venv["wheel"]).namelist() if not n.startswith("sagemaker_llm_client-")
    )
    assert names == [
        "sagemaker_llm_cdk/__init__.py",
        "sagemaker_llm_cdk/client.py",
        "sagemaker_llm_cdk/client_streams.py",
        "sagemaker_llm_cdk/router_client.py",
    ]
    library = ROOT / "constructs" / "sagemaker_llm_cdk"
    with zipfile.ZipFile(client_venv["wheel"]) as wheel:
        for name in names:
            assert wheel.read(name) == (library / Path(name).name).read_bytes(), f"{name} is not the library's file"
        metadata = wheel.read(next(n for n in wheel.namelist() if n.endswith("/METADATA"))).decode()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requires == ["Requires-Dist: boto3<2,>=1.44.4"], requires


def test_importing_the_clients_loads_no_cdk_jsii_constructs_or_pydantic(client_venv):
    result = _run([str(client_venv["python"]), "-c", CHECK, ",".join(HEAVY)], cwd=client_venv["venv"])
    found = json.loads(result.stdout)
    assert found["heavy"] == [], f"importing the client loaded {found['heavy']}"
    assert (found["client"], found["router"]) == ("SessionClient", "RouterClient")
    assert found["distributions"] == sorted(
        ["boto3", "botocore", "jmespath", "python-dateutil", "s3transfer", "six", "urllib3", "sagemaker-llm-client"]
    ), found["distributions"]


def test_the_client_virtualenv_stays_small(client_venv):
    size = _size_mb(client_venv["venv"])
    print(f"client virtualenv: {size:.1f} MB, built and installed in {client_venv['seconds']:.1f} s")
    assert size < MAX_VENV_MB, f"the client's virtualenv is {size:.0f} MB (at most {MAX_VENV_MB})"


def test_the_client_modules_import_nothing_outside_the_client_and_the_standard_library():
    """Every module the wheel ships imports only the standard library, botocore/boto3 and each other: a module
    added to clients/pyproject.toml that needs more fails here, before any virtualenv is built."""
    import ast

    project = tomllib.loads((CLIENTS / "pyproject.toml").read_text(encoding="utf-8"))
    modules = project["tool"]["setuptools"]["py-modules"]
    allowed = set(sys.stdlib_module_names) | {"boto3", "botocore", "sagemaker_llm_cdk", "__future__"}
    for module in modules:
        source = ROOT / "constructs" / "sagemaker_llm_cdk" / (module.rsplit(".", 1)[1] + ".py")
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            if any(
                isinstance(parent, ast.If) and "TYPE_CHECKING" in ast.dump(parent.test)
                for parent in ast.walk(tree)
                if node in ast.walk(parent) and parent is not node
            ):
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in allowed, f"{module} imports {name}"
                if top == "sagemaker_llm_cdk":
                    assert name in modules or name == "sagemaker_llm_cdk", f"{module} imports {name}, not in the wheel"


def test_the_client_shares_the_librarys_version_python_and_boto3_range():
    client = tomllib.loads((CLIENTS / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    library = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert client["requires-python"] == library["requires-python"]
    boto3 = next(d for d in library["dependencies"] if d.startswith("boto3"))
    assert client["dependencies"] == [boto3]
