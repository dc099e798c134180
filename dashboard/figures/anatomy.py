"""The Embedding anatomy page's figures and tables: the parameter budget, the presets, the input
embedding's spectrum and the rank-k shrink curve."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from isoscope.anatomy.budget import ParameterBudget
from isoscope.anatomy.spectrum import EmbeddingSpectrum

PRESET_COLUMNS = (
    "name",
    "vocab_size",
    "hidden_size",
    "num_layers",
    "input_embedding_size",
    "output_embedding_size",
    "tied",
    "pretraining_total",
    "finetuning_total",
    "embedding_share_pretraining",
    "embedding_share_finetuning",
)


def budget_bars(budget: ParameterBudget) -> go.Figure:
    """Stacked parameters per group, pre-training (with the output embedding) and fine-tuning (without)."""
    groups = pd.DataFrame(
        {
            "stage": ["pre-training"] * 3 + ["fine-tuning"] * 2,
            "group": ["input embedding", "transformer", "output embedding", "input embedding", "transformer"],
            "parameters": [
                budget.input_embedding,
                budget.transformer,
                budget.output_embedding,
                budget.input_embedding,
                budget.transformer,
            ],
        }
    )
    bar = px.bar(groups, x="stage", y="parameters", color="group", text_auto=".3s")
    bar.update_layout(height=380)
    return bar


def presets_table(budgets: Sequence[ParameterBudget]) -> pd.DataFrame:
    """One row per architecture: its sizes, totals and embedding shares."""
    return pd.DataFrame([b.to_dict() for b in budgets])[list(PRESET_COLUMNS)]


def components_table(budget: ParameterBudget) -> pd.DataFrame:
    """Every component of the architecture with its group and parameter count."""
    return pd.DataFrame([{"component": k, "group": g, "parameters": n} for k, (g, n) in budget.components.items()])


def spectrum_figure(spectrum: EmbeddingSpectrum) -> go.Figure:
    """Singular values (log) and the energy kept at rank k (right axis) of the input embedding table."""
    spec = go.Figure()
    spec.add_trace(go.Scatter(y=spectrum.singular_values, name="singular value", mode="lines"))
    spec.add_trace(go.Scatter(y=spectrum.energy, name="energy kept at rank k", mode="lines", yaxis="y2"))
    spec.update_layout(
        height=360,
        xaxis_title="k",
        yaxis={"title": "singular value", "type": "log"},
        # issue 26: the right axis read garbled (crammed labels, top ticks 0): linear and explicit, in percent
        yaxis2={
            "title": "energy kept",
            "overlaying": "y",
            "side": "right",
            "type": "linear",
            "range": [0, 1.02],
            "tickmode": "array",
            "tickvals": [0, 0.25, 0.5, 0.75, 1.0],
            "tickformat": ".0%",
            "showgrid": False,
        },
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        margin={"r": 70},
    )
    return spec


def shrink_figure(curve: pd.DataFrame, scored: bool) -> go.Figure:
    """STS Spearman (with ``scored`` pairs) and neighbour overlap (%) against the rank k (log axis)."""
    fig = go.Figure()
    if scored:
        fig.add_trace(go.Scatter(x=curve["k"], y=curve["spearman"], name="Spearman", mode="lines+markers"))
    ov = next(col for col in curve.columns if col.startswith("overlap_at_"))
    fig.add_trace(go.Scatter(x=curve["k"], y=curve[ov] * 100, name="neighbour overlap@10 (%)", mode="lines+markers"))
    fig.update_layout(height=380, xaxis_title="rank k", xaxis_type="log")
    return fig
