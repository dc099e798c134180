"""What an atlas's kNN graph and layout cost here: n^2 d (exact, up to ``isoscope.atlas.graph.EXACT_MAX_ROWS``
rows) or n log2 n (NN-descent) x the seconds of a graph of ``KNN_PROBE_ROWS`` low-rank probe vectors built both
ways (``measure_knn``); the layout is UMAP's cost (``isoscope.neighbours.costs``), full or the landmark layout's.

The value is ``isoscope.costs.Cost``. Light to import: numpy and the graph builders are imported inside the
functions.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

from isoscope.costs import FREE, Cost
from isoscope.neighbours.costs import UmapRate, umap_cost

KNN_PROBE_ROWS = 4_000
KNN_PROBE_RANK = 32


@dataclass(frozen=True)
class KnnRate:
    """The atlas kNN graph's measured cost here (``isoscope.atlas.graph``): seconds per row pair and dimension
    of an exact (flat) graph, and seconds per row and log2(rows) of an NN-descent graph."""

    exact: float
    approx: float


def knn_probe_vectors(n_rows: int, dim: int):
    """Seeded (n_rows, dim) float32 vectors near a ``KNN_PROBE_RANK``-dimensional subspace, as sentence
    embeddings are (an approximate graph of full-rank noise is slower to build than of any real space)."""
    import numpy as np

    rng = np.random.default_rng(0)
    rank = min(KNN_PROBE_RANK, dim)
    low = rng.standard_normal((n_rows, rank)) @ rng.standard_normal((rank, dim))  # (n, d) of rank r
    return (low + 0.1 * rng.standard_normal((n_rows, dim))).astype(np.float32)


EXACT_REPEATS = 3  # the exact probe is short: the median of three, not one sample of a shared machine's noise


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure_knn(dim: int, k: int = 16) -> KnnRate:
    """Time the graph of ``KNN_PROBE_ROWS`` probe vectors (``knn_probe_vectors``) of ``dim`` dimensions, once
    exact and once through NN-descent (``knn_graph_chunked``, the atlas's own builder; each warmed on a small
    graph first, so the probe times the graph, not numba's cache or the first call's set-up)."""
    from isoscope.atlas.graph import knn_graph_chunked

    n = KNN_PROBE_ROWS
    x = knn_probe_vectors(n, dim)  # (n, d)
    knn_graph_chunked(x[:200], k, exact_max_rows=200)  # warm (issue 41: a cold first call timed 2.2x the run)
    exact = statistics.median(_timed(lambda: knn_graph_chunked(x, k, exact_max_rows=n)) for _ in range(EXACT_REPEATS))
    knn_graph_chunked(x[:200], k, exact_max_rows=0)
    start = time.perf_counter()
    knn_graph_chunked(x, k, exact_max_rows=0)
    approx = time.perf_counter() - start
    return KnnRate(max(exact, 1e-6) / (n * n * dim), max(approx, 1e-6) / (n * math.log2(n)))


def knn_cost(n_rows: int, dim: int, *, k: int, rate: KnnRate) -> Cost:
    """The kNN graph of ``n_rows`` rows (``k`` neighbours, itself included) as the atlas builds it: exact up to
    ``isoscope.atlas.graph.EXACT_MAX_ROWS`` rows (n^2 d work), NN-descent above (n log n); it writes ids and
    distances."""
    from isoscope.atlas.graph import graph_kind

    if n_rows < 2:
        return FREE
    if graph_kind(n_rows) == "flat":
        seconds = n_rows * n_rows * dim * rate.exact
    else:
        seconds = n_rows * math.log2(n_rows) * rate.approx
    return Cost(seconds, n_rows * k * 8)  # int32 ids + float32 distances


def layout_cost(n_rows: int, dim: int, *, k: int, landmarks: int, umap: UmapRate, knn: KnnRate) -> Cost:
    """An atlas UMAP layout of ``n_rows`` rows (``isoscope.atlas.layout.layout``): full UMAP, or above
    ``landmarks`` rows the landmark layout: its sample's own kNN graph and UMAP, then ``REFINE_EPOCHS`` epochs
    over every row (placing the rest from the graph is a few passes of arithmetic: not counted)."""
    from isoscope.atlas.layout import REFINE_EPOCHS

    if 0 < landmarks < n_rows:
        sample = knn_cost(landmarks, dim, k=k, rate=knn) + umap_cost(landmarks, umap)
        return Cost(sample.seconds + umap_cost(n_rows, umap, epochs=REFINE_EPOCHS).seconds, n_rows * 8)
    return Cost(umap_cost(n_rows, umap).seconds, n_rows * 8)  # (n, 2) float32
