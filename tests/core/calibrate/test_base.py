"""isoscope.calibrate.base: the scikit-learn contract, and save/load as safetensors + JSON (tamper-proof)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from isoscope.calibrate import (
    JSON_NAME,
    TENSORS_NAME,
    AllButTheTop,
    Calibrator,
    Chain,
    Flow,
    NotFittedError,
    StandardNormalization,
    Whitening,
    load_calibrator,
    make_calibrator,
)
from isoscope.errors import InputError
from tests.core.calibrate.synthetic import (
    D,
)


@pytest.mark.parametrize("method", ["none", "centre", "flow", "whitening", "whitening:3", "sn", "abtt:2", "sn+abtt:2"])
def test_unfitted_transform_raises_naming_the_class(method):
    cal = make_calibrator(method)
    with pytest.raises(NotFittedError, match=rf"{type(cal).__name__} is not fitted.*call fit"):
        cal.transform(np.zeros((2, D)))


def test_bad_input_is_one_line_value_error(synth):
    bad = synth[:10].copy()
    bad[3, 2] = np.nan
    for cal in (Whitening(), Flow(epochs=1)):
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
    flow = Flow(hidden=8, coupling="spline")  # stored as given: fit checks it
    assert vars(flow) == {**Flow().get_params(), "hidden": 8, "coupling": "spline"}
    steps = [StandardNormalization(), AllButTheTop(2)]
    assert Chain(steps).steps is steps  # stored as given (what sklearn.base.clone checks)


def test_a_chain_fits_clones_and_leaves_its_steps_alone(synth):
    steps = [StandardNormalization(), AllButTheTop(2)]
    chain = Chain(steps).fit(synth)
    assert not any(hasattr(step, "n_features_in_") for step in steps)  # the parameters are never fitted
    assert [type(s) for s in chain.steps_] == [StandardNormalization, AllButTheTop]
    by_hand = StandardNormalization().fit_transform(synth)  # (n, d), float32 as the chain passes it on
    assert np.array_equal(chain.transform(synth), AllButTheTop(2).fit(by_hand).transform(by_hand))


@pytest.mark.parametrize("method", ["none", "centre", "flow", "whitening", "whitening:3", "sn", "abtt:2", "sn+abtt:2"])
def test_every_calibrator_is_a_scikit_learn_estimator_that_survives_clone(method, synth):
    from sklearn.base import BaseEstimator, TransformerMixin, clone

    cal = make_calibrator(method)
    assert isinstance(cal, BaseEstimator) and isinstance(cal, TransformerMixin)
    fitted = cal.fit(synth, progress=None)
    twin = clone(fitted)  # unfitted, same parameters
    assert type(twin) is type(cal) and twin._json_params() == cal._json_params()
    assert not hasattr(twin, "n_features_in_")
    with pytest.raises(NotFittedError):
        twin.transform(synth)
    assert np.array_equal(twin.fit(synth).transform(synth), fitted.transform(synth))  # deterministic


def test_get_params_and_set_params_round_trip(synth):
    from sklearn.base import clone

    w = Whitening(n_components=4, eps=1e-5)
    assert w.get_params() == {"n_components": 4, "eps": 1e-5}
    assert w.set_params(n_components=2) is w and w.n_components == 2
    with pytest.raises(ValueError, match="Invalid parameter"):
        w.set_params(k=3)
    flow = Flow(epochs=1, hidden=16)
    twin = clone(flow)
    assert twin is not flow and twin.get_params() == flow.get_params()
    assert twin.set_params(hidden=8, lr=1e-3) is twin and (twin.hidden, twin.lr, flow.hidden) == (8, 1e-3, 16)
    chain = make_calibrator("sn+whitening:3")
    assert [s.method for s in clone(chain).get_params()["steps"]] == ["sn", "whitening:3"]
    # fitted-looking names are fitted state only, never parameters
    assert not any(k.endswith("_") for k in Flow().get_params())


@pytest.mark.parametrize("method", ["none", "whitening", "whitening:3", "sn", "abtt:2", "sn+abtt:2", "flow"])
def test_save_load_round_trips_bit_exactly(method, synth, small_flow, tmp_path):
    cal = small_flow if method == "flow" else make_calibrator(method).fit(synth)
    cal.save(tmp_path / "cal", metadata={"model": "m", "pooling": "cls"})
    loaded = load_calibrator(tmp_path / "cal")
    assert type(loaded) is type(cal)
    assert loaded._json_params() == cal._json_params()
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
        "bad_flow_params",
        "unknown_flow_param",
    ],
)
def test_load_rejects_tampered_or_foreign_files(tamper, synth, small_flow, tmp_path):
    path = tmp_path / "cal"
    flows = {"bad_flow_params": small_flow, "unknown_flow_param": small_flow}
    cal = {"bad_chain_step": make_calibrator("sn+abtt:2"), **flows}.get(tamper, Whitening())
    (cal if tamper in flows else cal.fit(synth)).save(path)
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
    elif tamper == "bad_flow_params":
        _edit_json(path, lambda d: d["params"].update({"hidden": 99}))
    elif tamper == "unknown_flow_param":
        _edit_json(path, lambda d: d["params"].update({"hiden": 32}))
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
