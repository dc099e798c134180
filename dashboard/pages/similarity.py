"""Sentence pairs: cosine per pair, gold vs predicted, Spearman; pooling modes side by side."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from core.evaluate import correlations, cosine_pairs
from dashboard import services, ui

s = ui.settings()
st.title("Sentence-pair similarity")
st.caption(
    "Cosine similarity of each pair's sentence vectors; with gold scores, the Spearman correlation (x100) "
    "says how well the ranking of cosines follows human judgement."
)

pairs = ui.pairs_input("sim")
if pairs is None:
    st.stop()

poolings = st.multiselect(
    "Pooling modes to compare side by side",
    s.pooling_modes,
    default=[s.pooling],
    key="sim_poolings",
    help="The sidebar pooling is the default; add more to compare.",
)
if not poolings:
    st.info("Choose at least one pooling mode.")
    st.stop()

n = len(pairs)
vectors = services.embed_many(s.model, pairs.texts, poolings, s.max_length)
cosines = {p: cosine_pairs(vectors[p][:n], vectors[p][n:]) for p in poolings}

table = pairs.to_frame()
for p, c in cosines.items():
    table[f"cosine {p}"] = np.round(c, 4)

if pairs.scores is None:
    cols = st.columns(len(poolings))
    for col, p in zip(cols, poolings, strict=True):
        col.metric(f"cosine ({p})", f"{cosines[p][0]:.3f}" if n == 1 else f"mean {cosines[p].mean():.3f}")
else:
    scores = {p: correlations(c, pairs.scores) for p, c in cosines.items()}
    cols = st.columns(len(poolings))
    for col, p in zip(cols, poolings, strict=True):
        col.metric(f"Spearman ({p})", f"{scores[p]['spearman']:.1f}", help=f"Pearson {scores[p]['pearson']:.1f}")

    fig = make_subplots(rows=1, cols=len(poolings), subplot_titles=poolings, shared_yaxes=True)
    hover = [ui.plot_text(f"{a}  ||  {b}") for a, b in zip(pairs.sentence1, pairs.sentence2, strict=True)]
    for i, p in enumerate(poolings, start=1):
        fig.add_trace(
            go.Scattergl(
                x=pairs.scores,
                y=cosines[p],
                mode="markers",
                name=p,
                text=hover,
                hovertemplate="gold %{x:.2f}<br>cosine %{y:.3f}<br>%{text}<extra></extra>",
                marker={"size": 6, "opacity": 0.6},
            ),
            row=1,
            col=i,
        )
        fig.update_xaxes(title_text="gold score", row=1, col=i)
    fig.update_yaxes(title_text="cosine", row=1, col=1)
    fig.update_layout(height=420, showlegend=False, margin={"t": 40, "b": 40})
    st.subheader("Gold vs predicted")
    ui.chart(fig, "similarity_scatter")

st.subheader("Pairs")
st.dataframe(pd.DataFrame(table), width="stretch", hide_index=True)
ui.download_table(table, "similarity")
