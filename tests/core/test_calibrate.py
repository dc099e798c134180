"""Calibrators: known-answer geometry, invertibility, save/load, method parsing, divergence handling."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from core.calibrate import (
    CALIBRATION_METHODS,
    JSON_NAME,
    TENSORS_NAME,
    AllButTheTop,
    Calibrator,
    Chain,
    Flow,
    FlowConfig,
    Identity,
    NotFittedError,
    StandardNormalization,
    Whitening,
    calibrated_sts,
    fit_size_warning,
    load_calibrator,
    make_calibrator,
)
from core.errors import InputError
from core.evaluate import cosine_pairs

D = 8
# Flow schedule for the 8-d synthetic data (the default schedule is tuned for 384-d sentence vectors).
SYNTH_FLOW = {"epochs": 30, "lr": 1e-3, "hidden": 64, "linear": "lu", "coupling": "affine", "batch_size": 512}


def distorted_gaussian(n: int, seed: int) -> np.ndarray:
    """z ~ N(0, I_8) -> u = z + 0.15 z^3 (heavy-tailed, non-Gaussian) -> skewed anisotropic map + offset."""
    z = np.random.default_rng(seed).standard_normal((n, D))  # (n, 8)
    u = z + 0.15 * z**3
    fixed = np.random.default_rng(123)
    q1, _ = np.linalg.qr(fixed.standard_normal((D, D)))
    q2, _ = np.linalg.qr(fixed.standard_normal((D, D)))
    A = q1 @ np.diag(np.geomspace(5, 0.05, D)) @ q2  # condition number 100
    return u @ A + 3.0 * fixed.standard_normal(D)  # (n, 8)


def embedding_like(n: int, d: int = 48, seed: int = 0) -> np.ndarray:
    """Sentence-vector-like cloud: low-rank factors, a LayerNorm (exactly rank d-1), gain, offset (a cone)."""
    rng = np.random.default_rng(seed)
    h = rng.standard_normal((n, 12)) @ rng.standard_normal((12, d)) + 0.3 * rng.standard_normal((n, d))
    h = np.tanh(h) + 0.2 * h**2  # non-linear
    h = (h - h.mean(1, keepdims=True)) / h.std(1, keepdims=True)  # LayerNorm: one direction has zero variance
    gain = np.geomspace(3.0, 0.05, d)
    return (h * gain + 2.0 * rng.standard_normal(d)).astype(np.float32)  # (n, d)


def gaussian_nll(whitening: Whitening, X: np.ndarray) -> float:
    """Mean held-out NLL (nats) of X under the Gaussian that whitening fits."""
    z = whitening.transform(X).astype(np.float64)
    return float(np.mean(0.5 * (z * z).sum(1) + 0.5 * D * np.log(2 * np.pi)) - whitening.log_abs_det())


def excess_kurtosis(Z: np.ndarray) -> float:
    """Mean over dimensions of |E[z^4] - 3| (0 for a standard normal)."""
    return float(np.mean(np.abs((Z.astype(np.float64) ** 4).mean(0) - 3.0)))


@pytest.fixture(scope="module")
def synth() -> np.ndarray:
    return distorted_gaussian(1500, seed=7)


@pytest.fixture(scope="module")
def small_flow(synth) -> Flow:
    return Flow(FlowConfig(epochs=3, hidden=32, n_steps=2, batch_size=256, lr=1e-3, linear="lu")).fit(synth)


# ---------------------------------------------------------------- flow geometry


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
    with caplog.at_level(logging.WARNING, logger="core.calibrate"):
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


# ---------------------------------------------------------------- linear calibrators


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
    X = embedding_like(500, d=16)
    w = Whitening(eps=1e-6).fit(X)
    assert w.eigenvalues_.min() >= 1e-6
    assert np.isfinite(w.transform(X)).all()


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


@pytest.mark.parametrize(
    "make",
    [
        lambda: Whitening(),
        lambda: StandardNormalization(),
        lambda: Identity(),
        lambda: Chain([StandardNormalization(), Whitening()]),
        "flow",
    ],
    ids=["whitening", "sn", "none", "chain", "flow"],
)
def test_inverse_transform_recovers_the_input(make, synth, small_flow):
    cal = small_flow if make == "flow" else make().fit(synth)
    X = synth[:300]
    np.testing.assert_allclose(cal.inverse_transform(cal.transform(X)), X, atol=1e-4, rtol=0)


def test_multiscale_flow_round_trips(synth):
    flow = Flow(FlowConfig(epochs=1, n_levels=3, n_steps=2, hidden=16, coupling="affine")).fit(synth)
    np.testing.assert_allclose(flow.inverse_transform(flow.transform(synth[:200])), synth[:200], atol=1e-4)


# ---------------------------------------------------------------- contract


@pytest.mark.parametrize("method", ["none", "flow", "whitening", "whitening:3", "sn", "abtt:2", "sn+abtt:2"])
def test_unfitted_transform_raises_naming_the_class(method):
    cal = make_calibrator(method)
    with pytest.raises(NotFittedError, match=rf"{type(cal).__name__} is not fitted.*call fit"):
        cal.transform(np.zeros((2, D)))


def test_bad_input_is_one_line_value_error(synth):
    bad = synth[:10].copy()
    bad[3, 2] = np.nan
    for cal in (Whitening(), Flow(FlowConfig(epochs=1))):
        with pytest.raises(ValueError, match="NaN or inf") as exc:
            cal.fit(bad)
        assert "\n" not in str(exc.value)
    fitted = Whitening().fit(synth)
    with pytest.raises(ValueError, match="NaN or inf"):
        fitted.transform(np.where(np.isnan(bad), np.inf, bad))
    with pytest.raises(ValueError, match="columns"):
        fitted.transform(synth[:, :3])


def test_init_only_stores_arguments():
    w = Whitening(n_components=5, eps=1e-3)
    assert vars(w) == {"n_components": 5, "eps": 1e-3}
    assert vars(Flow()) == {"config": None}


# ---------------------------------------------------------------- method strings


@pytest.mark.parametrize(
    ("method", "kind", "params"),
    [
        ("none", Identity, {}),
        ("flow", Flow, None),
        ("whitening", Whitening, {"n_components": None, "eps": 1e-6}),
        ("whitening:256", Whitening, {"n_components": 256, "eps": 1e-6}),
        ("sn", StandardNormalization, None),
        ("abtt:3", AllButTheTop, {"n_components": 3}),
        (" SN+abtt:5 ", Chain, {"steps": ["sn", "abtt:5"]}),
    ],
)
def test_make_calibrator_parses_methods(method, kind, params):
    cal = make_calibrator(method)
    assert type(cal) is kind
    if params is not None:
        assert cal.get_params() == params
    assert make_calibrator(cal.method).get_params() == cal.get_params()


@pytest.mark.parametrize("method", ["foo", "", "whitening:x", "abtt:0", "sn+", "flow:3", "whitening:-2"])
def test_make_calibrator_rejects_bad_methods(method):
    with pytest.raises(ValueError) as exc:
        make_calibrator(method)
    assert "\n" not in str(exc.value)
    if method in ("foo", "", "sn+", "flow:3"):
        assert ", ".join(CALIBRATION_METHODS) in str(exc.value)


def test_flow_config_validation():
    with pytest.raises(ValueError, match="additive, affine"):
        Flow(FlowConfig(coupling="spline")).fit(np.random.default_rng(0).standard_normal((20, 4)))
    with pytest.raises(ValueError, match="lr"):
        FlowConfig(lr=0).validate()


# ---------------------------------------------------------------- save / load


@pytest.mark.parametrize("method", ["none", "whitening", "whitening:3", "sn", "abtt:2", "sn+abtt:2", "flow"])
def test_save_load_round_trips_bit_exactly(method, synth, small_flow, tmp_path):
    cal = small_flow if method == "flow" else make_calibrator(method).fit(synth)
    cal.save(tmp_path / "cal", metadata={"model": "m", "pooling": "cls"})
    loaded = load_calibrator(tmp_path / "cal")
    assert type(loaded) is type(cal)
    assert loaded.get_params() == cal.get_params()
    assert loaded.metadata_ == {"model": "m", "pooling": "cls"}
    assert np.array_equal(loaded.transform(synth), cal.transform(synth))
    assert type(cal).load(tmp_path / "cal").method == cal.method
    if method == "flow":
        assert loaded.history_ == cal.history_ and loaded.diverged_ == cal.diverged_
        assert np.array_equal(loaded.inverse_transform(synth[:50]), cal.inverse_transform(synth[:50]))
    doc = json.loads((tmp_path / "cal" / JSON_NAME).read_text())
    assert doc["class"] == type(cal).__name__ and doc["method"] == cal.method


def _edit_json(path, edit) -> None:
    doc = json.loads((path / JSON_NAME).read_text())
    edit(doc)
    (path / JSON_NAME).write_text(json.dumps(doc))


@pytest.mark.parametrize(
    "tamper",
    [
        "flip_byte",
        "unknown_class",
        "wrong_dimension",
        "wrong_components",
        "not_json",
        "foreign_json",
        "missing_tensors",
        "bad_chain_step",
        "bad_flow_config",
    ],
)
def test_load_rejects_tampered_or_foreign_files(tamper, synth, small_flow, tmp_path):
    path = tmp_path / "cal"
    cal = {"bad_chain_step": make_calibrator("sn+abtt:2"), "bad_flow_config": small_flow}.get(tamper, Whitening())
    (cal if tamper == "bad_flow_config" else cal.fit(synth)).save(path)
    if tamper == "flip_byte":
        blob = bytearray((path / TENSORS_NAME).read_bytes())
        blob[-5] ^= 0xFF
        (path / TENSORS_NAME).write_bytes(bytes(blob))
    elif tamper == "unknown_class":
        _edit_json(path, lambda d: d.update({"class": "Pickle"}))
    elif tamper == "wrong_dimension":
        _edit_json(path, lambda d: d["state"].update({"n_features_in_": D + 1}))
    elif tamper == "wrong_components":
        _edit_json(path, lambda d: d["params"].update({"n_components": 3}))
    elif tamper == "not_json":
        (path / JSON_NAME).write_bytes(b"\x80\x04 not json")
    elif tamper == "foreign_json":
        (path / JSON_NAME).write_text(json.dumps({"format": "something-else", "class": "Whitening"}))
    elif tamper == "missing_tensors":
        (path / TENSORS_NAME).unlink()
    elif tamper == "bad_chain_step":
        _edit_json(path, lambda d: d["params"]["steps"][1].update({"class": "Nope"}))
    elif tamper == "bad_flow_config":
        _edit_json(path, lambda d: d["params"]["config"].update({"hidden": 99}))
    with pytest.raises(InputError):
        Calibrator.load(path)


def test_load_checks_the_expected_class(synth, tmp_path):
    Whitening().fit(synth).save(tmp_path / "w")
    with pytest.raises(InputError, match="holds a Whitening, not a Flow"):
        Flow.load(tmp_path / "w")
    with pytest.raises(InputError, match="no saved calibrator"):
        Calibrator.load(tmp_path / "nothing")


def test_save_refuses_unfitted(tmp_path):
    with pytest.raises(NotFittedError):
        Whitening().save(tmp_path / "w")


# ---------------------------------------------------------------- STS helper


def test_calibrated_sts_reports_every_key(synth):
    a, b = synth[:500], synth[500:1000]
    gold = np.clip(cosine_pairs(a, b) * 2.5 + 2.5, 0, 5)
    out = calibrated_sts(a, b, gold, make_calibrator("whitening"), fit_vectors=synth)
    assert set(out) >= {
        "method",
        "spearman",
        "pearson",
        "fit_seconds",
        "bits_per_dim",
        "avg_cosine_before",
        "avg_cosine_after",
    }
    assert out["method"] == "whitening" and out["bits_per_dim"] is None and out["n_fit"] == len(synth)
    assert abs(out["avg_cosine_after"]) < abs(out["avg_cosine_before"])
    same = calibrated_sts(a, b, gold, make_calibrator("none"))
    assert same["spearman"] == pytest.approx(same["raw_spearman"])
    flow = calibrated_sts(a, b, gold, Flow(FlowConfig(epochs=1, hidden=16, n_steps=1)))
    assert isinstance(flow["bits_per_dim"], float)


def test_fit_size_warning():
    assert fit_size_warning(make_calibrator("whitening"), 300, 384) is not None
    assert fit_size_warning(make_calibrator("whitening:64"), 300, 384) is None
    assert fit_size_warning(make_calibrator("sn+abtt:3"), 300, 384) is None
    assert fit_size_warning(make_calibrator("flow"), 20000, 384) is None
