"""Map tiles of a layout: every point drawn at every zoom level, rendered on demand as 256 x 256 RGBA images.

grid = TileGrid.build(index)                                          # levels 0 .. grid.max_level
rgba = render_tile(index, colors[index.order], grid, z, tx, ty, field)   # (256, 256, 4) uint8
rgba = render_tile(index, codes[index.order], grid, z, tx, ty, lut=lut)  # colours as uint8 codes of a palette
rgba = highlight_tile(index, index.positions_of(rows), grid, z, tx, ty)  # the lit-up points alone
row = pick_row(index, grid, x, y, radius=r, z=z, lit=lit)             # the point a pointer at (x, y) names
field = ContourField(grid_counts, bounds, levels)                     # density contours, redrawn per tile

Level ``z`` divides the world square (``isoscope.atlas.spatial.World``) into 2^z x 2^z tiles of ``TILE`` pixels,
row 0 at the top. A pixel shows the points under it, aggregated as ``isoscope.atlas.raster`` does for the whole
map (opacity from the log of the count, the mean colour of the points), so the top levels read as density.
From the level where neighbouring points stop sharing pixels, each point is an antialiased disc of
``grid.point_radius(z)`` pixels (up to ``MAX_RADIUS``), so deep levels show single points; the discs of
points just outside a tile are drawn too, so tiles join without seams. Contours are the smoothed density grid
interpolated (cubic) at every pixel of the tile and drawn where a level is crossed: one pixel wide and smooth
at every zoom, never an enlarged staircase.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from isoscope.atlas.spatial import CHUNK, SpatialIndex, World

TILE = 256
MAX_RADIUS = 3.5  # pixels: a single point at depth is a disc of 7 pixels
SPACING_PX = 24.0  # the deepest level shows neighbouring points at least this far apart (median)
MIN_LEVELS = 10  # levels served at least (1,024 x the whole map on one tile)
MAX_LEVEL = 16
SPACING_SAMPLE = 50_000  # points whose nearest neighbours set the typical spacing
LEVEL_SAMPLE = 200_000  # points whose densities set the contour levels (a seeded sample above)
FULL_COUNT = 40  # points in a pixel for full opacity
TOP_MIN_ALPHA = 110  # one point in a pixel of an aggregated level
DISC_MIN_ALPHA = 215  # one point drawn as a disc
HIGHLIGHT = (255, 200, 0)
LIT_MARGIN = 1.5  # pixels: a lit-up point's yellow disc reaches this much past its point's disc (at least 1)
OUTLINE = (20, 20, 30)
CONTOUR_RGBA = (40, 40, 60, 170)


@dataclass(frozen=True)
class TileGrid:
    """The tile pyramid of one layout: its world square, the typical distance between neighbouring points
    (``spacing``, world units: the median distance from a point to its nearest other point, on a sample
    chosen by position: ``spacing_sample``) and the deepest level served."""

    world: World
    spacing: float
    max_level: int

    @classmethod
    def build(cls, index: SpatialIndex) -> TileGrid:
        spacing = nearest_spacing(index.xy, index.world.size)
        return cls(index.world, spacing, deepest_level(spacing, index.world.size))

    def pixel(self, z: int) -> float:
        """World units per pixel at level ``z``."""
        return self.world.size / (TILE * (1 << z))

    def point_radius(self, z: int) -> float:
        """Disc radius in pixels at level ``z``: 0 (one pixel) while points overlap, up to ``MAX_RADIUS``."""
        r = self.spacing / self.pixel(z) / 4  # a quarter of the typical spacing
        return 0.0 if r < 1.0 else min(MAX_RADIUS, r)

    def to_dict(self) -> dict:
        return {**self.world.to_dict(), "tile": TILE, "maxLevel": self.max_level}


def deepest_level(spacing: float, size: float) -> int:
    """The deepest level served for points ``spacing`` apart (typically) in a world of side ``size``: two levels past
    the one where that spacing spans ``SPACING_PX`` pixels, within ``MIN_LEVELS`` .. ``MAX_LEVEL``."""
    px0 = spacing * TILE / size  # spacing in pixels at level 0
    deep = math.ceil(math.log2(SPACING_PX / px0)) if px0 < SPACING_PX else 0
    return int(min(MAX_LEVEL, max(MIN_LEVELS, deep + 2)))


def nearest_spacing(xy: np.ndarray, size: float, *, sample: int = SPACING_SAMPLE) -> float:
    """Median distance from a point of ``xy`` (n, 2) to its nearest point at another position. Above
    ``sample`` points it is measured on ``sample`` of them (``spacing_sample``: chosen by their positions, so the
    same whatever the rows' order) and scaled by sqrt(sample / n) (the nearest-neighbour distance of a point process
    goes as 1 / sqrt(density)); ``size`` / 65,536 when no two positions differ."""
    from scipy.spatial import cKDTree

    n = len(xy)
    if n < 2:
        return size
    floor = size / (1 << 16)
    part = spacing_sample(xy, sample)  # (s, 2)
    d, _ = cKDTree(part).query(part, k=min(8, len(part)))  # (s, k): self (0) first
    d = np.where(d > floor, d, np.inf).min(axis=1)  # nearest other position (duplicates share one)
    d = d[np.isfinite(d)]
    if len(d) == 0:
        return floor
    return max(floor, float(np.median(d)) * math.sqrt(len(part) / n))


def _position_hash(block: np.ndarray) -> np.ndarray:
    """A 64-bit mix (splitmix64's finaliser) of each float32 position of ``block`` (m, 2): (m,) uint64."""
    bits = np.ascontiguousarray(block, np.float32).view(np.uint32).astype(np.uint64)  # (m, 2)
    h = (bits[:, 0] << np.uint64(32)) | bits[:, 1]
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def spacing_sample(xy: np.ndarray, sample: int, *, block_rows: int = 1 << 20) -> np.ndarray:
    """``sample`` positions of ``xy`` (n, 2) as float64 (s, 2): all of them up to ``sample``, else those of the
    smallest hashes of their positions (read ``block_rows`` at a time). A set of points, not of rows: the layout in
    row order (the spread, ``isoscope.atlas.spread``) and in the index's Morton order (``TileGrid.build``) give the
    same sample, so the same deepest level (issue 54.6). Ties at the cut are one position (a hash's collisions
    aside), so which of its rows is taken does not matter."""
    n = len(xy)
    if n <= sample:
        return np.asarray(xy, np.float64)
    keys = np.empty(0, np.uint64)
    kept = np.empty((0, 2), np.float32)
    for s in range(0, n, block_rows):
        block = np.asarray(xy[s : s + block_rows], np.float32)  # (m, 2)
        keys = np.concatenate([keys, _position_hash(block)])
        kept = np.concatenate([kept, block])
        if len(keys) > sample:
            best = np.argpartition(keys, sample - 1)[:sample]
            keys, kept = keys[best], kept[best]
    return kept.astype(np.float64)


def disc_kernel(radius: float) -> np.ndarray:
    """Antialiased disc weights (2R+1, 2R+1) in [0, 1], R = ceil(radius); [[1]] for radius < 1."""
    if radius < 1.0:
        return np.ones((1, 1))
    r = math.ceil(radius)
    d = np.hypot(*np.mgrid[-r : r + 1, -r : r + 1])
    return np.clip(radius + 0.5 - d, 0.0, 1.0)


def _splat(flat: np.ndarray, weights: list[np.ndarray | None], side: int, kernel: np.ndarray) -> list[np.ndarray]:
    """Sums (side, side) of each of ``weights`` (None = a count) over the pixels ``flat`` (m,) of a side x side
    canvas, each point spread over ``kernel`` (2R+1, 2R+1) around its pixel: the occupied pixels are summed
    first, then each is stamped with the kernel (fast when few pixels are occupied, as at depth)."""
    sums = [np.bincount(flat, weights=w, minlength=side * side) for w in weights]  # each (side * side,)
    r = kernel.shape[0] // 2
    if r == 0:
        return [v.reshape(side, side) for v in sums]
    pixels = np.flatnonzero(sums[0] if weights[0] is None else np.bincount(flat, minlength=side * side))  # (p,)
    per_pixel = [v[pixels] for v in sums]
    dy, dx = np.nonzero(kernel > 0)
    k = kernel[dy, dx]  # (K,)
    row, col = pixels // side, pixels % side
    rr = row[:, None] + (dy - r)[None, :]  # (p, K)
    cc = col[:, None] + (dx - r)[None, :]
    ok = (rr >= 0) & (rr < side) & (cc >= 0) & (cc < side)
    target = (rr * side + cc)[ok]
    return [
        np.bincount(target, weights=(v[:, None] * k[None, :])[ok], minlength=side * side).reshape(side, side)
        for v in per_pixel
    ]


def _pixels(index: SpatialIndex, grid: TileGrid, z: int, tx: int, ty: int, *, pad: int):
    """Sorted positions (m,) of the points within ``pad`` pixels of tile (z, tx, ty), and their pixel column
    and row (m,) on the padded canvas (TILE + 2 pad a side)."""
    x0, y0, x1, y1 = grid.world.tile_box(z, tx, ty)
    pix = grid.pixel(z)
    margin = (pad + 1) * pix
    side = TILE + 2 * pad
    parts = []
    # each covering cell is one contiguous slice of the (memory-mapped) sorted layout: read as a slice, never
    # gathered; the canvas lies within the queried box, so its test is the only one needed
    for a, b in index.cells(x0 - margin, y0 - margin, x1 + margin, y1 + margin):
        col, row = _canvas_pixels(np.asarray(index.xy[a:b]), x0, y1, z=z, pix=pix)
        col, row = col + pad, row + pad
        keep = (col >= 0) & (col < side) & (row >= 0) & (row < side)
        parts.append((a + np.flatnonzero(keep), col[keep], row[keep]))
    if not parts:
        return (np.zeros(0, np.int64),) * 3
    return tuple(np.concatenate(x) for x in zip(*parts, strict=True))


def _canvas_pixels(xy: np.ndarray, x0: float, y1: float, *, z: int, pix: float) -> tuple[np.ndarray, np.ndarray]:
    """Pixel column and row (m,) int64 of the points ``xy`` (m, 2) on the tile of level ``z`` whose top-left
    corner is (x0, y1) (negative or past ``TILE`` outside it): the pixels tiles draw them at."""
    exact = np.float64 if z > 10 else np.float32  # float32 resolves 1/64 pixel down to level 10
    xy = xy.astype(exact, copy=False)
    col = np.floor((xy[:, 0] - exact(x0)) / exact(pix)).astype(np.int64)
    row = np.floor((exact(y1) - xy[:, 1]) / exact(pix)).astype(np.int64)
    return col, row


def _take(values: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``values[pos]`` for ascending positions: a slice when they are contiguous (the top tiles: every point)."""
    if len(pos) and pos[-1] - pos[0] + 1 == len(pos):
        return np.asarray(values[pos[0] : pos[-1] + 1])
    return np.asarray(values[pos])


def render_tile(
    index: SpatialIndex,
    colors: np.ndarray,
    grid: TileGrid,
    z: int,
    tx: int,
    ty: int,
    *,
    field: ContourField | None = None,
    lut: np.ndarray | None = None,
) -> np.ndarray:
    """Tile (z, tx, ty) as RGBA (TILE, TILE, 4) uint8; ``colors`` (n, 3) uint8 in the index's sorted order, or
    with ``lut`` (k, 3) uint8 the codes (n,) uint8 of its colours (read only where the tile covers: ``colors``
    may be memory-mapped)."""
    radius = grid.point_radius(z)
    kernel = disc_kernel(radius)
    pad = kernel.shape[0] // 2
    side = TILE + 2 * pad
    pos, col, row = _pixels(index, grid, z, tx, ty, pad=pad)
    flat = row * side + col  # (m,)
    picked = _take(colors, pos)  # (m, 3) or (m,)
    rgb = picked if lut is None else lut[picked]  # (m, 3) uint8
    count, *sums = _splat(flat, [None, *(rgb[:, ch].astype(np.float64) for ch in range(3))], side, kernel)
    inner = (slice(pad, pad + TILE), slice(pad, pad + TILE))
    count = count[inner]
    out = np.zeros((TILE, TILE, 4), np.uint8)
    hit = count > 1e-9
    for ch in range(3):
        out[..., ch][hit] = np.clip(np.round(sums[ch][inner][hit] / count[hit]), 0, 255)
    low = TOP_MIN_ALPHA if pad == 0 else DISC_MIN_ALPHA
    c = count[hit]
    alpha = (low + (255 - low) * np.clip(np.log1p(np.maximum(c, 1.0)) / np.log1p(FULL_COUNT), 0, 1)) * np.minimum(c, 1)
    out[..., 3][hit] = np.clip(np.round(alpha), 0, 255).astype(np.uint8)
    if field is not None:  # the lines drawn over the points ("over" on the line pixels only)
        line = field.line_mask(grid, z, tx, ty)
        a = CONTOUR_RGBA[3] / 255
        under = out[line].astype(np.float64)  # (m, 4)
        alpha = a + under[:, 3:] / 255 * (1 - a)
        rgb = (np.array(CONTOUR_RGBA[:3]) * a + under[:, :3] * under[:, 3:] / 255 * (1 - a)) / alpha
        out[line] = np.concatenate([np.round(rgb), np.round(alpha * 255)], axis=1).astype(np.uint8)
    return out


def highlight_tile(index: SpatialIndex, lit: np.ndarray, grid: TileGrid, z: int, tx: int, ty: int) -> np.ndarray:
    """The points at the sorted positions ``lit`` (m,) ascending (``SpatialIndex.positions_of(rows)``) as yellow
    discs with a dark outline on a transparent tile (TILE, TILE, 4) uint8, drawn over ``render_tile``'s tile."""
    radius = lit_radius(grid, z)
    outer = disc_kernel(radius + 1.2)
    pad = outer.shape[0] // 2
    side = TILE + 2 * pad
    pos, col, row = _pixels(index, grid, z, tx, ty, pad=pad)
    lit = np.asarray(lit, np.int64)
    at = np.minimum(np.searchsorted(lit, pos), max(len(lit) - 1, 0))  # (m,)
    lit = (lit[at] == pos) if len(lit) else np.zeros(len(pos), bool)
    flat = (row * side + col)[lit]
    inner = (slice(pad, pad + TILE), slice(pad, pad + TILE))
    ring = _splat(flat, [None], side, outer)[0][inner] > 0.5
    fill = _splat(flat, [None], side, disc_kernel(radius))[0][inner] > 0.5
    out = np.zeros((TILE, TILE, 4), np.uint8)
    out[ring] = (*OUTLINE, 235)
    out[fill] = (*HIGHLIGHT, 255)
    return out


def lit_radius(grid: TileGrid, z: int) -> float:
    """Radius in pixels of a lit-up point's yellow disc at level ``z`` (``highlight_tile``'s fill)."""
    return max(grid.point_radius(z), 1.0) + LIT_MARGIN


def pick_row(
    index: SpatialIndex, grid: TileGrid, x: float, y: float, *, radius: float, z: int, lit: np.ndarray | None = None
) -> int:
    """The row a pointer at world (x, y) names on the map drawn at level ``z`` (hover and click alike): where
    the pointer's pixel of level ``z`` is yellow, the nearest lit-up point (``lit``: sorted positions, ascending,
    as ``highlight_tile`` takes them) whose disc paints it, as its yellow is drawn over every other point; else
    the point nearest the pointer within ``radius`` (world units); -1 when none. Ties: the lowest row."""
    if lit is not None and len(lit) and (row := _lit_under(index, grid, x, y, z=z, lit=lit)) >= 0:
        return row
    return index.nearest(x, y, radius)


def _lit_under(index: SpatialIndex, grid: TileGrid, x: float, y: float, *, z: int, lit: np.ndarray) -> int:
    """The nearest lit-up point whose disc paints the pointer's pixel yellow, or -1: the pixels and disc weights
    of ``highlight_tile`` (the discs of the points near the pointer summed, filled above one half)."""
    world, pix, r = grid.world, grid.pixel(z), lit_radius(grid, z)
    if not (world.x0 <= x < world.x0 + world.size and world.y0 < y <= world.y0 + world.size):
        return -1  # no tile is drawn there
    n = 1 << z
    tx = min(int((x - world.x0) / (TILE * pix)), n - 1)  # the tile under the pointer
    ty = min(int((world.y0 + world.size - y) / (TILE * pix)), n - 1)
    x0, _, _, y1 = world.tile_box(z, tx, ty)
    reach = (math.ceil(r) + 2) * pix
    pos = index.positions_in_box(x - reach, y - reach, x + reach, y + reach)
    at = np.minimum(np.searchsorted(lit, pos), len(lit) - 1)  # (m,)
    pos = pos[lit[at] == pos]
    if len(pos) == 0:
        return -1
    col, row = _canvas_pixels(np.asarray(index.xy[pos]), x0, y1, z=z, pix=pix)  # (m,) each
    pcol, prow = _canvas_pixels(np.array([[x, y]]), x0, y1, z=z, pix=pix)
    weight = np.clip(r + 0.5 - np.hypot(col - pcol[0], row - prow[0]), 0.0, 1.0)  # disc_kernel(r) at the pointer
    if weight.sum() <= 0.5:
        return -1
    pos = pos[weight > 0]
    d2 = ((np.asarray(index.xy[pos], np.float64) - [x, y]) ** 2).sum(axis=1)  # (k,)
    rows = np.asarray(index.order[pos], np.int64)
    return int(rows[np.lexsort((rows, d2))[0]])


def _cubic_weights(u: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """Cubic B-spline weights (len(u), w) for sample positions ``u`` (grid coordinates) over the coefficient
    indices [lo, lo + w) they touch (clipped to [0, size))."""
    i = np.floor(u).astype(np.int64)
    t = u - i
    basis = np.stack([(1 - t) ** 3, 3 * t**3 - 6 * t**2 + 4, -3 * t**3 + 3 * t**2 + 3 * t + 1, t**3], axis=1) / 6
    lo = int(np.clip(i.min() - 1, 0, size - 1))
    hi = int(np.clip(i.max() + 3, lo + 1, size))
    w = np.zeros((len(u), hi - lo))
    for j in range(4):
        cols = i - 1 + j - lo
        ok = (cols >= 0) & (cols < hi - lo)
        w[np.flatnonzero(ok), cols[ok]] += basis[ok, j]
    return w, lo


class ContourField:
    """Density contours of a layout: the smoothed counts ``grid`` (G, G) (row = y bin) over ``bounds``, scaled
    to a maximum of 1, and the ``levels`` (relative to the densest cell) where lines are drawn. The density
    between cell centres is a cubic B-spline of the grid (coefficients computed once), evaluated per tile as
    two small matrix products (the pixels of a tile form a grid)."""

    PAD = 4  # zero cells around the grid, so the spline fades to 0 outside it

    def __init__(self, grid: np.ndarray, bounds: tuple[float, float, float, float], levels: np.ndarray) -> None:
        from scipy.ndimage import spline_filter

        top = float(grid.max())
        self.grid = np.asarray(grid, np.float64) / (top if top > 0 else 1.0)
        self.bounds = tuple(float(b) for b in bounds)
        self.levels = np.asarray(levels, np.float64)
        padded = np.pad(self.grid, self.PAD)
        self.coefficients = spline_filter(padded, order=3, mode="mirror")  # (G + 2 PAD, G + 2 PAD)

    def values(self, grid: TileGrid, z: int, tx: int, ty: int, *, size: int = TILE + 1) -> np.ndarray:
        """The density at the pixel centres of a tile, (size, size), row 0 at the top."""
        x0, _, _, y1 = grid.world.tile_box(z, tx, ty)
        pix = grid.pixel(z)
        centres = (np.arange(size) + 0.5) * pix
        bx0, by0, bx1, by1 = self.bounds
        g = self.grid.shape[0]
        gx = (x0 + centres - bx0) / (bx1 - bx0) * g - 0.5 + self.PAD  # (size,) padded grid columns
        gy = (y1 - centres - by0) / (by1 - by0) * g - 0.5 + self.PAD  # (size,) padded grid rows, top first
        n = self.coefficients.shape[0]
        wy, r0 = _cubic_weights(gy, n)
        wx, c0 = _cubic_weights(gx, n)
        block = self.coefficients[r0 : r0 + wy.shape[1], c0 : c0 + wx.shape[1]]
        return wy @ block @ wx.T  # (size, size)

    def line_mask(self, grid: TileGrid, z: int, tx: int, ty: int) -> np.ndarray:
        """(TILE, TILE) bool: pixels where a contour level is crossed towards the right or below."""
        v = self.values(grid, z, tx, ty)  # (TILE + 1, TILE + 1): one more pixel right and below
        line = np.zeros((TILE, TILE), bool)
        for level in self.levels:
            above = v > level
            line |= above[:TILE, :TILE] != above[:TILE, 1:]
            line |= above[:TILE, :TILE] != above[1:, :TILE]
        return line

    def lines(self, grid: TileGrid, z: int, tx: int, ty: int) -> np.ndarray:
        """Contour lines of tile (z, tx, ty) as RGBA (TILE, TILE, 4) uint8 (transparent elsewhere)."""
        out = np.zeros((TILE, TILE, 4), np.uint8)
        out[self.line_mask(grid, z, tx, ty)] = CONTOUR_RGBA
        return out


def check_tile(grid: TileGrid, z: int, tx: int, ty: int) -> bool:
    """True when (z, tx, ty) is a tile of the pyramid."""
    return 0 <= z <= grid.max_level and 0 <= tx < (1 << z) and 0 <= ty < (1 << z)


@dataclass
class TileMap:
    """Everything the tiles of one space need, built once per loaded atlas: the spatial index (in memory or
    memory-mapped), the pyramid and the contour field."""

    index: SpatialIndex
    grid: TileGrid
    field: ContourField

    @classmethod
    def of(cls, xy: np.ndarray, bounds, *, density_grid: np.ndarray, point_density: np.ndarray) -> TileMap:
        """From a space's layout ``xy`` (n, 2), its ``bounds``, density grid and per-point density (the index
        built in memory)."""
        index = SpatialIndex.build(xy, World.around(bounds))
        return cls.of_index(index, bounds, density_grid=density_grid, point_density=point_density)

    @classmethod
    def of_index(cls, index: SpatialIndex, bounds, *, density_grid: np.ndarray, point_density: np.ndarray) -> TileMap:
        """From a spatial index (the folder's, memory-mapped): contour levels from the points' densities (a
        seeded sample of ``LEVEL_SAMPLE`` above that many points, so nothing of size n is read whole)."""
        from isoscope.atlas.raster import contour_levels
        from isoscope.sampling import sample_indices

        n = len(point_density)
        density = point_density if n <= LEVEL_SAMPLE else point_density[sample_indices(n, LEVEL_SAMPLE, 0)]
        levels = contour_levels(np.asarray(density))
        return cls(index, TileGrid.build(index), ContourField(density_grid, bounds, levels))

    def sorted(self, values: np.ndarray) -> np.ndarray:
        """Per-row values (n, ...) in the index's order (what ``render_tile`` takes), gathered ``CHUNK`` rows at
        a time (the order may be memory-mapped)."""
        values = np.asarray(values)
        out = np.empty_like(values)
        for s in range(0, len(out), CHUNK):
            out[s : s + CHUNK] = values[np.asarray(self.index.order[s : s + CHUNK])]
        return out

    def tile(
        self, colors_sorted: np.ndarray, z: int, tx: int, ty: int, *, contours: bool, lut: np.ndarray | None = None
    ) -> np.ndarray:
        field = self.field if contours else None
        return render_tile(self.index, colors_sorted, self.grid, z, tx, ty, field=field, lut=lut)

    def highlight(self, rows: np.ndarray, z: int, tx: int, ty: int) -> np.ndarray:
        """The rows (m,) lit up on tile (z, tx, ty)."""
        return highlight_tile(self.index, self.index.positions_of(rows), self.grid, z, tx, ty)
