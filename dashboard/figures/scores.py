"""Spearman tables of pooling x calibration (Calibration and Pooling explorer pages), the alignment and
uniformity scatter, and the flow's training curve."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

CLEAN = "clean fit vectors"


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


def flow_training(
    history: pd.DataFrame,
    gaussian_bits_per_dim: float,
    *,
    trained_bits_per_dim: float | None = None,
    noise_std: float | None = None,
) -> go.Figure:
    """The flow's training loss per epoch (``epoch``, ``bits_per_dim`` columns) and, like with like, the untrained
    flow (a Gaussian fit = whitening) against the trained one, both on the clean fit vectors.

    The loss is measured on the noised training vectors (``noise_std``), so it sits above the clean line at every
    epoch (issue 41: the chart set one beside the other unlabelled); the chart says which is which, and the
    trained flow's clean bits/dim (``trained_bits_per_dim``) is the point to compare with the dotted line."""
    noised = f"noised training vectors (noise {noise_std:g})" if noise_std is not None else "noised training vectors"
    fig = go.Figure(
        go.Scatter(
            x=history["epoch"],
            y=history["bits_per_dim"],
            mode="lines+markers",
            name=f"training loss, {noised}",
        )
    )
    fig.add_hline(
        y=gaussian_bits_per_dim,
        line_dash="dot",
        annotation_text=f"untrained flow = whitening, {CLEAN}",
    )
    if trained_bits_per_dim is not None:
        fig.add_trace(
            go.Scatter(
                x=[history["epoch"].iloc[-1]] if len(history) else [0],
                y=[trained_bits_per_dim],
                mode="markers",
                marker={"symbol": "star", "size": 14},
                name=f"trained flow, {CLEAN}",
            )
        )
    fig.update_layout(
        height=340,
        xaxis_title="epoch",
        yaxis_title="bits / dim (lower is better)",
        legend={"orientation": "h", "y": -0.25},
        showlegend=True,
    )
    return fig
