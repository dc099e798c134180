"""How well the deepest zoom level of an atlas layout resolves its points (issue 54.6), without a browser.

Usage (from the repo root)::

    .venv/bin/python bench/atlas_deep_zoom.py DIR                 # an atlas folder: its raw space's layout
    .venv/bin/python bench/atlas_deep_zoom.py DIR --xy other.npy  # another layout of the same rows (before/after)

The view is the Atlas page's map as ``bench/atlas.py`` counts it in chromium (942 x 640 pixels less its border,
toolbar and status line: 873 x 604) at the deepest level the tiles serve (``tiles.TileGrid``: ``max_level``).
``VIEWS`` seeded rows are view centres; the most crowded of those views (the hardest to keep sharp, as the browser
bench picks it) is rendered by the server's own tile renderer (``tiles.render_tile``, one dark colour, over white)
and its ink's connected blobs of 4 pixels or more are counted against the points in the view: ``sharp`` = blobs /
points (1.0: every point its own disc), the browser bench's ``deep_zoom_sharp``. Every view is also counted
geometrically (discs of the deepest level's radius closer than a pixel apart are one blob): ``views_sharp_mean``
and ``views_resolved`` (the share of views with blobs / points >= 0.9). ``trustworthiness``: sklearn's (15
neighbours, cosine) of the layout on 2,000 seeded rows against the atlas's vectors, as bench/atlas_ray.py reports it.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

VIEW_PX = (873, 604)  # the counted part of the browser bench's map (bench/atlas.py: 942 x 640 less its margins)
VIEWS = 300
INK = 235  # bench/atlas.py's threshold: a pixel whose darkest channel is below this is ink on the white map
DARK = np.array([[60, 60, 60]], np.uint8)


def _render_view(index, grid, z: int, box_px: tuple[int, int, int, int]) -> np.ndarray:
    """The ink (h, w) bool of the pixel box (x0, y0, x1, y1) of level ``z`` (rows from the top), tiles composed."""
    from isoscope.atlas.tiles import TILE, render_tile

    x0, y0, x1, y1 = box_px
    codes = np.zeros(index.n, np.uint8)  # every point the one dark colour
    canvas = np.full((y1 - y0, x1 - x0), 255.0)
    for ty in range(y0 // TILE, (y1 - 1) // TILE + 1):
        for tx in range(x0 // TILE, (x1 - 1) // TILE + 1):
            rgba = render_tile(index, codes, grid, z, tx, ty, lut=DARK).astype(np.float64)
            a = rgba[..., 3] / 255
            grey = 255 * (1 - a) + rgba[..., :3].min(axis=2) * a  # over white, the darkest channel
            ax0, ay0 = tx * TILE, ty * TILE
            sx0, sy0 = max(x0, ax0), max(y0, ay0)
            sx1, sy1 = min(x1, ax0 + TILE), min(y1, ay0 + TILE)
            canvas[sy0 - y0 : sy1 - y0, sx0 - x0 : sx1 - x0] = grey[sy0 - ay0 : sy1 - ay0, sx0 - ax0 : sx1 - ax0]
    return canvas < INK


def _geometric_blobs(pts_px: np.ndarray, radius: float) -> int:
    """Connected discs (radius ``radius`` px, antialiased: touching within a pixel) among points (m, 2) in px."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import cKDTree

    m = len(pts_px)
    if m < 2:
        return m
    pairs = cKDTree(pts_px).query_pairs(2 * max(radius, 0.5) + 1.0, output_type="ndarray")
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(m, m))
    return int(connected_components(graph, directed=False)[0])


def deep_zoom(xy: np.ndarray, *, views: int = VIEWS, seed: int = 0) -> dict:
    """The deepest level's resolution of layout ``xy`` (n, 2) (module docstring)."""
    from scipy import ndimage

    from isoscope.atlas.density import layout_bounds
    from isoscope.atlas.spatial import SpatialIndex, World
    from isoscope.atlas.tiles import TILE, TileGrid

    xy = np.asarray(xy, np.float32)
    index = SpatialIndex.build(xy, World.around(layout_bounds(xy)))
    grid = TileGrid.build(index)
    z = grid.max_level
    pix, radius = grid.pixel(z), grid.point_radius(z)
    w, h = VIEW_PX
    half = np.array([w / 2 * pix, h / 2 * pix])
    centres = xy[np.random.default_rng(seed).choice(len(xy), min(views, len(xy)), replace=False)]
    counts, ratios = [], []
    for c in centres:
        rows = index.rows_in_box(*(c - half), *(c + half))
        blobs = _geometric_blobs((xy[rows] - (c - half)) / pix, radius)
        counts.append(len(rows))
        ratios.append(blobs / len(rows))
    worst = centres[int(np.argmax(counts))]
    # the most crowded view, rendered: its box in the level's pixels (rows from the top of the world)
    world = index.world
    px0 = math.floor((worst[0] - world.x0) / pix - w / 2)
    py0 = math.floor((world.y0 + world.size - worst[1]) / pix - h / 2)
    ink = _render_view(index, grid, z, (px0, py0, px0 + w, py0 + h))
    labels, _found = ndimage.label(ink)
    sizes = np.bincount(labels.ravel())[1:]
    blobs = int((sizes >= 4).sum())
    x0w, y1w = world.x0 + px0 * pix, world.y0 + world.size - py0 * pix
    points = len(index.rows_in_box(x0w, y1w - h * pix, x0w + w * pix, y1w))
    ratios = np.array(ratios)
    return {
        "n": len(xy),
        "level": z,
        "zoom": 2 ** (z - 2),  # the whole map fits about 4 tiles across
        "radius_px": round(radius, 2),
        "view_px": list(VIEW_PX),
        "tile": TILE,
        "crowded_points": points,
        "crowded_blobs": blobs,
        "sharp": round(blobs / points, 3) if points else None,
        "views": len(centres),
        "views_sharp_mean": round(float(ratios.mean()), 4),
        "views_resolved": round(float((ratios >= 0.9).mean()), 4),
        "crowded_sharp_geometric": round(float(ratios[int(np.argmax(counts))]), 3),
    }


def trust(vectors: np.ndarray, xy: np.ndarray, *, rows: int = 2_000, seed: int = 5) -> float:
    """sklearn's trustworthiness (15 neighbours, cosine) of ``xy`` on seeded ``rows`` (bench/atlas_ray.py's)."""
    from sklearn.manifold import trustworthiness

    from isoscope.sampling import sample_indices

    pick = sample_indices(len(xy), rows, seed)
    return float(trustworthiness(np.asarray(vectors[pick]), np.asarray(xy[pick]), n_neighbors=15, metric="cosine"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("atlas", type=Path)
    p.add_argument("--space", default="raw")
    p.add_argument("--xy", type=Path, default=None, help="another layout (n, 2) .npy of the same rows to measure")
    p.add_argument("--no-trust", action="store_true")
    args = p.parse_args()
    xy = np.load(args.xy or args.atlas / args.space / "xy.npy", mmap_mode="r", allow_pickle=False)
    out = {"layout": str(args.xy or args.atlas / args.space / "xy.npy"), **deep_zoom(xy)}
    if not args.no_trust:
        vectors_path = args.atlas / ("vectors.npy" if args.space == "raw" else f"{args.space}/vectors.npy")
        out["trustworthiness"] = trust(np.load(vectors_path, mmap_mode="r", allow_pickle=False), xy)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
