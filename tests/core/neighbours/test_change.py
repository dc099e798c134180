"""isoscope.neighbours.change: overlap@k and rank shifts of a few queries and of every text, between two spaces."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.neighbours.change import neighbourhood_change, neighbours_before_after
from tests.data_helpers import brute_force, clustered, float32_dot_tolerance


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Reference: |A & B| / |A | B| of two id lists, with Python sets."""
    sa, sb = set(a.tolist()), set(b.tolist())
    return len(sa & sb) / len(sa | sb)


def _circle(degrees: list[float]) -> np.ndarray:
    rad = np.deg2rad(degrees)
    return np.stack([np.cos(rad), np.sin(rad)], axis=1).astype(np.float32)  # (n, 2)


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return clustered(3000, 48, 25, seed=0)


@pytest.fixture(scope="module")
def queries() -> np.ndarray:
    """New points around the same centres as ``data``."""
    return clustered(200, 48, 25, seed=0) + np.float32(0.05)


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
