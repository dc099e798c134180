"""Linear (affine) calibrators, fitted in closed form on the covariance of the fit vectors.

- ``Identity`` (method ``none``).
- ``Centering`` (``centre``): remove the mean, the mildest fix (the mean direction is what makes a cone).
- ``Whitening`` (Su et al. 2021): ``z = (x - mu) W`` with ``W = U diag(1 / sqrt(lambda))``, optionally
  truncated to the top ``k`` components (``whitening:K``). The same map as
  ``sklearn.decomposition.PCA(whiten=True)`` up to the sign of each component.
- ``StandardNormalization`` (``sn``): per dimension ``(x - mu) / sigma``.
- ``AllButTheTop`` (``abtt:D``, Mu & Viswanath 2018): remove the mean and the top ``D`` principal directions.
- ``Chain`` of calibrators applied one after another (``sn+abtt:D``).

Each is affine, and says so exactly (``affine_map``): what export writes as a Dense layer or a FAISS
pre-transform. A class that declares ``name`` is a method of the grammar (``isoscope.calibrate.methods``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.base import clone

from isoscope.calibrate.base import Calibrator, EpochProgressFn, Param, check_array, register
from isoscope.errors import InputError
from isoscope.linalg import AffineMap, covariance_eigh


class Identity(Calibrator):
    """Method ``none``: vectors unchanged (as float32)."""

    name = "none"
    summary = "the raw vectors"
    order = 0
    affine = True

    def fit(self, X: np.ndarray, y: None = None, progress: EpochProgressFn | None = None) -> Identity:
        X = check_array(X)
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        return self._check_input(X).astype(np.float32)

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        return self._check_input(Z, "Z").astype(np.float32)

    def affine_map(self) -> AffineMap:
        """``W = I``, ``b = 0``."""
        self._check_fitted()
        return AffineMap.identity(int(self.n_features_in_))


class Centering(Calibrator):
    """Method ``centre``: ``x - mu``, the mean of the fit vectors removed (``abtt`` with no direction removed)."""

    name = "centre"
    aliases = ("center",)
    summary = "centring: remove the mean vector (the direction every text shares)"
    order = 10
    affine = True

    def fit(self, X: np.ndarray, y: None = None, progress: EpochProgressFn | None = None) -> Centering:
        X = check_array(X, min_rows=2)
        self.mean_ = X.astype(np.float64).mean(axis=0)  # (d,)
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        return (self._check_input(X) - self.mean_).astype(np.float32)

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        return (self._check_input(Z, "Z") + self.mean_).astype(np.float32)

    def affine_map(self) -> AffineMap:
        """``W = I``, ``b = -mu``."""
        self._check_fitted()
        return AffineMap(np.eye(int(self.n_features_in_)), -np.asarray(self.mean_, np.float64))

    def _tensors(self) -> dict[str, np.ndarray]:
        return {"mean": self.mean_}

    def _expected_shapes(self, state: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        return {"mean": (int(state["n_features_in_"]),)}

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        self.mean_ = tensors["mean"]


class Whitening(Calibrator):
    """Whitening (Su et al. 2021): ``z = (x - mu) W``, ``W = U[:, :k] diag(1 / sqrt(lambda[:k]))``.

    ``n_components=None`` keeps all ``d`` dimensions (exactly invertible); ``k < d`` keeps the top ``k``
    principal components (output (n, k); ``inverse_transform`` is then the least-squares pseudo-inverse).
    Eigenvalues are floored at ``eps * lambda_max`` (relative, so the floor means the same at any scale of
    the vectors): a direction with less variance than that is noise, not signal to amplify.
    """

    name = "whitening"
    arguments = (
        Param("n_components", int, "K", "components kept", low=1, dims="d", components=True),
        Param("eps", float, "", "relative eigenvalue floor", low=0.0, high=1.0),
    )
    summary = "the linear counterpart of the flow: centre, rotate to the principal axes, scale to unit variance"
    choices = ("whitening", "whitening:K")
    order = 30
    affine = True

    def __init__(self, n_components: int | None = None, eps: float = 1e-6) -> None:
        self.n_components = n_components
        self.eps = eps

    @classmethod
    def explain(cls, values: dict) -> str:
        if "n_components" in values:
            return f"whitening that keeps the top {values['n_components']} principal components"
        return super().explain(values)

    def whitened_dims(self, d: int) -> int:
        return d if self.n_components is None else int(self.n_components)

    def _k(self, d: int) -> int:
        if self.n_components is None:
            return d
        k = int(self.n_components)
        if not 1 <= k <= d:
            raise InputError(f"whitening:K needs K between 1 and {d} (the dimension of the vectors); got {k}")
        return k

    def fit(self, X: np.ndarray, y: None = None, progress: EpochProgressFn | None = None) -> Whitening:
        if not 0 < self.eps < 1:
            raise InputError(f"Whitening eps (relative eigenvalue floor) must be in (0, 1); got {self.eps}")
        X = check_array(X, min_rows=2)
        k = self._k(X.shape[1])
        eig = covariance_eigh(X)
        lam = np.maximum(eig.eigenvalues, self.eps * max(eig.eigenvalues[0], np.finfo(np.float64).tiny))  # (d,)
        self.mean_ = eig.mean  # (d,)
        self.eigenvalues_ = lam[:k]  # (k,)
        self.components_ = eig.vectors[:, :k] * (1.0 / np.sqrt(lam[:k]))  # (d, k)
        self.inverse_components_ = (eig.vectors[:, :k] * np.sqrt(lam[:k])).T  # (k, d)
        self.n_features_in_ = X.shape[1]
        return self

    @property
    def n_features_out_(self) -> int:
        return int(self.components_.shape[1])

    def transform(self, X: np.ndarray) -> np.ndarray:
        X = self._check_input(X)
        return ((X - self.mean_) @ self.components_).astype(np.float32)  # (n, k)

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        Z = self._check_input(Z, "Z", n_features=self.n_features_out_)
        return (Z @ self.inverse_components_ + self.mean_).astype(np.float32)  # (n, d)

    def affine_map(self) -> AffineMap:
        """``W = C`` (d, k), ``b = -mu C``."""
        self._check_fitted()
        W = np.asarray(self.components_, np.float64)  # (d, k)
        return AffineMap(W, -np.asarray(self.mean_, np.float64) @ W)

    def log_abs_det(self) -> float:
        """log |det W| (full rank only): the change of density of the whitening map."""
        return float(-0.5 * np.sum(np.log(self.eigenvalues_)))

    def _tensors(self) -> dict[str, np.ndarray]:
        return {
            "mean": self.mean_,
            "eigenvalues": self.eigenvalues_,
            "components": self.components_,
            "inverse_components": self.inverse_components_,
        }

    def _expected_shapes(self, state: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        d = int(state["n_features_in_"])
        k = self._k(d)
        return {"mean": (d,), "eigenvalues": (k,), "components": (d, k), "inverse_components": (k, d)}

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        self.mean_ = tensors["mean"]
        self.eigenvalues_ = tensors["eigenvalues"]
        self.components_ = tensors["components"]
        self.inverse_components_ = tensors["inverse_components"]


class StandardNormalization(Calibrator):
    """Method ``sn``: per dimension ``(x - mu) / sigma`` (sigma clipped at ``eps``)."""

    name = "sn"
    summary = "standard normalization per dimension"
    order = 40
    affine = True

    def __init__(self, eps: float = 1e-8) -> None:
        self.eps = eps

    def fit(self, X: np.ndarray, y: None = None, progress: EpochProgressFn | None = None) -> StandardNormalization:
        X = check_array(X, min_rows=2)
        self.mean_ = X.mean(axis=0)  # (d,)
        self.scale_ = np.maximum(X.std(axis=0, ddof=1), self.eps)  # (d,)
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        X = self._check_input(X)
        return ((X - self.mean_) / self.scale_).astype(np.float32)

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        Z = self._check_input(Z, "Z")
        return (Z * self.scale_ + self.mean_).astype(np.float32)

    def affine_map(self) -> AffineMap:
        """``W = diag(1 / sigma)``, ``b = -mu / sigma``."""
        self._check_fitted()
        inv = 1.0 / np.asarray(self.scale_, np.float64)  # (d,)
        return AffineMap(np.diag(inv), -np.asarray(self.mean_, np.float64) * inv)

    def _tensors(self) -> dict[str, np.ndarray]:
        return {"mean": self.mean_, "scale": self.scale_}

    def _expected_shapes(self, state: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        d = int(state["n_features_in_"])
        return {"mean": (d,), "scale": (d,)}

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        self.mean_, self.scale_ = tensors["mean"], tensors["scale"]


class AllButTheTop(Calibrator):
    """All-but-the-top (Mu & Viswanath 2018): remove the mean and the top ``D`` principal directions.

    ``n_components=None`` uses the paper's rule of thumb ``D = max(1, d // 100)`` (0 for one-dimensional
    vectors, whose only direction would leave nothing: then only the mean is removed). Not invertible.
    """

    name = "abtt"
    arguments = (Param("n_components", int, "D", "top directions removed", low=1, dims="d-1", suggest=3, box_high=64),)
    summary = "all-but-the-top: remove the mean and the top D principal directions"
    choices = ("abtt:D", "sn+abtt:D")  # alone, and after sn
    order = 50
    invertible: ClassVar[bool] = False
    affine = True

    def __init__(self, n_components: int | None = None) -> None:
        self.n_components = n_components

    @classmethod
    def explain(cls, values: dict) -> str:
        return f"all-but-the-top: remove the mean and the top {values.get('n_components', 'D')} principal directions"

    def _k(self, d: int) -> int:
        if self.n_components is None:
            return min(max(1, d // 100), d - 1)
        k = int(self.n_components)
        if not 0 <= k < d:
            raise InputError(f"abtt:D needs D between 0 and {d - 1} (below the dimension of the vectors); got {k}")
        return k

    def fit(self, X: np.ndarray, y: None = None, progress: EpochProgressFn | None = None) -> AllButTheTop:
        X = check_array(X, min_rows=2)
        k = self._k(X.shape[1])
        eig = covariance_eigh(X)
        self.mean_ = eig.mean  # (d,)
        self.components_ = eig.vectors[:, :k]  # (d, D) orthonormal columns
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        X = self._check_input(X) - self.mean_  # (n, d)
        return (X - (X @ self.components_) @ self.components_.T).astype(np.float32)

    def affine_map(self) -> AffineMap:
        """``W = P = I - U U^T`` (the projector off the top directions), ``b = -mu P``."""
        self._check_fitted()
        U = np.asarray(self.components_, np.float64)  # (d, D)
        P = np.eye(int(self.n_features_in_)) - U @ U.T  # (d, d)
        return AffineMap(P, -np.asarray(self.mean_, np.float64) @ P)

    def _tensors(self) -> dict[str, np.ndarray]:
        return {"mean": self.mean_, "components": self.components_}

    def _expected_shapes(self, state: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        d = int(state["n_features_in_"])
        return {"mean": (d,), "components": (d, self._k(d))}

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        self.mean_, self.components_ = tensors["mean"], tensors["components"]


@register
class Chain(Calibrator):
    """Calibrators applied one after another (each fitted on the output of the previous one).

    ``steps`` is stored as given and never changed (scikit-learn's rule for ``clone``); ``fit`` fits a clone of
    each step, kept in ``steps_`` (as ``sklearn.ensemble``'s meta-estimators keep ``estimators_``).
    """

    def __init__(self, steps: Sequence[Calibrator]) -> None:
        self.steps = steps

    @property
    def invertible(self) -> bool:  # type: ignore[override]
        return all(s.invertible for s in self.steps)

    @property
    def affine(self) -> bool:  # type: ignore[override]
        return all(s.affine for s in self.steps)

    @property
    def trains_for_epochs(self) -> bool:  # type: ignore[override]
        return any(s.trains_for_epochs for s in self.steps)

    def whitened_dims(self, d: int) -> int:
        return max((s.whitened_dims(d) for s in self.steps), default=0)

    def affine_map(self) -> AffineMap:
        """``(x W1 + b1) W2 + b2 = x (W1 W2) + (b1 W2 + b2)``, composed in float64."""
        self._check_fitted()
        out = AffineMap.identity(int(self.n_features_in_))
        for step in self.steps_:
            out = out.then(step.affine_map())
        return out

    @property
    def method(self) -> str:
        return "+".join(s.method for s in self.steps)

    def fit(self, X: np.ndarray, y: None = None, progress: EpochProgressFn | None = None) -> Chain:
        if not self.steps:
            raise InputError("a chain needs at least one calibrator, like sn+abtt:3")
        X = check_array(X, min_rows=2)
        d = X.shape[1]
        fitted = [clone(step) for step in self.steps]
        for step in fitted:
            X = step.fit(X, progress=progress).transform(X)
        self.steps_ = fitted
        self.n_features_in_ = d
        return self

    @property
    def n_features_out_(self) -> int:
        return self.steps_[-1].n_features_out_

    def transform(self, X: np.ndarray) -> np.ndarray:
        out = self._check_input(X)
        for step in self.steps_:
            out = step.transform(out)
        return np.asarray(out, np.float32)

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        out = self._check_input(Z, "Z", n_features=self.n_features_out_)
        for step in reversed(self.steps_):
            if not step.invertible:
                raise NotImplementedError(f"Chain step {type(step).__name__} is not invertible")
        for step in reversed(self.steps_):
            out = step.inverse_transform(out)
        return np.asarray(out, np.float32)

    def _json_params(self) -> dict[str, Any]:
        return {"steps": [s.method for s in self.steps]}

    def _record(self, prefix: str, tensors: dict[str, np.ndarray]) -> dict[str, Any]:
        record = super()._record(prefix, tensors)
        record["params"] = {"steps": [s._record(f"{prefix}{i}/", tensors) for i, s in enumerate(self.steps_)]}
        return record

    @classmethod
    def _from_params(cls, params: dict[str, Any], tensors: dict[str, np.ndarray], prefix: str, where: str):
        steps = params.get("steps")
        if set(params) != {"steps"} or not isinstance(steps, list) or not steps:
            raise InputError(f"{where}: a Chain needs a non-empty list of steps")
        fitted = [Calibrator._from_record(rec, tensors, f"{prefix}{i}/", where) for i, rec in enumerate(steps)]
        chain = cls([clone(step) for step in fitted])  # the parameters, unfitted, as after Chain(...).fit
        chain.steps_ = fitted
        return chain

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        if self.steps_[0].n_features_in_ != self.n_features_in_ or any(
            a.n_features_out_ != b.n_features_in_ for a, b in zip(self.steps_, self.steps_[1:], strict=False)
        ):
            raise ValueError("the steps' dimensions do not connect")
