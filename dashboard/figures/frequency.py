"""The Frequency bias page's figure: every token's norm against its frequency rank, per stage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from isoscope.dashboard.text import plot_text

NORM_TITLE = "token vector norm"
RANK_TITLE = "log10 frequency rank (0 = most frequent)"


def norm_vs_rank(tokens: pd.DataFrame) -> go.Figure:
    """Tokens (token, rank, norm, count, knn_dist, bucket, stage columns): norm against log10 frequency rank,
    coloured by bucket, one panel per stage (raw, calibrated); token text escaped for the hover."""
    tokens = tokens.copy()
    tokens["log10 rank"] = np.log10(tokens["rank"].astype(float) + 1)
    tokens["hover"] = [plot_text(t, 40) for t in tokens["token"]]
    fig = px.scatter(
        tokens,
        x="log10 rank",
        y="norm",
        color="bucket",
        facet_col="stage",
        hover_name="hover",
        hover_data={"count": True, "knn_dist": ":.3f", "log10 rank": False, "bucket": False},
        render_mode="webgl",
    )
    # each panel on its own scale, so each names its axes (issue 41: the calibrated panel had no y label)
    fig.update_yaxes(matches=None, showticklabels=True, title_text=NORM_TITLE)
    fig.update_xaxes(title_text=RANK_TITLE)
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))  # "raw", not "stage=raw"
    fig.update_layout(height=440)
    return fig


def buckets_table(buckets: pd.DataFrame) -> pd.DataFrame:
    """The per-bucket table narrow enough to read whole: numbers to 3 decimals (it was cut off on the right)."""
    return buckets.round(3)
