"""Vectors from a .npy file: the header checked first (rows, dimensions, dtype, the size it claims), never
unpickled; a file on disk is memory-mapped and converted to float32 in chunks, so memory is what is decoded."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import BinaryIO

import numpy as np

from isoscope.data.limits import DecodeLimits, current_limits
from isoscope.data.vectors.table import VectorOrigin, VectorTable, as_float32, finish
from isoscope.errors import InputError, first_line

NPY_MAGIC = b"\x93NUMPY"
NPY_HINT = "save a 2-D float array with numpy.save(path, vectors, allow_pickle=False)"
MAX_HEADER = 10_000
CHUNK_ROWS = 8192


def _header(stream: BinaryIO) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """(shape, fortran order, dtype, header length) of a .npy stream (ValueError when malformed)."""
    version = np.lib.format.read_magic(stream)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read(stream, max_header_size=MAX_HEADER)
    return shape, fortran, dtype, stream.tell()


def check_budget(
    rows: int, dims: int, name: str, *, limits: DecodeLimits, hint: str = "sample the vectors first"
) -> None:
    """InputError when ``rows`` or ``rows x dims`` float32 values are over the limits (before anything is read)."""
    if rows > limits.max_rows:
        raise InputError(f"{name}: {rows:,} rows is over the limit of {limits.max_rows:,}; {hint}")
    if rows * dims * 4 > limits.max_vector_bytes:
        raise InputError(
            f"{name}: {rows:,} x {dims:,} vectors decode to {rows * dims * 4 / 2**20:,.0f} MiB of float32, over the "
            f"limit of {limits.max_vector_bytes / 2**20:,.0f} MiB (ISOSCOPE_MAX_VECTOR_BYTES); {hint}"
        )


def _check_header(
    shape: tuple[int, ...], dtype: np.dtype, held: int, name: str, hint: str, limits: DecodeLimits
) -> None:
    if dtype.hasobject:
        raise InputError(f"{name}: holds Python objects, which are never unpickled; {hint}")
    if shape and shape[0] > limits.max_rows:
        raise InputError(
            f"{name}: {shape[0]:,} rows is over the limit of {limits.max_rows:,}; sample the vectors first"
        )
    claimed = math.prod(shape) * dtype.itemsize
    if claimed != held:
        raise InputError(
            f"{name}: unreadable .npy (its header describes {' x '.join(map(str, shape)) or 'one'} {dtype} values, "
            f"{claimed:,} bytes, but the file holds {held:,} bytes of data); {hint}"
        )


def check_npy_header(data: bytes, name: str, *, hint: str = NPY_HINT, max_rows: int | None = None) -> None:
    """Refuse a .npy whose header claims more rows than the limit, or a data size the file does not hold.

    Read before ``np.load``, which would otherwise try to allocate whatever the header claims (a 130-byte
    file can claim exabytes) or silently ignore bytes past what it claims. Malformed headers raise
    ValueError, which the caller reports.
    """
    limits = current_limits().replace(max_rows=max_rows)
    shape, _, dtype, start = _header(io.BytesIO(data))
    _check_header(shape, dtype, len(data) - start, name, hint, limits)


def _stored_dtype(dtype: np.dtype, name: str) -> str:
    if dtype.kind == "b":
        return "bool"
    if dtype.kind not in "fiu" or dtype.fields is not None or dtype.subdtype is not None:
        raise InputError(f"{name}: holds {dtype} values, not numbers; {NPY_HINT}")
    return dtype.newbyteorder("=").name


def _convert(arr: np.ndarray, dtype: str) -> np.ndarray:
    """(n, d) float32 from a (possibly memory-mapped) array, CHUNK_ROWS rows at a time."""
    out = np.empty(arr.shape, np.float32)  # (n, d)
    for i in range(0, arr.shape[0], CHUNK_ROWS):
        out[i : i + CHUNK_ROWS] = as_float32(arr[i : i + CHUNK_ROWS], dtype)
    return out


def read_npy(
    source: Path | bytes, name: str, limits: DecodeLimits | None = None, *, hint: str = NPY_HINT
) -> VectorTable:
    """A .npy of shape (n, d) on disk (memory-mapped) or in memory, as a checked ``VectorTable``."""
    limits = limits or current_limits()
    if isinstance(source, bytes | bytearray | memoryview):
        raw: BinaryIO = io.BytesIO(bytes(source))
        size = len(source)
    else:
        raw, size = open(source, "rb"), Path(source).stat().st_size
    with raw:
        if raw.read(len(NPY_MAGIC)) != NPY_MAGIC:
            raise InputError(f"{name}: not a NumPy .npy file (pickles, .npz and text are refused); {hint}")
        raw.seek(0)
        try:
            shape, fortran, dtype, start = _header(raw)
        except (ValueError, EOFError, OSError) as exc:
            raise InputError(f"{name}: unreadable .npy ({first_line(exc, 120)}); {hint}") from None
    _check_header(shape, dtype, size - start, name, hint, limits)
    stored = _stored_dtype(dtype, name)
    if len(shape) != 2:
        raise InputError(f"{name}: vectors must be a 2-D array (rows, dimensions), got shape {shape}")
    check_budget(shape[0], shape[1], name, limits=limits)
    order = "F" if fortran else "C"
    if isinstance(source, bytes | bytearray | memoryview):
        arr = np.frombuffer(source, dtype, math.prod(shape), start).reshape(shape, order=order)
    else:
        arr = np.memmap(source, dtype, "r", start, shape, order) if math.prod(shape) else np.zeros(shape, dtype)
    return finish(_convert(arr, stored), VectorOrigin(name, dtype=stored))


def load_vectors(data: bytes, name: str, max_rows: int | None = None) -> np.ndarray:
    """Precomputed vectors from an uploaded .npy file: (n, d) float32, validated; never unpickled.

    Raises InputError (one line, says what to fix) for anything but a finite, real, 2-D array.
    """
    return read_npy(data, name, current_limits().replace(max_rows=max_rows)).vectors
