"""Retrieval metrics per query, computed by pytrec_eval (trec_eval's own C code, which BEIR and MTEB call).

- nDCG@10 (graded: ``ndcg_cut_10``), Recall@10 and Recall@100 (``recall_10``, ``recall_100``), MAP@100
  (``map_cut_100``) as trec_eval computes them; a document is relevant when its grade is 1 or more.
- MRR@10: trec_eval's ``recip_rank`` has no cutoff (``recip_rank.10`` is accepted and ignored), so it is computed
  on each ranking cut to its first 10 documents: 1/rank of the first relevant document in the top 10, else 0 (what
  BEIR's ``mrr@10`` is).
- trec_eval orders a run by score and breaks ties by document id (descending), not by the order it was given.
  The run it is given therefore scores each document by its rank (``depth - rank``): what is evaluated is the
  ranking the search returned (``isoscope.neighbours.exact``: equal cosines by row id), never trec_eval's own
  reordering of ties.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from isoscope.retrieval.options import METRICS

if TYPE_CHECKING:
    from isoscope.retrieval.search import Ranking
    from isoscope.retrieval.task import RetrievalTask

MEASURES = {"ndcg@10": "ndcg_cut_10", "recall@10": "recall_10", "recall@100": "recall_100", "map@100": "map_cut_100"}
TREC_MEASURES = {"ndcg_cut.10", "recall.10,100", "map_cut.100"}  # what pytrec_eval is asked for
MRR_CUTOFF = 10


def trec_run(task: RetrievalTask, ranking: Ranking, cutoff: int | None = None) -> dict[str, dict[str, float]]:
    """The ranking as trec_eval's run (query id -> document id -> score): the score of rank ``r`` (0-based) is
    ``depth - r``, so trec_eval evaluates exactly this order; ``cutoff`` keeps each query's first documents."""
    ids = ranking.ids if cutoff is None else ranking.ids[:, :cutoff]  # (q, c)
    depth = ids.shape[1]
    doc_ids = task.doc_ids
    return {
        qid: {doc_ids[row]: float(depth - r) for r, row in enumerate(rows)}
        for qid, rows in zip(task.query_ids, ids.tolist(), strict=True)
    }


def per_query(task: RetrievalTask, ranking: Ranking) -> pd.DataFrame:
    """Every metric of ``METRICS`` for every evaluated query (index: query id, in the task's order)."""
    import pytrec_eval

    scores = pytrec_eval.RelevanceEvaluator(task.qrels, TREC_MEASURES).evaluate(trec_run(task, ranking))
    top = pytrec_eval.RelevanceEvaluator(task.qrels, {"recip_rank"}).evaluate(trec_run(task, ranking, MRR_CUTOFF))
    frame = pd.DataFrame(
        {
            **{name: [scores[q][m] for q in task.query_ids] for name, m in MEASURES.items()},
            "mrr@10": [top[q]["recip_rank"] for q in task.query_ids],
        },
        index=pd.Index(task.query_ids, name="query_id"),
    )
    return frame[list(METRICS)].astype(np.float64)
