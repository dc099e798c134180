"""A calibrator written outside Isoscope, as a user writes one: a class in a module of its own (issue 52: a
calibrator is one class). ``tests/core/calibrate/test_your_own.py`` uses it in-process and as an installed plugin.

``shrink:A`` removes the share A of the mean vector: ``y = x - A mu`` (A = 1 is ``centre``, A = 0 is ``none``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from isoscope.calibrate import Calibrator, Param, check_array
from isoscope.linalg import AffineMap


class Shrink(Calibrator):
    """``x - alpha * mu``: a share of the mean removed."""

    name = "shrink"
    arguments = (Param("alpha", float, "A", "share of the mean removed", low=0.0, high=1.0, suggest=0.5),)
    summary = "remove a share of the mean vector"
    affine = True

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def fit(self, X: np.ndarray, y: None = None, progress: Any = None) -> Shrink:
        X = check_array(X, min_rows=2)
        self.mean_ = X.mean(axis=0)  # (d,)
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        return (self._check_input(X) - self.alpha * self.mean_).astype(np.float32)

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        return (self._check_input(Z, "Z") + self.alpha * self.mean_).astype(np.float32)

    def affine_map(self) -> AffineMap:
        self._check_fitted()
        return AffineMap(np.eye(self.n_features_in_), -self.alpha * np.asarray(self.mean_, np.float64))

    def _tensors(self) -> dict[str, np.ndarray]:
        return {"mean": self.mean_}

    def _expected_shapes(self, state: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        return {"mean": (int(state["n_features_in_"]),)}

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        self.mean_ = tensors["mean"]
