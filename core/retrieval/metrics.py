"""Retrieval metrics per query, computed by pytrec_eval (trec_eval's own C code, which BEIR and MTEB call).

Every row of ``isoscope.retrieval.options.METRICS`` is computed from its ``measure``, as trec_eval computes it:

- nDCG@10 (graded: ``ndcg_cut_10``), Recall@10 and Recall@100 (``recall_10``, ``recall_100``), MAP@100
  (``map_cut_100``); a document is relevant when its grade is 1 or more.
- MRR@10: trec_eval's ``recip_rank`` has no cutoff (``recip_rank.10`` is accepted and ignored), so the row's
  ``cutoff`` cuts each ranking to its first 10 documents first: 1/rank of the first relevant document in the top
  10, else 0 (what BEIR's ``mrr@10`` is).
- trec_eval orders a run by score and breaks ties by document id (descending), not by the order it was given.
  The run it is given therefore scores each document by its rank (``depth - rank``): what is evaluated is the
  ranking the search returned (``isoscope.neighbours.exact``: equal cosines by row id), never trec_eval's own
  reordering of ties.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from isoscope.retrieval.options import METRICS

if TYPE_CHECKING:
    from isoscope.retrieval.search import Ranking
    from isoscope.retrieval.task import RetrievalTask


def trec_measures(measures: Iterable[str]) -> set[str]:
    """What pytrec_eval is asked for to give ``measures`` (its per-query names): a family's cutoffs in one request,
    ``{"recall_10", "recall_100", "ndcg_cut_10"}`` -> ``{"recall.10,100", "ndcg_cut.10"}``; a name without a
    cutoff (``recip_rank``) as it is."""
    families: dict[str, list[str]] = {}
    for name in measures:
        family, _, cutoff = name.rpartition("_")
        if family and cutoff.isdigit():
            families.setdefault(family, []).append(cutoff)
        else:
            families.setdefault(name, [])
    return {f"{family}.{','.join(sorted(set(cuts), key=int))}" if cuts else family for family, cuts in families.items()}


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
    """Every metric of ``METRICS`` for every evaluated query (index: query id, in the task's order): one
    pytrec_eval pass per ranking cutoff among the rows (the whole ranking for most)."""
    import pytrec_eval

    columns: dict[str, list[float]] = {}
    for cutoff in dict.fromkeys(row.cutoff for row in METRICS.values()):
        rows = {name: row for name, row in METRICS.items() if row.cutoff == cutoff}
        asked = trec_measures(row.measure for row in rows.values())
        scores = pytrec_eval.RelevanceEvaluator(task.qrels, asked).evaluate(trec_run(task, ranking, cutoff))
        columns |= {name: [scores[q][row.measure] for q in task.query_ids] for name, row in rows.items()}
    frame = pd.DataFrame(columns, index=pd.Index(task.query_ids, name="query_id"))
    return frame[list(METRICS)].astype(np.float64)
