"""isoscope.calibrate.linear: known-answer geometry of whitening, centring, sn, all-but-the-top and chains; inverses."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.calibrate import (
    AllButTheTop,
    Centering,
    Chain,
    Flow,
    Identity,
    StandardNormalization,
    Whitening,
)
from tests.core.calibrate.synthetic import (
    D,
    embedding_like,
)


def test_whitening_gives_identity_covariance_and_truncates(synth):
    Z = Whitening().fit(synth).transform(synth)
    assert Z.dtype == np.float32
    np.testing.assert_allclose(Z.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(np.cov(Z.T), np.eye(D), atol=1e-4)
    w3 = Whitening(n_components=3).fit(synth)
    Z3 = w3.transform(synth)
    assert Z3.shape == (len(synth), 3)
    # the pseudo-inverse reconstructs the projection onto the top 3 principal directions
    centred = synth - synth.mean(0)
    vecs = np.linalg.eigh(np.cov(centred.T))[1][:, ::-1][:, :3]
    np.testing.assert_allclose(w3.inverse_transform(Z3) - synth.mean(0), centred @ vecs @ vecs.T, atol=1e-4)


def test_whitening_clips_tiny_eigenvalues():
    X = embedding_like(500, d=16)  # a LayerNorm: one direction has (numerically) zero variance
    w = Whitening(eps=1e-6).fit(X)
    assert w.eigenvalues_.min() >= 1e-6 * w.eigenvalues_.max()  # the floor is relative to the largest
    assert np.isfinite(w.transform(X)).all()


def test_whitening_floor_is_relative_so_the_map_is_scale_invariant():
    """Whitening c X gives the same z for any c > 0; an absolute floor (1e-6) broke this for small-scale
    vectors, whose eigenvalues all fell under it."""
    X = embedding_like(500, d=16).astype(np.float64)
    z = Whitening().fit(X).transform(X)
    for c in (1e-4, 1e4):
        zc = Whitening().fit(c * X).transform(c * X)
        # float32 output: relative error ~1e-7 per entry, amplified by the conditioning of the fit (~1e3 here)
        np.testing.assert_allclose(zc, z, rtol=0, atol=1e-3 * np.abs(z).max())


def test_whitening_equals_scikit_learn_pca_whiten_up_to_sign(synth):
    """Known answer: sklearn.decomposition.PCA(whiten=True) is the same map (components up to sign)."""
    from sklearn.decomposition import PCA

    ours = Whitening().fit(synth).transform(synth).astype(np.float64)  # (n, d)
    theirs = PCA(whiten=True, svd_solver="full").fit(synth).transform(synth)  # (n, d)
    signs = np.sign(np.sum(ours * theirs, axis=0))  # per component
    assert set(np.unique(signs)) <= {-1.0, 1.0}
    # both are O(1) per entry; float32 output and two eigen/SVD routes agree to ~1e-6
    np.testing.assert_allclose(ours, theirs * signs, rtol=0, atol=1e-5)
    k = Whitening(n_components=3).fit(synth).transform(synth).astype(np.float64)
    theirs3 = PCA(n_components=3, whiten=True, svd_solver="full").fit(synth).transform(synth)
    np.testing.assert_allclose(k, theirs3 * np.sign(np.sum(k * theirs3, axis=0)), rtol=0, atol=1e-5)


def test_standard_normalization_and_all_but_the_top(synth):
    Z = StandardNormalization().fit(synth).transform(synth)
    np.testing.assert_allclose(Z.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(Z.std(0, ddof=1), 1, atol=1e-5)
    abtt = AllButTheTop(n_components=2).fit(synth)
    Y = abtt.transform(synth)
    np.testing.assert_allclose(Y.mean(0), 0, atol=1e-4)
    assert np.abs(Y @ abtt.components_).max() < 1e-4  # the top directions are gone
    with pytest.raises(NotImplementedError, match="not invertible"):
        abtt.inverse_transform(Y)


def test_centring_removes_the_fit_mean_and_equals_abtt_with_no_direction(synth):
    fit, other = synth[: len(synth) // 2], synth[len(synth) // 2 :]
    centre = Centering().fit(fit)
    np.testing.assert_allclose(centre.mean_, fit.astype(np.float64).mean(0), rtol=1e-12)  # the fit set's mean
    np.testing.assert_allclose(centre.transform(other), other - fit.astype(np.float64).mean(0), atol=1e-5)
    np.testing.assert_allclose(centre.transform(fit), AllButTheTop(0).fit(fit).transform(fit), atol=1e-5)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Centering(),
        lambda: Whitening(),
        lambda: StandardNormalization(),
        lambda: Identity(),
        lambda: Chain([StandardNormalization(), Whitening()]),
        "flow",
    ],
    ids=["centre", "whitening", "sn", "none", "chain", "flow"],
)
def test_inverse_transform_recovers_the_input(make, synth, small_flow):
    cal = small_flow if make == "flow" else make().fit(synth)
    X = synth[:300]
    np.testing.assert_allclose(cal.inverse_transform(cal.transform(X)), X, atol=1e-4, rtol=0)


def test_multiscale_flow_round_trips(synth):
    flow = Flow(epochs=1, n_levels=3, n_steps=2, hidden=16, coupling="affine").fit(synth)
    np.testing.assert_allclose(flow.inverse_transform(flow.transform(synth[:200])), synth[:200], atol=1e-4)
