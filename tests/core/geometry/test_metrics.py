"""Known-answer, invariance and input-validation tests for isoscope.geometry.metrics."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from isoscope.geometry import metrics as m

N, D = 5000, 50


def _orthogonal(d: int, seed: int) -> np.ndarray:
    """Random ``(d, d)`` orthogonal matrix from the QR decomposition of a Gaussian matrix."""
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return q * np.sign(np.diag(r))  # (d, d)


@pytest.fixture(scope="module")
def gauss() -> np.ndarray:
    """Isotropic Gaussian cloud, ``(5000, 50)``."""
    return np.random.default_rng(1).standard_normal((N, D))


@pytest.fixture(scope="module")
def line() -> np.ndarray:
    """Points on a 1-D subspace (a line through the origin) in R^50, ``(5000, 50)``."""
    rng = np.random.default_rng(2)
    direction = rng.standard_normal(D)
    return rng.standard_normal((N, 1)) * direction[None, :]


@pytest.fixture(scope="module")
def cone(gauss: np.ndarray) -> np.ndarray:
    """Isotropic Gaussian shifted far from the origin: a narrow cone of directions."""
    return gauss + 10.0


@pytest.fixture(scope="module")
def anisotropic() -> np.ndarray:
    """Gaussian with a decaying spectrum plus an offset, ``(2000, 30)``."""
    rng = np.random.default_rng(3)
    scales = 1.0 / np.arange(1, 31)
    return rng.standard_normal((2000, 30)) * scales + rng.standard_normal(30)


# ------------------------------------------------------------------ isotropic Gaussian


def test_gaussian_isoscore_near_one(gauss: np.ndarray) -> None:
    assert m.isoscore(gauss) > 0.9


def test_gaussian_avg_cosine_near_zero(gauss: np.ndarray) -> None:
    assert abs(m.avg_cosine(gauss)) < 0.02


def test_gaussian_partition_isotropy_high(gauss: np.ndarray) -> None:
    assert 0.5 < m.partition_isotropy(gauss) <= 1.0


def test_gaussian_effective_rank_close_to_d(gauss: np.ndarray) -> None:
    assert 0.95 * D < m.effective_rank(gauss) <= D


def test_gaussian_explained_variance_flat(gauss: np.ndarray) -> None:
    ev = m.explained_variance(gauss, k=10)
    assert ev.shape == (10,)
    assert np.all(np.diff(ev) <= 0)
    assert ev[0] < 1.5 / D


# ------------------------------------------------------------------ 1-D subspace


def test_line_isoscore_near_zero(line: np.ndarray) -> None:
    assert m.isoscore(line) < 0.05


def test_line_effective_rank_near_one(line: np.ndarray) -> None:
    assert m.effective_rank(line) < 1.5


def test_line_explained_variance_top1_is_all(line: np.ndarray) -> None:
    assert m.explained_variance(line, k=1)[0] == pytest.approx(1.0, abs=1e-9)


def test_line_partition_isotropy_low(line: np.ndarray) -> None:
    assert m.partition_isotropy(line) < 1e-3


# ------------------------------------------------------------------ shifted cone: metrics disagree


def test_cone_avg_cosine_high_but_isoscore_high(cone: np.ndarray) -> None:
    """A common offset makes every cosine ~1, yet the centred cloud is still isotropic."""
    assert m.avg_cosine(cone) > 0.9
    assert m.isoscore(cone) > 0.9
    assert m.effective_rank(cone) > 0.95 * D


def test_cone_partition_isotropy_sees_offset(cone: np.ndarray) -> None:
    """Partition isotropy is uncentred, so it flags the offset; it stays finite (log-space)."""
    value = m.partition_isotropy(cone)
    assert 0.0 <= value < 1e-3


def test_cone_uncentred_effective_rank_collapses(cone: np.ndarray) -> None:
    assert m.effective_rank(cone, center=False) < m.effective_rank(cone, center=True) / 2


# ------------------------------------------------------------------ hand-checked small matrices


def test_avg_cosine_hand_3x2() -> None:
    # cos(e1, e2) = 0, cos(e1, e1+e2) = cos(e2, e1+e2) = 1/sqrt(2)  ->  mean sqrt(2)/3
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert m.avg_cosine(X) == pytest.approx(math.sqrt(2) / 3, abs=1e-12)


def test_avg_cosine_hand_2x2_opposite() -> None:
    X = np.array([[1.0, 2.0], [-3.0, -6.0]])
    assert m.avg_cosine(X) == pytest.approx(-1.0, abs=1e-12)


def test_cosine_histogram_sample_all_pairs_small() -> None:
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    got = m.cosine_histogram_sample(X, n_pairs=100, seed=0)
    # triu order: (0, 1), (0, 2), (1, 2)
    np.testing.assert_allclose(got, [0.0, 1 / math.sqrt(2), 1 / math.sqrt(2)], atol=1e-12)


def test_effective_rank_hand_uncentred() -> None:
    # singular values (3, 1) -> p = (3/4, 1/4), H = -(3/4 ln 3/4 + 1/4 ln 1/4)
    X = np.array([[3.0, 0.0], [0.0, 1.0]])
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert m.effective_rank(X, center=False) == pytest.approx(math.exp(h), rel=1e-12)


def test_effective_rank_hand_centred() -> None:
    # rows e1, e2 centred -> (1/2, -1/2), (-1/2, 1/2): rank 1, one non-zero singular value
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert m.effective_rank(X) == pytest.approx(1.0, abs=1e-12)
    assert m.effective_rank(X, center=False) == pytest.approx(2.0, abs=1e-12)


def test_singular_values_hand() -> None:
    X = np.array([[3.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(m.singular_values(X, center=False), [3.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(m.singular_values(X), np.linalg.svd(X - X.mean(0), compute_uv=False), atol=1e-12)


def test_singular_values_wide_matrix_matches_svd() -> None:
    X = np.random.default_rng(4).standard_normal((5, 12))  # n < d uses the (n, n) Gram
    for center in (True, False):
        M = X - X.mean(0) if center else X
        ref = np.linalg.svd(M, compute_uv=False)
        # the Gram route resolves singular values to sqrt(max(n, d) eps) s_max (eigenvalue round-off is
        # ~eps s_max^2); centring makes one of the five exactly 0, which it must report as 0
        atol = np.sqrt(12 * np.finfo(np.float64).eps) * ref[0]
        np.testing.assert_allclose(m.singular_values(X, center=center), ref, rtol=1e-9, atol=atol)


@pytest.mark.parametrize(("n", "d", "rank"), [(5, 12, 3), (40, 12, 7), (300, 64, 1)])
def test_singular_values_of_rank_deficient_data_are_exactly_zero(n: int, d: int, rank: int) -> None:
    """Exact property, on any CPU: rank-r data has exactly min(n, d) - r zero singular values (uncentred),
    not sqrt of eigenvalue round-off (~1e-8 s_max, different on every BLAS)."""
    rng = np.random.default_rng(rank)
    X = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, d))  # (n, d) of rank r
    s = m.singular_values(X, center=False)
    assert s.shape == (min(n, d),)
    assert np.count_nonzero(s) == rank
    assert (s[:rank] > 0).all() and (s[rank:] == 0).all()


def test_alignment_hand() -> None:
    # normalised B = [(0, 1), (0, 1)]; squared distances 2 and 0 -> mean 1; alpha=1 -> sqrt(2)/2
    A = np.array([[1.0, 0.0], [0.0, 1.0]])
    B = np.array([[0.0, 1.0], [0.0, 2.0]])
    assert m.alignment(A, B) == pytest.approx(1.0, abs=1e-12)
    assert m.alignment(A, B, alpha=1) == pytest.approx(math.sqrt(2) / 2, abs=1e-12)


def test_alignment_zero_for_identical_pairs(gauss: np.ndarray) -> None:
    assert m.alignment(gauss, gauss) == pytest.approx(0.0, abs=1e-12)
    assert m.alignment(gauss, 3.0 * gauss) == pytest.approx(0.0, abs=1e-12)  # scale-free


def test_uniformity_hand_two_orthogonal_points() -> None:
    # ||e1 - e2||^2 = 2 -> log exp(-2 * 2) = -4
    X = np.array([[1.0, 0.0], [0.0, 5.0]])
    assert m.uniformity(X) == pytest.approx(-4.0, abs=1e-12)
    assert m.uniformity(X, t=1) == pytest.approx(-2.0, abs=1e-12)


def test_uniformity_matches_bruteforce(anisotropic: np.ndarray) -> None:
    X = anisotropic[:700]  # spans two row blocks
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    sq = ((U[:, None, :] - U[None, :, :]) ** 2).sum(-1)
    iu = np.triu_indices(len(U), k=1)
    expected = math.log(np.mean(np.exp(-2 * sq[iu])))
    assert m.uniformity(X) == pytest.approx(expected, rel=1e-10)


def test_partition_isotropy_hand() -> None:
    # X^T X = diag(8, 2): c = +-e1 gives Z = 2 + 2 cosh 2, c = +-e2 gives Z = 2 + 2 cosh 1
    X = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    expected = (1 + math.cosh(1)) / (1 + math.cosh(2))
    assert m.partition_isotropy(X) == pytest.approx(expected, rel=1e-12)


def test_partition_isotropy_hand_uses_both_signs() -> None:
    # X^T X = diag(1, 4): Z(+-e1) = 1 + e^{+-1}, Z(+-e2) = 1 + e^{+-2}; min/max = (1 + e^-2) / (1 + e^2)
    X = np.array([[1.0, 0.0], [0.0, 2.0]])
    expected = (1 + math.exp(-2)) / (1 + math.exp(2))
    assert m.partition_isotropy(X) == pytest.approx(expected, rel=1e-12)
    assert m.partition_isotropy(-X) == pytest.approx(expected, rel=1e-12)


def test_partition_isotropy_no_overflow_for_large_norms(gauss: np.ndarray) -> None:
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        value = m.partition_isotropy(gauss * 1e3 + 1.0)
    assert 0.0 <= value <= 1.0


@pytest.mark.parametrize(("d", "k"), [(2, 1), (2, 2), (4, 2), (10, 1), (10, 4), (10, 10)])
def test_isoscore_uses_k_of_d_axes(d: int, k: int) -> None:
    """Rudman et al.: a cloud spread evenly over k of d axes scores exactly (k - 1) / (d - 1)."""
    eye = np.eye(d)[:k]
    X = np.vstack([eye, -eye])  # rows +-e_1..+-e_k: zero mean, covariance prop. to diag(1..1, 0..0)
    assert m.isoscore(X) == pytest.approx((k - 1) / (d - 1), abs=1e-12)


def test_explained_variance_hand() -> None:
    X = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 1.0], [0.0, -1.0]])  # variances 8/3 and 2/3
    np.testing.assert_allclose(m.explained_variance(X, k=5), [0.8, 0.2], atol=1e-12)


# ------------------------------------------------------------------ uniformity ordering, sampling


def test_uniformity_more_negative_when_spread(gauss: np.ndarray) -> None:
    rng = np.random.default_rng(5)
    clustered = np.ones((1000, D)) + 0.05 * rng.standard_normal((1000, D))
    spread = gauss[:1000]
    assert m.uniformity(spread) < m.uniformity(clustered) - 1.0
    assert m.uniformity(clustered) > -0.5


def test_sampled_avg_cosine_close_to_exact(anisotropic: np.ndarray) -> None:
    X = anisotropic  # n = 2000 -> ~2M pairs > n_pairs, so the sampled branch runs
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    G = U @ U.T
    exact = (G.sum() - np.trace(G)) / (len(U) * (len(U) - 1))
    assert m.avg_cosine(X, n_pairs=20_000) == pytest.approx(exact, abs=0.01)
    assert m.avg_cosine(X, n_pairs=10**7) == pytest.approx(exact, abs=1e-10)  # exact branch


def test_sampled_pairs_never_pair_a_row_with_itself() -> None:
    X = np.eye(200)  # distinct rows are orthogonal, a self-pair would give cosine 1
    cos = m.cosine_histogram_sample(X, n_pairs=5000, seed=3)
    assert cos.shape == (5000,)
    assert np.max(np.abs(cos)) < 1e-12


def test_avg_cosine_is_mean_of_histogram_sample(anisotropic: np.ndarray) -> None:
    sample = m.cosine_histogram_sample(anisotropic, n_pairs=3000, seed=7)
    assert m.avg_cosine(anisotropic, n_pairs=3000, seed=7) == pytest.approx(float(sample.mean()), rel=1e-12)


# ------------------------------------------------------------------ determinism


def test_determinism_with_seed(anisotropic: np.ndarray) -> None:
    a = m.cosine_histogram_sample(anisotropic, n_pairs=1000, seed=11)
    b = m.cosine_histogram_sample(anisotropic, n_pairs=1000, seed=11)
    c = m.cosine_histogram_sample(anisotropic, n_pairs=1000, seed=12)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert m.avg_cosine(anisotropic, n_pairs=500, seed=1) == m.avg_cosine(anisotropic, n_pairs=500, seed=1)
    assert m.avg_cosine(anisotropic, n_pairs=500, seed=1) != m.avg_cosine(anisotropic, n_pairs=500, seed=2)
    u1 = m.uniformity(anisotropic, max_points=300, seed=1)
    assert u1 == m.uniformity(anisotropic, max_points=300, seed=1)
    assert u1 != m.uniformity(anisotropic, max_points=300, seed=2)
    assert m.all_metrics(anisotropic, seed=4) == m.all_metrics(anisotropic, seed=4)


# ------------------------------------------------------------------ invariances


def test_rotation_invariance(anisotropic: np.ndarray) -> None:
    Q = _orthogonal(anisotropic.shape[1], seed=9)
    R = anisotropic @ Q  # (n, d)
    assert m.isoscore(R) == pytest.approx(m.isoscore(anisotropic), rel=1e-9)
    assert m.effective_rank(R) == pytest.approx(m.effective_rank(anisotropic), rel=1e-9)
    assert m.avg_cosine(R) == pytest.approx(m.avg_cosine(anisotropic), rel=1e-9)
    assert m.uniformity(R) == pytest.approx(m.uniformity(anisotropic), rel=1e-9)


def test_isoscore_ignores_offset_and_scale(anisotropic: np.ndarray) -> None:
    base = m.isoscore(anisotropic)
    assert m.isoscore(5.0 * anisotropic + 100.0) == pytest.approx(base, rel=1e-9)
    assert 0.0 < base < 0.5  # decaying spectrum is clearly anisotropic


# ------------------------------------------------------------------ aggregates


def test_all_metrics_keys_and_consistency(anisotropic: np.ndarray) -> None:
    got = m.all_metrics(anisotropic, seed=0)
    assert set(got) == {
        "avg_cosine",
        "isoscore",
        "partition_isotropy",
        "effective_rank",
        "explained_variance_top1",
        "explained_variance_top10",
        "uniformity",
    }
    assert all(isinstance(v, float) for v in got.values())
    ev = m.explained_variance(anisotropic, k=10)
    assert got["avg_cosine"] == pytest.approx(m.avg_cosine(anisotropic, seed=0), rel=1e-12)
    assert got["isoscore"] == pytest.approx(m.isoscore(anisotropic), rel=1e-12)
    assert got["partition_isotropy"] == pytest.approx(m.partition_isotropy(anisotropic), rel=1e-12)
    assert got["effective_rank"] == pytest.approx(m.effective_rank(anisotropic), rel=1e-12)
    assert got["explained_variance_top1"] == pytest.approx(ev[0], rel=1e-12)
    assert got["explained_variance_top10"] == pytest.approx(ev.sum(), rel=1e-12)
    assert got["uniformity"] == pytest.approx(m.uniformity(anisotropic, seed=0), rel=1e-12)


def test_all_metrics_small_d_top10_is_total() -> None:
    X = np.random.default_rng(6).standard_normal((50, 3))
    assert m.all_metrics(X)["explained_variance_top10"] == pytest.approx(1.0, abs=1e-12)


def test_per_layer_metrics_list_and_stacked(anisotropic: np.ndarray, gauss: np.ndarray) -> None:
    layers = [anisotropic[:500], anisotropic[500:1000]]
    from_list = m.per_layer_metrics(layers, seed=2)
    from_array = m.per_layer_metrics(np.stack(layers), seed=2)
    assert len(from_list) == 2
    assert from_list == from_array
    assert from_list[0] == m.all_metrics(layers[0], seed=2)
    mixed = m.per_layer_metrics([anisotropic[:100], gauss[:100]])  # shapes may differ per layer
    assert mixed[1]["isoscore"] > mixed[0]["isoscore"]


def test_per_layer_metrics_reports_each_layer_done(gauss: np.ndarray) -> None:
    calls: list[tuple[int, int]] = []
    m.per_layer_metrics([gauss[:50], gauss[50:100], gauss[100:150]], progress=lambda d, t: calls.append((d, t)))
    assert calls == [(1, 3), (2, 3), (3, 3)]


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("func", "X", "message"),
    [
        (m.isoscore, np.ones(5), "must be 2-D"),
        (m.avg_cosine, np.ones((2, 3, 4)), "must be 2-D"),
        (m.effective_rank, np.ones((1, 4)), "at least 2 rows"),
        (m.partition_isotropy, np.ones((0, 4)), "at least 2 rows"),
        (m.uniformity, np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN or inf"),
        (m.all_metrics, np.array([[1.0, np.inf], [0.0, 1.0]]), "NaN or inf"),
        (m.explained_variance, [["a", "b"], ["c", "d"]], "numeric"),
        (m.avg_cosine, np.array([[0.0, 0.0], [1.0, 1.0]]), "all-zero row"),
        (m.isoscore, np.ones((5, 3)), "zero variance"),
        (m.effective_rank, np.ones((5, 3)), "zero variance"),
        (m.isoscore, np.arange(5.0)[:, None], "d >= 2"),
    ],
)
def test_bad_input_raises_value_error(func: Callable[[object], object], X: object, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        func(X)
    assert "\n" not in str(info.value)


def test_bad_arguments_raise_value_error(gauss: np.ndarray) -> None:
    with pytest.raises(ValueError, match="same shape"):
        m.alignment(gauss, gauss[:10])
    with pytest.raises(ValueError, match="n_pairs"):
        m.avg_cosine(gauss, n_pairs=0)
    with pytest.raises(ValueError, match="k must be"):
        m.explained_variance(gauss, k=0)
    with pytest.raises(ValueError, match="t must be"):
        m.uniformity(gauss, t=0)
    with pytest.raises(ValueError, match="L, n, d"):
        m.per_layer_metrics(np.ones((4, 3)))
    with pytest.raises(ValueError, match="empty"):
        m.per_layer_metrics([])
