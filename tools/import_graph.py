"""The library's and the team's import graphs, checked for cycles and for the package layers.

``python -m tools.import_graph`` prints every problem and exits 1 when there is one; ``--matrix`` prints the
package matrix (which package imports which, and how many import statements say so).

Every import counts, wherever it is written: at module level, deferred into a function, and under
``if TYPE_CHECKING:`` (a type-only import still makes one package know another's classes). Three rules:

* **Layers.** Each package of the library has a layer (``LAYERS``, lowest first). A module may import its own
  package and the packages of lower layers only: never a higher layer, and never a sibling in its own layer. The
  few exceptions are in ``ALLOWED``, at most ``MAX_ALLOWED`` edges, each with its reason; an exception the code no
  longer needs is a problem too, so the list only shrinks.
* **No cycle of modules**, counting the imports that run (module level and deferred). Type-only imports inside
  one package (a component naming its endpoint's class) are left out of this rule, not out of the layers.
* **The floor builds nothing**: no module of ``core``'s plain modules or of ``settings`` reaches ``aws_cdk``
  through its imports, so a config is checked without CDK.

The team's ``stacks/`` (and ``app.py``) import the library through its public root only (``from
sagemaker_llm_cdk import ...``), and its modules form no cycle either.

Importing a submodule runs its package's ``__init__``, so ``a.b`` also depends on ``a`` (except for modules
inside ``a``: their package is being imported already).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "sagemaker_llm_cdk"
REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "constructs" / PACKAGE

LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("settings",),
    ("hosting",),
    ("adapters", "capacity"),
    ("sessions",),
    ("eagle",),
    ("operations",),
    ("routing",),
    ("config",),
    ("client_streams",),
    ("preflight", "checks", "client"),
    ("router_client", "agents"),
    ("",),  # the package's root: its public names
)
"""The library's packages, lowest first. ``""`` is the root ``__init__``; a top-level module is its own package."""

ALLOWED: dict[tuple[str, str], str] = {}
"""(importing package, imported package) -> why this edge against the layers is kept."""

MAX_ALLOWED = 2

CONSTRUCT_FREE = ("settings", "config")
"""Packages that must not reach ``aws_cdk`` through their imports (``core`` is checked module by module)."""


@dataclass(frozen=True)
class Import:
    """One import of a library module: where it is written and how it runs."""

    source: str
    target: str
    line: int
    kind: str  # "module" (module level), "deferred" (inside a function) or "type" (under TYPE_CHECKING)


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _kind(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str:
    kind = "module"
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return "type"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            kind = "deferred"
    return kind


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    return [module] + [f"{module}.{alias.name}" for alias in node.names]


def imports_in(path: Path, modules: set[str], root: Path = ROOT) -> tuple[list[Import], bool]:
    """Every import of a library module in ``path``, and whether ``path`` imports ``aws_cdk`` itself."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: dict[tuple[str, str], Import] = {}
    uses_cdk = False
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        kind = _kind(node, parents)
        for target in _targets(node, package):
            if target.split(".")[0] == "aws_cdk" and kind != "type":
                uses_cdk = True
            while target and target not in modules:
                target = target.rpartition(".")[0]
            chain = [target]
            parent = target.rpartition(".")[0]
            while parent:  # importing a.b.c runs a and a.b first
                chain.append(parent)
                parent = parent.rpartition(".")[0]
            for hop in chain:
                if hop and hop in modules and hop != name and not name.startswith(hop + "."):
                    key = (hop, kind)
                    if key not in found or found[key].line > node.lineno:
                        found[key] = Import(name, hop, node.lineno, kind)
    return sorted(found.values(), key=lambda i: (i.target, i.kind)), uses_cdk


def collect(root: Path = ROOT) -> tuple[list[Import], set[str], set[str]]:
    """(every import, every module, the modules that import ``aws_cdk`` themselves)."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(files)
    every: list[Import] = []
    constructs: set[str] = set()
    for path in files.values():
        found, uses_cdk = imports_in(path, modules, root)
        every.extend(found)
        if uses_cdk:
            constructs.add(module_name(path, root))
    return every, modules, constructs


def package_of(module: str) -> str:
    """``sagemaker_llm_cdk.hosting.endpoint`` -> ``hosting``; the root -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


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


def _layer_of(layers: tuple[tuple[str, ...], ...]) -> dict[str, int]:
    return {package: rank for rank, group in enumerate(layers) for package in group}


def layer_problems(
    every: list[Import],
    layers: tuple[tuple[str, ...], ...] = LAYERS,
    allowed: dict[tuple[str, str], str] = ALLOWED,
) -> list[str]:
    rank = _layer_of(layers)
    found: list[str] = []
    if len(allowed) > MAX_ALLOWED:
        found.append(f"ALLOWED holds {len(allowed)} edges against the layers; at most {MAX_ALLOWED}")
    used: set[tuple[str, str]] = set()
    by_edge: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for item in every:
        source, target = package_of(item.source), package_of(item.target)
        if source == target:
            continue
        for package in (source, target):
            if package not in rank:
                found.append(f"{item.source}: package {package!r} has no layer in LAYERS (tools/import_graph.py)")
        if source in rank and target in rank and rank[target] >= rank[source]:
            by_edge[(source, target)].append(item)
    for (source, target), items in sorted(by_edge.items()):
        if (source, target) in allowed:
            used.add((source, target))
            continue
        where = "a sibling in its layer" if rank[source] == rank[target] else "a higher layer"
        places = sorted({(i.source, i.line, i.kind) for i in items})
        first = ", ".join(f"{source}:{line} ({kind})" for source, line, kind in places[:3])
        more = f" and {len(places) - 3} more" if len(places) > 3 else ""
        found.append(f"{source or '(root)'} imports {target or '(root)'}, {where}: {first}{more}")
    for edge in sorted(set(allowed) - used):
        found.append(f"ALLOWED edge {edge[0]} -> {edge[1]} is no longer imported: remove it from the list")
    return sorted(set(found), key=found.index)


def problems(root: Path = ROOT) -> list[str]:
    every, modules, constructs = collect(root)
    running: dict[str, set[str]] = defaultdict(set)
    for item in every:
        if item.kind != "type":
            running[item.source].add(item.target)
    found = [f"import cycle: {' <-> '.join(component)}" for component in cycles(running)]
    found.extend(layer_problems(every))
    for module in sorted(modules):
        if package_of(module) in CONSTRUCT_FREE:
            bad = sorted(t for t in _reach(running, module) | {module} if t in constructs)
            found.extend(
                f"{module} ({package_of(module)}) reaches, through its imports, the construct module {t}" for t in bad
            )
    return found


def team_problems(repo: Path = REPO) -> list[str]:
    """The team's app: ``stacks/`` and ``app.py`` import the library's public root only and form no cycle."""
    files = sorted((repo / "stacks").glob("*.py")) + [repo / "app.py"]
    names = {f"stacks.{p.stem}" if p.parent.name == "stacks" else p.stem: p for p in files if p.exists()}
    names = {("stacks" if n == "stacks.__init__" else n): p for n, p in names.items()}
    found: list[str] = []
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in names.items():
        package = "stacks" if name.startswith("stacks") else ""
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            spelled = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for target in spelled:
                if target.startswith(f"{PACKAGE}."):
                    found.append(
                        f"{path.relative_to(repo)}:{node.lineno} imports {target}: the team's app imports "
                        f"the library's public root only (from {PACKAGE} import ...)"
                    )
            for target in _targets(node, package):
                if target in names and target != name and not (name.startswith("stacks") and target == "stacks"):
                    edges[name].add(target)
    found = sorted(set(found))
    found.extend(f"import cycle: {' <-> '.join(component)}" for component in cycles(edges))
    return found


def matrix(root: Path = ROOT) -> list[str]:
    """One line per (package, package) edge: how many imports, of which kinds."""
    every, _, _ = collect(root)
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for item in every:
        source, target = package_of(item.source), package_of(item.target)
        if source != target:
            counts[(source, target)][item.kind] += 1
    rank = _layer_of(LAYERS)
    return [
        f"{source or '(root)':>13} -> {target or '(root)':<13} "
        + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        for (source, target), kinds in sorted(counts.items(), key=lambda e: (rank.get(e[0][0], 99), e[0]))
    ]


def main(argv: list[str]) -> int:
    if "--matrix" in argv:
        print("\n".join(matrix()))
        return 0
    found = problems() + team_problems()
    for line in found:
        print(line)
    if not found:
        every, modules, _ = collect()
        print(
            f"{len(modules)} modules, {len(every)} imports between them, no cycle, layers kept "
            f"({len(ALLOWED)} allowed edge{'s' if len(ALLOWED) != 1 else ''}); the team's app imports the public root"
        )
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
