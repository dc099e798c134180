"""The contract of a fitted map: scikit-learn's estimator API, its name and typed parameters in the method grammar,
its affine form when it has one, and save/load as safetensors + JSON (never pickle).

A ``FittedMap`` is a ``sklearn.base.BaseEstimator`` + ``TransformerMixin``: ``__init__`` only stores its
arguments (so ``get_params``/``set_params``/``sklearn.base.clone`` work), ``fit`` learns state whose names end in
``_`` and returns ``self``, ``transform`` refuses to run before ``fit`` (``NotFittedError``), ``inverse_transform``
exists where the map is invertible. A class that declares a ``name`` is registered under it when it is defined
(``isoscope.calibrate.registry``): the class is the one source of its name and aliases in the grammar, its
parameters (``arguments``: ``Param``, typed), its description, its affine form (``affine_map``, read by export
and the FAISS pre-transform) and its files. ``Calibrator`` is the family fitted on one space without labels
(``fit(X)``); the next family (an adapter fitted on pairs of spaces) subclasses ``FittedMap`` the same way.

On disk, a fitted map is a folder with ``calibrator.safetensors`` (its arrays) and ``calibrator.json`` (class,
parameters, small fitted state, metadata and the SHA-256 of the arrays file).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import NotFittedError

from isoscope.cache import atomic_write_bytes
from isoscope.data.jsonfile import read_json
from isoscope.errors import InputError

if TYPE_CHECKING:
    from isoscope.linalg import AffineMap

FORMAT_VERSION = 1
# a family's files: calibrator.json + calibrator.safetensors, format "isoscope-calibrator" (FittedMap.file_names)
FORMAT = "isoscope-calibrator"
JSON_NAME = "calibrator.json"
TENSORS_NAME = "calibrator.safetensors"

EpochProgressFn = Callable[[int, int, float], None]  # (epoch, n_epochs, bits_per_dim)

__all__ = [
    "Calibrator",
    "EpochProgressFn",
    "FittedMap",
    "NotFittedError",
    "Param",
    "check_array",
    "load_calibrator",
    "register",
]

ParamType = type[int] | type[float] | type[str] | type[bool]


@dataclass(frozen=True)
class Param:
    """One parameter a method string may set: ``whitening:64`` sets ``Whitening``'s ``n_components`` (symbol K).

    ``name`` is the ``__init__`` parameter; ``type`` what its text becomes (int, float, str, bool); ``symbol``
    stands for it in generic choices and help (``whitening:K``); ``what`` says what it counts. ``low``/``high``:
    inclusive bounds; ``dims``: a bound set by the vectors' dimension d (``"d"``: at most d, ``"d-1"``: below d),
    checked by ``fit``; ``choices``: the values a text parameter takes; ``suggest``: a starting value for a
    number box (``box_high``: its largest value); ``components``: a count of principal components the fit set must support (its default on a
    page comes from ``isoscope.calibrate.fitting.safe_components``).
    """

    name: str
    type: ParamType = int
    symbol: str = ""
    what: str = ""
    low: float | None = None
    high: float | None = None
    dims: Literal["", "d", "d-1"] = ""
    choices: tuple[str, ...] = ()
    suggest: float | None = None
    components: bool = False
    box_high: float | None = None  # the largest value a page's number box offers (the grammar takes up to high)

    @property
    def label(self) -> str:
        """``K (components kept)``: what a number box or a help text calls it."""
        return f"{self.symbol or self.name} ({self.what})" if self.what else self.symbol or self.name

    def parse(self, text: str, method: str) -> Any:
        """``text`` as this parameter's value: a one-line InputError naming ``method`` and the parameter."""
        what = self.label
        if self.type is bool:
            low = text.strip().lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise InputError(f"'{method}': {what} must be true or false; got '{text[:40]}'")
            return low in ("true", "1", "yes")
        if self.type is str:
            if self.choices and text not in self.choices:
                raise InputError(f"'{method}': {what} must be one of {', '.join(self.choices)}; got '{text[:40]}'")
            return text
        try:
            value = int(text) if self.type is int else float(text)
        except ValueError:
            kind = "a whole number" if self.type is int else "a number"
            raise InputError(
                f"'{method}': {what} must be {kind}, like {method.split(':')[0]}:{self.example()}"
            ) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"'{method}': {what} must be a finite number")
        if self.low is not None and value < self.low:
            raise InputError(f"'{method}': {what} must be >= {self.low:g}")
        if self.high is not None and value > self.high:
            raise InputError(f"'{method}': {what} must be <= {self.high:g}")
        return value

    def example(self) -> str:
        return "3" if self.type is int else "0.5"


def register(cls: type[FittedMap]) -> type[FittedMap]:
    """Make ``cls`` loadable and parseable by name. A class that declares ``name`` is registered when it is defined;
    this decorator is for a class that inherits its name, or is defined again (a notebook cell run twice)."""
    from isoscope.calibrate.registry import add

    add(cls)
    return cls


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


class FittedMap(TransformerMixin, BaseEstimator):
    """Base class: its place in the grammar, input checks, the fitted-state check, save/load as safetensors + JSON.

    A subclass declares, as class attributes: ``name`` (its name in method strings; a class without one is a base
    or a combinator, like ``Chain``), ``aliases``, ``arguments`` (the ``Param``s a method string may set, in the
    order positional values fill them), ``summary`` (what it does, in words: the glossary of every selector),
    ``choices`` (what it adds to the selectors, default its name; ``whitening:K`` leaves K to a number box) and
    ``order`` (where). It implements ``fit``, ``transform`` (and ``inverse_transform`` when ``invertible``),
    ``affine_map`` when ``affine``, and describes its fitted arrays (``_tensors``, ``_expected_shapes``,
    ``_restore``) and small JSON state (``_state``). Its ``method`` string is built from ``name`` and the arguments
    that differ from their defaults, and ``isoscope.calibrate.make_calibrator`` parses it back.
    """

    family: ClassVar[str] = "calibrator"  # which grammar and which files: calibrators, adapters, ...
    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    arguments: ClassVar[tuple[Param, ...]] = ()
    summary: ClassVar[str] = ""
    choices: ClassVar[tuple[str, ...]] = ()
    order: ClassVar[float] = 100.0  # the built-in calibrators come first, in the order a lesson meets them
    invertible: ClassVar[bool] = True
    affine: ClassVar[bool] = False  # affine_map() gives the fitted map exactly as y = x W + b
    trains_for_epochs: ClassVar[bool] = False  # fit runs epochs (a progress bar of epochs; a cost to estimate)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("name"):
            register(cls)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float32"]  # transform returns float32, whatever it is given
        return tags

    @classmethod
    def explain(cls, values: dict[str, Any]) -> str:
        """This map with ``values`` (parameter name -> value, or its symbol in a generic choice) in words; a class
        whose parameters change what it does says so in its own words."""
        given = ", ".join(f"{p.what or p.name} {values[p.name]}" for p in cls.arguments if p.name in values)
        return f"{cls.summary} ({given})" if given else cls.summary

    @property
    def method(self) -> str:
        """The method string that ``isoscope.calibrate.make_calibrator`` parses back into this map: its name and
        the arguments that differ from their defaults (``whitening:64``)."""
        from isoscope.calibrate.methods import format_step

        defaults = self._get_default_params()
        values = {p.name: getattr(self, p.name) for p in self.arguments}
        return format_step(self.name, self.arguments, {k: v for k, v in values.items() if v != defaults.get(k)})

    @classmethod
    def _get_default_params(cls) -> dict[str, Any]:
        import inspect

        init = inspect.signature(cls.__init__).parameters
        return {k: v.default for k, v in init.items() if v.default is not inspect.Parameter.empty}

    def transform(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} is not invertible")

    def affine_map(self) -> AffineMap:
        """The fitted map as ``y = x @ W + b`` (float64), for a class that is ``affine``."""
        raise NotImplementedError(f"{type(self).__name__} is not an affine map")

    def whitened_dims(self, d: int) -> int:
        """How many of ``d`` dimensions this map whitens (0 when it does not whiten): the fit set must support
        them (``isoscope.calibrate.fitting``)."""
        return 0

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
    def _from_record(cls, record: Any, tensors: dict[str, np.ndarray], prefix: str, where: str) -> FittedMap:
        from isoscope.calibrate.registry import class_named, class_names

        if not isinstance(record, dict) or not {"class", "params", "state"} <= set(record):
            raise InputError(f"{where}: not an Isoscope {cls.family} record (class, params, state)")
        klass = class_named(str(record["class"]))
        if klass is None or klass.family != cls.family:
            known = ", ".join(class_names(cls.family))
            raise InputError(
                f"{where}: unknown {cls.family} class '{str(record['class'])[:60]}'; known: {known} (a class of your "
                "own loads once its module is imported, or installed as an isoscope.plugins entry point)"
            )
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

    @classmethod
    def file_names(cls) -> tuple[str, str, str]:
        """(JSON file, arrays file, format) of this family: ``calibrator.json``, ``calibrator.safetensors``,
        ``isoscope-calibrator``."""
        return f"{cls.family}.json", f"{cls.family}.safetensors", f"isoscope-{cls.family}"

    def save(self, directory: str | Path, metadata: dict[str, Any] | None = None) -> Path:
        """Write ``calibrator.safetensors`` (arrays) and ``calibrator.json`` (class, params, state, metadata).

        ``metadata`` (JSON-able: model, pooling, corpus, ...) is stored as is and comes back as
        ``metadata_`` after ``load``. The JSON holds the SHA-256 of the arrays file, so edits are detected.
        """
        from safetensors.numpy import save as st_save

        json_name, tensors_name, fmt = self.file_names()
        directory = Path(directory)
        if directory.exists() and not directory.is_dir():
            raise InputError(f"{directory} is a file; give a folder to save the {self.family} in")
        tensors: dict[str, np.ndarray] = {}
        record = self._record("", tensors)
        meta = {**getattr(self, "metadata_", {}), **(metadata or {})}
        doc = {"format": fmt, "version": FORMAT_VERSION, **record, "method": self.method, "metadata": meta}
        doc["tensors"] = {k: list(v.shape) for k, v in sorted(tensors.items())}
        blob = st_save(tensors, metadata={"format": fmt})
        doc["sha256"] = hashlib.sha256(blob).hexdigest()
        atomic_write_bytes(directory / tensors_name, blob)
        atomic_write_bytes(directory / json_name, (json.dumps(doc, indent=1) + "\n").encode("utf-8"))
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> FittedMap:
        """Read a map of this family saved by ``save``; ``InputError`` for a missing, tampered or foreign file."""
        from safetensors import SafetensorError
        from safetensors.numpy import load as st_load

        family, (json_name, tensors_name, fmt) = cls.family, cls.file_names()
        directory = Path(directory)
        jpath, tpath = directory / json_name, directory / tensors_name
        if not jpath.is_file() or not tpath.is_file():
            raise InputError(f"{directory}: no saved {family} here (need {json_name} and {tensors_name})")
        doc = read_json(jpath, what=str(jpath), fix=f"save the {family} again")  # isoscope.data.jsonfile
        if doc.get("format") != fmt:
            raise InputError(f"{jpath}: not an Isoscope {family} file")
        if doc.get("version") != FORMAT_VERSION:
            raise InputError(f"{jpath}: {family} format version {doc.get('version')!r}, expected {FORMAT_VERSION}")
        blob = tpath.read_bytes()
        if doc.get("sha256") != hashlib.sha256(blob).hexdigest():
            raise InputError(f"{tpath}: checksum does not match {json_name}; the files were changed or mixed up")
        try:
            tensors = st_load(blob)
        except (SafetensorError, ValueError, OSError) as exc:
            raise InputError(f"{tpath}: not a readable safetensors file ({type(exc).__name__})") from None
        listed = doc.get("tensors")
        if not isinstance(listed, dict) or {k: list(v.shape) for k, v in tensors.items()} != listed:
            raise InputError(f"{directory}: the arrays do not match the JSON description; the files were changed")
        obj = cls._family_base()._from_record(doc, tensors, "", str(jpath))
        meta = doc.get("metadata", {})
        if not isinstance(meta, dict):
            raise InputError(f"{jpath}: metadata must be a JSON object")
        obj.metadata_ = meta
        if not isinstance(obj, cls):
            raise InputError(f"{directory}: holds a {type(obj).__name__}, not a {cls.__name__}")
        return obj

    @classmethod
    def _family_base(cls) -> type[FittedMap]:
        """The first class below ``FittedMap`` in this class's ancestry (``Calibrator``): what a record is read as."""
        return next((k for k in reversed(cls.__mro__) if issubclass(k, FittedMap) and k is not FittedMap), cls)


class Calibrator(FittedMap):
    """A map fitted without labels on the vectors of one space: ``fit(X, y=None, progress=None) -> self``."""

    family: ClassVar[str] = "calibrator"

    def fit(self, X: np.ndarray, y: None = None, progress: EpochProgressFn | None = None) -> Calibrator:
        raise NotImplementedError

    def fit_transform(self, X: np.ndarray, y: None = None, progress: EpochProgressFn | None = None) -> np.ndarray:
        return self.fit(X, y, progress=progress).transform(X)


def load_calibrator(directory: str | Path) -> Calibrator:
    """Any calibrator saved with ``save``."""
    return Calibrator.load(directory)
