"""Every linear calibrator as one affine map y = x W + b, checked against its own transform."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.calibrate import Flow, make_calibrator
from isoscope.errors import InputError
from isoscope.export.affine import affine_map, is_affine

METHODS = ("none", "centre", "whitening", "whitening:5", "sn", "abtt:2", "sn+abtt:2", "centre+whitening:6", "abtt:1+sn")


def _vectors(n: int, d: int, seed: int) -> np.ndarray:
    """Anisotropic vectors with a common mean (a cone), their covariance's eigenvalues spanning 100x."""
    rng = np.random.default_rng(seed)
    scales = np.logspace(0, -1, d)  # standard deviations 1 .. 0.1: eigenvalues 1 .. 0.01
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
    return (rng.normal(size=(n, d)) * scales) @ basis.T + 3.0 * rng.normal(size=d)  # (n, d)


@pytest.mark.parametrize("method", METHODS)
def test_affine_map_is_the_calibrators_transform(method):
    X = _vectors(400, 12, seed=1)
    cal = make_calibrator(method).fit(X)
    Y = _vectors(50, 12, seed=2)  # fresh vectors, not the fit set
    want = cal.transform(Y)  # float64 inside each step, float32 after each
    got = affine_map(cal).apply(Y)  # float64 throughout, float32 once
    # Each step rounds its output to float32 (2**-24 relative), at most three roundings per chain; the next steps
    # amplify that by at most sqrt(eigenvalue spread) = 10 (whitening of the 100x spread above): <= 2e-6 of the
    # largest output. The float64 re-association is ~1e-15. 1e-5 of the largest output leaves a 5x margin.
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    assert affine_map(cal).d_out == cal.n_features_out_


def test_flow_is_refused_in_one_line_offering_onnx():
    flow = Flow(epochs=0)
    assert not is_affine(flow)
    with pytest.raises(InputError, match="--format onnx") as err:
        affine_map(flow)
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="--format onnx"):
        affine_map(make_calibrator("sn+flow"))


def test_unfitted_is_refused():
    with pytest.raises(InputError, match="fit the calibrator"):
        affine_map(make_calibrator("whitening"))
