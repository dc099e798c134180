"""Spearman tables of pooling x calibration (Calibration and Pooling explorer pages), the alignment and
uniformity scatter, and the flow's training curve."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go


def spearman_grid(table: pd.DataFrame, poolings: Sequence[str], calibrations: Sequence[str]) -> pd.DataFrame:
    """``table`` (pooling, calibration, spearman rows) as a pooling x calibration grid in the given orders."""
    grid = table.pivot(index="pooling", columns="calibration", values="spearman")
    return grid.reindex(index=list(poolings), columns=list(calibrations))


def spearman_heatmap(grid: pd.DataFrame, height: int, colour_label: str | None = None) -> go.Figure:
    """A ``spearman_grid`` with its numbers in the cells."""
    labels = {"color": colour_label} if colour_label else {}
    fig = px.imshow(grid, text_auto=".1f", color_continuous_scale="Viridis", aspect="auto", labels=labels)
    fig.update_layout(height=height)
    return fig


def alignment_uniformity(table: pd.DataFrame) -> go.Figure:
    """Alignment against uniformity (Wang & Isola 2020) of every pooling, one colour and symbol per calibration."""
    scatter = px.scatter(
        table, x="uniformity", y="alignment", color="calibration", hover_name="pooling", symbol="calibration"
    )
    scatter.update_layout(height=420)
    return scatter


def flow_training(history: pd.DataFrame, gaussian_bits_per_dim: float) -> go.Figure:
    """Bits per dimension per epoch (``epoch``, ``bits_per_dim`` columns) against the Gaussian fit's."""
    fig = go.Figure(go.Scatter(x=history["epoch"], y=history["bits_per_dim"], mode="lines+markers"))
    fig.add_hline(
        y=gaussian_bits_per_dim,
        line_dash="dot",
        annotation_text="Gaussian fit (untrained flow = whitening)",
    )
    fig.update_layout(height=320, xaxis_title="epoch", yaxis_title="bits / dim (lower is better)")
    return fig
