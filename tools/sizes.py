"""Module and function sizes, held to a ceiling: no module over ``MAX_MODULE_LINES`` lines and no function over
``MAX_FUNCTION_LINES``, in the library (``constructs/``), the handlers (``lambda/``), the team's ``stacks/`` and
``tools/``, except the few on ``ALLOWED``, a list that may only shrink.

``python -m tools.sizes`` prints every module or function over its ceiling that is not on the list, every entry
of the list that is now within its ceiling (take it off), and every entry that grew (its size on the list is the
most it may have); it exits 1 when there is one. ``--all`` prints the largest ones whatever the list says.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("constructs", "lambda", "stacks", "tools")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 120

ALLOWED: dict[str, int] = {
    # The endpoint and its components: their constructors build the resources in the order the templates keep.
    "constructs/sagemaker_llm_cdk/hosting/endpoint.py": 738,
    "constructs/sagemaker_llm_cdk/hosting/endpoint.py::LlmEndpoint.__init__": 237,
    "constructs/sagemaker_llm_cdk/hosting/model_component.py": 687,
    "constructs/sagemaker_llm_cdk/hosting/model_component.py::ModelComponent.__init__": 145,
    "constructs/sagemaker_llm_cdk/hosting/speculative_decoding.py::SpeculativeDecoding.__init__": 166,
}
"""``path`` (a module) or ``path::qualified.name`` (a function) -> the most lines it may have. Only shrinks."""


def python_files(repo: Path = REPO) -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (repo / folder).rglob("*.py") if "__pycache__" not in p.parts)


def sizes(path: Path, repo: Path = REPO) -> dict[str, int]:
    """Each size ``path`` holds: the module's lines, and each function's (its decorators and body)."""
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(repo).as_posix()
    found = {rel: len(text.splitlines())}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found[f"{rel}::{name}"] = (child.end_lineno or child.lineno) - first + 1
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(text), "")
    return found


def ceiling(key: str) -> int:
    return MAX_FUNCTION_LINES if "::" in key else MAX_MODULE_LINES


def problems(repo: Path = REPO, allowed: dict[str, int] = ALLOWED) -> list[str]:
    measured: dict[str, int] = {}
    for path in python_files(repo):
        measured.update(sizes(path, repo))
    found = []
    for key, lines in sorted(measured.items()):
        kind = "function" if "::" in key else "module"
        if key in allowed:
            if lines > allowed[key]:
                found.append(f"{key}: {lines} lines, more than the {allowed[key]} ALLOWED says (tools/sizes.py)")
        elif lines > ceiling(key):
            found.append(f"{key}: a {kind} of {lines} lines; at most {ceiling(key)}: split it by concept")
    for key, most in sorted(allowed.items()):
        if key not in measured:
            found.append(f"{key}: on ALLOWED but gone: take it off the list")
        elif measured[key] <= ceiling(key):
            found.append(f"{key}: {measured[key]} lines, within the ceiling now: take it off ALLOWED")
        elif measured[key] < most:
            found.append(f"{key}: {measured[key]} lines, fewer than the {most} ALLOWED says: lower it")
    return found


def main(argv: list[str]) -> int:
    if "--all" in argv:
        measured: dict[str, int] = {}
        for path in python_files():
            measured.update(sizes(path))
        over = sorted(((n, k) for k, n in measured.items() if n > ceiling(k)), reverse=True)
        print("\n".join(f"{n:5} {k}" for n, k in over))
        return 0
    found = problems()
    print(
        "\n".join(found)
        if found
        else f"no module over {MAX_MODULE_LINES} lines, no function over "
        f"{MAX_FUNCTION_LINES} ({len(ALLOWED)} on the list)"
    )
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
