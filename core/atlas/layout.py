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
from typing import Literal, get_args

import numpy as np

from isoscope.errors import InputError
from isoscope.threads import torch_threads_kept

log = logging.getLogger(__name__)

LayoutMethod = Literal["umap", "pca"]
LAYOUT_METHODS: tuple[str, ...] = get_args(LayoutMethod)
CHUNK_ROWS = 65_536
SPECTRAL_MAX_ROWS = 50_000
UMAP_MIN_DIST = 0.1


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
    seed: int = 0,
    n_epochs: int | None = None,
) -> np.ndarray:
    """UMAP coordinates (n, 2) float32 from the precomputed graph ``knn = (ids (n, k), dist (n, k))``."""
    from isoscope.neighbours.umap_jit import import_umap

    umap = import_umap()

    ids, dist = knn
    n, k = ids.shape
    if n < 4:
        raise InputError(f"need at least 4 rows for a UMAP layout, got {n}")
    init: str | np.ndarray = "spectral" if n <= SPECTRAL_MAX_ROWS else pca_layout(vectors)
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
        precomputed_knn=(np.asarray(ids, np.int64), np.asarray(dist, np.float32), None),
    )
    with warnings.catch_warnings(), torch_threads_kept():  # precomputed kNN, no search index: no transform
        warnings.filterwarnings("ignore", message=r"precomputed_knn\[2\]", category=UserWarning)
        warnings.filterwarnings("ignore", message=r".*n_jobs value 1 overridden.*", category=UserWarning)
        xy = reducer.fit_transform(np.asarray(vectors, np.float32))
    return np.asarray(xy, np.float32)


def layout(
    vectors: np.ndarray,
    method: str = "umap",
    knn: tuple[np.ndarray, np.ndarray] | None = None,
    seed: int = 0,
) -> np.ndarray:
    """A 2-D layout (n, 2) float32 of ``vectors`` (n, d) with ``method`` in ``LAYOUT_METHODS``."""
    check_method(method)
    if method == "pca":
        return pca_layout(vectors)
    if knn is None:
        raise ValueError("the umap layout needs the kNN graph (ids, dist)")
    return umap_layout(vectors, knn, seed)
