"""Vectors from a ``.safetensors`` file: one 2-D tensor, its JSON header checked before any data is read.

The format is an 8-byte little-endian header length, a JSON header (``{name: {dtype, shape, data_offsets}}``)
and the raw tensors. The header is parsed here, bounded in size and nesting; the chosen tensor is then
memory-mapped (a file) and converted to float32 in chunks. bfloat16 is widened exactly (its bits are the top
half of a float32).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from isoscope.data.jsonfile import parse_json
from isoscope.data.limits import DecodeLimits, MiB
from isoscope.data.source import Source
from isoscope.data.vectors.npy import CHUNK_ROWS, check_budget
from isoscope.data.vectors.table import VectorOrigin, VectorTable, as_float32, finish
from isoscope.errors import InputError

MAX_HEADER = 16 * MiB
HINT = "save one 2-D tensor with safetensors (save_file({'embeddings': x}, path))"
# safetensors dtype -> (numpy dtype of the stored bytes, VectorOrigin.dtype)
DTYPES: dict[str, tuple[str, str]] = {
    "F64": ("<f8", "float64"),
    "F32": ("<f4", "float32"),
    "F16": ("<f2", "float16"),
    "BF16": ("<u2", "bfloat16"),
    "I64": ("<i8", "int64"),
    "I32": ("<i4", "int32"),
    "I16": ("<i2", "int16"),
    "I8": ("i1", "int8"),
    "U8": ("u1", "uint8"),
    "BOOL": ("?", "bool"),
}


def _header(src: Source, name: str) -> tuple[dict[str, Any], int, int]:
    """(the tensors of the header, where the data starts, the data's size)."""
    if src.path is not None:
        size = src.path.stat().st_size
        with open(src.path, "rb") as f:
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else -1
            raw = f.read(n) if 0 < n <= min(MAX_HEADER, size - 8) else b""
    else:
        data = src.data or b""
        size, head = len(data), data[:8]
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        raw = data[8 : 8 + n] if 0 < n <= min(MAX_HEADER, size - 8) else b""
    if not raw:
        raise InputError(f"{name}: not a readable .safetensors file (no header); {HINT}")
    try:
        header = parse_json(raw, what=name, max_depth=8)  # isoscope.data.jsonfile: depth first, an object
    except InputError:
        raise InputError(f"{name}: not a readable .safetensors file (its header is not JSON); {HINT}") from None
    header.pop("__metadata__", None)
    return header, 8 + n, size - 8 - n


def _tensor(header: dict[str, Any], name: str, column: str | None) -> tuple[str, dict[str, Any]]:
    listing = ", ".join(
        f"{k} ({'x'.join(map(str, v.get('shape', [])))} {v.get('dtype')})"
        for k, v in header.items()
        if isinstance(v, dict)
    )[:300]
    if column is not None:
        if column not in header:
            raise InputError(f"{name}: no tensor '{column}'; it holds {listing or 'none'}")
        return column, header[column]
    two_d = [k for k, v in header.items() if isinstance(v, dict) and len(v.get("shape") or []) == 2]
    if len(two_d) == 1:
        return two_d[0], header[two_d[0]]
    if not two_d:
        raise InputError(f"{name}: no 2-D tensor (rows, dimensions); it holds {listing or 'none'}")
    raise InputError(f"{name}: several 2-D tensors ({', '.join(two_d)}); name one as {name}:TENSOR")


def read_safetensors(src: Source, name: str, *, column: str | None, limits: DecodeLimits) -> VectorTable:
    header, start, held = _header(src, name)
    key, info = _tensor(header, name, column)
    label = f"{name}:{key}"
    shape, dtype, offsets = info.get("shape"), info.get("dtype"), info.get("data_offsets")
    if dtype not in DTYPES:
        raise InputError(f"{label}: holds {dtype} values; use one of {', '.join(DTYPES)}")
    if not isinstance(shape, list) or len(shape) != 2 or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise InputError(f"{label}: vectors must be a 2-D tensor (rows, dimensions), got shape {shape}")
    rows, dims = shape
    check_budget(rows, dims, label, limits=limits)
    stored, kind = DTYPES[dtype]
    nbytes = math.prod(shape) * np.dtype(stored).itemsize
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) for o in offsets)
        or offsets[1] - offsets[0] != nbytes
        or not 0 <= offsets[0] <= offsets[1] <= held
    ):
        raise InputError(
            f"{label}: unreadable (its header describes {rows} x {dims} {dtype} values, {nbytes:,} bytes, at "
            f"offsets {offsets} of the {held:,} bytes the file holds); {HINT}"
        )
    if src.path is not None:
        arr: np.ndarray = (
            np.memmap(src.path, stored, "r", start + offsets[0], (rows, dims)) if nbytes else np.zeros(shape, stored)
        )
    else:
        arr = np.frombuffer(src.data or b"", stored, rows * dims, start + offsets[0]).reshape(rows, dims)
    out = np.empty((rows, dims), np.float32)  # (n, d)
    for i in range(0, rows, CHUNK_ROWS):
        chunk = arr[i : i + CHUNK_ROWS]
        if kind == "bfloat16":
            out[i : i + CHUNK_ROWS] = (chunk.astype(np.uint32) << 16).view(np.float32)
        else:
            out[i : i + CHUNK_ROWS] = as_float32(chunk, kind)
    return finish(out, VectorOrigin(name, key, None, kind))
