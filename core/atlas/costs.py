"""What an atlas's kNN graph and layout cost here: n^2 d (exact, up to ``isoscope.atlas.graph.EXACT_MAX_ROWS``
rows) or n log2 n (NN-descent) x the seconds of a graph of ``KNN_PROBE_ROWS`` low-rank probe vectors built both
ways (``measure_knn``); the layout is UMAP's cost (``isoscope.neighbours.costs``), full or the landmark layout's.

The value is ``isoscope.costs.Cost``. Light to import: numpy and the graph builders are imported inside the
functions.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

from isoscope.atlas.workers import PARALLEL_LAYOUT_ROWS
from isoscope.costs import FREE, Cost
from isoscope.neighbours.costs import UmapRate, umap_cost

KNN_PROBE_ROWS = 4_000
KNN_PROBE_RANK = 32


@dataclass(frozen=True)
class KnnRate:
    """The atlas kNN graph's measured cost here (``isoscope.atlas.graph``): seconds per row pair and dimension
    of an exact (flat) graph, and seconds per row and log2(rows) of an NN-descent graph."""

    exact: float
    approx: float


def knn_probe_vectors(n_rows: int, dim: int):
    """Seeded (n_rows, dim) float32 vectors near a ``KNN_PROBE_RANK``-dimensional subspace, as sentence
    embeddings are (an approximate graph of full-rank noise is slower to build than of any real space)."""
    import numpy as np

    rng = np.random.default_rng(0)
    rank = min(KNN_PROBE_RANK, dim)
    low = rng.standard_normal((n_rows, rank)) @ rng.standard_normal((rank, dim))  # (n, d) of rank r
    return (low + 0.1 * rng.standard_normal((n_rows, dim))).astype(np.float32)


EXACT_REPEATS = 3  # the exact probe is short: the median of three, not one sample of a shared machine's noise


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure_knn(dim: int, k: int = 16, *, approx: bool = True) -> KnnRate:
    """Time the graph of ``KNN_PROBE_ROWS`` probe vectors (``knn_probe_vectors``) of ``dim`` dimensions, once
    exact and once through NN-descent (``knn_graph_chunked``, the atlas's own builder; each warmed on a small
    graph first, so the probe times the graph, not numba's cache or the first call's set-up). ``approx=False``
    leaves NN-descent out (its rate is then NaN): for graphs of up to ``EXACT_MAX_ROWS`` rows, all exact."""
    from isoscope.atlas.graph import knn_graph_chunked

    n = KNN_PROBE_ROWS
    x = knn_probe_vectors(n, dim)  # (n, d)
    knn_graph_chunked(x[:200], k, exact_max_rows=200)  # warm (issue 41: a cold first call timed 2.2x the run)
    exact = statistics.median(_timed(lambda: knn_graph_chunked(x, k, exact_max_rows=n)) for _ in range(EXACT_REPEATS))
    if not approx:
        return KnnRate(max(exact, 1e-6) / (n * n * dim), math.nan)
    knn_graph_chunked(x[:200], k, exact_max_rows=0)
    start = time.perf_counter()
    knn_graph_chunked(x, k, exact_max_rows=0)
    seconds = time.perf_counter() - start
    return KnnRate(max(exact, 1e-6) / (n * n * dim), max(seconds, 1e-6) / (n * math.log2(n)))


def needs_approx(n_rows: int, landmarks: int) -> bool:
    """Whether a build of ``n_rows`` rows makes an NN-descent graph (its own, or its landmarks')."""
    from isoscope.atlas.graph import graph_kind

    sample = landmarks if 0 < landmarks < n_rows else n_rows
    return graph_kind(n_rows) != "flat" or graph_kind(sample) != "flat"


def knn_cost(n_rows: int, dim: int, *, k: int, rate: KnnRate) -> Cost:
    """The kNN graph of ``n_rows`` rows (``k`` neighbours, itself included) as the atlas builds it: exact up to
    ``isoscope.atlas.graph.EXACT_MAX_ROWS`` rows (n^2 d work), NN-descent above (n log n); it writes ids and
    distances."""
    from isoscope.atlas.graph import graph_kind

    if n_rows < 2:
        return FREE
    if graph_kind(n_rows) == "flat":
        seconds = n_rows * n_rows * dim * rate.exact
    else:
        seconds = n_rows * math.log2(n_rows) * rate.approx
    return Cost(seconds, n_rows * k * 8)  # int32 ids + float32 distances


def layout_cost(n_rows: int, dim: int, *, k: int, landmarks: int, umap: UmapRate, knn: KnnRate) -> Cost:
    """An atlas UMAP layout of ``n_rows`` rows (``isoscope.atlas.layout.layout``): full UMAP, or above
    ``landmarks`` rows the landmark layout: its sample's own kNN graph and UMAP, then ``REFINE_EPOCHS`` epochs
    over every row (placing the rest from the graph is a few passes of arithmetic: not counted)."""
    from isoscope.atlas.layout import REFINE_EPOCHS

    if 0 < landmarks < n_rows:
        sample = knn_cost(landmarks, dim, k=k, rate=knn) + umap_cost(landmarks, umap)
        return Cost(sample.seconds + umap_cost(n_rows, umap, epochs=REFINE_EPOCHS).seconds, n_rows * 8)
    return Cost(umap_cost(n_rows, umap).seconds, n_rows * 8)  # (n, 2) float32


def graph_layout_cost(
    n_rows: int,
    dim: int,
    *,
    k: int,
    spaces: int,
    landmarks: int,
    graph: bool,
    knn: KnnRate | None,
    umap: UmapRate | None,
) -> Cost:
    """A one-machine build's kNN graphs (``graph``: one a space, ``k`` neighbours, itself included) and UMAP
    layouts (``umap``: its rate; None for another layout, or when no rate is known: left out); from
    ``isoscope.atlas.workers.PARALLEL_LAYOUT_ROWS`` rows the spaces' layouts run side by side: one's time."""
    cost = FREE
    if n_rows < 2:
        return cost
    if graph and knn is not None:
        one = knn_cost(n_rows, dim, k=k, rate=knn)
        cost += Cost(spaces * one.seconds, spaces * one.disk_bytes)
    if umap is not None and knn is not None:
        one = layout_cost(n_rows, dim, k=k, landmarks=landmarks, umap=umap, knn=knn)
        cost += Cost(one.seconds * (1 if n_rows >= PARALLEL_LAYOUT_ROWS else spaces), one.disk_bytes * spaces)
    return cost


# ---------------------------------------------------------------- the build's plan and its memory

GIB = 2**30
PEAK_BASE_BYTES = GIB // 2  # the interpreter with numpy, torch, umap and faiss imported
# The one-machine build's peak above the base: NN-descent's unit copy of the vectors (n x d x 4 bytes) and, per row
# and space, (k + 1) graph edges at EDGE_BYTES each (NN-descent's heaps, UMAP's fuzzy graph in each of the two
# side-by-side layout workers). EDGE_BYTES is fitted to the measured peak of 1,000,000 rows x 384, k 15, two
# spaces: 6.44 GiB (bench/RESULTS.md, "atlas (1M on a quiet machine, issue 27)").
EDGE_BYTES = 151
# A build without a graph (a raw-only PCA map) holds, per row, the texts and the layout's arrays instead: fitted to
# the measured peak of 10,000,000 rows x 8, PCA, raw only: 4.47 GiB (bench/RESULTS.md, "atlas serving").
NO_GRAPH_ROW_BYTES = 394
# The ray engine's core-seconds per row of each stage, fitted to bench/atlas_ray.py at 3,000,000 x 384 on a 2-node
# local cluster (bench/RESULTS.md, 2026-12-05: graph 721 s, layout 404 s of which the landmarks ~60 s). The graph's
# per row cost grows with d and sqrt(n): IVF lists of about sqrt(n) / 4 rows each, a fixed number probed.
RAY_GRAPH_CORE_S = 7.2e-10  # per row, per dimension, per sqrt(rows)
RAY_LAYOUT_CORE_S = 2.3e-4  # per row: placement and the refinement epochs
LANDMARK_S_PER_ROW = 6.0e-4  # the driver's graph and UMAP of the landmark sample
RAY_STAGE_OVERHEAD_S = 5.0  # task start-up, numba's kernels loaded in each worker, per stage
# The one-machine engine's wall seconds per row and space of graph and layout on 2 cores: the same 1M run's
# (64.1 + 72.5 + 359.9) s for two spaces.
LOCAL_S_PER_ROW = 2.5e-4


def _row_bytes(dim: int, k: int, spaces: int, graph: bool) -> int:
    """The one-machine build's peak bytes per row (``graph``: the build makes a kNN graph)."""
    return 4 * dim + ((k + 1) * EDGE_BYTES * spaces if graph else NO_GRAPH_ROW_BYTES)


def one_machine_peak(n_rows: int, dim: int, *, k: int, spaces: int, graph: bool = True) -> int:
    """The one-machine build's estimated peak resident bytes (``EDGE_BYTES``, ``NO_GRAPH_ROW_BYTES``: fitted to
    measured runs)."""
    return int(PEAK_BASE_BYTES + n_rows * _row_bytes(dim, k, spaces, graph))


def one_machine_rows(available: int, dim: int, *, k: int, spaces: int, graph: bool = True) -> int:
    """The most rows whose one-machine build fits in ``available`` bytes more than this process holds now
    (``one_machine_peak`` above its base)."""
    return max(0, int(available // _row_bytes(dim, k, spaces, graph)))


def available_memory() -> int:
    """Bytes this machine can give a build now (psutil's available memory)."""
    import psutil

    return int(psutil.virtual_memory().available)


@dataclass(frozen=True)
class AtlasPlan:
    """What a build will do and hold before it starts: the engine, its shards, the memory of each task and of the
    driver, the estimated seconds. ``lines()`` is what ``isoscope atlas`` prints."""

    engine: str
    n: int
    dim: int
    spaces: int
    shards: int
    shard_rows: int
    workers: int
    task_bytes: int
    driver_bytes: int
    seconds: float
    holds_rows: int = 0  # the one-machine engine: the rows it can hold in the memory available now
    driver_bounded: bool = True  # the ray engine's driver holds a fixed sample of landmarks, not every row

    def lines(self) -> list[str]:
        from isoscope.costs import duration_text, size_text

        head = f"plan: {self.n:,} rows x {self.dim} dims, {self.spaces} space(s), engine {self.engine}"
        if self.engine == "local":
            return [
                head,
                f"  one process: peak about {size_text(self.driver_bytes)}; this machine holds about "
                f"{self.holds_rows:,} rows now",
                f"  about {duration_text(self.seconds)} (graph and layout; embedding not included)",
            ]
        return [
            head,
            f"  {self.shards} shard(s) of {self.shard_rows:,} rows on {self.workers} worker CPU(s); each task about "
            f"{size_text(self.task_bytes)}, the driver at most {size_text(self.driver_bytes)}"
            + (" whatever the rows" if self.driver_bounded else " (UMAP of every row on the driver)"),
            f"  about {duration_text(self.seconds)} (graph and layout; embedding not included)",
        ]

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return asdict(self)


# The ray engine's driver (issue 54.1): its interpreter with numpy, pyarrow, pandas, FAISS, umap's compiled kernels and
# Ray's client: 0.75 GiB, the driver's anonymous peak at 50,000 and 200,000 rows (bench/RESULTS.md, 2026-12-05: 0.94
# and 1.02 GiB) less the coarse k-means's sample and its unit copy it then held (57,216 and 114,432 rows x 384 x 8).
RAY_DRIVER_BASE_BYTES = 3 * GIB // 4


def ray_driver_bytes(dim: int, *, k: int, landmarks: int, shard_rows: int) -> int:
    """The ray engine's driver peak whatever the rows (beyond ``landmarks``): ``RAY_DRIVER_BASE_BYTES`` and the most
    one stage holds at once: the landmarks' own graph and UMAP (landmarks x (4 d + (k + 1) ``EDGE_BYTES``)), the
    coarse k-means (at most ``ray_graph.MAX_LISTS`` centroids, their float64 sums and one task's: lists x d x 20
    bytes), or a shard on its way to disk (graph rows, layout snapshots: shard_rows x ((k + 1) x 12 + 16) bytes).
    Everything else the driver does is a fixed sample (the recall's 1,000 queries, the cluster centres' 200,000
    rows, the spacing's 50,000) or a memory map's pages."""
    from isoscope.atlas.ray_graph import MAX_LISTS

    stages = (
        landmarks * (4 * dim + (k + 1) * EDGE_BYTES),
        MAX_LISTS * dim * 20,
        shard_rows * ((k + 1) * 12 + 16),
    )
    return int(RAY_DRIVER_BASE_BYTES + max(stages))


def ray_task_bytes(shard_rows: int, dim: int, *, k: int) -> int:
    """One Ray task's peak: its shard's unit vectors (rows x d x 4) and graph rows ((k + 1) x 8 bytes each, and the
    search's candidates as many again). Nothing grows with n: the layout's snapshots, the vectors and the lists are
    files the task maps (pages of the page cache, not its own memory)."""
    return int(PEAK_BASE_BYTES + shard_rows * (4 * dim + 2 * (k + 1) * 8))


def atlas_plan(
    n_rows: int,
    dim: int,
    *,
    k: int,
    spaces: int,
    landmarks: int,
    engine: str,
    shard_rows: int,
    workers: int,
    graph: bool = True,
    knn: KnnRate | None = None,
    umap: UmapRate | None = None,
) -> AtlasPlan:
    """The plan of an atlas build of ``n_rows`` x ``dim`` (see ``AtlasPlan``); ``workers``: the CPUs Ray gives
    tasks (the ray engine) or 1; ``graph``: the build makes a kNN graph (not a raw-only PCA map). The one-machine
    engine's seconds are ``graph_layout_cost`` at the rates measured here (``knn``: ``measure_knn``, ``umap``:
    ``isoscope.neighbours.costs.measure_umap``; None for a layout that is not UMAP) when ``knn`` is given, else
    ``LOCAL_S_PER_ROW`` (issue 50: fitted to a million rows, it priced 300 rows' graph and layouts at 0.15 s, 14 s
    taken)."""
    if engine == "local":
        peak = one_machine_peak(n_rows, dim, k=k, spaces=spaces, graph=graph)
        holds = one_machine_rows(available_memory(), dim, k=k, spaces=spaces, graph=graph)
        seconds = spaces * n_rows * LOCAL_S_PER_ROW
        if knn is not None or (not graph and umap is None):  # measured rates; or no graph, no UMAP: nothing to time
            seconds = graph_layout_cost(
                n_rows, dim, k=k + 1, spaces=spaces, landmarks=landmarks, graph=graph, knn=knn, umap=umap
            ).seconds
        return AtlasPlan(engine, n_rows, dim, spaces, 1, n_rows, 1, peak, peak, seconds, holds)
    count = max(1, math.ceil(n_rows / shard_rows))
    rows = min(shard_rows, n_rows)
    sample = min(landmarks, n_rows) if landmarks > 0 else n_rows
    per_row = RAY_GRAPH_CORE_S * dim * math.sqrt(n_rows) + RAY_LAYOUT_CORE_S
    seconds = spaces * (n_rows * per_row / max(1, workers) + sample * LANDMARK_S_PER_ROW + 2 * RAY_STAGE_OVERHEAD_S)
    driver = ray_driver_bytes(dim, k=k, landmarks=sample, shard_rows=rows)  # full UMAP on the driver: sample = n
    task = ray_task_bytes(rows, dim, k=k)
    bounded = 0 < landmarks < n_rows
    return AtlasPlan(engine, n_rows, dim, spaces, count, rows, workers, task, driver, seconds, driver_bounded=bounded)


def check_fits(n_rows: int, dim: int, *, k: int, spaces: int, available: int | None = None, graph: bool = True) -> None:
    """InputError (one line) when the one-machine build's estimated peak above this process's base does not fit in
    ``available`` bytes (default: the memory available now)."""
    from isoscope.costs import size_text
    from isoscope.errors import InputError

    available = available_memory() if available is None else available
    peak = one_machine_peak(n_rows, dim, k=k, spaces=spaces, graph=graph)
    if peak - PEAK_BASE_BYTES > available:
        holds = one_machine_rows(available, dim, k=k, spaces=spaces, graph=graph)
        raise InputError(
            f"{n_rows:,} rows need about {size_text(peak)} on one machine and {size_text(available)} is available "
            f"(room for about {holds:,} rows); sample the corpus or use --engine ray"
        )
