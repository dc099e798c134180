"""isoscope.landscape.axes: the task plane's exact geometry (Gram-Schmidt axes, signed projection, off-plane residual)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from isoscope.landscape.axes import make_plane, project
from isoscope.landscape.flat import norm
from tests.core.landscape.helpers import points


def test_end_points_project_exactly():
    theta0, theta1, theta2 = points()
    plane = make_plane(theta0, theta1, theta2)
    d1, d2 = (theta1 - theta0).double().numpy(), (theta2 - theta0).double().numpy()
    n1, n2 = np.linalg.norm(d1), np.linalg.norm(d2)
    cos = d1 @ d2 / (n1 * n2)
    assert plane.cos_delta1_delta2 == pytest.approx(cos, abs=1e-6)
    assert plane.kept_fraction == pytest.approx(math.sqrt(1 - cos**2), abs=1e-6)
    assert abs(plane.cos_e1_e2) < 1e-6  # measured, not assumed
    assert norm(plane.e2) == pytest.approx(n1, rel=1e-6)

    p1 = project(plane, theta1)
    assert (p1.a, p1.b) == (pytest.approx(1.0, abs=1e-6), pytest.approx(0.0, abs=1e-6))
    assert p1.residual < 1e-6
    p2 = project(plane, theta2)
    assert p2.a == pytest.approx(cos * n2 / n1, abs=1e-6)
    assert p2.b == pytest.approx(math.sqrt(1 - cos**2) * n2 / n1, abs=1e-6)
    assert p2.b > 0 and p2.residual < 1e-6
    assert project(plane, theta0) == project(plane, theta0.clone())  # origin: (0, 0), residual 0
    assert project(plane, theta0).a == 0.0


def test_coordinates_are_signed_behind_the_origin():
    theta0, theta1, theta2 = points(seed=1)
    plane = make_plane(theta0, theta1, theta2)
    p = project(plane, plane.point(-0.5, -0.25))
    assert p.a == pytest.approx(-0.5, abs=1e-6)
    assert p.b == pytest.approx(-0.25, abs=1e-6)
    assert p.residual < 1e-6
    # an unsigned distance would give the same value for +0.5 and -0.5: coordinates do not
    assert project(plane, plane.point(0.5, 0.25)).a == pytest.approx(0.5, abs=1e-6)


def test_off_plane_point_has_its_exact_residual():
    theta0, theta1, theta2 = points(seed=2, dtype=torch.float64)
    plane = make_plane(theta0, theta1, theta2)
    E = torch.stack([plane.e1, plane.e2], 1)  # (p, 2)
    w = torch.randn(theta0.shape[0], generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    w -= E @ torch.linalg.solve(E.T @ E, E.T @ w)  # orthogonal to the plane
    w *= 0.8 * norm(plane.e1) / norm(w)
    theta = plane.point(0.3, 0.7) + w
    p = project(plane, theta)
    assert (p.a, p.b) == (pytest.approx(0.3, abs=1e-9), pytest.approx(0.7, abs=1e-9))
    assert p.residual == pytest.approx(norm(w) / norm(theta - theta0), rel=1e-9)
    assert p.residual > 0.1


def test_parallel_second_axis_is_refused():
    theta0, theta1, _ = points()
    with pytest.raises(ValueError, match="parallel"):
        make_plane(theta0, theta1, theta0 + 2.0 * (theta1 - theta0))
