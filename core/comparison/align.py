"""Two comparable maps: one 2-D projection per space, B rotated/reflected/scaled onto A (orthogonal Procrustes).

Each space is projected on its own (``isoscope.neighbours.projection.project``: PCA by default, UMAP or t-SNE on request)
from its unit-normalised rows, so the map, the neighbour lists and the quality scores all see cosine
geometry. Projections are defined only up to rotation, reflection and scale, so two independent maps of
the same texts cannot be compared point by point until B's map is aligned onto A's: with both maps
centred, ``R = argmin ||B R - A||`` over orthogonal R (``scipy.linalg.orthogonal_procrustes``) and
``s = sum(singular values of B^T A) / ||B||^2``; the aligned map is ``s B R + mean(A)``.

The Procrustes disparity is ``scipy.spatial.procrustes``'s: the residual sum of squares after both maps
are centred and scaled to unit Frobenius norm, ``1 - (sum of singular values)^2``, in [0, 1]; 0 when the
maps agree up to a similarity transform.

How honest is each map about its own space? ``trustworthiness`` (Venna & Kaski 2001, via
``sklearn.manifold.trustworthiness``) penalises map neighbours that are not neighbours in the space;
continuity is the same measure with the roles swapped (space neighbours torn apart on the map). Both are
in [0, 1], 1 = the k-neighbourhoods agree. They need all pairwise distances of the scored points, so they
are computed on a seeded sample of ``quality_points`` texts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from isoscope.errors import InputError
from isoscope.neighbours.index import as_unit_float32
from isoscope.neighbours.projection import PROJECTION_METHODS, project
from isoscope.sampling import sample_indices

log = logging.getLogger(__name__)

MAP_POINTS = 5_000  # texts drawn on the maps (a seeded sample above this)
QUALITY_POINTS = 1_000  # texts scored for trustworthiness and continuity
QUALITY_K = 10


@dataclass(frozen=True)
class Procrustes:
    """B's map aligned onto A's: ``aligned = scale * (B - mean_b) @ rotation + mean_a``."""

    aligned: np.ndarray  # (m, 2) float64
    rotation: np.ndarray  # (2, 2) orthogonal (a reflection when its determinant is -1)
    scale: float
    disparity: float  # in [0, 1]; NaN when a map is a single point


def procrustes_align(a: np.ndarray, b: np.ndarray) -> Procrustes:
    """Rotate/reflect and scale ``b`` (m, p) onto ``a`` (m, p) by orthogonal Procrustes, with the disparity."""
    from scipy.linalg import orthogonal_procrustes

    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"maps must have the same 2-D shape, got {a.shape} and {b.shape}")
    mean_a, mean_b = a.mean(axis=0), b.mean(axis=0)  # (p,)
    ac, bc = a - mean_a, b - mean_b  # (m, p)
    na, nb = float(np.linalg.norm(ac)), float(np.linalg.norm(bc))
    if na == 0 or nb == 0:
        return Procrustes(np.tile(mean_a, (len(a), 1)), np.eye(a.shape[1]), 0.0, float("nan"))
    rotation, sv_sum = orthogonal_procrustes(bc, ac)  # (p, p), sum of singular values of bc^T ac
    scale = float(sv_sum) / nb**2
    disparity = float(np.clip(1.0 - (float(sv_sum) / (na * nb)) ** 2, 0.0, 1.0))
    return Procrustes(scale * bc @ rotation + mean_a, rotation, scale, disparity)


def map_quality(space: np.ndarray, xy: np.ndarray, k: int = QUALITY_K) -> tuple[float, float]:
    """(trustworthiness, continuity) of a map ``xy`` (m, 2) of unit rows ``space`` (m, d), Euclidean on both
    (on unit rows that ranks neighbours as cosine does). NaN when there are too few points for ``k``."""
    from sklearn.manifold import trustworthiness

    m = len(xy)
    k = min(k, (m - 1) // 2)  # sklearn needs n_neighbors < m / 2
    if k < 1:
        return float("nan"), float("nan")
    x = np.asarray(space, np.float64)
    y = np.asarray(xy, np.float64)
    return float(trustworthiness(x, y, n_neighbors=k)), float(trustworthiness(y, x, n_neighbors=k))


@dataclass
class AlignedMaps:
    """Maps of A and of B (aligned onto A) for the same sampled texts, with their quality."""

    rows: np.ndarray  # (m,) text ids on the maps (all texts, or a seeded sample), sorted
    a: np.ndarray  # (m, 2) map of A
    b: np.ndarray  # (m, 2) map of B after Procrustes onto A
    procrustes: Procrustes
    method: str
    quality: dict[str, float]  # trustworthiness_a, continuity_a, trustworthiness_b, continuity_b
    quality_rows: int  # texts scored for the quality numbers
    quality_k: int

    @property
    def disparity(self) -> float:
        return self.procrustes.disparity

    @property
    def displacement(self) -> np.ndarray:
        """Distance each point moved from A's map to B's aligned map. (m,)"""
        return np.linalg.norm(self.b - self.a, axis=1)


def aligned_maps(
    a: np.ndarray,
    b: np.ndarray,
    method: str = "pca",
    *,
    max_points: int = MAP_POINTS,
    quality_points: int = QUALITY_POINTS,
    quality_k: int = QUALITY_K,
    seed: int = 0,
) -> AlignedMaps:
    """Project A (n, d_a) and B (n, d_b) to 2-D with ``method`` (one of ``PROJECTION_METHODS``), align B's
    map onto A's, and score both maps. At most ``max_points`` texts are mapped (seeded sample)."""
    if method not in PROJECTION_METHODS:
        raise InputError(f"unknown projection '{method}'; choose one of {', '.join(PROJECTION_METHODS)}")
    if np.shape(a)[0] != np.shape(b)[0]:
        raise InputError(f"A and B must hold the same texts, got {np.shape(a)[0]} and {np.shape(b)[0]} rows")
    rows = sample_indices(int(np.shape(a)[0]), max_points, seed)  # (m,)
    ua = as_unit_float32(np.asarray(a)[rows], "A")  # (m, d_a)
    ub = as_unit_float32(np.asarray(b)[rows], "B")  # (m, d_b)
    map_a = project(ua, method, 2, seed=seed)  # (m, 2)
    map_b = project(ub, method, 2, seed=seed)  # (m, 2)
    pro = procrustes_align(map_a, map_b)
    scored = sample_indices(len(rows), quality_points, seed + 1)  # positions within rows
    ta, ca = map_quality(ua[scored], map_a[scored], quality_k)
    tb, cb = map_quality(ub[scored], pro.aligned[scored], quality_k)
    quality = {"trustworthiness_a": ta, "continuity_a": ca, "trustworthiness_b": tb, "continuity_b": cb}
    return AlignedMaps(
        rows,
        map_a.astype(np.float64),
        pro.aligned,
        pro,
        method,
        quality,
        len(scored),
        min(quality_k, (len(scored) - 1) // 2),
    )
