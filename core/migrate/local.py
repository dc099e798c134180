"""The local adapter: one ridge map per cluster of the source vectors, routed by a vector's cluster.

The fit pairs are clustered (k-means on the source side, seeded); each cluster gets a ridge map shrunk towards the
global map (``RidgeAdapter(toward="procrustes")`` of every pair), and keeps it only where the cluster's held-out pairs say
it maps closer than the global one; elsewhere the global map stays. ``local_`` says which clusters kept theirs.
Not affine (piecewise): it exports as a sentence-transformers module, not as a Dense layer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from isoscope.calibrate.base import Param
from isoscope.errors import InputError
from isoscope.migrate.adapters import (
    HOLDOUT,
    Adapter,
    RidgeAdapter,
    RidgeSolver,
    check_pairs,
    choose_alpha,
    mean_cosine,
    split,
)

MIN_CLUSTER_PAIRS = 8  # a cluster with fewer train pairs keeps the global map


class LocalAdapter(Adapter):
    """A ridge map per cluster of the fit pairs' source vectors where held-out pairs say it helps."""

    name = "local"
    arguments = (Param("clusters", int, "C", "clusters of the fit pairs", low=2, high=256, suggest=8),)
    summary = "local: one map per cluster of the fit texts, kept where held-out pairs say it beats the global one"
    choices = ("local:C",)
    order = 50
    affine = False

    def __init__(self, clusters: int = 8, *, holdout: float = HOLDOUT, seed: int = 0) -> None:
        self.clusters = clusters
        self.holdout = holdout
        self.seed = seed

    @classmethod
    def explain(cls, values: dict) -> str:
        return (
            f"local: one map per cluster of the fit texts ({values.get('clusters', 'C')} clusters), kept where "
            "held-out pairs say it beats the global one"
        )

    def fit(self, X: np.ndarray, y: np.ndarray, progress: Any = None) -> LocalAdapter:
        from sklearn.cluster import KMeans

        Xu, Yu = check_pairs(X, y)
        k = int(self.clusters)
        if not 2 <= k <= min(256, len(Xu) // MIN_CLUSTER_PAIRS):
            raise InputError(
                f"local:C needs C between 2 and {min(256, len(Xu) // MIN_CLUSTER_PAIRS)} for {len(Xu)} pairs; got {k}"
            )
        glob = RidgeAdapter(toward="procrustes", holdout=self.holdout, seed=self.seed).fit(Xu, Yu)
        self.weight_, self.bias_ = glob.weight_, glob.bias_
        km = KMeans(n_clusters=k, n_init=3, random_state=self.seed).fit(Xu)
        self.centroids_ = km.cluster_centers_  # (k, d_in)
        labels = km.labels_
        train, held = split(len(Xu), self.holdout, self.seed)
        self.weights_ = np.repeat(self.weight_[None], k, axis=0)  # (k, d_in, d_out)
        self.biases_ = np.repeat(self.bias_[None], k, axis=0)  # (k, d_out)
        self.local_ = np.zeros(k, dtype=bool)
        for c in range(k):
            self._fit_cluster(c, Xu, Yu, labels, (train, held))
        self._fitted(Xu, Yu)
        return self

    def _fit_cluster(self, c: int, X: np.ndarray, Y: np.ndarray, labels: np.ndarray, parts: tuple) -> None:
        """Cluster ``c``'s own map, shrunk towards the global one, kept when its held-out pairs map closer."""
        train, held = (part[labels[part] == c] for part in parts)
        if len(train) < MIN_CLUSTER_PAIRS or len(held) < 2:
            return
        alpha, _ = choose_alpha(X[train], Y[train], toward=self.weight_, holdout=self.holdout, seed=self.seed)
        solver = RidgeSolver(X[train], Y[train], self.weight_)
        W = solver.weight(alpha)
        mine = mean_cosine(X[held] @ W + solver.bias(W), Y[held])
        theirs = mean_cosine(X[held] @ self.weight_ + self.bias_, Y[held])
        if mine > theirs:
            rows = np.flatnonzero(labels == c)
            solver = RidgeSolver(X[rows], Y[rows], self.weight_)  # refitted on the cluster's every pair
            self.weights_[c] = solver.weight(alpha)
            self.biases_[c] = solver.bias(self.weights_[c])
            self.local_[c] = True

    def route(self, X: np.ndarray) -> np.ndarray:
        """The cluster of each unit row (the nearest centroid)."""
        return np.argmin(((X[:, None, :] - self.centroids_[None]) ** 2).sum(-1), axis=1)

    def transform(self, X: np.ndarray) -> np.ndarray:
        Xu = self._check_x(X)
        out = np.empty((len(Xu), self.d_out_), np.float32)
        for start in range(0, len(Xu), 4096):  # (4096, k, d_in) distances at most
            part = Xu[start : start + 4096]
            c = self.route(part)
            out[start : start + len(part)] = np.einsum("nd,nde->ne", part, self.weights_[c]) + self.biases_[c]
        return out

    def _state(self) -> dict[str, Any]:
        return {**super()._state(), "local_": [bool(b) for b in self.local_]}

    def _tensors(self) -> dict[str, np.ndarray]:
        return {**super()._tensors(), "centroids": self.centroids_, "weights": self.weights_, "biases": self.biases_}

    def _expected_shapes(self, state: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        d_in, d_out, k = int(state["n_features_in_"]), int(state["d_out_"]), int(self.clusters)
        own = {"centroids": (k, d_in), "weights": (k, d_in, d_out), "biases": (k, d_out)}
        return {**super()._expected_shapes(state), **own}

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        self.centroids_, self.weights_, self.biases_ = tensors["centroids"], tensors["weights"], tensors["biases"]
        self.local_ = np.asarray(state["local_"], dtype=bool)
        if self.local_.shape != (int(self.clusters),):
            raise ValueError("local_ does not name every cluster")

    def affine_map(self):
        raise NotImplementedError("a local adapter is piecewise, not one affine map: export it as a module")
