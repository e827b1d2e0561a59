"""Shared pytest fixtures: load Lambda handlers from lambda/<name>/, fake Lambda context, AWS env."""
from __future__ import annotations

import functools
import importlib.util
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import botocore.loaders
import botocore.session
import pytest

ROOT = Path(__file__).resolve().parents[1]

# Every new botocore session (each moto mock_aws() resets boto3's default session, each fresh handler module
# makes clients) gets its own data loader and parses endpoints.json and the service models again: about 0.1 s
# of CPU per test. Sessions in the test process share one loader instead, as the clients of one session
# (one Lambda execution environment) always do; the loaded models are read-only.
botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)
sys.path.insert(0, str(ROOT / "tests"))
LAMBDA_ROOT = ROOT / "lambda"


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
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def load_handler():
    return load_handler_module


# ------------------------------------------------------------------ scheduling under pytest-xdist
# `make test` runs `pytest -n 2 --dist loadgroup --no-loadscope-reorder`. Two things keep both workers
# busy to the end and stop them doing the same expensive work twice:
#
# * The tests of a module that use one of its module-scoped fixtures (a synthesized app, a checkov run)
#   are one work unit (an ``xdist_group`` named after the module), so the fixture is built once, not
#   once per worker. Every other test is scheduled on its own.
# * The longest work units start first (SLOW_FIRST, measured with ``--durations``), so no worker picks
#   up a minute-long test while the other has nothing left. Order only: every test still runs, and
#   each one passes in any order (nothing here is needed for a test to pass).
SLOW_FIRST = (
    "tests/test_wheel.py::test_consumer_apps_synthesize_from_the_installed_wheel",
    "tests/test_pipeline.py",
    "tests/test_cli.py",
    "tests/test_run_checkov.py",
    "tests/test_examples.py",
    "tests/test_docs.py",
    "tests/test_preflight.py",
    "tests/test_app.py",
    "tests/test_lora_adapter.py",
    "tests/test_vpc.py",
    "tests/test_session_front_door.py",
    "tests/test_change_report.py",
    "tests/test_capacity_consent.py",
)


def pytest_configure(config: pytest.Config) -> None:
    # Registered here too, so --strict-markers passes with -p no:xdist.
    config.addinivalue_line("markers", "xdist_group(name): run on one xdist worker with the other tests of name")


def _rank(nodeid: str) -> int:
    for index, prefix in enumerate(SLOW_FIRST):
        if nodeid == prefix or nodeid.startswith(prefix + "::") or nodeid.startswith(prefix + "["):
            return index
    return len(SLOW_FIRST)


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    module = item.nodeid.split("::", 1)[0]
    return any(fixturedef.scope in ("module", "class", "package") and fixturedef.baseid.startswith(module)
               for fixturedefs in info.name2fixturedefs.values() for fixturedef in fixturedefs)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    items.sort(key=lambda item: _rank(item.nodeid))  # stable: collection order within a rank
