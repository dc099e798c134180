"""isoscope.atlas.spatial (the Morton-order index) and isoscope.atlas.tiles (the tile pyramid) against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.ndimage import correlate

from isoscope.atlas.spatial import CELLS, SpatialIndex, World, morton
from isoscope.atlas.tiles import TILE, ContourField, TileGrid, TileMap, check_tile, disc_kernel, render_tile


def points(n: int = 5_000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 5, (8, 2))
    return (centres[rng.integers(0, 8, n)] + rng.normal(0, 0.6, (n, 2))).astype(np.float32)  # (n, 2)


def brute_box(xy: np.ndarray, box) -> np.ndarray:
    x0, y0, x1, y1 = box
    return np.flatnonzero((xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1))


def test_morton_interleaves_bits_and_orders_quadrants():
    assert morton(np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])).tolist() == [0, 1, 2, 3]
    assert int(morton(np.array([CELLS - 1]), np.array([CELLS - 1]))[0]) == 2**32 - 1
    assert int(morton(np.array([0b101]), np.array([0b011]))[0]) == 0b011011  # y bits odd, x bits even


def test_world_is_the_square_around_the_bounds_and_tiles_count_rows_from_the_top():
    w = World.around((0.0, 0.0, 4.0, 2.0))
    assert (w.x0, w.y0, w.size) == (0.0, -1.0, 4.0)
    assert w.tile_box(0, 0, 0) == (0.0, -1.0, 4.0, 3.0)
    assert w.tile_box(1, 0, 0) == (0.0, 1.0, 2.0, 3.0)  # row 0 = the top half
    assert w.tile_box(1, 1, 1) == (2.0, -1.0, 4.0, 1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_box_queries_match_brute_force_at_every_size(seed):
    xy = points(seed=seed)
    index = SpatialIndex.build(xy, World.around((-15, -15, 15, 15)))
    rng = np.random.default_rng(seed)
    for _ in range(60):
        c = rng.uniform(-12, 12, 2)
        half = rng.choice([1e-3, 0.05, 0.5, 3.0, 40.0]) * rng.uniform(0.5, 1.5, 2)
        box = (c[0] - half[0], c[1] - half[1], c[0] + half[0], c[1] + half[1])
        np.testing.assert_array_equal(index.rows_in_box(*box), brute_box(xy, box))
    np.testing.assert_array_equal(index.rows_in_box(5, 5, -5, -5), brute_box(xy, (-5, -5, 5, 5)))  # either corner order


def test_nearest_is_the_closest_point_within_the_radius():
    xy = points(2_000, seed=3)
    index = SpatialIndex.build(xy, World.around((-15, -15, 15, 15)))
    rng = np.random.default_rng(4)
    for q in rng.uniform(-12, 12, (200, 2)):
        for r in (0.01, 0.3, 2.0):
            d = np.hypot(*(xy.astype(np.float64) - q).T)
            want = int(np.argmin(d)) if d.min() <= r else -1
            assert index.nearest(float(q[0]), float(q[1]), r) == want
    i = 17
    assert index.nearest(float(xy[i, 0]), float(xy[i, 1]), 1e-6) == i  # a point itself (no other point on it)


def test_pyramid_depth_reaches_single_points_for_many_and_few_points():
    small = TileGrid.build(SpatialIndex.build(points(300), World.around((-15, -15, 15, 15))))
    big = TileGrid.build(SpatialIndex.build(points(200_000), World.around((-15, -15, 15, 15))))
    assert small.max_level >= 10 and big.max_level >= small.max_level
    for grid in (small, big):
        assert grid.point_radius(0) == 0.0  # the top level aggregates
        assert grid.point_radius(grid.max_level) >= 3.0  # the deepest level draws discs
        # at the deepest level neighbouring points are at least 24 px apart (typical spacing)
        assert grid.spacing / grid.pixel(grid.max_level) >= 24
    assert check_tile(big, 0, 0, 0) and not check_tile(big, 1, 2, 0) and not check_tile(big, big.max_level + 1, 0, 0)


def test_top_tile_draws_every_point_with_its_colour():
    xy = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 1.0], [-3.0, 2.0]], np.float32)
    index = SpatialIndex.build(xy, World.around((-4, -4, 4, 4)))
    grid = TileGrid(index.world, spacing=0.001, max_level=10)  # dense: level 0 aggregates, one pixel a point
    colors = np.array([[255, 0, 0], [0, 0, 255], [0, 0, 255], [0, 255, 0]], np.uint8)[index.order]
    rgba = render_tile(index, colors, grid, 0, 0, 0)
    assert rgba.shape == (TILE, TILE, 4)
    lit = np.argwhere(rgba[..., 3] > 0)
    assert len(lit) == 3  # two points share a pixel
    px = TILE / 8  # pixels per world unit

    def at(x, y):
        return rgba[int(np.floor((4 - y) * px)), int(np.floor((x + 4) * px))]

    assert at(0, 0)[:3].tolist() == [255, 0, 0] and at(-3, 2)[:3].tolist() == [0, 255, 0]
    assert at(1, 1)[:3].tolist() == [0, 0, 255] and at(1, 1)[3] > at(0, 0)[3]  # two points: more opaque


def test_deep_tiles_draw_discs_and_join_without_seams():
    rng = np.random.default_rng(5)
    xy = rng.uniform(-1, 1, (400, 2)).astype(np.float32)
    tmap = TileMap.of(
        xy, (-1.0, -1.0, 1.0, 1.0), density_grid=np.ones((32, 32)), point_density=np.ones(400, np.float32)
    )
    z = 4
    colors = tmap.sorted(np.full((400, 3), 50, np.uint8))
    radius = tmap.grid.point_radius(z)
    assert radius > 1
    # a 2 x 2 block of tiles drawn one by one equals the same region drawn as one image (disc kernel per point)
    block = np.concatenate(
        [
            np.concatenate([tmap.tile(colors, z, tx, ty, contours=False)[..., 3] for tx in (7, 8)], axis=1)
            for ty in (7, 8)
        ],
        axis=0,
    )
    pix = tmap.grid.pixel(z)
    x0, _, _, y1 = tmap.grid.world.tile_box(z, 7, 7)
    kernel = disc_kernel(radius)
    r = kernel.shape[0] // 2
    side = 2 * TILE + 2 * r
    canvas = np.zeros((side, side))  # the same region as one image: no tile edges
    for x, y in xy.astype(np.float64):
        c, row = int(np.floor((x - x0) / pix)) + r, int(np.floor((y1 - y) / pix)) + r
        if 0 <= c < side and 0 <= row < side:
            canvas[row, c] += 1
    want = correlate(canvas, kernel, mode="constant")[r:-r, r:-r] > 1e-9
    np.testing.assert_array_equal(block > 0, want)


def test_contours_are_drawn_where_a_level_is_crossed():
    g = np.zeros((64, 64))
    yy, xx = np.mgrid[0:64, 0:64]
    g[:] = np.exp(-((xx - 31.5) ** 2 + (yy - 31.5) ** 2) / 200)  # one smooth bump in the middle
    field = ContourField(g, (0.0, 0.0, 1.0, 1.0), np.array([0.5]))
    grid = TileGrid(World.around((0.0, 0.0, 1.0, 1.0)), spacing=0.01, max_level=10)
    lines = field.lines(grid, 0, 0, 0)[..., 3] > 0
    ys, xs = np.nonzero(lines)
    radius = np.hypot(xs + 0.5 - TILE / 2, ys + 0.5 - TILE / 2)  # pixels from the centre
    want = np.sqrt(-200 * np.log(0.5)) * TILE / 64  # where the bump is 0.5
    assert len(xs) > 100 and np.abs(radius - want).max() < 2.5  # a circle of the right size, a pixel wide
    deep = field.lines(grid, 3, 2, 3)[..., 3] > 0  # 8x deeper: still a line one pixel wide, not a staircase
    assert deep.any() and deep.sum() < 4 * TILE


def test_spacing_is_the_median_nearest_neighbour_distance_also_when_sampled():
    from isoscope.atlas.tiles import nearest_spacing

    lattice = np.stack(np.meshgrid(np.arange(300.0), np.arange(300.0)), -1).reshape(-1, 2) * 0.5  # 90,000 points
    assert nearest_spacing(lattice, 150.0, sample=len(lattice)) == pytest.approx(0.5)
    cloud = points(90_000)  # random clusters (a lattice is more regular than any sample of it)
    exact = nearest_spacing(cloud, 40.0, sample=len(cloud))
    assert nearest_spacing(cloud, 40.0, sample=10_000) == pytest.approx(exact, rel=0.1)  # sampled, rescaled
    twice = np.concatenate([lattice, lattice])  # duplicates share a position: the spacing is to the next one
    assert nearest_spacing(twice, 150.0, sample=len(twice)) == pytest.approx(0.5)


def test_the_spacing_sample_is_a_set_of_positions_whatever_the_rows_order():
    """Issue 54.6: the spread (rows in layout order) and the served grid (the index's Morton order) must find the
    same deepest level; the spacing's sample is chosen by the points' positions, so any order gives the same."""
    from isoscope.atlas.tiles import nearest_spacing, spacing_sample

    cloud = points(120_000, seed=3)
    shuffled = cloud[np.random.default_rng(1).permutation(len(cloud))]
    a, b = spacing_sample(cloud, 1_000, block_rows=7_000), spacing_sample(shuffled, 1_000, block_rows=50_000)
    assert len(a) == 1_000 and np.array_equal(np.unique(a, axis=0), np.unique(b, axis=0))
    world = World.around((float(cloud[:, 0].min()), float(cloud[:, 1].min()), *cloud.max(axis=0).tolist()))
    index = SpatialIndex.build(cloud, world)  # its xy in Morton order
    assert not np.array_equal(index.xy, cloud)
    grid = TileGrid.build(index)
    assert grid.spacing == nearest_spacing(cloud, world.size) == nearest_spacing(shuffled, world.size)


def test_a_pick_names_a_lit_point_exactly_where_its_yellow_is_drawn_else_the_nearest_point():
    """Issue 50 item 8 (hover and click name one row, ``pick_row``): over the pixels of highlight tiles, at an
    aggregated level and at a level of discs, the pick at a pixel's centre is the nearest lit point whose disc
    paints it where the tile is yellow (drawn over every other point, so never a nearer unlit neighbour), and
    the nearest point within the radius everywhere else."""
    from isoscope.atlas.tiles import HIGHLIGHT, highlight_tile, lit_radius, pick_row

    xy = points(3_000, seed=5)
    world = World.around((-15, -15, 15, 15))
    index = SpatialIndex.build(xy, world)
    grid = TileGrid.build(index)
    rng = np.random.default_rng(6)
    rows = rng.choice(len(xy), 400, replace=False)
    lit = index.positions_of(rows)
    lit_xy = xy[rows].astype(np.float64)
    yellow_unlit_nearer = 0
    for z in (3, 6):
        assert (grid.point_radius(z) == 0) == (z == 3)  # an aggregated level, then one of discs
        pix, r = grid.pixel(z), lit_radius(grid, z)
        tx = int((lit_xy[0, 0] - world.x0) // (TILE * pix))  # the tile of a lit point
        ty = int((world.y0 + world.size - lit_xy[0, 1]) // (TILE * pix))
        x0, _, _, y1 = world.tile_box(z, tx, ty)
        img = highlight_tile(index, lit, grid, z, tx, ty)
        yellow = (img[..., :3] == HIGHLIGHT).all(axis=2) & (img[..., 3] == 255)  # (TILE, TILE)
        assert 20 < yellow.sum() < TILE * TILE / 2
        f32 = np.float32  # the pixel a tile draws a point at (float32 down to level 10, as render_tile does)
        col = np.floor((xy[rows, 0] - f32(x0)) / f32(pix)).astype(int)
        row = np.floor((f32(y1) - xy[rows, 1]) / f32(pix)).astype(int)
        painted = np.argwhere(yellow)  # (row, column) each
        pixels = np.concatenate([painted[rng.permutation(len(painted))[:150]], rng.integers(0, TILE, (150, 2))])
        for py, px in pixels:
            x, y = x0 + (px + 0.5) * pix, y1 - (py + 0.5) * pix
            got = pick_row(index, grid, x, y, radius=8 * pix, z=z, lit=lit)
            nearest = index.nearest(x, y, 8 * pix)
            if not yellow[py, px]:
                assert got == nearest, (z, px, py)
                continue
            painting = np.hypot(col - px, row - py) < r + 0.5  # the lit discs that reach this pixel
            d = np.hypot(*(lit_xy[painting] - [x, y]).T)
            assert got == rows[painting][np.lexsort((rows[painting], d))[0]], (z, px, py)
            yellow_unlit_nearer += nearest not in rows
    assert yellow_unlit_nearer > 0  # the case of the issue was met: a yellow pixel nearer an unlit point
