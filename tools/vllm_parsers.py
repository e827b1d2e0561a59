"""The tool-call and reasoning parser names a vLLM wheel registers, for ``settings/tool_calling.py``'s tables.

Usage: ``python -m tools.vllm_parsers vllm-0.26.0-...whl`` (get the wheel with
``pip download --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 --python-version 3.12 vllm==<v>``)
prints the wheel's SHA-256 and both sorted name lists. Nothing is imported from the wheel: its sources are
parsed, so no GPU, torch or vLLM install is needed. Names come from the lazy registration tables
(``_TOOL_PARSERS_TO_REGISTER`` / ``_REASONING_PARSERS_TO_REGISTER``, vLLM 0.13 and later) and from
``ToolParserManager.register_module(...)`` / ``ReasoningParserManager.register_module(...)`` calls and
decorators (earlier releases).
"""

from __future__ import annotations

import ast
import hashlib
import sys
import zipfile
from pathlib import Path

_TABLES = {"_TOOL_PARSERS_TO_REGISTER": "tool", "_REASONING_PARSERS_TO_REGISTER": "reasoning"}
_MANAGERS = {"ToolParserManager": "tool", "ReasoningParserManager": "reasoning"}
_FOLDERS = ("vllm/tool_parsers/", "vllm/entrypoints/openai/tool_parsers/", "vllm/reasoning/")


def names_in_source(source: str) -> dict[str, set[str]]:
    """``{"tool": {...}, "reasoning": {...}}`` registered by one module's source."""
    found: dict[str, set[str]] = {"tool": set(), "reasoning": set()}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            kind = _TABLES.get(node.targets[0].id)
            if kind is not None and isinstance(node.value, ast.Dict):
                found[kind].update(
                    k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
                )
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("register_module", "register_lazy_module")
            and isinstance(node.func.value, ast.Name)
        ):
            kind = _MANAGERS.get(node.func.value.id)
            arguments = [*node.args, *(k.value for k in node.keywords if k.arg in ("name", "names"))]
            if kind is None or not arguments:
                continue
            try:
                value = ast.literal_eval(arguments[0])
            except ValueError:
                continue  # a variable (the lazy table's loop): the table itself is read above
            found[kind].update([value] if isinstance(value, str) else [v for v in value if isinstance(v, str)])
    return found


def names_in_wheel(path: Path) -> dict[str, set[str]]:
    """Every parser name the wheel at ``path`` registers, by kind."""
    found: dict[str, set[str]] = {"tool": set(), "reasoning": set()}
    with zipfile.ZipFile(path) as wheel:
        for member in wheel.namelist():
            if member.endswith(".py") and member.startswith(_FOLDERS):
                for kind, names in names_in_source(wheel.read(member).decode("utf-8")).items():
                    found[kind] |= names
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[0])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    names = names_in_wheel(path)
    print(f"{path.name} sha256:{digest}")
    for kind in ("tool", "reasoning"):
        print(f"{kind} ({len(names[kind])}): {', '.join(sorted(names[kind]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
