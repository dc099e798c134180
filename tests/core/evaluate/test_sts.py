"""isoscope.evaluate.sts: STS with a calibrator fitted without labels, and the too-few-fit-vectors warning."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.calibrate import Flow, FlowConfig, make_calibrator
from isoscope.evaluate.similarity import cosine_pairs
from isoscope.evaluate.sts import calibrated_sts, fit_size_warning
from tests.core.calibrate.synthetic import distorted_gaussian


@pytest.fixture(scope="module")
def synth() -> np.ndarray:
    return distorted_gaussian(1500, seed=7)


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
