"""STS evaluation: cosines on hand examples, correlations against scipy, degenerate input, rank shifts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from isoscope.evaluate.similarity import rank_shift, sts_evaluate, sts_scores
from isoscope.geometry.pairs import correlations, cosine_pairs, l2_normalize


def test_cosine_pairs_hand_examples() -> None:
    a = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0], [3.0, 4.0]])
    b = np.array([[0.0, 1.0], [2.0, 2.0], [0.0, -3.0], [4.0, 3.0]])
    np.testing.assert_allclose(cosine_pairs(a, b), [0.0, 1.0, -1.0, 24 / 25], atol=1e-12)


def test_cosine_pairs_scale_invariant_and_float32_input() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((50, 8)), rng.standard_normal((50, 8))
    expected = np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    np.testing.assert_allclose(cosine_pairs(a * 7.0, b * 0.01), expected, atol=1e-12)
    np.testing.assert_allclose(cosine_pairs(a.astype(np.float32), b.astype(np.float32)), expected, atol=1e-6)


def test_cosine_pairs_zero_vector_is_zero_not_nan() -> None:
    out = cosine_pairs(np.zeros((1, 3)), np.ones((1, 3)))
    assert out.tolist() == [0.0]


def test_cosine_pairs_shape_mismatch() -> None:
    with pytest.raises(ValueError, match="shapes differ"):
        cosine_pairs(np.ones((3, 2)), np.ones((2, 2)))


def test_l2_normalize() -> None:
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(l2_normalize(x), [[0.6, 0.8], [0.0, 0.0]])


def test_correlations_match_scipy_x100() -> None:
    rng = np.random.default_rng(1)
    gold = rng.uniform(0, 5, 200)
    pred = gold + rng.normal(0, 1.5, 200)
    out = correlations(pred, gold)
    assert out["spearman"] == pytest.approx(spearmanr(pred, gold)[0] * 100, abs=1e-9)
    assert out["pearson"] == pytest.approx(pearsonr(pred, gold)[0] * 100, abs=1e-9)
    assert 0 < out["pearson"] < 100


def test_correlations_monotonic_but_nonlinear() -> None:
    gold = np.arange(10, dtype=float)
    out = correlations(np.exp(gold), gold)
    assert out["spearman"] == pytest.approx(100.0)
    assert out["pearson"] < 90.0


def test_correlations_reversed_is_minus_100() -> None:
    gold = np.array([0.0, 1.0, 2.0, 3.0, 5.0])
    out = correlations(-gold, gold)
    assert out["spearman"] == pytest.approx(-100.0)
    assert out["pearson"] == pytest.approx(-100.0)


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]),  # constant gold
        ([0.5, 0.5, 0.5, 0.5], [1.0, 2.0, 3.0, 4.0]),  # constant prediction
        ([0.1, 0.9], [1.0, 4.0]),  # fewer than three pairs
        ([], []),
    ],
)
def test_correlations_degenerate_is_nan(pred, gold) -> None:
    out = correlations(np.array(pred), np.array(gold))
    assert math.isnan(out["spearman"]) and math.isnan(out["pearson"])


def test_correlations_length_mismatch() -> None:
    with pytest.raises(ValueError, match="3 predictions for 2"):
        correlations(np.ones(3), np.ones(2))


def test_sts_evaluate_with_and_without_gold() -> None:
    a = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.2]])
    b = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    gold = np.array([5.0, 3.0, 0.0, 4.5])
    res = sts_evaluate(a, b, gold)
    assert res["n_pairs"] == 4
    np.testing.assert_allclose(res["cosine"], cosine_pairs(a, b))
    assert res["spearman"] == pytest.approx(100.0)
    no_gold = sts_evaluate(a, b, None)
    assert "spearman" not in no_gold and no_gold["n_pairs"] == 4


def test_rank_shift_hand_example() -> None:
    before = np.array([0.9, 0.5, 0.1, 0.7])  # ranks 0, 2, 3, 1
    after = np.array([0.2, 0.6, 0.95, 0.4])  # ranks 3, 1, 0, 2
    np.testing.assert_array_equal(rank_shift(before, after), [-3, 1, 3, -1])


def test_rank_shift_unchanged_order_is_zero() -> None:
    before = np.array([0.3, 0.1, 0.8])
    np.testing.assert_array_equal(rank_shift(before, before * 2 + 1), [0, 0, 0])


def test_sts_scores_is_the_correlation_of_the_pair_cosines() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((40, 6)), rng.standard_normal((40, 6))
    gold = rng.uniform(0, 5, 40)
    cos = np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    expected = {"spearman": 100 * spearmanr(cos, gold).statistic, "pearson": 100 * pearsonr(cos, gold).statistic}
    assert sts_scores(a, b, gold) == pytest.approx(expected, rel=1e-9)
    assert sts_scores(2.5 * a, b, gold) == pytest.approx(expected, rel=1e-9)  # cosine ignores length
