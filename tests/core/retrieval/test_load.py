"""isoscope.retrieval.load and task: what each reader makes of a task, and what build_task leaves out and says."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.paths import DEMO_RETRIEVAL
from isoscope.retrieval.load import load_beir, load_beir_zip, load_task, load_task_table, load_vector_task, read_qrels
from tests.retrieval_helpers import write_beir

QUERIES = [("q1", "where do penguins live"), ("q2", "how hot is the sun"), ("q3", "unjudged question")]
DOCS = [("a", "Penguins live in the southern hemisphere."), ("b", "The Sun's surface is about 5,500 C."), ("c", "Cats")]


def test_the_demo_task_is_a_beir_folder(tmp_path: Path) -> None:
    task = load_beir(DEMO_RETRIEVAL)
    assert (task.n_queries, task.n_documents, task.n_judgements) == (55, 300, 68)
    assert not task.warnings and task.n_unjudged == 0
    assert all(task.relevant(q) for q in task.query_ids)


def test_a_beir_folder_joins_title_and_text_and_keeps_the_files_order(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "t", QUERIES, DOCS, [("q2", "b", 2), ("q1", "a", 1), ("q1", "c", 0)])
    (folder / "corpus.jsonl").write_text(
        '{"_id": "a", "title": "Penguins", "text": "They live in the south."}\n{"_id": 7, "text": "numbers as ids"}\n'
    )
    task = load_beir(folder)
    assert task.documents == ["Penguins They live in the south.", "numbers as ids"] and task.doc_ids == ["a", "7"]
    assert task.query_ids == ["q1"]  # q2's document b is not in the corpus any more: its row is left out, so is q2
    assert any("2 row(s) name an id" in w and "document 'b'" in w for w in task.warnings)  # b and c
    assert task.n_unjudged == 2  # q2 (its only row left out) and q3 (never judged): not evaluated, not warned


def test_splits_and_missing_files_are_named(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "t", QUERIES, DOCS, [("q1", "a", 1)], split="dev")
    with pytest.raises(InputError, match=r"no qrels/test.tsv; the splits with qrels are: dev"):
        load_beir(folder)
    assert load_beir(folder, "dev").n_queries == 1
    (folder / "queries.jsonl").unlink()
    with pytest.raises(InputError, match=r"no queries\.jsonl"):
        load_beir(folder, "dev")


def test_a_zipped_folder_reads_the_same(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path in sorted(DEMO_RETRIEVAL.rglob("*")):
            if path.is_file():
                z.write(path, f"demo/{path.relative_to(DEMO_RETRIEVAL)}")
    zipped = load_beir_zip(buf.getvalue(), "demo.zip")
    folder = load_beir(DEMO_RETRIEVAL)
    assert (zipped.query_ids, zipped.documents, zipped.qrels) == (folder.query_ids, folder.documents, folder.qrels)
    (tmp_path / "demo.zip").write_bytes(buf.getvalue())
    assert load_task(tmp_path / "demo.zip").qrels == folder.qrels
    with pytest.raises(InputError, match="not a zip file"):
        load_beir_zip(b"PK but not really", "x.zip")


def test_a_table_of_queries_and_documents(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "query,document,grade\n"
        "where do penguins live,Penguins live in the south.,2\n"
        "where do penguins live,Emperor penguins breed on the ice.,1\n"
        "how hot is the sun,The Sun is about 5500 C.,1\n"
        ",A distractor no query asks for.,\n"
    )
    task = load_task(path)
    assert task.query_ids == ["q0", "q1"] and task.n_documents == 4
    assert task.qrels == {"q0": {"d0": 2, "d1": 1}, "q1": {"d2": 1}}
    assert task.documents[3] == "A distractor no query asks for."
    headless = tmp_path / "h.tsv"
    headless.write_text("a question\tan answer\nanother question\tanother answer\n")
    assert load_task_table(headless).qrels == {"q0": {"d0": 1}, "q1": {"d1": 1}}  # grade 1 without a grade column
    bad = tmp_path / "b.csv"
    bad.write_text("query,document,grade\nq,d,very\nq2,d2,1\n")
    with pytest.raises(InputError, match="row 1 has grade 'very'"):
        load_task_table(bad)


def test_qrels_in_three_and_four_columns(tmp_path: Path) -> None:
    trec = tmp_path / "q.txt"
    trec.write_text("q1\t0\ta\t2\nq1\t0\tb\t0\n")
    assert read_qrels(trec) == [("q1", "a", 2), ("q1", "b", 0)]
    plain = tmp_path / "q.tsv"
    plain.write_text("q1\ta\t1.0\n")
    assert read_qrels(plain) == [("q1", "a", 1)]
    half = tmp_path / "h.tsv"
    half.write_text("q1\ta\t0.5\n")
    with pytest.raises(InputError, match="whole numbers"):
        read_qrels(half)


def test_two_vectors_files_and_qrels(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    import pandas as pd

    rng = np.random.default_rng(0)
    q, d = rng.normal(size=(3, 8)).astype(np.float32), rng.normal(size=(5, 8)).astype(np.float32)
    pd.DataFrame({"id": ["x", "y", "z"], "emb": list(q)}).to_parquet(tmp_path / "q.parquet")
    np.save(tmp_path / "d.npy", d)
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nz\t4\t1\nx\t0\t1\n")
    task = load_vector_task(str(tmp_path / "q.parquet"), str(tmp_path / "d.npy"), tmp_path / "qrels.tsv")
    assert task.query_ids == ["x", "z"] and task.doc_ids == ["0", "1", "2", "3", "4"] and not task.has_texts
    np.testing.assert_array_equal(task.query_vectors, q[[0, 2]])
    np.testing.assert_array_equal(task.doc_vectors, d)
    np.save(tmp_path / "d4.npy", d[:, :4])
    with pytest.raises(InputError, match="must come from one space"):
        load_vector_task(str(tmp_path / "q.parquet"), str(tmp_path / "d4.npy"), tmp_path / "qrels.tsv")
