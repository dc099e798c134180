"""Calibrators: unsupervised maps that make sentence-embedding spaces isotropic, so cosine works better.

Pre-trained encoders put sentence vectors in a narrow cone; cosine similarity is then dominated by a few
directions. The calibrators here are fitted without labels on embeddings (of the evaluated sentences,
"target", or of a separate corpus) and map any embedding into a better-conditioned space:

- ``Identity`` (method ``none``).
- ``Whitening`` (Su et al. 2021): ``z = (x - mu) W`` with ``W = U diag(1 / sqrt(lambda))``, optionally
  truncated to the top ``k`` components (``whitening:K``).
- ``StandardNormalization`` (``sn``): per dimension ``(x - mu) / sigma``.
- ``AllButTheTop`` (``abtt:D``, Mu & Viswanath 2018): remove the mean and the top ``D`` principal directions.
- ``Chain`` of calibrators (``sn+abtt:D``).
- ``Flow`` (BERT-flow, Li et al. 2020): a Glow-style normalizing flow trained by maximum likelihood under
  a standard-normal prior. It starts where whitening ends (fixed whitening pre-transform, zero-initialised
  coupling outputs: the untrained flow gives whitening's cosines); training then removes non-Gaussian
  structure. On STS-B that structure is partly semantic: longer training lowers the likelihood further but
  also lowers STS Spearman, so the default schedule is short (see ``FlowConfig``).

Every calibrator follows the scikit-learn contract (``__init__`` stores arguments, ``fit(X) -> self``,
learned state ends in ``_``, ``transform``, ``inverse_transform`` when invertible) and saves to a folder
as safetensors (arrays) + JSON (class, parameters, metadata); nothing is ever pickled.

z = make_calibrator("whitening").fit(vectors).transform(vectors)  # (n, d) float32
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import nn

from core.cache import atomic_write_bytes
from core.errors import InputError
from core.evaluate import correlations, cosine_pairs

log = logging.getLogger(__name__)

CalibrationMethod = Literal["none", "flow", "whitening", "whitening:K", "sn", "abtt:D", "sn+abtt:D"]
CALIBRATION_METHODS: tuple[str, ...] = ("none", "flow", "whitening", "whitening:K", "sn", "abtt:D", "sn+abtt:D")
FlowLinear = Literal["lu", "permutation"]
FLOW_LINEARS: tuple[str, ...] = ("lu", "permutation")
FlowCoupling = Literal["additive", "affine"]
FLOW_COUPLINGS: tuple[str, ...] = ("additive", "affine")

FORMAT = "isoscope-calibrator"
FORMAT_VERSION = 1
JSON_NAME = "calibrator.json"
TENSORS_NAME = "calibrator.safetensors"

EpochProgressFn = Callable[[int, int, float], None]  # (epoch, n_epochs, bits_per_dim)
EVAL_ROWS = 4096  # rows of the fit data used for actnorm init and the flow's bits/dim summaries

# Threads for fitting (torch and BLAS). One thread is the fastest choice on a busy machine: with two
# threads on two shared cores a flow epoch was 10-20x slower. 0 leaves the libraries' own settings.
FIT_THREADS = int(os.environ.get("ISOSCOPE_FIT_THREADS", "1"))


@contextlib.contextmanager
def fit_threads(n: int | None = None) -> Iterator[None]:
    """Limit torch and BLAS threads to ``n`` (default ``FIT_THREADS``) inside the block, then restore."""
    n = FIT_THREADS if n is None else n
    if n <= 0:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits  # installed with scikit-learn

        with threadpool_limits(n):
            yield
    finally:
        torch.set_num_threads(previous)


# ---------------------------------------------------------------- input checks


class NotFittedError(ValueError, AttributeError):
    """A calibrator was used before ``fit`` (as in scikit-learn)."""


def _check_array(X: object, name: str = "X", min_rows: int = 1) -> np.ndarray:
    """A finite float64 (n, d) array, or a one-line ValueError."""
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric array of shape (n, d)") from None
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n, d); got {arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows to fit; got {arr.shape[0]}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf; drop or fix those rows")
    return arr


# ---------------------------------------------------------------- base class


class Calibrator:
    """Base class: the fit/transform contract, save/load as safetensors + JSON."""

    invertible: ClassVar[bool] = True

    def get_params(self) -> dict[str, Any]:
        """Constructor arguments as JSON-able values."""
        return {}

    @property
    def method(self) -> str:
        """The method string that ``make_calibrator`` parses back into this calibrator."""
        raise NotImplementedError

    def fit(self, X: np.ndarray) -> Calibrator:
        raise NotImplementedError

    def transform(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def fit_transform(self, X: np.ndarray) -> np.ndarray:
        return self.fit(X).transform(X)

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} is not invertible")

    # -- fitted state

    def _check_fitted(self) -> None:
        if not hasattr(self, "n_features_in_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(X) before transform")

    def _check_input(self, X: object, name: str = "X", n_features: int | None = None) -> np.ndarray:
        self._check_fitted()
        arr = _check_array(X, name)
        want = self.n_features_in_ if n_features is None else n_features
        if arr.shape[1] != want:
            raise ValueError(f"{name} has {arr.shape[1]} columns; this {type(self).__name__} was fitted on {want}")
        return arr

    @property
    def n_features_out_(self) -> int:
        return self.n_features_in_

    # -- serialisation: subclasses describe their arrays and small state

    def _state(self) -> dict[str, Any]:
        """Non-array fitted state, JSON-able."""
        return {"n_features_in_": int(self.n_features_in_)}

    def _tensors(self) -> dict[str, np.ndarray]:
        """Fitted arrays by name."""
        return {}

    def _expected_shapes(self, state: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        """Array shapes implied by the parameters and ``state`` (used to validate a loaded file)."""
        return {}

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        self.n_features_in_ = int(state["n_features_in_"])

    def _record(self, prefix: str, tensors: dict[str, np.ndarray]) -> dict[str, Any]:
        """JSON record of this calibrator; its arrays go into ``tensors`` under ``prefix``."""
        self._check_fitted()
        for key, value in self._tensors().items():
            tensors[prefix + key] = np.ascontiguousarray(value)
        return {"class": type(self).__name__, "params": self.get_params(), "state": self._state()}

    @classmethod
    def _from_record(cls, record: Any, tensors: dict[str, np.ndarray], prefix: str, where: str) -> Calibrator:
        if not isinstance(record, dict) or not {"class", "params", "state"} <= set(record):
            raise InputError(f"{where}: not an Isoscope calibrator record (class, params, state)")
        klass = CALIBRATORS.get(str(record["class"]))
        if klass is None:
            raise InputError(f"{where}: unknown calibrator class '{record['class']}'; known: {', '.join(CALIBRATORS)}")
        params, state = record["params"], record["state"]
        if not isinstance(params, dict) or not isinstance(state, dict):
            raise InputError(f"{where}: params and state must be JSON objects")
        try:
            obj = klass._from_params(params, tensors, prefix, where)
            expected = obj._expected_shapes(state)
        except InputError:
            raise
        except (TypeError, ValueError, KeyError) as exc:
            raise InputError(f"{where}: invalid {klass.__name__} parameters or state ({exc})") from None
        own = {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix) and "/" not in k[len(prefix) :]}
        if set(own) != set(expected):
            missing, extra = sorted(set(expected) - set(own)), sorted(set(own) - set(expected))
            raise InputError(f"{where}: {klass.__name__} arrays do not match (missing {missing}, unexpected {extra})")
        for key, shape in expected.items():
            if tuple(own[key].shape) != tuple(shape):
                raise InputError(
                    f"{where}: array '{prefix}{key}' has shape {tuple(own[key].shape)}, expected {tuple(shape)}"
                )
            if own[key].dtype.kind == "f" and not np.isfinite(own[key]).all():
                raise InputError(f"{where}: array '{prefix}{key}' contains NaN or inf")
        try:
            obj._restore(state, own)
        except (TypeError, ValueError, KeyError, RuntimeError) as exc:
            raise InputError(f"{where}: could not restore {klass.__name__} ({exc})") from None
        return obj

    @classmethod
    def _from_params(cls, params: dict[str, Any], tensors: dict[str, np.ndarray], prefix: str, where: str):
        return cls(**params)

    def save(self, directory: str | Path, metadata: dict[str, Any] | None = None) -> Path:
        """Write ``calibrator.safetensors`` (arrays) and ``calibrator.json`` (class, params, state, metadata).

        ``metadata`` (JSON-able: model, pooling, corpus, ...) is stored as is and comes back as
        ``metadata_`` after ``load``. The JSON holds the SHA-256 of the arrays file, so edits are detected.
        """
        from safetensors.numpy import save as st_save

        directory = Path(directory)
        if directory.exists() and not directory.is_dir():
            raise InputError(f"{directory} is a file; give a folder to save the calibrator in")
        tensors: dict[str, np.ndarray] = {}
        record = self._record("", tensors)
        meta = {**getattr(self, "metadata_", {}), **(metadata or {})}
        doc = {"format": FORMAT, "version": FORMAT_VERSION, **record, "method": self.method, "metadata": meta}
        doc["tensors"] = {k: list(v.shape) for k, v in sorted(tensors.items())}
        blob = st_save(tensors, metadata={"format": FORMAT})
        doc["sha256"] = hashlib.sha256(blob).hexdigest()
        atomic_write_bytes(directory / TENSORS_NAME, blob)
        atomic_write_bytes(directory / JSON_NAME, (json.dumps(doc, indent=1) + "\n").encode("utf-8"))
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> Calibrator:
        """Read a calibrator saved by ``save``; ``InputError`` for a missing, tampered or foreign file."""
        from safetensors import SafetensorError
        from safetensors.numpy import load as st_load

        directory = Path(directory)
        jpath, tpath = directory / JSON_NAME, directory / TENSORS_NAME
        if not jpath.is_file() or not tpath.is_file():
            raise InputError(f"{directory}: no saved calibrator here (need {JSON_NAME} and {TENSORS_NAME})")
        try:
            doc = json.loads(jpath.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise InputError(f"{jpath}: not valid JSON; save the calibrator again") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise InputError(f"{jpath}: not an Isoscope calibrator file")
        if doc.get("version") != FORMAT_VERSION:
            raise InputError(f"{jpath}: calibrator format version {doc.get('version')!r}, expected {FORMAT_VERSION}")
        blob = tpath.read_bytes()
        if doc.get("sha256") != hashlib.sha256(blob).hexdigest():
            raise InputError(f"{tpath}: checksum does not match {JSON_NAME}; the files were changed or mixed up")
        try:
            tensors = st_load(blob)
        except (SafetensorError, ValueError, OSError) as exc:
            raise InputError(f"{tpath}: not a readable safetensors file ({type(exc).__name__})") from None
        listed = doc.get("tensors")
        if not isinstance(listed, dict) or {k: list(v.shape) for k, v in tensors.items()} != listed:
            raise InputError(f"{directory}: the arrays do not match the JSON description; the files were changed")
        obj = Calibrator._from_record(doc, tensors, "", str(jpath))
        meta = doc.get("metadata", {})
        if not isinstance(meta, dict):
            raise InputError(f"{jpath}: metadata must be a JSON object")
        obj.metadata_ = meta
        if cls is not Calibrator and not isinstance(obj, cls):
            raise InputError(f"{directory}: holds a {type(obj).__name__}, not a {cls.__name__}")
        return obj

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


def load_calibrator(directory: str | Path) -> Calibrator:
    """Any calibrator saved with ``save``."""
    return Calibrator.load(directory)


# ---------------------------------------------------------------- linear calibrators


class Identity(Calibrator):
    """Method ``none``: vectors unchanged (as float32)."""

    @property
    def method(self) -> str:
        return "none"

    def fit(self, X: np.ndarray) -> Identity:
        X = _check_array(X)
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        return self._check_input(X).astype(np.float32)

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        return self._check_input(Z, "Z").astype(np.float32)


def _covariance_eigh(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean (d,), eigenvalues descending (d,), eigenvectors as columns (d, d) of the covariance."""
    with fit_threads():
        mu = X.mean(axis=0)  # (d,)
        Xc = X - mu  # (n, d)
        cov = Xc.T @ Xc / max(X.shape[0] - 1, 1)  # (d, d)
        lam, vecs = np.linalg.eigh(cov)
    order = np.argsort(lam)[::-1]
    vecs = vecs[:, order]
    # a deterministic sign per eigenvector (largest-magnitude entry positive) so fits are reproducible
    signs = np.sign(vecs[np.argmax(np.abs(vecs), axis=0), np.arange(vecs.shape[1])])
    signs[signs == 0] = 1.0
    return mu, lam[order], vecs * signs


class Whitening(Calibrator):
    """Whitening (Su et al. 2021): ``z = (x - mu) W``, ``W = U[:, :k] diag(1 / sqrt(lambda[:k]))``.

    ``n_components=None`` keeps all ``d`` dimensions (exactly invertible); ``k < d`` keeps the top ``k``
    principal components (output (n, k); ``inverse_transform`` is then the least-squares pseudo-inverse).
    Eigenvalues below ``eps`` (absolute, in squared embedding units) are clipped to ``eps``.
    """

    def __init__(self, n_components: int | None = None, eps: float = 1e-6) -> None:
        self.n_components = n_components
        self.eps = eps

    def get_params(self) -> dict[str, Any]:
        return {"n_components": self.n_components, "eps": self.eps}

    @property
    def method(self) -> str:
        return "whitening" if self.n_components is None else f"whitening:{self.n_components}"

    def _k(self, d: int) -> int:
        if self.n_components is None:
            return d
        k = int(self.n_components)
        if not 1 <= k <= d:
            raise ValueError(f"Whitening n_components must be between 1 and {d} (the dimension); got {k}")
        return k

    def fit(self, X: np.ndarray) -> Whitening:
        if not self.eps > 0:
            raise ValueError(f"Whitening eps must be > 0; got {self.eps}")
        X = _check_array(X, min_rows=2)
        k = self._k(X.shape[1])
        mu, lam, vecs = _covariance_eigh(X)
        lam = np.maximum(lam, self.eps)  # (d,)
        self.mean_ = mu  # (d,)
        self.eigenvalues_ = lam[:k]  # (k,)
        self.components_ = vecs[:, :k] * (1.0 / np.sqrt(lam[:k]))  # (d, k)
        self.inverse_components_ = (vecs[:, :k] * np.sqrt(lam[:k])).T  # (k, d)
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

    def __init__(self, eps: float = 1e-8) -> None:
        self.eps = eps

    def get_params(self) -> dict[str, Any]:
        return {"eps": self.eps}

    @property
    def method(self) -> str:
        return "sn"

    def fit(self, X: np.ndarray) -> StandardNormalization:
        X = _check_array(X, min_rows=2)
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

    ``n_components=None`` uses the paper's rule of thumb ``D = max(1, d // 100)``. Not invertible.
    """

    invertible: ClassVar[bool] = False

    def __init__(self, n_components: int | None = None) -> None:
        self.n_components = n_components

    def get_params(self) -> dict[str, Any]:
        return {"n_components": self.n_components}

    @property
    def method(self) -> str:
        return "abtt" if self.n_components is None else f"abtt:{self.n_components}"

    def _k(self, d: int) -> int:
        if self.n_components is None:
            return max(1, d // 100)
        k = int(self.n_components)
        if not 0 <= k < d:
            raise ValueError(f"AllButTheTop n_components must be between 0 and {d - 1}; got {k}")
        return k

    def fit(self, X: np.ndarray) -> AllButTheTop:
        X = _check_array(X, min_rows=2)
        k = self._k(X.shape[1])
        mu, _, vecs = _covariance_eigh(X)
        self.mean_ = mu  # (d,)
        self.components_ = vecs[:, :k]  # (d, D) orthonormal columns
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        X = self._check_input(X) - self.mean_  # (n, d)
        return (X - (X @ self.components_) @ self.components_.T).astype(np.float32)

    def _tensors(self) -> dict[str, np.ndarray]:
        return {"mean": self.mean_, "components": self.components_}

    def _expected_shapes(self, state: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        d = int(state["n_features_in_"])
        return {"mean": (d,), "components": (d, self._k(d))}

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        self.mean_, self.components_ = tensors["mean"], tensors["components"]


class Chain(Calibrator):
    """Calibrators applied one after another (each fitted on the output of the previous one)."""

    def __init__(self, steps: Sequence[Calibrator]) -> None:
        self.steps = list(steps)

    def get_params(self) -> dict[str, Any]:
        return {"steps": [s.method for s in self.steps]}

    @property
    def invertible(self) -> bool:  # type: ignore[override]
        return all(s.invertible for s in self.steps)

    @property
    def method(self) -> str:
        return "+".join(s.method for s in self.steps)

    def fit(self, X: np.ndarray) -> Chain:
        if not self.steps:
            raise ValueError("Chain needs at least one calibrator")
        X = _check_array(X, min_rows=2)
        d = X.shape[1]
        for step in self.steps:
            X = step.fit(X).transform(X)
        self.n_features_in_ = d
        return self

    @property
    def n_features_out_(self) -> int:
        return self.steps[-1].n_features_out_

    def transform(self, X: np.ndarray) -> np.ndarray:
        out = self._check_input(X)
        for step in self.steps:
            out = step.transform(out)
        return np.asarray(out, np.float32)

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        out = self._check_input(Z, "Z", n_features=self.n_features_out_)
        for step in reversed(self.steps):
            if not step.invertible:
                raise NotImplementedError(f"Chain step {type(step).__name__} is not invertible")
        for step in reversed(self.steps):
            out = step.inverse_transform(out)
        return np.asarray(out, np.float32)

    def _record(self, prefix: str, tensors: dict[str, np.ndarray]) -> dict[str, Any]:
        record = super()._record(prefix, tensors)
        record["params"] = {"steps": [s._record(f"{prefix}{i}/", tensors) for i, s in enumerate(self.steps)]}
        return record

    @classmethod
    def _from_params(cls, params: dict[str, Any], tensors: dict[str, np.ndarray], prefix: str, where: str):
        steps = params.get("steps")
        if set(params) != {"steps"} or not isinstance(steps, list) or not steps:
            raise InputError(f"{where}: a Chain needs a non-empty list of steps")
        return cls([Calibrator._from_record(rec, tensors, f"{prefix}{i}/", where) for i, rec in enumerate(steps)])

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        if self.steps[0].n_features_in_ != self.n_features_in_ or any(
            a.n_features_out_ != b.n_features_in_ for a, b in zip(self.steps, self.steps[1:], strict=False)
        ):
            raise ValueError("the steps' dimensions do not connect")


# ---------------------------------------------------------------- flow modules (torch)


class _ActNorm(nn.Module):
    """y = (x + bias) * exp(log_scale), initialised from data so the output has zero mean, unit variance."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(d))
        self.log_scale = nn.Parameter(torch.zeros(d))

    @torch.no_grad()
    def data_init(self, x: torch.Tensor) -> None:
        self.bias.copy_(-x.mean(0))
        self.log_scale.copy_(-torch.log(x.std(0).clamp_min(1e-6)))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (x + self.bias) * torch.exp(self.log_scale), self.log_scale.sum().expand(x.shape[0])

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        return y * torch.exp(-self.log_scale) - self.bias


class _LULinear(nn.Module):
    """Invertible y = x W^T with W = L U Q: a fixed random rotation Q then a learned LU-parameterised map.

    As in Glow, W is factored as (fixed) x (unit lower triangular) x (upper triangular with diagonal
    ``sign * exp(log_s)``), so log|det W| = sum(log_s). Glow's fixed factor is the permutation P of the LU
    decomposition of a random rotation; at d = 384 those factors are badly conditioned (a small step on L
    moves W a lot), so here the fixed factor is the rotation itself and L = U = I at the start.
    """

    def __init__(self, d: int, generator: torch.Generator | None = None) -> None:
        super().__init__()
        q, r = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=torch.float64))
        q = q * torch.sign(torch.diagonal(r))  # (d, d) Haar-distributed rotation
        self.register_buffer("rotation", q.float())
        self.register_buffer("lower_mask", torch.tril(torch.ones(d, d), -1))
        self.register_buffer("sign_s", torch.ones(d))
        self.lower = nn.Parameter(torch.zeros(d, d))
        self.upper = nn.Parameter(torch.zeros(d, d))
        self.log_s = nn.Parameter(torch.zeros(d))

    def _factors(self) -> tuple[torch.Tensor, torch.Tensor]:
        eye = torch.eye(self.lower.shape[0], dtype=self.lower.dtype)
        lower = self.lower * self.lower_mask + eye  # (d, d) unit lower triangular
        upper = self.upper * self.lower_mask.T + torch.diag(self.sign_s * torch.exp(self.log_s))  # (d, d)
        return lower, upper

    def weight(self) -> torch.Tensor:
        lower, upper = self._factors()
        return lower @ upper @ self.rotation  # (d, d)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lower, upper = self._factors()
        y = ((x @ self.rotation.T) @ upper.T) @ lower.T  # (b, d), cheaper than forming W for b < 2d
        return y, self.log_s.sum().expand(x.shape[0])

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        lower, upper = (f.double() for f in self._factors())
        v = torch.linalg.solve_triangular(lower, y.double().T, upper=False, unitriangular=True)  # (d, b)
        v = torch.linalg.solve_triangular(upper, v, upper=True)
        return (self.rotation.double().T @ v).T.to(y.dtype)


class _Permutation(nn.Module):
    """A fixed random permutation of the dimensions (log-det 0)."""

    def __init__(self, d: int, generator: torch.Generator | None = None) -> None:
        super().__init__()
        perm = torch.randperm(d, generator=generator)
        self.register_buffer("perm", perm)
        self.register_buffer("inv_perm", torch.argsort(perm))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x[:, self.perm], x.new_zeros(x.shape[0])

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        return y[:, self.inv_perm]


class _Coupling(nn.Module):
    """x = [a, b]: b' = b + t(a) (additive) or b * s(a) + t(a) with log s bounded by tanh (affine).

    The last layer of the net is zero-initialised, so the untrained coupling is the identity.
    """

    def __init__(self, d: int, hidden: int, affine: bool, scale_bound: float) -> None:
        super().__init__()
        self.d_a = d // 2
        self.d_b = d - self.d_a
        self.affine = affine
        self.scale_bound = scale_bound
        out = 2 * self.d_b if affine else self.d_b
        self.net = nn.Sequential(
            nn.Linear(self.d_a, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, out)
        )
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)

    def _shift_logscale(self, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        h = self.net(a)
        if not self.affine:
            return h, None
        shift, raw = h[:, : self.d_b], h[:, self.d_b :]
        return shift, self.scale_bound * torch.tanh(raw / self.scale_bound)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = x[:, : self.d_a], x[:, self.d_a :]
        shift, log_s = self._shift_logscale(a)
        if log_s is None:
            return torch.cat([a, b + shift], 1), x.new_zeros(x.shape[0])
        return torch.cat([a, b * torch.exp(log_s) + shift], 1), log_s.sum(1)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        a, b = y[:, : self.d_a], y[:, self.d_a :]
        shift, log_s = self._shift_logscale(a)
        if log_s is None:
            return torch.cat([a, b - shift], 1)
        return torch.cat([a, (b - shift) * torch.exp(-log_s)], 1)


@dataclass
class FlowConfig:
    """Architecture and training schedule of a ``Flow``.

    Each of ``n_levels`` levels has ``n_steps`` steps of actnorm -> invertible linear map (``lu``) or fixed
    permutation -> coupling; after each level but the last, half of the remaining dimensions are factored
    out to the prior (multi-scale, as in Glow). Adam with gradient-norm clipping.

    The defaults are tuned on STS-B (all-MiniLM-L6-v2, 17k x 384 vectors, fit on train+dev+test):

    - ``linear="permutation"``: after the fixed whitening the best linear map is already found, so learned
      LU maps only random-walk (same STS, 2-3x the time per epoch); ``"lu"`` is available.
    - a short schedule (3 epochs at lr 3e-4, about 25 s on one busy core): longer or faster training keeps
      lowering the NLL (held-out too) but also lowers STS Spearman - e.g. 1e-3 for 4 epochs cost about
      2 points on cls - because the non-Gaussian structure it removes (topic clusters) carries meaning.
    - ``noise_std=0.05``: needed for rank-deficient inputs (LayerNorm outputs), see ``Flow``.
    """

    n_steps: int = 4
    n_levels: int = 1
    hidden: int = 256
    coupling: str = "additive"  # FlowCoupling
    linear: str = "permutation"  # FlowLinear
    scale_bound: float = 2.0  # affine coupling: |log scale| < scale_bound
    whiten: bool = True  # fixed whitening pre-transform (the flow starts where whitening ends)
    whiten_eps: float = 1e-6
    noise_std: float = 0.05  # Gaussian noise added to the whitened training vectors (see Flow)
    lr: float = 3e-4
    weight_decay: float = 0.0
    clip_grad_norm: float = 1.0
    epochs: int = 3
    batch_size: int = 256
    seed: int = 0
    divergence_bits: float = 2.0  # an epoch this many bits/dim worse than the start counts as diverged

    def validate(self) -> None:
        if self.coupling not in FLOW_COUPLINGS:
            raise ValueError(f"unknown coupling '{self.coupling}'; valid choices: {', '.join(FLOW_COUPLINGS)}")
        if self.linear not in FLOW_LINEARS:
            raise ValueError(f"unknown linear '{self.linear}'; valid choices: {', '.join(FLOW_LINEARS)}")
        for name in ("n_steps", "n_levels", "hidden", "batch_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"FlowConfig.{name} must be >= 1; got {getattr(self, name)}")
        if self.epochs < 0:
            raise ValueError(f"FlowConfig.epochs must be >= 0; got {self.epochs}")
        if not float(self.noise_std) >= 0:
            raise ValueError(f"FlowConfig.noise_std must be >= 0; got {self.noise_std}")
        for name in ("lr", "scale_bound", "whiten_eps", "clip_grad_norm", "divergence_bits"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"FlowConfig.{name} must be > 0; got {getattr(self, name)}")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> FlowConfig:
        names = {f.name for f in fields(cls)}
        unknown = set(values) - names
        if unknown:
            raise ValueError(f"unknown FlowConfig fields {sorted(unknown)}")
        return cls(**values)


class _FlowNet(nn.Module):
    """The trainable part of the flow: levels of steps with dimensions factored out between levels."""

    def __init__(self, d: int, config: FlowConfig) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(config.seed)
        self.d = d
        self.level_dims: list[int] = []
        self.levels = nn.ModuleList()
        width = d
        for level in range(config.n_levels):
            if level > 0:
                width = width - width // 2  # the first half continues, the rest went to the prior
            self.level_dims.append(width)
            steps = nn.ModuleList()
            for _ in range(config.n_steps):
                linear = _LULinear(width, gen) if config.linear == "lu" else _Permutation(width, gen)
                steps.append(
                    nn.ModuleList(
                        [
                            _ActNorm(width),
                            linear,
                            _Coupling(width, config.hidden, config.coupling == "affine", config.scale_bound),
                        ]
                    )
                )
            self.levels.append(steps)

    @torch.no_grad()
    def data_init(self, x: torch.Tensor) -> None:
        """Initialise every actnorm from the activations it sees on ``x``."""
        for i, steps in enumerate(self.levels):
            if i > 0:
                x = x[:, : self.level_dims[i]]
            for step in steps:
                step[0].data_init(x)
                for layer in step:
                    x = layer(x)[0]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(b, d) -> latent (b, d), log|det J| (b,)."""
        log_det = x.new_zeros(x.shape[0])
        factored: list[torch.Tensor] = []
        for i, steps in enumerate(self.levels):
            if i > 0:
                keep = self.level_dims[i]
                factored.append(x[:, keep:])
                x = x[:, :keep]
            for step in steps:
                for layer in step:
                    x, ld = layer(x)
                    log_det = log_det + ld
        return torch.cat([x, *reversed(factored)], 1), log_det

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        widths = self.level_dims
        x = z[:, : widths[-1]]
        offset = widths[-1]
        for i in range(len(self.levels) - 1, -1, -1):
            for step in reversed(self.levels[i]):
                for layer in reversed(step):
                    x = layer.inverse(x)
            if i > 0:
                n_out = widths[i - 1] - widths[i]
                x = torch.cat([x, z[:, offset : offset + n_out]], 1)
                offset += n_out
        return x


class _Adam:
    """Adam (Kingma & Ba 2015) with L2 weight decay and gradient-norm clipping.

    Same update as ``torch.optim.Adam``; written out because constructing ``torch.optim.Adam`` imports
    ``torch._dynamo`` (3-7 s on a busy 2-core machine), a large share of a short flow fit.
    """

    def __init__(self, params: Sequence[nn.Parameter], lr: float, weight_decay: float = 0.0, clip: float = 1.0):
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.weight_decay, self.clip = lr, weight_decay, clip
        self.beta1, self.beta2, self.eps = 0.9, 0.999, 1e-8
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    @torch.no_grad()
    def step(self) -> None:
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        norm = torch.sqrt(sum((g * g).sum() for g in grads))
        scale = min(1.0, self.clip / (float(norm) + 1e-6))
        self.t += 1
        c1, c2 = 1 - self.beta1**self.t, 1 - self.beta2**self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v, strict=True):
            g = g * scale
            if self.weight_decay:
                g = g + self.weight_decay * p
            m.mul_(self.beta1).add_(g, alpha=1 - self.beta1)
            v.mul_(self.beta2).addcmul_(g, g, value=1 - self.beta2)
            p.addcdiv_(m, (v / c2).sqrt_().add_(self.eps), value=-self.lr / c1)
            p.grad = None


def _nll(z: torch.Tensor, log_det: torch.Tensor) -> torch.Tensor:
    """Per-sample negative log-likelihood (nats) under a standard normal prior. (b,)"""
    d = z.shape[1]
    return 0.5 * (z * z).sum(1) + 0.5 * d * math.log(2 * math.pi) - log_det


class Flow(Calibrator):
    """BERT-flow (Li et al. 2020): a Glow-style normalizing flow to a standard normal, trained on embeddings.

    Conditioning (a plain Glow on raw sentence vectors diverged in a trial, NLL ~1e12):

    - the input is first whitened by a fixed ``Whitening`` (part of the flow, its log-det counted);
    - the mixing maps are fixed permutations, or (``linear="lu"``) LU-parameterised maps that start as a
      random rotation; actnorm is initialised from the data; the last layer of every coupling net is zero,
      so the untrained flow is whitening followed by a rotation/permutation and a near-identity actnorm:
      it gives the same cosines as whitening;
    - Gaussian noise (``noise_std``, in whitened units) is added to the training vectors: sentence vectors
      lie in a lower-dimensional subspace (e.g. LayerNorm outputs lose a direction), where the likelihood
      is unbounded and training diverges; the noise makes the density proper;
    - small learning rate, gradient-norm clipping, and a divergence guard.

    ``history_`` holds ``{"epoch", "bits_per_dim", "seconds"}`` per epoch (training loss on the noised
    vectors). ``gaussian_bits_per_dim_`` (untrained flow = a Gaussian fit, i.e. whitening) and
    ``bits_per_dim_`` (trained) are computed on the clean fit vectors (a fixed sample of at most
    ``EVAL_ROWS``, also used for the data-dependent actnorm init). Bits/dim is the negative
    log-likelihood of the input vectors, the whitening log-det included, divided by ``d ln 2``; embeddings
    are continuous and small, so it is often negative. A run whose loss becomes NaN/inf (or more than
    ``divergence_bits`` worse than at the start) stops with a warning, keeps the parameters of the last good
    epoch and sets ``diverged_ = True``; it never returns NaN vectors.
    """

    def __init__(self, config: FlowConfig | None = None) -> None:
        self.config = config

    @property
    def config_(self) -> FlowConfig:
        return self.config if self.config is not None else FlowConfig()

    def get_params(self) -> dict[str, Any]:
        return {"config": asdict(self.config_)}

    @classmethod
    def _from_params(cls, params: dict[str, Any], tensors: dict[str, np.ndarray], prefix: str, where: str):
        if set(params) != {"config"} or not isinstance(params["config"], dict):
            raise InputError(f"{where}: a Flow needs params {{'config': {{...}}}}")
        config = FlowConfig.from_dict(params["config"])
        config.validate()
        return cls(config)

    @property
    def method(self) -> str:
        return "flow"

    # -- numpy <-> torch

    def _pre(self, X: np.ndarray) -> tuple[np.ndarray, float]:
        """Fixed pre-transform (whitening or identity) and its log|det|."""
        if self.whitening_ is None:
            return X.astype(np.float32), 0.0
        return self.whitening_.transform(X), self.whitening_.log_abs_det()

    def _latent(self, Xw: np.ndarray, batch: int = 8192) -> tuple[np.ndarray, np.ndarray]:
        out, lds = [], []
        with torch.no_grad():
            for start in range(0, len(Xw), batch):
                z, ld = self.net_(torch.from_numpy(np.ascontiguousarray(Xw[start : start + batch])))
                out.append(z.numpy())
                lds.append(ld.numpy())
        if not out:
            return np.zeros((0, self.n_features_in_), np.float32), np.zeros(0, np.float32)
        return np.concatenate(out), np.concatenate(lds)

    def _bits_per_dim(self, Xw: np.ndarray, pre_log_det: float) -> float:
        z, ld = self._latent(Xw)
        nll = _nll(torch.from_numpy(z).double(), torch.from_numpy(ld).double() + pre_log_det)
        return float(nll.mean()) / (z.shape[1] * math.log(2))

    # -- fit

    def fit(self, X: np.ndarray, progress: EpochProgressFn | None = None) -> Flow:
        """Whiten, initialise, then train by maximum likelihood; ``progress(epoch, n_epochs, bits_per_dim)``."""
        with fit_threads():
            return self._fit(X, progress)

    def _fit(self, X: np.ndarray, progress: EpochProgressFn | None) -> Flow:
        cfg = copy.deepcopy(self.config_)
        cfg.validate()
        X = _check_array(X, min_rows=2)
        d = X.shape[1]
        self.whitening_ = Whitening(eps=cfg.whiten_eps).fit(X) if cfg.whiten else None
        Xw, pre_ld = self._pre(X)
        self.n_features_in_ = d
        self.history_: list[dict[str, float]] = []
        self.diverged_ = False
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            self.net_ = _FlowNet(d, cfg)
            gen = torch.Generator().manual_seed(cfg.seed)
            xt = torch.from_numpy(Xw)  # (n, d) float32
            # actnorm init and the bits/dim summaries use a fixed sample of at most EVAL_ROWS rows
            sample = torch.randperm(len(xt), generator=gen)[:EVAL_ROWS].sort().values
            clean = Xw[sample.numpy()]  # (m, d)
            noisy = xt[sample] + cfg.noise_std * torch.randn(len(sample), d, generator=gen)  # (m, d)
            self.net_.data_init(noisy)
            self.gaussian_bits_per_dim_ = self._bits_per_dim(clean, pre_ld)
            start_bits = self._bits_per_dim(noisy.numpy(), pre_ld)
            self._train(xt, pre_ld, cfg, gen, start_bits + cfg.divergence_bits, progress)
        self.net_.eval()
        for p in self.net_.parameters():
            p.requires_grad_(False)
        self.bits_per_dim_ = self._bits_per_dim(clean, pre_ld)
        return self

    def _train(
        self,
        xt: torch.Tensor,
        pre_ld: float,
        cfg: FlowConfig,
        gen: torch.Generator,
        limit: float,
        progress: EpochProgressFn | None,
    ) -> None:
        """Adam on the mean NLL of noised mini-batches; stop at the first diverging epoch."""
        n, d = xt.shape
        opt = _Adam(list(self.net_.parameters()), cfg.lr, cfg.weight_decay, cfg.clip_grad_norm)
        good = copy.deepcopy(self.net_.state_dict())
        to_bits = 1.0 / (d * math.log(2))
        for epoch in range(1, cfg.epochs + 1):
            start = time.perf_counter()
            total, bad = 0.0, False
            for idx in torch.randperm(n, generator=gen).split(cfg.batch_size):
                xb = xt[idx] + cfg.noise_std * torch.randn(len(idx), d, generator=gen)  # (b, d)
                z, ld = self.net_(xb)
                loss = _nll(z, ld + pre_ld).mean()
                if not torch.isfinite(loss):
                    bad = True
                    break
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
            bits = total / n * to_bits
            if bad or not math.isfinite(bits) or bits > limit or not self._params_finite():
                log.warning(
                    "flow training diverged at epoch %d/%d (loss %s); keeping the parameters of epoch %d. "
                    "Lower the learning rate (now %g).",
                    epoch,
                    cfg.epochs,
                    "NaN/inf" if bad or not math.isfinite(bits) else f"{bits:.3g} bits/dim",
                    epoch - 1,
                    cfg.lr,
                )
                self.net_.load_state_dict(good)
                self.diverged_ = True
                break
            good = copy.deepcopy(self.net_.state_dict())
            self.history_.append({"epoch": epoch, "bits_per_dim": bits, "seconds": time.perf_counter() - start})
            log.info("flow epoch %d/%d: %.4f bits/dim", epoch, cfg.epochs, bits)
            if progress is not None:
                progress(epoch, cfg.epochs, bits)

    def _params_finite(self) -> bool:
        return all(bool(torch.isfinite(p).all()) for p in self.net_.parameters())

    # -- transform

    def transform(self, X: np.ndarray) -> np.ndarray:
        X = self._check_input(X)
        z, _ = self._latent(self._pre(X)[0])
        if not np.isfinite(z).all():  # only reachable for inputs far outside the fitted data
            raise ValueError("the flow produced NaN/inf for some inputs; they are far outside the fitted data")
        return z.astype(np.float32)

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        Z = self._check_input(Z, "Z")
        with torch.no_grad():
            xw = self.net_.inverse(torch.from_numpy(Z.astype(np.float32))).numpy()
        if self.whitening_ is None:
            return xw.astype(np.float32)
        return self.whitening_.inverse_transform(xw)

    def score_samples(self, X: np.ndarray) -> np.ndarray:
        """Log-likelihood (nats) of each row under the fitted flow. (n,)"""
        X = self._check_input(X)
        Xw, pre_ld = self._pre(X)
        z, ld = self._latent(Xw)
        return -_nll(torch.from_numpy(z).double(), torch.from_numpy(ld).double() + pre_ld).numpy()

    # -- serialisation

    def _state(self) -> dict[str, Any]:
        return {
            **super()._state(),
            "history_": self.history_,
            "diverged_": bool(self.diverged_),
            "bits_per_dim_": self.bits_per_dim_,
            "gaussian_bits_per_dim_": self.gaussian_bits_per_dim_,
        }

    def _tensors(self) -> dict[str, np.ndarray]:
        out = {f"net.{k}": v.numpy() for k, v in self.net_.state_dict().items()}
        if self.whitening_ is not None:
            out.update({f"whiten.{k}": v for k, v in self.whitening_._tensors().items()})
        return out

    def _expected_shapes(self, state: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        d = int(state["n_features_in_"])
        if not 1 <= d <= 1_000_000:
            raise ValueError(f"implausible dimension {d}")
        cfg = self.config_
        with torch.random.fork_rng(devices=[]):
            net = _FlowNet(d, cfg)
        shapes = {f"net.{k}": tuple(v.shape) for k, v in net.state_dict().items()}
        if cfg.whiten:
            w = Whitening(eps=cfg.whiten_eps)
            shapes.update({f"whiten.{k}": s for k, s in w._expected_shapes({"n_features_in_": d}).items()})
        return shapes

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        d, cfg = self.n_features_in_, self.config_
        with torch.random.fork_rng(devices=[]):
            self.net_ = _FlowNet(d, cfg)
        sd = self.net_.state_dict()
        for k, v in sd.items():
            arr = tensors[f"net.{k}"]
            if np.dtype(arr.dtype) != np.dtype(str(v.dtype).replace("torch.", "")):
                raise ValueError(f"array net.{k} has dtype {arr.dtype}, expected {v.dtype}")
        self.net_.load_state_dict({k: torch.from_numpy(np.array(tensors[f"net.{k}"])) for k in sd})
        self.net_.eval()
        for p in self.net_.parameters():
            p.requires_grad_(False)
        self.whitening_ = None
        if cfg.whiten:
            w = Whitening(eps=cfg.whiten_eps)
            w._restore({"n_features_in_": d}, {k[7:]: v for k, v in tensors.items() if k.startswith("whiten.")})
            self.whitening_ = w
        self.history_ = [dict(h) for h in state["history_"]]
        self.diverged_ = bool(state["diverged_"])
        self.bits_per_dim_ = float(state["bits_per_dim_"])
        self.gaussian_bits_per_dim_ = float(state["gaussian_bits_per_dim_"])


CALIBRATORS: dict[str, type[Calibrator]] = {
    c.__name__: c for c in (Identity, Whitening, StandardNormalization, AllButTheTop, Chain, Flow)
}


# ---------------------------------------------------------------- method strings


def _parse_int(method: str, text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"'{method}': {what} must be a whole number, like whitening:256 or abtt:3") from None
    if value < 1:
        raise ValueError(f"'{method}': {what} must be >= 1")
    return value


def _one(method: str, part: str, flow_config: FlowConfig | None) -> Calibrator:
    name, _, arg = part.partition(":")
    if name == "none" and not arg:
        return Identity()
    if name == "flow" and not arg:
        return Flow(flow_config)
    if name == "whitening":
        return Whitening(_parse_int(method, arg, "K (dimensions kept)") if arg else None)
    if name == "sn" and not arg:
        return StandardNormalization()
    if name == "abtt":
        return AllButTheTop(_parse_int(method, arg, "D (directions removed)") if arg else None)
    raise ValueError(f"unknown calibration method '{method}'; valid choices: {', '.join(CALIBRATION_METHODS)}")


def make_calibrator(method: str, flow_config: FlowConfig | None = None) -> Calibrator:
    """Parse ``none, flow, whitening, whitening:K, sn, abtt:D, sn+abtt:D`` into an unfitted calibrator.

    ``+`` chains calibrators left to right. ValueError listing the valid choices for anything else.
    """
    method = str(method).strip().lower()
    parts = [p.strip() for p in method.split("+")]
    if not method or any(not p for p in parts):
        raise ValueError(f"unknown calibration method '{method}'; valid choices: {', '.join(CALIBRATION_METHODS)}")
    steps = [_one(method, p, flow_config) for p in parts]
    return steps[0] if len(steps) == 1 else Chain(steps)


# ---------------------------------------------------------------- STS with calibration


def avg_cosine_or_nan(X: np.ndarray, n_pairs: int = 10_000, seed: int = 0) -> float:
    """Mean cosine of random pairs (core.metrics.avg_cosine); NaN when undefined (e.g. an all-zero row)."""
    from core.metrics import avg_cosine

    try:
        return avg_cosine(X, n_pairs=n_pairs, seed=seed)
    except InputError:
        return float("nan")


def _whitened_dims(calibrator: Calibrator, d: int) -> int:
    """How many dimensions a calibrator whitens (0 when it does not whiten)."""
    if isinstance(calibrator, Chain):
        return max((_whitened_dims(s, d) for s in calibrator.steps), default=0)
    if isinstance(calibrator, Whitening):
        return d if calibrator.n_components is None else int(calibrator.n_components)
    if isinstance(calibrator, Flow):
        return d if calibrator.config_.whiten else 0
    return 0


def fit_size_warning(calibrator: Calibrator, n_fit: int, d: int) -> str | None:
    """A warning when there are too few fit vectors for the dimensions a calibrator whitens (n < 2k)."""
    k = _whitened_dims(calibrator, d)
    if k and n_fit < 2 * k:
        advice = "fit on a larger corpus"
        if "flow" not in calibrator.method:
            advice += f" or use whitening:K with K well below {n_fit // 2}"
        return (
            f"{calibrator.method} was fitted on {n_fit} vectors for {k} whitened dimensions; it needs many more "
            f"vectors than dimensions (amplified noise directions make cosine unreliable): {advice}"
        )
    return None


def fit_timed(calibrator: Calibrator, X: np.ndarray, progress: EpochProgressFn | None = None) -> float:
    """Fit ``calibrator`` on ``X`` (a flow reports each epoch to ``progress``); returns the fit seconds."""
    start = time.perf_counter()
    if isinstance(calibrator, Flow):
        calibrator.fit(X, progress=progress)
    else:
        calibrator.fit(X)
    return time.perf_counter() - start


def calibrated_sts(
    emb1: np.ndarray,
    emb2: np.ndarray,
    gold: np.ndarray,
    calibrator: Calibrator,
    fit_vectors: np.ndarray | None = None,
    progress: EpochProgressFn | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Fit ``calibrator`` (on ``fit_vectors``, default all sentences of the pairs) and score the pairs.

    Returns ``{"method", "spearman", "pearson", "fit_seconds", "bits_per_dim", "avg_cosine_before",
    "avg_cosine_after", "n_fit", "diverged", "raw_spearman", "raw_pearson", "warnings"}``; correlations x100,
    ``bits_per_dim`` is None except for a flow. Average cosines are over random pairs of the evaluated
    sentences (seeded), before and after calibration.
    """
    emb1, emb2 = _check_array(emb1, "emb1"), _check_array(emb2, "emb2")
    if emb1.shape != emb2.shape:
        raise ValueError(f"emb1 and emb2 must have the same shape; got {emb1.shape} and {emb2.shape}")
    both = np.concatenate([emb1, emb2])  # (2n, d)
    fit_on = both if fit_vectors is None else _check_array(fit_vectors, "fit_vectors", min_rows=2)
    fit_seconds = fit_timed(calibrator, fit_on, progress)
    n = len(emb1)
    out = calibrator.transform(both)  # (2n, k)
    raw = correlations(cosine_pairs(emb1, emb2), gold)
    cal = correlations(cosine_pairs(out[:n], out[n:]), gold)
    return {
        "method": calibrator.method,
        "spearman": cal["spearman"],
        "pearson": cal["pearson"],
        "fit_seconds": fit_seconds,
        "bits_per_dim": getattr(calibrator, "bits_per_dim_", None),
        "avg_cosine_before": avg_cosine_or_nan(both, seed=seed),
        "avg_cosine_after": avg_cosine_or_nan(out, seed=seed),
        "n_fit": len(fit_on),
        "diverged": bool(getattr(calibrator, "diverged_", False)),
        "raw_spearman": raw["spearman"],
        "raw_pearson": raw["pearson"],
        "warnings": [w for w in [fit_size_warning(calibrator, len(fit_on), both.shape[1])] if w],
    }
