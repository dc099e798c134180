"""The Precision & size page's figure: one measure of every variant against its bytes per vector."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from isoscope.evaluate.sweep import SweepResult

MEASURES = {
    "overlap_at_k": "neighbour overlap@k with fp32 (1 = the same neighbours)",
    "spearman": "STS Spearman x100 on the pairs",
    "isoscore": "IsoScore (1 = every direction used equally)",
    "avg_cosine": "average cosine of random pairs (0 = isotropic)",
    "effective_rank": "effective rank (directions the spread uses)",
}
MARKERS = {"fp32": "circle", "int8-model": "diamond", "int8-vectors": "square", "binary": "x"}
FAMILIES = (("truncate", "first k dims"), ("pca", "PCA to k"))


def sweep_figure(result: SweepResult, measure: str) -> go.Figure:
    """``measure`` of the first-k and PCA-k curves and of the single variants, bytes per vector on a log axis."""
    table = result.table
    fig = go.Figure()
    for family, name in FAMILIES:
        rows = result.family(family)
        fig.add_trace(
            go.Scatter(
                x=rows["bytes_per_vector"],
                y=rows[measure],
                mode="lines+markers",
                name=name,
                text=rows["variant"],
                hovertemplate="%{text}<br>%{x:.0f} bytes<br>%{y:.3f}",
            )
        )
    for variant, symbol in MARKERS.items():
        row = table[table["variant"] == variant]
        if len(row):
            fig.add_trace(
                go.Scatter(
                    x=row["bytes_per_vector"],
                    y=row[measure],
                    mode="markers",
                    name=variant,
                    marker={"symbol": symbol, "size": 12},
                    hovertemplate=f"{variant}<br>%{{x:.0f}} bytes<br>%{{y:.3f}}",
                )
            )
    fig.update_layout(
        xaxis={"type": "log", "title": "bytes per vector (log)"},
        yaxis_title=MEASURES[measure],
        height=430,
        margin={"t": 30},
    )
    return fig


def smallest_kept(table: pd.DataFrame, overlap: float = 0.9) -> str | None:
    """The line naming the smallest variant that keeps at least ``overlap`` neighbour overlap (None: none does)."""
    best = table[(table["overlap_at_k"] >= overlap)].sort_values("bytes_per_vector")
    if not len(best):
        return None
    small = best.iloc[0]
    ratio = float(table.loc[table["variant"] == "fp32", "bytes_per_vector"].iloc[0]) / float(small["bytes_per_vector"])
    return (
        f"Smallest variant keeping at least {overlap:.0%} neighbour overlap: **{small['variant']}**, "
        f"{small['bytes_per_vector']:.0f} bytes per vector ({ratio:.0f}x smaller than fp32)"
        + ("" if np.isnan(small["spearman"]) else f", Spearman {small['spearman']:.2f}")
        + "."
    )
