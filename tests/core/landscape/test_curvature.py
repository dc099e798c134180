"""isoscope.landscape.curvature: grid curvature and the power iteration against a quadratic with a known Hessian."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isoscope.landscape.axes import make_plane
from isoscope.landscape.curvature import grid_curvature, hessian_top_eigenvalue, hvp
from isoscope.landscape.surface import surface_2d
from tests.core.landscape.helpers import Quadratic, points


def test_grid_curvature_and_power_iteration_match_the_hessian():
    quad = Quadratic()
    plane = make_plane(*points(12, seed=5, dtype=torch.float64))
    alphas, betas = np.linspace(-0.5, 1.5, 7), np.linspace(-1.0, 1.0, 7)  # 1.0 is not a grid point
    grid = surface_2d(quad.evaluate, plane, alphas=alphas, betas=betas)
    curv = grid_curvature(alphas, betas, grid["train_loss"], at=(1.0, 0.0), gram=plane.gram)
    E = torch.stack([plane.e1, plane.e2], 1).numpy()  # (p, 2)
    H = quad.H.numpy()
    np.testing.assert_allclose(curv["hessian_plane"], E.T @ H @ E, rtol=1e-6)
    Q, _ = np.linalg.qr(E)  # orthonormal basis of the plane
    np.testing.assert_allclose(curv["eigenvalues_param"], np.linalg.eigvalsh(Q.T @ H @ Q), rtol=1e-6)
    assert max(curv["eigenvalues_param"]) <= quad.eigs.max() + 1e-9

    v = torch.randn(12, dtype=torch.float64)
    torch.testing.assert_close(hvp(quad.loss, plane.origin, v), quad.H @ v)
    top = hessian_top_eigenvalue(quad.loss, plane.origin, iters=200, tol=1e-10, seed=0)
    assert top.eigenvalue == pytest.approx(quad.eigs.max(), rel=1e-3)
    assert top.converged


def test_grid_curvature_refuses_what_it_cannot_fit():
    a = np.linspace(-1, 1, 5)
    values = np.add.outer(a**2, a**2)  # (5, 5)
    assert grid_curvature(a, a, values, at=(2.0, 0.0))["reason"].startswith("point")
    assert grid_curvature(a[:2], a[:2], values[:2, :2], at=(0.0, 0.0))["ok"] is False
    values[2, 2] = np.nan
    assert grid_curvature(a, a, values, at=(0.0, 0.0))["reason"] == "non-finite values near the point"
    ok = grid_curvature(a, a, np.add.outer(a**2, 3 * a**2), at=(0.0, 0.0))
    np.testing.assert_allclose(ok["eigenvalues_plane"], [2.0, 6.0], atol=1e-9)  # d2/da2 of a^2 and 3 b^2
    with pytest.raises(ValueError, match="iters"):
        hessian_top_eigenvalue(lambda t: (t**2).sum(), torch.zeros(3), iters=0)
