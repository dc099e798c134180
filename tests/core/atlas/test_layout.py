"""isoscope.atlas.layout's landmark layout: placement from the graph (known answers) and the whole scheme
against full umap-learn on separated blobs."""

from __future__ import annotations

import numpy as np

from isoscope.atlas.graph import knn_graph_chunked
from isoscope.atlas.layout import landmark_layout, layout, place_from_graph, umap_layout


def test_a_row_goes_to_the_weighted_mean_of_its_placed_neighbours():
    # rows 0 and 1 are anchors; row 2 sees both at equal distance, row 3 sees only row 2 (placed next pass)
    ids = np.array([[0, 1, 2], [1, 0, 2], [2, 0, 1], [3, 2, 2]], np.int32)
    dist = np.array([[0, 0.1, 0.2], [0, 0.1, 0.2], [0, 0.3, 0.3], [0, 0.1, 0.1]], np.float32)
    xy = place_from_graph(ids, dist, np.array([0, 1]), np.array([[0.0, 0.0], [2.0, 4.0]], np.float32))
    np.testing.assert_allclose(xy[:2], [[0, 0], [2, 4]])
    np.testing.assert_allclose(xy[2], [1.0, 2.0], rtol=1e-6)  # equal weights: the midpoint
    np.testing.assert_allclose(xy[3], xy[2], rtol=1e-6)  # its only neighbour, one pass later


def test_nearer_neighbours_weigh_more_and_unreachable_rows_go_to_the_centre():
    ids = np.array([[0, 1, 2], [1, 0, 2], [2, 0, 1], [3, 3, 3]], np.int32)
    dist = np.array([[0, 0.1, 0.1], [0, 0.1, 0.1], [0, 0.1, 0.9], [0, 0, 0]], np.float32)
    xy = place_from_graph(ids, dist, np.array([0, 1]), np.array([[0.0, 0.0], [1.0, 0.0]], np.float32))
    assert 0 < xy[2, 0] < 0.5  # closer to row 0 (distance 0.1) than to row 1 (0.9)
    np.testing.assert_allclose(xy[3], [0.5, 0.0])  # no neighbour but itself: the anchors' centroid


def blobs(n: int, k: int = 6, d: int = 24, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    label = rng.integers(0, k, n)
    centres = rng.normal(0, 1, (k, d)) * 6
    return (centres[label] + rng.normal(0, 1, (n, d))).astype(np.float32), label


def test_landmark_layout_keeps_blobs_apart_like_full_umap():
    from sklearn.manifold import trustworthiness

    X, label = blobs(3_000)
    knn = knn_graph_chunked(X, 16)
    ours = landmark_layout(X, knn, seed=0, landmarks=1_000, refine_epochs=20)
    assert ours.shape == (3_000, 2) and ours.dtype == np.float32 and np.isfinite(ours).all()
    full = umap_layout(X, knn, seed=0)
    t_ours = trustworthiness(X, ours, n_neighbors=15)
    t_full = trustworthiness(X, full, n_neighbors=15)
    assert t_ours > t_full - 0.02, (t_ours, t_full)
    # every blob is one region: each point's nearest 2-D neighbours share its blob
    from sklearn.neighbors import NearestNeighbors

    _, near = NearestNeighbors(n_neighbors=11).fit(ours).kneighbors(ours)
    assert (label[near[:, 1:]] == label[:, None]).mean() > 0.95
    again = landmark_layout(X, knn, seed=0, landmarks=1_000, refine_epochs=20)
    np.testing.assert_array_equal(ours, again)  # seeded: the same layout twice


def test_layout_uses_landmarks_only_above_their_number():
    X, _ = blobs(400, d=8)
    knn = knn_graph_chunked(X, 11)
    np.testing.assert_array_equal(layout(X, "umap", knn, 0, landmarks=0), umap_layout(X, knn, 0))
    np.testing.assert_array_equal(layout(X, "umap", knn, 0, landmarks=1_000), umap_layout(X, knn, 0))
