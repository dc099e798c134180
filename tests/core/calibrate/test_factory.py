"""isoscope.calibrate.factory and .methods: method strings parsed into calibrators, bad ones refused."""

from __future__ import annotations

import pytest

from isoscope.calibrate import (
    AllButTheTop,
    Chain,
    Flow,
    Identity,
    StandardNormalization,
    Whitening,
    calibration_methods,
    make_calibrator,
)


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
        assert cal._json_params() == params
    assert make_calibrator(cal.method)._json_params() == cal._json_params()


@pytest.mark.parametrize("method", ["foo", "", "whitening:x", "abtt:0", "sn+", "flow:3", "whitening:-2"])
def test_make_calibrator_rejects_bad_methods(method):
    with pytest.raises(ValueError) as exc:
        make_calibrator(method)
    assert "\n" not in str(exc.value)
    if method in ("foo", "", "sn+"):
        assert ", ".join(calibration_methods()) in str(exc.value)


def test_the_package_exports_each_name_once_from_its_module() -> None:
    """``isoscope.calibrate`` imports names on first use (PEP 562): ``__all__`` lists exactly those, sorted as
    constants, classes, functions, and each resolves."""
    import isoscope.calibrate as calibrate

    assert set(calibrate.__all__) == set(calibrate._EXPORTS)
    key = lambda n: (not n.isupper(), n[0].islower(), n)  # noqa: E731
    assert list(calibrate.__all__) == sorted(calibrate.__all__, key=key)
    assert all(getattr(calibrate, name) is not None for name in calibrate.__all__)
