"""2-D and 3-D maps of embedding spaces: PCA, UMAP and t-SNE, deterministic for a given seed.

xy = project(vectors, "umap", n_components=2, seed=0)    # (n, 2) float32
rows = isoscope.sampling.sample_indices(len(vectors), 20_000, seed=0)  # seeded subsample for big corpora

- ``pca``: exact, via the eigenvectors of the covariance (float64); each axis's sign is fixed so that
  its largest loading is positive (the scikit-learn ``svd_flip`` convention), so PCA is reproducible.
- ``umap``: ``umap.UMAP`` with cosine distance, ``n_neighbors=15``, ``min_dist=0.1``. A seed makes it
  single-threaded (UMAP's rule for reproducibility). Up to ``KNN_EXACT_MAX_ROWS`` rows the cosine
  neighbour graph is exact, from FAISS (``isoscope.neighbours.exact.knn_graph``, about 0.5 s for 10k x 384), and is
  handed to UMAP as ``precomputed_knn``: that skips UMAP's approximate NN-descent, whose numba JIT
  compilation dominated a first call in a process (58 s -> 19 s for 10k points here). Bigger inputs,
  or another metric, use UMAP's own NN-descent.
- ``tsne``: ``sklearn.manifold.TSNE`` with cosine distance, PCA initialisation, ``perplexity=30``
  (lowered for tiny inputs). Slow beyond ~10k points: sample first.

Extra keyword arguments go to the underlying estimator (``n_neighbors=50``, ``perplexity=10``, ...).
"""

from __future__ import annotations

import logging
import warnings
from typing import Literal, get_args

import numpy as np

from isoscope.errors import InputError
from isoscope.linalg import covariance_eigh
from isoscope.threads import torch_threads_kept

log = logging.getLogger(__name__)

ProjectionMethod = Literal["pca", "umap", "tsne"]
PROJECTION_METHODS: tuple[str, ...] = get_args(ProjectionMethod)
# The one glossary of map methods (the Projection map, Compare spaces and the Atlas layout show it).
PROJECTION_DESCRIPTIONS: dict[str, str] = {
    "pca": "principal component analysis: the linear view along the directions of largest variance; keeps the "
    "global shape and distances, instant, but crowds clusters on top of each other",
    "umap": "UMAP: a non-linear map that keeps each point's nearest neighbours next to it; clusters separate, but "
    "the distances between far-apart clusters mean little (the first run on a machine compiles its code)",
    "tsne": "t-SNE: like UMAP, keeps local neighbourhoods (perplexity: about how many); slower, and slow beyond a "
    "few thousand points",
}
N_COMPONENTS: tuple[int, ...] = (2, 3)
SMALL_UMAP_ROWS = 64
KNN_EXACT_MAX_ROWS = 50_000
DEFAULT_PARAMS: dict[str, dict[str, object]] = {
    "pca": {},
    "umap": {"n_neighbors": 15, "min_dist": 0.1, "metric": "cosine", "n_jobs": 1},
    "tsne": {"perplexity": 30.0, "metric": "cosine", "init": "pca"},
}


def _check_input(X: np.ndarray, method: str, n_components: int) -> np.ndarray:
    if method not in PROJECTION_METHODS:
        raise InputError(f"unknown projection '{method}'; choose one of {', '.join(PROJECTION_METHODS)}")
    if n_components not in N_COMPONENTS:
        raise InputError(f"n_components must be 2 or 3, got {n_components}")
    arr = np.asarray(X)
    if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.number):
        raise InputError(f"vectors must be a 2-D numeric array (rows, dimensions), got shape {arr.shape}")
    if arr.shape[1] < n_components:
        raise InputError(f"{arr.shape[1]}-dimensional vectors cannot be projected to {n_components} dimensions")
    if arr.shape[0] < n_components + 2:
        raise InputError(f"need at least {n_components + 2} points to project, got {arr.shape[0]}")
    if not np.isfinite(arr).all():
        raise InputError("vectors contain NaN or infinite values; drop or fix those rows first")
    return arr


def pca(X: np.ndarray, n_components: int = 2) -> np.ndarray:
    """Coordinates on the top principal axes (n, k), signs fixed so each axis's largest loading is positive."""
    eig = covariance_eigh(X)
    comps = eig.vectors[:, :n_components]  # (d, k)
    return ((np.asarray(X, np.float64) - eig.mean) @ comps).astype(np.float32)  # (n, k)


def _umap(X: np.ndarray, n_components: int, seed: int, params: dict) -> np.ndarray:
    from isoscope.neighbours.umap_jit import import_umap

    umap = import_umap()

    n = X.shape[0]
    params = {**DEFAULT_PARAMS["umap"], **params}
    params["n_neighbors"] = int(min(params["n_neighbors"], n - 1))
    if n < SMALL_UMAP_ROWS and "init" not in params:  # spectral init is unreliable on tiny graphs
        params["init"] = "random"
    if params["metric"] == "cosine" and n <= KNN_EXACT_MAX_ROWS and "precomputed_knn" not in params:
        params["precomputed_knn"] = _exact_knn(X, params["n_neighbors"])
    reducer = umap.UMAP(n_components=n_components, random_state=seed, **params)
    with warnings.catch_warnings(), torch_threads_kept():  # precomputed kNN, no search index: no transform
        warnings.filterwarnings("ignore", message=r"precomputed_knn\[2\]", category=UserWarning)
        return np.asarray(reducer.fit_transform(X.astype(np.float32)), dtype=np.float32)


def _exact_knn(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, None]:
    """UMAP's ``precomputed_knn``: exact cosine neighbours from FAISS (ids (n, k), distances (n, k))."""
    from isoscope.neighbours.exact import knn_graph

    ids, dist = knn_graph(X, k)
    return ids, dist, None


def _tsne(X: np.ndarray, n_components: int, seed: int, params: dict) -> np.ndarray:
    from sklearn.manifold import TSNE

    n = X.shape[0]
    params = {**DEFAULT_PARAMS["tsne"], **params}
    params["perplexity"] = float(min(params["perplexity"], max(1.0, (n - 1) / 3)))
    method = params.pop("method", "barnes_hut" if n_components < 4 else "exact")
    tsne = TSNE(n_components=n_components, random_state=seed, method=method, **params)
    return np.asarray(tsne.fit_transform(X.astype(np.float32)), dtype=np.float32)


def project(
    X: np.ndarray,
    method: str = "pca",
    n_components: int = 2,
    *,
    seed: int = 0,
    **params: object,
) -> np.ndarray:
    """Map vectors (n, d) to (n, ``n_components``) float32 with ``method`` in ``PROJECTION_METHODS``.

    Same input, method, seed and parameters give the same output. Big corpora: project a
    ``isoscope.sampling.sample_indices`` subsample.
    """
    arr = _check_input(X, method, n_components)
    if method == "pca":
        if params:
            raise InputError(f"pca takes no parameters, got {', '.join(params)}")
        return pca(arr, n_components)
    if method == "umap":
        return _umap(arr, n_components, seed, dict(params))
    return _tsne(arr, n_components, seed, dict(params))


COORDINATE_COLUMNS: tuple[str, ...] = ("x", "y", "z")  # metadata columns read as precomputed map coordinates


def precomputed_coordinates(meta) -> np.ndarray | None:  # meta: pandas.DataFrame
    """Numeric x, y (and z when present) metadata columns as (n, 2|3) float32, else None."""
    import pandas as pd

    cols = {str(c).strip().lower(): c for c in meta.columns}
    x, y, z = COORDINATE_COLUMNS
    if x not in cols or y not in cols or meta.empty:
        return None
    names = [x, y] + ([z] if z in cols else [])
    values = [pd.to_numeric(meta[cols[c]], errors="coerce").to_numpy(np.float64) for c in names]
    xyz = np.stack(values, axis=1)  # (n, 2|3)
    if not np.isfinite(xyz[:, :2]).all():
        return None
    if xyz.shape[1] == 3 and not np.isfinite(xyz[:, 2]).all():
        xyz = xyz[:, :2]
    return xyz.astype(np.float32)
