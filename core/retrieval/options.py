"""The metrics a retrieval run reports (one table: name, label, direction, what it is, how pytrec_eval computes it)
and the sizes it uses, light to import (the command line's help reads them); what a split name and a relevance
grade may be.

``METRICS`` is the one place a metric is named: ``metrics.per_query`` computes every row, a run's means, tests and
``to_dict()`` (``isoscope retrieval --json``) carry every row, the command's text table, the Retrieval page's
selector and its words, the notebook card and the HTML report read it. A row whose ``measure`` pytrec_eval
computes is a new metric everywhere (docs/CONVENTIONS.md, "Add a metric").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from isoscope.errors import InputError


@dataclass(frozen=True)
class Metric:
    """One retrieval metric: how a person reads it, which way is better, what it is, and how it is computed."""

    label: str  # how a person reads it: "nDCG@10"
    higher_is_better: bool  # its direction: a fix that raises it is better (the verdict and "gained" read it)
    what: str  # one line: what it measures (the page's help)
    measure: str  # pytrec_eval's per-query measure (trec_eval's name with "_" before its cutoff): "ndcg_cut_10"
    cutoff: int | None = None  # rankings cut to this depth first: a measure trec_eval does not cut (recip_rank)

    @property
    def sign(self) -> int:
        """+1 when higher is better, else -1: a change times ``sign`` is a gain."""
        return 1 if self.higher_is_better else -1


METRICS: dict[str, Metric] = {  # name (the key in every output) -> its row; the first is the headline
    "ndcg@10": Metric("nDCG@10", True, "graded gain of the first 10 documents, discounted by rank, over the ideal "
                      "order's (what model cards and MTEB report)", "ndcg_cut_10"),
    "recall@10": Metric("Recall@10", True, "share of a query's relevant documents among the first 10", "recall_10"),
    "recall@100": Metric("Recall@100", True, "share of a query's relevant documents among the first 100",
                         "recall_100"),
    "mrr@10": Metric("MRR@10", True, "1 / rank of the first relevant document in the first 10, else 0 (BEIR's)",
                     "recip_rank", cutoff=10),
    "map@100": Metric("MAP@100", True, "average precision to depth 100: the precision at each relevant document's "
                      "rank, summed over the query's relevant documents", "map_cut_100"),
}  # fmt: skip
HEADLINE = next(iter(METRICS))  # nDCG@10: the metric model cards and MTEB report; a run tests it against raw
COVERAGE = "recall@100"  # whether the relevant documents are retrieved at all (a migration tests it after HEADLINE)


def metric_label(name: str) -> str:
    """How a person reads the metric ``name`` (``METRICS``): ``nDCG@10``."""
    return METRICS[name].label


def describe_metric(name: str) -> str:
    """The metric ``name`` in words: what it is and its direction (the Retrieval page's help)."""
    row = METRICS[name]
    return f"{row.what}; {'higher' if row.higher_is_better else 'lower'} is better"


DEPTH = 100  # documents kept per query: the deepest cutoff scored (Recall@100, MAP@100)
CSLS_K = 10  # neighbours whose mean cosine is a document's CSLS penalty
SPLIT_NAME = re.compile(r"[A-Za-z0-9_-]+")  # a BEIR split: the name of qrels/<split>.tsv, never a path
GRADE_RANGE = (-1000, 1000)  # a qrels grade: a whole number in this range (trec_eval keeps 32-bit integers)


def check_split(split: object) -> str:
    """``split`` when it is a split name (``SPLIT_NAME``: letters, digits, ``_`` and ``-``); an InputError otherwise,
    before any file is looked for (``../../outside`` is not read as a path)."""
    if not isinstance(split, str) or SPLIT_NAME.fullmatch(split) is None:
        raise InputError(
            f"split '{str(split)[:60]}' is not a split name: letters, digits, _ and - only (it names qrels/<split>.tsv)"
        )
    return split
