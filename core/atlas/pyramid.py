"""The top of the tile pyramid, rendered at build time: the tiles a fresh server's first view of a map needs,
in the folder, so that a 10-million-point map opens without rendering them (the ``tiles`` build stage).

files = render_levels(folder, "raw", [0, 1])  # every tile of levels 0 and 1 in the default style, written atomically
codes, lut, other = cluster_codes(cluster, k)   # the default style's colours: one byte a point

Levels 0 .. ``TOP_LEVEL`` are rendered (341 tiles a space): the map's fitted view (``dashboard/static/atlas_map.js``:
level = ceil(zoom + log2(devicePixelRatio))) asks for level 2 or 3 at 1400 x 1000 and at a phone's width, 3 or 4
on a screen of two or three device pixels to one. They are drawn in the Atlas page's default style (colour by
cluster, density contours on) by the very functions that render a tile on demand
(``isoscope.atlas.tiles.TileMap.tile``, ``isoscope.atlas.raster.to_png``), so a pre-rendered tile is
byte-identical to the tile the server would draw; the server checks each against the size and SHA-256 the
folder's ledger recorded before serving it, and draws the tile itself when it is missing or damaged.

``RENDERER`` names the drawing: the stage writes ``{space}/tiles/renderer-{RENDERER}.json`` beside the tiles and the
server serves a folder's tiles only when its ledger recorded that file, so tiles drawn by an older Isoscope are
redrawn by the next build (the stage's files include the new name) and never served in the meantime. Bump it
whenever a tile's pixels change (``isoscope.atlas.tiles``, ``raster``, the palette, ``DEFAULT_STYLE``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

TOP_LEVEL = 4
TILES_DIR = "tiles"
RENDERER = 1  # the drawing's version (module doc): bump it when a tile's pixels change
DEFAULT_STYLE = ("cluster", True)  # colour by, contours: the Atlas page's default
PALETTE = np.array(
    [
        [31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189], [140, 86, 75],
        [227, 119, 194], [188, 189, 34], [23, 190, 207], [57, 59, 121], [173, 73, 74], [99, 121, 57],
    ],
    np.uint8,
)  # fmt: skip
OTHER = np.array([170, 170, 170], np.uint8)
CHUNK = 1 << 20


def palette_lut(shown: int) -> np.ndarray:
    """The palette's first ``shown`` colours, then grey (code ``shown``): (shown + 1, 3) uint8."""
    return np.vstack([PALETTE[:shown], OTHER[None, :]]).astype(np.uint8)


def cluster_codes(cluster: np.ndarray, clusters: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Colour codes (n,) uint8 of the cluster numbers ``cluster`` (n,) (memory-mapped: read ``CHUNK`` rows at a
    time) of a space with ``clusters`` clusters, numbered by size: the first ``len(PALETTE)`` get the palette,
    the rest and the unclustered (-1) grey. Returns (codes, lut (k, 3) uint8, how many points are grey)."""
    shown = min(len(PALETTE), clusters)
    codes = np.empty(len(cluster), np.uint8)
    other = 0
    for start in range(0, len(cluster), CHUNK):
        c = np.asarray(cluster[start : start + CHUNK])
        other += int(((c >= shown) | (c < 0)).sum())
        codes[start : start + len(c)] = np.where((c >= 0) & (c < shown), c, shown)
    return codes, palette_lut(shown), other


def tile_rel(space: str, z: int, x: int, y: int) -> str:
    """The folder-relative name of a pre-rendered tile (as the ledger records it)."""
    return f"{space}/{TILES_DIR}/{z}/{x}-{y}.png"


def level_files(folder: Path, space: str, z: int) -> list[Path]:
    """Every tile file of level ``z`` of ``space``: 4^z of them."""
    side = 1 << z
    return [folder / tile_rel(space, z, x, y) for y in range(side) for x in range(side)]


def top_files(folder: Path, space: str, top: int = TOP_LEVEL) -> list[Path]:
    """The tile files of levels 0 .. ``top`` of ``space``."""
    return [p for z in range(top + 1) for p in level_files(folder, space, z)]


def renderer_rel(space: str) -> str:
    """The folder-relative name of the file that says which drawing made ``space``'s tiles."""
    return f"{space}/{TILES_DIR}/renderer-{RENDERER}.json"


def stage_files(folder: Path, space: str) -> list[Path]:
    """What the ``tiles`` stage writes for ``space``: the top levels' tiles and the renderer's file."""
    return [*top_files(folder, space), folder / renderer_rel(space)]


def write_renderer(folder: str | Path, space: str) -> None:
    """The renderer's file of ``space`` (written once every tile of the top levels is)."""
    import json

    from isoscope.cache import atomic_write_bytes

    meta = {"renderer": RENDERER, "style": list(DEFAULT_STYLE), "levels": TOP_LEVEL}
    atomic_write_bytes(Path(folder) / renderer_rel(space), json.dumps(meta).encode())


def render_levels(folder: str | Path, space: str, levels: Sequence[int]) -> list[str]:
    """Render every tile of each of ``levels`` of ``space`` of the atlas in ``folder`` (its files up to the ``index``
    stage: layout, density, clusters and spatial index, checked as ``load_atlas`` checks them) in the default
    style, each written atomically; module-level, so a Ray task runs it. Returns the files' relative names."""
    from isoscope.atlas.folder import load_atlas
    from isoscope.atlas.raster import to_png
    from isoscope.atlas.tiles import TileMap
    from isoscope.cache import atomic_write_bytes

    folder = Path(folder)
    sp = load_atlas(folder).spaces[space]
    if sp.index is None:
        tmap = TileMap.of(sp.xy, sp.bounds, density_grid=sp.grid, point_density=sp.density)
    else:
        tmap = TileMap.of_index(sp.index, sp.bounds, density_grid=sp.grid, point_density=sp.density)
    codes, lut, _ = cluster_codes(sp.cluster, len(sp.cluster_names()))
    codes = tmap.sorted(codes)  # (n,) in the index's order
    written = []
    for z in levels:
        for y, x in np.ndindex(1 << z, 1 << z):
            png = to_png(tmap.tile(codes, z, x, y, contours=DEFAULT_STYLE[1], lut=lut))
            atomic_write_bytes(folder / tile_rel(space, z, x, y), png)
            written.append(tile_rel(space, z, x, y))
    return written


def read_tile(folder: str | Path, space: str, z: int, *, x: int, y: int, ledger) -> bytes | None:
    """The pre-rendered tile (z, x, y) of ``space`` when ``ledger`` (``isoscope.atlas.folder.Ledger`` of the
    folder) recorded it and this ``RENDERER``'s file, and the tile has the size and SHA-256 recorded; None when it
    is absent, unrecorded, damaged or drawn by another renderer (the caller renders it)."""
    import hashlib

    if ledger.output(renderer_rel(space)) is None:
        return None
    rel = tile_rel(space, z, x, y)
    rec = ledger.output(rel)
    if rec is None:
        return None
    try:
        data = (Path(folder) / rel).read_bytes()
    except OSError:
        return None
    if len(data) != rec[0] or hashlib.sha256(data).hexdigest() != rec[1]:
        return None
    return data
