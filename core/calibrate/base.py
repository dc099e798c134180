"""The calibrator contract: scikit-learn's estimator API, and save/load as safetensors + JSON (never pickle).

A calibrator is a ``sklearn.base.BaseEstimator`` + ``TransformerMixin``: ``__init__`` only stores its
arguments (so ``get_params``/``set_params``/``sklearn.base.clone`` work), ``fit(X, y=None, progress=None)``
learns state whose names end in ``_`` and returns ``self``, ``transform`` refuses to run before ``fit``
(``NotFittedError``), ``inverse_transform`` exists where the map is invertible.

On disk, a fitted calibrator is a folder with ``calibrator.safetensors`` (its arrays) and
``calibrator.json`` (class, parameters, small fitted state, metadata and the SHA-256 of the arrays file).
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import NotFittedError

from isoscope.cache import atomic_write_bytes
from isoscope.data.jsonfile import read_json
from isoscope.errors import InputError

FORMAT = "isoscope-calibrator"
FORMAT_VERSION = 1
JSON_NAME = "calibrator.json"
TENSORS_NAME = "calibrator.safetensors"

EpochProgressFn = Callable[[int, int, float], None]  # (epoch, n_epochs, bits_per_dim)

__all__ = ["Calibrator", "EpochProgressFn", "NotFittedError", "check_array", "load_calibrator", "register"]

# class name -> class, for load(); filled by ``register`` as the defining modules are imported
CALIBRATORS: dict[str, type[Calibrator]] = {}
# class name -> the module defining it, for the calibrators Isoscope ships: a saved folder loads in a fresh
# process whatever was imported before (the module is imported by name, as the command line imports commands)
BUILTIN_CALIBRATORS: dict[str, str] = {
    **dict.fromkeys(
        ("Identity", "Whitening", "StandardNormalization", "AllButTheTop", "Chain"), "isoscope.calibrate.linear"
    ),
    "Flow": "isoscope.calibrate.flow",
}


def register(cls: type[Calibrator]) -> type[Calibrator]:
    """Class decorator: make ``cls`` loadable by name from a saved ``calibrator.json``."""
    CALIBRATORS[cls.__name__] = cls
    return cls


def calibrator_class(name: str) -> type[Calibrator] | None:
    """The calibrator class saved under ``name`` (its module imported when it is one of Isoscope's), or None."""
    if name not in CALIBRATORS and name in BUILTIN_CALIBRATORS:
        importlib.import_module(BUILTIN_CALIBRATORS[name])
    return CALIBRATORS.get(name)


def check_array(X: object, name: str = "X", min_rows: int = 1) -> np.ndarray:
    """A finite float64 (n, d) array, or a one-line InputError saying what is wrong with it."""
    from scipy.sparse import issparse

    if issparse(X):
        raise InputError(f"{name} is a sparse matrix; calibrators take dense vectors (convert it with .toarray())")
    try:
        arr = np.asarray(X)
        complex_ = arr.dtype.kind == "c"  # a cast to float64 would drop the imaginary parts with only a warning
        arr = arr if complex_ else arr.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a numeric array of shape (n, d)") from None
    if complex_:
        raise InputError(f"Complex data not supported: {name} must hold real numbers")
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise InputError(f"{name} must have shape (n, d); got {arr.shape}")
    if arr.shape[0] < min_rows:
        raise InputError(f"{name} needs at least {min_rows} rows to fit; got {arr.shape[0]}")
    if not np.isfinite(arr).all():
        raise InputError(f"{name} contains NaN or inf; drop or fix those rows")
    return arr


class Calibrator(TransformerMixin, BaseEstimator):
    """Base class: input checks, the fitted-state check, and save/load as safetensors + JSON.

    Subclasses implement ``fit``, ``transform`` (and ``inverse_transform`` when ``invertible``), the
    ``method`` string that ``make_calibrator`` parses back, and describe their fitted arrays (``_tensors``,
    ``_expected_shapes``, ``_restore``) and small JSON state (``_state``).
    """

    invertible: ClassVar[bool] = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float32"]  # transform returns float32, whatever it is given
        return tags

    @property
    def method(self) -> str:
        """The method string that ``isoscope.calibrate.make_calibrator`` parses back into this calibrator."""
        raise NotImplementedError

    def fit(self, X: np.ndarray, y: None = None, progress: EpochProgressFn | None = None) -> Calibrator:
        raise NotImplementedError

    def transform(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def fit_transform(self, X: np.ndarray, y: None = None, progress: EpochProgressFn | None = None) -> np.ndarray:
        return self.fit(X, y, progress=progress).transform(X)

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} is not invertible")

    # -- fitted state

    def _check_fitted(self) -> None:
        if not hasattr(self, "n_features_in_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(X) before transform")

    def _check_input(self, X: object, name: str = "X", n_features: int | None = None) -> np.ndarray:
        self._check_fitted()
        arr = check_array(X, name)
        want = self.n_features_in_ if n_features is None else n_features
        if arr.shape[1] != want:
            raise InputError(f"{name} has {arr.shape[1]} columns; this {type(self).__name__} was fitted on {want}")
        return arr

    @property
    def n_features_out_(self) -> int:
        return self.n_features_in_

    # -- serialisation: subclasses describe their arrays and small state

    def _json_params(self) -> dict[str, Any]:
        """Constructor arguments as JSON values (what ``_from_params`` reads back)."""
        return self.get_params(deep=False)

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
        return {"class": type(self).__name__, "params": self._json_params(), "state": self._state()}

    @classmethod
    def _from_record(cls, record: Any, tensors: dict[str, np.ndarray], prefix: str, where: str) -> Calibrator:
        if not isinstance(record, dict) or not {"class", "params", "state"} <= set(record):
            raise InputError(f"{where}: not an Isoscope calibrator record (class, params, state)")
        klass = calibrator_class(str(record["class"]))
        if klass is None:
            known = ", ".join(sorted({*BUILTIN_CALIBRATORS, *CALIBRATORS}))
            raise InputError(f"{where}: unknown calibrator class '{str(record['class'])[:60]}'; known: {known}")
        params, state = record["params"], record["state"]
        if not isinstance(params, dict) or not isinstance(state, dict):
            raise InputError(f"{where}: params and state must be JSON objects")
        try:
            obj = klass._from_params(params, tensors, prefix, where)
            expected = obj._expected_shapes(state)
        except InputError:
            raise
        except (TypeError, ValueError, KeyError) as exc:  # a foreign or hand-edited file: the user's input
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
        doc = read_json(jpath, what=str(jpath), fix="save the calibrator again")  # isoscope.data.jsonfile
        if doc.get("format") != FORMAT:
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


def load_calibrator(directory: str | Path) -> Calibrator:
    """Any calibrator saved with ``save``."""
    return Calibrator.load(directory)
