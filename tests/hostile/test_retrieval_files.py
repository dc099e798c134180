"""Hostile retrieval tasks (issue 38): qrels naming unknown ids, duplicate ids, a query with no relevant document,
10^7 qrels lines, a corpus.jsonl with a 1 GB line. Each is one line (a warning, or a refusal with exit status 2),
and the big ones are refused at a memory cost measured in a child process (``tests/hostile/peak.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.conftest import assert_cli_refused, assert_one_line
from tests.hostile.peak import GiB, child_peak
from tests.retrieval_helpers import write_beir

MiB = 2**20
QUERIES = [("q1", "where do penguins live"), ("q2", "how hot is the sun")]
DOCS = [("a", "Penguins live in the south."), ("b", "The Sun is hot."), ("c", "Cats sleep a lot.")]


def _folder(tmp_path: Path, qrels, queries=QUERIES, docs=DOCS) -> str:
    return str(write_beir(tmp_path / "task", queries, docs, qrels))


def _warnings(result) -> list[str]:
    return json.loads(result.out)["warnings"]


def test_qrels_naming_unknown_ids_are_left_out_in_one_line(cli, tmp_path: Path) -> None:
    folder = _folder(tmp_path, [("q1", "a", 1), ("q2", "b", 1), ("q9", "a", 1), ("q1", "zz", 1)])
    got = cli("retrieval", "--beir", folder, "--calibrate", "centre", "--json", "--quiet")
    assert got.code == 0, got.err
    (line,) = [w for w in _warnings(got) if "name an id" in w]
    assert_one_line(line)
    assert "2 row(s)" in line and "q9" in line
    only_unknown = _folder(tmp_path / "2", [("q9", "a", 1), ("q1", "zz", 1)])
    assert_cli_refused(cli("retrieval", "--beir", only_unknown, "--quiet"), "no row names both a query and a document")


@pytest.mark.parametrize(
    ("queries", "docs", "fragment"),
    [
        ([*QUERIES, ("q1", "again")], DOCS, "query id 'q1' appears twice (rows 1 and 3)"),
        (QUERIES, [*DOCS, ("b", "a second b")], "document id 'b' appears twice (rows 2 and 4)"),
    ],
    ids=["query", "document"],
)
def test_duplicate_ids_are_refused_in_one_line(cli, tmp_path: Path, queries, docs, fragment: str) -> None:
    folder = _folder(tmp_path, [("q1", "a", 1)], queries, docs)
    assert_cli_refused(cli("retrieval", "--beir", folder, "--quiet"), fragment)


def test_a_query_with_no_relevant_document_is_left_out_in_one_line(cli, tmp_path: Path) -> None:
    folder = _folder(tmp_path, [("q1", "a", 1), ("q2", "b", 0), ("q2", "c", 0)])
    got = cli("retrieval", "--beir", folder, "--calibrate", "centre", "--json", "--quiet")
    assert got.code == 0, got.err
    assert json.loads(got.out)["task"]["queries"] == 1
    (line,) = [w for w in _warnings(got) if "no relevant document" in w]
    assert_one_line(line)
    none = _folder(tmp_path / "2", [("q1", "a", 0)])
    assert_cli_refused(cli("retrieval", "--beir", none, "--quiet"), "no query has a relevant document")


LOAD_CHILD = """
import sys
from isoscope.errors import InputError
from isoscope.retrieval.load import load_beir
try:
    load_beir(sys.argv[2])
except InputError as exc:
    print(exc, file=sys.stderr)
    sys.exit(3)
"""


def test_ten_million_qrels_lines_are_refused_at_the_row_limit(tmp_path: Path) -> None:
    """60 MB of 'q1<TAB>a<TAB>1' lines: 10^7 judgements, refused after the row limit's (50,000) first rows."""
    folder = Path(_folder(tmp_path, [("q1", "a", 1)]))
    line = b"q1\ta\t1\n"
    with open(folder / "qrels" / "test.tsv", "wb") as f:
        f.write(b"query-id\tcorpus-id\tscore\n")
        block = line * 100_000
        for _ in range(100):
            f.write(block)
    code, err, peak = child_peak([LOAD_CHILD, str(folder)], tmp_path)
    assert code == 3, err[-2000:]
    message = err.strip().splitlines()[-1]
    assert_one_line(message)
    assert "more than 50,000 rows" in message and "qrels/test.tsv" in message
    assert peak < 400 * MiB, f"peak {peak / MiB:,.0f} MiB"  # pandas and numpy; the 10^7 rows are never held


def _long_line_corpus(folder: Path) -> None:
    """corpus.jsonl: one record whose text runs for 1 GiB (8 MiB written, the rest a sparse hole of NULs that
    a reader stopping at the line limit never reaches)."""
    path = folder / "corpus.jsonl"
    with open(path, "wb") as f:
        f.write(b'{"_id": "a", "text": "' + b"a" * (8 * MiB))
        f.truncate(GiB)


@pytest.mark.parametrize("max_bytes", [None, 2 * GiB], ids=["default-limits", "byte-limit-raised"])
def test_a_one_gigabyte_line_is_refused_in_one_line(tmp_path: Path, max_bytes: int | None) -> None:
    """Under the default limits the file's size refuses it before a byte is read; with the byte limit raised
    past it, the line limit (4 MiB) does, having read a few MiB of it."""
    folder = Path(_folder(tmp_path, [("q1", "a", 1)]))
    _long_line_corpus(folder)
    env = {} if max_bytes is None else {"ISOSCOPE_MAX_BYTES": str(max_bytes)}
    code, err, peak = child_peak([LOAD_CHILD, str(folder)], tmp_path, env=env)
    assert code == 3, err[-2000:]
    message = err.strip().splitlines()[-1]
    assert_one_line(message)
    assert "corpus.jsonl" in message
    assert ("larger than 200 MiB" if max_bytes is None else "longer than 4 MiB") in message, message
    assert peak < 400 * MiB, f"peak {peak / MiB:,.0f} MiB for a 1 GiB line"
