"""core.index: exact search equals brute force, approximate recall, persistence, validation, overlap@k."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.errors import InputError
from core.index import (
    FLAT_MAX_ROWS,
    HNSW_MAX_ROWS,
    INDEX_KINDS,
    IndexParams,
    VectorIndex,
    build_index,
    choose_kind,
    exact_topk,
    jaccard,
    knn_graph,
    neighbourhood_change,
    neighbours_before_after,
    recall_at_k,
    recall_from_ids,
    sidecar_path,
)
from tests.data_helpers import clustered


def brute_force(X: np.ndarray, Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Cosine top-k with numpy in float64. Returns scores (q, k), ids (q, k)."""
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    Qn = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    S = Qn.astype(np.float64) @ Xn.astype(np.float64).T  # (q, n)
    ids = np.argsort(-S, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(S, ids, axis=1), ids


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return clustered(3000, 48, 25, seed=0)


@pytest.fixture(scope="module")
def queries() -> np.ndarray:
    """New points around the same centres as ``data``."""
    return clustered(200, 48, 25, seed=0) + np.float32(0.05)


def test_flat_equals_numpy_brute_force(data, queries):
    index = build_index(data, "flat")
    scores, ids = index.search(queries, 10)
    ref_scores, ref_ids = brute_force(data, queries, 10)
    assert scores.shape == ids.shape == (len(queries), 10)
    assert scores.dtype == np.float32 and ids.dtype == np.int64
    np.testing.assert_array_equal(ids, ref_ids)
    np.testing.assert_allclose(scores, ref_scores, atol=1e-5)
    assert (np.diff(scores, axis=1) <= 1e-7).all()  # best first


def test_numpy_exact_topk_equals_flat_index(data, queries):
    Xn = data / np.linalg.norm(data, axis=1, keepdims=True)
    Qn = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    scores, ids = exact_topk(Xn, Qn, 10, block=64)
    ref_scores, ref_ids = build_index(data, "flat").search(queries, 10)
    np.testing.assert_array_equal(ids, ref_ids)
    np.testing.assert_allclose(scores, ref_scores, atol=1e-5)
    rows = np.array([3, 40, 2999])
    _, own = exact_topk(Xn, Xn[rows], 4, exclude=rows)
    assert not (own == rows[:, None]).any()  # each query left itself out
    np.testing.assert_array_equal(own, brute_force(data, data[rows], 5)[1][:, 1:])


def test_scale_invariance_cosine(data, queries):
    """Cosine search ignores vector lengths: scaling rows changes nothing."""
    scale = np.random.default_rng(3).uniform(0.1, 10, (len(data), 1)).astype(np.float32)
    _, ids = build_index(data, "flat").search(queries, 5)
    _, ids_scaled = build_index(data * scale, "flat").search(queries * 7, 5)
    np.testing.assert_array_equal(ids, ids_scaled)


def test_hnsw_recall_on_clustered_data(data, queries):
    exact = build_index(data, "flat")
    hnsw = build_index(data, "hnsw", IndexParams(hnsw_m=16, ef_construction=100, ef_search=64))
    assert hnsw.kind == "hnsw" and hnsw.index.hnsw.efSearch == 64
    assert recall_at_k(hnsw, exact, queries, 10) >= 0.9


def test_ivf_with_all_cells_probed_is_exact(data, queries):
    ivf = build_index(data, "ivf", IndexParams(nlist=16))
    ivf.set_search_params(nprobe=16)
    _, ref_ids = brute_force(data, queries, 10)
    _, ids = ivf.search(queries, 10)
    assert recall_from_ids(ids, ref_ids) == pytest.approx(1.0)


def test_ivfpq_builds_and_searches(data, queries):
    index = build_index(data, "ivfpq", IndexParams(nlist=16, nprobe=8, pq_m=12, pq_nbits=6))
    assert index.kind == "ivfpq" and index.params.pq_m == 12 and index.ntotal == len(data)
    scores, ids = index.search(queries, 10)
    assert ids.shape == (len(queries), 10) and ((ids >= 0) & (ids < len(data))).all()
    assert np.isfinite(scores).all()
    _, ref_ids = brute_force(data, queries, 10)
    assert recall_from_ids(ids, ref_ids) >= 0.4  # random ids would give ~0.003


def test_ivfpq_default_pq_m_divides_dimension():
    p = IndexParams().resolved("ivfpq", 100_000, 384)
    assert p.pq_m == 48 and 384 % p.pq_m == 0
    assert p.nlist == round(4 * np.sqrt(100_000)) and 1 <= p.nprobe <= p.nlist


@pytest.mark.parametrize("kind", ["ivf", "ivfpq"])
def test_default_nlist_leaves_39_training_rows_per_cell_of_train_size(kind):
    n = 2_000_000  # 4 sqrt(n) ~ 5657 cells would want 220k training rows; only train_size are sampled
    p = IndexParams().resolved(kind, n, 384)
    assert p.nlist == p.train_size // 39 and p.nlist < round(4 * np.sqrt(n))
    small = IndexParams(train_size=3_900).resolved(kind, n, 384)
    assert small.nlist == 100 and 1 <= small.nprobe <= small.nlist
    assert IndexParams(train_size=10).resolved(kind, n, 384).nlist == 1


def test_ivf_accepts_explicit_ids(data):
    index = VectorIndex.create(48, "ivf", IndexParams(nlist=4, nprobe=4))
    index.train(data)
    index.add(data[:100], ids=np.arange(1000, 1100))
    _, ids = index.search(data[:3], 1)
    np.testing.assert_array_equal(ids[:, 0], [1000, 1001, 1002])


def test_flat_add_keeps_order_and_refuses_other_ids(data):
    index = build_index(data[:100], "flat")
    index.add(data[100:150], ids=np.arange(100, 150))
    assert index.ntotal == 150
    with pytest.raises(InputError, match="insertion order"):
        index.add(data[:5], ids=[7, 8, 9, 10, 11])


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf", "ivfpq"])
def test_save_load_round_trip(tmp_path, data, queries, kind):
    params = IndexParams(nlist=16, nprobe=4, pq_m=8, pq_nbits=6, ef_search=40)
    index = build_index(data, kind, params)
    path = tmp_path / "sub" / f"{kind}.faiss"
    index.save(path)
    loaded = VectorIndex.load(path)
    assert loaded.kind == kind and loaded.dim == 48 and loaded.ntotal == len(data)
    assert loaded.params == index.params
    s1, i1 = index.search(queries, 7)
    s2, i2 = loaded.search(queries, 7)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(s1, s2)
    assert not list(path.parent.glob(".*tmp"))  # no temporary files left behind


def test_load_rejects_missing_or_altered_files(tmp_path, data):
    path = tmp_path / "x.faiss"
    build_index(data[:200], "flat").save(path)
    # a changed FAISS file no longer matches the recorded digest
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError, match="does not match"):
        VectorIndex.load(path)
    # a sidecar that lies about the kind
    build_index(data[:200], "flat").save(path)
    meta = json.loads(sidecar_path(path).read_text())
    sidecar_path(path).write_text(json.dumps({**meta, "kind": "hnsw"}))
    with pytest.raises(InputError, match="not the hnsw index"):
        VectorIndex.load(path)
    sidecar_path(path).write_text("{not json")
    with pytest.raises(InputError, match="not a readable"):
        VectorIndex.load(path)
    sidecar_path(path).unlink()
    with pytest.raises(InputError, match="index not found"):
        VectorIndex.load(path)


def test_auto_kind_by_corpus_size(data):
    assert INDEX_KINDS == ("auto", "flat", "hnsw", "ivf", "ivfpq")
    assert choose_kind(10) == "flat"
    assert choose_kind(FLAT_MAX_ROWS) == "flat"
    assert choose_kind(FLAT_MAX_ROWS + 1) == "hnsw"
    assert choose_kind(HNSW_MAX_ROWS) == "hnsw"
    assert choose_kind(HNSW_MAX_ROWS + 1) == "ivfpq"
    assert choose_kind(10, "ivf") == "ivf"  # an explicit choice wins
    assert build_index(data).kind == "flat"
    with pytest.raises(InputError, match="choose one of auto, flat, hnsw, ivf, ivfpq"):
        choose_kind(10, "annoy")


def test_bad_inputs_raise_one_line_errors(data):
    index = build_index(data[:100], "flat")
    bad_rows = data[:10].copy()
    bad_rows[3, 2] = np.nan
    cases = [
        (lambda: index.search(np.zeros((2, 47), np.float32), 3), "47 dimensions but the index has 48"),
        (lambda: index.add(np.ones((2, 50), np.float32)), "50 dimensions"),
        (lambda: build_index(bad_rows), "NaN or infinite"),
        (lambda: index.search(np.full((1, 48), np.inf, np.float32), 3), "NaN or infinite"),
        (lambda: index.search(data[:2], 0), "k must be a positive integer"),
        (lambda: build_index(np.zeros((2, 3, 4))), "2-D array"),
        (lambda: build_index(np.array([["a", "b"]])), "real numbers"),
        (lambda: build_index(np.zeros((0, 8), np.float32)), "no vectors"),
        (lambda: build_index(data, "ivfpq", IndexParams(pq_m=5)), "must divide the dimension 48"),
        (lambda: build_index(data[:100], "ivfpq", IndexParams(nlist=2, pq_m=8)), "at least 256 training"),
        (lambda: build_index(data, "hnsw", IndexParams(hnsw_m=0)), "hnsw_m must be a positive integer"),
    ]
    for call, message in cases:
        with pytest.raises(InputError, match=message) as err:
            call()
        assert "\n" not in str(err.value)


def test_k_larger_than_corpus_is_cut(data):
    scores, ids = build_index(data[:5], "flat").search(data[:2], 10)
    assert ids.shape == (2, 5) and sorted(ids[0].tolist()) == [0, 1, 2, 3, 4]
    assert ids[0, 0] == 0 and scores[0, 0] == pytest.approx(1.0, abs=1e-6)


def test_single_query_vector_is_one_row(data):
    scores, ids = build_index(data, "flat").search(data[7], 3)
    assert scores[0, 0] == pytest.approx(1.0, abs=1e-6)
    assert ids.shape == (1, 3) and ids[0, 0] == 7


# ---------------------------------------------------------------- before / after


def _circle(degrees: list[float]) -> np.ndarray:
    rad = np.deg2rad(degrees)
    return np.stack([np.cos(rad), np.sin(rad)], axis=1).astype(np.float32)  # (n, 2)


def test_overlap_is_one_and_shift_zero_for_identical_spaces(data):
    res = neighbours_before_after(data, data.copy(), [0, 17, 2999], k=8)
    assert [r.query for r in res] == [0, 17, 2999]
    for r in res:
        assert r.overlap == 1.0
        np.testing.assert_array_equal(r.before_ids, r.after_ids)
        np.testing.assert_array_equal(r.rank_shift, np.zeros(8))
        np.testing.assert_array_equal(r.before_rank_after, np.arange(1, 9))
        assert r.query not in r.before_ids.tolist()
    change = neighbourhood_change(data, data * 3.0, k=10)
    assert change.mean_overlap == 1.0 and len(change.ids) == len(data)


def test_overlap_and_rank_shift_on_a_hand_example():
    # rows: query, a, b, c, d as angles on the unit circle
    raw = _circle([0, 10, 20, 30, 40])  # query's raw order: a(1) b(2) c(3) d(4)
    cal = _circle([0, 35, 15, 5, 60])  # calibrated order: c(1) b(2) a(3) d(4)
    (r,) = neighbours_before_after(raw, cal, [0], k=2)
    np.testing.assert_array_equal(r.before_ids, [1, 2])
    np.testing.assert_array_equal(r.after_ids, [3, 2])
    assert r.overlap == pytest.approx(1 / 3)  # {a, b} vs {c, b}
    np.testing.assert_array_equal(r.after_rank_before, [3, 2])  # c was 3rd, b 2nd in the raw space
    np.testing.assert_array_equal(r.rank_shift, [2, 0])  # c moved up two places, b stayed
    np.testing.assert_array_equal(r.before_rank_after, [3, 2])  # a is 3rd, b 2nd after calibration
    np.testing.assert_allclose(r.after_scores, np.cos(np.deg2rad([5, 15])), atol=1e-6)
    frame = r.to_frame()
    assert frame["space"].tolist() == ["raw", "raw", "calibrated", "calibrated"]
    assert frame["id"].tolist() == [1, 2, 3, 2] and frame["rank_shift"].tolist() == [0, 0, 2, 0]
    change = neighbourhood_change(raw, cal, k=2)
    assert change.overlap[0] == pytest.approx(1 / 3)
    assert change.to_frame()["overlap"].is_monotonic_increasing


def test_outside_query_vectors_in_both_spaces():
    raw = _circle([0, 10, 20, 30, 40])
    cal = _circle([0, 35, 15, 5, 60])
    (r,) = neighbours_before_after(raw, cal, (_circle([12]), _circle([14])), k=2)
    assert r.query is None
    np.testing.assert_array_equal(r.before_ids, [1, 2])  # 10 and 20 degrees are closest to 12
    np.testing.assert_array_equal(r.after_ids, [2, 3])  # 15 and 5 degrees are closest to 14
    with pytest.raises(InputError, match="row ids, or as a pair"):
        neighbours_before_after(raw, cal, _circle([12]), k=2)


def test_neighbourhood_change_matches_numpy_and_samples(data):
    rng = np.random.default_rng(5)
    cal = (data @ rng.standard_normal((48, 20))).astype(np.float32)  # a different, lower-dim space
    change = neighbourhood_change(data, cal, k=5, sample=300, seed=1)
    assert len(change.ids) == 300 and (np.diff(change.ids) > 0).all()
    _, raw_ids = brute_force(data, data[change.ids], 6)
    _, cal_ids = brute_force(cal, cal[change.ids], 6)
    expected = [jaccard(b[b != q][:5], a[a != q][:5]) for q, b, a in zip(change.ids, raw_ids, cal_ids, strict=True)]
    np.testing.assert_allclose(change.overlap, expected)
    assert change.mean_overlap == pytest.approx(np.mean(expected))
    worst = change.most_changed(10)
    assert change.overlap[np.searchsorted(change.ids, worst)].max() <= np.sort(change.overlap)[9]
    again = neighbourhood_change(data, cal, k=5, sample=300, seed=1)
    np.testing.assert_array_equal(again.ids, change.ids)


def test_before_after_validation(data):
    with pytest.raises(InputError, match="same rows"):
        neighbours_before_after(data, data[:10], [0], k=3)
    with pytest.raises(InputError, match="between 0 and 2999"):
        neighbours_before_after(data, data, [3000], k=3)
    with pytest.raises(InputError, match="k must be"):
        neighbourhood_change(data, data, k=0)


def test_knn_graph_is_exact_with_each_row_first(data):
    ids, dist = knn_graph(data, 8)
    assert ids.shape == dist.shape == (len(data), 8) and ids.dtype == np.int64 and dist.dtype == np.float32
    np.testing.assert_array_equal(ids[:, 0], np.arange(len(data)))
    np.testing.assert_array_equal(dist[:, 0], 0.0)
    ref_scores, ref_ids = brute_force(data, data, 8)  # row itself first (cos 1) for distinct rows
    np.testing.assert_array_equal(np.sort(ids[:, 1:], axis=1), np.sort(ref_ids[:, 1:], axis=1))
    np.testing.assert_allclose(dist, 1.0 - ref_scores, atol=1e-5)
    assert (np.diff(dist, axis=1) >= -1e-6).all()


def test_knn_graph_puts_a_row_first_even_among_exact_duplicates():
    """Five copies of one vector tie at distance 0: each copy still lists itself first, once."""
    rng = np.random.default_rng(1)
    X = np.vstack([np.repeat(rng.standard_normal((1, 6)), 5, axis=0), rng.standard_normal((20, 6))])
    ids, dist = knn_graph(X, 3)
    np.testing.assert_array_equal(ids[:, 0], np.arange(len(X)))
    assert all(len(set(row)) == 3 for row in ids.tolist())
    np.testing.assert_allclose(dist[:5], 0.0, atol=1e-6)  # copies' neighbours are other copies


def test_knn_graph_rejects_bad_k(data):
    with pytest.raises(InputError, match="between 1 and"):
        knn_graph(data[:5], 6)
