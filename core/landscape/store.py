"""Files of the landscape tool: checkpoints (safetensors + JSON), arrays (npz) and JSON, all written atomically.

Nothing is ever unpickled: safetensors for parameter vectors, ``np.load(allow_pickle=False)`` for arrays,
plain JSON for metadata. A file that does not read back is treated as absent (and recomputed). Reading
back is checked before anything is loaded: only regular files are opened (a FIFO or a device in a results
folder would hang the reader or never end), JSON is at most ``MAX_JSON_BYTES``, and every array of an npz
must be stored as it was written (uncompressed, at most ``MAX_ARRAY_BYTES``) with a header whose shape
matches its size.
"""

from __future__ import annotations

import io
import json
import logging
import math
import zipfile
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from isoscope.cache import atomic_write_bytes
from isoscope.data.export import to_jsonable
from isoscope.data.jsonfile import read_json as read_bounded
from isoscope.paths import check_regular, open_regular

log = logging.getLogger(__name__)

MAX_JSON_BYTES = 64 * 2**20
MAX_ARRAY_BYTES = 4 * 2**30  # one array of an npz (a grid of metrics is kilobytes, a trajectory megabytes)
MAX_ARRAYS = 10_000  # arrays in one npz


def write_json(path: Path, obj: object) -> None:
    atomic_write_bytes(path, json.dumps(to_jsonable(obj), indent=1).encode("utf-8"))


def read_json(path: Path) -> dict | None:
    """The JSON object in ``path``, or None when absent or unreadable (not a regular file, too large, not JSON)."""
    try:
        return read_bounded(path, what=path.name, max_bytes=MAX_JSON_BYTES)  # isoscope.data.jsonfile: depth first
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # InputError: a FIFO, too large or deep, not JSON, not an object
        log.warning("ignoring unreadable %s: %s", path, exc)
        return None


def write_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """npz of numeric arrays (no object arrays, so no pickle on either side)."""
    buf = io.BytesIO()
    # np.ascontiguousarray turns a 0-d array (a cache key) into shape (1,); keep scalars 0-d so the key
    # read back compares equal and the cache hits.
    np.savez(buf, **{k: np.asarray(v) if np.ndim(v) == 0 else np.ascontiguousarray(v) for k, v in arrays.items()})
    atomic_write_bytes(path, buf.getvalue())


def _check_npz(f) -> None:
    """ValueError unless every member of the zip ``f`` is a stored .npy whose header matches its size."""
    with zipfile.ZipFile(f) as z:
        infos = z.infolist()
        if len(infos) > MAX_ARRAYS:
            raise ValueError(f"{len(infos):,} arrays")
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED or info.file_size > MAX_ARRAY_BYTES:
                raise ValueError(f"array {info.filename} is compressed or larger than {MAX_ARRAY_BYTES:,} bytes")
            with z.open(info) as member:
                head = member.read(65_536)
            stream = io.BytesIO(head)
            version = np.lib.format.read_magic(stream)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(stream, max_header_size=65_536)
            if dtype.hasobject or stream.tell() + math.prod(shape) * dtype.itemsize != info.file_size:
                raise ValueError(f"array {info.filename}: its header does not match its size")


def read_arrays(path: Path) -> dict[str, np.ndarray] | None:
    """Arrays of an npz file, or None when absent or unreadable (checked before any array is loaded)."""
    try:
        with open_regular(path) as f:
            _check_npz(f)
            f.seek(0)
            with np.load(f, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
    except FileNotFoundError:
        return None
    except Exception as exc:  # corrupt, foreign or special file: recompute
        log.warning("ignoring unreadable %s: %s", path, exc)
        return None


def write_tensors(path: Path, tensors: dict[str, torch.Tensor], meta: dict) -> None:
    """safetensors file plus a JSON sidecar ``<path>.json`` written after it (its presence marks completion); the
    tensors may be on any device (written from the CPU)."""
    atomic_write_bytes(path, st_save({k: v.detach().cpu().contiguous() for k, v in tensors.items()}))  # a GPU's too
    write_json(path.with_suffix(".json"), meta)


def read_tensors(path: Path) -> tuple[dict[str, torch.Tensor], dict] | None:
    """(tensors, meta) of a complete safetensors + JSON pair, or None."""
    meta = read_json(path.with_suffix(".json"))
    if meta is None or not path.exists():
        return None
    try:
        with open_regular(path) as f:
            return st_load(f.read()), meta
    except Exception as exc:
        log.warning("ignoring unreadable %s: %s", path, exc)
        return None


def read_tensor_names(path: Path) -> tuple[set[str], dict] | None:
    """(tensor names, meta) of a complete safetensors + JSON pair, or None, reading only the header.

    safetensors checks on opening that the header covers the whole file, so a truncated file is refused
    here as it is by ``read_tensors``, without loading the tensors.
    """
    meta = read_json(path.with_suffix(".json"))
    if meta is None or not path.exists():
        return None
    try:
        check_regular(path)
        with safe_open(path, "pt") as f:
            return set(f.keys()), meta
    except Exception as exc:
        log.warning("ignoring unreadable %s: %s", path, exc)
        return None


class RowStore:
    """One npz per finished grid row under a folder named by the grid's cache key, so a run resumes."""

    def __init__(self, root: Path, key: str, enabled: bool = True) -> None:
        self.dir = Path(root) / f"rows-{key[:20]}"
        self.enabled = enabled

    def get(self, i: int) -> dict[str, np.ndarray] | None:
        return read_arrays(self.dir / f"row_{i:04d}.npz") if self.enabled else None

    def put(self, i: int, row: dict[str, np.ndarray]) -> None:
        if self.enabled:
            write_arrays(self.dir / f"row_{i:04d}.npz", row)

    def clear(self) -> None:
        """Drop the row files once the full grid is saved elsewhere."""
        if self.dir.exists():
            for p in self.dir.glob("row_*.npz"):
                p.unlink(missing_ok=True)
            try:
                self.dir.rmdir()
            except OSError:
                pass
