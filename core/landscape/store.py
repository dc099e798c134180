"""Files of the landscape tool: checkpoints (safetensors + JSON), arrays (npz) and JSON, all written atomically.

Nothing is ever unpickled: safetensors for parameter vectors, ``np.load(allow_pickle=False)`` for arrays,
plain JSON for metadata. A file that does not read back is treated as absent (and recomputed).
"""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from isoscope.cache import atomic_write_bytes
from isoscope.data.export import to_jsonable

log = logging.getLogger(__name__)


def write_json(path: Path, obj: object) -> None:
    atomic_write_bytes(path, json.dumps(to_jsonable(obj), indent=1).encode("utf-8"))


def read_json(path: Path) -> dict | None:
    """The JSON object in ``path``, or None when absent or unreadable."""
    try:
        obj = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable %s: %s", path, exc)
        return None
    return obj if isinstance(obj, dict) else None


def write_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """npz of numeric arrays (no object arrays, so no pickle on either side)."""
    buf = io.BytesIO()
    # np.ascontiguousarray turns a 0-d array (a cache key) into shape (1,); keep scalars 0-d so the key
    # read back compares equal and the cache hits.
    np.savez(buf, **{k: np.asarray(v) if np.ndim(v) == 0 else np.ascontiguousarray(v) for k, v in arrays.items()})
    atomic_write_bytes(path, buf.getvalue())


def read_arrays(path: Path) -> dict[str, np.ndarray] | None:
    """Arrays of an npz file, or None when absent or unreadable."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception as exc:  # corrupt or foreign file: recompute
        log.warning("ignoring unreadable %s: %s", path, exc)
        return None


def write_tensors(path: Path, tensors: dict[str, torch.Tensor], meta: dict) -> None:
    """safetensors file plus a JSON sidecar ``<path>.json`` written after it (its presence marks completion)."""
    atomic_write_bytes(path, st_save({k: v.detach().contiguous() for k, v in tensors.items()}))
    write_json(path.with_suffix(".json"), meta)


def read_tensors(path: Path) -> tuple[dict[str, torch.Tensor], dict] | None:
    """(tensors, meta) of a complete safetensors + JSON pair, or None."""
    meta = read_json(path.with_suffix(".json"))
    if meta is None or not path.exists():
        return None
    try:
        return st_load(path.read_bytes()), meta
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
