"""The deepest zoom resolves every point: points a layout packs closer than two discs apart at the deepest tile level
are moved apart, each dense cell's points laid out locally, before the layout is written (issue 54.6).

plan = spread_plan(xy)                                 # the world, the deepest level, the separation, the cells
xy = spread_layout(xy)                                 # (n, 2) float32: in one process (the one-machine engine)
moved = spread_cells(points, rows, cells, plan)        # whole cells of a group (the ray engine's tasks)

UMAP packs a subtopic's rows within a pixel even at 16,384x (a 3M atlas's most crowded deepest view showed 295 discs
for 917 points): its negative samples, drawn from every row, almost never fall in the same subtopic, so nothing
pushes such rows apart at that scale. The separation is ``SEPARATION_PX`` pixels at the deepest level the tiles
serve (``tiles.deepest_level`` of the layout's typical spacing): two discs of ``tiles.MAX_RADIUS`` and a pixel.

The plane is cut into square cells of ``CELL_PX`` pixels at that level (Morton cells: ``spatial.block_codes``),
each processed on its own, so the result is the same whether one process does every cell or tasks do groups of
whole cells. In a cell, a point with another within the separation (among its ``NEAR`` nearest) is crowded; each
group of crowded points joined by such pairs is magnified about its centre until it has a lattice node's area per
point (a group on one spot is laid on a Vogel spiral in row order instead), then each of its points takes the free
node nearest its magnified place, in order of distance from the centre (ties by row). The nodes lie on a lattice
``NODE`` separations apart, each moved by a fixed jitter of at most ``JITTER`` (no grid pattern, still a separation
apart); a node within a separation of a point that stays is not free. A point whose ``PROBES`` nearest nodes are
taken keeps its magnified place. A point that is not crowded does not move. Moves are a few separations (pixels at
the deepest level), invisible a few levels up; magnification keeps a group's arrangement, so neighbours stay
together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from isoscope.atlas.density import bounds_of, extent
from isoscope.atlas.spatial import BITS, World, block_codes
from isoscope.atlas.tiles import MAX_RADIUS, TILE, deepest_level, nearest_spacing

SEPARATION_PX = 2 * MAX_RADIUS + 1.0  # two discs of the deepest level and a pixel between them
CELL_PX = 8_192  # a cell's side in pixels at the deepest level (32 tiles): a dense group fits in one
NODE = 1.25  # the lattice's spacing in separations
JITTER = 0.12  # each node's fixed offset, in separations: nodes stay NODE - 2 JITTER > 1 separation apart
NEAR = 8  # the nearest points looked at for a point's crowding
PROBES = 2_000  # the nearest free nodes tried for a crowded point (about 25 nodes around its place)
BLOCK_ROWS = 1 << 20  # rows read at a time for the bounds and the cells
GOLDEN_ANGLE = math.pi * (3 - math.sqrt(5))
_PHI = (0.6180339887498949, 0.7548776662466927)  # the node jitter's angle: a fixed function of the node
_ring = np.mgrid[-30:31, -30:31].reshape(2, -1).T  # lattice offsets, nearest first (ties by x, then y)
_OFFSETS = [tuple(o) for o in _ring[np.lexsort((_ring[:, 1], _ring[:, 0], (_ring**2).sum(1)))][:PROBES].tolist()]


@dataclass(frozen=True)
class SpreadPlan:
    """Where a layout's points are spread: its ``world`` (as the index will square it), the ``level`` the tiles
    will serve deepest, the ``separation`` there (world units), and the Morton level of the cells
    (``cell_level``: cells of ``CELL_PX`` pixels at ``level``)."""

    world: World
    level: int
    separation: float
    cell_level: int

    def cells(self, block: np.ndarray) -> np.ndarray:
        """The cell (m,) uint32 of each point of ``block`` (m, 2)."""
        return block_codes(block, self.world) >> np.uint32(2 * (BITS - self.cell_level))


def spread_plan(xy: np.ndarray) -> SpreadPlan:
    """The plan of layout ``xy`` (n, 2) (a memory map is read ``BLOCK_ROWS`` rows at a time and on a sample): the
    world around its bounds (``density.bounds_of``, as the clusters stage writes them and the index squares them),
    the deepest level for its typical spacing (``tiles.nearest_spacing``), the separation there."""
    n = len(xy)
    bounds = bounds_of([extent(np.asarray(xy[s : s + BLOCK_ROWS], np.float32)) for s in range(0, n, BLOCK_ROWS)])
    world = World.around(bounds)
    level = deepest_level(nearest_spacing(xy, world.size), world.size)
    pixel = world.size / (TILE * (1 << level))
    cell_level = int(min(BITS, max(0, level - round(math.log2(CELL_PX / TILE)))))
    return SpreadPlan(world, level, SEPARATION_PX * pixel, cell_level)


def spread_layout(xy: np.ndarray) -> np.ndarray:
    """``xy`` (n, 2) with every cell spread (module docstring), in one process: float32 (n, 2)."""
    xy = np.asarray(xy, np.float32)
    plan = spread_plan(xy)
    cells = plan.cells(xy)  # (n,)
    order = np.argsort(cells, kind="stable")  # by cell, then row
    out = xy.copy()
    out[order] = spread_cells(xy[order], order, cells[order], plan)
    return out


def spread_cells(points: np.ndarray, rows: np.ndarray, cells: np.ndarray, plan: SpreadPlan) -> np.ndarray:
    """The points (m, 2) of whole cells, sorted by (cell, row) (``rows`` (m,), ``cells`` (m,)), each cell spread on
    its own: float32 (m, 2) in the same order."""
    out = np.asarray(points, np.float32).copy()
    starts = np.flatnonzero(np.r_[True, cells[1:] != cells[:-1], True])  # each cell's first position, and m
    for a, b in zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True):
        if b - a > 1:
            q = np.asarray(points[a:b], np.float64) / plan.separation  # (c, 2) in separations
            out[a:b] = (spread_cell(q, np.asarray(rows[a:b], np.int64)) * plan.separation).astype(np.float32)
    return out


def _nodes(nx: np.ndarray, ny: np.ndarray) -> np.ndarray:
    """The places (m, 2), in separations, of lattice nodes (nx, ny): the lattice point and its fixed jitter."""
    angle = np.mod(nx * _PHI[0] + ny * _PHI[1], 1.0) * 2 * math.pi
    return np.column_stack([nx * NODE + JITTER * np.cos(angle), ny * NODE + JITTER * np.sin(angle)])


def _crowded(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The crowded points (c,) of ``q`` (m, 2), ascending, and the group (c,) of each: groups of points joined by
    pairs closer than 1 (among each point's ``NEAR`` nearest), numbered 0.. in order of their first point."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import cKDTree

    m = len(q)
    dist, near = cKDTree(q).query(q, k=min(NEAR + 1, m), distance_upper_bound=1.0)  # (m, K): self first
    close = np.isfinite(dist[:, 1:]) & (near[:, 1:] != np.arange(m)[:, None])
    i, j = np.repeat(np.arange(m), close.sum(axis=1)), near[:, 1:][close]
    crowded = np.zeros(m, bool)
    crowded[i], crowded[j] = True, True
    idx = np.flatnonzero(crowded)
    if len(idx) == 0:
        return idx, idx
    _, group = connected_components(coo_matrix((np.ones(len(i)), (i, j)), shape=(m, m)), directed=False)
    _, group = np.unique(group[idx], return_inverse=True)
    return idx, group


def _targets(q: np.ndarray, rows: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each crowded point would go (c, 2) and its distance from its group's centre there (c,): each group
    magnified about its centre to a node's area a point (never shrunk), or on a Vogel spiral when on one spot."""
    sizes = np.bincount(group)  # (g,)
    centre = np.column_stack([np.bincount(group, q[:, 0]), np.bincount(group, q[:, 1])]) / sizes[:, None]
    off = q - centre[group]  # (c, 2)
    rms = np.sqrt(np.bincount(group, (off**2).sum(axis=1)) / sizes)  # (g,)
    want = NODE * np.sqrt(sizes / (2 * math.pi))  # the rms radius of a disc holding a node's area a point
    grow = np.maximum(1.0, want / np.maximum(rms, 1e-12))
    by_row = np.lexsort((rows, group))
    rank = np.empty(len(q), np.int64)
    rank[by_row] = np.arange(len(q)) - np.r_[0, np.cumsum(sizes)][:-1][group[by_row]]  # (c,) in its group
    spiral = 0.7 * NODE * np.sqrt(rank + 0.5)[:, None]  # Vogel: points 1.08 spiral units apart at least
    spiral = spiral * np.column_stack([np.cos(rank * GOLDEN_ANGLE), np.sin(rank * GOLDEN_ANGLE)])
    off = np.where((rms < 1e-9)[group][:, None], spiral, off * grow[group][:, None])
    return centre[group] + off, np.hypot(off[:, 0], off[:, 1])


def _taken(q: np.ndarray) -> set[tuple[int, int]]:
    """The lattice nodes within 1 of the points ``q`` (s, 2) that stay."""
    taken: set[tuple[int, int]] = set()
    base = np.floor(q / NODE).astype(np.int64)  # (s, 2)
    for dx in (-1, 0, 1, 2):
        for dy in (-1, 0, 1, 2):
            nx, ny = base[:, 0] + dx, base[:, 1] + dy
            near = ((_nodes(nx, ny) - q) ** 2).sum(axis=1) < 1.0
            taken.update(zip(nx[near].tolist(), ny[near].tolist(), strict=True))
    return taken


def spread_cell(q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One cell's points ``q`` (m, 2) float64, in separations, of ``rows`` (m,) ascending: the points spread
    (module docstring), float64 (m, 2)."""
    if len(q) < 2:
        return q
    idx, group = _crowded(q)
    if len(idx) == 0:
        return q
    stays = np.ones(len(q), bool)
    stays[idx] = False
    target, dist = _targets(q[idx], rows[idx], group)  # (c, 2), (c,)
    taken = _taken(q[stays])
    base = np.rint(target / NODE).astype(np.int64)  # (c, 2) the node nearest each target
    got = np.zeros((len(idx), 2), np.int64)
    found = np.zeros(len(idx), bool)
    for a in np.lexsort((rows[idx], dist, group)).tolist():  # by group, then from its centre out
        x0, y0 = int(base[a, 0]), int(base[a, 1])
        for ox, oy in _OFFSETS:
            key = (x0 + ox, y0 + oy)
            if key not in taken:
                taken.add(key)
                got[a], found[a] = key, True
                break
    out = q.copy()
    out[idx[found]] = _nodes(got[found, 0], got[found, 1])
    out[idx[~found]] = target[~found]
    return out
