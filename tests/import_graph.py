"""The import graph of the package, read from the source with ``ast`` (nothing is imported).

Every ``import isoscope...`` / ``from isoscope... import ...`` counts, at module level or inside a function,
except those under ``if TYPE_CHECKING:`` (never run). Tools that read folder names cannot build this graph:
setuptools' package-dir mapping names ``core/`` ``isoscope`` and ``dashboard/`` ``isoscope.dashboard``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOTS: dict[str, str] = {"core": "isoscope", "dashboard": "isoscope.dashboard"}  # folder -> package


def module_files(repo: Path, roots: Mapping[str, str] = ROOTS) -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` under the roots (packages by their ``__init__``)."""
    out: dict[str, Path] = {}
    for folder, package in roots.items():
        for path in sorted((repo / folder).rglob("*.py")):
            parts = list(path.relative_to(repo / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` blocks."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return inside


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` statement names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, *([node.module] if node.module else [])])


def _resolve(name: str, modules: Mapping[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is one of ``modules`` (``isoscope.x.f`` -> isoscope.x)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(
    module: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules: Mapping[str, Path]
) -> Iterable[str]:
    """The package modules a statement loads: ``from isoscope.a import b`` is ``isoscope.a.b`` when that is a
    module, else ``isoscope.a``. A package's ``__init__`` that Python runs before any of its modules is not an
    edge of its own: every module has it, and a package that imports its modules on first use is no cycle."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = _base(module, is_package, node)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    for name in names:
        found = _resolve(name, modules)
        if found is not None:
            yield found


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """module -> the package modules it imports (run-time imports only)."""
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = _type_checking_nodes(tree)
        deps: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skip:
                deps.update(_imported(module, path.name == "__init__.py", node, modules))
        deps.discard(module)
        graph[module] = deps
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def subpackage(module: str) -> str:
    """The unit of the coarse graph: ``isoscope.geometry.metrics`` -> ``isoscope.geometry``; the dashboard's
    ``isoscope.dashboard.ui.space`` -> ``isoscope.dashboard.ui``; top-level modules stand for themselves."""
    parts = module.split(".")
    depth = 3 if parts[1:2] == ["dashboard"] else 2
    return ".".join(parts[:depth])


def coarse(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """The graph between sub-packages (edges inside one sub-package dropped)."""
    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        unit = subpackage(module)
        out.setdefault(unit, set()).update(d for d in map(subpackage, deps) if d != unit)
    return out
