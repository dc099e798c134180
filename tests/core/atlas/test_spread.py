"""isoscope.atlas.spread (issue 54.6): a layout's crowded points moved apart at the deepest zoom, cell by cell, the
same in one process and in groups of whole cells (the ray engine's tasks)."""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from isoscope.atlas import spread as sp


def _clumped(n: int = 40_000, seed: int = 0) -> np.ndarray:
    """A layout of dense blobs of many sizes, one of them a few hundred points on one spot."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10, 10, (300, 2))
    blob = rng.integers(0, 300, n)
    width = rng.uniform(1e-4, 0.05, 300)[blob, None]  # some blobs far tighter than a pixel at the deepest level
    xy = centres[blob] + rng.normal(0, 1, (n, 2)) * width
    xy[:300] = centres[0]  # 300 rows on one spot
    return xy.astype(np.float32)


def _pairs_within(xy: np.ndarray, plan: sp.SpreadPlan) -> int:
    """Pairs of points of the same cell closer than the separation (float32 round-off allowed)."""
    pairs = cKDTree(xy.astype(np.float64)).query_pairs(plan.separation * (1 - 1e-4), output_type="ndarray")
    cells = plan.cells(xy)
    return int((cells[pairs[:, 0]] == cells[pairs[:, 1]]).sum())


def test_every_point_of_a_crowded_layout_is_a_separation_apart_and_the_others_do_not_move():
    xy = _clumped()
    plan = sp.spread_plan(xy)
    out = sp.spread_layout(xy)
    assert out.dtype == np.float32 and out.shape == xy.shape
    before, after = _pairs_within(xy, plan), _pairs_within(out, plan)
    assert before > 10_000 and after == 0, (before, after)
    d, _ = cKDTree(xy).query(xy, k=2)
    alone = d[:, 1] >= plan.separation  # nothing within the separation: not crowded
    np.testing.assert_array_equal(out[alone], xy[alone])
    moved = np.hypot(*(out - xy).T) / plan.separation
    assert np.percentile(moved, 99) < 30  # a few separations: pixels at the deepest level


def test_the_separation_is_two_discs_at_the_deepest_level_the_tiles_serve():
    from isoscope.atlas.spatial import SpatialIndex
    from isoscope.atlas.tiles import MAX_RADIUS, TileGrid

    xy = sp.spread_layout(_clumped())
    plan = sp.spread_plan(xy)
    grid = TileGrid.build(SpatialIndex.build(xy, plan.world))
    assert grid.max_level == plan.level
    assert plan.separation / grid.pixel(plan.level) == 2 * MAX_RADIUS + 1


def test_groups_of_whole_cells_spread_as_one_process_does():
    """The ray engine spreads groups of whole cells in tasks: any cut between cells gives the same places."""
    xy = _clumped(20_000, seed=1)
    plan = sp.spread_plan(xy)
    cells = plan.cells(xy)
    order = np.argsort(cells, kind="stable")  # by (cell, row)
    cut = int(np.searchsorted(cells[order], cells[order][len(order) // 2]))  # a cell's first position
    parts = [
        sp.spread_cells(xy[order][a:b], order[a:b], cells[order][a:b], plan) for a, b in ((0, cut), (cut, len(xy)))
    ]
    got = np.empty_like(xy)
    got[order] = np.concatenate(parts)
    np.testing.assert_array_equal(got, sp.spread_layout(xy))


def test_a_spot_of_many_rows_becomes_a_spiral_of_discs():
    q = np.zeros((500, 2))
    out = sp.spread_cell(q, np.arange(500))
    d, _ = cKDTree(out).query(out, k=2)
    assert d[:, 1].min() >= 1.0 - 1e-9  # a separation apart, every one
    assert np.hypot(*out.T).max() < 1.25 * np.sqrt(500 / np.pi) * 1.5  # packed about the spot, not scattered
