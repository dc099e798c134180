"""isoscope.retrieval.metrics: pytrec_eval's numbers on a ranking small enough to score by hand, the ranking
evaluated as returned (never trec_eval's own tie order), MRR cut at 10, and ranx agreeing once."""

from __future__ import annotations

import math

import numpy as np
import pytest

from isoscope.retrieval.metrics import per_query, trec_run
from isoscope.retrieval.search import Ranking
from isoscope.retrieval.task import build_task


def _task(n_docs: int, qrels: list[tuple[str, str, int]], n_queries: int = 2):
    return build_task(
        "hand",
        [(f"q{i}", f"query {i}") for i in range(n_queries)],
        [(f"d{i}", f"doc {i}") for i in range(n_docs)],
        qrels,
    )


def _ranking(rows: list[list[int]]) -> Ranking:
    ids = np.asarray(rows, np.int64)
    return Ranking(ids, np.zeros(ids.shape, np.float32))  # scores are not read: the order is the ranking


def test_metrics_equal_the_hand_computed_values() -> None:
    """q0: d2 (grade 2) at rank 2 and d5 (grade 1) at rank 4, d7 (grade 1) never retrieved in the top 12.
    trec_eval's nDCG uses the grade as the gain and 1/log2(rank + 1) as the discount."""
    task = _task(20, [("q0", "d2", 2), ("q0", "d5", 1), ("q0", "d7", 1), ("q1", "d13", 1)])
    order0 = [0, 2, 1, 5, 3, 4, 6, 8, 9, 10, 11, 12, 7, 13, 14, 15, 16, 17, 18, 19]  # d7 at rank 13
    order1 = [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 7, 14, 15, 16, 17, 18, 19]  # d13 at rank 13
    got = per_query(task, _ranking([order0, order1]))

    dcg = 2 / math.log2(3) + 1 / math.log2(5)  # d2 at rank 2, d5 at rank 4; d7 is past the cutoff
    idcg = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert got.loc["q0", "ndcg@10"] == pytest.approx(dcg / idcg, rel=1e-12)
    assert got.loc["q0", "recall@10"] == pytest.approx(2 / 3, rel=1e-12)
    assert got.loc["q0", "recall@100"] == pytest.approx(1.0)
    assert got.loc["q0", "mrr@10"] == pytest.approx(1 / 2)
    # average precision: precision at each relevant document's rank (2, 4, 13), over the 3 relevant documents
    assert got.loc["q0", "map@100"] == pytest.approx((1 / 2 + 2 / 4 + 3 / 13) / 3, rel=1e-12)

    # q1's only relevant document is at rank 13: trec_eval's recip_rank would say 1/13; MRR@10 is 0
    assert got.loc["q1", "mrr@10"] == 0.0
    assert got.loc["q1", "ndcg@10"] == 0.0 and got.loc["q1", "recall@10"] == 0.0
    assert got.loc["q1", "recall@100"] == 1.0 and got.loc["q1", "map@100"] == pytest.approx(1 / 13)


def test_the_ranking_is_scored_as_returned_not_in_trec_evals_tie_order() -> None:
    """trec_eval orders equal scores by document id, descending: with the raw cosines of a tie (d1 and d9 both
    0.5) it would put d9 first. The run holds ranks, so the order the search returned (d1 first) is scored."""
    task = _task(10, [("q0", "d9", 1)], n_queries=1)
    ranking = Ranking(np.array([[1, 9, 0, 2, 3, 4, 5, 6, 7, 8]]), np.array([[0.5, 0.5, *[0.1] * 8]], np.float32))
    run = trec_run(task, ranking)
    assert run["q0"]["d1"] > run["q0"]["d9"]  # strictly: no tie left for trec_eval to reorder
    got = per_query(task, ranking)
    assert got.loc["q0", "mrr@10"] == pytest.approx(1 / 2)  # d9 at rank 2, as returned
    assert got.loc["q0", "ndcg@10"] == pytest.approx(1 / math.log2(3))


def test_ranx_agrees_with_pytrec_eval_on_the_demo_task_rankings() -> None:
    """The other well-kept library, once: ranx's nDCG@10, Recall@10/100, MRR@10 and MAP@100 per query equal
    pytrec_eval's on graded judgements and 300 documents (random rankings: every kind of position occurs).
    Both compute in float64 from the same integers: equal to round-off."""
    ranx = pytest.importorskip("ranx")
    from isoscope.paths import DEMO_RETRIEVAL
    from isoscope.retrieval.load import load_beir

    task = load_beir(DEMO_RETRIEVAL)
    rng = np.random.default_rng(0)
    ids = np.stack([rng.permutation(task.n_documents)[:100] for _ in range(task.n_queries)])  # (q, 100)
    ours = per_query(task, _ranking(ids.tolist()))
    run = ranx.Run(trec_run(task, _ranking(ids.tolist())))
    qrels = ranx.Qrels(task.qrels)
    names = {"ndcg@10": "ndcg@10", "recall@10": "recall@10", "recall@100": "recall@100", "mrr@10": "mrr@10"}
    theirs = ranx.evaluate(qrels, run, [*names.values(), "map@100"], return_mean=False, make_comparable=True)
    for ours_name, their_name in names.items():
        np.testing.assert_allclose(ours[ours_name].to_numpy(), theirs[their_name], rtol=1e-9, atol=1e-12)
    # trec_eval's map_cut.100 divides by every relevant document, ranx's map@100 by those that fit in 100 ranks:
    # the same here, where no query has more than 3
    np.testing.assert_allclose(ours["map@100"].to_numpy(), theirs["map@100"], rtol=1e-9, atol=1e-12)
    assert ours["ndcg@10"].between(0, 1).all() and (ours["ndcg@10"] > 0).any()
