"""Seeded row samples: the same draw everywhere a subset of a big corpus is needed."""

from __future__ import annotations

import numpy as np

from isoscope.errors import InputError


def sample_indices(n: int, max_points: int | None, seed: int = 0) -> np.ndarray:
    """Sorted row indices (m,) int64: all ``n`` rows, or a seeded sample of ``max_points`` without replacement."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if max_points is None or max_points >= n:
        return np.arange(n, dtype=np.int64)
    if max_points < 1:
        raise InputError(f"sample size must be at least 1, got {max_points}")
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=int(max_points), replace=False)).astype(np.int64)
