"""A spatial index of a 2-D layout: the points sorted along a Z-order (Morton) curve over a square world, so
every quadtree cell, and so every map tile at every zoom level, is one contiguous slice of the sorted points.

world = World.around(bounds)                    # the square the tiles divide: level z has 2^z x 2^z tiles
index = SpatialIndex.build(xy, world)           # O(n log n) once; 16 bytes a point
rows = index.rows_in_box(x0, y0, x1, y1)        # rows (m,) inside a box (box selection, a tile plus margin)
row = index.nearest(x, y, radius)               # the row nearest (x, y) within ``radius``, or -1 (hover, click)

Coordinates are quantised to ``BITS`` bits per axis (65,536 cells a side); a Morton code interleaves the two
quantised coordinates, so the cells of level ``z`` are the codes sharing their top ``2 z`` bits. A box query
takes the level whose cells are at least as large as the box (at most 2 x 2 of them cover it), reads those
cells' slices with ``searchsorted`` and keeps the points inside the box: O(log n + points in those cells).
Tiles count rows from the top (largest y), like web maps; the index itself counts y upwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BITS = 16
CELLS = 1 << BITS


@dataclass(frozen=True)
class World:
    """The square ``[x0, x0 + size] x [y0, y0 + size]`` that tiles and the index divide."""

    x0: float
    y0: float
    size: float

    @classmethod
    def around(cls, bounds: tuple[float, float, float, float]) -> World:
        """The square centred on ``bounds`` (x0, y0, x1, y1) whose side is their larger span."""
        x0, y0, x1, y1 = (float(b) for b in bounds)
        size = max(x1 - x0, y1 - y0)
        size = size if size > 0 else 1.0
        return cls((x0 + x1 - size) / 2, (y0 + y1 - size) / 2, size)

    def tile_box(self, z: int, tx: int, ty: int) -> tuple[float, float, float, float]:
        """(x0, y0, x1, y1) of tile column ``tx``, row ``ty`` (0 = top) of level ``z``."""
        side = self.size / (1 << z)
        top = self.y0 + self.size - ty * side
        left = self.x0 + tx * side
        return left, top - side, left + side, top

    def to_dict(self) -> dict[str, float]:
        return {"x0": self.x0, "y0": self.y0, "size": self.size}


def _spread(v: np.ndarray) -> np.ndarray:
    """The 16 low bits of ``v`` (uint32) moved to the even bit positions."""
    v = v & 0x0000FFFF
    v = (v | (v << 8)) & 0x00FF00FF
    v = (v | (v << 4)) & 0x0F0F0F0F
    v = (v | (v << 2)) & 0x33333333
    return (v | (v << 1)) & 0x55555555


def morton(qx: np.ndarray, qy: np.ndarray) -> np.ndarray:
    """Z-order codes (n,) uint32 of quantised coordinates (n,) in [0, CELLS)."""
    return _spread(np.asarray(qx, np.uint32)) | (_spread(np.asarray(qy, np.uint32)) << np.uint32(1))


class SpatialIndex:
    """The points of a layout in Morton order: ``codes`` (n,) uint32 ascending, ``order`` (n,) int64 (sorted
    position -> row), ``xy`` (n, 2) float32 in sorted order."""

    def __init__(self, world: World, *, codes: np.ndarray, order: np.ndarray, xy: np.ndarray) -> None:
        self.world, self.codes, self.order, self.xy = world, codes, order, xy

    @classmethod
    def build(cls, xy: np.ndarray, world: World) -> SpatialIndex:
        xy = np.asarray(xy, np.float32)  # (n, 2)
        qx, qy = cls._quantise(world, xy[:, 0], xy[:, 1])
        codes = morton(qx, qy)
        order = np.argsort(codes, kind="stable")
        return cls(world, codes=codes[order], order=order.astype(np.int64), xy=np.ascontiguousarray(xy[order]))

    @property
    def n(self) -> int:
        return len(self.codes)

    @staticmethod
    def _quantise(world: World, x, y) -> tuple[np.ndarray, np.ndarray]:
        scale = CELLS / world.size
        qx = np.clip(np.floor((np.asarray(x, np.float64) - world.x0) * scale), 0, CELLS - 1)
        qy = np.clip(np.floor((np.asarray(y, np.float64) - world.y0) * scale), 0, CELLS - 1)
        return qx.astype(np.uint32), qy.astype(np.uint32)

    def _slices(self, x0: float, y0: float, x1: float, y1: float) -> list[tuple[int, int]]:
        """Sorted-position ranges [a, b) of the cells (at most 2 x 2) of one level that cover the box."""
        span = max(x1 - x0, y1 - y0, 1e-30) / self.world.size  # box size as a fraction of the world
        z = int(np.clip(np.floor(-np.log2(span)), 0, BITS))  # cells of level z are at least as large
        qx, qy = self._quantise(self.world, [x0, x1], [y0, y1])
        cx0, cx1 = (int(q) >> (BITS - z) for q in qx)
        cy0, cy1 = (int(q) >> (BITS - z) for q in qy)
        shift = 2 * (BITS - z)
        out = []
        for cy in range(cy0, cy1 + 1):
            for cx in range(cx0, cx1 + 1):
                prefix = int(morton(np.array([cx]), np.array([cy]))[0])
                lo, hi = prefix << shift, (prefix + 1) << shift
                a = int(np.searchsorted(self.codes, np.uint32(lo), "left"))
                b = self.n if hi >= 1 << 32 else int(np.searchsorted(self.codes, np.uint32(hi), "left"))
                if b > a:
                    out.append((a, b))
        return sorted(out)  # disjoint cells: ascending ranges

    def positions_in_box(self, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
        """Sorted positions (m,) int64 of the points inside the closed box, ascending."""
        parts = []
        for a, b in self._slices(x0, y0, x1, y1):
            p = self.xy[a:b]
            inside = (p[:, 0] >= x0) & (p[:, 0] <= x1) & (p[:, 1] >= y0) & (p[:, 1] <= y1)
            parts.append(a + np.flatnonzero(inside))
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def rows_in_box(self, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
        """Rows (m,) int64 of the points inside the closed box (x0, y0, x1, y1), ascending."""
        x0, x1 = min(x0, x1), max(x0, x1)
        y0, y1 = min(y0, y1), max(y0, y1)
        return np.sort(self.order[self.positions_in_box(x0, y0, x1, y1)])

    def nearest(self, x: float, y: float, radius: float) -> int:
        """The row nearest (x, y) within ``radius`` (ties: the lowest row), or -1 when none is that close."""
        pos = self.positions_in_box(x - radius, y - radius, x + radius, y + radius)
        if len(pos) == 0:
            return -1
        d2 = ((self.xy[pos].astype(np.float64) - [x, y]) ** 2).sum(axis=1)  # (m,)
        rows = self.order[pos]
        best = np.lexsort((rows, d2))[0]
        return int(rows[best]) if d2[best] <= radius * radius else -1
