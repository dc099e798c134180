"""Image helpers of the atlas map: contour levels, compositing, PNG bytes (the tiles themselves are drawn by
``isoscope.atlas.tiles``).

levels = contour_levels(point_density)   # the density quantiles where contour lines are drawn
rgba = composite(under, over)            # (H, W, 4) uint8, straight alpha
png = to_png(rgba)                       # bytes
"""

from __future__ import annotations

import io

import numpy as np


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
