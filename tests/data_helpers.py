"""Synthetic data shared by the tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def clustered(n: int, d: int, clusters: int, seed: int, spread: float = 0.6) -> np.ndarray:
    """Gaussian blobs around random centres, float32 (n, d)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, d))  # (c, d)
    labels = rng.integers(0, clusters, n)  # (n,)
    return (centres[labels] + spread * rng.standard_normal((n, d))).astype(np.float32)


def cosines64(X: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Cosine of every query with every row, in float64. (q, n)"""
    Xn = X.astype(np.float64) / np.linalg.norm(X.astype(np.float64), axis=1, keepdims=True)
    Qn = Q.astype(np.float64) / np.linalg.norm(Q.astype(np.float64), axis=1, keepdims=True)
    return Qn @ Xn.T


def brute_force(X: np.ndarray, Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Cosine top-k with numpy in float64. Returns scores (q, k), ids (q, k)."""
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    Qn = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    S = Qn.astype(np.float64) @ Xn.astype(np.float64).T  # (q, n)
    ids = np.argsort(-S, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(S, ids, axis=1), ids


def float32_dot_tolerance(d: int) -> float:
    """Worst-case round-off of a float32 dot product of two unit vectors in ``d`` dimensions (d * eps32),
    the bound for comparing rankings made in float32 (FAISS, numpy) with float64 ones."""
    return d * float(np.finfo(np.float32).eps)


def assert_valid_topk(ids: np.ndarray, scores64: np.ndarray, tol: float) -> None:
    """``ids`` (q, k) is an exact top-k of ``scores64`` (q, n) up to round-off ``tol``: distinct ids per row,
    best first, and their true scores equal the k largest (so near-ties may come in either order, on any CPU)."""
    k = ids.shape[1]
    assert all(len(set(row.tolist())) == k for row in ids), "repeated ids in a row"
    got = np.take_along_axis(scores64, ids, axis=1)  # (q, k) true scores of what was returned
    best = -np.sort(-scores64, axis=1)[:, :k]  # (q, k) the k largest true scores
    np.testing.assert_allclose(got, best, rtol=0, atol=tol)
    assert (np.diff(got, axis=1) <= tol).all(), "not best first"


def demo_head(source: Path, n: int, path: Path) -> Path:
    """The first ``n`` rows of a shipped demo CSV (``isoscope.paths.DEMO_PAIRS`` / ``DEMO_CORPUS``) written to
    ``path``: a small input file in the demo's own format."""
    import pandas as pd

    pd.read_csv(source).head(n).to_csv(path, index=False)
    return path
