"""How calibration (or any second space) changes the neighbours of a few queries, or of every text.

- ``neighbours_before_after``: a handful of queries' top-k in two spaces, with each hit's rank in the other.
- ``neighbourhood_change``: every sentence's overlap@k (``isoscope.neighbours.overlap``), corpus-wide.

Both search with ``isoscope.neighbours.exact`` and follow its rule for ``k`` (``check_k``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isoscope.errors import InputError
from isoscope.neighbours.exact import _rank_row, check_k, exact_topk
from isoscope.neighbours.index import as_unit_float32
from isoscope.neighbours.overlap import jaccard_tables
from isoscope.sampling import sample_indices


@dataclass
class QueryNeighbours:
    """Top-``k`` neighbours of one query in the raw and the calibrated space.

    Ranks are 1-based positions in the whole corpus ranking of that space (the query itself excluded).
    ``rank_shift[i] = raw rank - calibrated rank`` of ``after_ids[i]``: positive means it moved up.
    """

    query: int | None  # corpus row of the query, None for an outside query vector
    before_ids: np.ndarray  # (k,) top-k in the raw space
    before_scores: np.ndarray  # (k,) cosine
    after_ids: np.ndarray  # (k,) top-k in the calibrated space
    after_scores: np.ndarray  # (k,)
    overlap: float  # Jaccard of the two top-k sets (overlap@k)
    before_rank_after: np.ndarray  # (k,) calibrated-space rank of each raw neighbour
    after_rank_before: np.ndarray  # (k,) raw-space rank of each calibrated neighbour
    rank_shift: np.ndarray  # (k,) after_rank_before - position in after list, i.e. places gained

    def to_frame(self) -> pd.DataFrame:
        """One row per (space, rank): id, score, rank in the other space, places gained (calibrated rows)."""
        k_before, k_after = len(self.before_ids), len(self.after_ids)
        return pd.DataFrame(
            {
                "space": ["raw"] * k_before + ["calibrated"] * k_after,
                "rank": np.concatenate([np.arange(1, k_before + 1), np.arange(1, k_after + 1)]),
                "id": np.concatenate([self.before_ids, self.after_ids]),
                "score": np.concatenate([self.before_scores, self.after_scores]),
                "rank_in_other_space": np.concatenate([self.before_rank_after, self.after_rank_before]),
                "rank_shift": np.concatenate([np.zeros(k_before, np.int64), self.rank_shift]),
            }
        )


RANK_BLOCK_SCORES = 1 << 24  # score comparisons held at once by ranks_of


def ranks_of(scores: np.ndarray, targets: np.ndarray, exclude: int | None = None) -> np.ndarray:
    """1-based ranks (k,) of rows ``targets`` in the descending order of ``scores`` (n,), ties broken by row id.

    ``exclude``: a row left out of the ranking (the query itself). Compares blocks of targets at once.
    """
    s = scores.astype(np.float64)
    if exclude is not None:
        s[exclude] = -np.inf
    ids = np.arange(len(s))
    targets = np.asarray(targets, np.int64)
    out = np.empty(len(targets), np.int64)
    step = max(1, RANK_BLOCK_SCORES // max(len(s), 1))
    for start in range(0, len(targets), step):
        t = targets[start : start + step]  # (b,)
        st = s[t][:, None]  # (b, 1)
        higher = (s[None, :] > st).sum(axis=1)  # (b,)
        tied_before = ((s[None, :] == st) & (ids[None, :] < t[:, None])).sum(axis=1)  # (b,)
        out[start : start + step] = higher + tied_before + 1
    return out


def compare_hits(
    query: int | None,
    before: tuple[np.ndarray, np.ndarray],
    after: tuple[np.ndarray, np.ndarray],
    *,
    raw_scores: np.ndarray,
    cal_scores: np.ndarray,
) -> QueryNeighbours:
    """One query's top-k ``(ids, scores)`` before and after calibration, with each hit's rank in the other
    space (from the query's full score rows ``raw_scores`` / ``cal_scores`` (n,)), places gained and overlap@k."""
    b_ids, b_scores = before
    a_ids, a_scores = after
    after_rank_before = ranks_of(raw_scores, a_ids, query)
    return QueryNeighbours(
        query=query,
        before_ids=b_ids,
        before_scores=b_scores,
        after_ids=a_ids,
        after_scores=a_scores,
        overlap=float(jaccard_tables(b_ids[None], a_ids[None])[1][0]),
        before_rank_after=ranks_of(cal_scores, b_ids, query),
        after_rank_before=after_rank_before,
        rank_shift=after_rank_before - np.arange(1, len(a_ids) + 1),
    )


def _query_topk(scores: np.ndarray, k: int, exclude: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` of one query's score row (n,), itself excluded, ties by row id. Returns ids (k,), scores (k,)."""
    s = scores.astype(np.float64)
    if exclude is not None:
        s[exclude] = -np.inf
    ids = _rank_row(s, k).astype(np.int64)
    return ids, scores[ids].astype(np.float32)


def neighbours_before_after(
    raw_vectors: np.ndarray,
    calibrated_vectors: np.ndarray,
    queries: Sequence[int] | np.ndarray | tuple[np.ndarray, np.ndarray],
    *,
    k: int = 10,
) -> list[QueryNeighbours]:
    """Exact top-``k`` cosine neighbours of each query in both spaces, their overlap@k and rank shifts.

    ``queries`` is either corpus row ids (each row's neighbours exclude itself) or a pair
    ``(raw_queries (q, d_raw), calibrated_queries (q, d_cal))`` of outside query vectors. The two
    spaces may differ in dimension but must have the same rows. Brute force over the corpus: meant for
    a handful of queries (the page's), use ``neighbourhood_change`` for the whole corpus.
    """
    raw = as_unit_float32(raw_vectors, "raw vectors")  # (n, d_raw)
    cal = as_unit_float32(calibrated_vectors, "calibrated vectors")  # (n, d_cal)
    if raw.shape[0] != cal.shape[0]:
        raise InputError(f"raw and calibrated vectors must have the same rows, got {raw.shape[0]} and {cal.shape[0]}")
    n = raw.shape[0]
    if isinstance(queries, tuple) and len(queries) == 2 and np.asarray(queries[0]).dtype.kind == "f":
        q_raw = as_unit_float32(queries[0], "raw queries", raw.shape[1])  # (q, d_raw)
        q_cal = as_unit_float32(queries[1], "calibrated queries", cal.shape[1])  # (q, d_cal)
        if q_raw.shape[0] != q_cal.shape[0]:
            raise InputError(f"got {q_raw.shape[0]} raw and {q_cal.shape[0]} calibrated query vectors")
        rows: list[int | None] = [None] * q_raw.shape[0]
    else:
        qids = np.asarray(queries)
        if qids.ndim == 2 or (qids.size and qids.dtype.kind == "f"):
            raise InputError("give queries as row ids, or as a pair (raw_query_vectors, calibrated_query_vectors)")
        qids = qids.astype(np.int64).ravel()
        if qids.size and (qids.min() < 0 or qids.max() >= n):
            raise InputError(f"query ids must be between 0 and {n - 1}")
        rows = [int(i) for i in qids]
        q_raw, q_cal = raw[qids], cal[qids]
    outside = not rows or rows[0] is None  # an outside query may have every row as a neighbour
    k = check_k(k, n, outside)
    out: list[QueryNeighbours] = []
    for j, row in enumerate(rows):
        s_raw = raw @ q_raw[j]  # (n,)
        s_cal = cal @ q_cal[j]  # (n,)
        before = _query_topk(s_raw, k, row)
        after = _query_topk(s_cal, k, row)
        out.append(compare_hits(row, before, after, raw_scores=s_raw, cal_scores=s_cal))
    return out


@dataclass
class NeighbourhoodChange:
    """Per-sentence overlap@k (Jaccard) between raw and calibrated top-``k`` neighbours."""

    ids: np.ndarray  # (s,) corpus rows that were compared (all, or a seeded sample)
    overlap: np.ndarray  # (s,) Jaccard of the two top-k sets, 1 = unchanged neighbourhood
    k: int

    @property
    def mean_overlap(self) -> float:
        return float(self.overlap.mean()) if len(self.overlap) else float("nan")

    def most_changed(self, top: int = 20) -> np.ndarray:
        """Corpus rows whose neighbourhoods changed most (lowest overlap first, ties by row id)."""
        order = np.lexsort((self.ids, self.overlap))
        return self.ids[order[:top]]

    def to_frame(self) -> pd.DataFrame:
        """id and overlap per compared sentence, most changed first."""
        order = np.lexsort((self.ids, self.overlap))
        return pd.DataFrame({"id": self.ids[order], "overlap": self.overlap[order]})


def neighbourhood_change(
    raw_vectors: np.ndarray,
    calibrated_vectors: np.ndarray,
    *,
    k: int = 10,
    sample: int | None = None,
    seed: int = 0,
) -> NeighbourhoodChange:
    """How much calibration changed each sentence's top-``k`` neighbours, corpus-wide (exact ``exact_topk``).

    With ``sample`` only a seeded sample of that many sentences is compared (their neighbours are still
    searched among all rows).
    """
    raw = as_unit_float32(raw_vectors, "raw vectors")  # (n, d_raw)
    cal = as_unit_float32(calibrated_vectors, "calibrated vectors")  # (n, d_cal)
    n = raw.shape[0]
    if cal.shape[0] != n:
        raise InputError(f"raw and calibrated vectors must have the same rows, got {n} and {cal.shape[0]}")
    k = check_k(k, n)
    rows = sample_indices(n, sample if sample is not None else n, seed)  # (s,)
    _, before = exact_topk(raw, raw[rows], k, exclude=rows)  # (s, k)
    _, after = exact_topk(cal, cal[rows], k, exclude=rows)  # (s, k)
    overlap = jaccard_tables(before, after)[1]
    return NeighbourhoodChange(ids=rows, overlap=overlap, k=k)
