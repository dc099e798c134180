"""isoscope.landscape.cached: a stage is computed once per key and read back after."""

from __future__ import annotations

import numpy as np

from isoscope.landscape.cached import Counted, cached_arrays, cached_json


def test_json_stage_hits_its_key_and_recomputes_another(tmp_path):
    calls = []

    def compute() -> dict:
        calls.append(1)
        return {"x": float("nan"), "y": 2}

    path = tmp_path / "stage.json"
    first = cached_json(path, "k1", reuse=True, compute=compute)
    assert first == {"x": None, "y": 2}  # the JSON form: NaN is null whether computed now or read back
    assert cached_json(path, "k1", reuse=True, compute=compute) == first and len(calls) == 1
    cached_json(path, "k2", reuse=True, compute=compute)
    cached_json(path, "k2", reuse=False, compute=compute)  # reuse off: always computed
    assert len(calls) == 3


def test_array_stage_adds_errors_and_keeps_its_key(tmp_path):
    calls = []

    def compute() -> dict:
        calls.append(1)
        return {"train_acc": np.array([0.25, 1.0]), "heldout_acc": np.array([[0.5]])}

    path = tmp_path / "a.npz"
    out = cached_arrays(path, "key", reuse=True, compute=compute)
    np.testing.assert_array_equal(out["train_error"], [0.75, 0.0])
    np.testing.assert_array_equal(out["heldout_error"], [[0.5]])
    back = cached_arrays(path, "key", reuse=True, compute=compute)
    assert len(calls) == 1 and str(back["key"]) == "key"
    cached_arrays(path, "other", reuse=True, compute=compute)
    assert len(calls) == 2


def test_counted_counts_calls():
    counted = Counted(lambda theta: {"train_loss": 1.0})
    counted(None), counted(None)
    assert counted.calls == 2
