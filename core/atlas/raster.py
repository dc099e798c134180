"""Every point of a layout drawn into one RGBA image (no sampling), and density contours as an overlay.

rgba = rasterize(xy, bounds, colors, width=2048, height=2048)   # (H, W, 4) uint8, row 0 = top (max y)
png = to_png(rgba)                                               # bytes

A pixel's colour is the mean colour of the points that fall in it; its opacity grows with the log of
their count, from ``MIN_ALPHA`` for a single point to opaque at ``FULL_COUNT`` points, so lone points
stay visible and dense regions read as dense. This is what a GPU would draw for a million overlapping
points, computed with ``np.bincount`` in well under a second; the browser then shows one textured quad,
which pans and zooms at full frame rate even in software WebGL (where a million instanced point quads
take tens of seconds per frame: see bench/atlas.py and bench/RESULTS.md).
"""

from __future__ import annotations

import io

import numpy as np

from isoscope.atlas.density import cells

MIN_ALPHA = 110
FULL_COUNT = 40
CONTOUR_RGBA = (40, 40, 60, 150)


def rasterize(
    xy: np.ndarray,
    bounds: tuple[float, float, float, float],
    colors: np.ndarray,
    width: int = 2048,
    height: int = 2048,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """RGBA image (height, width, 4) uint8 of every point; ``colors`` (n, 3) uint8, one per point."""
    if len(xy) != len(colors):
        raise ValueError(f"got {len(xy)} points but {len(colors)} colours")
    ix, _ = cells(xy, bounds, width)
    _, iy = cells(xy, bounds, height)
    pix = (height - 1 - iy) * width + ix  # (n,) row 0 at the top
    w = np.ones(len(xy)) if weights is None else np.asarray(weights, np.float64)
    count = np.bincount(pix, weights=w, minlength=width * height)  # (H*W,)
    out = np.zeros((width * height, 4), np.uint8)
    hit = count > 0
    for ch in range(3):
        s = np.bincount(pix, weights=w * colors[:, ch], minlength=width * height)
        out[hit, ch] = np.clip(np.round(s[hit] / count[hit]), 0, 255).astype(np.uint8)
    scale = np.log1p(count[hit]) / np.log1p(FULL_COUNT)
    out[hit, 3] = np.clip(MIN_ALPHA + (255 - MIN_ALPHA) * scale, MIN_ALPHA, 255).astype(np.uint8)
    return out.reshape(height, width, 4)


def contour_overlay(
    grid: np.ndarray, levels: np.ndarray, width: int = 1024, height: int = 1024, rgba: tuple = CONTOUR_RGBA
) -> np.ndarray:
    """Density contour lines (height, width, 4) uint8 of a density ``grid`` (G, G) (row = y bin) at ``levels``.

    The grid is interpolated to the image size; a pixel is on a contour when a level lies between its
    value and its right or lower neighbour's. Row 0 of the image is the top (largest y).
    """
    from scipy.ndimage import zoom

    g = zoom(grid, (height / grid.shape[0], width / grid.shape[1]), order=1)[::-1]  # (H, W), top row first
    line = np.zeros(g.shape, bool)
    for level in np.asarray(levels, np.float64):
        above = g > level
        line[:, :-1] |= above[:, :-1] != above[:, 1:]
        line[:-1, :] |= above[:-1, :] != above[1:, :]
    out = np.zeros((height, width, 4), np.uint8)
    out[line] = rgba
    return out


def contour_levels(point_density: np.ndarray, quantiles: tuple[float, ...] = (0.25, 0.5, 0.75, 0.9)) -> np.ndarray:
    """Contour levels (relative to the densest cell) at quantiles of the points' densities, distinct, ascending."""
    if len(point_density) == 0:
        return np.zeros(0)
    return np.unique(np.quantile(point_density, quantiles))


def composite(under: np.ndarray, over: np.ndarray) -> np.ndarray:
    """``over`` drawn on ``under`` (both (H, W, 4) uint8, straight alpha): the "over" operator."""
    a = over[..., 3:4].astype(np.float64) / 255  # (H, W, 1)
    b = under[..., 3:4].astype(np.float64) / 255
    alpha = a + b * (1 - a)
    rgb = over[..., :3] * a + under[..., :3] * b * (1 - a)
    rgb = np.divide(rgb, alpha, out=np.zeros_like(rgb), where=alpha > 0)
    return np.concatenate([np.round(rgb), np.round(alpha * 255)], axis=2).astype(np.uint8)


def to_png(rgba: np.ndarray) -> bytes:
    """PNG bytes of an RGBA image (H, W, 4) uint8."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buf, format="PNG", compress_level=1)
    return buf.getvalue()
