"""The spatial index on the ray engine: ``spatial.write_index``'s files byte for byte, built as a sample sort by
(Morton code, row) in Ray tasks, so no process sorts n points; the same sort by coarser Morton cells groups a
layout's points cell by cell for its deep spread (``isoscope.atlas.ray_layout``).

ray_index(space_dir, world, shard_rows=100_000)   # space_dir/xy.npy -> spatial.INDEX_FILES

``sort_by_cell``: each shard's keys ((Morton cell << 32) | row) sorted in a task; the keys of a seeded sample cut
them into groups of about ``shard_rows`` (at a cell's first key when whole cells are asked for). The index: each
group merged and sorted in a task (its codes, rows, points, and (row, position) pairs for the inverse); each shard
of rows gathers its positions in a task; the driver writes every file in order, a group or a shard at a time.
Every task's files are recorded in the parts folder's ledger (``distributed.Parts``), so a rerun after a killed
driver computes only what is missing; ``progress(done, total)`` after each task.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from isoscope.atlas.distributed import Parts, ProgressFn, concat_npy, load_npy, remote_task, report, shards
from isoscope.atlas.spatial import BITS, INDEX_FILES, block_codes, position_dtype
from isoscope.cache import NpyBlocks, atomic_save_npy
from isoscope.sampling import sample_indices

INDEX_SAMPLE_PER_GROUP = 64  # sampled keys per group of the index's sample sort: groups within ~25% of a shard
ROW_MASK = np.uint64(0xFFFFFFFF)


def _keys(block: np.ndarray, world, rows: np.ndarray, level: int = BITS) -> np.ndarray:
    """The sort keys (m,) uint64 of points ``block`` (m, 2) of rows ``rows`` (m,): (the Morton code of the point's
    cell at ``level``, ``BITS`` for the code itself) << 32 | row."""
    cells = block_codes(block, world) >> np.uint32(2 * (BITS - level))
    return (cells.astype(np.uint64) << np.uint64(32)) | np.asarray(rows).astype(np.uint64)


def _shard_keys(xy_path: str, world, start: int, stop: int, *, level: int, out: str) -> None:
    """Rows [start, stop) of the layout as sort keys (m,) uint64, sorted, into the .npy ``out``."""
    atomic_save_npy(Path(out), np.sort(_keys(load_npy(xy_path)[start:stop], world, np.arange(start, stop), level)))


@dataclass(frozen=True)
class CellSort:
    """A layout's points sorted by (cell, row) in groups: each shard's sorted keys (``key_paths``), the slice of each
    shard's keys in each group (``cuts`` (shards, groups + 1)) and each group's first sorted position (``starts``
    (groups + 1,))."""

    key_paths: list[str]
    cuts: np.ndarray
    starts: np.ndarray

    @property
    def groups(self) -> int:
        return self.cuts.shape[1] - 1


def group_keys(key_paths: list[str], cuts: np.ndarray, group: int) -> np.ndarray:
    """Group ``group``'s keys (g,) uint64, sorted: its slice of every shard's keys, merged (in a task)."""
    return np.sort(np.concatenate([load_npy(p)[cuts[i, group] : cuts[i, group + 1]] for i, p in enumerate(key_paths)]))


def sort_by_cell(
    parts: Parts,
    xy_path: Path,
    world,
    *,
    shard_rows: int,
    level: int = BITS,
    whole_cells: bool = False,
    done: Callable[[], None] | None = None,
) -> CellSort:
    """The layout ``xy_path`` sorted by (Morton cell at ``level``, row) as a ``CellSort``: every shard's keys sorted
    in a task (``keys-{i}.npy`` in ``parts``, resumable), cut into groups of about ``shard_rows`` by a seeded
    sample's keys (rounded down to their cell's first key when ``whole_cells``: no cell in two groups). The driver
    holds the sample (``INDEX_SAMPLE_PER_GROUP`` keys a group) and the cuts, and reads each shard's keys by binary
    search (memory-mapped)."""
    xy = load_npy(xy_path)
    n = len(xy)
    if n >= 2**32:
        raise ValueError(f"the sort keys hold row numbers below 2^32, not {n:,}")
    count = max(1, math.ceil(n / shard_rows))
    ranges = shards(n, shard_rows)
    names = [f"keys-{i}.npy" for i in range(len(ranges))]
    task = remote_task(_shard_keys)
    jobs = {
        f"keys-{i}": (
            [names[i]],
            lambda s=s, e=e, i=i: task.remote(str(xy_path), world, s, e, level=level, out=str(parts.path(names[i]))),
        )
        for i, (s, e) in enumerate(ranges)
    }
    parts.run(jobs, done=done)
    rows = sample_indices(n, INDEX_SAMPLE_PER_GROUP * count, 0)  # (s,)
    sample = np.sort(_keys(xy[rows], world, rows, level))  # (s,)
    splitters = sample[(np.arange(1, count) * len(sample)) // count]  # (g - 1,)
    if whole_cells:
        splitters = np.unique(splitters & ~ROW_MASK)
    key_paths = [str(parts.path(name)) for name in names]
    found = [np.searchsorted(load_npy(p), splitters) for p in key_paths]  # each (g - 1,): binary search on the map
    sizes = np.array([e - s for s, e in ranges])
    cuts = np.column_stack([np.zeros(len(ranges), np.int64), np.stack(found), sizes])  # (shards, g + 1)
    starts = np.concatenate([[0], np.cumsum((cuts[:, 1:] - cuts[:, :-1]).sum(axis=0))])  # (g + 1,)
    return CellSort(key_paths, cuts, starts)


def _index_group(xy_path: str, key_paths: list[str], cuts: np.ndarray, *, group: int, first: int, out: str) -> None:
    """Group ``group`` of the sorted index: codes (g,) uint32, rows (g,) and the points (g, 2) in sorted order, and
    the (row, position) pairs sorted by row (positions from ``first``), into ``out``-*.npy."""
    keys = group_keys(key_paths, cuts, group)
    kind = position_dtype(len(load_npy(xy_path)))
    rows = (keys & ROW_MASK).astype(np.int64)  # (g,)
    atomic_save_npy(Path(f"{out}-codes.npy"), (keys >> np.uint64(32)).astype(np.uint32))
    atomic_save_npy(Path(f"{out}-order.npy"), rows.astype(kind))
    atomic_save_npy(Path(f"{out}-xy.npy"), np.asarray(load_npy(xy_path)[rows], np.float32))  # (g, 2) in sorted order
    by_row = np.argsort(rows)
    atomic_save_npy(Path(f"{out}-rank-rows.npy"), rows[by_row])
    atomic_save_npy(Path(f"{out}-rank.npy"), (first + by_row).astype(kind))


def _rank_shard(groups: list[str], start: int, stop: int, *, kind, out: str) -> None:
    """The sorted position of each row of [start, stop) (m,), gathered from every group's (row, position) pairs,
    into the .npy ``out``."""
    rank = np.empty(stop - start, kind)
    for g in groups:
        rows = load_npy(f"{g}-rank-rows.npy")
        lo, hi = np.searchsorted(rows, [start, stop])
        rank[np.asarray(rows[lo:hi]) - start] = load_npy(f"{g}-rank.npy")[lo:hi]
    atomic_save_npy(Path(out), rank)


GROUP_FILES = ("codes", "order", "xy", "rank-rows", "rank")


def ray_index(space_dir: Path, world, *, shard_rows: int, progress: ProgressFn | None = None) -> None:
    """``spatial.write_index`` of ``space_dir``/xy.npy as Ray tasks, the same files byte for byte (module docstring),
    resumable through ``space_dir``/index.parts; ``progress(done, total)`` after each task (shards of keys, groups,
    shards of ranks)."""
    xy_path = space_dir / "xy.npy"
    n = len(load_npy(xy_path))
    parts = Parts(space_dir / "index.parts", [xy_path, space_dir / "clusters.json"])  # the layout and its world
    ranges = shards(n, shard_rows)
    count = max(1, math.ceil(n / shard_rows))
    total, steps = 2 * len(ranges) + count, [0]

    def done() -> None:
        steps[0] += 1
        report(progress, steps[0], total)

    cells = sort_by_cell(parts, xy_path, world, shard_rows=shard_rows, done=done)
    groups = [str(parts.path(f"group-{g}")) for g in range(cells.groups)]
    task = remote_task(_index_group)
    jobs = {
        f"group-{g}": (
            [f"group-{g}-{suffix}.npy" for suffix in GROUP_FILES],
            lambda g=g: task.remote(
                str(xy_path), cells.key_paths, cells.cuts, group=g, first=int(cells.starts[g]), out=groups[g]
            ),
        )
        for g in range(cells.groups)
    }
    parts.run(jobs, done=done)  # the keys follow from the parts' sources, as the groups do
    kind = position_dtype(n)
    paths = [space_dir / name for name in INDEX_FILES]  # codes, order, rank, xy
    for path, suffix, shape, dtype in (
        (paths[0], "codes", (n,), np.uint32),
        (paths[1], "order", (n,), kind),
        (paths[3], "xy", (n, 2), np.float32),
    ):
        with NpyBlocks(path, shape, dtype) as out:
            for g in groups:
                out.write(load_npy(f"{g}-{suffix}.npy"))
    task = remote_task(_rank_shard)
    ranks = [f"rank-{i}.npy" for i in range(len(ranges))]
    jobs = {
        f"rank-{i}": (
            [ranks[i]],
            lambda s=s, e=e, i=i: task.remote(groups, s, e, kind=kind, out=str(parts.path(ranks[i]))),
        )
        for i, (s, e) in enumerate(ranges)
    }
    parts.run(jobs, done=done)
    concat_npy([parts.path(r) for r in ranks], paths[2])
    shutil.rmtree(parts.folder, ignore_errors=True)
