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
    xy, placed = place_from_graph(
        ids, dist, anchors=np.array([0, 1]), anchor_xy=np.array([[0.0, 0.0], [2.0, 4.0]], np.float32)
    )
    assert placed.all()
    np.testing.assert_allclose(xy[:2], [[0, 0], [2, 4]])
    np.testing.assert_allclose(xy[2], [1.0, 2.0], rtol=1e-6)  # equal weights: the midpoint
    np.testing.assert_allclose(xy[3], xy[2], rtol=1e-6)  # its only neighbour, one pass later


def test_nearer_neighbours_weigh_more_and_unreachable_rows_stay_unplaced():
    ids = np.array([[0, 1, 2], [1, 0, 2], [2, 0, 1], [3, 3, 3]], np.int32)
    dist = np.array([[0, 0.1, 0.1], [0, 0.1, 0.1], [0, 0.1, 0.9], [0, 0, 0]], np.float32)
    xy, placed = place_from_graph(
        ids, dist, anchors=np.array([0, 1]), anchor_xy=np.array([[0.0, 0.0], [1.0, 0.0]], np.float32)
    )
    assert 0 < xy[2, 0] < 0.5  # closer to row 0 (distance 0.1) than to row 1 (0.9)
    assert placed.tolist() == [True, True, True, False]  # row 3: no neighbour but itself


def test_an_island_of_repeated_texts_lands_by_its_nearest_landmarks_not_in_the_centre():
    """Repeated texts have each other as every neighbour: an island of the kNN graph that no landmark reaches.
    The landmark layout places it from its nearest landmarks in the vector space, next to its own blob."""
    from isoscope.sampling import sample_indices

    X, label = blobs(2_020, k=2, d=16, seed=3)
    marks = set(sample_indices(2_020, 1_000, 0).tolist())  # the landmarks landmark_layout will draw
    copies = np.array([i for i in range(2_020) if i not in marks][:20])  # rows no landmark is among
    source = np.flatnonzero(label == 0)[0]
    X[copies], label[copies] = X[source] + 0.01, 0  # 20 copies of one text of blob 0
    knn = knn_graph_chunked(X, 16)
    assert set(knn[0][copies].ravel()) <= set(copies.tolist())  # the copies see only each other
    xy = landmark_layout(X, knn, seed=0, landmarks=1_000, refine_epochs=0)
    rest = np.setdiff1d(np.arange(2_020), copies)
    centre = {c: np.median(xy[rest][label[rest] == c], axis=0) for c in (0, 1)}
    gap = np.linalg.norm(centre[0] - centre[1])
    assert np.linalg.norm(xy[copies].mean(axis=0) - centre[0]) < 0.25 * gap  # in blob 0, not between the blobs


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
    np.testing.assert_array_equal(layout(X, "umap", knn=knn, seed=0, landmarks=0), umap_layout(X, knn, seed=0))
    np.testing.assert_array_equal(layout(X, "umap", knn=knn, seed=0, landmarks=1_000), umap_layout(X, knn, seed=0))
