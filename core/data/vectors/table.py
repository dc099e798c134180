"""A table of vectors read from a file or given as an array: float32, finite, with its provenance.

Every reader ends in ``finish``: the values converted to float32 once (integer and binary codes said so in a
warning), rows with NaN or infinite values named, and the ``VectorOrigin`` whose ``fingerprint`` every cache
key of the space carries (as a model's fingerprint does for a computed space).

The checks every space's vectors pass, from a file or an array-like (``isoscope.space.sources.as_matrix``), are
here once: ``check_numbers`` (the dtype), ``check_shape`` (at least ``MIN_ROWS`` x ``MIN_DIMS``) and
``checked_matrix`` (2-D, float32, every row finite).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from isoscope.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

MIN_ROWS, MIN_DIMS = 3, 2
SHOWN_ROWS = 5  # bad rows named in a message

# stored dtype -> the warning's reason (float32 and float64 need none)
CODE_NOTES = {
    "float16": "float16 values, analysed as float32 (the precision is the file's)",
    "bfloat16": "bfloat16 values, analysed as float32 (the precision is the file's)",
    "int8": "int8 codes (quantised vectors), analysed as their integer values",
    "uint8": (
        "uint8 codes, analysed as their integer values (packed binary codes, 8 dimensions a byte, "
        "must be unpacked first: numpy.unpackbits)"
    ),
    "bool": "binary codes, each bit analysed as -1 or +1",
}


def _rows(idx: np.ndarray) -> str:
    shown = ", ".join(str(int(i)) for i in idx[:SHOWN_ROWS])
    more = f" and {len(idx) - SHOWN_ROWS} more" if len(idx) > SHOWN_ROWS else ""
    return f"{'rows' if len(idx) > 1 else 'row'} {shown}{more}"


@dataclass(frozen=True)
class VectorOrigin:
    """Where a space's vectors came from: the file, its column, and a digest of what was decoded.

    ``fingerprint`` stands in for a model's fingerprint in every cache key of the space.
    """

    file: str  # the file's name as messages show it (or "array")
    column: str | None = None  # the vector column of a table, the tensor of a .safetensors; None for .npy
    text_column: str | None = None  # where the texts came from (a column, or a texts file's name)
    dtype: str = "float32"  # as stored: float32, float64, float16, bfloat16, int8, uint8, bool, ...
    digest: str = ""  # SHA-256 of the decoded float32 vectors and their shape

    @property
    def fingerprint(self) -> str:
        from isoscope.cache import make_key

        return "vectors-" + make_key("vectors", self.file, self.column or "", self.digest)

    def label(self) -> str:
        """``FILE`` or ``FILE:COLUMN``, as ``--vectors`` and ``vectors=`` take it."""
        return f"{self.file}:{self.column}" if self.column else self.file

    def to_dict(self) -> dict[str, str | None]:
        return {
            "file": self.file,
            "column": self.column,
            "text_column": self.text_column,
            "dtype": self.dtype,
            "digest": self.digest,
        }


def vectors_digest(vectors: np.ndarray) -> str:
    """SHA-256 of an (n, d) float32 C-contiguous array and its shape."""
    h = hashlib.sha256(f"{vectors.shape[0]}x{vectors.shape[1]}:float32:".encode())
    h.update(memoryview(np.ascontiguousarray(vectors, np.float32)).cast("B"))
    return h.hexdigest()


@dataclass
class VectorTable:
    """Vectors (n, d) float32, finite, with the texts they embed (when the file has them) and other columns."""

    vectors: np.ndarray  # (n, d) float32
    origin: VectorOrigin
    texts: list[str] | None = None  # one per row ("" where a row has none), or None
    meta: pd.DataFrame | None = None  # the file's other plain columns, one row per vector
    warnings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def dims(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def name(self) -> str:
        return self.origin.label()

    def with_texts(self, texts: Sequence[str], source: str) -> VectorTable:
        """This table with ``texts`` (one per row, from ``source``: a texts file's name); InputError otherwise."""
        if len(texts) != len(self):
            raise InputError(
                f"{source}: {len(texts):,} texts (empty lines and rows are skipped) for the {len(self):,} rows of "
                f"{self.origin.file}; give one text per vector, in the same order"
            )
        origin = VectorOrigin(self.origin.file, self.origin.column, source, self.origin.dtype, self.origin.digest)
        return VectorTable(self.vectors, origin, list(texts), self.meta, self.warnings)

    def vectors_for(self, texts: Sequence[str], rows: Sequence[int] | None = None, n_input: int | None = None):
        """The vectors of ``texts`` (len(texts), d): looked up by text when the table has texts, else by position.

        By position, ``rows[i]`` is the input row ``texts[i]`` came from (default ``i``) and the table must hold
        one vector per input row (``n_input``, default ``len(texts)``). InputError when a text or row is missing.
        """
        if self.texts is not None:
            index: dict[str, int] = {}
            for i, t in enumerate(self.texts):
                index.setdefault(t, i)
            found = [index.get(t, -1) for t in texts]
            missing = [t for t, i in zip(texts, found, strict=True) if i < 0]
            if missing:
                raise InputError(
                    f"{self.name}: {len(missing):,} of the {len(texts):,} texts are not in its text column "
                    f"(first: '{missing[0][:60]}'); the vectors must embed the same texts"
                )
            return self.vectors[np.asarray(found, np.int64)]
        n_input = len(texts) if n_input is None else n_input
        if n_input != len(self):
            raise InputError(
                f"{self.name}: {len(self):,} vectors for {n_input:,} input texts and no text column to match them by; "
                "give one vector per text in the same order, or a text column (--text-column)"
            )
        idx = np.arange(len(texts)) if rows is None else np.asarray(rows, np.int64)
        return self.vectors[idx]


def as_float32(values: np.ndarray, dtype: str) -> np.ndarray:
    """Stored values to float32 (binary codes to -1/+1); NaN and inf are kept for ``finish`` to name."""
    if dtype == "bool":
        return np.where(values, np.float32(1), np.float32(-1))
    with np.errstate(over="ignore", invalid="ignore"):  # float64 past float32's range becomes inf: named later
        return np.asarray(values, np.float32)


def check_numbers(values: np.ndarray, name: str) -> None:
    """InputError unless ``values`` hold numbers (floats, integers, booleans)."""
    if values.dtype.kind not in "fiub":
        raise InputError(f"{name}: holds {values.dtype} values, not numbers; give a 2-D array of real numbers (floats)")


def check_shape(rows: int, dims: int, name: str) -> None:
    if rows < MIN_ROWS or dims < MIN_DIMS:
        raise InputError(f"{name}: need at least {MIN_ROWS} rows and {MIN_DIMS} dimensions, got {rows} x {dims}")


def checked_matrix(values: np.ndarray, name: str) -> np.ndarray:
    """``values`` as the C-contiguous (n, d) float32 array a space holds: 2-D, at least ``MIN_ROWS`` x ``MIN_DIMS``,
    every row finite once in float32 (float16 and bfloat16 widen, float64 narrows); InputError naming the rows
    that are not."""
    if values.ndim != 2:
        raise InputError(f"{name}: vectors must be a 2-D array (rows, dimensions), got shape {values.shape}")
    check_shape(*values.shape, name)
    with np.errstate(over="ignore", invalid="ignore"):  # float64 past float32's range becomes inf: named below
        out = np.ascontiguousarray(values, np.float32)  # (n, d)
    bad = np.flatnonzero(~np.isfinite(out).all(axis=1))  # (k,)
    if len(bad):
        raise InputError(
            f"{name}: {len(bad)} row(s) contain NaN or infinite values ({_rows(bad)}) in float32, counting rows "
            "from 0; fix or drop them"
        )
    return out


def finish(
    vectors: np.ndarray,
    origin: VectorOrigin,
    *,
    texts: list[str] | None = None,
    meta: pd.DataFrame | None = None,
    warnings: Sequence[str] = (),
) -> VectorTable:
    """The checked table: at least 3 x 2, every row finite, the digest computed, the dtype said when not float."""
    name = origin.label()
    vectors = checked_matrix(vectors, name)  # (n, d)
    notes = [f"{name}: {CODE_NOTES[origin.dtype]}"] if origin.dtype in CODE_NOTES else []
    if texts is not None and len(texts) != len(vectors):
        raise ValueError(f"{len(texts)} texts for {len(vectors)} vectors")  # the readers keep them aligned
    if texts is not None and (empty := sum(1 for t in texts if not t)):
        notes.append(f"{name}: {empty} row(s) have no text")
    origin = VectorOrigin(origin.file, origin.column, origin.text_column, origin.dtype, vectors_digest(vectors))
    return VectorTable(vectors, origin, texts, meta, [*warnings, *notes])


def vectors_from_array(
    array, texts: Sequence[str] | None = None, *, name: str = "array", meta: pd.DataFrame | None = None
) -> VectorTable:
    """A table from an in-memory array (numpy, or anything ``np.asarray`` takes: a torch tensor on the CPU, ...).

    The same checks as a file: 2-D, at least 3 x 2, numbers, finite; ``texts`` one per row.
    """
    arr = np.asarray(array)
    check_numbers(arr, name)
    dtype = "bool" if arr.dtype.kind == "b" else str(arr.dtype)
    vectors = as_float32(arr, dtype) if arr.ndim == 2 else arr
    clean = None if texts is None else [str(t) for t in texts]
    if clean is not None and arr.ndim == 2 and len(clean) != len(arr):
        raise InputError(f"{name}: {len(clean)} texts for {len(arr)} vectors; give one text per row")
    origin = VectorOrigin(name, None, "texts" if texts is not None else None, dtype)
    return finish(vectors, origin, texts=clean, meta=meta)
