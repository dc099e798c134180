"""Per-point extras of an atlas: the build's ``extras`` stage (per row the raw L2 norm, the text's length and the
overlap of the raw and calibrated neighbour lists, in blocks of rows: ``distributed.map_rows``, in turn here, as Ray
tasks on the ray engine), and a column added to a finished atlas after its build: one float per point (NaN: no
value), a colour the Atlas page offers as "extra: NAME" (``isoscope.migrate.where.atlas_column`` writes a
migration's adapter cosine).

extras_stage(folder, ["raw", "cal"], config)         # norm.npy, length.npy, overlap.npy
from isoscope.atlas.extras import write_extra
write_extra("my-atlas/", "adapter_cosine", values)   # (n,) in the atlas's row order -> extras/adapter_cosine.npy

An added column's file is recorded in the folder's ledger (size and SHA-256) like the build's own files, so
``load_atlas`` checks it the same way and a changed or cut file is named, not drawn. A rebuild keeps it (its stage
is its own).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from isoscope.atlas.config import AtlasConfig
from isoscope.atlas.distributed import ProgressFn, load_npy, map_rows, report, row_blocks
from isoscope.atlas.folder import EXTRA_NAME, EXTRAS, Ledger, _manifest, build_lock, finished_atlas
from isoscope.cache import NpyBlocks, atomic_write_bytes
from isoscope.data.sharded import ParquetColumn
from isoscope.errors import InputError
from isoscope.neighbours.overlap import jaccard_tables


def _norm_rows(vectors: np.ndarray) -> np.ndarray:
    return np.linalg.norm(vectors.astype(np.float64), axis=1).astype(np.float32)  # (m,)


def _overlap_rows(ids_raw: np.ndarray, ids_cal: np.ndarray) -> np.ndarray:
    return jaccard_tables(ids_raw[:, 1:], ids_cal[:, 1:])[1].astype(np.float32)  # (m,) the row itself left out


def extras_stage(out: Path, spaces: Sequence[str], config: AtlasConfig, *, progress: ProgressFn | None = None) -> None:
    """Per row: the raw L2 norm and, with a calibrated space, the Jaccard overlap of the two neighbour lists (in
    blocks of rows, as Ray tasks on that engine); the text's length in characters (code points, as ``len``) from
    ``points.parquet`` a row group at a time. ``progress(done, total)`` after each block of each pass."""
    import pyarrow.compute as pc

    n = len(load_npy(out / "vectors.npy"))
    ranges = row_blocks(n, engine=config.engine, shard_rows=config.shard_rows)
    total = (2 if "cal" in spaces else 1) * len(ranges) + 1
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        report(progress, done, total)

    with NpyBlocks(out / "norm.npy", (n,), np.float32) as norm:
        for block in map_rows(_norm_rows, [out / "vectors.npy"], ranges, engine=config.engine):
            norm.write(block)
            step()
    with NpyBlocks(out / "length.npy", (n,), np.int32) as length:
        for texts in ParquetColumn(out / "points.parquet").arrays():
            length.write(pc.utf8_length(texts).to_numpy())
    step()
    with NpyBlocks(out / "overlap.npy", (n,), np.float32) as overlap:
        if "cal" not in spaces:
            overlap.write(np.ones(n, np.float32))
            return
        graphs = [out / "raw" / "knn_ids.npy", out / "cal" / "knn_ids.npy"]  # each (n, k), the row itself first
        for block in map_rows(_overlap_rows, graphs, ranges, engine=config.engine):
            overlap.write(block)
            step()


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
