"""isoscope.landscape.filter_view: the cached filter-normalised curves, surface and sharpness, on a known quadratic."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isoscope.errors import InputError
from isoscope.landscape.directions import DirectionPlane, direction_seed, filter_normalized_direction
from isoscope.landscape.filter_view import FilterConfig, measure
from isoscope.landscape.results import FILTER_CURVES, FILTER_SURFACE
from isoscope.landscape.store import read_arrays
from tests.core.landscape.helpers import RowQuadratic

CONFIG = FilterConfig(directions=3, range=(-1.0, 1.0), points_1d=5, grid=3, alphas=(0.25, 0.5))


class Calls:
    def __init__(self, evaluate, fail_after: int | None = None) -> None:
        self.evaluate, self.n, self.fail_after = evaluate, 0, fail_after

    def __call__(self, theta: torch.Tensor) -> dict[str, float]:
        self.n += 1
        if self.fail_after is not None and self.n > self.fail_after:
            raise KeyboardInterrupt
        return self.evaluate(theta)


def _theta(quad: RowQuadratic) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in quad.parameters()])  # float64 (p,)


def _measure(evaluate, quad, folder, reuse=True) -> dict:
    return measure(
        evaluate,
        quad.layout,
        _theta(quad),
        theta_digest="digest",
        config=CONFIG,
        grid=9,
        seed=0,
        eval_key="evalkey",
        folder=folder,
        reuse=reuse,
        bar=lambda d: None,
    )


def test_sharpness_matches_the_closed_form_and_the_files_hold_every_direction(tmp_path):
    quad = RowQuadratic()
    res = _measure(quad.evaluate, quad, tmp_path)
    expected = np.mean([quad.sharpness_at(a) for a in (0.25, 0.5)])
    sh = res["sharpness"]
    assert sh["mean"] == pytest.approx(expected, rel=1e-10) and sh["sd"] == pytest.approx(0.0, abs=1e-10 * expected)
    assert sh["alphas"] == [-0.5, -0.25, 0.25, 0.5] and sh["n_directions"] == 3 and sh["scale_invariant"] is True
    assert res["heldout_sharpness"]["mean"] == pytest.approx(2 * expected, rel=1e-10)  # held-out loss = 2 x loss
    assert res["directions"]["seeds"] == [direction_seed(0, k) for k in range(3)]
    curves = read_arrays(tmp_path / FILTER_CURVES)
    np.testing.assert_array_equal(curves["alpha"], [-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0])
    assert curves["train_loss"].shape == (3, 7) and curves["heldout_error"].shape == (3, 7)
    assert res["curve_1d"]["train_loss_mean"] == pytest.approx(curves["train_loss"].mean(0).tolist(), rel=1e-12)
    surface = read_arrays(tmp_path / FILTER_SURFACE)
    np.testing.assert_array_equal(surface["alpha"], [-1.0, 0.0, 1.0])  # --filter-grid 3 on the same range
    # the surface's beta = 0 line is the first direction's curve (the surface spans directions 0 and 1)
    np.testing.assert_allclose(surface["train_loss"][:, 1], curves["train_loss"][0, [0, 3, 6]], rtol=1e-12)
    theta = _theta(quad)
    d0, d1 = (filter_normalized_direction(quad.layout, theta, direction_seed(0, k)) for k in (0, 1))
    corner = quad.evaluate(DirectionPlane(theta, d0, d1).point(1.0, -1.0))["train_loss"]
    assert surface["train_loss"][2, 0] == pytest.approx(corner, rel=1e-12)
    assert res["surface"]["train_loss_at_theta1"] == pytest.approx(quad.evaluate(theta)["train_loss"], rel=1e-12)
    assert res["surface"]["mean_train_loss_increase"] > 0  # a convex bowl around theta


def test_cached_and_resumed_direction_by_direction(tmp_path):
    quad = RowQuadratic()
    first = _measure(quad.evaluate, quad, tmp_path)
    again = Calls(quad.evaluate)
    assert _measure(again, quad, tmp_path) == first and again.n == 0  # read back, nothing evaluated
    # interrupted in the second direction's curve: the first direction's row is kept
    folder = tmp_path / "interrupted"
    with pytest.raises(KeyboardInterrupt):
        _measure(Calls(quad.evaluate, fail_after=7 + 3), quad, folder)
    resumed = Calls(quad.evaluate)
    timings = {"seconds_curves", "seconds_surface", "surface_points_computed"}
    assert {k: v for k, v in _measure(resumed, quad, folder).items() if k not in timings} == {
        k: v for k, v in first.items() if k not in timings
    }
    assert resumed.n == 2 * 7 + 3 * 3  # two curves of 7 points, then the 3 x 3 surface


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"directions": 1}, "at least 2"),
        ({"range": (0.1, 1.0)}, "contain 0"),
        ({"points_1d": 2}, "at least 3"),
        ({"alphas": (2.0,)}, "inside"),
        ({"alphas": ()}, "inside"),
    ],
)
def test_options_out_of_range_say_what_to_fix(over, message):
    from dataclasses import replace

    with pytest.raises(InputError, match=message):
        replace(CONFIG, **over).validate()
    assert CONFIG.validate() is CONFIG
