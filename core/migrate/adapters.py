"""Adapters: maps fitted on pairs of spaces, from one embedding model's vectors of some texts to another's.

Each is a ``FittedMap`` of the family ``adapter`` (``isoscope.calibrate.base``): one class with its name and typed
parameters in the method grammar (``ridge:procrustes``, ``lowrank:64``), saved as ``adapter.json`` +
``adapter.safetensors``, its exact affine form (``affine_map``) when it has one. ``fit(X, Y)`` takes the source
space's vectors X (n, d_in) and the target space's Y (n, d_out) of the same n texts; ``transform(X)`` maps (m, d_in)
to (m, d_out). Retrieval compares vectors by cosine, so an adapter reads directions: ``fit`` and ``transform`` scale
each input row to length 1 (an export puts that normalisation before the map: ``normalizes_input``); the targets
are fitted as the target model gives them (a known affine map is recovered exactly).

- ``ProcrustesAdapter``: the orthogonal map nearest to the pairs (Schoenemann 1966), the smaller side zero-padded to the
  larger dimension: it rotates, never stretches, so a tiny fit set cannot distort it.
- ``RidgeAdapter``: the affine least-squares map with a ridge penalty chosen on a held-out part of the pairs, shrunk
  towards zero or towards the (centred) Procrustes rotation (``toward``: what a small fit set falls back on).
- ``LowRankAdapter``: the ridge map restricted to the R directions of the target that it predicts best (reduced-rank
  regression; Drift-Adapter's rank-64 affine).
- ``MLPAdapter`` (``isoscope.migrate.mlp``): the ridge map plus a small MLP on top, trained with early stopping
  on the held-out part.

A fit set with fewer pairs than dimensions is regularised (the penalty, the rotation), and ``notes_`` says so.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from isoscope.calibrate import registry
from isoscope.calibrate.base import FittedMap, Param
from isoscope.errors import InputError
from isoscope.linalg import AffineMap
from isoscope.migrate.options import HOLDOUT
from isoscope.sampling import sample_indices

registry.add_family("adapter", "isoscope.migrate")

MIN_PAIRS = 4  # below this no adapter is fitted: a held-out part needs pairs too
# penalties tried, relative to the mean eigenvalue of the fit vectors' covariance
ALPHA_GRID: tuple[float, ...] = (0.0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)


def finite_rows(X: object, name: str) -> np.ndarray:
    """``X`` as a float64 (n, d) array; InputError for a non-finite value or an all-zero row (no direction)."""
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a numeric array of shape (n, d)") from None
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise InputError(f"{name} must have shape (n, d); got {arr.shape}")
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr).all(axis=1))[0])
        raise InputError(f"{name} row {bad} holds NaN or inf; drop or fix it")
    zero = ~arr.any(axis=1)
    if zero.any():
        raise InputError(f"{name} row {int(np.flatnonzero(zero)[0])} is all zeros: it has no direction")
    return arr


def unit_rows(X: object, name: str) -> np.ndarray:
    """``X`` as float64 rows of length 1 (``finite_rows``' checks first)."""
    arr = finite_rows(X, name)
    return arr / np.linalg.norm(arr, axis=1, keepdims=True)


def check_pairs(X: object, Y: object) -> tuple[np.ndarray, np.ndarray]:
    """The source rows scaled to length 1 and the target rows as given; InputError for row counts that differ or
    too few pairs."""
    Xu, Yu = unit_rows(X, "the source vectors"), finite_rows(Y, "the target vectors")
    if len(Xu) != len(Yu):
        raise InputError(
            f"the two spaces hold {len(Xu):,} and {len(Yu):,} rows; an adapter needs the same texts in both"
        )
    if len(Xu) < MIN_PAIRS:
        raise InputError(f"an adapter needs at least {MIN_PAIRS} pairs of vectors; got {len(Xu)}")
    return Xu, Yu


def split(n: int, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train rows, held-out rows): a seeded ``holdout`` share (at least 2 rows, at most n - 2) held out."""
    k = min(max(2, round(n * holdout)), n - 2)
    held = np.sort(sample_indices(n, k, seed))
    return np.setdiff1d(np.arange(n), held), held


def mean_cosine(A: np.ndarray, B: np.ndarray) -> float:
    """Mean cosine of the rows of A and B (n, d), paired."""
    num = np.einsum("ij,ij->i", A, B)
    den = np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1)
    return float(np.mean(num / np.maximum(den, 1e-30)))


def procrustes(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """The orthogonal W (d_in, d_out) minimising ||X W - Y|| with the smaller side zero-padded to the larger
    dimension (``scipy.linalg.orthogonal_procrustes`` of the padded pairs, cut back to (d_in, d_out))."""
    from scipy.linalg import orthogonal_procrustes

    d = max(X.shape[1], Y.shape[1])
    Xp, Yp = np.zeros((len(X), d)), np.zeros((len(Y), d))  # (n, d) each
    Xp[:, : X.shape[1]], Yp[:, : Y.shape[1]] = X, Y
    R, _ = orthogonal_procrustes(Xp, Yp)  # (d, d)
    return R[: X.shape[1], : Y.shape[1]]


class Adapter(FittedMap):
    """A map fitted on pairs of spaces (the base of the ``adapter`` family): ``fit(X, Y) -> self``."""

    family: ClassVar[str] = "adapter"
    invertible: ClassVar[bool] = False
    normalizes_input: ClassVar[bool] = True  # transform scales each row to length 1 before the map

    def fit(self, X: np.ndarray, y: np.ndarray, progress: Any = None) -> Adapter:
        raise NotImplementedError

    def _check_x(self, X: object) -> np.ndarray:
        self._check_fitted()
        Xu = unit_rows(X, "X")
        if Xu.shape[1] != self.n_features_in_:
            raise InputError(
                f"X has {Xu.shape[1]} columns; this {type(self).__name__} was fitted on {self.n_features_in_}"
            )
        return Xu

    @property
    def n_features_out_(self) -> int:
        return int(self.d_out_)

    @property
    def nbytes(self) -> int:
        """The bytes of the fitted arrays (what ``save`` writes, less its JSON)."""
        return int(sum(np.asarray(v).nbytes for v in self._tensors().values()))

    def _fitted(self, X: np.ndarray, Y: np.ndarray) -> None:
        self.n_features_in_, self.d_out_ = int(X.shape[1]), int(Y.shape[1])
        self.n_pairs_ = len(X)
        if len(X) < min(X.shape[1], Y.shape[1]):
            self.notes_ = [
                f"fitted on {len(X):,} pairs for {X.shape[1]} -> {Y.shape[1]} dimensions: fewer pairs than "
                f"dimensions, so the map is regularised ({self.summary.split(':')[0]})"
            ]
        else:
            self.notes_ = []

    def transform(self, X: np.ndarray) -> np.ndarray:
        return self.affine_map().apply(self._check_x(X))

    def _state(self) -> dict[str, Any]:
        return {
            "n_features_in_": self.n_features_in_,
            "d_out_": self.d_out_,
            "n_pairs_": self.n_pairs_,
            "notes_": list(self.notes_),
        }

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        self.d_out_, self.n_pairs_ = int(state["d_out_"]), int(state["n_pairs_"])
        self.notes_ = [str(n) for n in state.get("notes_", [])]
        self.weight_, self.bias_ = np.asarray(tensors["weight"], np.float64), np.asarray(tensors["bias"], np.float64)

    def _expected_shapes(self, state: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        d_in, d_out = int(state["n_features_in_"]), int(state["d_out_"])
        return {"weight": (d_in, d_out), "bias": (d_out,)}

    def _tensors(self) -> dict[str, np.ndarray]:
        return {"weight": self.weight_, "bias": self.bias_}

    def affine_map(self) -> AffineMap:
        """The map on unit rows, ``y = x W + b`` (W (d_in, d_out), b (d_out,), float64)."""
        self._check_fitted()
        return AffineMap(self.weight_, self.bias_)


class ProcrustesAdapter(Adapter):
    """The nearest orthogonal map (zero-padding the smaller dimension): rotates, never stretches."""

    name = "procrustes"
    summary = "orthogonal Procrustes: the rotation nearest to the pairs (the smaller side zero-padded)"
    order = 10
    affine = True

    def fit(self, X: np.ndarray, y: np.ndarray, progress: Any = None) -> ProcrustesAdapter:
        Xu, Yu = check_pairs(X, y)
        self.weight_ = procrustes(Xu, Yu)  # (d_in, d_out)
        self.bias_ = np.zeros(Yu.shape[1])
        self._fitted(Xu, Yu)
        return self


class RidgeSolver:
    """Ridge least squares on centred pairs for many penalties from one eigendecomposition:
    ``W(alpha) = (Xc^T Xc + alpha I)^-1 (Xc^T Yc + alpha W0)``, W0 the map the penalty shrinks towards: zero, the
    centred pairs' Procrustes rotation, or a given (d_in, d_out) map."""

    def __init__(self, X: np.ndarray, Y: np.ndarray, toward: str | np.ndarray) -> None:
        self.mx, self.my = X.mean(axis=0), Y.mean(axis=0)  # (d_in,), (d_out,)
        Xc, Yc = X - self.mx, Y - self.my
        lam, self.V = np.linalg.eigh(Xc.T @ Xc)  # (d_in,), (d_in, d_in)
        self.lam = np.maximum(lam, 0.0)
        self.scale = max(float(self.lam.mean()), 1e-12)  # penalties are relative to the mean eigenvalue
        if isinstance(toward, np.ndarray):
            self.W0 = toward
        else:
            self.W0 = procrustes(Xc, Yc) if toward == "procrustes" else np.zeros((X.shape[1], Y.shape[1]))
        self.XtY = Xc.T @ Yc  # (d_in, d_out)

    def weight(self, alpha: float) -> np.ndarray:
        """W for the penalty ``alpha`` (relative to the mean eigenvalue); at 0, least squares with the directions
        the pairs do not span left at W0 (a pseudo-inverse)."""
        a = alpha * self.scale
        rhs = self.V.T @ (self.XtY + a * self.W0)  # (d_in, d_out)
        den = self.lam + a  # (d_in,)
        spanned = den > 1e-10 * max(float(self.lam.max()), 1e-300)
        coef = np.where(spanned[:, None], rhs / np.where(spanned, den, 1.0)[:, None], self.V.T @ self.W0)
        return self.V @ coef

    def bias(self, W: np.ndarray) -> np.ndarray:
        return self.my - self.mx @ W


def choose_alpha(
    X: np.ndarray, Y: np.ndarray, *, toward: str | np.ndarray, holdout: float, seed: int
) -> tuple[float, float]:
    """(penalty, held-out mean cosine): the ``ALPHA_GRID`` value whose map, fitted on the train part, maps the
    held-out part closest to its true vectors."""
    train, held = split(len(X), holdout, seed)
    solver = RidgeSolver(X[train], Y[train], toward)
    scores = []
    for alpha in ALPHA_GRID:
        W = solver.weight(alpha)
        scores.append(mean_cosine(X[held] @ W + solver.bias(W), Y[held]))
    best = int(np.argmax(scores))
    return ALPHA_GRID[best], float(scores[best])


class RidgeAdapter(Adapter):
    """Affine least squares with a ridge penalty, shrunk towards zero or towards the Procrustes rotation."""

    name = "ridge"
    arguments = (
        Param("toward", str, "", "what the penalty shrinks towards", choices=("zero", "procrustes")),
        Param(
            "alpha",
            float,
            "",
            "the penalty, relative to the mean eigenvalue (default: chosen on held-out pairs)",
            low=0.0,
        ),
    )
    summary = "ridge regression: the affine least-squares map, its penalty chosen on held-out pairs"
    choices = ("ridge", "ridge:procrustes")
    order = 20
    affine = True

    def __init__(
        self, toward: str = "zero", alpha: float | None = None, *, holdout: float = HOLDOUT, seed: int = 0
    ) -> None:
        self.toward = toward
        self.alpha = alpha
        self.holdout = holdout
        self.seed = seed

    @classmethod
    def explain(cls, values: dict) -> str:
        towards = " towards the Procrustes rotation" if values.get("toward") == "procrustes" else ""
        return f"ridge regression{towards}: the affine least-squares map, its penalty chosen on held-out pairs"

    def _solve(self, X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.toward not in ("zero", "procrustes"):
            raise InputError(f"ridge toward must be zero or procrustes; got {self.toward!r:.40}")
        if self.alpha is None:
            self.alpha_, self.holdout_cosine_ = choose_alpha(
                X, Y, toward=self.toward, holdout=self.holdout, seed=self.seed
            )
        else:
            self.alpha_, self.holdout_cosine_ = float(self.alpha), float("nan")
        solver = RidgeSolver(X, Y, self.toward)  # refitted on every pair with the chosen penalty
        W = solver.weight(self.alpha_)
        return W, solver.bias(W)

    def fit(self, X: np.ndarray, y: np.ndarray, progress: Any = None) -> RidgeAdapter:
        Xu, Yu = check_pairs(X, y)
        self.weight_, self.bias_ = self._solve(Xu, Yu)
        self._fitted(Xu, Yu)
        return self

    def _state(self) -> dict[str, Any]:
        return {**super()._state(), "alpha_": self.alpha_, "holdout_cosine_": self.holdout_cosine_}

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        self.alpha_, self.holdout_cosine_ = float(state["alpha_"]), float(state["holdout_cosine_"])


class LowRankAdapter(RidgeAdapter):
    """The ridge map kept to the R target directions it predicts best (reduced-rank regression)."""

    name = "lowrank"
    arguments = (
        Param("rank", int, "R", "rank of the map", low=1, dims="d", suggest=64),
        *RidgeAdapter.arguments,
    )
    summary = "low-rank affine: the ridge map kept to its R best-predicted target directions"
    choices = ("lowrank:R",)
    order = 30

    def __init__(
        self,
        rank: int = 64,
        toward: str = "zero",
        alpha: float | None = None,
        *,
        holdout: float = HOLDOUT,
        seed: int = 0,
    ) -> None:
        self.rank = rank
        super().__init__(toward, alpha, holdout=holdout, seed=seed)

    @classmethod
    def explain(cls, values: dict) -> str:
        return f"low-rank affine: the ridge map kept to its {values.get('rank', 'R')} best-predicted target directions"

    def fit(self, X: np.ndarray, y: np.ndarray, progress: Any = None) -> LowRankAdapter:
        Xu, Yu = check_pairs(X, y)
        r = int(self.rank)
        if not 1 <= r <= min(Xu.shape[1], Yu.shape[1]):
            raise InputError(f"lowrank:R needs R between 1 and {min(Xu.shape[1], Yu.shape[1])}; got {r}")
        W, _ = self._solve(Xu, Yu)
        mx, my = Xu.mean(axis=0), Yu.mean(axis=0)
        _, _, Vt = np.linalg.svd((Xu - mx) @ W, full_matrices=False)  # the fitted targets' directions
        P = Vt[:r].T @ Vt[:r]  # (d_out, d_out): projector on the top r
        self.weight_ = W @ P
        self.bias_ = my - mx @ self.weight_
        self._fitted(Xu, Yu)
        return self
