"""Neighbour overlap of two spaces over the same texts: per text, Jaccard of its k nearest neighbours in A and in B.

Neighbours are exact cosine neighbours (``core.neighbours.exact_topk`` on unit rows, the text itself left
out, equal scores ordered by row id), searched ``QUERY_BLOCK`` texts at a time so memory stays bounded
(a (256, n) score block inside, the (n, k) neighbour tables outside): 100,000 x 384 vectors work.
Identical spaces give identical tables, so self-comparison is exactly 1 for every text.

``overlap_at_k`` is the mean Jaccard over texts. With k neighbours on both sides, a text sharing ``m`` of
them has Jaccard ``m / (2k - m)``, so the distribution has only ``k + 1`` values (``histogram``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.errors import InputError
from core.index import as_unit_float32
from core.neighbours import exact_topk

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]  # (done, total)
QUERY_BLOCK = 4096  # texts searched per exact_topk call (one progress step)
JACCARD_BLOCK = 16_384  # rows compared at once: (b, k, k) booleans


def check_k(k: object, n: int) -> int:
    """``k`` as an int in [1, n - 1]; InputError otherwise (the text itself is never its own neighbour)."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise InputError(f"k must be a positive whole number, got {k!r}")
    if n < 2:
        raise InputError(f"need at least 2 texts to find neighbours, got {n}")
    if k > n - 1:
        raise InputError(f"k must be at most the number of texts minus one ({n - 1}), got {k}")
    return int(k)


def knn_table(vectors: np.ndarray, k: int, progress: ProgressFn | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every text's ``k`` nearest other texts by cosine, exact. Returns ids (n, k) int64 and cosines (n, k) float32,
    best first, equal cosines by row id."""
    x = as_unit_float32(vectors, "vectors")  # (n, d)
    n = x.shape[0]
    k = check_k(k, n)
    ids = np.empty((n, k), np.int64)
    scores = np.empty((n, k), np.float32)
    for start in range(0, n, QUERY_BLOCK):
        rows = np.arange(start, min(start + QUERY_BLOCK, n))  # (b,)
        scores[rows], ids[rows] = exact_topk(x, x[rows], k, exclude=rows)
        if progress is not None:
            progress(int(rows[-1]) + 1, n)
    return ids, scores


def jaccard_tables(na: np.ndarray, nb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shared neighbours (n,) int64 and Jaccard (n,) float64 of two neighbour tables (n, k) and (n, k'),
    row by row. Each row must list distinct ids (as ``knn_table`` does)."""
    if na.shape[0] != nb.shape[0]:
        raise ValueError(f"row counts differ: {na.shape[0]} vs {nb.shape[0]}")
    n = na.shape[0]
    shared = np.empty(n, np.int64)
    for s in range(0, n, JACCARD_BLOCK):
        a, b = na[s : s + JACCARD_BLOCK], nb[s : s + JACCARD_BLOCK]  # (b, k), (b, k')
        shared[s : s + JACCARD_BLOCK] = (a[:, :, None] == b[:, None, :]).any(axis=2).sum(axis=1)
    union = na.shape[1] + nb.shape[1] - shared  # (n,)
    jac = np.divide(shared, union, out=np.ones(n, np.float64), where=union > 0)
    return shared, jac


@dataclass
class NeighbourOverlap:
    """Each text's ``k`` nearest neighbours in A and B and how many they share."""

    k: int
    neighbours_a: np.ndarray  # (n, k) int64, best first
    scores_a: np.ndarray  # (n, k) float32 cosine in A
    neighbours_b: np.ndarray  # (n, k) int64
    scores_b: np.ndarray  # (n, k) float32 cosine in B
    shared: np.ndarray  # (n,) int64 neighbours in both lists
    overlap: np.ndarray  # (n,) float64 Jaccard, 1 = same neighbourhood

    @property
    def overlap_at_k(self) -> float:
        return float(self.overlap.mean())

    def most_changed(self, top: int = 20) -> np.ndarray:
        """Texts whose neighbourhoods changed most: lowest overlap first, ties by row id. (top,) int64."""
        order = np.lexsort((np.arange(len(self.overlap)), self.overlap))
        return order[:top].astype(np.int64)

    def histogram(self) -> pd.DataFrame:
        """How many texts share 0..k neighbours: columns shared, jaccard, texts, share."""
        counts = np.bincount(self.shared, minlength=self.k + 1)[: self.k + 1]  # (k + 1,)
        m = np.arange(self.k + 1)
        return pd.DataFrame(
            {"shared": m, "jaccard": m / (2 * self.k - m), "texts": counts, "share": counts / max(len(self.shared), 1)}
        )

    def neighbour_lists(self, row: int, texts: list[str] | None = None) -> pd.DataFrame:
        """One text's neighbours side by side: rank, id/cosine/text in A and in B, and whether each is shared."""
        a, b = self.neighbours_a[row], self.neighbours_b[row]
        frame = pd.DataFrame(
            {
                "rank": np.arange(1, self.k + 1),
                "a_id": a,
                "a_cosine": self.scores_a[row],
                "a_in_b": np.isin(a, b),
                "b_id": b,
                "b_cosine": self.scores_b[row],
                "b_in_a": np.isin(b, a),
            }
        )
        if texts is not None:
            frame.insert(2, "a_text", [texts[i] for i in a])
            frame.insert(6, "b_text", [texts[i] for i in b])
        return frame


def neighbour_overlap(
    a: np.ndarray, b: np.ndarray, k: int = 10, progress: ProgressFn | None = None
) -> NeighbourOverlap:
    """Exact top-``k`` cosine neighbours of every text in A (n, d_a) and B (n, d_b) and their per-text Jaccard.

    ``progress(done, total)`` counts texts searched over both spaces (total ``2 n``). When B is the very same
    array as A its neighbours are not searched twice.
    """
    if np.shape(a)[0] != np.shape(b)[0]:
        raise InputError(f"A and B must hold the same texts, got {np.shape(a)[0]} and {np.shape(b)[0]} rows")
    n = int(np.shape(a)[0])
    k = check_k(k, n)

    def part(offset: int) -> ProgressFn | None:
        return None if progress is None else (lambda done, _total: progress(offset + done, 2 * n))

    ids_a, sc_a = knn_table(a, k, part(0))
    ids_b, sc_b = (ids_a, sc_a) if b is a else knn_table(b, k, part(n))
    if progress is not None:
        progress(2 * n, 2 * n)
    shared, jac = jaccard_tables(ids_a, ids_b)
    return NeighbourOverlap(k, ids_a, sc_a, ids_b, sc_b, shared, jac)
