"""Where a space's vectors come from: an array-like of any kind, or texts through a model.

- ``as_matrix``: NumPy, torch (any dtype, on any device), a pandas column of lists/arrays, a pyarrow
  ``list<float>`` / ``fixed_size_list<float>`` array, or nested lists -> a checked (n, d) float32 array
  (at least 3 rows and 2 dimensions, every value finite; the rows that are not are named).
- ``load_model``: encoders loaded once per process and precision (a notebook re-running a cell does not
  reload the model), the embedded all-MiniLM-L6-v2 by default.
- ``embed_texts``: texts -> vectors with one pooling, length-sorted batches, cached on disk like the
  command line (``~/.cache/isoscope`` or ``$ISOSCOPE_CACHE``), with a progress bar.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.data.vectors.table import MIN_DIMS as MIN_DIMS  # the one set of limits, re-exported
from isoscope.data.vectors.table import MIN_ROWS as MIN_ROWS
from isoscope.data.vectors.table import check_numbers, checked_matrix
from isoscope.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from isoscope.cache import ArrayCache
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.encoder import Encoder
    from isoscope.encode.pooling import Pooling, PoolingSpec

log = logging.getLogger(__name__)

_ENCODERS: dict[tuple[str, str], Encoder] = {}
_ENCODERS_LOCK = threading.Lock()


# ---------------------------------------------------------------- array-likes


def _from_torch(x: Any) -> np.ndarray:
    """A torch tensor on any device, in any float dtype (bfloat16 has no NumPy twin), as float32."""
    t = x.detach()
    if t.is_complex():
        raise InputError(f"vectors must be real numbers, got a tensor of {t.dtype}")
    return t.to("cpu").float().numpy()


def _from_arrow(x: Any, name: str) -> np.ndarray:
    """A pyarrow (chunked) array of equal-length lists of numbers as (n, d)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = x.combine_chunks() if isinstance(x, pa.ChunkedArray) else x
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type) or pa.types.is_fixed_size_list(arr.type)):
        raise InputError(f"{name}: a column of type {arr.type} is not vectors; give a list<float> column")
    if arr.null_count:
        raise InputError(f"{name}: {arr.null_count} row(s) have no vector (null); drop them first")
    lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)  # (n,)
    if len(lengths) and lengths.min() != lengths.max():
        raise InputError(f"{name}: rows have {lengths.min()} to {lengths.max()} values; every vector needs the same")
    values = arr.flatten()
    if not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)):
        raise InputError(f"{name}: the vectors hold {values.type} values, not numbers")
    if values.null_count:
        raise InputError(f"{name}: {values.null_count} value(s) inside the vectors are null; fix them first")
    d = int(lengths[0]) if len(lengths) else 0
    return values.to_numpy(zero_copy_only=False).reshape(len(arr), d)


def _from_rows(rows: Sequence[Any], name: str) -> np.ndarray:
    """A sequence of rows (lists, arrays), e.g. a pandas column of lists, as (n, d)."""
    lengths = {len(r) if hasattr(r, "__len__") else -1 for r in rows}
    if -1 in lengths:
        raise InputError(f"{name}: every row must be a vector (a list or array of numbers)")
    if len(lengths) > 1:
        raise InputError(f"{name}: rows have {min(lengths)} to {max(lengths)} values; every vector needs the same")
    try:
        return np.asarray([np.asarray(r, dtype=np.float32) for r in rows], dtype=np.float32)
    except (TypeError, ValueError):
        raise InputError(f"{name}: the rows are not numbers") from None


def _raw_array(x: Any, name: str) -> np.ndarray:
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # torch, without importing it
        return _from_torch(x)
    module = type(x).__module__
    if module.startswith("pyarrow"):
        return _from_arrow(x, name)
    if module.startswith("pandas"):
        import pandas as pd

        if isinstance(x, pd.DataFrame):
            return x.to_numpy(dtype=np.float32)  # one column per dimension
        values = x.to_numpy()
        if values.dtype == object:  # a column of lists or arrays
            return _from_rows(values, name)
        return values
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, list | tuple) and x and not np.isscalar(x[0]):
        return _from_rows(x, name)
    return np.asarray(x)


def as_matrix(x: Any, name: str = "vectors") -> np.ndarray:
    """``x`` (see the module docstring) as a C-contiguous (n, d) float32 array, checked as a vectors file is
    (``isoscope.data.vectors.table``: ``check_numbers``, ``checked_matrix``); InputError saying what to fix."""
    arr = _raw_array(x, name)
    check_numbers(arr, name)
    return checked_matrix(arr, name)  # (n, d)


def as_texts(texts: Any, n: int | None, name: str = "texts") -> list[str] | None:
    """Texts as a list of str (``n`` of them when ``n`` is given); None stays None."""
    if texts is None:
        return None
    if isinstance(texts, str):
        raise InputError(f"{name} must be a list of texts, not one string; wrap it in a list")
    items = list(texts.tolist() if hasattr(texts, "tolist") else texts)
    if n is not None and len(items) != n:
        raise InputError(f"{name}: {len(items)} texts for {n} vectors; give one text per row")
    return [_text(t) for t in items]


def _text(value: Any) -> str:
    """A text cell as str; missing values (None, NaN, pandas' NA) as the empty text."""
    if value is None or (isinstance(value, float) and value != value) or type(value).__name__ == "NAType":
        return ""
    return str(value)


def as_metadata(metadata: Any, n: int) -> pd.DataFrame:
    """Per-row metadata (a DataFrame, a dict of columns, or None) as a frame of ``n`` rows, index 0..n-1."""
    import pandas as pd

    if metadata is None:
        return pd.DataFrame(index=pd.RangeIndex(n))
    frame = metadata if isinstance(metadata, pd.DataFrame) else pd.DataFrame(metadata)
    if len(frame) != n:
        raise InputError(f"metadata: {len(frame)} rows for {n} vectors; give one row per vector")
    return frame.reset_index(drop=True)


# ---------------------------------------------------------------- models


def load_model(model: str | Encoder | None = None, precision: str = "fp32") -> Encoder:
    """An ``Encoder``: ``model`` itself when it is one, else the model it names (folder, hub id, empty for the
    embedded all-MiniLM-L6-v2) at ``precision``, loaded once per process."""
    from isoscope.encode.encoder import Encoder
    from isoscope.encode.models import resolve_model_name, with_precision

    if isinstance(model, Encoder):
        return with_precision(model, precision)
    key = (resolve_model_name(model), str(precision))
    with _ENCODERS_LOCK:
        if key not in _ENCODERS:
            from isoscope.encode.models import load_encoder

            _ENCODERS[key] = load_encoder(model, precision=precision)
        return _ENCODERS[key]


@dataclass(frozen=True)
class Embedding:
    """How texts became vectors: what a space needs to embed new texts (a query, pair sentences) the same way."""

    encoder: Encoder
    pooling: PoolingSpec  # checked against the encoder
    max_length: int = 256
    batch_size: int = 64

    @property
    def config(self) -> EmbedConfig:
        from isoscope.encode.embed import EmbedConfig

        return EmbedConfig(batch_size=self.batch_size, max_length=self.max_length)

    def provenance(self) -> dict[str, Any]:
        enc = self.encoder
        return {
            "model": enc.name,
            "fingerprint": enc.fingerprint,
            "pooling": self.pooling.name,
            "precision": enc.precision,
            "max_length": self.max_length,
            "layers": enc.num_layers,
            "dims": enc.hidden_size,
        }


def make_embedding(encoder: Encoder, pooling: Pooling = None, max_length: int = 256, batch_size: int = 64) -> Embedding:
    """The embedding settings, checked: a pooling the model offers (None: the model's default),
    ``max_length >= 2``, ``batch_size >= 1``."""
    from isoscope.encode.pooling import resolve_pooling
    from isoscope.errors import first_line

    if max_length < 2 or batch_size < 1:
        raise InputError(f"max_length must be >= 2 and batch_size >= 1; got {max_length} and {batch_size}")
    try:
        spec = resolve_pooling(pooling, encoder)
    except InputError as exc:
        raise InputError(f"{encoder.name}: {first_line(exc)}") from None
    return Embedding(encoder, spec, max_length, batch_size)


def as_cache(cache: bool | str | ArrayCache | None) -> ArrayCache | None:
    """``True`` -> the embedding cache the command line uses; a folder -> a cache there; False/None -> none."""
    from isoscope.cache import ArrayCache

    if cache is None or cache is False:
        return None
    if cache is True:
        return ArrayCache()
    return cache if isinstance(cache, ArrayCache) else ArrayCache(cache)


def embed_with(
    embedding: Embedding,
    texts: Sequence[str],
    poolings: Sequence[PoolingSpec] | None = None,
    cache: ArrayCache | None = None,
    progress: bool = True,
) -> dict[str, np.ndarray]:
    """``texts`` through the embedding's model, pooled each way of ``poolings`` (default: its own pooling) in one
    forward pass. Returns name -> (n, d) float32; cached entries are read back, not recomputed."""
    from isoscope.encode.embed import encode_many
    from isoscope.space.progress import progress_callback

    names = list(poolings or [embedding.pooling])
    bar = progress_callback(f"embedding with {embedding.encoder.name}", "text", enabled=progress and len(texts) > 0)
    return encode_many(embedding.encoder, list(texts), names, embedding.config, bar, cache, companions=True)
