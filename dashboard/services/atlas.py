"""The Atlas page's services: build (once, on disk) and load whole-corpus atlases, draw every point into
an image, colour, search, and the deck.gl spec the page hands to ``st.pydeck_chart``.

Rendering: above ``INTERACTIVE_MAX`` points the map is one image of every point (``isoscope.atlas.raster``)
drawn by a deck.gl BitmapLayer, with the search hits, the selection and the cluster labels as live
deck.gl layers on top (hover, click). Software WebGL, what a headless or GPU-less browser has, draws
instanced point sprites at ~35 us each here: 100k points take 3.4 s a frame, 1M take 35 s; the image
pans at full speed at any size (bench/atlas.py). Up to ``INTERACTIVE_MAX`` every point is a live point.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from isoscope.atlas.pipeline import MAX_ATLAS_ROWS, Atlas, AtlasConfig, build_atlas, is_complete, load_atlas
from isoscope.cache import default_cache_dir, make_key, text_digest
from isoscope.data import Corpus, load_corpus

ATLAS_DIR_ENV = "ISOSCOPE_ATLAS_DIR"  # a finished atlas folder (python -m isoscope atlas --out DIR) to open
INTERACTIVE_MAX = 20_000
HOVER_CHARS = 160
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
STAGE_TEXT = {
    "texts": "Saving the texts",
    "embed": "Embedding every text",
    "raw_knn": "Neighbour graph (raw)",
    "raw_layout": "2-D layout (raw; UMAP compiles its code on a first run)",
    "raw_clusters": "Density and clusters (raw)",
    "calibrate": "Calibrating every vector",
    "cal_knn": "Neighbour graph (calibrated)",
    "cal_layout": "2-D layout (calibrated)",
    "cal_clusters": "Density and clusters (calibrated)",
    "extras": "Norms, lengths, neighbour overlap",
}


# ------------------------------------------------------------------ sources and building


def atlas_dir_env() -> str | None:
    path = os.environ.get(ATLAS_DIR_ENV, "").strip()
    return path or None


@st.cache_data(show_spinner="Reading the corpus…", max_entries=2)
def read_corpus(path: str, text_column: str | None, mtime: float) -> Corpus:
    """A corpus file of up to ``MAX_ATLAS_ROWS`` rows (raises InputError; errors are not cached)."""
    return load_corpus(path, text_column=text_column, max_rows=MAX_ATLAS_ROWS)


@st.cache_data(show_spinner="Reading the upload…", max_entries=2)
def parse_upload(data: bytes, name: str) -> Corpus:
    return load_corpus(data, name, max_rows=MAX_ATLAS_ROWS)


def atlas_folder(model_fingerprint: str, corpus: Corpus, config: AtlasConfig) -> Path:
    """Where the atlas of ``corpus`` with ``config`` lives in the cache (content-keyed)."""
    meta_digest = text_digest(map(str, corpus.meta.columns))
    key = make_key("atlas-v1", model_fingerprint, text_digest(corpus.texts), meta_digest, json.dumps(config.__dict__))
    return default_cache_dir() / "atlas" / key


def ensure_atlas(model: str, corpus: Corpus, config: AtlasConfig) -> str:
    """The folder of a finished atlas of ``corpus``: found in the cache, or built now with a progress bar."""
    from isoscope.dashboard.services import models

    encoder = models.encoder(model)
    path = atlas_folder(encoder.fingerprint, corpus, config)
    if is_complete(path):
        return str(path)
    bar = st.progress(0.0, text="Building the atlas…")

    def progress(stage: str, done: int, total: int) -> None:
        frac = done / total if total else 1.0
        bar.progress(min(1.0, frac), text=f"{STAGE_TEXT.get(stage, stage)}: {done:,} / {total:,}")

    build_atlas(encoder, corpus.texts, path, config, corpus.meta, progress)
    bar.empty()
    return str(path)


@st.cache_resource(show_spinner="Loading the atlas…", max_entries=2)
def load(path: str, mtime: float) -> Atlas:
    """The atlas in ``path`` (arrays shared by every session, never copied)."""
    return load_atlas(path)


def open_atlas(path: str) -> Atlas:
    return load(path, os.stat(Path(path) / "manifest.json").st_mtime)


# ------------------------------------------------------------------ colours


def colour_options(atlas: Atlas) -> list[str]:
    meta = [c for c in atlas.points.columns if c != "text"]
    numeric = [k for k in NUMERIC if k != "overlap" or "cal" in atlas.spaces]
    return ["cluster", *meta, *numeric]


def _categorical(values: pd.Series) -> tuple[np.ndarray, list[tuple[str, str]]]:
    counts = values.astype(str).value_counts(sort=True)
    top = list(counts.index[: len(PALETTE)])
    codes = pd.Categorical(values.astype(str), categories=top).codes  # (n,) -1 = other
    colors = np.where(codes[:, None] >= 0, PALETTE[np.maximum(codes, 0)], OTHER).astype(np.uint8)
    legend = [(name, _hex(PALETTE[i])) for i, name in enumerate(top)]
    if (codes < 0).any():
        legend.append((f"other ({int((codes < 0).sum()):,})", _hex(OTHER)))
    return colors, legend


def _numeric(values: np.ndarray) -> tuple[np.ndarray, list[tuple[str, str]]]:
    v = np.asarray(values, np.float64)
    lo, hi = np.nanquantile(v, [0.01, 0.99]) if len(v) else (0.0, 1.0)
    t = np.clip((v - lo) / (hi - lo if hi > lo else 1.0), 0, 1) * (len(VIRIDIS) - 1)  # (n,)
    i = np.minimum(t.astype(int), len(VIRIDIS) - 2)
    f = (t - i)[:, None]
    colors = np.round(VIRIDIS[i] * (1 - f) + VIRIDIS[i + 1] * f).astype(np.uint8)
    return colors, [(f"{lo:.3g}", _hex(VIRIDIS[0])), (f"{hi:.3g}", _hex(VIRIDIS[-1]))]


def _hex(rgb: np.ndarray) -> str:
    return "#" + "".join(f"{int(c):02x}" for c in rgb)


def colours(atlas: Atlas, space: str, colour_by: str) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Per-point colours (n, 3) uint8 and a legend [(label, hex)] (two entries = low, high of a scale)."""
    sp = atlas.spaces[space]
    if colour_by == "cluster":  # clusters are numbered by size: the first ones get the palette
        names = sp.cluster_names()
        shown = min(len(PALETTE), len(names))
        code = np.where(sp.cluster < shown, sp.cluster, -1)  # (n,)
        colors = np.where(code[:, None] >= 0, PALETTE[np.maximum(code, 0)], OTHER).astype(np.uint8)
        legend = [(names[c], _hex(PALETTE[c])) for c in range(shown)]
        if (code < 0).any():
            legend.append((f"other ({int((code < 0).sum()):,})", _hex(OTHER)))
        return colors, legend
    if colour_by in NUMERIC:
        values = {"density": sp.density, "norm": atlas.norm, "length": atlas.length, "overlap": atlas.overlap}
        return _numeric(values[colour_by])
    column = atlas.points[colour_by]
    if pd.api.types.is_numeric_dtype(column) and column.nunique() > len(PALETTE):
        return _numeric(column.to_numpy(np.float64))
    return _categorical(column)


@st.cache_data(show_spinner=False, max_entries=16)
def colour_table(path: str, space: str, colour_by: str) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """``colours`` of the atlas in ``path``, computed once per choice."""
    return colours(open_atlas(path), space, colour_by)


@st.cache_data(show_spinner="Drawing every point…", max_entries=16)
def raster_png(path: str, space: str, colour_by: str, contours: bool) -> tuple[str, list[tuple[str, str]]]:
    """The image of every point (with the density contours drawn over it) as a data URL, and the legend.

    One image instead of two layers: software WebGL pays per textured pixel on every frame."""
    from isoscope.atlas.raster import composite, contour_levels, contour_overlay, rasterize, to_png

    atlas = open_atlas(path)
    sp = atlas.spaces[space]
    colors, legend = colour_table(path, space, colour_by)
    size = 2048 if atlas.n > 100_000 else 1024
    image = rasterize(sp.xy, sp.bounds, colors, size, size)
    if contours:
        grid = sp.grid / max(float(sp.grid.max()), 1e-12)
        image = composite(image, contour_overlay(grid, contour_levels(sp.density), size, size))
    return "data:image/png;base64," + base64.b64encode(to_png(image)).decode(), legend


@st.cache_data(show_spinner=False, max_entries=8)
def contour_png(path: str, space: str) -> str:
    """Density contours alone (for maps whose points are all live) as a data URL."""
    from isoscope.atlas.raster import contour_levels, contour_overlay, to_png

    sp = open_atlas(path).spaces[space]
    grid = sp.grid / max(float(sp.grid.max()), 1e-12)
    png = to_png(contour_overlay(grid, contour_levels(sp.density), 1024, 1024))
    return "data:image/png;base64," + base64.b64encode(png).decode()


@st.cache_data(show_spinner="Searching…", max_entries=32)
def search(path: str, query: str) -> np.ndarray:
    """Rows (m,) whose text contains ``query`` (case-insensitive, plain text, not a pattern)."""
    texts = open_atlas(path).points["text"]
    return np.flatnonzero(texts.str.contains(query, case=False, regex=False).to_numpy(bool, na_value=False))


@st.cache_data(show_spinner="Anisotropy metrics…", max_entries=16)
def metrics(path: str, space: str, rows: tuple[int, ...], sample: int = 20_000, seed: int = 0) -> pd.DataFrame:
    """isoscope.geometry.metrics.all_metrics of the selected rows and of the whole corpus (each a seeded sample of at most
    ``sample`` rows), side by side."""
    from isoscope.geometry.metrics import all_metrics
    from isoscope.sampling import sample_indices

    atlas = open_atlas(path)
    vectors = atlas.vectors(space)
    whole = sample_indices(len(vectors), sample, seed)
    picked = np.asarray(rows, np.int64)[sample_indices(len(rows), sample, seed)]
    out = {"whole corpus": all_metrics(np.asarray(vectors[whole], np.float32), seed)}
    if len(picked) >= 2:
        out["selection"] = all_metrics(np.asarray(vectors[np.sort(picked)], np.float32), seed)
    frame = pd.DataFrame(out)
    frame.index.name = "metric"
    return frame.reset_index()


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
