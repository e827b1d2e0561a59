"""`make check`'s Python lint: ruff with pyflakes' rules over the whole repository finds nothing."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing_in_the_repository():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_would_catch_an_undefined_name_and_an_unused_import(tmp_path):
    """The settings select pyflakes' rules: a file with both findings fails the same command."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("import os\n\n\ndef f():\n    return undefined_name\n")
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "bad.py:1:8: F401" in result.stdout and "bad.py:5:12: F821" in result.stdout, result.stdout
