"""The migration curve as a plotly figure: a kept share against fit pairs (log axis), one line per adapter and
direction, its 95% interval as error bars, the threshold and full re-embedding (1.0) as dashed lines.

Takes the frame of ``MigrationResult.curve()`` and returns a ``plotly.graph_objects.Figure``; the report and the
dashboard draw it as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from isoscope.errors import InputError

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

MEASURES: dict[str, str] = {
    "recovered": "recovered fraction (c - a) / (b - a)",
    "c/b": "kept of the new model's score, c / b",
    "agreement": "label-free: share of the new model's top 10 returned",
}
PALETTE = ("#0b5cad", "#d1495b", "#2a9d8f", "#e9a23b", "#6d597a", "#5c946e", "#8d6a9f", "#3d5a80")
DASH = {"new->legacy": "solid", "old->new": "dot"}


def _series(frame: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Mean over seeds per (method, direction, source, pairs), with the widest interval of its seeds."""
    cols = {"value": (measure, "mean")}
    if measure != "agreement":
        cols.update({"low": (f"{measure} low", "min"), "high": (f"{measure} high", "max")})
    return frame.groupby(["method", "direction", "source", "pairs"], sort=True).agg(**cols).reset_index()


def curve_figure(frame: pd.DataFrame, measure: str, *, threshold: float | None = None, title: str = "") -> go.Figure:
    """``measure`` (``recovered``, ``c/b`` or ``agreement``) of every curve point of ``frame`` against its fit
    pairs."""
    import plotly.graph_objects as go

    if measure not in MEASURES:
        raise InputError(f"unknown curve measure '{measure}'; choose {', '.join(MEASURES)}")
    data = _series(frame, measure)
    fig = go.Figure()
    keys = list(dict.fromkeys(zip(data["method"], data["direction"], strict=True)))
    for i, (method, direction) in enumerate(keys):
        part = data[(data["method"] == method) & (data["direction"] == direction)]
        for source, marker in (("corpus", "circle"), ("generic", "diamond")):
            rows = part[part["source"] == source]
            if rows.empty:
                continue
            error = None
            if "low" in rows:
                error = {
                    "type": "data",
                    "symmetric": False,
                    "array": (rows["high"] - rows["value"]).to_numpy(),
                    "arrayminus": (rows["value"] - rows["low"]).to_numpy(),
                    "thickness": 1,
                }
            fig.add_trace(
                go.Scatter(
                    x=rows["pairs"],
                    y=rows["value"],
                    error_y=error,
                    mode="lines+markers" if source == "corpus" else "markers",
                    name=f"{method} ({direction})" + (", generic texts" if source == "generic" else ""),
                    legendgroup=f"{method} ({direction})",
                    line={"color": PALETTE[i % len(PALETTE)], "dash": DASH.get(direction, "solid")},
                    marker={"symbol": marker, "size": 8 if source == "corpus" else 11},
                    hovertemplate=f"{method} ({direction})<br>%{{x:,}} pairs<br>{measure} %{{y:.3f}}<extra></extra>",
                )
            )
    fig.add_hline(
        y=1.0,
        line={"color": "#57606a", "dash": "dash", "width": 1},
        annotation_text="full re-embedding",
        annotation_position="top left",
    )
    if threshold is not None and measure != "agreement" and np.isfinite(threshold):
        fig.add_hline(
            y=threshold,
            line={"color": "#9a6700", "dash": "dot", "width": 1},
            annotation_text=f"threshold {threshold:g}",
            annotation_position="bottom left",
        )
    fig.update_layout(
        title={"text": title or "Kept against fit pairs"},
        xaxis={"title": {"text": "fit pairs (log scale)"}, "type": "log"},
        yaxis={"title": {"text": MEASURES[measure]}},
        legend={"title": {"text": "adapter (direction)"}, "font": {"size": 12}},
        font={"size": 13},
        margin={"l": 70, "r": 20, "t": 60, "b": 60},
        height=460,
    )
    return fig
