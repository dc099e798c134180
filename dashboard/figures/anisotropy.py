"""The Anisotropy page's figures: pairwise cosines and singular-value spectra of each space, and every
metric per layer."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go


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
