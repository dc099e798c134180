"""The Atlas map: per-point colours and legends, the data of the map component (tiles, labels by level,
selection) and the selection table; pure functions of their arguments.

Rendering: the map is a tile pyramid (``isoscope.atlas.tiles``) served by the app's own server
(``isoscope.dashboard.tiles``) and drawn on a 2-D canvas by ``ui.atlas_map``: every point at every zoom,
sharp at every level, without WebGL (software WebGL draws instanced points at ~35 us each: 100k points took
3.4 s a frame; see bench/atlas.py and bench/RESULTS.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from isoscope.atlas.pipeline import Atlas, AtlasSpace
from isoscope.atlas.pyramid import OTHER, PALETTE, cluster_codes, palette_lut
from isoscope.dashboard.text import literal

MAP_HEIGHT = 640
SELECTED_MAX = 2_000  # selected points ringed on the map
SPACE_NAMES = {"raw": "raw", "cal": "calibrated"}
EXTRA_PREFIX = "extra: "  # a column added after the build (isoscope.atlas.extras): NaN takes the scale's low end
NUMERIC = {"density": "density", "norm": "norm", "length": "length", "overlap": "neighbour overlap raw vs calibrated"}
VIRIDIS = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], np.float64)
Legend = list[tuple[str, str]]  # (label, "#rrggbb"); two entries from a numeric scale = its low and high end


# ------------------------------------------------------------------ colours


def hex_colour(rgb: np.ndarray) -> str:
    """ "#rrggbb" of an RGB triple."""
    return "#" + "".join(f"{int(c):02x}" for c in rgb)


def colour_options(atlas: Atlas) -> list[str]:
    """What the points can be coloured by: cluster, every metadata column, the numeric measures, and each column
    added after the build ("extra: NAME", ``isoscope.atlas.extras``)."""
    meta = atlas.columns
    numeric = [k for k in NUMERIC if k != "overlap" or "cal" in atlas.spaces]
    return ["cluster", *meta, *numeric, *(EXTRA_PREFIX + name for name in atlas.extras)]


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
    if colour_by.startswith(EXTRA_PREFIX) and colour_by[len(EXTRA_PREFIX) :] in atlas.extras:
        return _numeric_codes(_chunks_of(atlas.extras[colour_by[len(EXTRA_PREFIX) :]]), atlas.n)
    if colour_by in NUMERIC:
        values = {"density": sp.density, "norm": atlas.norm, "length": atlas.length, "overlap": atlas.overlap}
        return numeric_colours(values[colour_by])
    column = atlas.points[colour_by]
    if pd.api.types.is_numeric_dtype(column) and column.nunique() > len(PALETTE):
        return numeric_colours(column.to_numpy(np.float64))
    return categorical_colours(column)


# ------------------------------------------------------------------ colours as codes, chunk by chunk (the map's)

QUANTILE_SAMPLE = 2_000_000  # values whose percentiles set a numeric scale (a seeded sample above)
CATEGORY_CAP = 1_000_000  # distinct values counted for a categorical legend (the first ones met beyond)
STEPS = 256  # a numeric scale as codes: 256 steps of viridis; its steepest channel climbs 159 units over 63.75
# steps, so a value is within half a step (1.25 units) of its code's colour, 2 after both are rounded
CHUNK = 1 << 20


def _numeric_lut() -> np.ndarray:
    """(STEPS, 3) uint8: viridis at STEPS evenly spaced points of the scale."""
    t = np.linspace(0, len(VIRIDIS) - 1, STEPS)
    i = np.minimum(t.astype(int), len(VIRIDIS) - 2)
    f = (t - i)[:, None]
    return np.round(VIRIDIS[i] * (1 - f) + VIRIDIS[i + 1] * f).astype(np.uint8)


def _numeric_codes(chunks, n: int) -> tuple[np.ndarray, np.ndarray, Legend]:
    """Codes (n,) uint8 of a numeric scale from the 1st to the 99th percentile (as ``numeric_colours``), over
    ``chunks()`` (a fresh iterator of (first row, values) each call); the percentiles of every value up to
    ``QUANTILE_SAMPLE`` values, of a seeded sample beyond."""
    from isoscope.sampling import sample_indices

    keep = None if n <= QUANTILE_SAMPLE else sample_indices(n, QUANTILE_SAMPLE, 0)  # (s,) sorted
    parts = []
    for start, v in chunks():
        v = np.asarray(v, np.float64)
        if keep is None:
            parts.append(v)
        else:
            a, b = np.searchsorted(keep, [start, start + len(v)])
            parts.append(v[keep[a:b] - start])
    values = np.concatenate(parts) if parts else np.zeros(0)
    lo, hi = np.nanquantile(values, [0.01, 0.99]) if len(values) else (0.0, 1.0)
    del values, parts
    codes = np.empty(n, np.uint8)
    for start, v in chunks():
        t = np.clip((np.asarray(v, np.float64) - lo) / (hi - lo if hi > lo else 1.0), 0, 1)  # (m,) in [0, 1]
        codes[start : start + len(t)] = np.round(np.nan_to_num(t) * (STEPS - 1)).astype(np.uint8)
    return codes, _numeric_lut(), [(f"{lo:.3g}", hex_colour(VIRIDIS[0])), (f"{hi:.3g}", hex_colour(VIRIDIS[-1]))]


def _category_codes(atlas: Atlas, column: str) -> tuple[np.ndarray, np.ndarray, Legend]:
    """``categorical_colours`` of a metadata column as codes, two passes over its row groups."""
    counts: dict[str, int] = {}
    for _, values in atlas.column_chunks(column):
        for value, count in values.astype(str).value_counts(sort=False).items():
            if value in counts or len(counts) < CATEGORY_CAP:
                counts[value] = counts.get(value, 0) + int(count)
    ranked = pd.Series(counts, dtype=np.int64).sort_values(ascending=False, kind="stable")
    top = list(ranked.index[: len(PALETTE)])
    codes = np.empty(atlas.n, np.uint8)
    other = 0
    for start, values in atlas.column_chunks(column):
        code = pd.Index(top).get_indexer(values.astype(str))  # (m,), -1 = other
        other += int((code < 0).sum())
        codes[start : start + len(code)] = np.where(code >= 0, code, len(top))
    legend = [(name, hex_colour(PALETTE[i])) for i, name in enumerate(top)]
    if other:
        legend.append((f"other ({other:,})", hex_colour(OTHER)))
    return codes, palette_lut(len(top)), legend


def _chunks_of(values: np.ndarray):
    """A fresh iterator of (first row, block) over ``values`` (memory-mapped), ``CHUNK`` rows at a time."""
    return lambda: ((s, np.asarray(values[s : s + CHUNK])) for s in range(0, len(values), CHUNK))


def colour_codes(atlas: Atlas, space: str, colour_by: str) -> tuple[np.ndarray, np.ndarray, Legend]:
    """What the map draws: codes (n,) uint8 (one byte a point), a colour table (k, 3) uint8 and the legend,
    computed a chunk at a time from the memory maps and the row groups of ``points.parquet``. ``lut[codes]``
    is ``colours``' colours: the same for clusters and categories, within two units per channel for a scale."""
    sp = atlas.spaces[space]
    if colour_by == "cluster":
        names = sp.cluster_names()
        codes, lut, other = cluster_codes(sp.cluster, len(names))  # the build's pre-rendered tiles use it too
        shown = len(lut) - 1
        legend = [(names[c], hex_colour(PALETTE[c])) for c in range(shown)]
        legend += [(f"other ({other:,})", hex_colour(OTHER))] if other else []
        return codes, lut, legend
    if colour_by.startswith(EXTRA_PREFIX) and colour_by[len(EXTRA_PREFIX) :] in atlas.extras:
        return _numeric_codes(_chunks_of(atlas.extras[colour_by[len(EXTRA_PREFIX) :]]), atlas.n)
    if colour_by in NUMERIC:
        values = {"density": sp.density, "norm": atlas.norm, "length": atlas.length, "overlap": atlas.overlap}
        return _numeric_codes(_chunks_of(values[colour_by]), atlas.n)
    numeric, distinct = True, set()
    for _, values in atlas.column_chunks(colour_by):
        numeric = numeric and pd.api.types.is_numeric_dtype(values)
        if not numeric:
            break
        distinct.update(values.dropna().unique()[: len(PALETTE) + 1].tolist())
        if len(distinct) > len(PALETTE):
            break
    if numeric and len(distinct) > len(PALETTE):
        return _numeric_codes(lambda: atlas.column_chunks(colour_by), atlas.n)
    return _category_codes(atlas, colour_by)


def colour_caption(colour_by: str, legend: Legend) -> str | None:
    """The line under the map that explains its colours, as Markdown (None without a legend): column names,
    category values and cluster names are user and file text, escaped (``literal``)."""
    if len(legend) == 2 and (colour_by in NUMERIC or legend[0][1] == hex_colour(VIRIDIS[0])):
        name, lo, hi = (literal(x) for x in (NUMERIC.get(colour_by, colour_by), legend[0][0], legend[1][0]))
        return f"Colour: {name} from {lo} (purple) to {hi} (yellow)."
    if legend:
        return "Colour: " + " · ".join(literal(label) for label, _ in legend)
    return None


# ------------------------------------------------------------------ the map component's data


def map_labels(sp: AtlasSpace) -> list[list]:
    """[level, x, y, size, text] of every cluster of every level (coarse first, largest first within a level):
    the labels the map places by zoom. A cluster without words is named by its number."""
    out = []
    for level, clusters in enumerate(sp.levels or [sp.clusters]):
        for c in sorted(clusters, key=lambda c: (-c["size"], c["cluster"])):
            text = ", ".join(c["words"]) or f"cluster {c['cluster']}"
            out.append([level, float(c["x"]), float(c["y"]), int(c["size"]), text])
    return out


def map_data(
    name: str,
    grid: dict,
    bounds: tuple[float, float, float, float],
    urls: object,
    labels: list[list] | None,
    selected: np.ndarray,
    height: int = MAP_HEIGHT,
    *,
    fit: tuple[float, float, float, float] | None = None,
) -> dict:
    """What the map component (``ui.atlas_map``) draws: the tile pyramid ``grid`` (``TileGrid.to_dict``), the
    layout ``bounds``, the tile/highlight/pick URLs and the lit-up rows' mark (``tiles.MapUrls``), the labels
    (None: hidden) and the selected points (m, 2) (the first ``SELECTED_MAX`` are ringed); ``fit``: the box the
    map opens on (the bulk of the points, ``AtlasSpace.view``; None: the bounds)."""
    return {
        "name": name,
        "world": grid,
        "bounds": [float(b) for b in bounds],
        "fit": [float(b) for b in (fit or bounds)],
        "tiles": urls.tiles,
        "highlight": urls.highlight,
        "pick": urls.pick,
        "mark": urls.mark,
        "labels": labels or [],
        "levels": 1 + max((lab[0] for lab in labels or []), default=-1),
        "showLabels": labels is not None,
        "selected": np.asarray(selected, np.float64)[:SELECTED_MAX].round(6).tolist(),
        "height": int(height),
    }


def selection_event(result: object) -> tuple[str, object] | None:
    """("click", {"row", "add"}) or ("box", (x0, y0, x1, y1)) from the map component's result, else None."""
    for kind in ("click", "box"):
        value = getattr(result, kind, None) if result is not None else None
        if kind == "click" and isinstance(value, dict) and isinstance(value.get("row"), int | float):
            return "click", {"row": int(value["row"]), "add": bool(value.get("add"))}
        if kind == "box" and isinstance(value, list | tuple) and len(value) == 4:
            box = tuple(float(v) for v in value)
            if np.isfinite(box).all():
                return "box", box
    return None


# ------------------------------------------------------------------ the selection


def selection_table(atlas: Atlas, space: str, rows: np.ndarray, meta_columns: int = 6) -> pd.DataFrame:
    """The selected ``rows``: text, cluster, the first metadata columns, norm, length and (with a calibrated
    space) the neighbour overlap raw vs calibrated."""
    sp = atlas.spaces[space]
    rows = np.asarray(rows, np.int64)
    table = pd.DataFrame({"row": rows, "text": atlas.texts_at(rows), "cluster": sp.cluster[rows]})
    meta = atlas.table_at(rows, atlas.columns[:meta_columns])  # read from the row groups the rows fall in
    for col in meta.columns:
        table[col] = meta[col].to_numpy()
    table["norm"] = np.round(atlas.norm[rows], 4)
    table["length"] = atlas.length[rows]
    if "cal" in atlas.spaces:
        table["overlap"] = np.round(atlas.overlap[rows], 3)
    return table
