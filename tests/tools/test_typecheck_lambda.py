"""`make typecheck` checks every Lambda function too: strict mypy per handler folder, as its asset lays it out."""

from __future__ import annotations

from pathlib import Path

from tools.typecheck_lambda import handler_folders, main

ROOT = Path(__file__).resolve().parents[2]


def test_every_handler_folder_is_checked():
    assert [f.name for f in handler_folders(ROOT / "lambda")] == sorted(
        p.parent.name for p in (ROOT / "lambda").glob("*/index.py")
    )


def test_a_type_error_in_a_handler_fails_and_names_the_line(tmp_path, capsys):
    """What the tool catches: here the bug it found in the dataset check (a union member without the method)."""
    root = tmp_path / "lambda"
    (root / "_shared" / "llm_cdk_shared").mkdir(parents=True)
    (root / "_shared" / "llm_cdk_shared" / "__init__.py").write_text("")
    (root / "broken").mkdir()
    (root / "broken" / "index.py").write_text(
        "from __future__ import annotations\n\n\nclass Marker:\n    reason = 'x'\n\n\n"
        "def first(lines: list[bytes | Marker]) -> bytes:\n    return lines[0].strip()\n"
    )
    assert main(root) == 1
    printed = capsys.readouterr().out
    assert 'index.py:9: error: Item "Marker" of "bytes | Marker" has no attribute "strip"' in printed, printed
    assert printed.rstrip().endswith("on 1 Lambda function(s): findings in broken")
