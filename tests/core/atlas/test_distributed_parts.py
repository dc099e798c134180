"""The ray engine without Ray (isoscope.atlas.distributed, ray_graph, ray_layout): the shard functions the tasks run,
called here as plain functions, against the one-machine functions they stand in for; the shard bookkeeping; the
engine's settings."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.atlas import distributed as dist
from isoscope.atlas import ray_graph, ray_layout
from isoscope.atlas.graph import knn_graph_chunked
from isoscope.atlas.layout import place_from_graph
from isoscope.atlas.pipeline import AtlasConfig
from isoscope.cache import atomic_save_npy
from isoscope.errors import InputError


def _blobs(n: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4, (5, dim))
    return (centres[rng.integers(0, 5, n)] + rng.normal(0, 1, (n, dim))).astype(np.float32)


def test_shards_cover_every_row_once():
    assert dist.shards(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert dist.shards(8, 4) == [(0, 4), (4, 8)]
    assert (
        ray_graph.ivf_lists(10_000) == 256 and ray_graph.ivf_lists(1_000_000) == 4_000 and ray_graph.ivf_lists(10) == 1
    )


def test_placement_shard_by_shard_is_place_from_graph(tmp_path):
    x = _blobs(1_200)
    ids, d = knn_graph_chunked(x, 8)  # (n, 8) each, exact
    atomic_save_npy(tmp_path / "ids.npy", ids)
    atomic_save_npy(tmp_path / "dist.npy", d)
    anchors = np.arange(0, 1_200, 10)
    anchor_xy = np.random.default_rng(1).normal(size=(len(anchors), 2)).astype(np.float32)
    want, placed_want = place_from_graph(ids, d, anchors=anchors, anchor_xy=anchor_xy, passes=1)
    xy = np.zeros((1_200, 2), np.float32)
    placed = np.zeros(1_200, bool)
    xy[anchors], placed[anchors] = anchor_xy, True
    snapshot = [str(tmp_path / "xy.npy"), str(tmp_path / "placed.npy")]  # what the tasks map
    atomic_save_npy(tmp_path / "xy.npy", xy)
    atomic_save_npy(tmp_path / "placed.npy", placed)
    found = [
        ray_layout._place_shard(
            str(tmp_path / "ids.npy"), str(tmp_path / "dist.npy"), s, e, xy_path=snapshot[0], placed_path=snapshot[1]
        )
        for s, e in dist.shards(1_200, 500)
    ]
    rows = np.concatenate([f[0] for f in found])
    got = xy.copy()
    got[rows] = np.concatenate([f[1] for f in found])
    assert set(rows.tolist()) == set(np.flatnonzero(placed_want & ~placed).tolist())
    np.testing.assert_allclose(got[placed_want], want[placed_want], rtol=1e-6, atol=1e-6)


def test_the_refinement_moves_only_the_rows_not_fixed(tmp_path):
    x = _blobs(600)
    ids, d = knn_graph_chunked(x, 8)
    atomic_save_npy(tmp_path / "ids.npy", ids)
    atomic_save_npy(tmp_path / "dist.npy", d)
    xy = np.random.default_rng(2).normal(size=(600, 2)).astype(np.float32)
    atomic_save_npy(tmp_path / "xy.npy", xy)
    snapshot = str(tmp_path / "xy.npy")  # mapped copy-on-write by the task, never written
    landmarks = np.arange(0, 600, 3)
    fixed = np.zeros(600, bool)
    fixed[landmarks] = True
    ids_path, dist_path = str(tmp_path / "ids.npy"), str(tmp_path / "dist.npy")
    refine = dict(snapshot=snapshot, fixed=landmarks, epochs=20, seed=0)
    out = ray_layout._refine_shard(ids_path, dist_path, 100, 400, **refine)
    assert out.shape == (300, 2) and np.isfinite(out).all()
    np.testing.assert_array_equal(np.load(snapshot), xy)  # the other rows did not move, on disk either
    np.testing.assert_array_equal(out[fixed[100:400]], xy[100:400][fixed[100:400]])
    assert (np.abs(out[~fixed[100:400]] - xy[100:400][~fixed[100:400]]).sum(axis=1) > 0).mean() > 0.9
    again = ray_layout._refine_shard(ids_path, dist_path, 100, 400, **refine)
    np.testing.assert_array_equal(out, again)  # seeded: the same shard gives the same rows


def test_concatenated_shards_equal_numpy(tmp_path):
    rng = np.random.default_rng(0)
    parts = [rng.integers(0, 100, (n, 4)).astype(np.int32) for n in (3, 5, 1)]
    paths = []
    for i, p in enumerate(parts):
        paths.append(tmp_path / f"{i}.npy")
        atomic_save_npy(paths[-1], p)
    dist.concat_npy(paths, tmp_path / "all.npy")
    got = np.load(tmp_path / "all.npy", allow_pickle=False)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.concatenate(parts))


def test_graph_recall_counts_the_other_neighbours():
    ids = np.array([[0, 1, 2, 3], [1, 0, 5, 6]])  # column 0: the row itself
    truth = np.array([[1, 2, 9], [0, 5, 6]])
    assert ray_graph.graph_recall(ids, truth) == pytest.approx(5 / 6)


def test_the_engine_is_recorded_only_when_it_is_ray():
    assert "engine" not in AtlasConfig().to_dict() and "shard_rows" not in AtlasConfig().to_dict()
    ray = AtlasConfig(engine="ray", shard_rows=5_000).to_dict()
    assert ray["engine"] == "ray" and ray["shard_rows"] == 5_000
    with pytest.raises(InputError, match="unknown engine 'spark'; choose one of local, ray"):
        AtlasConfig(engine="spark").validate()
    with pytest.raises(InputError, match="shard rows"):
        AtlasConfig(engine="ray", shard_rows=0).validate()  # below COUNTS["shard_rows"]'s least, 1


def test_the_commands_engines_are_the_pipelines():
    from isoscope.atlas.pipeline import ENGINES
    from isoscope.commands.atlas import ENGINES as CLI_ENGINES

    assert CLI_ENGINES == ENGINES


def test_the_list_major_scan_finds_what_faiss_search_finds(tmp_path):
    """``scan_lists`` (each list's probing queries in one matrix product) against FAISS's own IVF search at the
    same nprobe, on memory-mapped lists merged on disk as the engine merges them: the same rows and scores."""
    import faiss
    from faiss.contrib.ondisk import merge_ondisk

    from isoscope.neighbours.index import as_unit_float32

    x = as_unit_float32(_blobs(3_000, dim=24), "x")  # (n, d)
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(24), 24, 40, faiss.METRIC_INNER_PRODUCT)
    index.train(x)
    for i, (s, e) in enumerate(dist.shards(3_000, 1_000)):
        part = faiss.clone_index(index)
        part.add_with_ids(x[s:e], np.arange(s, e, dtype=np.int64))
        faiss.write_index(part, str(tmp_path / f"add-{i}.index"))
    merge_ondisk(index, [str(tmp_path / f"add-{i}.index") for i in range(3)], str(tmp_path / "lists.ivfdata"))
    faiss.write_index(index, str(tmp_path / "merged.index"))
    merged = faiss.read_index(str(tmp_path / "merged.index"))
    q = x[::7]  # (m, d)
    tol = 24 * np.finfo(np.float32).eps  # a float32 dot of two unit 24-d rows, any summation order (BLAS blocks)
    for nprobe in (1, 3, 40):
        scores, ids = ray_graph.scan_lists(merged, q, 9, nprobe)
        merged.nprobe = nprobe
        want_s, want_i = merged.search(q, 9)
        np.testing.assert_allclose(scores, want_s, rtol=0, atol=tol)
        same = [len(set(a) & set(b)) for a, b in zip(ids, want_i, strict=True)]
        assert np.mean(same) > 8.9  # ties at the k-th place may pick another row of the same score
    whole = ray_graph.scan_lists(merged, q, 9, 3)
    old = ray_graph.SCAN_BLOCK_BYTES
    ray_graph.SCAN_BLOCK_BYTES = 3 * 9 * 12 * 50  # blocks of 50 queries: the same answer
    try:
        blocked = ray_graph.scan_lists(merged, q, 9, 3)
    finally:
        ray_graph.SCAN_BLOCK_BYTES = old
    np.testing.assert_allclose(blocked[0], whole[0], rtol=0, atol=tol)
    assert np.mean([len(set(a) & set(b)) for a, b in zip(blocked[1], whole[1], strict=True)]) > 8.9


def test_a_kmeans_round_in_chunks_is_the_round_on_every_row(tmp_path):
    """The coarse quantiser's k-means runs as tasks over chunks of the sample (issue 54.1): the driver's sum of the
    chunks' sums and counts is the round over every row at once, and the next centroids are the unit means."""
    from isoscope.neighbours.index import as_unit_float32

    x = as_unit_float32(_blobs(3_000, dim=24), "x")  # (n, d)
    centroids = x[::100].copy()  # (30, d)
    for i, (s, e) in enumerate(dist.shards(3_000, 1_000)):
        atomic_save_npy(tmp_path / f"train-{i}.npy", x[s:e])
    atomic_save_npy(tmp_path / "all.npy", x)
    whole = ray_graph._kmeans_step(str(tmp_path / "all.npy"), centroids)
    parts = [ray_graph._kmeans_step(str(tmp_path / f"train-{i}.npy"), centroids) for i in range(3)]
    np.testing.assert_array_equal(sum(p[1] for p in parts), whole[1])
    tol = 3_000 * np.finfo(np.float64).eps * 4  # sums of at most 3,000 unit rows, another order
    np.testing.assert_allclose(sum(p[0] for p in parts), whole[0], rtol=0, atol=tol)
    nearest = np.argmax(x @ centroids.T, axis=1)
    np.testing.assert_array_equal(whole[1], np.bincount(nearest, minlength=30))
    nxt = ray_graph._next_centroids(centroids, *whole)
    np.testing.assert_allclose(np.linalg.norm(nxt, axis=1), 1, rtol=0, atol=1e-6)
    mean = x[nearest == 0].mean(axis=0)
    np.testing.assert_allclose(nxt[0], mean / np.linalg.norm(mean), rtol=0, atol=1e-6)
    empty = ray_graph._next_centroids(centroids, whole[0], np.where(np.arange(30) == 5, 0, whole[1]))
    np.testing.assert_array_equal(empty[5], centroids[5])  # a centroid that got no row stays


def test_the_ivf_lists_stop_at_max_lists():
    assert ray_graph.ivf_lists(10**10) == ray_graph.MAX_LISTS
    assert ray_graph.ivf_lists(10_000_000) == 12_649  # 4 sqrt(n) below the cap


def test_a_tally_of_many_parts_holds_one_summed_part_and_the_same_words():
    """Tallies merged part after part (the ray engine's labels tasks) sum their counts past COMPACT_PARTS batches
    (issue 54: nothing on the driver grows with n): the words are those of one tally of every text."""
    from isoscope.atlas.labels import COMPACT_PARTS, TermTally
    from isoscope.atlas.synthetic import synthetic_corpus

    texts, _ = synthetic_corpus(4_000, seed=2)
    labels = np.random.default_rng(0).integers(-1, 7, 4_000).astype(np.int32)
    whole = TermTally([labels])
    whole.add(texts)
    total = TermTally([labels])
    for s in range(0, 4_000, 100):  # 40 parts
        part = TermTally([labels], start=s)
        part.add(texts[s : s + 100])
        total.merge(part)
        assert len(total.parts[0]) <= COMPACT_PARTS
    assert total.top_words(0) == whole.top_words(0)
