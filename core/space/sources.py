"""Where a space's vectors come from: an array-like of any kind, or texts through a model.

- ``as_matrix``: NumPy, torch (any dtype, on any device), a pandas column of lists/arrays, a pyarrow
  ``list<float>`` / ``fixed_size_list<float>`` array, or nested lists -> a checked (n, d) float32 array
  (at least 3 rows and 2 dimensions, every value finite; the rows that are not are named), its size checked
  against ``ISOSCOPE_MAX_VECTOR_BYTES`` (as for a vectors file) before anything is copied: a broadcast view,
  a torch ``expand`` or a sparse memory map can name gigabytes it does not hold.
- ``load_model``: encoders loaded once per process and precision (a notebook re-running a cell does not
  reload the model), the embedded all-MiniLM-L6-v2 by default.
- ``embed_texts``: texts -> vectors with one pooling, length-sorted batches, cached on disk like the
  command line (``~/.cache/isoscope`` or ``$ISOSCOPE_CACHE``), with a progress bar.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.data.vectors.table import MIN_DIMS as MIN_DIMS  # the one set of limits, re-exported
from isoscope.data.vectors.table import MIN_ROWS as MIN_ROWS
from isoscope.data.vectors.table import check_numbers, checked_matrix
from isoscope.errors import InputError, first_line

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


def check_size(shape: tuple[int, ...], name: str) -> None:
    """InputError when ``shape`` (n, d) as float32 is over ``ISOSCOPE_MAX_VECTOR_BYTES`` (the limit of a vectors
    file); called before an array is copied or converted."""
    if len(shape) != 2:
        return  # as_matrix says what is wrong with the shape
    from isoscope.data.limits import current_limits

    limit = current_limits().max_vector_bytes
    n, d = (int(v) for v in shape)
    if 4 * n * d > limit:
        raise InputError(
            f"{name}: {n:,} x {d:,} vectors take {4 * n * d / 2**20:,.0f} MiB as float32, over the limit of "
            f"{limit / 2**20:,.0f} MiB (ISOSCOPE_MAX_VECTOR_BYTES); sample the rows first"
        )


def _from_torch(x: Any, name: str) -> np.ndarray:
    """A torch tensor on any device, in any float dtype (bfloat16 has no NumPy twin), as float32."""
    t = x.detach()
    layout = str(getattr(t, "layout", "torch.strided")).removeprefix("torch.")
    if layout != "strided":
        raise InputError(f"{name}: a {layout} tensor; give a dense one (tensor.to_dense(), if it fits in memory)")
    if t.device.type == "meta":
        raise InputError(f"{name}: a tensor on the meta device holds no values; give one with its values")
    if t.is_complex():
        raise InputError(f"vectors must be real numbers, got a tensor of {t.dtype}")
    check_size(tuple(t.shape), name)
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
    check_size((len(arr), d), name)
    return values.to_numpy(zero_copy_only=False).reshape(len(arr), d)


def _from_rows(rows: Sequence[Any], name: str) -> np.ndarray:
    """A sequence of rows (lists, arrays), e.g. a pandas column of lists, as (n, d)."""
    lengths = {len(r) if hasattr(r, "__len__") else -1 for r in rows}
    if -1 in lengths:
        raise InputError(f"{name}: every row must be a vector (a list or array of numbers)")
    if len(lengths) > 1:
        raise InputError(f"{name}: rows have {min(lengths)} to {max(lengths)} values; every vector needs the same")
    check_size((len(rows), next(iter(lengths), 0)), name)
    try:
        return np.asarray([np.asarray(r, dtype=np.float32) for r in rows], dtype=np.float32)
    except (TypeError, ValueError):
        raise InputError(f"{name}: the rows are not numbers") from None


def _raw_array(x: Any, name: str) -> np.ndarray:
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # torch, without importing it
        return _from_torch(x, name)
    module = type(x).__module__
    if module.startswith("pyarrow"):
        return _from_arrow(x, name)
    if module.startswith("pandas"):
        import pandas as pd

        if isinstance(x, pd.DataFrame):  # one column per dimension
            check_size(x.shape, name)
            bad = [str(c) for c, t in x.dtypes.items() if not pd.api.types.is_numeric_dtype(t)]
            if bad:
                shown = ", ".join(repr(c[:40]) for c in bad[:3]) + (", ..." if len(bad) > 3 else "")
                raise InputError(
                    f"{name}: {len(bad)} column(s) of the DataFrame are not numbers ({shown}); give only the vector "
                    "columns, and the texts and labels as texts= and metadata="
                )
            return x.to_numpy(dtype=np.float32)
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
    check_size(arr.shape, name)  # before the copy: a view may name far more than it holds
    return checked_matrix(arr, name)  # (n, d)


def as_texts(texts: Any, n: int | None, *, name: str = "texts", warnings: list[str] | None = None) -> list[str] | None:
    """Texts as a list of str (``n`` of them when ``n`` is given), lone surrogates replaced (``decoded``); None
    stays None."""
    if texts is None:
        return None
    if isinstance(texts, str):
        raise InputError(f"{name} must be a list of texts, not one string; wrap it in a list")
    items = list(texts.tolist() if hasattr(texts, "tolist") else texts)
    if n is not None and len(items) != n:
        raise InputError(f"{name}: {len(items)} texts for {n} vectors; give one text per row")
    return decoded([_text(t) for t in items], name, warnings)


def _text(value: Any) -> str:
    """A text cell as str; missing values (None, NaN, pandas' NA) as the empty text."""
    if value is None or (isinstance(value, float) and value != value) or type(value).__name__ == "NAType":
        return ""
    return str(value)


def decoded(items: list[str], name: str, warnings: list[str] | None = None) -> list[str]:
    """``items`` with lone UTF-16 surrogates (half of an emoji: no tokenizer, report or card can write one)
    replaced by U+FFFD, as file decoding does (``isoscope.data.text.replace_surrogates``). The warning is about
    the input, so it is logged each time the input is read (a cached embedding changes nothing) and appended to
    ``warnings``."""
    from isoscope.data.text import TextStats, replace_surrogates

    stats = TextStats(name)
    items = [replace_surrogates(t, stats) for t in items]
    for warning in stats.warnings():
        log.warning("%s", warning)
        if warnings is not None:
            warnings.append(warning)
    return items


def as_name(name: Any, warnings: list[str] | None = None) -> str:
    """A space's name as str ("vectors" when none), lone surrogates replaced (``decoded``)."""
    return decoded([str(name)], "name", warnings)[0] if name else "vectors"


def _text_cells(column: Any, name: str, warnings: list[str] | None) -> Any:
    """A metadata column with its text cells ``decoded``; the column itself when it holds no text."""
    if isinstance(column, np.ndarray) and column.dtype.kind not in "OUS":
        return column
    dtype = getattr(column, "dtype", None)
    if dtype is not None and not isinstance(column, np.ndarray) and str(dtype) not in ("object", "str", "string"):
        return column  # a pandas column of numbers, dates, categories
    cells = list(column.tolist() if hasattr(column, "tolist") else column)
    texts = [c for c in cells if isinstance(c, str)]
    if not texts:
        return column
    fixed = iter(decoded(texts, name, warnings))
    return [next(fixed) if isinstance(c, str) else c for c in cells]


def as_metadata(metadata: Any, n: int, warnings: list[str] | None = None) -> pd.DataFrame:
    """Per-row metadata (a DataFrame, a dict of columns, or None) as a frame of ``n`` rows, index 0..n-1; text
    cells and column names with lone surrogates replaced (``decoded``)."""
    import pandas as pd

    if metadata is None:
        return pd.DataFrame(index=pd.RangeIndex(n))
    if isinstance(metadata, str | bytes) or np.isscalar(metadata):
        raise InputError(
            f"metadata must be a DataFrame or a dict of columns (one value per row), got {type(metadata).__name__} "
            f"{str(metadata)[:40]!r}"
        )
    if isinstance(metadata, Mapping):
        for key, column in metadata.items():
            if isinstance(column, str | bytes) or not hasattr(column, "__len__"):
                raise InputError(
                    f"metadata: column {str(key)[:40]!r} must hold one value per row ({n}), got {type(column).__name__}"
                )
        # text cells decoded before the frame is built (pandas' string columns cannot hold a lone surrogate)
        metadata = {key: _text_cells(column, f"metadata column {key!s}", warnings) for key, column in metadata.items()}
    try:
        frame = metadata if isinstance(metadata, pd.DataFrame) else pd.DataFrame(metadata)
    except (ValueError, TypeError) as exc:
        raise InputError(f"metadata: not a table of one row per vector ({first_line(exc, 120)})") from None
    if len(frame) != n:
        raise InputError(f"metadata: {len(frame)} rows for {n} vectors; give one row per vector")
    frame = frame.reset_index(drop=True)
    columns = [c if not isinstance(c, str) else decoded([c], "metadata column names", warnings)[0] for c in frame]
    if columns != list(frame.columns):
        frame = frame.set_axis(columns, axis=1)
    for i, c in enumerate(frame.columns):
        col = frame.iloc[:, i]
        if not (col.dtype == object or pd.api.types.is_string_dtype(col.dtype)):
            continue
        cells = col.tolist()
        texts = [t for t in cells if isinstance(t, str)]
        fixed = iter(decoded(texts, f"metadata column {c!s}", warnings))
        cleaned = [next(fixed) if isinstance(t, str) else t for t in cells]
        if cleaned != cells:
            frame = frame.copy() if frame is metadata else frame
            frame.iloc[:, i] = cleaned
    return frame


# ---------------------------------------------------------------- models


def load_model(
    model: str | Encoder | None = None,
    precision: str = "fp32",
    *,
    device: str | None = None,
    dtype: str | None = None,
) -> Encoder:
    """An ``Encoder``: ``model`` itself when it is one (where and in which dtype it was loaded; asking for another
    is an InputError), else the model it names (folder, hub id, empty for the embedded all-MiniLM-L6-v2) at
    ``precision`` on ``device`` (default ``auto``: CUDA, then MPS, then the CPU) in ``dtype`` (default float32),
    loaded once per process."""
    from isoscope.encode.device import parse_device, parse_dtype, resolve_device
    from isoscope.encode.encoder import Encoder
    from isoscope.encode.models import resolve_model_name, with_precision

    if isinstance(model, Encoder):
        moved = device is not None and parse_device(device) != "auto" and str(resolve_device(device)) != model.device
        if moved or (dtype is not None and parse_dtype(dtype) != model.dtype):
            raise InputError(
                f"this Encoder runs on {model.device} in {model.dtype}; load it where you want it: "
                "isoscope.encode.models.load_encoder(name, device=..., dtype=...)"
            )
        return with_precision(model, precision)
    where = "cpu" if str(precision) != "fp32" and parse_device(device) == "auto" else parse_device(device)
    key = (resolve_model_name(model), str(precision), str(resolve_device(where)), parse_dtype(dtype))
    with _ENCODERS_LOCK:
        if key not in _ENCODERS:
            from isoscope.encode.models import load_encoder

            _ENCODERS[key] = load_encoder(model, key[2], precision, dtype=key[3])
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
            "device": enc.device,
            "dtype": enc.dtype,
            "max_length": self.max_length,
            "layers": enc.num_layers,
            "dims": enc.hidden_size,
        }


def make_embedding(
    encoder: Encoder, pooling: Pooling = None, *, max_length: int = 256, batch_size: int = 64
) -> Embedding:
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
    *,
    cache: ArrayCache | None = None,
    progress: bool = True,
) -> dict[str, np.ndarray]:
    """``texts`` through the embedding's model, pooled each way of ``poolings`` (default: its own pooling) in one
    forward pass. Returns name -> (n, d) float32; cached entries are read back, not recomputed."""
    from isoscope.encode.embed import encode_many
    from isoscope.space.progress import progress_callback

    names = list(poolings or [embedding.pooling])
    bar = progress_callback(f"embedding with {embedding.encoder.name}", "text", enabled=progress and len(texts) > 0)
    return encode_many(
        embedding.encoder, list(texts), names, config=embedding.config, progress=bar, cache=cache, companions=True
    )
