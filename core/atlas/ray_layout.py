"""The layout on the ray engine: UMAP on the landmark sample on the driver, every other row placed from the graph
and refined in shard tasks, into ``xy.npy`` (n, 2) float32.

ray_layout(vectors_path, space_dir, config)      # the graph files in space_dir; config: the AtlasConfig

UMAP on the landmark sample on the driver (``layout.landmark_anchors``, as the one-machine landmark layout), every
other row placed from the graph in passes of shard tasks (``layout.place_rows``; landmarks fixed), rows no landmark
reaches placed by their nearest landmarks (``layout.place_by_vectors``), then ``REFINE_ROUNDS`` rounds of UMAP's
own optimiser per shard in tasks against a snapshot of the whole layout (``umap.layouts.optimize_layout_euclidean``
with ``move_other=False``: how ``UMAP.transform`` places new points; landmarks fixed). Without a landmark sample
smaller than the corpus the driver runs UMAP on every row. Resumable: the anchors, the placement and each round are
recorded in the parts folder's ledger (``distributed.Parts``).

Memory: the driver holds the landmark sample and a shard at a time: each placement pass reads a snapshot of the
layout on disk (``{pass}-xy.npy``, ``{pass}-placed.npy``: tasks read their rows' neighbours from it,
memory-mapped) and the driver writes the next one shard by shard; a refinement task maps the layout's snapshot file
copy-on-write and never writes it (its pages are the file's, not the task's), and the driver writes the refined
shards to disk in row order.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from isoscope.atlas.distributed import Parts, ProgressFn, load_npy, remote_task, report, shards
from isoscope.atlas.layout import (
    PLACE_PASSES,
    REFINE_EPOCHS,
    REFINE_LEARNING_RATE,
    UMAP_MIN_DIST,
    graph_weights,
    landmark_anchors,
    place_by_vectors,
    place_rows,
    umap_layout,
)
from isoscope.atlas.ray_index import ROW_MASK, group_keys, sort_by_cell
from isoscope.atlas.spread import SpreadPlan, spread_cells, spread_layout, spread_plan
from isoscope.cache import NpyBlocks, atomic_save_npy

log = logging.getLogger(__name__)

REFINE_ROUNDS = 2  # each round REFINE_EPOCHS / REFINE_ROUNDS epochs against a fresh snapshot of the layout


def _place_shard(ids_path: str, dist_path: str, start: int, stop: int, *, xy_path: str, placed_path: str):
    """One placement pass over rows [start, stop) against the layout so far (``xy_path`` (n, 2), ``placed_path``
    (n,) bool, memory-mapped: the task reads its rows' neighbours): (global rows placed now, their positions (r, 2))."""

    xy, placed = load_npy(xy_path), load_npy(placed_path)
    rows = start + np.flatnonzero(~placed[start:stop])
    if len(rows) == 0:
        return rows, np.zeros((0, 2), np.float32)
    ids, dist = load_npy(ids_path), load_npy(dist_path)
    nb = np.asarray(ids[rows][:, 1:], np.int64)  # (r, k-1)
    ok, pos = place_rows(nb, graph_weights(np.asarray(dist[rows])), xy=xy, placed=placed)
    return rows[ok], pos


def _refine_shard(
    ids_path: str, dist_path: str, start: int, stop: int, *, snapshot: str, fixed: np.ndarray, epochs: int, seed: int
) -> np.ndarray:
    """Rows [start, stop) after ``epochs`` epochs of UMAP's optimiser against the layout in the .npy ``snapshot``
    (n, 2), the ``fixed`` rows (sorted row numbers: the landmarks) kept: their fuzzy memberships (UMAP's
    smooth_knn_dist) as directed edges to their neighbours, negative samples from every row, the other rows not
    moved (``move_other=False``). The snapshot is memory-mapped copy-on-write: writable, as UMAP's numba kernels
    require, but never written (the other rows do not move), so its pages stay the file's: a task's memory is its
    shard's, whatever n."""
    from isoscope.neighbours.umap_jit import import_umap

    import_umap()
    from umap.layouts import optimize_layout_euclidean
    from umap.umap_ import compute_membership_strengths, find_ab_params, make_epochs_per_sample, smooth_knn_dist

    xy = np.asarray(np.load(snapshot, mmap_mode="c", allow_pickle=False))  # (n, 2)
    head_xy = np.array(xy[start:stop], np.float32)  # (m, 2)
    lo, hi = np.searchsorted(fixed, [start, stop])
    still = np.zeros(stop - start, bool)
    still[fixed[lo:hi] - start] = True
    move = np.flatnonzero(~still)  # local rows that move
    if len(move) == 0 or epochs < 1:
        return head_xy
    ids = np.asarray(load_npy(ids_path)[start:stop][move], np.int32)  # (r, k)
    dist = np.asarray(load_npy(dist_path)[start:stop][move], np.float32)
    sigmas, rhos = smooth_knn_dist(dist, float(ids.shape[1]), local_connectivity=1.0)
    # memberships of the directed edges (local row -> global neighbour); a row's own column weighs 0
    rows_, cols, vals, _ = compute_membership_strengths(ids, dist, sigmas, rhos, bipartite=True)
    keep = (vals > vals.max() / epochs) & (ids.reshape(-1) != (start + move).repeat(ids.shape[1]))
    head = move[rows_[keep]].astype(np.int32)  # into head_xy
    tail = cols[keep].astype(np.int32)  # into xy
    a, b = find_ab_params(1.0, UMAP_MIN_DIST)
    rng_state = np.random.RandomState(seed + start).randint(np.iinfo(np.int32).min + 1, np.iinfo(np.int32).max - 1, 3)
    return optimize_layout_euclidean(
        head_xy,
        xy,
        head,
        tail,
        epochs,
        len(xy),
        make_epochs_per_sample(vals[keep], epochs),
        a,
        b,
        rng_state.astype(np.int64),
        initial_alpha=REFINE_LEARNING_RATE,
        move_other=False,
    )


def _snapshot(parts: Parts, name: str, n: int, blocks: Iterator[tuple[np.ndarray, np.ndarray]]) -> None:
    """The layout so far as two files of ``parts``: ``{name}-xy.npy`` (n, 2) float32 and ``{name}-placed.npy`` (n,)
    bool, written from ``blocks``: (xy, placed) of consecutive rows, in row order."""
    with (
        NpyBlocks(parts.path(f"{name}-xy.npy"), (n, 2), np.float32) as xy,
        NpyBlocks(parts.path(f"{name}-placed.npy"), (n,), bool) as placed,
    ):
        for a, b in blocks:
            xy.write(a)
            placed.write(b)


def _anchored(ranges, rows: np.ndarray, anchor_xy: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The first snapshot's blocks: the landmarks ``rows`` (sorted) at ``anchor_xy``, nothing else placed."""
    for start, stop in ranges:
        xy, placed = np.zeros((stop - start, 2), np.float32), np.zeros(stop - start, bool)
        lo, hi = np.searchsorted(rows, [start, stop])
        xy[rows[lo:hi] - start], placed[rows[lo:hi] - start] = anchor_xy[lo:hi], True
        yield xy, placed


def _passed(old: tuple[np.ndarray, np.ndarray], ranges, refs, counts: list[int]):
    """The next snapshot's blocks: the ``old`` one's (xy, placed) with the rows each shard's task placed (``refs``, in
    row order, fetched one at a time); how many each placed goes to ``counts``."""
    import ray

    for (start, stop), ref in zip(ranges, refs, strict=True):
        got, pos = ray.get(ref)  # the shard's rows placed in this pass, their positions
        xy, placed = np.array(old[0][start:stop]), np.array(old[1][start:stop])
        xy[got - start], placed[got - start] = pos, True
        counts.append(len(got))
        yield xy, placed


def _place(
    parts: Parts, graph: tuple[Path, Path], ranges, *, rows: np.ndarray, anchor_xy: np.ndarray, vectors: np.ndarray
) -> None:
    """Every row placed (``placed.npy`` (n, 2) in ``parts``): the landmarks ``rows`` at ``anchor_xy``, then passes of
    shard tasks, each placing the rows with a placed neighbour from a snapshot of the layout on disk (Jacobi, as
    ``layout.place_from_graph``), then the rows no landmark reaches by their nearest landmarks. ``graph``: the
    paths of knn_ids.npy and knn_dist.npy. The driver holds a shard at a time, the tasks their rows and the
    neighbours they read from the memory-mapped snapshot."""

    ids_path, dist_path = graph

    n = ranges[-1][1]
    current = "pass-a"  # the snapshot the tasks read; the next is written beside it, then read in turn
    _snapshot(parts, current, n, _anchored(ranges, rows, anchor_xy))
    left = n - len(rows)  # rows not placed yet
    task = remote_task(_place_shard)
    for _ in range(PLACE_PASSES):
        if left == 0:
            break
        read = [str(parts.path(f"{current}-xy.npy")), str(parts.path(f"{current}-placed.npy"))]
        refs = [
            task.remote(str(ids_path), str(dist_path), s, e, xy_path=read[0], placed_path=read[1]) for s, e in ranges
        ]
        counts: list[int] = []
        current = "pass-b" if current == "pass-a" else "pass-a"
        _snapshot(parts, current, n, _passed((load_npy(read[0]), load_npy(read[1])), ranges, refs, counts))
        left -= sum(counts)
        if sum(counts) == 0:
            break
    xy, placed = load_npy(parts.path(f"{current}-xy.npy")), load_npy(parts.path(f"{current}-placed.npy"))
    k = int(load_npy(ids_path).shape[1])
    count = 0
    with NpyBlocks(parts.path("placed.npy"), (n, 2), np.float32) as out:
        for s, e in ranges:  # a shard at a time, its islands too: nothing of size n on the driver
            block = np.array(xy[s:e])
            islands = s + np.flatnonzero(~placed[s:e])  # (r,) the shard's rows no landmark reaches
            if len(islands):
                block[islands - s] = place_by_vectors(vectors, islands, anchors=rows, anchor_xy=anchor_xy, k=k - 1)
                count += len(islands)
            out.write(block)
    if count:
        log.info("%d rows reach no landmark in the graph; placed by their nearest landmarks", count)
    for name in ("pass-a", "pass-b"):
        for suffix in ("-xy.npy", "-placed.npy"):
            parts.path(name + suffix).unlink(missing_ok=True)


def ray_layout(vectors_path: Path, space_dir: Path, config, *, progress: ProgressFn | None = None) -> None:
    """The UMAP layout of the space in ``space_dir`` (its graph files there) into ``xy.npy`` (n, 2) float32:
    landmarks on the driver, placement and refinement of the rest in shard tasks (module docstring); ``config``
    (the AtlasConfig) gives the seed, the landmarks and the rows per shard."""
    seed, landmarks, shard_rows = config.seed, config.landmarks, config.shard_rows
    import ray

    vectors = load_npy(vectors_path)
    ids_path, dist_path = space_dir / "knn_ids.npy", space_dir / "knn_dist.npy"
    ids = load_npy(ids_path)
    n, k = ids.shape
    if not 0 < landmarks < n:  # the whole corpus is the sample: UMAP on the driver
        xy = umap_layout(vectors, (np.asarray(ids), np.asarray(load_npy(dist_path))), seed=seed)
        atomic_save_npy(space_dir / "xy.npy", spread_layout(xy))
        return
    parts = Parts(space_dir / "layout.parts", [vectors_path, ids_path, dist_path])
    if not parts.done("anchors", ["anchors.npy", "anchor_xy.npy"]):
        rows, anchor_xy = landmark_anchors(vectors, k=k, seed=seed, landmarks=landmarks)
        atomic_save_npy(parts.path("anchors.npy"), rows)
        atomic_save_npy(parts.path("anchor_xy.npy"), anchor_xy)
        parts.record("anchors", ["anchors.npy", "anchor_xy.npy"])
    rows, anchor_xy = load_npy(parts.path("anchors.npy"), False), load_npy(parts.path("anchor_xy.npy"), False)
    order = np.argsort(rows, kind="stable")  # sorted (as sampled): the shards find theirs by binary search
    rows, anchor_xy = rows[order], anchor_xy[order]
    report(progress, 1, 4)
    ranges = shards(n, shard_rows)
    if not parts.done("placed", ["placed.npy"], [parts.path("anchor_xy.npy")]):
        _place(parts, (ids_path, dist_path), ranges, rows=rows, anchor_xy=anchor_xy, vectors=vectors)
        parts.record("placed", ["placed.npy"], [parts.path("anchor_xy.npy")])
    report(progress, 2, 4)
    fixed_ref = ray.put(rows)  # the landmarks (sorted), kept where UMAP put them
    last = "placed.npy"
    task = remote_task(_refine_shard)
    for r in range(REFINE_ROUNDS):
        name = f"refined-{r}.npy"
        if not parts.done(f"refined-{r}", [name], [parts.path(last)]):
            snapshot = str(parts.path(last))  # every task maps the file: nobody holds the layout
            epochs = REFINE_EPOCHS // REFINE_ROUNDS
            refs = [
                task.remote(
                    str(ids_path),
                    str(dist_path),
                    s,
                    e,
                    snapshot=snapshot,
                    fixed=fixed_ref,
                    epochs=epochs,
                    seed=seed + r,
                )
                for s, e in ranges
            ]
            with NpyBlocks(parts.path(name), (n, 2), np.float32) as out:
                for ref in refs:  # in row order, one shard in memory at a time
                    out.write(ray.get(ref))
            parts.record(f"refined-{r}", [name], [parts.path(last)])
        last = name
        report(progress, 3, 4)
    if not parts.done("spread", ["spread.npy"], [parts.path(last)]):
        _spread(parts, parts.path(last), shard_rows=shard_rows)
        parts.record("spread", ["spread.npy"], [parts.path(last)])
    os.replace(parts.path("spread.npy"), space_dir / "xy.npy")
    shutil.rmtree(parts.folder, ignore_errors=True)
    report(progress, 4, 4)


# ---------------------------------------------------------------- the deep spread


def _spread_group(xy_path: str, key_paths: list[str], cuts: np.ndarray, *, group: int, plan: SpreadPlan, out: str):
    """Group ``group`` of the layout sorted by cell (whole cells), spread (``spread.spread_cells``): its rows (g,)
    ascending and their new places (g, 2) float32, into ``out``-rows.npy and ``out``-xy.npy."""
    keys = group_keys(key_paths, cuts, group)  # (g,) by (cell, row)
    rows = (keys & ROW_MASK).astype(np.int64)
    moved = spread_cells(np.asarray(load_npy(xy_path)[rows]), rows, keys >> np.uint64(32), plan)  # (g, 2)
    by_row = np.argsort(rows)
    atomic_save_npy(Path(f"{out}-rows.npy"), rows[by_row])
    atomic_save_npy(Path(f"{out}-xy.npy"), moved[by_row])


def _spread_rows(groups: list[str], start: int, stop: int) -> np.ndarray:
    """The spread places (m, 2) float32 of rows [start, stop), gathered from every group's (row, place) pairs."""
    xy = np.empty((stop - start, 2), np.float32)
    for g in groups:
        rows = load_npy(f"{g}-rows.npy")
        lo, hi = np.searchsorted(rows, [start, stop])
        xy[np.asarray(rows[lo:hi]) - start] = load_npy(f"{g}-xy.npy")[lo:hi]
    return xy


def _spread(parts: Parts, xy_path: Path, *, shard_rows: int) -> None:
    """``spread.npy`` in ``parts``: the layout ``xy_path`` with every cell spread (``isoscope.atlas.spread``), in
    tasks: the points sorted by cell (``ray_index.sort_by_cell``, whole cells), each group of cells spread in a
    task, each shard of rows gathered in a task and written here in row order. The same places as
    ``spread.spread_layout`` in one process."""
    import ray

    plan = spread_plan(load_npy(xy_path))
    sub = Parts(parts.path("spread.parts"), [xy_path])
    n = len(load_npy(xy_path))
    cells = sort_by_cell(sub, xy_path, plan.world, shard_rows=shard_rows, level=plan.cell_level, whole_cells=True)
    groups = [str(sub.path(f"group-{g}")) for g in range(cells.groups)]
    task = remote_task(_spread_group)
    jobs = {
        f"group-{g}": (
            [f"group-{g}-rows.npy", f"group-{g}-xy.npy"],
            lambda g=g: task.remote(str(xy_path), cells.key_paths, cells.cuts, group=g, plan=plan, out=groups[g]),
        )
        for g in range(cells.groups)
    }
    sub.run(jobs)
    task = remote_task(_spread_rows)
    with NpyBlocks(parts.path("spread.npy"), (n, 2), np.float32) as out:
        for ref in [task.remote(groups, s, e) for s, e in shards(n, shard_rows)]:  # one shard in memory at a time
            out.write(ray.get(ref))
    shutil.rmtree(sub.folder, ignore_errors=True)
