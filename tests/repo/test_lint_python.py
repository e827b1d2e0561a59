"""`make check`'s Python lint: ruff with pyflakes' rules over the whole repository finds nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing_in_the_repository():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_would_catch_an_undefined_name_and_an_unused_import(tmp_path):
    """The settings select pyflakes' rules: a file with both findings fails the same command."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("import os\n\n\ndef f():\n    return undefined_name\n")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "bad.py:1:8: F401" in result.stdout and "bad.py:5:12: F821" in result.stdout, result.stdout


def test_a_tree_without_git_skips_what_a_synth_writes(tmp_path):
    """ruff reads .gitignore only in a git checkout: in a source archive's tree, cdk.out's bundled third-party code
    (the SDK layer's packages) must still be skipped, as the settings name it."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "app.py").write_text("print('ok')\n")
    bundled = tmp_path / "cdk.out" / "asset.0123" / "python" / "vendor"
    bundled.mkdir(parents=True)
    (bundled / "__init__.py").write_text("from ._impl import *\nimport os\n")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
