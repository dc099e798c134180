"""Commands get a space's vectors from ``isoscope.sources.space_vectors`` and do not ask what kind of space they
have (issue 52 item 2): no comparison or ``match`` on a ``.kind`` in ``core/commands/``, read from the source.

The commands not converted yet are listed with their count of such branches (``PENDING``): a new branch anywhere
fails, and so does a file converted without being taken off the list. The goal is an empty ``PENDING``.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

COMMANDS = Path(__file__).resolve().parents[3] / "core" / "commands"

PENDING: dict[str, int] = {}  # file -> its branches on a space's kind (issue 52 item 2: none left)


def _is_kind(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "kind"


def kind_branches(source: str) -> int:
    """How many comparisons with, or ``match`` statements on, an attribute named ``kind`` ``source`` holds."""
    count = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(_is_kind(x) for x in [node.left, *node.comparators]):
            count += 1
        elif isinstance(node, ast.Match) and _is_kind(node.subject):
            count += 1
    return count


def test_no_command_asks_a_space_its_kind() -> None:
    found = Counter({f.name: kind_branches(f.read_text()) for f in sorted(COMMANDS.glob("*.py"))})
    found = {name: n for name, n in found.items() if n}
    assert found == PENDING, "a command branches on a space's kind: call isoscope.sources.space_vectors instead"
    assert "sts.py" not in found and "sweep.py" not in found


@pytest.mark.parametrize(
    ("source", "n"),
    [
        ("if space.kind == 'vectors': pass", 1),
        ("x = [s for s in specs if s.kind != 'model']", 1),
        ("match spec.kind:\n    case 'model': pass", 1),
        ("texts = load_input(args.input, args.kind, col)", 0),  # an input's kind is no comparison
        ("if space.has_model: pass", 0),
    ],
)
def test_the_check_finds_a_branch(source: str, n: int) -> None:
    assert kind_branches(source) == n


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"vectors": "v.npy", "column": "emb"}, "v.npy:emb holds vectors; this needs a model that runs here"),
        ({"model": "openai:small"}, "openai:small is an embeddings endpoint; this needs a model that runs here"),
    ],
)
def test_a_command_that_needs_a_model_asks_for_one(spec, message) -> None:
    """``encoder_for`` is a requirement: a space without a model is refused in one line, nothing loaded."""
    import argparse

    from isoscope.commands.common import encoder_for
    from isoscope.errors import InputError
    from isoscope.sources import SpaceSpec

    with pytest.raises(InputError, match=message):
        encoder_for(argparse.Namespace(), SpaceSpec(**spec))


def test_only_a_file_holds_rows_of_its_own() -> None:
    from isoscope.sources import SourceReaders, SpaceSpec

    readers = SourceReaders(tables=lambda spec: spec.vectors)  # type: ignore[arg-type,return-value]
    assert readers.rows_of(SpaceSpec(vectors="v.npy")) == "v.npy"
    assert readers.rows_of(SpaceSpec(model="openai:small")) is None and readers.rows_of(SpaceSpec()) is None
