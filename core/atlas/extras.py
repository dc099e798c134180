"""The ``extras`` stage: per row the raw L2 norm, the text's length and the overlap of the raw and calibrated
neighbour lists, in blocks of rows (``distributed.map_rows``: in turn here, as Ray tasks on the ray engine).

extras_stage(folder, ["raw", "cal"], config)     # norm.npy, length.npy, overlap.npy
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from isoscope.atlas.config import AtlasConfig
from isoscope.atlas.distributed import ProgressFn, load_npy, map_rows, report, row_blocks
from isoscope.cache import NpyBlocks
from isoscope.data.sharded import ParquetColumn
from isoscope.neighbours.overlap import jaccard_tables


def _norm_rows(vectors: np.ndarray) -> np.ndarray:
    return np.linalg.norm(vectors.astype(np.float64), axis=1).astype(np.float32)  # (m,)


def _overlap_rows(ids_raw: np.ndarray, ids_cal: np.ndarray) -> np.ndarray:
    return jaccard_tables(ids_raw[:, 1:], ids_cal[:, 1:])[1].astype(np.float32)  # (m,) the row itself left out


def extras_stage(out: Path, spaces: Sequence[str], config: AtlasConfig, progress: ProgressFn | None = None) -> None:
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
