"""A per-point column added to a finished atlas after its build: one float per point (NaN: no value), a colour the
Atlas page offers as "extra: NAME" (``isoscope.migrate.where.atlas_column`` writes a migration's adapter cosine).

from isoscope.atlas.extras import write_extra
write_extra("my-atlas/", "adapter_cosine", values)   # (n,) in the atlas's row order -> extras/adapter_cosine.npy

The file is recorded in the folder's ledger (size and SHA-256) like the build's own files, so ``load_atlas`` checks
it the same way and a changed or cut file is named, not drawn. A rebuild keeps it (its stage is its own).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from isoscope.atlas.folder import EXTRA_NAME, EXTRAS, Ledger, _manifest, build_lock, finished_atlas
from isoscope.cache import atomic_write_bytes
from isoscope.errors import InputError


def write_extra(folder: str | Path, name: str, values: np.ndarray) -> Path:
    """Write ``values`` (n,) (one float per point of the atlas in ``folder``, in its row order; NaN for a point
    without a value) as ``extras/NAME.npy`` and record it in the ledger; returns the file. InputError for a folder
    that holds no finished atlas, a name that is not 1-40 letters, digits, _ or -, a length that is not the
    atlas's, or an infinite value."""
    if not isinstance(name, str) or not EXTRA_NAME.fullmatch(name):
        raise InputError(f"an extra column's name is 1-40 letters, digits, _ or -; got {str(name)[:60]!r}")
    path = finished_atlas(folder)
    n = int(_manifest(path, strict=True)["n"])
    v = np.asarray(values, dtype=np.float64)
    if v.shape != (n,):
        raise InputError(f"the atlas has {n:,} points; give one value each, in its row order (got shape {v.shape})")
    if np.isinf(v).any():
        raise InputError("an extra column holds infinite values; use NaN for a point without a value")
    out = path / EXTRAS / f"{name}.npy"
    buffer = io.BytesIO()
    np.save(buffer, v.astype(np.float32), allow_pickle=False)
    with build_lock(path):
        out.parent.mkdir(exist_ok=True)
        atomic_write_bytes(out, buffer.getvalue())
        Ledger(path).record(f"{EXTRAS}:{name}", [], [out])
    return out
