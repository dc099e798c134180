"""isoscope.landscape.surface: curves and grids of an analytic quadratic, bilinear interpolation, resumable rows."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from isoscope.landscape.axes import make_plane
from isoscope.landscape.store import RowStore
from isoscope.landscape.surface import curve_1d, grid_size_for_budget, interpolate, surface_2d
from tests.core.landscape.helpers import Quadratic, points


def test_surface_and_curve_match_the_analytic_quadratic():
    quad = Quadratic()
    plane = make_plane(*points(12, seed=4, dtype=torch.float64))
    alphas, betas = np.linspace(-0.5, 1.5, 7), np.linspace(-1.0, 1.0, 5)
    grid = surface_2d(quad.evaluate, plane, alphas=alphas, betas=betas)
    u = (plane.origin - quad.x_star).numpy()
    e1, e2, H = plane.e1.numpy(), plane.e2.numpy(), quad.H.numpy()
    assert quad.layout.size == 12 and quad.layout.shapes == ((6,), (2, 3))
    expected = np.array([[0.5 * (u + a * e1 + b * e2) @ H @ (u + a * e1 + b * e2) for b in betas] for a in alphas])
    np.testing.assert_allclose(grid["train_loss"], expected, rtol=1e-10)
    assert grid["train_loss"].shape == (7, 5)
    curve = curve_1d(quad.evaluate, plane.origin, plane.e1, alphas=alphas)
    np.testing.assert_allclose(curve["train_loss"], expected[:, 2], rtol=1e-10)  # betas[2] == 0


def test_interpolation_is_exact_for_bilinear_functions():
    a, b = np.linspace(-1, 2, 4), np.linspace(0, 1, 3)
    values = np.array([[1 + 2 * x - 3 * y + 0.5 * x * y for y in b] for x in a])
    for x, y in [(0.3, 0.2), (-1.0, 0.0), (2.0, 1.0), (1.7, 0.9)]:
        assert interpolate(a, b, values, at=(x, y)) == pytest.approx(1 + 2 * x - 3 * y + 0.5 * x * y)
    assert math.isnan(interpolate(a, b, values, at=(2.5, 0.5)))


def test_grid_size_for_budget():
    assert grid_size_for_budget(0.5, 120.0) == 15  # sqrt(240) = 15.5
    assert grid_size_for_budget(1.0, 10.0) == 5  # at least 5
    assert grid_size_for_budget(0.001, 1e6) == 41  # at most 41
    with pytest.raises(ValueError):
        grid_size_for_budget(0.0, 10.0)


def test_interrupted_grid_resumes_from_saved_rows(tmp_path):
    quad = Quadratic()
    plane = make_plane(*points(12, seed=6, dtype=torch.float64))
    alphas, betas = np.linspace(-0.5, 1.5, 5), np.linspace(-1.0, 1.0, 4)
    calls = {"n": 0}

    def flaky(x: torch.Tensor) -> dict[str, float]:
        calls["n"] += 1
        if calls["n"] > 10:  # interrupted during the third row
            raise KeyboardInterrupt
        return quad.evaluate(x)

    rows = RowStore(tmp_path, "k" * 40)
    with pytest.raises(KeyboardInterrupt):
        surface_2d(flaky, plane, alphas=alphas, betas=betas, rows=rows)
    calls["n"] = -1000
    resumed = surface_2d(flaky, plane, alphas=alphas, betas=betas, rows=RowStore(tmp_path, "k" * 40))
    assert calls["n"] == -1000 + 3 * 4  # only the three unfinished rows were evaluated
    full = surface_2d(quad.evaluate, plane, alphas=alphas, betas=betas)
    np.testing.assert_array_equal(resumed["train_loss"], full["train_loss"])


def test_curve_1d_on_the_tiny_model_hits_both_endpoints(tiny_eval):
    model, layout, evaluate = tiny_eval
    theta0 = layout.flatten(model)
    theta1 = theta0 + 0.05 * torch.randn(theta0.shape, generator=torch.Generator().manual_seed(0))
    curve = curve_1d(evaluate, theta0, theta1 - theta0, alphas=[-0.5, 0.0, 1.0, 1.5])
    assert curve["train_loss"][1] == evaluate(theta0)["train_loss"]
    assert curve["train_loss"][2] == pytest.approx(evaluate(theta1)["train_loss"], rel=1e-5)
    assert set(curve) >= {"alpha", "train_loss", "train_acc", "heldout_loss", "heldout_acc"}
