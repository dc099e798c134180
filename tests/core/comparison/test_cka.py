"""Known answers of linear and debiased CKA (Kornblith et al. 2019; unbiased HSIC of Song et al. 2012)."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.comparison import cka
from isoscope.comparison.cka import cka_matrix, debiased_cka, linear_cka
from isoscope.errors import InputError

EPS = float(np.finfo(np.float64).eps)


def tol(n: int, d: int) -> float:
    """Rounding bound of a CKA ratio in float64: each Gram entry is a length-n dot product and each Frobenius
    norm sums d^2 of them, so relative errors are at most ~(n + d^2) eps; x10 for the handful of such terms."""
    return 10 * (n + d * d) * EPS


def orthogonal(d: int, seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return q * np.sign(np.diag(r))  # (d, d), Haar-distributed, may include a reflection


def reference_hsic_unbiased(K: np.ndarray, L: np.ndarray) -> float:
    """Song et al. (2012), eq. (5): the unbiased HSIC estimator from the (n, n) kernel matrices, verbatim."""
    n = len(K)
    K, L = K.copy(), L.copy()
    np.fill_diagonal(K, 0.0)
    np.fill_diagonal(L, 0.0)
    one = np.ones(n)
    return float(
        (np.trace(K @ L) + (one @ K @ one) * (one @ L @ one) / ((n - 1) * (n - 2)) - 2 / (n - 2) * (one @ K @ L @ one))
        / (n * (n - 3))
    )


def reference_cka(X: np.ndarray, Y: np.ndarray, debiased: bool) -> float:
    """CKA from (n, n) Gram matrices: biased HSIC tr(K H L H), or the unbiased estimator on centred features."""
    n = len(X)
    Xc, Yc = X - X.mean(axis=0), Y - Y.mean(axis=0)
    K, L = Xc @ Xc.T, Yc @ Yc.T
    if debiased:
        h = reference_hsic_unbiased
    else:
        H = np.eye(n) - 1.0 / n

        def h(A: np.ndarray, B: np.ndarray) -> float:
            return float(np.trace(A @ H @ B @ H))

    return h(K, L) / np.sqrt(h(K, K) * h(L, L))


@pytest.fixture()
def X() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((200, 16)) * np.linspace(0.5, 3.0, 16) + 5.0  # (n, d)


def test_invariant_to_rotation_reflection_scale_and_shift(X: np.ndarray) -> None:
    Y = X @ orthogonal(16, 1) * 3.7 - 2.0
    assert np.linalg.det(orthogonal(16, 1)) != 0
    assert linear_cka(X, Y) == pytest.approx(1.0, abs=tol(200, 16))
    assert debiased_cka(X, Y) == pytest.approx(1.0, abs=tol(200, 16))
    Z = X.copy()
    Z[:, 0] *= -1  # a pure reflection
    assert linear_cka(X, Z) == pytest.approx(1.0, abs=tol(200, 16))


def test_not_invariant_to_a_general_linear_map(X: np.ndarray) -> None:
    A = np.random.default_rng(2).standard_normal((16, 16))
    assert linear_cka(X, X @ A) < 1 - 1e-3


def test_matches_the_gram_matrix_formulas(X: np.ndarray) -> None:
    Y = np.tanh(X[:, :10] @ np.random.default_rng(3).standard_normal((10, 7))) + np.random.default_rng(
        4
    ).standard_normal((200, 7))
    for debiased, fn in ((False, linear_cka), (True, debiased_cka)):
        assert fn(X, Y) == pytest.approx(reference_cka(X, Y, debiased), abs=tol(200, 16))


def test_symmetric(X: np.ndarray) -> None:
    Y = np.random.default_rng(5).standard_normal((200, 9)) + X[:, :9] * 0.5
    assert linear_cka(X, Y) == pytest.approx(linear_cka(Y, X), abs=tol(200, 16))
    assert debiased_cka(X, Y) == pytest.approx(debiased_cka(Y, X), abs=tol(200, 16))
    m = cka_matrix([X, Y, X[:, :4]])
    np.testing.assert_array_equal(m.linear, m.linear.T)
    np.testing.assert_array_equal(m.debiased, m.debiased.T)


def test_model_against_itself_has_unit_diagonal(X: np.ndarray) -> None:
    rng = np.random.default_rng(6)
    layers = [X]
    for _ in range(3):
        layers.append(np.tanh(layers[-1] @ rng.standard_normal((16, 16)) / 4))
    copies = [layer.copy() for layer in layers]
    m = cka_matrix(layers, copies)  # the general (A vs B) path, not the shortcut for one list
    np.testing.assert_allclose(np.diag(m.linear), 1.0, rtol=0, atol=tol(200, 16))
    np.testing.assert_allclose(np.diag(m.debiased), 1.0, rtol=0, atol=tol(200, 16))
    np.testing.assert_allclose(m.linear, cka_matrix(layers).linear, rtol=0, atol=tol(200, 16))
    assert (m.linear[~np.eye(4, dtype=bool)] < 1 - 1e-3).all()


def test_independent_representations_biased_high_debiased_near_zero() -> None:
    rng = np.random.default_rng(7)
    X, Y = rng.standard_normal((100, 50)), rng.standard_normal((100, 50))
    assert linear_cka(X, Y) > 0.3  # the biased estimator's floor when n is only twice the dimensions
    assert abs(debiased_cka(X, Y)) < 0.05


def test_blocked_rows_equal_one_block(X: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    Y = np.sin(X[:, :12]).astype(np.float32)
    whole = cka_matrix([X, X[:, :5]], [Y])
    monkeypatch.setattr(cka, "ROW_BLOCK", 7)
    blocked = cka_matrix([X, X[:, :5]], [Y])
    np.testing.assert_allclose(blocked.linear, whole.linear, rtol=0, atol=tol(200, 16))
    np.testing.assert_allclose(blocked.debiased, whole.debiased, rtol=0, atol=tol(200, 16))


def test_undefined_cases_are_nan() -> None:
    rng = np.random.default_rng(8)
    assert np.isnan(linear_cka(np.ones((10, 3)), rng.standard_normal((10, 3))))  # a constant representation
    assert np.isnan(debiased_cka(rng.standard_normal((3, 2)), rng.standard_normal((3, 2))))  # n < 4
    assert not np.isnan(linear_cka(rng.standard_normal((3, 2)), rng.standard_normal((3, 2))))


def test_bad_input() -> None:
    rng = np.random.default_rng(9)
    with pytest.raises(InputError, match="same texts"):
        linear_cka(rng.standard_normal((10, 3)), rng.standard_normal((11, 3)))
    bad = rng.standard_normal((10, 3))
    bad[2, 1] = np.nan
    with pytest.raises(InputError, match="NaN"):
        linear_cka(bad, bad)
    with pytest.raises(InputError, match="2-D"):
        linear_cka(np.ones(10), np.ones((10, 2)))
    with pytest.raises(InputError, match="at least 2"):
        linear_cka(np.ones((1, 2)), np.ones((1, 2)))
