"""Density of a 2-D layout on a grid, per-point density, density-mode clusters and their word labels.

bounds = layout_bounds(xy)                          # (x0, y0, x1, y1) with a margin
view = view_box(xy)                                 # the box of the bulk of the points: the map's first view
grid = density_grid(xy, bounds)                     # (G, G) smoothed counts, G ~ sqrt(n) in [32, 256], row = y bin, column = x bin
dens = point_density(xy, bounds, grid)              # (n,) in [0, 1], 1 = densest cell
labels = density_clusters(xy, bounds, grid)         # (n,) int32, -1 = in no cluster
levels(n), level_clusters(xy, bounds, level)       # the cluster hierarchy, coarse to fine (labels: isoscope.atlas.labels)

The same from row blocks, never all rows at once (how the atlas builds it, in Ray tasks on that engine):
bounds = bounds_of([extent(block) for block in blocks])                      # == layout_bounds(xy)
cmap = ClusterMap.fit(bounds, levels(n), [block_counts(b, bounds, levels(n)) for b in blocks])
density, labelings = cmap.rows(block)                                         # (m,), one (m,) per level

Clusters are the basins of the smoothed density (a mean shift on the grid): every cell above
``LEVEL`` x the density of the median point climbs to its highest neighbour until it reaches a peak; the
points of a peak's basin form one cluster. Basins with fewer than ``min_points`` points are left
unclustered, clusters are numbered by size (0 = largest), at most ``max_clusters``. Everything is deterministic
and a function of the points per cell alone (``cell_counts``), so it sums over row blocks exactly: the median
point's density is the count-weighted median of the cells' densities, a basin's size the counts of its cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from isoscope.sampling import sample_indices

GRID = 256
SIGMA_CELLS = 2.0
LEVEL = 0.2
MARGIN = 0.02
MAX_CLUSTERS = 60
VIEW_MASS = 0.99  # the share of points (per axis) the map's first view is fitted to
VIEW_MARGIN = 0.05
VIEW_SAMPLE = 200_000


def extent(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and largest coordinate of a block of points (2,), (2,) float64 (no points: +inf, -inf)."""
    if len(xy) == 0:
        return np.full(2, np.inf), np.full(2, -np.inf)
    return xy.min(axis=0).astype(np.float64), xy.max(axis=0).astype(np.float64)


def bounds_of(extents, margin: float = MARGIN) -> tuple[float, float, float, float]:
    """``layout_bounds`` of the points whose blocks have these ``extent``s."""
    lo = np.min([e[0] for e in extents], axis=0)  # (2,)
    hi = np.max([e[1] for e in extents], axis=0)  # (2,)
    span = np.where(hi - lo > 0, hi - lo, 1.0)
    lo, hi = lo - margin * span, hi + margin * span
    return float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])


def layout_bounds(xy: np.ndarray, margin: float = MARGIN) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) holding every point, widened by ``margin`` of the span on each side (square cells
    are not required). A degenerate span becomes 1."""
    return bounds_of([extent(xy)], margin)


def view_box(
    xy: np.ndarray, *, mass: float = VIEW_MASS, sample: int = VIEW_SAMPLE, seed: int = 0
) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1): the box the map opens on, holding the bulk of the points: per axis the central
    ``mass`` of the coordinates (of a seeded sample of at most ``sample`` rows), widened by ``VIEW_MARGIN`` of
    its span, within ``layout_bounds``. UMAP leaves stray points and small islands far from the mass
    (repeated or odd texts); fitting every one of them shrinks the map to a fraction of its frame."""
    rows = sample_indices(len(xy), sample, seed)  # (s,) sorted: reads a memory map in order
    pts = np.asarray(xy[rows], np.float64)  # (s, 2)
    tail = (1.0 - mass) / 2
    lo, hi = np.quantile(pts, tail, axis=0), np.quantile(pts, 1.0 - tail, axis=0)  # (2,), (2,)
    span = np.where(hi - lo > 0, hi - lo, 1.0)
    lo, hi = lo - VIEW_MARGIN * span, hi + VIEW_MARGIN * span
    b = layout_bounds(pts)
    return (max(float(lo[0]), b[0]), max(float(lo[1]), b[1]), min(float(hi[0]), b[2]), min(float(hi[1]), b[3]))


def cells(xy: np.ndarray, bounds: tuple[float, float, float, float], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Grid column and row (n,) int64 of every point on a ``size`` x ``size`` grid over ``bounds``."""
    x0, y0, x1, y1 = bounds
    ix = np.floor((xy[:, 0] - x0) / (x1 - x0) * size).astype(np.int64)
    iy = np.floor((xy[:, 1] - y0) / (y1 - y0) * size).astype(np.int64)
    return np.clip(ix, 0, size - 1), np.clip(iy, 0, size - 1)


def grid_size(n: int) -> int:
    """Cells per side for ``n`` points: about sqrt(n), between 32 and ``GRID`` (few points on a fine grid
    would make every point its own density peak)."""
    return int(np.clip(int(np.sqrt(max(n, 1))), 32, GRID))


def cell_counts(xy: np.ndarray, bounds: tuple[float, float, float, float], size: int) -> np.ndarray:
    """Points per cell (size, size) int64 on a ``size`` x ``size`` grid over ``bounds``: sums over row blocks."""
    ix, iy = cells(xy, bounds, size)
    return np.bincount(iy * size + ix, minlength=size * size).reshape(size, size)


def smooth(counts: np.ndarray, sigma: float = SIGMA_CELLS) -> np.ndarray:
    """Counts per cell smoothed with a Gaussian of ``sigma`` cells (G, G) float64."""
    from scipy.ndimage import gaussian_filter

    return gaussian_filter(counts.astype(np.float64), sigma, mode="constant")


def density_grid(
    xy: np.ndarray, bounds: tuple[float, float, float, float], size: int | None = None, *, sigma: float = SIGMA_CELLS
) -> np.ndarray:
    """Point counts per cell (size, size) float64 (``size`` default: ``grid_size(n)``), smoothed with a
    Gaussian of ``sigma`` cells."""
    return smooth(cell_counts(xy, bounds, size or grid_size(len(xy))), sigma)


def point_density(xy: np.ndarray, bounds: tuple[float, float, float, float], grid: np.ndarray) -> np.ndarray:
    """Smoothed density at each point's cell (n,) float32, divided by the densest cell (so in [0, 1])."""
    ix, iy = cells(xy, bounds, grid.shape[0])
    top = grid.max()
    return (grid[iy, ix] / top if top > 0 else np.zeros(len(xy))).astype(np.float32)


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """``np.median`` of ``values`` each repeated ``weights`` times (integers >= 0, at least one > 0), without the
    repeats: the middle one, or the mean of the middle two."""
    held = weights > 0
    v, w = values[held], weights[held]
    order = np.argsort(v, kind="stable")
    v, upto = v[order], np.cumsum(w[order])  # upto[i]: how many repeated values are <= v[i]
    total = int(upto[-1])
    lo, hi = np.searchsorted(upto, [(total - 1) // 2, total // 2], side="right")  # sorted positions -> values
    return float(np.mean([v[lo], v[hi]]))


def basins(grid: np.ndarray, counts: np.ndarray, *, min_points: int, max_clusters: int) -> np.ndarray:
    """The cluster of every cell (G*G,) int32, -1 = none, from the smoothed ``grid`` and the points per cell
    ``counts`` (both (G, G)): the basins of the active cells (module doc), largest first."""
    weights = counts.ravel()
    level = LEVEL * weighted_median(grid.ravel(), weights)
    active = (grid > level).ravel()  # (G*G,)
    peak = _climb(grid, active.reshape(grid.shape))  # (G*G,)
    held = active & (weights > 0)
    sizes = np.bincount(peak[held], weights=weights[held], minlength=grid.size)  # (G*G,) points per peak
    peaks = np.flatnonzero(sizes)
    order = np.lexsort((peaks, -sizes[peaks]))  # largest first, ties by peak index
    peaks, sizes = peaks[order], sizes[peaks[order]]
    keep = peaks[sizes >= min_points][:max_clusters]
    lookup = np.full(grid.size, -1, np.int32)
    lookup[keep] = np.arange(len(keep), dtype=np.int32)
    return np.where(active, lookup[peak], -1).astype(np.int32)


def _climb(grid: np.ndarray, active: np.ndarray) -> np.ndarray:
    """For each cell (G*G,), the index of the peak reached by always stepping to the highest of its 8
    neighbours (itself when none is higher). Ties go to the lowest cell index, so the result is unique."""
    g = grid.shape[0]
    padded = np.pad(np.where(active, grid, -1.0), 1, constant_values=-1.0)
    idx = np.pad(np.arange(g * g).reshape(g, g), 1, constant_values=-1)
    best_val = np.where(active, grid, -1.0)
    best_idx = np.arange(g * g).reshape(g, g)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dy == 0 and dx == 0:
                continue
            val = padded[1 + dy : 1 + dy + g, 1 + dx : 1 + dx + g]
            nid = idx[1 + dy : 1 + dy + g, 1 + dx : 1 + dx + g]
            better = (val > best_val) | ((val == best_val) & (nid < best_idx) & (val >= 0))
            best_val = np.where(better, val, best_val)
            best_idx = np.where(better, nid, best_idx)
    parent = best_idx.ravel()
    for _ in range(2 * g * g):  # pointer jumping: log2(path length) rounds in practice
        nxt = parent[parent]
        if np.array_equal(nxt, parent):
            break
        parent = nxt
    return parent


def density_clusters(
    xy: np.ndarray,
    bounds: tuple[float, float, float, float],
    grid: np.ndarray,
    *,
    min_points: int | None = None,
    max_clusters: int = MAX_CLUSTERS,
) -> np.ndarray:
    """Cluster of every point (n,) int32 by density basin; -1 for points in sparse cells or small basins."""
    n = len(xy)
    if n == 0:
        return np.zeros(0, np.int32)
    min_points = min_points if min_points is not None else max(5, n // 500)
    size = grid.shape[0]
    cell = basins(grid, cell_counts(xy, bounds, size), min_points=min_points, max_clusters=max_clusters)  # (G*G,)
    ix, iy = cells(xy, bounds, size)
    return cell[iy * size + ix]


@dataclass(frozen=True)
class Level:
    """One level of the cluster hierarchy: a density grid of ``grid`` cells a side, basins of at least
    ``min_points`` points, at most ``max_clusters`` of them."""

    grid: int
    min_points: int
    max_clusters: int


def levels(n: int) -> list[Level]:
    """Coarse to fine: a grid a quarter as fine as ``grid_size(n)`` (a few broad regions), the default
    (``grid_size(n)``: the clusters of the colour and filter), and one twice as fine (up to 512 cells)."""
    g = grid_size(n)
    out = [
        Level(max(16, g // 4), max(5, n // 100), 16),
        Level(g, max(5, n // 500), MAX_CLUSTERS),
        Level(min(2 * g, 2 * GRID), max(5, n // 2000), 4 * MAX_CLUSTERS),
    ]
    return [lv for i, lv in enumerate(out) if i == 0 or lv.grid > out[i - 1].grid]


DEFAULT_LEVEL = 1  # levels(n)[1] is grid_size(n) for every n (32 <= grid_size <= GRID)


def level_clusters(xy: np.ndarray, bounds: tuple[float, float, float, float], level: Level) -> np.ndarray:
    """``density_clusters`` of ``xy`` on the grid of ``level`` (n,) int32, -1 = none."""
    grid = density_grid(xy, bounds, level.grid)
    return density_clusters(xy, bounds, grid, min_points=level.min_points, max_clusters=level.max_clusters)


def block_counts(xy: np.ndarray, bounds: tuple[float, float, float, float], specs: Sequence[Level]) -> list[np.ndarray]:
    """``cell_counts`` of a block of points on the grid of every level: summed over blocks, they are the corpus's."""
    return [cell_counts(xy, bounds, level.grid) for level in specs]


@dataclass(frozen=True)
class ClusterMap:
    """The density and the clusters of every level as functions of a point's cell, fitted from the corpus's
    points per cell: what labels any block of rows alike, in this process or in a Ray task.

    cmap = ClusterMap.fit(bounds, levels(n), counts)   # counts: per level (G, G), summed over every block
    density, labelings = cmap.rows(xy_block)           # (m,) float32, one (m,) int32 per level
    """

    bounds: tuple[float, float, float, float]
    levels: tuple[Level, ...]
    counts: tuple[np.ndarray, ...]  # per level (G, G) int64: points per cell
    grids: tuple[np.ndarray, ...]  # per level (G, G) float64: the counts smoothed
    lookups: tuple[np.ndarray, ...]  # per level (G*G,) int32: the cluster of each cell, -1 = none

    @classmethod
    def fit(cls, bounds: tuple[float, float, float, float], specs: Sequence[Level], counts: Sequence[np.ndarray]):
        grids = tuple(smooth(c) for c in counts)
        lookups = tuple(
            basins(grid, c, min_points=level.min_points, max_clusters=level.max_clusters)
            for level, c, grid in zip(specs, counts, grids, strict=True)
        )
        return cls(bounds, tuple(specs), tuple(np.asarray(c, np.int64) for c in counts), grids, lookups)

    def rows(self, xy: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """The density (the default level's, as ``point_density``) and every level's cluster of a block of points."""
        density = point_density(xy, self.bounds, self.grids[DEFAULT_LEVEL])  # (m,)
        labelings = []
        for level, lookup in zip(self.levels, self.lookups, strict=True):
            ix, iy = cells(xy, self.bounds, level.grid)
            labelings.append(lookup[iy * level.grid + ix])  # (m,)
        return density, labelings

    def sizes(self, which: int) -> np.ndarray:
        """Points per cluster of level ``which`` (C,) int64."""
        cell, weights = self.lookups[which], self.counts[which].ravel()
        inside = cell >= 0
        return np.bincount(cell[inside], weights=weights[inside], minlength=int(cell.max()) + 1).astype(np.int64)

    def cell_centres(self, which: int) -> np.ndarray:
        """The mean position of each cluster of level ``which`` (C, 2) float64: its cells' centres weighted by
        their points (where no sampled point shows a cluster's median)."""
        g, cell, weights = self.levels[which].grid, self.lookups[which], self.counts[which].ravel()
        x0, y0, x1, y1 = self.bounds
        cx, cy = x0 + (np.arange(g) + 0.5) / g * (x1 - x0), y0 + (np.arange(g) + 0.5) / g * (y1 - y0)
        centre = np.stack(np.meshgrid(cx, cy), axis=-1).reshape(-1, 2)  # (G*G, 2): cell iy * G + ix
        inside = cell >= 0
        c, w = cell[inside], weights[inside].astype(np.float64)
        total = np.bincount(c, weights=w, minlength=int(cell.max()) + 1)  # (C,)
        xs = np.bincount(c, weights=w * centre[inside, 0], minlength=len(total))
        ys = np.bincount(c, weights=w * centre[inside, 1], minlength=len(total))
        return np.stack([xs, ys], axis=1) / np.maximum(total, 1)[:, None]
