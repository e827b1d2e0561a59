"""The tests' own layout: every test module in a folder of what it tests, and no test module importing another."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_test_module_lies_at_the_top():
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []


def test_test_modules_share_helpers_through_support_only():
    imports = []
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            imports += [
                f"{path.relative_to(TESTS)}: {name}" for name in names if name.split(".")[-1].startswith("test_")
            ]
    assert imports == []
