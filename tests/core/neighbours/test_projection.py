"""isoscope.neighbours.projection: shapes, determinism, PCA against scikit-learn and numpy SVD, sampling, validation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA

from isoscope.errors import InputError
from isoscope.neighbours.projection import PROJECTION_METHODS, pca, project


@pytest.fixture(scope="module")
def blobs() -> np.ndarray:
    """Three well separated Gaussian blobs in 16-d, float32 (150, 16)."""
    rng = np.random.default_rng(0)
    centres = 6 * rng.standard_normal((3, 16))
    return (np.repeat(centres, 50, axis=0) + rng.standard_normal((150, 16))).astype(np.float32)


FAST = {"umap": {"n_epochs": 100}, "tsne": {"max_iter": 250}, "pca": {}}


@pytest.mark.parametrize("method", PROJECTION_METHODS)
@pytest.mark.parametrize("k", [2, 3])
def test_shape_dtype_and_determinism(blobs, method, k):
    a = project(blobs, method, n_components=k, seed=3, **FAST[method])
    b = project(blobs, method, n_components=k, seed=3, **FAST[method])
    assert a.shape == (len(blobs), k) and a.dtype == np.float32
    assert np.isfinite(a).all()
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("method", "params"), [("umap", FAST["umap"]), ("tsne", {"max_iter": 250, "init": "random"})])
def test_seed_changes_stochastic_layouts(blobs, method, params):
    """The seed matters where there is randomness (t-SNE's default PCA start has none)."""
    a = project(blobs, method, seed=0, **params)
    b = project(blobs, method, seed=1, **params)
    assert not np.allclose(a, b)


@pytest.mark.parametrize("method", PROJECTION_METHODS)
def test_blobs_stay_separated(blobs, method):
    """Points of one blob land nearer each other than points of different blobs."""
    Y = project(blobs, method, seed=0, **FAST[method]).astype(np.float64)
    labels = np.repeat(np.arange(3), 50)
    centres = np.stack([Y[labels == c].mean(0) for c in range(3)])
    nearest = np.argmin(((Y[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    assert (nearest == labels).mean() > 0.95


def test_pca_matches_sklearn_and_svd_up_to_sign(blobs):
    ours = pca(blobs, 3).astype(np.float64)
    ref = PCA(n_components=3, svd_solver="full").fit_transform(blobs.astype(np.float64))
    Xc = blobs.astype(np.float64) - blobs.mean(0)
    u, s, _ = np.linalg.svd(Xc, full_matrices=False)
    svd = u[:, :3] * s[:3]
    for other in (ref, svd):
        signs = np.sign((ours * other).sum(0))  # per axis, +1 or -1
        np.testing.assert_allclose(ours, other * signs, atol=1e-4)
    # sign convention: each axis's largest loading is positive, so a flipped input gives the same map
    np.testing.assert_allclose(pca(blobs * -1, 3), -ours, atol=1e-4)
    np.testing.assert_allclose(project(blobs, "pca", 3), ours, atol=1e-5)


def test_pca_first_axis_has_most_variance(blobs):
    Y = pca(blobs, 3)
    var = Y.var(0)
    assert var[0] >= var[1] >= var[2]


def test_tiny_inputs_still_project():
    X = np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32)
    assert project(X, "umap", 2, seed=0, n_epochs=50).shape == (6, 2)
    assert project(X, "tsne", 2, seed=0, max_iter=250).shape == (6, 2)


def test_bad_inputs(blobs):
    bad = blobs.copy()
    bad[0, 0] = np.nan
    cases = [
        (lambda: project(blobs, "isomap"), "choose one of pca, umap, tsne"),
        (lambda: project(blobs, "pca", n_components=4), "must be 2 or 3"),
        (lambda: project(bad, "pca"), "NaN or infinite"),
        (lambda: project(blobs[:3], "pca"), "at least 4 points"),
        (lambda: project(blobs[:, :2], "pca", n_components=3), "cannot be projected to 3"),
        (lambda: project(blobs[0], "pca"), "2-D numeric array"),
        (lambda: project(blobs, "pca", whiten=True), "pca takes no parameters"),
    ]
    for call, message in cases:
        with pytest.raises(InputError, match=message):
            call()


def test_umap_with_another_metric_uses_its_own_neighbour_search(blobs):
    """Cosine uses exact FAISS neighbours; another metric goes through UMAP's NN-descent and still works."""
    Y = project(blobs, "umap", seed=0, metric="euclidean", n_epochs=100).astype(np.float64)
    labels = np.repeat(np.arange(3), 50)
    centres = np.stack([Y[labels == c].mean(0) for c in range(3)])
    assert (np.argmin(((Y[:, None, :] - centres[None]) ** 2).sum(-1), axis=1) == labels).mean() > 0.95
