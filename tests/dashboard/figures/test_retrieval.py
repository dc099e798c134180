"""The Retrieval page's figures: the per-query scatter (hover text escaped), the queries that moved."""

from __future__ import annotations

import numpy as np

from isoscope.dashboard.figures.retrieval import clustering_figure, moved_queries, per_query_scatter, variant_table
from isoscope.retrieval.clustering import cluster_scores
from isoscope.retrieval.run import RetrievalConfig, evaluate_retrieval
from isoscope.retrieval.task import build_task


def _result(variant: str = "centre"):
    rng = np.random.default_rng(0)
    D = rng.normal(size=(80, 8)).astype(np.float32) + 2
    Q = (D[:12] + rng.normal(scale=1.5, size=(12, 8))).astype(np.float32)
    task = build_task(
        "t",
        [(f"q{i}", f"<script>query {i}</script>") for i in range(12)],
        [(f"d{i}", f"document {i}") for i in range(80)],
        [(f"q{i}", f"d{i}", 1) for i in range(12)],
    )
    return evaluate_retrieval(Q, D, task, config=RetrievalConfig(variants=(variant,), resamples=200))


def test_the_scatter_escapes_queries_and_the_moved_lists_are_ordered() -> None:
    result = _result()
    fig = per_query_scatter(result, "centre", "ndcg@10")
    assert all("<script>" not in t and "&lt;script&gt;" in t for t in fig.data[0].text)
    gained, lost = moved_queries(result, "centre", "ndcg@10", m=3)
    assert (gained["change"] > 0).all() and (lost["change"] < 0).all()
    assert list(gained["change"]) == sorted(gained["change"], reverse=True) and len(gained) <= 3
    table = variant_table(result, "ndcg@10")
    assert list(table["variant"]) == ["raw", "centre"] and "hubness skew" in table.columns


def test_the_clustering_bars_carry_their_spread() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)).astype(np.float32)
    got = cluster_scores(X, [str(i % 3) for i in range(60)], variants=("centre",), seeds=(0, 1))
    fig = clustering_figure(got)
    assert list(fig.data[0].x) == ["raw", "centre"] and len(fig.data[0].error_y.array) == 2


def test_the_moved_lists_read_the_metrics_direction(monkeypatch) -> None:
    """Where lower is better (a row of ``METRICS`` that says so), a fall is a gain: the lists swap, each ordered by
    its gain; a side no query moved to is empty, not rows of NaN."""
    from isoscope.retrieval.options import HEADLINE, METRICS, Metric

    result = _result("whitening")  # one query gains, one loses
    up, down = moved_queries(result, "whitening", HEADLINE, m=12)
    before = _colours(result, HEADLINE)
    row = METRICS[HEADLINE]
    monkeypatch.setitem(METRICS, HEADLINE, Metric(row.label, False, row.what, row.measure, row.cutoff))
    gained, lost = moved_queries(result, "whitening", HEADLINE, m=12)
    assert len(up) and len(down)  # both ways, so the swap shows
    assert set(gained["query_id"]) == set(down["query_id"]) and set(lost["query_id"]) == set(up["query_id"])
    assert list(gained["change"]) == sorted(gained["change"]) and list(lost["change"]) == sorted(lost["change"])[::-1]
    swap = {"#109618": "#dc3912", "#dc3912": "#109618", "#888888": "#888888"}  # green: gained, red: lost
    assert _colours(result, HEADLINE) == {q: swap[c] for q, c in before.items()}
    monkeypatch.setitem(METRICS, HEADLINE, row)
    assert [len(side) for side in moved_queries(result, "raw", HEADLINE)] == [0, 0]  # raw against itself


def _colours(result, metric: str) -> dict[str, str]:
    """query id -> its colour on the scatter (drawn in the order of ``changes``)."""
    order = result.changes("whitening", metric)["query_id"]
    return dict(zip(order, per_query_scatter(result, "whitening", metric).data[0].marker.color, strict=True))
