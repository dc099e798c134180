"""Plotly figures of a space's geometry, shared by the one-file report and the dashboard's pages (which
re-export them from ``isoscope.dashboard.figures``): pure functions of their arguments, no Streamlit.

- Anisotropy: ``cosine_histograms``, ``spectra`` (normalised singular values), ``layer_heatmap``;
- maps: ``meta_colours`` and ``projection_map`` (a sample of a corpus, coloured by a column or a measure,
  search hits ringed), ``aligned_map``, ``map_ranges`` and ``panel_ranges`` (two Procrustes-aligned maps point by point, or each on its
  own axes when B's is far smaller);
- comparisons: ``heatmap`` (layer x layer CKA), ``overlap_histogram``.

Hover texts arrive already safe for plotly (``isoscope.space.html.plot_text``); names that come from user data
(categories, columns, titles) are escaped here.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from isoscope.space.html import plot_text

if TYPE_CHECKING:
    from isoscope.comparison import ComparisonMetrics

MAX_CATEGORIES = 40  # more distinct values: the rarest are drawn together as "other" (a legend still read)
SMALL_PALETTE = px.colors.qualitative.Plotly  # 10 colours: enough for a few categories, repeated beyond
OTHER_COLOUR = "#b4b4b4"  # the grouped tail: grey, apart from every category's hue
Ranges = list[list[float]]  # [[x0, x1], [y0, y1]]


def cosine_histograms(cosines: Mapping[str, np.ndarray]) -> go.Figure:
    """Overlaid histograms of the cosines of random pairs, one per space (name -> (m,) cosines)."""
    hist = go.Figure()
    for name, values in cosines.items():
        hist.add_trace(go.Histogram(x=values, name=name, opacity=0.55, nbinsx=80))
    hist.update_layout(barmode="overlay", height=360, xaxis_title="cosine of a random pair", yaxis_title="pairs")
    return hist


def spectra(singular_values: Mapping[str, np.ndarray]) -> go.Figure:
    """Each space's singular values (name -> (d,)), normalised to sum 1, on a log axis."""
    spec = go.Figure()
    for name, sv in singular_values.items():
        spec.add_trace(go.Scatter(y=sv / sv.sum(), mode="lines", name=name))
    spec.update_layout(height=360, yaxis_type="log", xaxis_title="component", yaxis_title="normalised singular value")
    return spec


def layer_heatmap(per_layer: pd.DataFrame) -> go.Figure:
    """Metrics (columns) per layer (index): colour scaled per metric to [0, 1], the values written in the cells."""
    norm = (per_layer - per_layer.min()) / (per_layer.max() - per_layer.min()).replace(0, 1)
    heat = px.imshow(
        norm.T,
        x=[str(i) for i in per_layer.index],
        y=list(per_layer.columns),
        color_continuous_scale="Viridis",
        aspect="auto",
        labels={"x": "layer", "color": "scaled per metric"},
    )
    heat.update_traces(text=per_layer.T.round(3).values, texttemplate="%{text}")
    heat.update_layout(height=380)
    return heat


def category_palette(n: int) -> list[str]:
    """``n`` distinct colours, one per category (issue 41: plotly's 10 repeated every 10 topics, architecture =
    music): plotly's own up to 10, beyond that ``n`` hues spaced evenly round the wheel, alternating three
    lightnesses so that neighbouring hues differ in brightness too."""
    import colorsys

    if n <= len(SMALL_PALETTE):
        return list(SMALL_PALETTE[:n])
    colours = []
    for i in range(n):
        r, g, b = colorsys.hls_to_rgb(i / n, (0.5, 0.7, 0.35)[i % 3], 0.9)  # the lightnesses apart the most
        colours.append(f"#{round(255 * r):02x}{round(255 * g):02x}{round(255 * b):02x}")
    return colours


def meta_colours(column: pd.Series) -> tuple[np.ndarray, bool]:
    """Colour values of a metadata column (n,) and whether they are categories: a numeric column with more
    than ``MAX_CATEGORIES`` values is a scale, anything else categories (missing values named)."""
    num = pd.to_numeric(column, errors="coerce")
    if num.notna().all() and num.nunique() > MAX_CATEGORIES:
        return num.to_numpy(np.float64), False
    return column.astype(object).fillna("(missing)").astype(str).to_numpy(), True


def projection_map(
    coords: np.ndarray,
    rows: np.ndarray,
    hover: Sequence[str],
    *,
    title: str,
    colour: np.ndarray | None,
    categorical: bool,
    hits: np.ndarray,
    colour_name: str = "",
) -> go.Figure:
    """Scattergl (2-D) or Scatter3d (3-D) of ``coords`` (m, 2|3) for corpus ``rows`` (m,); row ids in customdata.

    ``hover`` (m,) is already safe for plotly (``text.plot_text``); ``colour`` (n,) and ``hits`` (n,) bool
    are per corpus row (None: one colour). At most ``MAX_CATEGORIES`` categories, the rest as "other"."""
    dims = coords.shape[1]
    trace = go.Scattergl if dims == 2 else go.Scatter3d
    size = 7 if dims == 2 else 3
    hover = np.asarray(hover, dtype=object)  # (m,)

    def points(mask: np.ndarray, **kw) -> go.Scattergl | go.Scatter3d:
        xyz = {"x": coords[mask, 0], "y": coords[mask, 1]} | ({"z": coords[mask, 2]} if dims == 3 else {})
        return trace(
            **xyz, mode="markers", text=hover[mask], customdata=rows[mask].tolist(), hoverlabel={"align": "left"}, **kw
        )

    fig = go.Figure()
    everything = np.ones(len(rows), bool)
    if colour is None:
        fig.add_trace(points(everything, name="texts", hovertemplate="%{text}<extra></extra>", marker={"size": size}))
    elif categorical:
        values = colour[rows]  # (m,)
        counts = pd.Series(values).value_counts()
        keep = list(counts.index[: MAX_CATEGORIES - 1]) if len(counts) > MAX_CATEGORIES else list(counts.index)
        groups = [(c, values == c) for c in sorted(keep)]
        palette = category_palette(len(groups))
        if len(keep) < len(counts):
            groups.append(("other", ~np.isin(values, keep)))
            palette.append(OTHER_COLOUR)
        for (cat, mask), hue in zip(groups, palette, strict=True):
            fig.add_trace(
                points(
                    mask,
                    name=html.escape(str(cat)[:40]),
                    hovertemplate="%{text}<extra>%{fullData.name}</extra>",
                    marker={"size": size, "opacity": 0.8, "color": hue},
                )
            )
    else:
        values = np.asarray(colour, dtype=np.float64)[rows]  # (m,)
        known = np.isfinite(values)  # a value may be missing (NaN): those points are drawn grey, not coloured
        if not known.all():
            fig.add_trace(
                points(
                    ~known,
                    name="no value",
                    hovertemplate="%{text}<extra>no value</extra>",
                    marker={"size": size, "opacity": 0.5, "color": OTHER_COLOUR},
                )
            )
        fig.add_trace(
            points(
                known,
                name=html.escape(colour_name),
                hovertemplate="%{text}<br>value %{marker.color:.4g}<extra></extra>",
                marker={
                    "size": size,
                    "opacity": 0.85,
                    "color": values[known],
                    "colorscale": "Viridis",
                    "showscale": True,
                    "colorbar": {"title": {"text": html.escape(colour_name)}},
                },
            )
        )
    found = hits[rows]
    if found.any():
        fig.add_trace(
            points(
                found,
                name=f"matches ({int(found.sum())})",
                hovertemplate="%{text}<extra>match</extra>",
                marker={"size": 2 * size + 4, "symbol": "circle-open", "color": "#d62728", "line": {"width": 2}},
            )
        )
    fig.update_layout(
        title={"text": html.escape(title)},
        height=560,
        margin={"t": 50, "l": 10, "r": 10, "b": 10},
        legend={"itemsizing": "constant"},
    )
    if dims == 2:
        fig.update_layout(dragmode="lasso", xaxis={"showticklabels": False}, yaxis={"showticklabels": False})
    return fig


def heatmap(matrix: np.ndarray, rows: list[str], cols: list[str], title: str) -> go.Figure:
    """``matrix`` (len(rows), len(cols)) with its values written in the cells; A down, B across."""
    fig = go.Figure(
        go.Heatmap(
            z=matrix,
            x=[f"B {c}" for c in cols],
            y=[f"A {r}" for r in rows],
            zmin=0 if np.nanmin(matrix) >= 0 else None,
            zmax=1,
            colorscale="Viridis",
            text=np.round(matrix, 2),
            texttemplate="%{text}",
            hovertemplate="%{y} × %{x}: %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(title={"text": title}, height=460, margin={"t": 50}, yaxis={"autorange": "reversed"})
    return fig


def overlap_histogram(report: ComparisonMetrics) -> go.Figure:
    """How many texts share 0..k of their k neighbours in A and in B (bars, labelled with the Jaccard)."""
    hist = report.overlap.histogram()
    fig = go.Figure(
        go.Bar(
            x=[f"{r.shared} ({r.jaccard:.2f})" for r in hist.itertuples()],
            y=hist["texts"],
            text=hist["texts"],
            textposition="outside",
        )
    )
    fig.update_layout(
        height=320,
        margin={"t": 30},
        xaxis_title=f"neighbours shared of {report.overlap.k} (Jaccard)",
        yaxis_title="texts",
    )
    return fig


def map_ranges(a: np.ndarray, b: np.ndarray) -> list[list[float]]:
    """One x and one y range covering both maps (m, 2), with a 5% margin, so they compare point by point."""
    both = np.vstack([a, b])  # (2m, 2)
    pad = 0.05 * (both.max(axis=0) - both.min(axis=0) + 1e-12)
    return [[both[:, j].min() - pad[j], both[:, j].max() + pad[j]] for j in (0, 1)]


SHARED_SCALE = 3.0  # two maps whose spreads differ less than this share their axes; more: each its own


def spread(xy: np.ndarray) -> float:
    """The larger side of a map's bounding box (m, 2)."""
    return float(np.ptp(np.asarray(xy, np.float64), axis=0).max()) if len(xy) else 0.0


def panel_ranges(a: np.ndarray, b: np.ndarray) -> tuple[Ranges, Ranges, bool]:
    """Axes for map A and for B aligned onto A, and whether they differ: one range for both (``map_ranges``)
    when their spreads are within ``SHARED_SCALE`` of each other, so they compare point by point; else each
    panel's own (issue 41: Procrustes' least-squares scale shrinks the map of an untrained model, unlike A, to a
    dot in A's range)."""
    sa, sb = spread(a), spread(b)
    if min(sa, sb) * SHARED_SCALE >= max(sa, sb):
        shared = map_ranges(a, b)
        return shared, shared, False
    return map_ranges(a, a), map_ranges(b, b), True


def aligned_map(
    xy: np.ndarray,
    hover: Sequence[str],
    title: str,
    *,
    colour: np.ndarray,
    categorical: bool,
    k: int,
    ranges: list[list[float]],
    lines: np.ndarray | None = None,
) -> go.Figure:
    """Scattergl of a map ``xy`` (m, 2), ``hover`` (m,) already safe for plotly (``text.plot_text``).

    ``colour`` (m,): categories (``categorical``) or each text's overlap@``k`` in [0, 1]; ``lines`` (m, 2)
    draws each point's displacement from there."""
    hover = np.asarray(hover, dtype=object)
    fig = go.Figure()
    if lines is not None:
        seg = np.full((3 * len(xy), 2), np.nan)  # (3m, 2): start, end, gap
        seg[0::3], seg[1::3] = lines, xy
        fig.add_trace(
            go.Scattergl(
                x=seg[:, 0],
                y=seg[:, 1],
                mode="lines",
                line={"width": 0.7, "color": "rgba(120,120,120,0.5)"},
                hoverinfo="skip",
                name="A → B",
            )
        )
    if categorical:
        cats = sorted(set(colour.tolist()))
        for cat, hue in zip(cats, category_palette(len(cats)), strict=True):
            mask = colour == cat
            fig.add_trace(
                go.Scattergl(
                    x=xy[mask, 0],
                    y=xy[mask, 1],
                    mode="markers",
                    name=plot_text(cat, 40),
                    text=hover[mask],
                    hovertemplate="%{text}<extra>%{fullData.name}</extra>",
                    marker={"size": 6, "opacity": 0.85, "color": hue},
                )
            )
    else:
        fig.add_trace(
            go.Scattergl(
                x=xy[:, 0],
                y=xy[:, 1],
                mode="markers",
                name="texts",
                text=hover,
                customdata=colour,
                hovertemplate=f"%{{text}}<br>overlap@{k} %{{customdata:.2f}}<extra></extra>",
                marker={
                    "size": 6,
                    "opacity": 0.85,
                    "color": colour,
                    "colorscale": "RdYlGn",
                    "cmin": 0,
                    "cmax": 1,
                    "showscale": True,
                    "colorbar": {"title": {"text": f"overlap@{k}"}},
                },
            )
        )
    fig.update_layout(
        title={"text": title},
        height=520,
        margin={"t": 50, "l": 10, "r": 10, "b": 10},
        xaxis={"range": ranges[0], "showticklabels": False},
        yaxis={"range": ranges[1], "showticklabels": False},
        legend={"itemsizing": "constant"},
    )
    return fig
