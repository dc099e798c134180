"""isoscope.calibrate.flow: the flow gaussianizes, starts as whitening, never diverges silently, is seeded."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from isoscope.calibrate import JSON_NAME, Flow, Whitening, load_calibrator
from isoscope.errors import InputError
from isoscope.geometry.pairs import cosine_pairs
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
    flow = Flow(seed=seed, **SYNTH_FLOW).fit(train)
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
    flow = Flow(epochs=0, noise_std=0.0).fit(synth)
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
    for params in ({"epochs": 3}, {"epochs": 3, "lr": 1e-3, "linear": "lu", "coupling": "affine"}):
        flow = Flow(**params).fit(X)
        Z = flow.transform(X)
        assert not flow.diverged_, params
        assert np.isfinite(Z).all()
        assert all(np.isfinite(h["bits_per_dim"]) for h in flow.history_)
        assert flow.bits_per_dim_ < flow.gaussian_bits_per_dim_ + 0.05
        assert raw_cos > 0.5 and abs(float(np.mean(cosine_pairs(Z[:1500], Z[1500:])))) < 0.05


def test_flow_divergence_keeps_last_good_state(synth, caplog):
    with caplog.at_level(logging.WARNING, logger="isoscope.calibrate"):
        flow = Flow(epochs=4, lr=1e4, hidden=32, n_steps=2).fit(synth)
    assert flow.diverged_
    assert "diverged" in caplog.text
    Z = flow.transform(synth)
    assert np.isfinite(Z).all()
    assert np.isfinite(flow.bits_per_dim_)
    assert len(flow.history_) < 4


def test_flow_is_deterministic_with_a_seed(synth):
    params = {"epochs": 2, "hidden": 32, "n_steps": 2}
    a = Flow(**params, seed=3).fit(synth).transform(synth)
    b = Flow(**params, seed=3).fit(synth).transform(synth)
    c = Flow(**params, seed=4).fit(synth).transform(synth)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_flow_progress_and_history(synth):
    calls = []
    flow = Flow(epochs=3, hidden=16, n_steps=1).fit(synth, progress=lambda *a: calls.append(a))
    assert [c[:2] for c in calls] == [(1, 3), (2, 3), (3, 3)]
    assert [c[2] for c in calls] == [h["bits_per_dim"] for h in flow.history_]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"coupling": "spline"}, "unknown coupling 'spline'; valid choices: additive, affine"),
        ({"lr": 0}, "Flow lr must be > 0; got 0"),
        ({"noise_std": -0.1}, "Flow noise_std must be >= 0; got -0.1"),
        ({"n_steps": 300}, "Flow n_steps must be between 1 and 256; got 300"),
        ({"epochs": 2.5}, "Flow epochs must be a whole number; got 2.5"),
        ({"whiten": "yes"}, "Flow whiten must be true or false; got 'yes'"),
    ],
)
def test_flow_checks_its_parameters_when_fitted(params, message):
    flow = Flow(**params)  # __init__ only stores
    with pytest.raises(InputError) as exc:
        flow.fit(np.random.default_rng(0).standard_normal((20, 4)))
    assert str(exc.value) == message


HYPERPARAMETERS = {
    "n_steps": 4,
    "n_levels": 1,
    "hidden": 256,
    "coupling": "additive",
    "linear": "permutation",
    "scale_bound": 2.0,
    "whiten": True,
    "whiten_eps": 1e-6,
    "noise_std": 0.05,
    "lr": 3e-4,
    "weight_decay": 0.0,
    "clip_grad_norm": 1.0,
    "epochs": 3,
    "batch_size": 256,
    "seed": 0,
    "divergence_bits": 2.0,
}


def test_flow_lists_its_hyperparameters():
    """Issue 36: ``Flow(config)`` hid them from get_params/set_params/GridSearchCV. The defaults are the ones
    tuned on STS-B (Flow's docstring), and the CLI's help says the same epochs without importing torch."""
    from isoscope.commands.calibrate import DEFAULT_FLOW_EPOCHS

    assert Flow().get_params() == HYPERPARAMETERS
    assert DEFAULT_FLOW_EPOCHS == Flow().epochs


def test_grid_search_tunes_a_flow_hyperparameter(synth):
    """GridSearchCV clones the flow with each candidate set by set_params, scores it on held-out rows and
    refits the best on all of them. Untrained (epochs=0), a flow without its whitening is a diagonal Gaussian
    (actnorm): on this correlated cloud (condition number 100) its held-out log-likelihood is about 9 nats
    worse than whitening's full Gaussian, far beyond the folds' spread (~0.3)."""
    from sklearn.model_selection import GridSearchCV

    search = GridSearchCV(
        Flow(epochs=0, hidden=8, n_steps=1, noise_std=0.0),
        {"whiten": [False, True]},
        scoring=lambda est, X, y=None: float(est.score_samples(X).mean()),
        cv=3,
    ).fit(synth)
    assert [p["whiten"] for p in search.cv_results_["params"]] == [False, True]
    assert search.best_params_ == {"whiten": True}
    assert search.best_estimator_.whiten and search.best_estimator_.whitening_ is not None


SAVED_V1 = Path(__file__).parent / "saved_v1"


@pytest.mark.parametrize("name", ["flow", "sn_flow"])
def test_a_calibrator_saved_before_issue_36_still_loads(name, tmp_path):
    """Folders written by Isoscope before the flat parameters (a Flow's params were ``{"config": {...}}``),
    kept as written, load and map the vectors they were fitted on as they did then (``z.npy``); saved again,
    they are in today's format and load to the same map."""
    folder = SAVED_V1 / name
    doc = json.loads((folder / JSON_NAME).read_text())
    flow_record = doc if name == "flow" else doc["params"]["steps"][1]
    assert set(flow_record["params"]) == {"config"}  # the old format
    cal = load_calibrator(folder)
    flow = cal if name == "flow" else cal.steps_[1]
    assert isinstance(flow, Flow) and flow.get_params() == {**HYPERPARAMETERS, **flow_record["params"]["config"]}
    x, z = saved_v1_input(), cal.transform(saved_v1_input())
    # a float32 network of a few dozen roundings (eps 1.2e-7) per value: another BLAS may differ by ~1e-6 of
    # the largest value, never by a changed parameter (which moves values by orders of magnitude more)
    want = np.load(folder / "z.npy")
    np.testing.assert_allclose(z, want, rtol=0, atol=1e-5 * np.abs(want).max())
    again = load_calibrator(cal.save(tmp_path / name))
    resaved = json.loads((tmp_path / name / JSON_NAME).read_text())
    assert (resaved if name == "flow" else resaved["params"]["steps"][1])["params"] == flow.get_params()
    assert np.array_equal(again.transform(x), z)


def saved_v1_input() -> np.ndarray:
    """The vectors the ``saved_v1`` calibrators were fitted on (64 x 4, seeded)."""
    mix = np.array([[2.0, 0, 0, 0], [0.5, 1, 0, 0], [0, 0, 0.3, 0], [0, 0.2, 0, 1]])
    return np.random.default_rng(0).standard_normal((64, 4)) @ mix  # (64, 4)
