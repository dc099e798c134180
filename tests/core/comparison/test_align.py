"""Procrustes alignment of two maps and the maps' trustworthiness/continuity."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import procrustes as scipy_procrustes

from isoscope.comparison.align import aligned_maps, map_quality, procrustes_align
from isoscope.errors import InputError

EPS = float(np.finfo(np.float64).eps)


def test_similarity_transform_is_undone_exactly() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((50, 2))
    theta = 0.7
    rot = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    reflect = np.diag([1.0, -1.0])
    b = a @ rot @ reflect * 4.0 + np.array([3.0, -1.0])
    p = procrustes_align(a, b)
    # float64 rounding of a 2x2 SVD and m-term sums: relative error ~ m eps
    np.testing.assert_allclose(p.aligned, a, rtol=0, atol=100 * 50 * EPS * np.abs(a).max())
    assert p.disparity == pytest.approx(0.0, abs=100 * 50 * EPS)
    assert p.scale == pytest.approx(0.25, rel=100 * 50 * EPS)
    assert np.linalg.det(p.rotation) == pytest.approx(-1.0)


def test_disparity_equals_scipy() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((40, 2)), rng.standard_normal((40, 2))
    b[:, 0] += a[:, 0]
    _, _, expected = scipy_procrustes(a, b)
    p = procrustes_align(a, b)
    assert p.disparity == pytest.approx(expected, abs=100 * 40 * EPS)
    # the aligned map is the least-squares fit: no other rotation/scale does better
    base = np.sum((p.aligned - a) ** 2)
    for angle in (0.05, -0.05):
        r = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
        moved = (p.aligned - a.mean(0)) @ r + a.mean(0)
        assert np.sum((moved - a) ** 2) > base


def test_map_quality_of_an_exact_map_is_one() -> None:
    xy = np.random.default_rng(2).standard_normal((60, 2))
    assert map_quality(xy, xy, k=5) == (pytest.approx(1.0), pytest.approx(1.0))
    scrambled = xy[np.random.default_rng(3).permutation(60)]
    t, c = map_quality(xy, scrambled, k=5)
    assert t < 0.8 and c < 0.8


def test_aligned_maps_self_and_sample() -> None:
    rng = np.random.default_rng(4)
    A = rng.standard_normal((400, 20)) * np.linspace(3, 0.1, 20)
    same = aligned_maps(A, A.copy(), "pca", max_points=150, quality_points=80, seed=0)
    assert len(same.rows) == 150 and (np.diff(same.rows) > 0).all()
    assert same.disparity == pytest.approx(0.0, abs=1e-10)
    np.testing.assert_allclose(same.b, same.a, atol=1e-5)  # maps of float32 unit rows
    assert same.quality["trustworthiness_a"] == pytest.approx(same.quality["trustworthiness_b"], abs=1e-6)
    assert same.quality_rows == 80 and 0.5 < same.quality["trustworthiness_a"] <= 1.0
    other = aligned_maps(A, rng.standard_normal((400, 20)), "pca", max_points=150, seed=0)
    assert other.disparity > 0.5
    assert other.displacement.shape == (150,)


def test_aligned_maps_bad_input() -> None:
    with pytest.raises(InputError, match="projection"):
        aligned_maps(np.ones((10, 3)), np.ones((10, 3)), "mds")
    with pytest.raises(InputError, match="same texts"):
        aligned_maps(np.ones((10, 3)), np.ones((9, 3)))
