"""Precomputed vectors from an uploaded .npy file: checked header first, never unpickled."""

from __future__ import annotations

import io
import math

import numpy as np

from isoscope.data.limits import current_limits
from isoscope.errors import InputError, first_line

NPY_MAGIC = b"\x93NUMPY"
NPY_HINT = "save a 2-D float array with numpy.save(path, vectors, allow_pickle=False)"


def check_npy_header(data: bytes, name: str, hint: str = NPY_HINT, max_rows: int | None = None) -> None:
    """Refuse a .npy whose header claims more rows than the limit, or a data size the file does not hold.

    Read before ``np.load``, which would otherwise try to allocate whatever the header claims (a 130-byte
    file can claim exabytes) or silently ignore bytes past what it claims. Malformed headers raise
    ValueError, which the caller reports.
    """
    max_rows = max_rows or current_limits().max_rows
    stream = io.BytesIO(data)
    version = np.lib.format.read_magic(stream)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = read_header(stream, max_header_size=10_000)
    if dtype.hasobject:
        return  # np.load refuses it with allow_pickle=False
    if shape and shape[0] > max_rows:
        raise InputError(f"{name}: {shape[0]:,} rows is over the limit of {max_rows:,}; sample the vectors first")
    claimed, held = math.prod(shape) * dtype.itemsize, len(data) - stream.tell()
    if claimed != held:
        raise InputError(
            f"{name}: unreadable .npy (its header describes {' x '.join(map(str, shape)) or 'one'} {dtype} values, "
            f"{claimed:,} bytes, but the file holds {held:,} bytes of data); {hint}"
        )


def load_vectors(data: bytes, name: str, max_rows: int | None = None) -> np.ndarray:
    """Precomputed vectors from an uploaded .npy file: (n, d) float32, validated; never unpickled.

    Raises InputError (one line, says what to fix) for anything but a finite, real, 2-D array.
    """
    max_rows = max_rows or current_limits().max_rows
    if not data.startswith(NPY_MAGIC):
        raise InputError(f"{name}: not a NumPy .npy file (pickles, .npz and text are refused); {NPY_HINT}")
    try:
        check_npy_header(data, name, NPY_HINT, max_rows)
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except InputError:
        raise
    except (ValueError, EOFError, OSError) as exc:
        raise InputError(f"{name}: unreadable .npy ({first_line(exc, 120)}); {NPY_HINT}") from None
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "fiu":
        raise InputError(f"{name}: holds {getattr(arr, 'dtype', type(arr).__name__)} values, not numbers; {NPY_HINT}")
    if arr.ndim != 2:
        raise InputError(f"{name}: vectors must be a 2-D array (rows, dimensions), got shape {arr.shape}")
    n, d = arr.shape
    if n < 3 or d < 2:
        raise InputError(f"{name}: need at least 3 rows and 2 dimensions, got {n} x {d}")
    out = np.ascontiguousarray(arr, dtype=np.float32)  # (n, d)
    bad = ~np.isfinite(out).all(axis=1)  # (n,)
    if bad.any():
        raise InputError(f"{name}: {int(bad.sum())} row(s) contain NaN or infinite values (in float32); fix them first")
    return out
