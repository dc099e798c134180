"""The atlas stages as Ray work (``isoscope atlas --engine ray``): the same folder and ledger, built shard by shard.

with ray_session("local"):                       # or "auto", "ray://head:10001"; an initialised Ray is used as is
    ivf_graph(vectors_path, space_dir, k=16, seed=0, shard_rows=100_000)   # knn_ids.npy, knn_dist.npy, knn_recall.json
    ray_layout(vectors_path, space_dir, seed=0, landmarks=100_000, shard_rows=100_000)   # xy.npy

- kNN graph: FAISS IVF-Flat by inner product on unit rows (cosine, as ``isoscope.atlas.graph``). The coarse
  quantiser is trained on the driver on a seeded sample (``isoscope.sampling.sample_indices``) of
  ``TRAIN_PER_LIST`` rows per list (``KMEANS_ITERATIONS`` of k-means); each shard of rows is added to a copy of the
  trained index in a task (one index file per shard), the shard files are merged into one on-disk index
  (``faiss.contrib.ondisk.merge_ondisk``: its inverted lists are memory-mapped, never loaded whole), then each shard
  of rows is searched in a task, list-major (``scan_lists``: the shard's queries grouped by the lists they probe,
  each list's rows multiplied with its queries in one matrix product; the answer of FAISS's own search at that
  ``nprobe``, about 12x faster at 200k rows). IVF-Flat keeps the unit float32 rows, so every candidate's score is
  its exact cosine (the re-rank is exact); column 0 is the row itself (``graph._self_first``). ``nprobe`` is chosen
  on a seeded sample of ``RECALL_QUERIES`` rows whose exact neighbours are found shard by shard in tasks: the
  smallest power of two from ``NPROBE_START`` that reaches ``TARGET_RECALL`` (at most ``NPROBE_MAX``: data with no
  structure at the lists' scale gets a graph of lower recall, logged and recorded, rather than a search near brute
  force); the graph's recall@k on that sample is written to ``knn_recall.json``.
- Layout: UMAP on the landmark sample on the driver (``layout.landmark_anchors``, as the one-machine landmark
  layout), every other row placed from the graph in passes of shard tasks (``layout.place_rows``; landmarks fixed),
  rows no landmark reaches placed by their nearest landmarks (``layout.place_by_vectors``), then ``REFINE_ROUNDS``
  rounds of UMAP's own optimiser per shard in tasks against a snapshot of the whole layout
  (``umap.layouts.optimize_layout_euclidean`` with ``move_other=False``: how ``UMAP.transform`` places new points;
  landmarks fixed). Without a landmark sample smaller than the corpus the driver runs UMAP on every row.
- Clusters and extras (``map_rows``: the one-machine engine runs the same functions on blocks of rows in turn):
  each shard's bounds and points per grid cell in tasks, summed here into ``density.ClusterMap``, then each
  shard's density and labels at every level in tasks, written here in row order (``cache.NpyBlocks``); the label
  words counted in tasks over row groups of ``points.parquet`` (``ray_tally``), the norms and the neighbour overlap
  per shard.
- Spatial index (``ray_index``): a sample sort by (Morton code, row): each shard's keys sorted in a task, cut by
  the keys of a seeded sample into groups of about a shard, each group merged in a task, each shard's inverse
  gathered in a task; the files are ``spatial.write_index``'s byte for byte.
- Embedding: ``isoscope.encode.shards.embed_with_ray`` (Ray Data actors, a GPU each on CUDA), its shards copied
  into ``vectors.npy``.

Every shard's files are written atomically and recorded in the parts folder's own ledger
(``isoscope.atlas.folder.Ledger`` rooted there), so a rerun after a killed worker or driver computes only the
shards missing; the parts folder goes when the stage's files are complete. Memory: a task holds its shard (rows x
d x 4 bytes of vectors, rows x k x 8 of graph) and the pages it reads of the memory-mapped lists; the driver holds
the landmark sample and a shard at a time: each placement pass reads a snapshot of the layout on disk
(``{pass}-xy.npy``, ``{pass}-placed.npy``: tasks read their rows' neighbours from it, memory-mapped) and the driver
writes the next one shard by shard; a refinement task maps the layout's snapshot file copy-on-write and never
writes it (its pages are the file's, not the task's), and the driver writes the refined shards to disk in row
order; the clusters' tasks hold a shard of xy. The folder must be
on a filesystem every node sees (tasks read ``vectors.npy`` and write their shards there).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import math
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from isoscope.atlas.folder import Ledger
from isoscope.cache import NpyBlocks, atomic_save_npy, atomic_write_bytes

log = logging.getLogger(__name__)

SHARD_ROWS = 100_000
MIN_TRAIN_PER_LIST = 39  # FAISS warns below 39 training rows per centroid: the fewest rows a list may stand for
TRAIN_PER_LIST = 64  # the training sample: 64 rows per list (at most MAX_TRAIN_ROWS)
MAX_TRAIN_ROWS = 500_000
KMEANS_ITERATIONS = 10  # the coarse quantiser's k-means (FAISS's default 25 cost 34 s of a 47 s graph at 200k)
RECALL_QUERIES = 1_000
TARGET_RECALL = 0.95
NPROBE_START = 8
NPROBE_MAX = 256  # the search costs nprobe x sqrt(n) / 4 rows a query at most: never near brute force
REFINE_ROUNDS = 2  # each round REFINE_EPOCHS / REFINE_ROUNDS epochs against a fresh snapshot of the layout
RECALL_FILE = "knn_recall.json"
SCAN_BLOCK_BYTES = 256 << 20  # the candidates a search task holds at once (queries x nprobe x k x 12 bytes)
EMBED_SHARD_ROWS = 8_192
TALLY_GROUPS = 4  # row groups of points.parquet (65,536 rows each) counted per labels task
ProgressFn = Callable[[int, int], None]


# ---------------------------------------------------------------- Ray itself


@contextlib.contextmanager
def ray_session(address: str = "local", *, num_cpus: int | None = None) -> Iterator[None]:
    """Ray for the stages: an initialised Ray is used as it is; else ``address`` (``local``: a private Ray here
    with ``num_cpus``, default all; ``auto`` / ``ray://...``: a cluster, this package shipped to its workers),
    shut down on the way out."""
    from isoscope.encode.shards import _ray_init

    started = _ray_init(address, num_cpus or os.cpu_count() or 1)
    try:
        yield
    finally:
        if started:
            import ray

            ray.shutdown()


def shards(n: int, shard_rows: int) -> list[tuple[int, int]]:
    """The row ranges [start, stop) of ``n`` rows in shards of ``shard_rows``."""
    return [(s, min(n, s + shard_rows)) for s in range(0, n, shard_rows)]


def _remote(fn: Callable):
    import ray

    return ray.remote(num_cpus=1, max_retries=3)(fn)


def _on_rows(fn: Callable, paths: list[str], start: int, stop: int, args: tuple):
    return fn(*(np.asarray(_load(p)[start:stop]) for p in paths), *args)


def map_rows(fn: Callable, paths: list[Path], ranges: list[tuple[int, int]], *args, engine: str = "local") -> Iterator:
    """``fn(block of each .npy in paths, ..., *args)`` for every row range [start, stop), in order: one range at a
    time in this process, or as Ray tasks on the ray engine (at most twice the cluster's CPUs in flight; ``args``
    put in the object store once, results fetched in order). ``fn``: a module-level function."""
    paths = [str(p) for p in paths]
    if engine != "ray":
        for start, stop in ranges:
            yield _on_rows(fn, paths, start, stop, args)
        return
    import ray

    task, shared = _remote(_on_rows), ray.put(args)
    window = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
    pending = [task.remote(fn, paths, s, e, shared) for s, e in ranges[:window]]
    for i in range(len(ranges)):
        if window + i < len(ranges):
            pending.append(task.remote(fn, paths, *ranges[window + i], shared))
        yield ray.get(pending[i])
        pending[i] = None  # its result may go from the object store


def _load(path: str | Path, mmap: bool = True) -> np.ndarray:
    return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)


def _unit(vectors: np.ndarray, start: int, stop: int) -> np.ndarray:
    from isoscope.neighbours.index import as_unit_float32

    return as_unit_float32(np.asarray(vectors[start:stop]), "vectors")  # (m, d)


class _Parts:
    """A stage's shard files in ``folder``, each proved by the folder's own ledger (size and SHA-256); the folder
    is emptied first when it was made from other ``sources`` (their SHA-256 in ``sources.json``)."""

    def __init__(self, folder: Path, sources: list[Path]) -> None:
        from isoscope.atlas.folder import file_digest

        self.folder = folder
        want = json.dumps({p.name: file_digest(p) for p in sources}).encode()
        stamp = folder / "sources.json"
        if folder.exists() and (not stamp.exists() or stamp.read_bytes() != want):
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if not stamp.exists():
            atomic_write_bytes(stamp, want)
        self.ledger = Ledger(folder)

    def path(self, name: str) -> Path:
        return self.folder / name

    def done(self, name: str, files: list[str], inputs: list[Path] = ()) -> bool:
        return self.ledger.fresh(name, list(inputs), [self.path(f) for f in files])

    def record(self, name: str, files: list[str], inputs: list[Path] = ()) -> None:
        self.ledger.record(name, list(inputs), [self.path(f) for f in files])

    def run(self, jobs: dict[str, tuple[list[str], Callable, tuple]], inputs: list[Path] = ()) -> list[str]:
        """Run the jobs (name -> (files it writes, remote function, its arguments)) not yet done as Ray tasks;
        record each as it finishes. Returns the names computed."""
        import ray

        todo = {name: job for name, job in jobs.items() if not self.done(name, job[0], inputs)}
        pending = {fn.remote(*args): name for name, (_, fn, args) in todo.items()}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            name = pending.pop(ready[0])
            ray.get(ready[0])
            self.record(name, todo[name][0], inputs)
        return list(todo)


def _write_index(index, path: Path) -> None:
    import faiss

    tmp = path.with_name(path.name + ".tmp")
    faiss.write_index(index, str(tmp))
    os.replace(tmp, path)


# ---------------------------------------------------------------- the kNN graph


def ivf_lists(n: int) -> int:
    """The IVF list count for ``n`` rows: about 4 sqrt(n), with ``MIN_TRAIN_PER_LIST`` rows per list at least."""
    return max(1, min(int(4 * math.sqrt(n)), n // MIN_TRAIN_PER_LIST))


def _add_shard(trained: str, vectors_path: str, start: int, stop: int, out: str) -> None:
    import faiss

    index = faiss.read_index(trained)
    vectors = _load(vectors_path)
    index.add_with_ids(_unit(vectors, start, stop), np.arange(start, stop, dtype=np.int64))
    _write_index(index, Path(out))


def _list_view(invlists, lst: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The unit rows (size, d) float32 and row ids (size,) int64 of inverted list ``lst``: views of FAISS's
    memory-mapped lists (valid while the index lives), nothing copied."""
    import faiss

    size = invlists.list_size(lst)
    rows = faiss.rev_swig_ptr(invlists.get_codes(lst), size * d * 4).view(np.float32).reshape(size, d)
    ids = faiss.rev_swig_ptr(invlists.get_ids(lst), size).view(np.int64)
    return rows, ids


def scan_lists(index, queries: np.ndarray, k: int, nprobe: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best rows by inner product among the ``nprobe`` lists nearest each unit query of the IVF-Flat
    ``index``: scores (m, k) best first, ids (m, k) int64 (-1 when the lists hold fewer than ``k`` rows); what
    ``index.search`` returns at that ``nprobe``, computed list by list (list-major): the queries that probe a
    list are multiplied with its rows in one matrix product (BLAS, ~30x FAISS's per-query scan here), each
    keeps its ``k`` best of the list, then the best ``k`` of its ``nprobe`` lists. Queries go in blocks whose
    candidates take at most ``SCAN_BLOCK_BYTES``."""
    import faiss

    ivf = faiss.extract_index_ivf(index)
    m = len(queries)
    block = max(1, SCAN_BLOCK_BYTES // (nprobe * k * 12))
    scores = np.empty((m, k), np.float32)
    ids = np.empty((m, k), np.int64)
    for s in range(0, m, block):
        q = queries[s : s + block]  # (b, d)
        _, probe = ivf.quantizer.search(q, nprobe)  # (b, nprobe) list ids, nearest first (-1: fewer lists)
        scores[s : s + block], ids[s : s + block] = _scan_block(ivf.invlists, q, probe, k)
    return scores, ids


def _scan_block(invlists, q: np.ndarray, probe: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    b, nprobe = probe.shape
    cand_s = np.full((b, nprobe * k), -np.inf, np.float32)  # (b, nprobe * k): k slots per probed list
    cand_i = np.full((b, nprobe * k), -1, np.int64)
    flat = probe.ravel()  # (b * nprobe,)
    order = np.argsort(flat, kind="stable")  # queries grouped by list
    lists = flat[order]
    starts = np.flatnonzero(np.r_[True, lists[1:] != lists[:-1]])
    for g0, g1 in zip(starts, np.r_[starts[1:], len(order)], strict=True):
        lst = int(lists[g0])
        if lst < 0 or invlists.list_size(lst) == 0:
            continue
        rows, row_ids = _list_view(invlists, lst, q.shape[1])
        qs, slot = np.divmod(order[g0:g1], nprobe)  # (g,) queries probing this list, and which probe it is
        sc = q[qs] @ rows.T  # (g, size)
        top = min(k, sc.shape[1])
        if top < sc.shape[1]:
            pick = np.argpartition(-sc, top - 1, axis=1)[:, :top]  # (g, top) unordered
        else:
            pick = np.broadcast_to(np.arange(top), (len(qs), top))
        cols = slot[:, None] * k + np.arange(top)  # (g, top)
        cand_s[qs[:, None], cols] = np.take_along_axis(sc, pick, axis=1)
        cand_i[qs[:, None], cols] = row_ids[pick]
    best = np.lexsort((cand_i, -cand_s), axis=1)[:, :k]  # (b, k) best first, ties by row id
    return np.take_along_axis(cand_s, best, axis=1), np.take_along_axis(cand_i, best, axis=1)


def _search_shard(index_path: str, vectors_path: str, start: int, stop: int, k: int, nprobe: int, out: str) -> None:
    """The graph rows [start, stop): ``k`` columns, the row itself first, into ``out``-ids.npy / -dist.npy."""
    import faiss

    from isoscope.atlas.graph import _self_first

    index = faiss.read_index(index_path)
    vectors = _load(vectors_path)
    scores, found = scan_lists(index, _unit(vectors, start, stop), k + 1, nprobe)  # (m, k+1), exact cosines
    ids, dist = _self_first(np.arange(start, stop), found, scores, k)
    atomic_save_npy(Path(out + "-ids.npy"), ids)
    atomic_save_npy(Path(out + "-dist.npy"), dist)


def _exact_in_shard(vectors_path: str, start: int, stop: int, queries: np.ndarray, k: int):
    """The ``k`` best rows of [start, stop) for each unit query (q, d): scores (q, k), global ids (q, k)."""
    from isoscope.neighbours.exact import exact_topk

    vectors = _load(vectors_path)
    scores, ids = exact_topk(_unit(vectors, start, stop), queries, min(k, stop - start))
    return scores, ids + start


def exact_neighbours(vectors_path: Path, rows: np.ndarray, *, k: int, shard_rows: int) -> np.ndarray:
    """Each of ``rows``' ``k`` nearest other rows by cosine (q, k) int64, by exact search shard by shard in
    Ray tasks (each returns its shard's best ``k + 1``; merged here)."""
    import ray

    vectors = _load(vectors_path)
    queries = _unit(vectors[rows], 0, len(rows))  # (q, d)
    q_ref = ray.put(queries)
    task = _remote(_exact_in_shard)
    parts = ray.get([task.remote(str(vectors_path), s, e, q_ref, k + 1) for s, e in shards(len(vectors), shard_rows)])
    scores = np.concatenate([p[0] for p in parts], axis=1)  # (q, sum k+1)
    ids = np.concatenate([p[1] for p in parts], axis=1)
    scores = np.where(ids == rows[:, None], -np.inf, scores)  # the row itself is not its own neighbour
    order = np.lexsort((ids, -scores), axis=1)[:, :k]  # best first, ties by row id (exact_topk's rule)
    return np.take_along_axis(ids, order, axis=1)


def graph_recall(ids: np.ndarray, truth: np.ndarray) -> float:
    """Mean recall of the graph's rows ``ids`` (q, k+1) (column 0 = the row itself) against the exact ``truth``
    (q, k) other rows."""
    hits = [len(set(a[1:].tolist()) & set(b.tolist())) for a, b in zip(ids, truth, strict=True)]
    return float(np.sum(hits) / truth.size)


def ivf_graph(
    vectors_path: Path, space_dir: Path, *, k: int, seed: int, shard_rows: int, progress: ProgressFn | None = None
) -> dict:
    """The kNN graph of the rows of ``vectors_path`` with ``k`` columns (the row itself first) into
    ``space_dir``/knn_ids.npy and knn_dist.npy, and its recall into ``knn_recall.json`` (returned)."""
    import faiss

    from isoscope.sampling import sample_indices

    vectors = _load(vectors_path)
    n, d = vectors.shape
    parts = _Parts(space_dir / "knn.parts", [vectors_path])
    nlist = ivf_lists(n)
    ranges = shards(n, shard_rows)
    if not parts.done("trained", ["trained.index"]):
        train = np.asarray(vectors[sample_indices(n, min(MAX_TRAIN_ROWS, nlist * TRAIN_PER_LIST), seed)])
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = seed
        index.cp.niter = KMEANS_ITERATIONS
        index.train(_unit(train, 0, len(train)))
        _write_index(index, parts.path("trained.index"))
        parts.record("trained", ["trained.index"])
    trained = [parts.path("trained.index")]
    adds = {
        f"add-{i}": (
            [f"add-{i}.index"],
            _remote(_add_shard),
            (str(trained[0]), str(vectors_path), s, e, str(parts.path(f"add-{i}.index"))),
        )
        for i, (s, e) in enumerate(ranges)
    }
    parts.run(adds, trained)
    _report(progress, n // 4, n)
    merged = ["merged.index", "lists.ivfdata"]
    add_files = [parts.path(f"add-{i}.index") for i in range(len(ranges))]
    if not parts.done("merged", merged, add_files):
        from faiss.contrib.ondisk import merge_ondisk

        parts.path("lists.ivfdata").unlink(missing_ok=True)
        index = faiss.read_index(str(trained[0]))
        merge_ondisk(index, [str(p) for p in add_files], str(parts.path("lists.ivfdata")))
        _write_index(index, parts.path("merged.index"))
        del index
        parts.record("merged", merged, add_files)
    index_path = parts.path("merged.index")
    rows = sample_indices(n, RECALL_QUERIES, seed)  # (q,)
    truth = exact_neighbours(vectors_path, rows, k=k - 1, shard_rows=shard_rows)  # (q, k-1)
    nprobe = _choose_nprobe(index_path, vectors, rows, truth, k=k, nlist=nlist)
    searches = {
        f"search-{i}-{nprobe}": (
            [f"search-{i}-{nprobe}-ids.npy", f"search-{i}-{nprobe}-dist.npy"],
            _remote(_search_shard),
            (str(index_path), str(vectors_path), s, e, k, nprobe, str(parts.path(f"search-{i}-{nprobe}"))),
        )
        for i, (s, e) in enumerate(ranges)
    }
    parts.run(searches, [index_path])
    _report(progress, 3 * n // 4, n)
    ids_path, dist_path = space_dir / "knn_ids.npy", space_dir / "knn_dist.npy"
    names = list(searches)
    _concat_npy([parts.path(f"{s}-ids.npy") for s in names], ids_path)
    _concat_npy([parts.path(f"{s}-dist.npy") for s in names], dist_path)
    recall = graph_recall(_load(ids_path)[rows], truth)
    if recall < TARGET_RECALL:
        log.warning(
            "IVF graph recall@%d %.3f is under %.2f at nprobe %d of %d lists",
            k - 1,
            recall,
            TARGET_RECALL,
            nprobe,
            nlist,
        )
    info = {
        "k": k - 1,
        "recall": recall,
        "target": TARGET_RECALL,
        "queries": len(rows),
        "nlist": nlist,
        "nprobe": nprobe,
        "shards": len(ranges),
    }
    atomic_write_bytes(space_dir / RECALL_FILE, json.dumps(info, indent=1).encode())
    shutil.rmtree(parts.folder, ignore_errors=True)
    _report(progress, n, n)
    log.info("IVF graph of %d rows: recall@%d %.4f (nlist %d, nprobe %d)", n, k - 1, recall, nlist, nprobe)
    return info


def _choose_nprobe(
    index_path: Path, vectors: np.ndarray, rows: np.ndarray, truth: np.ndarray, *, k: int, nlist: int
) -> int:
    """The smallest power of two from ``NPROBE_START`` whose search of the sample ``rows`` reaches ``TARGET_RECALL``
    against ``truth``, at most ``NPROBE_MAX`` (or ``nlist``): then the recall file says the target was missed."""
    import faiss

    from isoscope.atlas.graph import _self_first

    index = faiss.read_index(str(index_path))
    queries = _unit(vectors[rows], 0, len(rows))
    nprobe = min(NPROBE_START, nlist)
    while True:
        scores, found = scan_lists(index, queries, k + 1, nprobe)  # as the shards will be searched
        ids, _ = _self_first(rows, found, scores, k)
        if nprobe >= min(nlist, NPROBE_MAX) or graph_recall(ids, truth) >= TARGET_RECALL:
            return nprobe
        nprobe = min(nlist, NPROBE_MAX, 2 * nprobe)


def _concat_npy(parts: list[Path], final: Path) -> None:
    """The row-wise concatenation of the .npy ``parts`` (same dtype and columns) into ``final``, streamed (one
    part in memory at a time), written under a temporary name and renamed."""
    arrays = [_load(p) for p in parts]
    with NpyBlocks(final, (sum(len(a) for a in arrays), *arrays[0].shape[1:]), arrays[0].dtype) as out:
        for a in arrays:
            out.write(a)


def _report(progress: ProgressFn | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


# ---------------------------------------------------------------- the layout


def _place_shard(ids_path: str, dist_path: str, start: int, stop: int, xy_path: str, placed_path: str):
    """One placement pass over rows [start, stop) against the layout so far (``xy_path`` (n, 2), ``placed_path``
    (n,) bool, memory-mapped: the task reads its rows' neighbours): (global rows placed now, their positions (r, 2))."""
    from isoscope.atlas.layout import graph_weights, place_rows

    xy, placed = _load(xy_path), _load(placed_path)
    rows = start + np.flatnonzero(~placed[start:stop])
    if len(rows) == 0:
        return rows, np.zeros((0, 2), np.float32)
    ids, dist = _load(ids_path), _load(dist_path)
    nb = np.asarray(ids[rows][:, 1:], np.int64)  # (r, k-1)
    ok, pos = place_rows(nb, graph_weights(np.asarray(dist[rows])), xy=xy, placed=placed)
    return rows[ok], pos


def _refine_shard(
    ids_path: str, dist_path: str, start: int, stop: int, snapshot: str, fixed: np.ndarray, epochs: int, seed: int
) -> np.ndarray:
    """Rows [start, stop) after ``epochs`` epochs of UMAP's optimiser against the layout in the .npy ``snapshot``
    (n, 2), the ``fixed`` rows (sorted row numbers: the landmarks) kept: their fuzzy memberships (UMAP's
    smooth_knn_dist) as directed edges to their neighbours, negative samples from every row, the other rows not
    moved (``move_other=False``). The snapshot is memory-mapped copy-on-write: writable, as UMAP's numba kernels
    require, but never written (the other rows do not move), so its pages stay the file's: a task's memory is its
    shard's, whatever n."""
    from isoscope.atlas.layout import REFINE_LEARNING_RATE, UMAP_MIN_DIST
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
    ids = np.asarray(_load(ids_path)[start:stop][move], np.int32)  # (r, k)
    dist = np.asarray(_load(dist_path)[start:stop][move], np.float32)
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


def _snapshot(parts: _Parts, name: str, n: int, blocks: Iterator[tuple[np.ndarray, np.ndarray]]) -> None:
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


def _place(parts: _Parts, ids_path: Path, dist_path: Path, ranges, rows: np.ndarray, anchor_xy: np.ndarray, vectors):
    """Every row placed (``placed.npy`` (n, 2) in ``parts``): the landmarks ``rows`` at ``anchor_xy``, then passes of
    shard tasks, each placing the rows with a placed neighbour from a snapshot of the layout on disk (Jacobi, as
    ``layout.place_from_graph``), then the rows no landmark reaches by their nearest landmarks. The driver holds a
    shard at a time, the tasks their rows and the neighbours they read from the memory-mapped snapshot."""
    from isoscope.atlas.layout import PLACE_PASSES, place_by_vectors

    n = ranges[-1][1]
    current = "pass-a"  # the snapshot the tasks read; the next is written beside it, then read in turn
    _snapshot(parts, current, n, _anchored(ranges, rows, anchor_xy))
    left = n - len(rows)  # rows not placed yet
    task = _remote(_place_shard)
    for _ in range(PLACE_PASSES):
        if left == 0:
            break
        read = [str(parts.path(f"{current}-xy.npy")), str(parts.path(f"{current}-placed.npy"))]
        refs = [task.remote(str(ids_path), str(dist_path), s, e, *read) for s, e in ranges]
        counts: list[int] = []
        current = "pass-b" if current == "pass-a" else "pass-a"
        _snapshot(parts, current, n, _passed((_load(read[0]), _load(read[1])), ranges, refs, counts))
        left -= sum(counts)
        if sum(counts) == 0:
            break
    xy, placed = _load(parts.path(f"{current}-xy.npy")), _load(parts.path(f"{current}-placed.npy"))
    islands = np.concatenate([s + np.flatnonzero(~placed[s:e]) for s, e in ranges])  # (r,) sorted
    at = np.zeros((0, 2), np.float32)
    if len(islands):
        log.info("%d rows reach no landmark in the graph; placed by their nearest landmarks", len(islands))
        k = int(_load(ids_path).shape[1])
        at = place_by_vectors(vectors, islands, anchors=rows, anchor_xy=anchor_xy, k=k - 1)
    with NpyBlocks(parts.path("placed.npy"), (n, 2), np.float32) as out:
        for s, e in ranges:
            block = np.array(xy[s:e])
            lo, hi = np.searchsorted(islands, [s, e])
            block[islands[lo:hi] - s] = at[lo:hi]
            out.write(block)
    for name in ("pass-a", "pass-b"):
        for suffix in ("-xy.npy", "-placed.npy"):
            parts.path(name + suffix).unlink(missing_ok=True)


def ray_layout(vectors_path: Path, space_dir: Path, config, *, progress: ProgressFn | None = None) -> None:
    """The UMAP layout of the space in ``space_dir`` (its graph files there) into ``xy.npy`` (n, 2) float32:
    landmarks on the driver, placement and refinement of the rest in shard tasks (module docstring); ``config``
    (the AtlasConfig) gives the seed, the landmarks and the rows per shard."""
    seed, landmarks, shard_rows = config.seed, config.landmarks, config.shard_rows
    import ray

    from isoscope.atlas.layout import REFINE_EPOCHS, landmark_anchors, umap_layout

    vectors = _load(vectors_path)
    ids_path, dist_path = space_dir / "knn_ids.npy", space_dir / "knn_dist.npy"
    ids = _load(ids_path)
    n, k = ids.shape
    if not 0 < landmarks < n:  # the whole corpus is the sample: UMAP on the driver
        xy = umap_layout(vectors, (np.asarray(ids), np.asarray(_load(dist_path))), seed=seed)
        atomic_save_npy(space_dir / "xy.npy", xy)
        return
    parts = _Parts(space_dir / "layout.parts", [vectors_path, ids_path, dist_path])
    if not parts.done("anchors", ["anchors.npy", "anchor_xy.npy"]):
        rows, anchor_xy = landmark_anchors(vectors, k=k, seed=seed, landmarks=landmarks)
        atomic_save_npy(parts.path("anchors.npy"), rows)
        atomic_save_npy(parts.path("anchor_xy.npy"), anchor_xy)
        parts.record("anchors", ["anchors.npy", "anchor_xy.npy"])
    rows, anchor_xy = _load(parts.path("anchors.npy"), False), _load(parts.path("anchor_xy.npy"), False)
    order = np.argsort(rows, kind="stable")  # sorted (as sampled): the shards find theirs by binary search
    rows, anchor_xy = rows[order], anchor_xy[order]
    _report(progress, 1, 4)
    ranges = shards(n, shard_rows)
    if not parts.done("placed", ["placed.npy"], [parts.path("anchor_xy.npy")]):
        _place(parts, ids_path, dist_path, ranges, rows, anchor_xy, vectors)
        parts.record("placed", ["placed.npy"], [parts.path("anchor_xy.npy")])
    _report(progress, 2, 4)
    fixed_ref = ray.put(rows)  # the landmarks (sorted), kept where UMAP put them
    last = "placed.npy"
    task = _remote(_refine_shard)
    for r in range(REFINE_ROUNDS):
        name = f"refined-{r}.npy"
        if not parts.done(f"refined-{r}", [name], [parts.path(last)]):
            snapshot = str(parts.path(last))  # every task maps the file: nobody holds the layout
            refs = [
                task.remote(
                    str(ids_path), str(dist_path), s, e, snapshot, fixed_ref, REFINE_EPOCHS // REFINE_ROUNDS, seed + r
                )
                for s, e in ranges
            ]
            with NpyBlocks(parts.path(name), (n, 2), np.float32) as out:
                for ref in refs:  # in row order, one shard in memory at a time
                    out.write(ray.get(ref))
            parts.record(f"refined-{r}", [name], [parts.path(last)])
        last = name
        _report(progress, 3, 4)
    os.replace(parts.path(last), space_dir / "xy.npy")
    shutil.rmtree(parts.folder, ignore_errors=True)
    _report(progress, 4, 4)


# ---------------------------------------------------------------- labels


def _tally_rows(points_path: str, start: int, stop: int, label_paths: list[str]):
    """The word counts (``labels.TermTally``) of the texts of rows [start, stop) of ``points.parquet`` (whole row
    groups: ``ParquetColumn.rows`` reads only those) for every labeling (each a .npy (n,), memory-mapped)."""
    from isoscope.atlas.labels import TermTally
    from isoscope.data.sharded import ParquetColumn

    tally = TermTally([_load(p) for p in label_paths], start=start)
    tally.add(ParquetColumn(Path(points_path)).rows(start, stop))
    return tally


def ray_tally(points_path: Path, label_paths: list[Path], *, groups_per_task: int = TALLY_GROUPS):
    """``labels.TermTally`` of every labeling (each a .npy (n,) on a filesystem every node sees) over the texts of
    ``points_path``, counted in tasks of ``groups_per_task`` row groups and merged here in row order: the driver
    holds clusters x vocabulary counts and the labelings' memory maps, never the texts."""
    import pyarrow.parquet as pq
    import ray

    from isoscope.atlas.labels import TermTally

    md = pq.ParquetFile(points_path).metadata
    starts = np.cumsum([0] + [md.row_group(g).num_rows for g in range(md.num_row_groups)])  # (groups + 1,)
    bounds = starts[::groups_per_task].tolist() + ([] if md.num_row_groups % groups_per_task == 0 else [starts[-1]])
    paths = [str(p) for p in label_paths]
    task = _remote(_tally_rows)
    parts = ray.get([task.remote(str(points_path), int(a), int(b), paths) for a, b in itertools.pairwise(bounds)])
    total = TermTally([_load(p) for p in paths])
    for part in parts:
        total.merge(part)
    return total


# ---------------------------------------------------------------- embedding


def embed_on_ray(texts, out: Path, *, encoder, pooling, config) -> str:
    """``out`` (vectors.npy, (n, d) float32) from ``texts`` embedded by ``isoscope.encode.shards.embed_with_ray``
    (the model loaded by ``encoder.name`` on ``encoder.device`` in each actor; ``config``: the AtlasConfig, its
    batch size and max length; shards next to ``out``, resumable, removed once copied). Returns the engine's name."""
    import ray

    from isoscope.cache import PartialNpy
    from isoscope.data.limits import COUNTS
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.shards import embed_with_ray, iter_shards
    from isoscope.errors import InputError

    if encoder.precision != "fp32":  # the actors run the model's own weights in PyTorch
        raise InputError(f"the ray engine embeds in fp32, not {encoder.precision}; drop --precision or embed first")

    shard_dir = out.parent / "embed.shards"
    run = embed_with_ray(
        texts,
        shard_dir,
        model=encoder.name,
        pooling=pooling,
        config=EmbedConfig(batch_size=config.batch_size, max_length=config.max_length),
        shard_rows=EMBED_SHARD_ROWS,
        num_actors=min(COUNTS["actors"].most, max(1, int(ray.available_resources().get("CPU", 1)) - 1)),
        device=encoder.device,
    )
    part = PartialNpy.create(out.with_name(out.name + ".partial"), (run.n, run.dim))
    try:
        for ids, vectors in iter_shards(shard_dir):
            part.write(int(ids[0]), vectors)
        part.finish(out)
    finally:
        part.close()
    shutil.rmtree(shard_dir, ignore_errors=True)
    return "Ray Data (torch)"


def ray_tiles(out: Path, spaces: list[str] | tuple[str, ...]) -> None:
    """The ``tiles`` stage as Ray tasks: one per space and level of the pyramid's top
    (``isoscope.atlas.pyramid.render_levels``, each tile written atomically into the folder, which every node
    reads), the deepest levels (the most tiles) started first."""
    import ray

    from isoscope.atlas.pyramid import TOP_LEVEL, render_levels

    task = _remote(render_levels)
    jobs = [(s, z) for z in range(TOP_LEVEL, -1, -1) for s in spaces]
    ray.get([task.remote(str(out), s, [z]) for s, z in jobs])


# ---------------------------------------------------------------- the spatial index

INDEX_SAMPLE_PER_GROUP = 64  # sampled keys per group of the index's sample sort: groups within ~25% of a shard


def _index_keys(xy_path: str, world, start: int, stop: int, out: str, splitters: np.ndarray) -> np.ndarray:
    """Rows [start, stop) of the layout as sort keys (Morton code << 32 | row) (m,) uint64, sorted, into the .npy
    ``out``; returns where each of ``splitters`` falls among them (g - 1,)."""
    from isoscope.atlas.spatial import SpatialIndex, morton

    block = np.asarray(_load(xy_path)[start:stop], np.float32)  # (m, 2)
    codes = morton(*SpatialIndex._quantise(world, block[:, 0], block[:, 1])).astype(np.uint64)  # (m,)
    keys = np.sort((codes << np.uint64(32)) | np.arange(start, stop, dtype=np.uint64))  # (m,)
    atomic_save_npy(Path(out), keys)
    return np.searchsorted(keys, splitters)


def _index_group(xy_path: str, key_paths: list[str], cuts: np.ndarray, group: int, first: int, out: str) -> None:
    """Group ``group`` of the sorted index: from every shard's keys its slice ``cuts[shard, group]`` ..
    ``cuts[shard, group + 1]``, merged and sorted: codes (g,) uint32, rows (g,) and the points (g, 2) in that order,
    and the (row, position) pairs sorted by row (positions from ``first``), into ``out``-*.npy."""
    from isoscope.atlas.spatial import position_dtype

    keys = np.sort(np.concatenate([_load(p)[cuts[i, group] : cuts[i, group + 1]] for i, p in enumerate(key_paths)]))
    kind = position_dtype(len(_load(xy_path)))
    rows = (keys & np.uint64(0xFFFFFFFF)).astype(np.int64)  # (g,)
    atomic_save_npy(Path(f"{out}-codes.npy"), (keys >> np.uint64(32)).astype(np.uint32))
    atomic_save_npy(Path(f"{out}-order.npy"), rows.astype(kind))
    atomic_save_npy(Path(f"{out}-xy.npy"), np.asarray(_load(xy_path)[rows], np.float32))  # (g, 2) in sorted order
    by_row = np.argsort(rows)
    atomic_save_npy(Path(f"{out}-rank-rows.npy"), rows[by_row])
    atomic_save_npy(Path(f"{out}-rank.npy"), (first + by_row).astype(kind))


def _index_rank(groups: list[str], start: int, stop: int, kind) -> np.ndarray:
    """The sorted position of each row of [start, stop) (m,), gathered from every group's (row, position) pairs."""
    rank = np.empty(stop - start, kind)
    for g in groups:
        rows = _load(f"{g}-rank-rows.npy")
        lo, hi = np.searchsorted(rows, [start, stop])
        rank[np.asarray(rows[lo:hi]) - start] = _load(f"{g}-rank.npy")[lo:hi]
    return rank


def ray_index(space_dir: Path, world, *, shard_rows: int) -> None:
    """``spatial.write_index`` of ``space_dir``/xy.npy as Ray tasks, the same files byte for byte: a sample sort by
    (Morton code, row). Each shard's keys sorted in a task; the keys of a seeded sample cut them into groups of
    about ``shard_rows``; each group merged and sorted in a task (its codes, rows, points, and (row, position)
    pairs for the inverse); each shard of rows gathers its positions in a task; the driver writes every file in
    order, a group or a shard at a time."""
    import ray

    from isoscope.atlas.spatial import INDEX_FILES, SpatialIndex, morton, position_dtype
    from isoscope.sampling import sample_indices

    xy_path = space_dir / "xy.npy"
    xy = _load(xy_path)
    n = len(xy)
    if n >= 2**32:
        raise ValueError(f"the index's sort keys hold row numbers below 2^32, not {n:,}")
    parts = space_dir / "index.parts"
    shutil.rmtree(parts, ignore_errors=True)
    parts.mkdir()
    count = max(1, math.ceil(n / shard_rows))
    rows = sample_indices(n, INDEX_SAMPLE_PER_GROUP * count, 0)  # (s,)
    block = np.asarray(xy[rows], np.float32)
    sample = np.sort(
        (morton(*SpatialIndex._quantise(world, block[:, 0], block[:, 1])).astype(np.uint64) << np.uint64(32))
        | rows.astype(np.uint64)
    )
    splitters = sample[(np.arange(1, count) * len(sample)) // count]  # (g - 1,)
    ranges = shards(n, shard_rows)
    key_paths = [str(parts / f"keys-{i}.npy") for i in range(len(ranges))]
    task = _remote(_index_keys)
    found = ray.get(
        [task.remote(str(xy_path), world, s, e, p, splitters) for (s, e), p in zip(ranges, key_paths, strict=True)]
    )
    sizes = np.array([e - s for s, e in ranges])
    cuts = np.column_stack([np.zeros(len(ranges), np.int64), np.stack(found), sizes])  # (shards, g + 1)
    starts = np.concatenate([[0], np.cumsum((cuts[:, 1:] - cuts[:, :-1]).sum(axis=0))])  # (g + 1,)
    groups = [str(parts / f"group-{g}") for g in range(count)]
    task = _remote(_index_group)
    ray.get([task.remote(str(xy_path), key_paths, cuts, g, int(starts[g]), groups[g]) for g in range(count)])
    kind = position_dtype(n)
    paths = [space_dir / name for name in INDEX_FILES]  # codes, order, rank, xy
    for path, suffix, shape, dtype in (
        (paths[0], "codes", (n,), np.uint32),
        (paths[1], "order", (n,), kind),
        (paths[3], "xy", (n, 2), np.float32),
    ):
        with NpyBlocks(path, shape, dtype) as out:
            for g in groups:
                out.write(_load(f"{g}-{suffix}.npy"))
    task = _remote(_index_rank)
    with NpyBlocks(paths[2], (n,), kind) as out:
        for ref in [task.remote(groups, s, e, kind) for s, e in ranges]:
            out.write(ray.get(ref))
    shutil.rmtree(parts, ignore_errors=True)
