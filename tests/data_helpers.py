"""Synthetic data shared by the tests."""

from __future__ import annotations

import numpy as np


def clustered(n: int, d: int, clusters: int, seed: int, spread: float = 0.6) -> np.ndarray:
    """Gaussian blobs around random centres, float32 (n, d)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, d))  # (c, d)
    labels = rng.integers(0, clusters, n)  # (n,)
    return (centres[labels] + spread * rng.standard_normal((n, d))).astype(np.float32)


def brute_force(X: np.ndarray, Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Cosine top-k with numpy in float64. Returns scores (q, k), ids (q, k)."""
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    Qn = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    S = Qn.astype(np.float64) @ Xn.astype(np.float64).T  # (q, n)
    ids = np.argsort(-S, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(S, ids, axis=1), ids
