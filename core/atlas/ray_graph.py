"""The kNN graph on the ray engine: FAISS IVF-Flat by inner product on unit rows (cosine, as
``isoscope.atlas.graph``), built and searched shard by shard in Ray tasks.

ivf_graph(vectors_path, space_dir, k=16, seed=0, shard_rows=100_000)   # knn_ids.npy, knn_dist.npy, knn_recall.json

The coarse quantiser is trained in tasks: spherical k-means (``KMEANS_ITERATIONS`` rounds, as FAISS trains an
inner-product IVF) on a seeded sample (``isoscope.sampling.sample_indices``) of ``TRAIN_PER_LIST`` rows per list (at
most ``MAX_TRAIN_ROWS``), written as unit rows in chunks of ``TRAIN_CHUNK_ROWS`` by tasks; each round every chunk's
rows are assigned to their nearest centroid in a task, which returns the sums and counts per centroid, and the
driver adds them in chunk order (so a rerun gives the same centroids) into the next centroids; the first
centroids are ``nlist`` rows of the sample. The driver holds the centroids, their sums and one task's answer:
lists x d x 24 bytes, at most ``MAX_LISTS`` lists (``ivf_lists``), whatever n. Each shard of rows is added to a
copy of the trained index in a task (one index file per shard), the shard files are merged into one on-disk index
(``faiss.contrib.ondisk.merge_ondisk``: its inverted lists are memory-mapped, never loaded whole; the shard files
go once it is recorded), then each shard
of rows is searched in a task, list-major (``scan_lists``: the shard's queries grouped by the lists they probe, each
list's rows multiplied with its queries in one matrix product; the answer of FAISS's own search at that
``nprobe``, about 12x faster at 200k rows). IVF-Flat keeps the unit float32 rows, so every candidate's score is its
exact cosine (the re-rank is exact); column 0 is the row itself (``graph._self_first``). ``nprobe`` is chosen on a
seeded sample of ``RECALL_QUERIES`` rows whose exact neighbours are found shard by shard in tasks: the smallest
power of two from ``NPROBE_START`` that reaches ``TARGET_RECALL`` (at most ``NPROBE_MAX``: data with no structure
at the lists' scale gets a graph of lower recall, logged and recorded, rather than a search near brute force); the
graph's recall@k on that sample is written to ``knn_recall.json``. Every shard's files and every round's centroids
are recorded in the parts folder's ledger (``distributed.Parts``): a rerun computes only what is missing.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
from pathlib import Path

import numpy as np

from isoscope.atlas.distributed import (
    Parts,
    ProgressFn,
    concat_npy,
    load_npy,
    remote_task,
    report,
    shards,
    unit_rows,
)
from isoscope.atlas.graph import _self_first
from isoscope.cache import atomic_save_npy, atomic_write_bytes
from isoscope.sampling import sample_indices

log = logging.getLogger(__name__)

MIN_TRAIN_PER_LIST = 39  # FAISS warns below 39 training rows per centroid: the fewest rows a list may stand for
TRAIN_PER_LIST = 64  # the training sample: 64 rows per list (at most MAX_TRAIN_ROWS)
MAX_TRAIN_ROWS = 500_000
MAX_LISTS = 32_768  # the most IVF lists (4 sqrt(n) reaches it at 67M rows): the driver's k-means holds lists x d
KMEANS_ITERATIONS = 10  # the coarse quantiser's k-means (FAISS's default 25 cost 34 s of a 47 s graph at 200k)
TRAIN_CHUNK_ROWS = 65_536  # sample rows a k-means task holds (unit float32: 96 MiB at d = 384)
ASSIGN_BLOCK_BYTES = 64 << 20  # the (rows x lists) float32 scores a k-means task computes at once
RECALL_QUERIES = 1_000
TARGET_RECALL = 0.95
NPROBE_START = 8
NPROBE_MAX = 256  # the search costs nprobe x sqrt(n) / 4 rows a query at most: never near brute force
RECALL_FILE = "knn_recall.json"
SCAN_BLOCK_BYTES = 256 << 20  # the candidates a search task holds at once (queries x nprobe x k x 12 bytes)


def _write_index(index, path: Path) -> None:
    import faiss

    tmp = path.with_name(path.name + ".tmp")
    faiss.write_index(index, str(tmp))
    os.replace(tmp, path)


def ivf_lists(n: int) -> int:
    """The IVF list count for ``n`` rows: about 4 sqrt(n), with ``MIN_TRAIN_PER_LIST`` rows per list at least and
    ``MAX_LISTS`` at most."""
    return max(1, min(int(4 * math.sqrt(n)), n // MIN_TRAIN_PER_LIST, MAX_LISTS))


def _add_shard(trained: str, vectors_path: str, start: int, stop: int, out: str) -> None:
    import faiss

    index = faiss.read_index(trained)
    vectors = load_npy(vectors_path)
    index.add_with_ids(unit_rows(vectors, start, stop), np.arange(start, stop, dtype=np.int64))
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


def _search_shard(index_path: str, vectors_path: str, start: int, stop: int, *, k: int, nprobe: int, out: str) -> None:
    """The graph rows [start, stop): ``k`` columns, the row itself first, into ``out``-ids.npy / -dist.npy."""
    import faiss

    index = faiss.read_index(index_path)
    vectors = load_npy(vectors_path)
    scores, found = scan_lists(index, unit_rows(vectors, start, stop), k + 1, nprobe)  # (m, k+1), exact cosines
    ids, dist = _self_first(np.arange(start, stop), found, scores, k)
    atomic_save_npy(Path(out + "-ids.npy"), ids)
    atomic_save_npy(Path(out + "-dist.npy"), dist)


def _exact_in_shard(vectors_path: str, start: int, stop: int, queries: np.ndarray, k: int):
    """The ``k`` best rows of [start, stop) for each unit query (q, d): scores (q, k), global ids (q, k)."""
    from isoscope.neighbours.exact import exact_topk

    vectors = load_npy(vectors_path)
    scores, ids = exact_topk(unit_rows(vectors, start, stop), queries, min(k, stop - start))
    return scores, ids + start


def exact_neighbours(vectors_path: Path, rows: np.ndarray, *, k: int, shard_rows: int) -> np.ndarray:
    """Each of ``rows``' ``k`` nearest other rows by cosine (q, k) int64, by exact search shard by shard in
    Ray tasks (each returns its shard's best ``k + 1``; merged here one shard at a time: the best ``k`` of a union
    are the best ``k`` of the best ``k`` so far and the next shard's, ties by row id)."""
    import ray

    vectors = load_npy(vectors_path)
    queries = unit_rows(vectors[rows], 0, len(rows))  # (q, d)
    q_ref = ray.put(queries)
    task = remote_task(_exact_in_shard)
    refs = [task.remote(str(vectors_path), s, e, q_ref, k + 1) for s, e in shards(len(vectors), shard_rows)]
    best_s, best_i = np.zeros((len(rows), 0), np.float32), np.zeros((len(rows), 0), np.int64)
    for ref in refs:  # merged as they come, in shard order: the driver holds q x 2 (k + 1) candidates, whatever n
        part_s, part_i = ray.get(ref)
        scores = np.concatenate([best_s, part_s], axis=1)  # (q, <= 2k+1)
        ids = np.concatenate([best_i, part_i], axis=1)
        scores = np.where(ids == rows[:, None], -np.inf, scores)  # the row itself is not its own neighbour
        order = np.lexsort((ids, -scores), axis=1)[:, :k]  # best first, ties by row id (exact_topk's rule)
        best_s, best_i = np.take_along_axis(scores, order, axis=1), np.take_along_axis(ids, order, axis=1)
    return best_i


def graph_recall(ids: np.ndarray, truth: np.ndarray) -> float:
    """Mean recall of the graph's rows ``ids`` (q, k+1) (column 0 = the row itself) against the exact ``truth``
    (q, k) other rows."""
    hits = [len(set(a[1:].tolist()) & set(b.tolist())) for a, b in zip(ids, truth, strict=True)]
    return float(np.sum(hits) / truth.size)


def ivf_graph(
    vectors_path: Path, space_dir: Path, *, k: int, seed: int, shard_rows: int, progress: ProgressFn | None = None
) -> dict:
    """The kNN graph of the rows of ``vectors_path`` with ``k`` columns (the row itself first) into
    ``space_dir``/knn_ids.npy and knn_dist.npy, and its recall into ``knn_recall.json`` (returned). ``progress``:
    (done, total) after each k-means round, each shard added and each shard searched."""
    vectors = load_npy(vectors_path)
    n = len(vectors)
    parts = Parts(space_dir / "knn.parts", [vectors_path])
    nlist = ivf_lists(n)
    ranges = shards(n, shard_rows)
    steps = _Steps(progress, KMEANS_ITERATIONS + 2 * len(ranges), n)
    trained = _train(parts, vectors_path, nlist=nlist, seed=seed, steps=steps)
    index_path = _build(parts, trained, vectors_path, ranges, steps=steps)
    rows = sample_indices(n, RECALL_QUERIES, seed)  # (q,)
    truth = exact_neighbours(vectors_path, rows, k=k - 1, shard_rows=shard_rows)  # (q, k-1)
    nprobe = _choose_nprobe(index_path, vectors, rows, truth, k=k, nlist=nlist)
    _search(parts, index_path, vectors_path, ranges, k=k, nprobe=nprobe, out=space_dir, steps=steps)
    recall = graph_recall(load_npy(space_dir / "knn_ids.npy")[rows], truth)
    info = {
        "k": k - 1,
        "recall": recall,
        "target": TARGET_RECALL,
        "queries": len(rows),
        "nlist": nlist,
        "nprobe": nprobe,
        "shards": len(ranges),
    }
    if recall < TARGET_RECALL:
        log.warning(
            "IVF graph recall@%d %.3f is under %.2f at nprobe %d of %d lists",
            k - 1,
            recall,
            TARGET_RECALL,
            nprobe,
            nlist,
        )
    atomic_write_bytes(space_dir / RECALL_FILE, json.dumps(info, indent=1).encode())
    shutil.rmtree(parts.folder, ignore_errors=True)
    log.info("IVF graph of %d rows: recall@%d %.4f (nlist %d, nprobe %d)", n, k - 1, recall, nlist, nprobe)
    return info


class _Steps:
    """The graph's progress in steps (k-means rounds, shards added, shards searched), reported as the share of the
    ``n`` rows it stands for (the unit of the one-machine graph's progress): ``done()`` after each."""

    def __init__(self, progress: ProgressFn | None, total: int, n: int) -> None:
        self.progress, self.total, self.count, self.n = progress, total, 0, n

    def done(self, steps: int = 1) -> None:
        self.count = min(self.total, self.count + steps)
        report(self.progress, self.n * self.count // self.total, self.n)


def _train_chunk(vectors_path: str, rows: np.ndarray, start: int, stop: int, out: str) -> None:
    """The sample's rows ``rows[start:stop]`` (sorted) of the vectors as unit float32 rows into the .npy ``out``."""
    vectors = load_npy(vectors_path)
    atomic_save_npy(Path(out), unit_rows(vectors[rows[start:stop]], 0, stop - start))


def _kmeans_step(train_path: str, centroids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One assignment of spherical k-means over the unit rows of ``train_path`` (m, d): each row to its nearest
    centroid by inner product (the lowest on ties); the sums of each centroid's rows (c, d) float64 and their
    counts (c,) int64. Scores in blocks of ``ASSIGN_BLOCK_BYTES``."""
    from scipy.sparse import csr_matrix

    x = load_npy(train_path)  # (m, d)
    c, d = centroids.shape
    sums = np.zeros((c, d), np.float64)
    counts = np.zeros(c, np.int64)
    block = max(1, ASSIGN_BLOCK_BYTES // (4 * c))
    for s in range(0, len(x), block):
        xb = np.asarray(x[s : s + block])  # (b, d)
        best = np.argmax(xb @ centroids.T, axis=1)  # (b,)
        counts += np.bincount(best, minlength=c)
        onehot = csr_matrix((np.ones(len(best)), (best, np.arange(len(best)))), shape=(c, len(best)))  # (c, b)
        sums += onehot @ xb.astype(np.float64)
    return sums, counts


def _train(parts: Parts, vectors_path: Path, *, nlist: int, seed: int, steps: _Steps) -> Path:
    """The empty IVF index whose coarse quantiser is spherical k-means of a seeded sample, in tasks (the module
    docstring): ``trained.index``. Every round's centroids are recorded, so a rerun resumes at the next round."""
    import faiss
    import ray

    if parts.done("trained", ["trained.index"]):
        steps.done(KMEANS_ITERATIONS)
        return parts.path("trained.index")
    vectors = load_npy(vectors_path)
    n, d = vectors.shape
    rows = sample_indices(n, min(MAX_TRAIN_ROWS, nlist * TRAIN_PER_LIST), seed)  # (s,) sorted
    chunks = shards(len(rows), TRAIN_CHUNK_ROWS)
    task, rows_ref = remote_task(_train_chunk), ray.put(rows)
    files = [f"train-{i}.npy" for i in range(len(chunks))]
    jobs = {
        f"train-{i}": (
            [files[i]],
            lambda s=s, e=e, i=i: task.remote(str(vectors_path), rows_ref, s, e, str(parts.path(files[i]))),
        )
        for i, (s, e) in enumerate(chunks)
    }
    parts.run(jobs)
    first = np.sort(np.random.default_rng(seed).choice(len(rows), nlist, replace=False))  # (c,) sample positions
    centroids = unit_rows(vectors[rows[first]], 0, nlist)  # (c, d)
    step, train = remote_task(_kmeans_step), [parts.path(f) for f in files]
    inputs = train  # a round's centroids follow from the sample and the round before's
    for it in range(KMEANS_ITERATIONS):
        name = f"centroids-{it}.npy"
        if not parts.done(f"kmeans-{it}", [name], inputs):
            ref = ray.put(centroids)
            sums, counts = np.zeros((nlist, d), np.float64), np.zeros(nlist, np.int64)
            for answer in [step.remote(str(p), ref) for p in train]:  # added in chunk order: the same sums each run
                part_sums, part_counts = ray.get(answer)
                sums += part_sums
                counts += part_counts
                del part_sums
            atomic_save_npy(parts.path(name), _next_centroids(centroids, sums, counts))
            parts.record(f"kmeans-{it}", [name], inputs)
        centroids = load_npy(parts.path(name), mmap=False)  # (c, d)
        inputs = [*train, parts.path(name)]
        steps.done()
    quantizer = faiss.IndexFlatIP(d)
    quantizer.add(centroids)
    index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)  # trained: the quantizer holds nlist
    _write_index(index, parts.path("trained.index"))
    parts.record("trained", ["trained.index"])
    return parts.path("trained.index")


def _next_centroids(centroids: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each centroid the mean of its rows, made unit (spherical k-means); one that got no row stays where it was."""
    out = np.array(centroids, np.float32)  # (c, d)
    got = counts > 0
    mean = sums[got] / counts[got, None]  # (g, d) float64
    norms = np.linalg.norm(mean, axis=1, keepdims=True)
    out[got] = mean / np.where(norms > 0, norms, 1.0)
    return out


def _build(parts: Parts, trained: Path, vectors_path: Path, ranges: list[tuple[int, int]], *, steps: _Steps) -> Path:
    """The IVF index of every row: each shard's rows added to a copy of the ``trained`` index in a task
    (``add-{i}.index``), then merged into one on-disk index (``merged.index``, its lists in ``lists.ivfdata``);
    the shards' files go once the merge is recorded."""
    import faiss

    merged = ["merged.index", "lists.ivfdata"]
    if parts.done("merged", merged, [trained]):
        steps.done(len(ranges))
        return parts.path("merged.index")
    task = remote_task(_add_shard)
    names = [f"add-{i}.index" for i in range(len(ranges))]
    adds = {
        f"add-{i}": (
            [names[i]],
            lambda s=s, e=e, i=i: task.remote(str(trained), str(vectors_path), s, e, str(parts.path(names[i]))),
        )
        for i, (s, e) in enumerate(ranges)
    }
    parts.run(adds, [trained], done=lambda: steps.done())
    from faiss.contrib.ondisk import merge_ondisk

    parts.path("lists.ivfdata").unlink(missing_ok=True)
    index = faiss.read_index(str(trained))
    merge_ondisk(index, [str(parts.path(f)) for f in names], str(parts.path("lists.ivfdata")))
    _write_index(index, parts.path("merged.index"))
    del index
    parts.record("merged", merged, [trained])
    for name in names:  # as big as the lists together: not kept beside them
        parts.path(name).unlink(missing_ok=True)
    return parts.path("merged.index")


def _search(
    parts: Parts,
    index_path: Path,
    vectors_path: Path,
    ranges: list[tuple[int, int]],
    *,
    k: int,
    nprobe: int,
    out: Path,
    steps: _Steps,
) -> None:
    """Each shard of rows searched in a task at ``nprobe``; the shards' files concatenated into ``out``/knn_ids.npy
    and knn_dist.npy."""
    task = remote_task(_search_shard)
    searches = {
        f"search-{i}-{nprobe}": (
            [f"search-{i}-{nprobe}-ids.npy", f"search-{i}-{nprobe}-dist.npy"],
            lambda s=s, e=e, i=i: task.remote(
                str(index_path),
                str(vectors_path),
                s,
                e,
                k=k,
                nprobe=nprobe,
                out=str(parts.path(f"search-{i}-{nprobe}")),
            ),
        )
        for i, (s, e) in enumerate(ranges)
    }
    parts.run(searches, [index_path], done=lambda: steps.done())
    names = list(searches)
    concat_npy([parts.path(f"{s}-ids.npy") for s in names], out / "knn_ids.npy")
    concat_npy([parts.path(f"{s}-dist.npy") for s in names], out / "knn_dist.npy")


def _choose_nprobe(
    index_path: Path, vectors: np.ndarray, rows: np.ndarray, truth: np.ndarray, *, k: int, nlist: int
) -> int:
    """The smallest power of two from ``NPROBE_START`` whose search of the sample ``rows`` reaches ``TARGET_RECALL``
    against ``truth``, at most ``NPROBE_MAX`` (or ``nlist``): then the recall file says the target was missed."""
    import faiss

    index = faiss.read_index(str(index_path))
    queries = unit_rows(vectors[rows], 0, len(rows))
    nprobe = min(NPROBE_START, nlist)
    while True:
        scores, found = scan_lists(index, queries, k + 1, nprobe)  # as the shards will be searched
        ids, _ = _self_first(rows, found, scores, k)
        if nprobe >= min(nlist, NPROBE_MAX) or graph_recall(ids, truth) >= TARGET_RECALL:
            return nprobe
        nprobe = min(nlist, NPROBE_MAX, 2 * nprobe)
