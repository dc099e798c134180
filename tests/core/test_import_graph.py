"""No import cycles in the package, function-level imports included: between modules, and between the
sub-packages of ``isoscope`` (``isoscope.evaluate`` and ``isoscope.geometry`` may not import each other); and no module
over 600 lines.

docs/CONVENTIONS.md states the rule; the graph is read from the source (``tests/import_graph.py``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.import_graph import ROOTS, coarse, cycles, import_graph, module_files

REPO = Path(__file__).resolve().parents[2]


def _explain(found: list[list[str]], graph: dict[str, set[str]]) -> str:
    lines = []
    for component in found:
        members = set(component)
        lines += [f"{m} -> {', '.join(sorted(graph[m] & members))}" for m in component]
    return "\n".join(lines)


def test_the_graph_sees_the_package() -> None:
    modules = module_files(REPO)
    assert {"isoscope", "isoscope.cli", "isoscope.dashboard", "isoscope.space.space"} <= set(modules)
    graph = import_graph(modules)
    # a function-level import counts (the CLI imports the chosen command inside a function, by name, so use
    # one the graph can read: Space.report imports isoscope.space.report inside the method)
    assert "isoscope.space.report" in graph["isoscope.space.space"]


def test_no_module_imports_itself_back() -> None:
    graph = import_graph(module_files(REPO))
    found = cycles(graph)
    assert not found, f"import cycles between modules:\n{_explain(found, graph)}"


def test_no_subpackage_imports_itself_back() -> None:
    graph = coarse(import_graph(module_files(REPO)))
    found = cycles(graph)
    assert not found, f"import cycles between sub-packages:\n{_explain(found, graph)}"


def _copy(tmp_path: Path) -> Path:
    for folder in ROOTS:
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__", "static"))
    return tmp_path


def test_a_planted_function_level_cycle_is_found(tmp_path: Path) -> None:
    """The check can fail: isoscope.sampling and isoscope.linalg importing each other, both inside functions,
    make a cycle of modules and of top-level units."""
    repo = _copy(tmp_path)
    (repo / "core" / "sampling.py").write_text(
        (repo / "core" / "sampling.py").read_text() + "\n\ndef _planted():\n    from isoscope import linalg\n"
    )
    (repo / "core" / "linalg.py").write_text(
        (repo / "core" / "linalg.py").read_text() + "\n\ndef _planted():\n    import isoscope.sampling\n"
    )
    graph = import_graph(module_files(repo))
    assert ["isoscope.linalg", "isoscope.sampling"] in cycles(graph)
    assert ["isoscope.linalg", "isoscope.sampling"] in cycles(coarse(graph))


def test_a_planted_subpackage_cycle_is_found(tmp_path: Path) -> None:
    repo = _copy(tmp_path)
    target = repo / "core" / "neighbours" / "exact.py"
    target.write_text(target.read_text() + "\n\ndef _planted():\n    from isoscope.atlas.pipeline import AtlasConfig\n")
    found = cycles(coarse(import_graph(module_files(repo))))
    assert any({"isoscope.atlas", "isoscope.neighbours"} <= set(c) for c in found)


def test_type_checking_imports_do_not_count(tmp_path: Path) -> None:
    repo = _copy(tmp_path)
    target = repo / "core" / "sampling.py"
    target.write_text(
        target.read_text() + "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import isoscope.cli\n"
    )
    graph = import_graph(module_files(repo))
    assert "isoscope.cli" not in graph["isoscope.sampling"]


def test_no_two_public_classes_share_a_name() -> None:
    """One name per idea: a public class name (no leading underscore) is defined once in the package."""
    import ast
    from collections import defaultdict

    where: dict[str, list[str]] = defaultdict(list)
    for module, path in module_files(REPO).items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where[node.name].append(module)
    shared = {name: modules for name, modules in where.items() if len(modules) > 1}
    assert not shared, f"public classes defined more than once: {shared}"


def test_no_file_is_longer_than_a_reader_can_hold() -> None:
    """docs/CONVENTIONS.md caps a module at 600 lines (split it by concept past that)."""
    long = {name: n for name, path in module_files(REPO).items() if (n := len(path.read_text().splitlines())) > 600}
    assert not long, f"modules over 600 lines: {long}"
