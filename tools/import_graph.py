"""The library's import graph, checked for cycles and for the layering rules.

``python -m tools.import_graph`` prints every problem and exits 1 when there is one:

* a cycle among the library's modules, counting every import that runs (module level and deferred into a
  function); imports under ``if TYPE_CHECKING:`` never run and are left out;
* a module of ``core`` (shared internals) that imports a feature package;
* a module of ``config`` that imports, even indirectly, a construct module (one that imports ``aws_cdk``):
  the config model is settings only, so a config can be checked without CDK.

Importing a submodule runs its package's ``__init__``, so ``a.b`` also depends on ``a`` (except for modules
inside ``a``: their package is being imported already).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "sagemaker_llm_cdk"
ROOT = Path(__file__).resolve().parents[1] / "constructs" / PACKAGE
FEATURES = ("hosting", "adapters", "capacity", "sessions", "eagle", "operations", "routing", "config", "preflight")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imports_of(path: Path, modules: set[str], root: Path = ROOT) -> dict[str, bool]:
    """The library modules ``path`` imports at run time -> whether ``aws_cdk`` is among its own imports (key '')."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: dict[str, bool] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or _type_checking_only(node, parents):
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        for target in targets:
            if target.split(".")[0] == "aws_cdk":
                found[""] = True
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                found[target] = True
                # importing a.b.c runs a and a.b first
                parent = target.rpartition(".")[0]
                while parent:
                    if parent != name and parent in modules and not name.startswith(parent + "."):
                        found[parent] = True
                    parent = parent.rpartition(".")[0]
    return found


def graph(root: Path = ROOT) -> tuple[dict[str, set[str]], set[str]]:
    """(module -> library modules it imports, modules that import aws_cdk themselves)."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(files)
    edges: dict[str, set[str]] = {}
    constructs: set[str] = set()
    for name, path in files.items():
        found = imports_of(path, modules, root)
        if found.pop("", False):
            constructs.add(name)
        edges[name] = set(found)
    return edges, constructs


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _reach(edges: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def problems(root: Path = ROOT) -> list[str]:
    edges, constructs = graph(root)
    found = [f"import cycle: {' <-> '.join(component)}" for component in cycles(edges)]
    for module, targets in sorted(edges.items()):
        part = module.split(".")[1] if module.count(".") else ""
        if part == "core":
            bad = sorted(t for t in targets if t.count(".") and t.split(".")[1] in FEATURES)
            found.extend(f"{module} (core) imports the feature module {t}" for t in bad)
        if part == "config":
            bad = sorted(t for t in _reach(edges, module) | {module} if t in constructs)
            found.extend(f"{module} (config) imports, through its imports, the construct module {t}" for t in bad)
    return found


def main() -> int:
    found = problems()
    for line in found:
        print(line)
    if not found:
        edges, _ = graph()
        print(f"{len(edges)} modules, {sum(map(len, edges.values()))} import arrows, no cycle, layers kept")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
