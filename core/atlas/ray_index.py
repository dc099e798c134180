"""The spatial index on the ray engine: ``spatial.write_index``'s files byte for byte, built as a sample sort by
(Morton code, row) in Ray tasks, so no process sorts n points.

ray_index(space_dir, world, shard_rows=100_000)   # space_dir/xy.npy -> spatial.INDEX_FILES

Each shard's keys sorted in a task; the keys of a seeded sample cut them into groups of about ``shard_rows``; each
group merged and sorted in a task (its codes, rows, points, and (row, position) pairs for the inverse); each shard
of rows gathers its positions in a task; the driver writes every file in order, a group or a shard at a time.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np

from isoscope.atlas.distributed import load_npy, remote_task, shards
from isoscope.atlas.spatial import INDEX_FILES, block_codes, position_dtype
from isoscope.cache import NpyBlocks, atomic_save_npy
from isoscope.sampling import sample_indices

INDEX_SAMPLE_PER_GROUP = 64  # sampled keys per group of the index's sample sort: groups within ~25% of a shard


def _keys(block: np.ndarray, world, rows: np.ndarray) -> np.ndarray:
    """The sort keys (m,) uint64 of points ``block`` (m, 2) of rows ``rows`` (m,): Morton code << 32 | row."""

    return (block_codes(block, world).astype(np.uint64) << np.uint64(32)) | np.asarray(rows).astype(np.uint64)


def _index_keys(xy_path: str, world, start: int, stop: int, *, out: str, splitters: np.ndarray) -> np.ndarray:
    """Rows [start, stop) of the layout as sort keys (Morton code << 32 | row) (m,) uint64, sorted, into the .npy
    ``out``; returns where each of ``splitters`` falls among them (g - 1,)."""
    keys = np.sort(_keys(load_npy(xy_path)[start:stop], world, np.arange(start, stop)))  # (m,)
    atomic_save_npy(Path(out), keys)
    return np.searchsorted(keys, splitters)


def _index_group(xy_path: str, key_paths: list[str], cuts: np.ndarray, *, group: int, first: int, out: str) -> None:
    """Group ``group`` of the sorted index: from every shard's keys its slice ``cuts[shard, group]`` ..
    ``cuts[shard, group + 1]``, merged and sorted: codes (g,) uint32, rows (g,) and the points (g, 2) in that order,
    and the (row, position) pairs sorted by row (positions from ``first``), into ``out``-*.npy."""

    keys = np.sort(np.concatenate([load_npy(p)[cuts[i, group] : cuts[i, group + 1]] for i, p in enumerate(key_paths)]))
    kind = position_dtype(len(load_npy(xy_path)))
    rows = (keys & np.uint64(0xFFFFFFFF)).astype(np.int64)  # (g,)
    atomic_save_npy(Path(f"{out}-codes.npy"), (keys >> np.uint64(32)).astype(np.uint32))
    atomic_save_npy(Path(f"{out}-order.npy"), rows.astype(kind))
    atomic_save_npy(Path(f"{out}-xy.npy"), np.asarray(load_npy(xy_path)[rows], np.float32))  # (g, 2) in sorted order
    by_row = np.argsort(rows)
    atomic_save_npy(Path(f"{out}-rank-rows.npy"), rows[by_row])
    atomic_save_npy(Path(f"{out}-rank.npy"), (first + by_row).astype(kind))


def _index_rank(groups: list[str], start: int, stop: int, kind) -> np.ndarray:
    """The sorted position of each row of [start, stop) (m,), gathered from every group's (row, position) pairs."""
    rank = np.empty(stop - start, kind)
    for g in groups:
        rows = load_npy(f"{g}-rank-rows.npy")
        lo, hi = np.searchsorted(rows, [start, stop])
        rank[np.asarray(rows[lo:hi]) - start] = load_npy(f"{g}-rank.npy")[lo:hi]
    return rank


def ray_index(space_dir: Path, world, *, shard_rows: int) -> None:
    """``spatial.write_index`` of ``space_dir``/xy.npy as Ray tasks, the same files byte for byte: a sample sort by
    (Morton code, row). Each shard's keys sorted in a task; the keys of a seeded sample cut them into groups of
    about ``shard_rows``; each group merged and sorted in a task (its codes, rows, points, and (row, position)
    pairs for the inverse); each shard of rows gathers its positions in a task; the driver writes every file in
    order, a group or a shard at a time."""
    import ray

    xy_path = space_dir / "xy.npy"
    xy = load_npy(xy_path)
    n = len(xy)
    if n >= 2**32:
        raise ValueError(f"the index's sort keys hold row numbers below 2^32, not {n:,}")
    parts = space_dir / "index.parts"
    shutil.rmtree(parts, ignore_errors=True)
    parts.mkdir()
    count = max(1, math.ceil(n / shard_rows))
    rows = sample_indices(n, INDEX_SAMPLE_PER_GROUP * count, 0)  # (s,)
    sample = np.sort(_keys(xy[rows], world, rows))  # (s,)
    splitters = sample[(np.arange(1, count) * len(sample)) // count]  # (g - 1,)
    ranges = shards(n, shard_rows)
    key_paths = [str(parts / f"keys-{i}.npy") for i in range(len(ranges))]
    task = remote_task(_index_keys)
    found = ray.get(
        [
            task.remote(str(xy_path), world, s, e, out=p, splitters=splitters)
            for (s, e), p in zip(ranges, key_paths, strict=True)
        ]
    )
    sizes = np.array([e - s for s, e in ranges])
    cuts = np.column_stack([np.zeros(len(ranges), np.int64), np.stack(found), sizes])  # (shards, g + 1)
    starts = np.concatenate([[0], np.cumsum((cuts[:, 1:] - cuts[:, :-1]).sum(axis=0))])  # (g + 1,)
    groups = [str(parts / f"group-{g}") for g in range(count)]
    task = remote_task(_index_group)
    ray.get(
        [task.remote(str(xy_path), key_paths, cuts, group=g, first=int(starts[g]), out=groups[g]) for g in range(count)]
    )
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
    task = remote_task(_index_rank)
    with NpyBlocks(paths[2], (n,), kind) as out:
        for ref in [task.remote(groups, s, e, kind) for s, e in ranges]:
            out.write(ray.get(ref))
    shutil.rmtree(parts, ignore_errors=True)
