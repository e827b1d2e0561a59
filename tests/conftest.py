"""Shared pytest fixtures: load Lambda handlers from lambda/<name>/, fake Lambda context, AWS env."""

from __future__ import annotations

import atexit
import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
# pytest rewrites the asserts of every test module on import and caches the result in tests/__pycache__ (ignored by
# git), unless bytecode writing is off, as PYTHONDONTWRITEBYTECODE turns it off on the machines here: then each
# worker rewrites and compiles all of them again, about 3.5 s of CPU per worker per run (collection 8.9 -> 5.0 s).
# The modules imported from here on (the tests, the library, the stacks) write their bytecode as Python does by
# default; subprocesses keep the caller's setting, and no staged asset or wheel takes __pycache__.
sys.dont_write_bytecode = False

from support import jsii_kernel  # noqa: E402  # before aws_cdk: its import starts the jsii kernel

JSII_RELAY_REASON = jsii_kernel.start()
"""None when this process's jsii kernel runs without jsii's relay process (tests/support/jsii_kernel.py)."""

import aws_cdk  # noqa: E402
import botocore.loaders  # noqa: E402
import botocore.session  # noqa: E402
import pytest  # noqa: E402

# Every new botocore session (each moto mock_aws() resets boto3's default session, each fresh handler module
# makes clients) gets its own data loader and parses endpoints.json and the service models again: about 0.1 s
# of CPU per test. Sessions in the test process share one loader instead, as the clients of one session
# (one Lambda execution environment) always do; the loaded models are read-only.
botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)

# CDK's built-in template validator (CloudFormationValidatePlugin, about half of an in-process synth) runs in a
# test exactly when its findings can fail the synth: when the app's context turns them into errors, as this
# repository's and every example's cdk.json does (`@aws-cdk/core:validateAgainstDefaultRules`, or
# `strictCfnValidateErrors`). Without that flag CDK reports them as warnings nobody reads, so an App built
# without it synthesizes as `cdk synth --no-validation` does. A test may still pass
# `builtin_cloud_formation_validation=` itself; the CLI tests (test_cli, test_wheel) run the validator as users do.
VALIDATION_FLAGS = ("@aws-cdk/core:validateAgainstDefaultRules", "@aws-cdk/core:strictCfnValidateErrors")
_APP_INIT = aws_cdk.App.__init__


def _validation_can_fail(context: dict | None) -> bool:
    given = context or {}
    return any(str(given.get(flag)).lower() == "true" for flag in VALIDATION_FLAGS)


@functools.cache
def _outdirs() -> Path:
    """One folder per test process for the cloud assemblies of Apps built without ``outdir``, removed at exit.
    (CDK would make each a ``cdk.outXXXXXX`` in the system temp folder and leave it there: tens of MB per synth.)"""
    folder = Path(tempfile.mkdtemp(prefix="sagemaker-llm-cdk-tests-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


_APPS_BUILT = [0]
"""CDK apps built in this process so far: a test that builds one carries the ``synth`` mark (see below)."""


@functools.wraps(_APP_INIT)
def _app_init(self: aws_cdk.App, **props: object) -> None:
    _APPS_BUILT[0] += 1
    if props.get("builtin_cloud_formation_validation") is None:
        props["builtin_cloud_formation_validation"] = _validation_can_fail(props.get("context"))  # type: ignore[arg-type]
    if props.get("outdir") is None and not os.environ.get("CDK_OUTDIR"):
        props["outdir"] = tempfile.mkdtemp(prefix="cdk.out", dir=_outdirs())
    _APP_INIT(self, **props)


aws_cdk.App.__init__ = _app_init  # type: ignore[method-assign]

_POPEN_INIT = subprocess.Popen.__init__


@functools.wraps(_POPEN_INIT)
def _popen_init(self: subprocess.Popen, args: Any, *rest: Any, **kwargs: Any) -> None:
    """A CDK app run in a child process (the CLI, ``python app.py``, ``make synth``) counts as an app built."""
    words = [args] if isinstance(args, (str, os.PathLike)) else list(args)
    names = {Path(str(word).split()[0]).name for word in words if str(word).strip()}
    if names & {"cdk", "app.py", "venv-python"} or ("make" in names and any("synth" in str(w) for w in words)):
        _APPS_BUILT[0] += 1
    _POPEN_INIT(self, args, *rest, **kwargs)


subprocess.Popen.__init__ = _popen_init  # type: ignore[method-assign]
LAMBDA_ROOT = ROOT / "lambda"
SHARED_ROOT = LAMBDA_ROOT / "_shared"
# The handlers' shared package (llm_cdk_shared) is importable as it is in each function's asset,
# where the synth copies it next to index.py.
if str(SHARED_ROOT) not in sys.path:
    sys.path.insert(0, str(SHARED_ROOT))


@dataclass
class FakeLambdaContext:
    function_name: str = "test-function"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:test-function"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    log_group_name: str = "/aws/lambda/test-function"
    log_stream_name: str = "2026/11/30/[$LATEST]abc"

    def get_remaining_time_in_millis(self) -> int:  # noqa: D401 - Lambda API name
        return 300_000


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext(aws_request_id=str(uuid.uuid4()))


@pytest.fixture(autouse=True)
def _aws_test_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach real AWS: fake credentials and a fixed region."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "SageMakerLlmTest")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "test")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")


def load_handler_module(function_dir: str, module: str = "index"):
    """Import ``lambda/<function_dir>/<module>.py`` as a fresh module.

    The folder is put first on ``sys.path`` so the handler's sibling modules import as
    they do in Lambda; each call returns a new module object so module-level state
    (cached clients) never leaks between tests.
    """
    folder = LAMBDA_ROOT / function_dir
    path = folder / f"{module}.py"
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    name = f"lambda_{function_dir}_{module}_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader, path
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    exec(_compiled(path, path.stat().st_mtime_ns), mod.__dict__)  # what spec.loader.exec_module does, compiled once
    return mod


@functools.cache
def _compiled(path: Path, mtime_ns: int) -> types.CodeType:
    """The handler's code object, compiled once per file version: a fresh module object runs it each time
    (where PYTHONDONTWRITEBYTECODE is set, as on the machines here, importlib compiles the source again each time)."""
    del mtime_ns  # part of the cache key only
    return compile(path.read_bytes(), str(path), "exec", dont_inherit=True)


@pytest.fixture
def load_handler():
    return load_handler_module


# ------------------------------------------------------------------ scheduling under pytest-xdist
# `make test` runs `pytest -n 2 --dist loadfile --no-loadscope-reorder`: each test module is one work unit, so
# a module-scoped fixture (a synthesized app, a checkov run) is built once, not once per worker, and the
# modules start longest first (SLOW_FIRST: CPU seconds per module, the test process and its children, as
# `python benchmarks/tests.py --by-module` prints them), so no worker picks up a minute-long module while the
# other has nothing left. This changes the order only: every test still runs, and each
# passes in any order. (pytest-xdist's `loadgroup` would allow finer units, but its xdist_group marks have
# no effect with pytest 9, whose nodes no longer take the suffix xdist writes into `_nodeid`.)
SLOW_FIRST = (
    "tests/cli/test_cli_bound.py",
    "tests/repo/test_wheel.py",
    "tests/capacity/test_capacity_consent.py",
    "tests/stacks/test_pipeline.py",
    "tests/lambda/test_eagle_dataset_properties.py",
    "tests/lambda/test_session_router.py",
    "tests/core/test_removal.py",
    "tests/cli/test_cli.py",
    "tests/config/test_bad_configs.py",
    "tests/docs/test_docs.py",
    "tests/stacks/test_bound_stacks.py",
    "tests/eagle/test_eagle.py",
    "tests/hosting/test_jumpstart.py",
    "tests/operations/test_monitoring.py",
    "tests/lambda/test_eagle_job.py",
    "tests/sessions/test_session_front_door.py",
    "tests/lambda/test_shared.py",
    "tests/checks/test_run_checkov.py",
    "tests/lambda/test_eagle_dataset.py",
    "tests/core/test_schedule_expression.py",
    "tests/hosting/test_endpoint.py",
    "tests/capacity/test_capacity_plan_construct.py",
    "tests/adapters/test_lora_adapter.py",
    "tests/stacks/test_app.py",
    "tests/eagle/test_eagle_benchmark.py",
)
"""Test modules by CPU time, longest first; any other module runs after these, in collection order."""


def _rank(nodeid: str) -> int:
    module = nodeid.split("::", 1)[0]
    return SLOW_FIRST.index(module) if module in SLOW_FIRST else len(SLOW_FIRST)


@pytest.fixture(params=["update", "restore"])
def replacement_rollback(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each reading of how CloudFormation rolls back a replaced custom resource (``Stack.replacement_rollback`` in
    ``tests/support/lifecycle.py``): a lifecycle module marks itself ``usefixtures("replacement_rollback")`` and its
    every test runs under both."""
    from support import lifecycle

    monkeypatch.setattr(lifecycle, "REPLACEMENT_ROLLBACK", request.param)
    return str(request.param)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: _rank(item.nodeid))  # stable: collection order within a module


# ------------------------------------------------------------------ the fast loop: tests that build no CDK app
# `make test-fast` runs the tests without the marks synth, cli and wheel: settings, handlers and tools, in under a
# minute. The marks stay true because every run checks them: a test (or a fixture it sets up) that builds a CDK app
# without the synth mark fails, naming the mark to add, so no test that synthesizes hides in the fast loop.
SLOW_MARKS = ("synth", "cli", "wheel", "docs")
FAST = os.environ.get("SAGEMAKER_LLM_CDK_TEST_FAST") == "1"
_MODULE_MARK = re.compile(r"^pytestmark = \[?pytest\.mark\.(synth|cli|wheel|docs)\b", re.MULTILINE)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """In the fast loop, a module whose every test carries a slow mark is not even imported: its imports (the
    stacks, CDK's modules) cost each worker seconds of collection for tests the marks deselect anyway."""
    test_module = collection_path.suffix == ".py" and collection_path.name.startswith("test_")
    if FAST and test_module and _MODULE_MARK.search(collection_path.read_text(encoding="utf-8")):
        return True
    return None


def _check_synth_mark(item: pytest.Item, before: int) -> None:
    if _APPS_BUILT[0] != before and not any(item.get_closest_marker(mark) for mark in SLOW_MARKS):
        pytest.fail(
            f"{item.nodeid} builds a CDK app (a synth) but has no synth mark: add "
            "`pytestmark = pytest.mark.synth` to its module (or @pytest.mark.synth to the test), "
            "so `make test-fast` leaves it out",
            pytrace=False,
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    before = _APPS_BUILT[0]
    yield
    _check_synth_mark(item, before)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest):
    before = _APPS_BUILT[0]
    yield
    item = getattr(request, "_pyfuncitem", None)
    if item is not None:
        _check_synth_mark(item, before)


# ------------------------------------------------------------------ no patch outlives its test module
# With --dist loadfile a worker runs many modules in one process: a process-wide function replaced for one module
# (not through monkeypatch) breaks whichever module runs next there, in an order that changes with the timing.
_PROCESS_WIDE: dict[str, tuple[object, types.ModuleType, str]] = {
    "urllib.request.urlopen": (urllib.request.urlopen, urllib.request, "urlopen"),
    "time.sleep": (time.sleep, time, "sleep"),
}
_ended: list[str] = []


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if nextitem is None or nextitem.path != item.path:  # the module's fixtures are finalized after this hook:
        _ended[:] = [item.nodeid.split("::", 1)[0]]  # look at the next module's first setup


def pytest_runtest_setup(item: pytest.Item) -> None:
    if _ended:
        module = _ended.pop()
        changed = [
            name
            for name, (original, owner, attribute) in _PROCESS_WIDE.items()
            if getattr(owner, attribute) is not original
        ]
        assert not changed, f"{module} left {changed} replaced for the rest of this worker: patch them with monkeypatch"
