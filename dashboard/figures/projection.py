"""The Projection map page's figures: a 2-D or 3-D map of a sample of the corpus, coloured by a column or a
measure, with search hits ringed, and the corpus rows a lasso or box selection picked on it."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

MAX_CATEGORIES = 20  # more distinct values: the rarest are drawn together as "other"


def meta_colours(column: pd.Series) -> tuple[np.ndarray, bool]:
    """Colour values of a metadata column (n,) and whether they are categories: a numeric column with more
    than ``MAX_CATEGORIES`` values is a scale, anything else categories (missing values named)."""
    num = pd.to_numeric(column, errors="coerce")
    if num.notna().all() and num.nunique() > MAX_CATEGORIES:
        return num.to_numpy(np.float64), False
    return column.astype(object).fillna("(missing)").astype(str).to_numpy(), True


def map_figure(
    coords: np.ndarray,
    rows: np.ndarray,
    hover: Sequence[str],
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
        if len(keep) < len(counts):
            groups.append(("other", ~np.isin(values, keep)))
        for cat, mask in groups:
            fig.add_trace(
                points(
                    mask,
                    name=html.escape(str(cat)[:40]),
                    hovertemplate="%{text}<extra>%{fullData.name}</extra>",
                    marker={"size": size, "opacity": 0.8},
                )
            )
    else:
        fig.add_trace(
            points(
                everything,
                name=html.escape(colour_name),
                hovertemplate="%{text}<br>value %{marker.color:.4g}<extra></extra>",
                marker={
                    "size": size,
                    "opacity": 0.85,
                    "color": colour[rows],
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


def selected_rows(fig: go.Figure, event: object) -> set[int]:
    """The corpus rows a lasso/box ``event`` of ``st.plotly_chart`` selected on ``fig`` (rows in customdata)."""
    selected: set[int] = set()
    for point in (event or {}).get("selection", {}).get("points", []):
        # (trace, index in trace) -> the corpus row kept in that trace's customdata
        curve, index = point.get("curve_number"), point.get("point_index", point.get("point_number"))
        if isinstance(curve, int) and isinstance(index, int) and 0 <= curve < len(fig.data):
            rows = fig.data[curve].customdata
            if rows is not None and 0 <= index < len(rows):
                selected.add(int(np.ravel(rows[index])[0]))
    return selected
