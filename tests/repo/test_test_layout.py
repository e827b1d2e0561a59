"""The tests' own layout: every test module in a folder of what it tests, and no test module importing another."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
IMPORT_OF_A_TEST = re.compile(r"^\s*(?:from|import)\s+(?:[\w.]+\.)?test_\w*", re.MULTILINE)


def test_no_test_module_lies_at_the_top():
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []


def test_test_modules_share_helpers_through_support_only():
    found = [
        f"{path.relative_to(TESTS)}: {match.group(0).strip()}"
        for path in sorted(TESTS.rglob("*.py"))
        for match in IMPORT_OF_A_TEST.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_an_import_of_another_test_module_is_seen():
    assert IMPORT_OF_A_TEST.search("    from test_eagle import build\n")
    assert IMPORT_OF_A_TEST.search("import eagle.test_eagle\n")
    assert not IMPORT_OF_A_TEST.search("from support.eagle import build\n")
