"""isoscope.neighbours.exact: exact top-k (ties by row id), the kNN table and its one rule for k, the kNN graph."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.neighbours.exact import exact_topk, knn_graph
from isoscope.neighbours.index import build_index
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
