"""isoscope.retrieval.options.METRICS: the one table of retrieval metrics (name, label, direction, what it is, how
pytrec_eval computes it). No metric is named anywhere else in core/ or dashboard/, and a row added to the table is
computed, tested, printed by the command (text and JSON) and shown by the report and the notebook card."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

from isoscope.cli import main
from isoscope.paths import DEMO_RETRIEVAL
from isoscope.retrieval.load import load_beir
from isoscope.retrieval.metrics import per_query, trec_measures
from isoscope.retrieval.options import HEADLINE, METRICS, Metric, describe_metric, metric_label
from isoscope.retrieval.run import RetrievalConfig, evaluate_retrieval
from isoscope.retrieval.search import Ranking

ROOT = Path(__file__).resolve().parents[3]
TABLE = ROOT / "core" / "retrieval" / "options.py"
# precision at 10 (pytrec_eval's P_10): a metric the table does not hold, added as one row
PRECISION = ("precision@10", Metric("P@10", True, "share of the first 10 documents that are relevant", "P_10"))


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring constants of a module, its classes and functions (words, not names in use)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_no_metric_is_named_outside_the_table() -> None:
    """Every string in the code of core/ and dashboard/ (docstrings are words) that holds a metric's name is in
    the table's own module: the others read ``METRICS`` and ``HEADLINE``."""
    files = sorted([*(ROOT / "core").rglob("*.py"), *(ROOT / "dashboard").rglob("*.py")])
    assert TABLE in files and len(files) > 200
    named = []
    for path in files:
        if path == TABLE:
            continue
        tree = ast.parse(path.read_text(), str(path))
        words = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in words:
                named += [f"{path.relative_to(ROOT)}:{node.lineno}: {m}" for m in METRICS if m in node.value]
    assert not named, "\n".join(named)


def test_the_table_is_whole() -> None:
    assert HEADLINE == "ndcg@10" and next(iter(METRICS)) == HEADLINE  # the metric model cards and MTEB report
    for name, row in METRICS.items():
        assert row.label.lower() == name and row.what and row.sign in (1, -1)
        assert describe_metric(name).endswith("higher is better") and metric_label(name) == row.label
    # what pytrec_eval is asked for: one request per family, its cutoffs together (as before the table)
    assert trec_measures(r.measure for r in METRICS.values() if r.cutoff is None) == {
        "ndcg_cut.10",
        "recall.10,100",
        "map_cut.100",
    }
    assert trec_measures(r.measure for r in METRICS.values() if r.cutoff is not None) == {"recip_rank"}


def test_a_row_added_to_the_table_is_computed_from_its_measure(monkeypatch) -> None:
    """P@10 from its row alone: q0 has 2 relevant documents in its first 10, q1 none."""
    from isoscope.retrieval.task import build_task

    monkeypatch.setitem(METRICS, *PRECISION)
    task = build_task(
        "hand",
        [("q0", "query 0"), ("q1", "query 1")],
        [(f"d{i}", f"doc {i}") for i in range(20)],
        [("q0", "d2", 2), ("q0", "d5", 1), ("q1", "d13", 1)],
    )
    ids = np.array([list(range(20)), [*range(13), *range(14, 20), 13]], np.int64)
    got = per_query(task, Ranking(ids, np.zeros(ids.shape, np.float32)))
    assert list(got.columns) == list(METRICS) and list(got.columns)[-1] == "precision@10"
    assert got["precision@10"].tolist() == [0.2, 0.0]


def _vector_task(tmp_path: Path) -> list[str]:
    """The demo task's qrels with vectors made here (no model): the command's argv for them."""
    task = load_beir(DEMO_RETRIEVAL)
    rng = np.random.default_rng(0)
    D = rng.normal(size=(task.n_documents, 16)).astype(np.float32)
    rel = {q: next(iter(docs)) for q, docs in task.qrels.items()}
    Q = np.stack([D[task.doc_ids.index(rel[q])] + rng.normal(scale=1.0, size=16) for q in task.query_ids])
    np.save(tmp_path / "q.npy", Q.astype(np.float32))
    np.save(tmp_path / "d.npy", D)
    lines = [f"{task.query_ids.index(q)}\t{task.doc_ids.index(d)}\t{g}" for q, docs in task.qrels.items()
             for d, g in docs.items()]  # fmt: skip
    (tmp_path / "qrels.tsv").write_text("\n".join(lines) + "\n")
    return ["--queries-vectors", str(tmp_path / "q.npy"), "--docs-vectors", str(tmp_path / "d.npy"),
            "--qrels", str(tmp_path / "qrels.tsv"), "--calibrate", "centre", "--resamples", "200", "--quiet"]  # fmt: skip


def test_a_row_added_to_the_table_reaches_the_commands_json_and_text(monkeypatch, capsys, tmp_path: Path) -> None:
    argv = _vector_task(tmp_path)
    assert main(["retrieval", *argv, "--json"]) == 0
    before = json.loads(capsys.readouterr().out)
    monkeypatch.setitem(METRICS, *PRECISION)
    assert main(["retrieval", *argv, "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert after["metrics"] == [*before["metrics"], "precision@10"]
    for old, new in zip(before["variants"], after["variants"], strict=True):
        assert 0 <= new.pop("precision@10") <= 1
        new.pop("fit_seconds"), old.pop("fit_seconds"), new.pop("search_seconds"), old.pop("search_seconds")
        assert new == old  # every other number as it was
    assert main(["retrieval", *argv]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("variant"))
    assert header.split()[1:7] == [*before["metrics"], "precision@10"]


def test_a_row_added_to_the_table_reaches_the_report_and_the_card(monkeypatch) -> None:
    import isoscope
    from isoscope.space.report.build import build_space_report

    monkeypatch.setitem(METRICS, *PRECISION)
    task = load_beir(DEMO_RETRIEVAL)
    texts = [*task.queries, *task.documents]
    X = np.random.default_rng(0).normal(size=(len(texts), 8)).astype(np.float32)
    space = isoscope.Space(X, texts, name="made here", cache=False)
    report = build_space_report(space, vs="centre", retrieval=task, layers=False, map="pca", progress=False)
    (section,) = [s for s in report.sections if s.key == "retrieval"]
    assert "precision@10" in section.tables[0][1].columns
    assert any(tile[0] == "nDCG@10" for tile in report.tiles)  # the headline's label, from the table
    card = space.retrieval(task, ["centre"], progress=False)
    assert "precision@10" in card.table.columns and "nDCG@10 raw" in card._repr_html_()


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_the_verdict_reads_the_metrics_direction(monkeypatch, higher_is_better: bool) -> None:
    """A fix that raises a metric is better where higher is better, worse where lower is (the row's direction)."""
    task = load_beir(DEMO_RETRIEVAL)
    rng = np.random.default_rng(0)
    D = rng.normal(size=(task.n_documents, 16)).astype(np.float32)
    rel = {q: next(iter(docs)) for q, docs in task.qrels.items()}
    Q = np.stack([D[task.doc_ids.index(rel[q])] for q in task.query_ids]) + rng.normal(scale=0.3, size=(55, 16))
    Q[:, 0], D[:, 0] = rng.normal(scale=20, size=55), rng.normal(scale=20, size=len(D))  # one loud noisy direction
    row = METRICS[HEADLINE]
    monkeypatch.setitem(METRICS, HEADLINE, Metric(row.label, higher_is_better, row.what, row.measure, row.cutoff))
    config = RetrievalConfig(variants=("raw", "whitening"), resamples=1000)  # whitening quiets it: search improves
    result = evaluate_retrieval(Q.astype(np.float32), D, task, config=config)
    test = result.row("whitening").tests[HEADLINE]
    assert test.mean_difference > 0 and test.p_value < 0.05
    assert test.verdict == ("better" if higher_is_better else "worse")
    gains = result.changes("whitening", HEADLINE)["change"].to_numpy()
    assert (np.diff(gains * METRICS[HEADLINE].sign) <= 0).all()  # largest gain first, in the row's direction
