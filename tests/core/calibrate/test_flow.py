"""isoscope.calibrate.flow: the flow gaussianizes, starts as whitening, never diverges silently, is seeded."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from isoscope.calibrate import (
    Flow,
    FlowConfig,
    Whitening,
)
from isoscope.evaluate.similarity import cosine_pairs
from tests.core.calibrate.synthetic import (
    SYNTH_FLOW,
    D,
    distorted_gaussian,
    embedding_like,
    excess_kurtosis,
    gaussian_nll,
)


@pytest.mark.parametrize("seed", [0, 1])
def test_flow_gaussianizes_held_out_data_better_than_whitening(seed):
    train, test = distorted_gaussian(6000, seed), distorted_gaussian(8000, 100 + seed)
    flow = Flow(FlowConfig(seed=seed, **SYNTH_FLOW)).fit(train)
    whitening = Whitening().fit(train)
    z = flow.transform(test)
    assert z.dtype == np.float32 and z.shape == test.shape
    assert np.abs(z.mean(0)).max() < 0.1
    assert np.abs(np.cov(z.T) - np.eye(D)).max() < 0.15
    assert not flow.diverged_
    # more Gaussian than the best linear map: lower held-out NLL and kurtosis closer to 3
    flow_nll = -flow.score_samples(test).mean()
    assert flow_nll < gaussian_nll(whitening, test) - 0.2
    assert excess_kurtosis(z) < 0.7 * excess_kurtosis(whitening.transform(test))
    # training lowered bits/dim below the Gaussian (untrained) start
    assert flow.bits_per_dim_ < flow.gaussian_bits_per_dim_
    assert [h["epoch"] for h in flow.history_] == list(range(1, 31))


def test_untrained_flow_is_whitening_up_to_rotation(synth):
    flow = Flow(FlowConfig(epochs=0, noise_std=0.0)).fit(synth)
    zf, zw = flow.transform(synth), Whitening().fit(synth).transform(synth)
    a, b = synth[:700], synth[700:1400]
    cos_flow = cosine_pairs(flow.transform(a), flow.transform(b))
    cos_white = cosine_pairs(Whitening().fit(synth).transform(a), Whitening().fit(synth).transform(b))
    np.testing.assert_allclose(cos_flow, cos_white, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(zf, axis=1), np.linalg.norm(zw, axis=1), rtol=1e-3)


def test_flow_trains_without_diverging_on_realistic_anisotropic_vectors():
    """LayerNorm-like rank-deficient cone: the setting where a plain Glow diverged (NLL ~1e12)."""
    X = embedding_like(3000)
    raw_cos = float(np.mean(cosine_pairs(X[:1500], X[1500:])))
    for config in (FlowConfig(epochs=3), FlowConfig(epochs=3, lr=1e-3, linear="lu", coupling="affine")):
        flow = Flow(config).fit(X)
        Z = flow.transform(X)
        assert not flow.diverged_, config
        assert np.isfinite(Z).all()
        assert all(np.isfinite(h["bits_per_dim"]) for h in flow.history_)
        assert flow.bits_per_dim_ < flow.gaussian_bits_per_dim_ + 0.05
        assert raw_cos > 0.5 and abs(float(np.mean(cosine_pairs(Z[:1500], Z[1500:])))) < 0.05


def test_flow_divergence_keeps_last_good_state(synth, caplog):
    with caplog.at_level(logging.WARNING, logger="isoscope.calibrate"):
        flow = Flow(FlowConfig(epochs=4, lr=1e4, hidden=32, n_steps=2)).fit(synth)
    assert flow.diverged_
    assert "diverged" in caplog.text
    Z = flow.transform(synth)
    assert np.isfinite(Z).all()
    assert np.isfinite(flow.bits_per_dim_)
    assert len(flow.history_) < 4


def test_flow_is_deterministic_with_a_seed(synth):
    cfg = FlowConfig(epochs=2, hidden=32, n_steps=2, seed=3)
    a = Flow(cfg).fit(synth).transform(synth)
    b = Flow(cfg).fit(synth).transform(synth)
    c = Flow(FlowConfig(epochs=2, hidden=32, n_steps=2, seed=4)).fit(synth).transform(synth)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_flow_progress_and_history(synth):
    calls = []
    flow = Flow(FlowConfig(epochs=3, hidden=16, n_steps=1)).fit(synth, progress=lambda *a: calls.append(a))
    assert [c[:2] for c in calls] == [(1, 3), (2, 3), (3, 3)]
    assert [c[2] for c in calls] == [h["bits_per_dim"] for h in flow.history_]


def test_flow_config_validation():
    with pytest.raises(ValueError, match="additive, affine"):
        Flow(FlowConfig(coupling="spline")).fit(np.random.default_rng(0).standard_normal((20, 4)))
    with pytest.raises(ValueError, match="lr"):
        FlowConfig(lr=0).validate()
