"""The ``{space}_clusters`` stage: density, the cluster levels and their c-TF-IDF labels from a layout, in blocks
of rows (``distributed.map_rows``: in turn here, as Ray tasks on the ray engine), never all rows at once.

clusters_stage(folder, folder / "raw", config)    # raw/density.npy, cluster.npy, grid.npy, clusters.json

``density.ClusterMap``: bounds and points per grid cell summed over blocks, then each block's rows labelled at
every level; the labels' words counted over ``points.parquet`` a row group at a time (``labels.TermTally``; in
row-group tasks on the ray engine, ``distributed.ray_tally``); each cluster's centre the median of its points
among a seeded sample. Every level's labels go to a file, never held whole.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from isoscope.atlas import density as dens
from isoscope.atlas.config import AtlasConfig
from isoscope.atlas.distributed import ProgressFn, load_npy, map_rows, ray_tally, ray_tally_parts, row_blocks
from isoscope.atlas.labels import TermTally
from isoscope.cache import NpyBlocks, atomic_save_npy, atomic_write_bytes
from isoscope.data.sharded import ParquetColumn
from isoscope.sampling import sample_indices

CENTRE_SAMPLE = 200_000  # the rows whose median places each cluster's label (every row below that)


def _cluster_info(cmap: dens.ClusterMap, which: int, centres: np.ndarray, words: dict[int, list[str]]) -> list[dict]:
    sizes = cmap.sizes(which)  # (C,)
    return [
        {"cluster": c, "size": int(sizes[c]), "x": float(x), "y": float(y), "words": words.get(c, [])}
        for c, (x, y) in enumerate(centres)
    ]


def _centres(xy: np.ndarray, labelings: Sequence[np.ndarray], cmap: dens.ClusterMap) -> list[np.ndarray]:
    """Each level's cluster centres (C, 2): the median of its points among a seeded sample of ``CENTRE_SAMPLE``
    rows (every row below that), or its cells' weighted centre when the sample holds none of them."""
    rows = sample_indices(len(xy), CENTRE_SAMPLE, 0)  # (s,) sorted: reads the memory maps in order
    pts = np.asarray(xy[rows])  # (s, 2) float32: the median of float32 coordinates, as a full-size sample takes it
    out = []
    for which, labels in enumerate(labelings):
        lab = np.asarray(labels[rows])  # (s,)
        centres = cmap.cell_centres(which)  # (C, 2)
        for c in range(len(centres)):
            members = pts[lab == c]
            if len(members):
                centres[c] = np.median(members, axis=0)
        out.append(centres)
    return out


class _Steps:
    """A stage's progress counted in steps: ``done(value)`` after each, passing ``value`` through."""

    def __init__(self, progress: ProgressFn | None, total: int) -> None:
        self.progress, self.total, self.count = progress, total, 0

    def done(self, value=None):
        self.count += 1
        if self.progress is not None:
            self.progress(min(self.count, self.total), self.total)
        return value


def clusters_stage(out: Path, d: Path, config: AtlasConfig, *, progress: ProgressFn | None = None) -> None:
    """Density, the cluster levels (the default one in ``cluster.npy``) and their c-TF-IDF labels, from
    ``xy.npy`` in blocks of rows (``density.ClusterMap``: bounds and points per cell summed over blocks, then each
    block's rows labelled), as Ray tasks on that engine; the labels' texts read a row group at a time from
    ``points.parquet``, every level counted in one pass. Every level's labels go to a file, never held whole.
    ``out``: the atlas folder; ``d``: the space's folder in it. ``progress(done, total)`` after each block of each
    pass (bounds, counts, labels) and each part of the words."""
    xy_path = d / "xy.npy"
    xy = load_npy(xy_path)  # (n, 2)
    n = len(xy)
    engine = config.engine
    ranges = row_blocks(n, engine=engine, shard_rows=config.shard_rows)
    tally_parts = ray_tally_parts(out / "points.parquet") if engine == "ray" else 1
    steps = _Steps(progress, 3 * len(ranges) + tally_parts)
    bounds = dens.bounds_of([steps.done(e) for e in map_rows(dens.extent, [xy_path], ranges, engine=engine)])
    specs = dens.levels(n)
    counts = None  # per level (G, G), summed block by block
    for block in map_rows(dens.block_counts, [xy_path], ranges, bounds, specs, engine=engine):
        counts = block if counts is None else [a + b for a, b in zip(counts, block, strict=True)]
        steps.done()
    cmap = dens.ClusterMap.fit(bounds, specs, counts)
    parts = d / "clusters.parts"
    shutil.rmtree(parts, ignore_errors=True)
    label_paths = [parts / f"level-{i}.npy" for i in range(len(specs))]
    with contextlib.ExitStack() as files:
        density = files.enter_context(NpyBlocks(d / "density.npy", (n,), np.float32))
        levels = [files.enter_context(NpyBlocks(p, (n,), np.int32)) for p in label_paths]
        for block_density, labelings in map_rows(cmap.rows, [xy_path], ranges, engine=engine):
            density.write(block_density)
            for f, labels in zip(levels, labelings, strict=True):
                f.write(labels)
            steps.done()
    labelings = [load_npy(p) for p in label_paths]  # each (n,)
    if engine == "ray":  # counted in tasks over row groups, merged here
        tally = ray_tally(out / "points.parquet", label_paths, progress=lambda done, total: steps.done())
    else:
        tally = TermTally(labelings)
        for texts in ParquetColumn(out / "points.parquet").batches():
            tally.add(texts)
        steps.done()
    centres = _centres(xy, labelings, cmap)
    levels = [
        {"grid": level.grid, "clusters": _cluster_info(cmap, i, centres[i], tally.top_words(i))}
        for i, level in enumerate(specs)
    ]
    atomic_save_npy(d / "grid.npy", cmap.grids[dens.DEFAULT_LEVEL].astype(np.float32))
    os.replace(label_paths[dens.DEFAULT_LEVEL], d / "cluster.npy")
    shutil.rmtree(parts, ignore_errors=True)
    meta = {"bounds": list(bounds), "clusters": levels[dens.DEFAULT_LEVEL]["clusters"], "levels": levels}
    atomic_write_bytes(d / "clusters.json", json.dumps(meta, indent=1).encode())
