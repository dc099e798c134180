"""The Retrieval page's figures and tables, pure functions of a ``RetrievalResult`` / ``ClusteringResult``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from isoscope.dashboard.text import plot_text
from isoscope.retrieval.clustering import ClusteringResult
from isoscope.retrieval.options import METRICS
from isoscope.retrieval.run import RetrievalResult

GEOMETRY_LABELS = {"avg_cosine": "avg cosine", "isoscore": "IsoScore", "hubness_skew": "hubness skew"}


def variant_table(result: RetrievalResult, metric: str) -> pd.DataFrame:
    """One row per variant: the metrics, ``metric``'s change vs raw with its interval, p and verdict, geometry."""
    table = result.table(metric).rename(columns=GEOMETRY_LABELS)
    return table.round({c: 4 for c in table.columns if table[c].dtype.kind == "f"})


def per_query_scatter(result: RetrievalResult, variant: str, metric: str) -> go.Figure:
    """Each query's ``metric`` under raw (across) and under ``variant`` (up); green where it gained (above the
    diagonal for a metric where higher is better), red where it lost."""
    frame = result.changes(variant, metric)
    colour = np.sign(frame["change"] * METRICS[metric].sign).map({1.0: "#109618", -1.0: "#dc3912", 0.0: "#888888"})
    fig = go.Figure(
        go.Scatter(
            x=frame["raw"],
            y=frame["fixed"],
            mode="markers",
            marker={"color": colour, "size": 8, "opacity": 0.75},
            text=[plot_text(q) for q in frame["query"]],
            hovertemplate="%{text}<br>raw %{x:.3f} → %{y:.3f}<extra></extra>",
        )
    )
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line={"dash": "dot", "color": "#999"}, hoverinfo="skip"))
    fig.update_layout(
        xaxis={"title": f"{metric}, raw", "range": [-0.03, 1.03]},
        yaxis={"title": f"{metric}, {variant}", "range": [-0.03, 1.03]},
        showlegend=False,
        height=430,
        margin={"t": 30},
    )
    return fig


def moved_queries(result: RetrievalResult, variant: str, metric: str, m: int = 5) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``m`` queries that gained most and the ``m`` that lost most (only those that moved; a gain: a change in
    the metric's direction, ``METRICS``)."""
    frame = result.changes(variant, metric)  # largest gain first
    sign = METRICS[metric].sign
    gained = frame[frame["change"] * sign > 0].head(m)
    by_gain = lambda column: column * sign if column.name == "change" else column  # noqa: E731
    lost = frame[frame["change"] * sign < 0].sort_values(["change", "query_id"], key=by_gain, kind="stable").head(m)
    return gained.reset_index(drop=True), lost.reset_index(drop=True)


def clustering_figure(result: ClusteringResult) -> go.Figure:
    """V-measure per variant, mean over seeds with its standard deviation."""
    table = result.table()
    fig = go.Figure(
        go.Bar(
            x=table["variant"],
            y=table["v_measure"],
            error_y={"type": "data", "array": table["v_measure_sd"]},
            hovertemplate="%{x}: %{y:.1f}<extra></extra>",
        )
    )
    fig.update_layout(yaxis_title="V-measure x100 (mean ± sd over seeds)", height=360, margin={"t": 30})
    return fig
