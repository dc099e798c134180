"""core.neighbours: exact top-k (ties by row id), the kNN graph, overlap@k and rank shifts between two spaces."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import InputError
from core.index import build_index
from core.neighbours import (
    exact_topk,
    jaccard,
    knn_graph,
    neighbourhood_change,
    neighbours_before_after,
)
from tests.data_helpers import assert_valid_topk, brute_force, clustered, cosines64, float32_dot_tolerance


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return clustered(3000, 48, 25, seed=0)


@pytest.fixture(scope="module")
def queries() -> np.ndarray:
    """New points around the same centres as ``data``."""
    return clustered(200, 48, 25, seed=0) + np.float32(0.05)


def test_numpy_exact_topk_equals_flat_index(data, queries):
    Xn = data / np.linalg.norm(data, axis=1, keepdims=True)
    Qn = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    scores, ids = exact_topk(Xn, Qn, 10, block=64)
    ref_scores, _ = build_index(data, "flat").search(queries, 10)
    tol = float32_dot_tolerance(data.shape[1])  # two float32 rankings: near-ties may swap on another CPU
    assert_valid_topk(ids, cosines64(data, queries), tol)
    np.testing.assert_allclose(scores, ref_scores, atol=tol)
    rows = np.array([3, 40, 2999])
    _, own = exact_topk(Xn, Xn[rows], 4, exclude=rows)
    assert not (own == rows[:, None]).any()  # each query left itself out
    np.testing.assert_array_equal(own, brute_force(data, data[rows], 5)[1][:, 1:])  # gaps > 2e-4 here


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
    raw_scores, raw_ids = brute_force(data, data[change.ids], 7)
    cal_scores, cal_ids = brute_force(cal, cal[change.ids], 7)
    # column 0 is the row itself: the top-5 sets are decided by the gap between columns 5 and 6, which is
    # above the worst-case float32 round-off of the library's ranking, so the sets are the same on any CPU
    for sc in (raw_scores, cal_scores):
        assert (sc[:, 5] - sc[:, 6]).min() > float32_dot_tolerance(48)
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
    ref_scores, _ = brute_force(data, data, 8)  # row itself first (cos 1) for distinct rows
    tol = float32_dot_tolerance(data.shape[1])
    assert_valid_topk(ids, cosines64(data, data), tol)
    np.testing.assert_allclose(dist, 1.0 - ref_scores, atol=tol)
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
