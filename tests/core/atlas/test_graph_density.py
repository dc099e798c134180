"""isoscope.atlas.graph, density, raster and layout on small known inputs (no model)."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.atlas import density as dens
from isoscope.atlas.graph import _self_first, knn_graph_chunked
from isoscope.atlas.layout import layout, pca_layout
from isoscope.atlas.raster import contour_levels, to_png
from isoscope.atlas.synthetic import synthetic_corpus
from isoscope.errors import InputError
from isoscope.neighbours.projection import pca


def blobs(n: int = 600, k: int = 3, d: int = 8, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    label = rng.integers(0, k, n)
    centres = rng.normal(0, 1, (k, d)) * 20
    return (centres[label] + rng.normal(0, 1, (n, d))).astype(np.float32), label


def test_knn_graph_is_exact_below_the_threshold():
    X, _ = blobs(300, d=16)
    ids, dist = knn_graph_chunked(X, k=6)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = U @ U.T
    np.fill_diagonal(S, -np.inf)
    want = np.argsort(-S, axis=1, kind="stable")[:, :5]  # blobs: no ties at the 5th place
    assert ids.dtype == np.int32 and ids.shape == (300, 6)
    assert np.array_equal(ids[:, 0], np.arange(300)) and np.all(dist[:, 0] == 0)
    assert np.array_equal(np.sort(ids[:, 1:], axis=1), np.sort(want, axis=1))
    cos = np.einsum("nd,nkd->nk", U, U[ids[:, 1:]])
    np.testing.assert_allclose(dist[:, 1:], 1 - cos, atol=1e-6)  # float32 cosines of unit vectors
    assert np.all(np.diff(dist, axis=1) >= -1e-6)


def test_knn_graph_puts_each_row_first_even_among_duplicates():
    X = np.repeat(np.eye(4, dtype=np.float32), 3, axis=0)  # 12 rows, each in a group of 3 identical ones
    ids, _ = knn_graph_chunked(X, k=3)
    assert np.array_equal(ids[:, 0], np.arange(12))
    assert all(set(ids[i, 1:]) == set(range(3 * (i // 3), 3 * (i // 3) + 3)) - {i} for i in range(12))


def test_nndescent_graph_above_the_exact_threshold_finds_the_true_neighbours():
    """NN-descent (the graph of every atlas above EXACT_MAX_ROWS rows) on 3,000 clustered rows: each row first at
    distance 0, the others nearest first at 1 - cos, and nearly all of the exact neighbours (recall@10)."""
    X, _ = blobs(3_000, k=6, d=24, seed=1)
    exact_ids, _ = knn_graph_chunked(X, k=11)
    seen = []
    ids, dist = knn_graph_chunked(X, k=11, exact_max_rows=0, progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, 3_000) and seen[-1] == (3_000, 3_000)
    assert ids.dtype == np.int32 and ids.shape == (3_000, 11) and dist.dtype == np.float32
    assert np.array_equal(ids[:, 0], np.arange(3_000)) and np.all(dist[:, 0] == 0)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    cos = np.einsum("nd,nkd->nk", U, U[ids[:, 1:]])
    np.testing.assert_allclose(dist[:, 1:], np.minimum(1 - cos, 1.0), atol=1e-5)
    assert np.all(np.diff(dist, axis=1) >= -1e-6)
    recall = np.mean([len(set(a[1:]) & set(b[1:])) / 10 for a, b in zip(ids, exact_ids, strict=True)])
    assert recall >= 0.95, recall


def test_self_first_pads_with_self_when_a_search_returns_too_few():
    rows = np.array([5, 6])
    found = np.array([[5, 9, -1], [7, 6, 8]])
    scores = np.array([[1.0, 0.5, -np.inf], [0.9, 1.0, 0.2]], np.float32)
    ids, dist = _self_first(rows, found, scores, 3)
    assert ids.tolist() == [[5, 9, 5], [6, 7, 8]]
    np.testing.assert_allclose(dist, [[0, 0.5, 0], [0, 0.1, 0.8]], atol=1e-7)


def test_knn_graph_refuses_bad_k():
    with pytest.raises(InputError, match="k must be between"):
        knn_graph_chunked(np.ones((3, 2), np.float32), k=5)


def test_pca_layout_matches_projection_pca_chunk_by_chunk(monkeypatch):
    import isoscope.atlas.layout as lay

    X, _ = blobs(500, d=12)
    monkeypatch.setattr(lay, "CHUNK_ROWS", 64)  # many chunks
    ours = pca_layout(X)
    want = pca(X, 2)
    # one-pass covariance (sum of x x^T - n mu mu^T) in float64: error ~ eps * |x|^2 / variance, far below 1e-4
    np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_umap_layout_keeps_blobs_apart_and_is_deterministic():
    X, label = blobs(300, k=3, d=10)
    graph = knn_graph_chunked(X, k=10)
    a = layout(X, "umap", knn=graph, seed=0)
    b = layout(X, "umap", knn=graph, seed=0)
    assert a.shape == (300, 2) and a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    bounds = dens.layout_bounds(a)
    clusters = dens.density_clusters(a, bounds, dens.density_grid(a, bounds))
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(label[clusters >= 0], clusters[clusters >= 0]) > 0.9
    with pytest.raises(InputError, match="unknown layout"):
        layout(X, "tsne")


def test_density_clusters_find_separated_blobs_largest_first():
    rng = np.random.default_rng(1)
    sizes = [3000, 2000, 1000]
    centres = np.array([[0, 0], [30, 0], [0, 30]], np.float32)
    xy = np.concatenate([c + rng.normal(0, 1, (s, 2)) for c, s in zip(centres, sizes, strict=True)]).astype(np.float32)
    truth = np.repeat(np.arange(3), sizes)
    bounds = dens.layout_bounds(xy)
    grid = dens.density_grid(xy, bounds)
    labels = dens.density_clusters(xy, bounds, grid)
    assert set(np.unique(labels)) <= {-1, 0, 1, 2}
    for c in range(3):  # cluster c is blob c (numbered by size) and holds nearly all of it
        members = truth[labels == c]
        assert np.all(members == c) and len(members) > 0.9 * sizes[c]
    d = dens.point_density(xy, bounds, grid)
    assert d.max() == pytest.approx(1.0) and d.min() >= 0
    assert d[truth == 0].mean() > d[truth == 2].mean()  # the big blob is denser


def test_synthetic_corpus_is_seeded():
    a, ta = synthetic_corpus(50, seed=7)
    b, tb = synthetic_corpus(50, seed=7)
    c, _ = synthetic_corpus(50, seed=8)
    assert a == b and ta == tb and a != c
    assert all(t.endswith(".") and t[0].isupper() for t in a)


def test_contour_levels_are_distinct_quantiles_and_png_is_png():
    levels = contour_levels(np.array([0.1, 0.2, 0.2, 0.9]))
    assert levels.tolist() == sorted(set(levels.tolist())) and len(levels) >= 2
    assert to_png(np.zeros((4, 4, 4), np.uint8))[:8] == b"\x89PNG\r\n\x1a\n"


def test_cluster_levels_go_from_coarse_to_fine():
    X, _ = blobs(3000, k=3, d=2, seed=4)
    xy = X[:, :2]
    bounds = dens.layout_bounds(xy)
    levels = dens.levels(len(xy))
    assert [lv.grid for lv in levels] == sorted(lv.grid for lv in levels) and len(levels) == 3
    assert levels[dens.DEFAULT_LEVEL].grid == dens.grid_size(len(xy))
    default = dens.level_clusters(xy, bounds, levels[dens.DEFAULT_LEVEL])
    np.testing.assert_array_equal(default, dens.density_clusters(xy, bounds, dens.density_grid(xy, bounds)))
    counts = [len(np.unique(c[c >= 0])) for c in (dens.level_clusters(xy, bounds, lv) for lv in levels)]
    assert counts[0] <= counts[1] <= counts[2] and counts[0] >= 1


def _clusters_point_by_point(xy, bounds, grid, min_points, max_clusters):
    """The clusters computed over the points themselves (the median of n densities, each point's peak, the
    peaks' point counts), as the atlas did before it summed points per cell: the reference for ``basins``."""
    ix, iy = dens.cells(xy, bounds, grid.shape[0])
    cell = iy * grid.shape[0] + ix  # (n,)
    active = grid > dens.LEVEL * float(np.median(grid.ravel()[cell]))
    peak = dens._climb(grid, active)
    point_peak = np.where(active.ravel()[cell], peak[cell], -1)  # (n,)
    peaks, counts = np.unique(point_peak[point_peak >= 0], return_counts=True)
    order = np.lexsort((peaks, -counts))
    keep = peaks[order][counts[order] >= min_points][:max_clusters]
    lookup = np.full(grid.size, -1, np.int32)
    lookup[keep] = np.arange(len(keep), dtype=np.int32)
    return np.where(point_peak >= 0, lookup[np.maximum(point_peak, 0)], -1)


@pytest.mark.parametrize("n", [6_001, 6_000])  # odd and even: the median of one or the mean of two
def test_clusters_from_counts_per_cell_are_the_clusters_of_the_points(n):
    rng = np.random.default_rng(n)
    centres = rng.uniform(-20, 20, (12, 2))
    xy = (centres[rng.integers(0, 12, n)] + rng.normal(0, 1.5, (n, 2))).astype(np.float32)
    bounds = dens.layout_bounds(xy)
    for level in dens.levels(n):
        grid = dens.density_grid(xy, bounds, level.grid)
        want = _clusters_point_by_point(xy, bounds, grid, level.min_points, level.max_clusters)
        got = dens.level_clusters(xy, bounds, level)
        assert len(np.unique(want[want >= 0])) >= 3
        np.testing.assert_array_equal(got, want)


def test_weighted_median_is_the_median_of_the_repeats():
    rng = np.random.default_rng(0)
    for _ in range(200):
        values = rng.integers(0, 6, 10).astype(np.float64) / 3  # ties on purpose
        weights = rng.integers(0, 4, 10)
        if weights.sum() == 0:
            continue
        assert dens.weighted_median(values, weights) == np.median(np.repeat(values, weights))


def test_a_cluster_map_from_blocks_of_rows_labels_as_the_whole():
    """Bounds and counts per cell summed over uneven blocks, then each block labelled: every level's clusters,
    the density and the cluster sizes of the corpus computed at once."""
    X, _ = blobs(5_000, k=4, d=2, seed=6)
    xy = X[:, :2].astype(np.float32)
    blocks = [xy[a:b] for a, b in ((0, 1), (1, 1_700), (1_700, 1_700), (1_700, 5_000))]  # an empty block too
    bounds = dens.bounds_of([dens.extent(b) for b in blocks])
    assert bounds == dens.layout_bounds(xy)
    specs = dens.levels(len(xy))
    counts = [sum(c) for c in zip(*(dens.block_counts(b, bounds, specs) for b in blocks), strict=True)]
    cmap = dens.ClusterMap.fit(bounds, specs, counts)
    parts = [cmap.rows(b) for b in blocks]
    density = np.concatenate([p[0] for p in parts])
    np.testing.assert_array_equal(density, dens.point_density(xy, bounds, dens.density_grid(xy, bounds)))
    for i, level in enumerate(specs):
        labels = np.concatenate([p[1][i] for p in parts])
        np.testing.assert_array_equal(labels, dens.level_clusters(xy, bounds, level))
        np.testing.assert_array_equal(cmap.sizes(i), np.bincount(labels[labels >= 0]))
        centres = cmap.cell_centres(i)  # within a cell of each cluster's mean point
        means = np.array([xy[labels == c].mean(axis=0) for c in range(len(centres))])
        cell = (np.array(bounds[2:]) - np.array(bounds[:2])) / level.grid
        assert np.all(np.abs(centres - means) <= cell / 2 + 1e-9)


def test_composite_is_the_over_operator():
    from isoscope.atlas.raster import composite

    under = np.array([[[0, 0, 255, 255], [0, 0, 0, 0]]], np.uint8)
    over = np.array([[[255, 0, 0, 0], [10, 20, 30, 255]]], np.uint8)
    out = composite(under, over)
    assert out[0, 0].tolist() == [0, 0, 255, 255]  # transparent over: unchanged
    assert out[0, 1].tolist() == [10, 20, 30, 255]  # opaque over: replaced
    half = composite(under[:, :1], np.array([[[255, 0, 0, 128]]], np.uint8))[0, 0]
    assert half[3] == 255 and abs(int(half[0]) - 128) <= 1 and abs(int(half[2]) - 127) <= 1


def test_view_box_fits_the_bulk_and_leaves_stray_points_out():
    """Issue 41: a UMAP map with a few stray points far from the mass (repeated or odd texts) opened fitted to
    every point, the mass a fifth of the frame. The view box holds the bulk; the bounds still hold every point."""
    rng = np.random.default_rng(0)
    mass = rng.normal(size=(9_950, 2)).astype(np.float32)  # (n, 2)
    stray = rng.uniform(-40, 40, size=(50, 2)).astype(np.float32)  # 0.5% of the points, far out
    xy = np.concatenate([mass, stray])
    bounds, view = dens.layout_bounds(xy), dens.view_box(xy)
    inside = (xy[:, 0] >= view[0]) & (xy[:, 0] <= view[2]) & (xy[:, 1] >= view[1]) & (xy[:, 1] <= view[3])
    assert inside[: len(mass)].mean() >= 0.98  # the bulk is in view
    area = (view[2] - view[0]) * (view[3] - view[1]) / ((bounds[2] - bounds[0]) * (bounds[3] - bounds[1]))
    assert area < 0.05  # and fills it: the bounds are ~80 wide, the mass ~6
    assert bounds[0] <= view[0] < view[2] <= bounds[2] and bounds[1] <= view[1] < view[3] <= bounds[3]
    assert dens.view_box(mass[:500]) == pytest.approx(dens.view_box(mass[:500]))  # seeded: the same box
    compact = rng.uniform(0, 1, size=(2_000, 2))  # no stray points: the box is about the bounds
    v, b = dens.view_box(compact), dens.layout_bounds(compact)
    assert (v[2] - v[0]) / (b[2] - b[0]) > 0.95
