"""Synthetic data shared by the tests."""

from __future__ import annotations

import numpy as np


def clustered(n: int, d: int, clusters: int, seed: int, spread: float = 0.6) -> np.ndarray:
    """Gaussian blobs around random centres, float32 (n, d)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, d))  # (c, d)
    labels = rng.integers(0, clusters, n)  # (n,)
    return (centres[labels] + spread * rng.standard_normal((n, d))).astype(np.float32)
