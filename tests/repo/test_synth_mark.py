"""The synth mark stays true: a test that builds a CDK app without it fails (tests/conftest.py), so the fast loop
(`make test-fast`, every test without synth, cli and wheel) holds no synth."""

from __future__ import annotations

import aws_cdk
import pytest


def _guard(request: pytest.FixtureRequest):
    return next(p for p in request.config.pluginmanager.get_plugins() if hasattr(p, "_check_synth_mark"))


class _Item:
    def __init__(self, marks: tuple[str, ...]) -> None:
        self.nodeid, self._marks = "tests/test_x.py::test_y", marks

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self._marks else None


def test_an_app_built_without_the_mark_fails_naming_the_mark(request):
    guard = _guard(request)
    before = guard._APPS_BUILT[0]
    aws_cdk.App()  # counted by the patched App.__init__, as any test's app is
    try:
        with pytest.raises(pytest.fail.Exception, match=r"test_y builds a CDK app .*pytestmark = pytest.mark.synth"):
            guard._check_synth_mark(_Item(()), before)
        for mark in ("synth", "cli", "wheel"):
            guard._check_synth_mark(_Item((mark,)), before)  # marked: no failure
    finally:
        guard._APPS_BUILT[0] = before  # this test's own app is the probe, not a finding


def test_a_test_that_builds_no_app_passes_unmarked(request):
    guard = _guard(request)
    guard._check_synth_mark(_Item(()), guard._APPS_BUILT[0])
