"""Neighbour overlap against a brute-force reference, and hubness on hand-made neighbour tables."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import skew

from isoscope.comparison.hubness import hubness
from isoscope.errors import InputError
from isoscope.neighbours import exact, overlap
from isoscope.neighbours.exact import knn_table
from isoscope.neighbours.overlap import jaccard_tables, neighbour_overlap


def reference_knn(X: np.ndarray, k: int) -> np.ndarray:
    """Top-k by cosine from the full (n, n) matrix in float64, the text itself left out. (n, k)"""
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = U @ U.T
    np.fill_diagonal(S, -np.inf)
    return np.argsort(-S, axis=1, kind="stable")[:, :k]


def reference_jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([len(set(x) & set(y)) / len(set(x) | set(y)) for x, y in zip(a, b, strict=True)])


@pytest.fixture()
def spaces() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    A = rng.standard_normal((300, 12))
    B = A + 0.8 * rng.standard_normal((300, 12))  # a noisy copy: neighbourhoods partly kept
    return A, B


def test_self_comparison_is_exactly_one(spaces) -> None:
    A, _ = spaces
    for B in (A, A.copy(), A.astype(np.float32)):
        result = neighbour_overlap(A, B, k=10)
        assert result.overlap_at_k == 1.0
        assert (result.overlap == 1.0).all() and (result.shared == 10).all()
        np.testing.assert_array_equal(result.neighbours_a, result.neighbours_b)


def test_rotation_keeps_every_neighbourhood(spaces) -> None:
    A, _ = spaces
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((12, 12)))
    assert neighbour_overlap(A, A @ q * 5.0, k=5).overlap_at_k == 1.0


def test_matches_brute_force(spaces) -> None:
    A, B = spaces
    result = neighbour_overlap(A, B, k=7)
    np.testing.assert_array_equal(result.neighbours_a, reference_knn(A, 7))
    np.testing.assert_array_equal(result.neighbours_b, reference_knn(B, 7))
    np.testing.assert_allclose(result.overlap, reference_jaccard(reference_knn(A, 7), reference_knn(B, 7)), rtol=0)
    assert 0.0 < result.overlap_at_k < 1.0
    assert (result.neighbours_a != np.arange(300)[:, None]).all()  # a text is never its own neighbour


def test_blocks_do_not_change_the_result(spaces, monkeypatch: pytest.MonkeyPatch) -> None:
    A, B = spaces
    whole = neighbour_overlap(A, B, k=6)
    monkeypatch.setattr(exact, "QUERY_BLOCK", 17)
    monkeypatch.setattr(overlap, "JACCARD_BLOCK", 5)
    blocked = neighbour_overlap(A, B, k=6)
    np.testing.assert_array_equal(blocked.neighbours_b, whole.neighbours_b)
    np.testing.assert_array_equal(blocked.overlap, whole.overlap)


def test_histogram_most_changed_and_lists(spaces) -> None:
    A, B = spaces
    texts = [f"t{i}" for i in range(300)]
    result = neighbour_overlap(A, B, k=4)
    hist = result.histogram()
    assert list(hist["shared"]) == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(hist["jaccard"], [0, 1 / 7, 2 / 6, 3 / 5, 1])
    assert hist["texts"].sum() == 300 and hist["share"].sum() == pytest.approx(1.0)
    moved = result.most_changed(10)
    assert list(result.overlap[moved]) == sorted(result.overlap[moved])
    assert result.overlap[moved[-1]] <= np.sort(result.overlap)[10]
    lists = result.neighbour_lists(int(moved[0]), texts)
    assert list(lists["a_id"]) == list(result.neighbours_a[moved[0]])
    assert lists["a_text"][0] == texts[result.neighbours_a[moved[0], 0]]
    assert lists["a_in_b"].sum() == result.shared[moved[0]]


def test_jaccard_of_hand_tables() -> None:
    shared, jac = jaccard_tables(np.array([[1, 2, 3], [4, 5, 6]]), np.array([[3, 2, 9], [7, 8, 0]]))
    assert list(shared) == [2, 0]
    np.testing.assert_allclose(jac, [2 / 4, 0.0])


def test_progress_counts_both_spaces(spaces) -> None:
    A, B = spaces
    seen: list[tuple[int, int]] = []
    neighbour_overlap(A, B, k=3, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (600, 600) and all(t == 600 for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_bad_k_and_shapes() -> None:
    X = np.random.default_rng(2).standard_normal((5, 3))
    with pytest.raises(InputError, match="at most"):
        knn_table(X, 5)
    with pytest.raises(InputError, match="positive"):
        knn_table(X, 0)
    with pytest.raises(InputError, match="same texts"):
        neighbour_overlap(X, X[:4], 2)


def test_hubness_hand_case() -> None:
    # text 0 is everyone's neighbour, text 3 nobody's
    table = np.array([[1, 2], [0, 2], [0, 1], [0, 1]])
    h = hubness(table)
    assert list(h.k_occurrence) == [3, 3, 2, 0]
    assert h.k_occurrence.mean() == h.k  # always: n * k entries over n texts
    assert h.antihub_share == 0.25
    assert h.skewness == pytest.approx(float(skew([3, 3, 2, 0])))
    assert list(h.top(3)) == [0, 1, 2]  # ties by row id
    summary = h.summary(["a", "b", "c", "d"], m=2)
    assert summary["top"] == [{"id": 0, "k_occurrence": 3, "text": "a"}, {"id": 1, "k_occurrence": 3, "text": "b"}]
    assert summary["max_occurrence"] == 3


def test_hubness_constant_counts_have_no_skewness() -> None:
    h = hubness(np.array([[1], [2], [0]]))  # a 3-cycle: every text once
    assert np.isnan(h.skewness) and h.antihub_share == 0.0


def test_hubness_grows_with_dimension() -> None:
    """Radovanovic et al.'s observation (their Fig. 1, cosine on i.i.d. uniform data): N_10 is nearly symmetric
    in 3 dimensions and strongly right-skewed in 100 (skewness about 0.1 vs 3.6 for 2,000 points)."""
    rng = np.random.default_rng(3)
    low = hubness(knn_table(rng.random((2000, 3)), 10)[0]).skewness
    high = hubness(knn_table(rng.random((2000, 100)), 10)[0]).skewness
    assert low < 0.5 < 2.0 < high
