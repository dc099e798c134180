"""A spatial index of a 2-D layout: the points sorted along a Z-order (Morton) curve over a square world, so
every quadtree cell, and so every map tile at every zoom level, is one contiguous slice of the sorted points.

world = World.around(bounds)                    # the square the tiles divide: level z has 2^z x 2^z tiles
index = SpatialIndex.build(xy, world)           # O(n log n) once; 16 bytes a point
rows = index.rows_in_box(x0, y0, x1, y1)        # rows (m,) inside a box (box selection, a tile plus margin)
row = index.nearest(x, y, radius)               # the row nearest (x, y) within ``radius``, or -1 (hover, click)
write_index(folder / "raw", xy, world)          # the same index on disk (a build stage): INDEX_FILES
index = SpatialIndex(world, codes=..., order=..., xy=..., rank=...)   # memory-mapped by isoscope.atlas.folder

Coordinates are quantised to ``BITS`` bits per axis (65,536 cells a side); a Morton code interleaves the two
quantised coordinates, so the cells of level ``z`` are the codes sharing their top ``2 z`` bits. A box query
takes the level whose cells are at least as large as the box (at most 2 x 2 of them cover it), reads those
cells' slices with ``searchsorted`` and keeps the points inside the box: O(log n + points in those cells).
Tiles count rows from the top (largest y), like web maps; the index itself counts y upwards.

On disk (``write_index``, the build's ``index`` stage) the index is four .npy files per space, read back
memory-mapped (``isoscope.atlas.folder``): a tile, a box or a pick then reads only the slices of the memory
maps its cells cover, so a server holds none of the n points. ``morton_codes.npy`` (n,) uint32 ascending,
``morton_order.npy`` (n,) sorted position -> row, ``morton_rank.npy`` (n,) row -> sorted position (the
inverse permutation: lit-up rows found without a pass over n), ``morton_xy.npy`` (n, 2) float32 in sorted
order; positions int32 below 2^31 points: 20 bytes a point in all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

BITS = 16
CELLS = 1 << BITS
INDEX_FILES = ("morton_codes.npy", "morton_order.npy", "morton_rank.npy", "morton_xy.npy")
CHUNK = 1 << 20  # points quantised per step when the index is written


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


def position_dtype(n: int) -> type:
    """The integer type of sorted positions and rows of ``n`` points on disk."""
    return np.int32 if n < 2**31 else np.int64


def block_codes(block: np.ndarray, world: World) -> np.ndarray:
    """The Morton codes (m,) uint32 of a block of points (m, 2) (any float type, memory-mapped rows too), quantised
    as float32 over ``world``: the one computation of a point's code (the index here, the ray engine's sample
    sort)."""
    block = np.asarray(block, np.float32)  # (m, 2)
    return morton(*SpatialIndex._quantise(world, block[:, 0], block[:, 1]))


def sort_points(xy: np.ndarray, world: World) -> tuple[np.ndarray, np.ndarray]:
    """(codes (n,) uint32 in Morton order, order (n,) int64: sorted position -> row) of a layout ``xy`` (n, 2),
    quantised ``CHUNK`` points at a time (``xy`` may be memory-mapped)."""
    n = len(xy)
    codes = np.empty(n, np.uint32)  # (n,)
    for s in range(0, n, CHUNK):
        block = xy[s : s + CHUNK]  # (m, 2)
        codes[s : s + len(block)] = block_codes(block, world)
    order = np.argsort(codes, kind="stable")  # (n,) int64
    return codes[order], order


def write_index(folder: Path, xy: np.ndarray, world: World) -> list[Path]:
    """The index of layout ``xy`` (n, 2) over ``world`` as ``INDEX_FILES`` in ``folder``, each written
    atomically; returns their paths. Peak memory: about 24 bytes a point (codes, the argsort, one output)."""
    from isoscope.cache import atomic_save_npy

    codes, order = sort_points(xy, world)
    kind = position_dtype(len(order))
    paths = [folder / name for name in INDEX_FILES]
    atomic_save_npy(paths[0], codes)
    del codes
    atomic_save_npy(paths[3], np.asarray(xy, np.float32)[order])  # (n, 2) in sorted order
    rank = np.empty(len(order), kind)  # (n,)
    rank[order] = np.arange(len(order), dtype=kind)
    atomic_save_npy(paths[2], rank)
    del rank
    atomic_save_npy(paths[1], order.astype(kind))
    return paths


class SpatialIndex:
    """The points of a layout in Morton order: ``codes`` (n,) uint32 ascending, ``order`` (n,) integers (sorted
    position -> row), ``xy`` (n, 2) float32 in sorted order, ``rank`` (n,) (row -> sorted position; None: not
    kept). In memory (``build``) or memory-mapped from ``INDEX_FILES`` (``isoscope.atlas.folder``)."""

    def __init__(
        self, world: World, *, codes: np.ndarray, order: np.ndarray, xy: np.ndarray, rank: np.ndarray | None = None
    ) -> None:
        self.world, self.codes, self.order, self.xy, self.rank = world, codes, order, xy, rank

    @classmethod
    def build(cls, xy: np.ndarray, world: World) -> SpatialIndex:
        """The index in memory (16 bytes a point besides ``xy``)."""
        xy = np.asarray(xy, np.float32)  # (n, 2)
        codes, order = sort_points(xy, world)
        return cls(world, codes=codes, order=order.astype(np.int64), xy=np.ascontiguousarray(xy[order]))

    def positions_of(self, rows: np.ndarray) -> np.ndarray:
        """Sorted positions (m,) int64, ascending, of ``rows`` (m,) (the inverse permutation, computed in
        memory once when the index has no ``rank``)."""
        rows = np.asarray(rows, np.int64)
        if self.rank is None:
            rank = np.empty(self.n, np.int64)
            rank[np.asarray(self.order)] = np.arange(self.n)
            self.rank = rank
        return np.sort(np.asarray(self.rank[rows], np.int64))

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

    def cells(self, x0: float, y0: float, x1: float, y1: float) -> list[tuple[int, int]]:
        """Sorted-position ranges [a, b), ascending, of the cells that cover the box (every point in the box is in
        one of them; the cells may hold points outside it)."""
        return self._slices(x0, y0, x1, y1)

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
        return np.sort(np.asarray(self.order[self.positions_in_box(x0, y0, x1, y1)], np.int64))

    def nearest(self, x: float, y: float, radius: float) -> int:
        """The row nearest (x, y) within ``radius`` (ties: the lowest row), or -1 when none is that close."""
        pos = self.positions_in_box(x - radius, y - radius, x + radius, y + radius)
        if len(pos) == 0:
            return -1
        d2 = ((self.xy[pos].astype(np.float64) - [x, y]) ** 2).sum(axis=1)  # (m,)
        rows = np.asarray(self.order[pos], np.int64)
        best = np.lexsort((rows, d2))[0]
        return int(rows[best]) if d2[best] <= radius * radius else -1
