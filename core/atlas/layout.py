"""2-D layouts of a whole corpus: UMAP on a precomputed kNN graph, or PCA (instant, exact, linear).

xy = layout(vectors, "umap", knn=(ids, dist), seed=0)   # (n, 2) float32
xy = layout(vectors, "pca")                             # (n, 2) float32, chunked: memory O(d^2)

- ``pca``: the top two principal axes of the covariance, accumulated ``CHUNK_ROWS`` rows at a time in
  float64 (so a memory-mapped 1M x 384 corpus never needs a float64 copy), each axis's sign fixed so
  its largest loading is positive (scikit-learn's ``svd_flip`` convention). Milliseconds per 10k rows; keeps global distances, not local neighbourhoods.
- ``umap``: ``umap.UMAP`` (umap-learn, cosine, ``min_dist=0.1``) fed the corpus kNN graph from
  ``isoscope.atlas.graph`` as ``precomputed_knn``, so UMAP's own NN-descent never runs. Up to
  ``SPECTRAL_MAX_ROWS`` rows UMAP's spectral initialisation is used; above, the PCA layout (spectral
  embedding of a million-node graph costs minutes and gigabytes). A seed makes UMAP single-threaded
  (its reproducibility rule); same input, graph and seed give the same layout.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Literal, get_args

import numpy as np

from isoscope.atlas.spread import spread_layout
from isoscope.errors import InputError
from isoscope.threads import torch_threads_kept

log = logging.getLogger(__name__)

LayoutMethod = Literal["umap", "pca"]
LAYOUT_METHODS: tuple[str, ...] = get_args(LayoutMethod)
CHUNK_ROWS = 65_536
SPECTRAL_MAX_ROWS = 50_000
UMAP_MIN_DIST = 0.1
LANDMARKS = 100_000  # above this many rows: the landmark layout (UMAP on this many, the rest placed)
REFINE_EPOCHS = 80  # trustworthiness vs full umap-learn at 8,000 rows, 2,000 landmarks: 30 -0.018, 60 -0.008, 80 -0.005
REFINE_LEARNING_RATE = 0.5  # 30 epochs at 1.0: -0.025
PLACE_PASSES = 10
ProgressFn = Callable[[int, int], None]


def check_method(method: str) -> str:
    if method not in LAYOUT_METHODS:
        raise InputError(f"unknown layout '{method}'; choose one of {', '.join(LAYOUT_METHODS)}")
    return method


def pca_layout(vectors: np.ndarray, n_components: int = 2) -> np.ndarray:
    """Coordinates (n, k) float32 on the top ``n_components`` principal axes, computed chunk by chunk."""
    n, d = vectors.shape
    if n < 2:
        raise InputError(f"need at least 2 rows for a PCA layout, got {n}")
    total = np.zeros(d, np.float64)
    gram = np.zeros((d, d), np.float64)
    for s in range(0, n, CHUNK_ROWS):
        block = np.asarray(vectors[s : s + CHUNK_ROWS], np.float64)  # (m, d)
        total += block.sum(axis=0)
        gram += block.T @ block
    mean = total / n  # (d,)
    cov = (gram - n * np.outer(mean, mean)) / max(n - 1, 1)  # (d, d)
    _, evecs = np.linalg.eigh(cov)  # ascending
    comps = evecs[:, ::-1][:, :n_components]  # (d, k)
    top = np.argmax(np.abs(comps), axis=0)  # (k,)
    comps = comps * np.where(comps[top, np.arange(n_components)] < 0, -1.0, 1.0)
    out = np.empty((n, n_components), np.float32)
    for s in range(0, n, CHUNK_ROWS):
        out[s : s + CHUNK_ROWS] = (np.asarray(vectors[s : s + CHUNK_ROWS], np.float64) - mean) @ comps
    return out


def umap_layout(
    vectors: np.ndarray,
    knn: tuple[np.ndarray, np.ndarray],
    *,
    seed: int = 0,
    n_epochs: int | None = None,
    init: np.ndarray | None = None,
    learning_rate: float = 1.0,
) -> np.ndarray:
    """UMAP coordinates (n, 2) float32 from the precomputed graph ``knn = (ids (n, k), dist (n, k))``;
    ``init`` (n, 2): start from these coordinates (default: spectral, or PCA above ``SPECTRAL_MAX_ROWS``)."""
    from isoscope.neighbours.umap_jit import import_umap

    umap = import_umap()

    ids, dist = knn
    n, k = ids.shape
    if n < 4:
        raise InputError(f"need at least 4 rows for a UMAP layout, got {n}")
    if init is None:
        init = "spectral" if n <= SPECTRAL_MAX_ROWS else pca_layout(vectors)
        if n < 64:
            init = "random"  # spectral init is unreliable on tiny graphs
    reducer = umap.UMAP(
        n_neighbors=k,
        n_components=2,
        metric="cosine",
        min_dist=UMAP_MIN_DIST,
        random_state=seed,
        n_jobs=1,
        init=init,
        n_epochs=n_epochs,
        learning_rate=learning_rate,
        precomputed_knn=(np.asarray(ids, np.int64), np.asarray(dist, np.float32), None),
    )
    with warnings.catch_warnings(), torch_threads_kept():  # precomputed kNN, no search index: no transform
        warnings.filterwarnings("ignore", message=r"precomputed_knn\[2\]", category=UserWarning)
        warnings.filterwarnings("ignore", message=r".*n_jobs value 1 overridden.*", category=UserWarning)
        xy = reducer.fit_transform(np.asarray(vectors, np.float32))
    return np.asarray(xy, np.float32)


def _membership(d: np.ndarray) -> np.ndarray:
    """UMAP's membership strengths of neighbours at distances ``d`` (r, m), nearest first: exp(-(d - rho) / sigma)
    with rho the row's nearest distance and sigma its mean excess; (r, m) float32 in (0, 1]."""
    excess = d - d[:, :1]
    sigma = np.maximum(excess.mean(axis=1, keepdims=True), 1e-6)
    return np.exp(-excess / sigma).astype(np.float32)


def place_from_graph(
    ids: np.ndarray, dist: np.ndarray, *, anchors: np.ndarray, anchor_xy: np.ndarray, passes: int = PLACE_PASSES
) -> tuple[np.ndarray, np.ndarray]:
    """Positions (n, 2) float32 for the rows of the kNN graph ``ids, dist`` (n, k) (column 0 = the row itself)
    and whether each was placed (n,) bool: the ``anchors`` (m,) keep ``anchor_xy`` (m, 2); every other row goes
    to the mean of its placed neighbours weighted by ``_membership``, pass by pass (a row placed in one pass
    anchors its neighbours in the next). Rows no anchor reaches in ``passes`` passes stay unplaced (a group of
    repeated texts is its own island in a kNN graph: ``place_by_vectors`` places those)."""
    n = len(ids)
    nb = np.asarray(ids[:, 1:], np.int64)  # (n, k-1)
    weight = graph_weights(dist)  # (n, k-1)
    xy = np.zeros((n, 2), np.float32)
    placed = np.zeros(n, bool)
    xy[anchors], placed[anchors] = anchor_xy, True
    for _ in range(passes):
        todo = np.flatnonzero(~placed)
        if len(todo) == 0:
            break
        new_xy, new_rows = [], []
        for s in range(0, len(todo), CHUNK_ROWS):
            rows = todo[s : s + CHUNK_ROWS]
            ok, pos = place_rows(nb[rows], weight[rows], xy=xy, placed=placed)
            new_rows.append(rows[ok])
            new_xy.append(pos)
        rows = np.concatenate(new_rows)
        xy[rows], placed[rows] = np.concatenate(new_xy), True  # Jacobi: a pass sees the previous pass only
    return xy, placed


def graph_weights(dist: np.ndarray) -> np.ndarray:
    """The placement weights (r, k-1) float32 of graph rows ``dist`` (r, k) (column 0 = the row itself)."""
    return _membership(np.asarray(dist[:, 1:], np.float32))


def place_rows(
    nb: np.ndarray, weight: np.ndarray, *, xy: np.ndarray, placed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One placement pass for some rows: their neighbours ``nb`` (r, k-1) (global ids) with ``weight`` (r, k-1)
    (``graph_weights``), the layout ``xy`` (n, 2) and ``placed`` (n,) bool so far. Returns which rows have a placed
    neighbour (r,) bool and their positions (r', 2) float32: the weighted mean of their placed neighbours."""
    w = weight * placed[nb]  # (r, k-1): only placed neighbours count
    total = w.sum(axis=1)
    ok = total > 0
    pos = (w[ok, :, None] * xy[nb[ok]]).sum(axis=1) / total[ok, None]  # (r', 2)
    return ok, pos.astype(np.float32)


def place_by_vectors(
    vectors: np.ndarray, rows: np.ndarray, *, anchors: np.ndarray, anchor_xy: np.ndarray, k: int
) -> np.ndarray:
    """Positions (r, 2) float32 of ``rows`` from their ``k`` nearest ``anchors`` by cosine (exact search over
    the anchors' vectors), weighted as in ``place_from_graph``."""
    from isoscope.neighbours.exact import exact_topk
    from isoscope.neighbours.index import as_unit_float32

    A = as_unit_float32(np.asarray(vectors[anchors]), "vectors")  # (m, d)
    Q = as_unit_float32(np.asarray(vectors[rows]), "vectors")  # (r, d)
    scores, near = exact_topk(A, Q, min(k, len(anchors)))  # (r, k) each, nearest first
    w = _membership(1.0 - scores)  # (r, k)
    return ((w[:, :, None] * anchor_xy[near]).sum(axis=1) / w.sum(axis=1, keepdims=True)).astype(np.float32)


def landmark_layout(
    vectors: np.ndarray,
    knn: tuple[np.ndarray, np.ndarray],
    *,
    seed: int = 0,
    landmarks: int = LANDMARKS,
    refine_epochs: int = REFINE_EPOCHS,
    progress: ProgressFn | None = None,
) -> np.ndarray:
    """A UMAP layout (n, 2) float32 at a fraction of the cost for big corpora: UMAP on a seeded sample of
    ``landmarks`` rows (with their own kNN graph), every other row placed from its neighbours in ``knn``
    (``place_from_graph``), then ``refine_epochs`` epochs of UMAP on the whole graph from those positions.
    ``progress(done, 4)`` after each of the four steps."""
    ids, dist = knn
    k = ids.shape[1]
    rows, anchor_xy = landmark_anchors(vectors, k=k, seed=seed, landmarks=landmarks, progress=progress)
    xy, placed = place_from_graph(ids, dist, anchors=rows, anchor_xy=anchor_xy)
    if not placed.all():  # islands of the graph (repeated texts): placed by their nearest landmarks in the space
        islands = np.flatnonzero(~placed)
        log.info("%d rows reach no landmark in the graph; placed by their nearest landmarks", len(islands))
        xy[islands] = place_by_vectors(vectors, islands, anchors=rows, anchor_xy=anchor_xy, k=k - 1)
    _report(progress, 3)
    if refine_epochs > 0:
        xy = umap_layout(vectors, knn, seed=seed, n_epochs=refine_epochs, init=xy, learning_rate=REFINE_LEARNING_RATE)
    _report(progress, 4)
    return xy


def landmark_anchors(
    vectors: np.ndarray, *, k: int, seed: int, landmarks: int, progress: ProgressFn | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The landmarks: a seeded sample of ``landmarks`` rows (m,) sorted, and their UMAP layout (m, 2) float32
    computed on their own kNN graph of ``k`` columns (itself first); ``progress(1, 4)`` and ``(2, 4)``."""
    from isoscope.atlas.graph import knn_graph_chunked
    from isoscope.sampling import sample_indices

    rows = sample_indices(len(vectors), landmarks, seed)  # (m,) sorted
    sub = np.asarray(vectors[rows], np.float32)  # (m, d)
    sub_knn = knn_graph_chunked(sub, min(k, len(rows) - 1))
    _report(progress, 1)
    anchor_xy = umap_layout(sub, sub_knn, seed=seed)  # (m, 2)
    _report(progress, 2)
    return rows, anchor_xy


def _report(progress: ProgressFn | None, done: int) -> None:
    if progress is not None:
        progress(done, 4)


def layout(
    vectors: np.ndarray,
    method: str = "umap",
    *,
    knn: tuple[np.ndarray, np.ndarray] | None = None,
    seed: int = 0,
    landmarks: int = LANDMARKS,
    progress: ProgressFn | None = None,
) -> np.ndarray:
    """A 2-D layout (n, 2) float32 of ``vectors`` (n, d) with ``method`` in ``LAYOUT_METHODS``; UMAP above
    ``landmarks`` rows (0: never) is ``landmark_layout``; a UMAP layout's crowded points are spread apart at the
    deepest zoom (``isoscope.atlas.spread``)."""
    check_method(method)
    if method == "pca":
        return pca_layout(vectors)
    if knn is None:
        raise ValueError("the umap layout needs the kNN graph (ids, dist)")
    if 0 < landmarks < len(knn[0]):
        xy = landmark_layout(vectors, knn, seed=seed, landmarks=landmarks, progress=progress)
    else:
        xy = umap_layout(vectors, knn, seed=seed)
    return spread_layout(xy)  # the deepest zoom level resolves every point
