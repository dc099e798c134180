"""Numbers out of range and ids that collide (issue 51, class 7, and the last round's ledger).

A qrels grade is a whole number from -1000 to 1000 (``isoscope.retrieval.options.GRADE_RANGE``, docs/files.md):
``1e30`` ended in a ``SystemError`` inside pytrec_eval; now every reader refuses it naming the file and the row,
and ``build_task`` refuses it for a task built in Python. An id holding a control character is refused naming
its row: stripped or escaped, two ids that differ only by one would have collided (or matched another file's id)."""

from __future__ import annotations

from pathlib import Path

import pytest

from isoscope.errors import InputError
from isoscope.retrieval.load import load_beir, load_task_table
from isoscope.retrieval.options import GRADE_RANGE
from isoscope.retrieval.task import build_task
from tests.hostile.conftest import assert_cli_refused, assert_one_line
from tests.retrieval_helpers import write_beir

QUERIES = [("q1", "where do penguins live"), ("q2", "how hot is the sun")]
DOCS = [("a", "Penguins live in the south."), ("b", "The Sun is hot."), ("c", "Cats sleep a lot.")]
LO, HI = GRADE_RANGE


@pytest.mark.parametrize("grade", ["1e30", "1001", "-1001", "2.5", "nan", "inf", "-inf", "9" * 400, "high"])
def test_a_grade_out_of_range_is_refused_naming_its_row(cli, tmp_path: Path, grade: str) -> None:
    """Before: ``SystemError: <built-in method evaluate> returned a result with an exception set`` (1e30)."""
    folder = write_beir(tmp_path / "task", QUERIES, DOCS, [("q1", "a", 1), ("q2", "b", grade)])
    line = assert_cli_refused(cli("retrieval", "--beir", str(folder), "--quiet"), "qrels/test.tsv", "row 2")
    assert f"whole numbers from {LO} to {HI}" in line


def test_the_ends_of_the_range_are_grades(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "task", QUERIES, DOCS, [("q1", "a", f"{HI}.0"), ("q2", "b", "1e3"), ("q2", "c", LO)])
    assert load_beir(folder).qrels == {"q1": {"a": HI}, "q2": {"b": 1000, "c": LO}}


def test_a_table_grade_out_of_range_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "task.csv"
    path.write_text("query,document,grade\nwho,penguins,1\nwhat,the sun,1e30\n")
    with pytest.raises(InputError, match=r"task\.csv: row 2 has grade '1e30'") as info:
        load_task_table(path)
    assert_one_line(str(info.value))


@pytest.mark.parametrize("grade", [10**30, 1e30, 2.5, float("nan"), "high", None])
def test_a_task_built_in_python_checks_its_grades(grade: object) -> None:
    with pytest.raises(InputError, match="grades are whole numbers from -1000 to 1000") as info:
        build_task("t", QUERIES, DOCS, [("q1", "a", 1), ("q2", "b", grade)], sources=("q", "d", "qrels"))
    assert_one_line(str(info.value))
    assert build_task("t", QUERIES, DOCS, [("q1", "a", 2.0)]).qrels == {"q1": {"a": 2}}


# ---------------------------------------------------------------- ids that differ only by a control character


@pytest.mark.parametrize(
    ("docs", "qrels_doc", "file"),
    [
        ([*DOCS, ("a\x1f", "a second a")], "a", "corpus.jsonl"),  # stripped, it was 'a' twice
        ([*DOCS, ("a\x01", "x"), ("a\\x01", "y")], "a", "corpus.jsonl"),  # escaped, both read 'a\\x01'
        (DOCS, "a\x1f", "qrels/test.tsv"),  # stripped, a judgement of another file's 'a'
        (DOCS, "b\u202e", "qrels/test.tsv"),  # a right-to-left override: shown as another id
    ],
    ids=["stripped-twin", "escaped-twin", "qrels-strip", "qrels-bidi"],
)
def test_an_id_holding_a_control_character_is_refused_naming_its_row(
    cli, tmp_path: Path, docs: list, qrels_doc: str, file: str
) -> None:
    folder = write_beir(tmp_path / "task", QUERIES, docs, [("q1", qrels_doc, 1), ("q2", "b", 1)])
    line = assert_cli_refused(cli("retrieval", "--beir", str(folder), "--quiet"), file, "control character")
    assert "row " in line


def test_ids_with_spaces_around_them_are_the_same_id(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "task", QUERIES, DOCS, [("q1", " a ", 1), ("q2", "b ", 1)])
    assert load_beir(folder).qrels == {"q1": {"a": 1}, "q2": {"b": 1}}


def test_the_grade_range_is_stated_in_files_md() -> None:
    text = " ".join((Path(__file__).parents[2] / "docs" / "files.md").read_text(encoding="utf-8").split())
    assert f"a qrels grade is a whole number from {LO} to {HI}" in text
