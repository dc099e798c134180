"""The Atlas map: per-point colours and legends, the images of every point, and the deck.gl spec for
``st.pydeck_chart``; the selection table.

Rendering: above ``INTERACTIVE_MAX`` points the map is one image of every point (``isoscope.atlas.raster``)
drawn by a deck.gl BitmapLayer, with the search hits, the selection and the cluster labels as live
deck.gl layers on top (hover, click). Software WebGL, what a headless or GPU-less browser has, draws
instanced point sprites at ~35 us each here: 100k points take 3.4 s a frame, 1M take 35 s; the image
pans at full speed at any size (bench/atlas.py). Up to ``INTERACTIVE_MAX`` every point is a live point.
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pandas as pd

from isoscope.atlas.pipeline import Atlas, AtlasSpace

INTERACTIVE_MAX = 20_000
HOVER_CHARS = 160
LABELS = 24  # cluster labels drawn on the map (the largest clusters)
SPACE_NAMES = {"raw": "raw", "cal": "calibrated"}
NUMERIC = {"density": "density", "norm": "norm", "length": "length", "overlap": "neighbour overlap raw vs calibrated"}
PALETTE = np.array(
    [
        [31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189], [140, 86, 75],
        [227, 119, 194], [188, 189, 34], [23, 190, 207], [57, 59, 121], [173, 73, 74], [99, 121, 57],
    ],
    np.uint8,
)  # fmt: skip
OTHER = np.array([170, 170, 170], np.uint8)
VIRIDIS = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], np.float64)
Legend = list[tuple[str, str]]  # (label, "#rrggbb"); two entries from a numeric scale = its low and high end


# ------------------------------------------------------------------ colours


def hex_colour(rgb: np.ndarray) -> str:
    """ "#rrggbb" of an RGB triple."""
    return "#" + "".join(f"{int(c):02x}" for c in rgb)


def colour_options(atlas: Atlas) -> list[str]:
    """What the points can be coloured by: cluster, every metadata column, the numeric measures."""
    meta = [c for c in atlas.points.columns if c != "text"]
    numeric = [k for k in NUMERIC if k != "overlap" or "cal" in atlas.spaces]
    return ["cluster", *meta, *numeric]


def _coded(code: np.ndarray, names: list[str]) -> tuple[np.ndarray, Legend]:
    """Palette colours of category codes (n,) (-1 = other, grey) and their legend."""
    colors = np.where(code[:, None] >= 0, PALETTE[np.maximum(code, 0)], OTHER).astype(np.uint8)  # (n, 3)
    legend = [(name, hex_colour(PALETTE[i])) for i, name in enumerate(names)]
    if (code < 0).any():
        legend.append((f"other ({int((code < 0).sum()):,})", hex_colour(OTHER)))
    return colors, legend


def categorical_colours(values: pd.Series) -> tuple[np.ndarray, Legend]:
    """The most frequent ``len(PALETTE)`` values get the palette, by frequency; the rest are grey "other"."""
    counts = values.astype(str).value_counts(sort=True)
    top = list(counts.index[: len(PALETTE)])
    return _coded(pd.Index(top).get_indexer(values.astype(str)), top)  # codes (n,), -1 = other


def numeric_colours(values: np.ndarray) -> tuple[np.ndarray, Legend]:
    """Viridis from the 1st to the 99th percentile (clipped beyond); the legend names both ends."""
    v = np.asarray(values, np.float64)
    lo, hi = np.nanquantile(v, [0.01, 0.99]) if len(v) else (0.0, 1.0)
    t = np.clip((v - lo) / (hi - lo if hi > lo else 1.0), 0, 1) * (len(VIRIDIS) - 1)  # (n,) in [0, 4]
    i = np.minimum(t.astype(int), len(VIRIDIS) - 2)
    f = (t - i)[:, None]
    colors = np.round(VIRIDIS[i] * (1 - f) + VIRIDIS[i + 1] * f).astype(np.uint8)  # (n, 3)
    return colors, [(f"{lo:.3g}", hex_colour(VIRIDIS[0])), (f"{hi:.3g}", hex_colour(VIRIDIS[-1]))]


def colours(atlas: Atlas, space: str, colour_by: str) -> tuple[np.ndarray, Legend]:
    """Per-point colours (n, 3) uint8 and a legend [(label, hex)] (two entries = low, high of a scale)."""
    sp = atlas.spaces[space]
    if colour_by == "cluster":  # clusters are numbered by size: the first ones get the palette
        names = sp.cluster_names()
        shown = min(len(PALETTE), len(names))
        code = np.where(sp.cluster < shown, sp.cluster, -1)  # (n,)
        return _coded(code, [names[c] for c in range(shown)])
    if colour_by in NUMERIC:
        values = {"density": sp.density, "norm": atlas.norm, "length": atlas.length, "overlap": atlas.overlap}
        return numeric_colours(values[colour_by])
    column = atlas.points[colour_by]
    if pd.api.types.is_numeric_dtype(column) and column.nunique() > len(PALETTE):
        return numeric_colours(column.to_numpy(np.float64))
    return categorical_colours(column)


def colour_caption(colour_by: str, legend: Legend) -> str | None:
    """The line under the map that explains its colours (None without a legend)."""
    if len(legend) == 2 and (colour_by in NUMERIC or legend[0][1] == hex_colour(VIRIDIS[0])):
        return f"Colour: {NUMERIC.get(colour_by, colour_by)} from {legend[0][0]} (purple) to {legend[1][0]} (yellow)."
    if legend:
        return "Colour: " + " · ".join(label for label, _ in legend)
    return None


# ------------------------------------------------------------------ images


def png_data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


def _contours(sp: AtlasSpace, size: int) -> np.ndarray:
    from isoscope.atlas.raster import contour_levels, contour_overlay

    grid = sp.grid / max(float(sp.grid.max()), 1e-12)
    return contour_overlay(grid, contour_levels(sp.density), size, size)  # (size, size, 4)


def raster_image(atlas: Atlas, space: str, colors: np.ndarray, contours: bool) -> str:
    """Every point drawn into one image (with the density contours drawn over it), as a data URL.

    One image instead of two layers: software WebGL pays per textured pixel on every frame."""
    from isoscope.atlas.raster import composite, rasterize, to_png

    sp = atlas.spaces[space]
    size = 2048 if atlas.n > 100_000 else 1024
    image = rasterize(sp.xy, sp.bounds, colors, size, size)  # (size, size, 4)
    if contours:
        image = composite(image, _contours(sp, size))
    return png_data_url(to_png(image))


def contour_image(atlas: Atlas, space: str) -> str:
    """Density contours alone (for maps whose points are all live) as a data URL."""
    from isoscope.atlas.raster import to_png

    return png_data_url(to_png(_contours(atlas.spaces[space], 1024)))


# ------------------------------------------------------------------ the deck.gl spec


class DeckSpec:
    """A ready deck.gl JSON spec for ``st.pydeck_chart`` (what it reads from a ``pydeck.Deck``)."""

    layers = None  # nothing for Streamlit's pandas-3 pydeck workaround to convert

    def __init__(self, spec: dict, tooltip: dict | None) -> None:
        self.spec = spec
        self._tooltip = tooltip

    def to_json(self) -> str:
        return json.dumps(self.spec)


def view_state(bounds: tuple[float, float, float, float], width_px: int = 820, height_px: int = 620) -> dict:
    """An orthographic view centred on ``bounds`` (x0, y0, x1, y1), zoomed so they fill the canvas."""
    x0, y0, x1, y1 = bounds
    zoom = float(np.log2(min(width_px / (x1 - x0), height_px / (y1 - y0))))
    return {"target": [(x0 + x1) / 2, (y0 + y1) / 2, 0], "zoom": zoom, "minZoom": zoom - 2, "maxZoom": zoom + 9}


def point_records(atlas: Atlas, space: str, rows: np.ndarray, colors: np.ndarray) -> list[dict]:
    """Live points: row id, position, colour and the hover text (plain text, cut to ``HOVER_CHARS``)."""
    sp = atlas.spaces[space]
    texts = atlas.texts
    cluster = sp.cluster
    out = []
    for r in rows.tolist():
        text = str(texts[r])
        text = text if len(text) <= HOVER_CHARS else text[: HOVER_CHARS - 1] + "…"
        c = int(cluster[r])
        tip = f"#{r} · cluster {c if c >= 0 else '-'}\n{text}"
        out.append({"i": r, "x": float(sp.xy[r, 0]), "y": float(sp.xy[r, 1]), "c": colors[r].tolist(), "t": tip})
    return out


def cluster_labels(sp: AtlasSpace, top: int = LABELS) -> list[dict]:
    """Labels of the ``top`` largest clusters at their centres (deck.gl's default font has ASCII only)."""
    labels = []
    for c in sp.clusters[:top]:
        words = ", ".join(c["words"]) or f"cluster {c['cluster']}"
        labels.append(
            {"x": c["x"], "y": c["y"], "label": words, "t": f"cluster {c['cluster']}: {c['size']:,} texts\n{words}"}
        )
    return labels


def deck_spec(
    atlas: Atlas,
    space: str,
    image: str | None,
    live: list[dict],
    highlight: list[dict],
    labels: list[dict],
    contours: str | None,
) -> DeckSpec:
    """The map: image of every point, density contours, live points, highlighted points, cluster labels."""
    sp = atlas.spaces[space]
    x0, y0, x1, y1 = sp.bounds
    layers: list[dict] = []
    if image is not None:
        layers.append({"@@type": "BitmapLayer", "id": "all-points", "image": image, "bounds": [x0, y0, x1, y1]})
    if contours is not None:
        layers.append({"@@type": "BitmapLayer", "id": "contours", "image": contours, "bounds": [x0, y0, x1, y1]})
    point = {"@@type": "ScatterplotLayer", "getPosition": "@@=[x, y]", "radiusUnits": "pixels", "pickable": True}
    if live:
        layers.append({**point, "id": "points", "data": live, "getFillColor": "@@=c", "getRadius": 3, "opacity": 0.8})
    if highlight:
        layers.append(
            {
                **point,
                "id": "highlight",
                "data": highlight,
                "getFillColor": [255, 200, 0],
                "stroked": True,
                "getLineColor": [20, 20, 30],
                "lineWidthUnits": "pixels",
                "getLineWidth": 1.5,
                "getRadius": 4,
            }
        )
    if labels:
        layers.append(
            {
                "@@type": "TextLayer",
                "id": "labels",
                "data": labels,
                "getPosition": "@@=[x, y]",
                "getText": "@@=label",
                "getSize": 12,
                "getColor": [20, 20, 30],
                "background": True,
                "getBackgroundColor": [255, 255, 255, 200],
                "pickable": True,
            }
        )
    spec = {
        "initialViewState": view_state(sp.bounds),
        "views": [{"@@type": "OrthographicView", "controller": True, "flipY": False}],
        "layers": layers,
        "mapStyle": None,
    }
    return DeckSpec(spec, {"text": "{t}"})


def clicked_rows(event: object) -> list[int]:
    """Row ids of the points clicked on the map (the live and the highlighted layers) in a selection event."""
    objects = (getattr(event, "selection", None) or {}).get("objects", {}) if event is not None else {}
    rows: list[int] = []
    for layer in ("points", "highlight"):
        rows += [int(o["i"]) for o in objects.get(layer, []) if isinstance(o, dict) and "i" in o]
    return rows


# ------------------------------------------------------------------ the selection


def selection_table(atlas: Atlas, space: str, rows: np.ndarray, meta_columns: int = 6) -> pd.DataFrame:
    """The selected ``rows``: text, cluster, the first metadata columns, norm, length and (with a calibrated
    space) the neighbour overlap raw vs calibrated."""
    sp = atlas.spaces[space]
    table = pd.DataFrame({"row": rows, "text": atlas.texts[rows], "cluster": sp.cluster[rows]})
    for col in [c for c in atlas.points.columns if c != "text"][:meta_columns]:
        table[col] = atlas.points[col].to_numpy()[rows]
    table["norm"] = np.round(atlas.norm[rows], 4)
    table["length"] = atlas.length[rows]
    if "cal" in atlas.spaces:
        table["overlap"] = np.round(atlas.overlap[rows], 3)
    return table
