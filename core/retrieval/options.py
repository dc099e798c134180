"""The names a retrieval run reports and the sizes it uses, light to import (the command line's help reads them);
what a split name and a relevance grade may be."""

from __future__ import annotations

import re

from isoscope.errors import InputError

METRICS: tuple[str, ...] = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "map@100")
HEADLINE = "ndcg@10"  # the metric model cards and MTEB report
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
