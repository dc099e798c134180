"""Issue 36: public functions with many parameters take the optional ones keyword-only, so no call reads
``sts_of_vectors(a, b, pairs, calibrator, fit, fit_on, name, None, stage, seed)``. Checked by reading the source
(an AST walk) of every package and module of ``core/`` and ``dashboard/``, so it stays true; the few signatures whose positional form
is the natural one are listed in ``POSITIONAL`` with the reason."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("core", "dashboard")
MAX_POSITIONAL = 3  # a fourth only when it is required too (calibrated_sts(emb1, emb2, gold, calibrator))
# "path relative to the repository:qualified name" -> why its long positional form is the natural one
TILE = "a tile address is (z, tx, ty), as in every tile server's URL /z/x/y"
POSITIONAL = {
    "core/atlas/tiles.py:render_tile": TILE,
    "core/atlas/tiles.py:highlight_tile": TILE,
    "dashboard/tiles.py:tile_png": TILE,
    "dashboard/tiles.py:highlight_png": TILE,
}


def _public_functions(tree: ast.Module):
    """(qualified name, def) of every public function and public class's method (``__init__`` included)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and (item.name == "__init__" or not item.name.startswith("_")):
                    yield f"{node.name}.{item.name}", item


def _too_many_positional(fn: ast.FunctionDef) -> bool:
    params = [*fn.args.posonlyargs, *fn.args.args]
    if params and params[0].arg in ("self", "cls"):
        params = params[1:]
    n_required = len(params) - len(fn.args.defaults)
    return len(params) > MAX_POSITIONAL + 1 or (len(params) > MAX_POSITIONAL and n_required < len(params))


def test_many_parameters_are_keyword_only() -> None:
    flagged = {}  # "path:name" -> line
    for path in sorted(p for folder in FOLDERS for p in (REPO / folder).rglob("*.py")):
        for name, fn in _public_functions(ast.parse(path.read_text(encoding="utf-8"))):
            if _too_many_positional(fn):
                flagged[f"{path.relative_to(REPO).as_posix()}:{name}"] = fn.lineno
    found = [f"{key} (line {line})" for key, line in flagged.items() if key not in POSITIONAL]
    assert not found, "positional parameters past the third (make them keyword-only with *):\n" + "\n".join(found)
    stale = sorted(set(POSITIONAL) - set(flagged))
    assert not stale, f"POSITIONAL lists signatures that no longer need it: {stale}"


def test_the_check_sees_a_long_positional_signature() -> None:
    """The walk above can fail: it flags the signature the issue quotes, and accepts its keyword-only form."""
    before = ast.parse("def sts_of_vectors(a, b, pairs, calibrator, fit_vectors=None, seed=0): ...").body[0]
    after = ast.parse("def sts_of_vectors(a, b, pairs, calibrator, *, fit_vectors=None, seed=0): ...").body[0]
    assert _too_many_positional(before) and not _too_many_positional(after)
    assert _too_many_positional(ast.parse("def f(a, b, c, d=1): ...").body[0])
