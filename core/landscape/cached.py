"""Stages of the landscape experiment cached on disk under a content key, so a re-run reads them back.

A stage's result is stored next to its key (``{"key", field}`` in JSON, or a ``key`` array in an npz);
a file whose key differs (other inputs) or that does not read back is recomputed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from isoscope.landscape.records import ERRORS
from isoscope.landscape.store import read_arrays, read_json, write_arrays, write_json


class Counted:
    """An evaluate function that counts its calls (points actually computed, not read from the cache)."""

    def __init__(self, evaluate: Callable[[torch.Tensor], dict[str, float]]) -> None:
        self.evaluate = evaluate
        self.calls = 0

    def __call__(self, theta: torch.Tensor) -> dict[str, float]:
        self.calls += 1
        return self.evaluate(theta)


def cached_json(path: Path, key: str, *, reuse: bool, compute: Callable[[], object], field: str = "value") -> object:
    """``compute()``, or its earlier result stored in ``path`` under the same key (as ``{"key", field}``)."""
    cached = read_json(path) if reuse else None
    if cached is not None and cached.get("key") == key:
        return cached[field]
    write_json(path, {"key": key, field: compute()})
    return read_json(path)[field]  # the JSON form (NaN -> None) whether computed now or earlier


def cached_arrays(
    path: Path, key: str, *, reuse: bool, compute: Callable[[], dict[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """``compute()`` with its error arrays, or its earlier result stored in the npz ``path`` under the same key."""
    cached = read_arrays(path) if reuse else None
    if cached is not None and str(cached.get("key", "")) == key:
        return cached
    arrays = with_error(compute())
    arrays["key"] = np.array(key)
    write_arrays(path, arrays)
    return arrays


def with_error(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Adds ``records.ERRORS`` (``heldout_error``, ``train_error``: 1 - accuracy) to metric arrays of any shape."""
    for error, acc in ERRORS.items():
        arrays[error] = 1.0 - arrays[acc]
    return arrays
