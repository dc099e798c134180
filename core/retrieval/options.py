"""The names a retrieval run reports and the sizes it uses, light to import (the command line's help reads them)."""

from __future__ import annotations

METRICS: tuple[str, ...] = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "map@100")
HEADLINE = "ndcg@10"  # the metric model cards and MTEB report
DEPTH = 100  # documents kept per query: the deepest cutoff scored (Recall@100, MAP@100)
CSLS_K = 10  # neighbours whose mean cosine is a document's CSLS penalty
