"""Neighbour overlap: how many of each text's k nearest neighbours two spaces share (overlap@k).

``jaccard_tables`` is the one Jaccard of neighbour tables in Isoscope: the Neighbours page (raw vs calibrated),
Compare spaces, the Atlas (raw vs calibrated graph), the size sweep and the embedding-anatomy shrink curve all
call it, on tables from ``isoscope.neighbours.exact.knn_table`` (or the atlas's kNN graph without its first,
self column), so they answer the same question by the same rule. Identical spaces give identical tables, so
self-comparison is exactly 1 for every text.

``overlap_at_k`` is the mean Jaccard over texts. With k neighbours on both sides, a text sharing ``m`` of
them has Jaccard ``m / (2k - m)``, so the distribution has only ``k + 1`` values (``histogram``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from isoscope.errors import InputError
from isoscope.neighbours.exact import ProgressFn, check_k, knn_table

JACCARD_BLOCK = 16_384  # rows compared at once: (b, k, k) booleans


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
    a: np.ndarray, b: np.ndarray, k: int = 10, *, progress: ProgressFn | None = None
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
