"""Exact nearest neighbours by cosine: the one top-k search and the one neighbour table.

- ``exact_topk``: brute-force top-k of some queries (numpy blocks, equal scores ordered by row id, also across
  the k-th place). Every exact neighbour list in Isoscope comes from it.
- ``knn_table``: every row's ``k`` nearest *other* rows, exact, searched ``QUERY_BLOCK`` rows at a time so memory
  stays bounded (a (256, n) score block inside, the (n, k) table outside). Its ``k`` rule is the one rule
  (``check_k``): ``1 <= k <= n - 1``, else an ``InputError`` that says the largest ``k`` allowed; pages bound
  their sliders by it, so a user never meets the error from the app.
- ``knn_graph``: the all-pairs graph from a FAISS flat index, each row itself first (UMAP's ``precomputed_knn``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from isoscope.errors import InputError
from isoscope.neighbours.index import VectorIndex, as_unit_float32

ProgressFn = Callable[[int, int], None]  # (done, total)
EXACT_BLOCK_SCORES = 1 << 25  # scores held at once by exact_topk: 32M float32 = 128 MiB
QUERY_BLOCK = 4096  # rows searched per exact_topk call by knn_table (one progress step)


def check_k(k: object, n: int, outside: bool = False) -> int:
    """``k`` as an int in [1, n - 1] for ``n`` texts (in [1, n] for a query from ``outside`` the texts);
    InputError otherwise: a text is never its own neighbour.

    The one rule for ``k`` in Isoscope: refused, never silently clamped, so two pages cannot report overlap@k
    for different k. Pages bound their k sliders by ``n - 1``."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise InputError(f"k must be a positive whole number, got {k!r}")
    candidates = n if outside else n - 1
    if candidates < 1:
        raise InputError(f"need at least 2 texts to find neighbours, got {n}")
    if k > candidates:
        what = "the number of texts" if outside else "the number of texts minus one"
        raise InputError(f"k must be at most {what} ({candidates}), got {k}")
    return int(k)


def _rank_row(scores: np.ndarray, k: int) -> np.ndarray:
    """Top-``k`` positions of one score row (n,), descending, ties broken by position (exact at the k-th)."""
    n = len(scores)
    cand = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    cand = np.flatnonzero(scores >= scores[cand].min())  # every row tied with the k-th score
    return cand[np.lexsort((cand, -scores[cand]))[:k]]


def exact_topk(
    X: np.ndarray, Q: np.ndarray, k: int, *, exclude: np.ndarray | None = None, block: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force top-``k`` by inner product, ``block`` queries at a time (default: as many as keep
    ``EXACT_BLOCK_SCORES`` scores, at most 256).

    X (n, d) and Q (q, d) should be unit rows (then scores are cosines), in the precision the caller wants
    the products in; ``exclude`` (q,) gives one row id per query to leave out (the query itself). Equal
    scores are ordered by row id, also across the k-th place. Returns scores (q, k) float32, ids (q, k) int64.
    """
    n = X.shape[0]
    k = check_k(k, n, outside=exclude is None)  # candidates: every row, or every row but the query's own
    block = block or max(1, min(256, EXACT_BLOCK_SCORES // max(n, 1)))
    scores = np.empty((len(Q), k), np.float32)
    ids = np.empty((len(Q), k), np.int64)
    for s in range(0, len(Q), block):
        S = Q[s : s + block] @ X.T  # (b, n)
        if exclude is not None:
            S[np.arange(len(S)), exclude[s : s + block]] = -np.inf
        part = np.argpartition(S, n - k, axis=1)[:, n - k :] if k < n else np.tile(np.arange(n), (len(S), 1))
        ps = np.take_along_axis(S, part, axis=1)  # (b, k) unordered
        kth = ps.min(axis=1)  # (b,)
        tied = (S >= kth[:, None]).sum(axis=1) > k  # rows where a tie crosses the k-th place
        order = np.lexsort((part, -ps), axis=1)
        top = np.take_along_axis(part, order, axis=1)  # (b, k)
        for r in np.flatnonzero(tied):
            top[r] = _rank_row(S[r], k)
        ids[s : s + block] = top
        scores[s : s + block] = np.take_along_axis(S, top, axis=1)
    return scores, ids


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


def knn_graph(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every row's ``k`` nearest rows by cosine, exact (FAISS flat), each row itself first.

    Returns ids (n, k) int64 and cosine distances ``1 - cos`` (n, k) float32, ascending, the first
    column being the row itself at distance 0 (UMAP's ``precomputed_knn`` layout). All pairs cost
    n^2 d multiply-adds: about 13 s for 50k x 384 here, so callers keep this to ``FLAT_MAX_ROWS``.
    """
    x = as_unit_float32(vectors, "vectors")  # (n, d)
    n = x.shape[0]
    if not 1 <= k <= n:
        raise InputError(f"k must be between 1 and the number of rows ({n}), got {k}")
    index = VectorIndex.create(x.shape[1], "flat")
    index.add(x)
    scores, ids = index.search(x, k)  # (n, k) each, best first
    own = ids == np.arange(n)[:, None]  # (n, k) where a row found itself
    drop = own.copy()
    drop[~own.any(axis=1), -1] = True  # rows that missed themselves (ties among duplicates) drop their last
    keep = ~drop
    ids = np.hstack([np.arange(n)[:, None], ids[keep].reshape(n, k - 1)])  # (n, k)
    dist = np.clip(1.0 - scores[keep].reshape(n, k - 1), 0.0, 2.0)  # (n, k-1)
    dist = np.hstack([np.zeros((n, 1), np.float32), dist]).astype(np.float32)  # (n, k)
    return ids.astype(np.int64), dist
