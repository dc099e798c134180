"""Precision & size: what the geometry and the STS score become as the vectors shrink (isoscope.geometry.sweep)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from isoscope.dashboard import ui
from isoscope.dashboard.services import sweep as sweep_service
from isoscope.dashboard.services.keyed import texts as keyed_texts
from isoscope.errors import InputError
from isoscope.geometry.sweep import default_dims

MEASURES = {
    "overlap_at_k": "neighbour overlap@k with fp32 (1 = the same neighbours)",
    "spearman": "STS Spearman x100 on the pairs",
    "isoscore": "IsoScore (1 = every direction used equally)",
    "avg_cosine": "average cosine of random pairs (0 = isotropic)",
    "effective_rank": "effective rank (directions the spread uses)",
}
MARKERS = {"fp32": "circle", "int8-model": "diamond", "int8-vectors": "square", "binary": "x"}

s = ui.settings()
st.title("Precision & size")
st.caption(
    "How much can the vectors shrink? The corpus below is encoded by the sidebar's model in fp32 and in int8, then "
    "stored as fp32, as int8 codes per dimension, as one bit per dimension, cut to its first k dimensions "
    "(Matryoshka-style: a model not trained for it loses most here) or projected on its top-k principal axes. "
    "Each variant is scored against the fp32 space: neighbour overlap@k, the STS Spearman of the pairs, IsoScore, "
    "average cosine, effective rank, and its bytes per vector."
)
corpus = ui.corpus_input("sweep")
if corpus is None:
    st.stop()
if len(corpus.texts) < 3:
    st.info("The sweep needs at least 3 texts; load a larger corpus.")
    st.stop()
with st.expander("Pairs for the STS column", expanded=False):
    pairs = ui.pairs_input("sweep_pairs")
if pairs is not None and (pairs.scores is None or len(pairs) < 3):
    st.caption("These pairs have no gold scores (or fewer than 3): the Spearman column stays empty.")
    pairs = None
c1, c2 = st.columns(2)
grid = default_dims(s.hidden_size)
dims = c1.multiselect("Dimensions k (first-k and PCA-k)", grid, default=list(grid), key="sweep_dims")
ui.clamp("sweep_k", 1, max(len(corpus.texts) - 1, 1))
k = int(
    c2.number_input("Neighbours k", 1, max(len(corpus.texts) - 1, 1), min(10, len(corpus.texts) - 1), key="sweep_k")
)
request = (
    keyed_texts(corpus.texts).key,
    None if pairs is None else len(pairs),
    s.model,
    s.pooling,
    s.max_length,
    tuple(dims),
    k,
)
if not ui.run_button("Run the sweep", "sweep_run", request, type="primary"):
    st.info("Press **Run the sweep**: it encodes the texts with both models (cached) and measures every variant.")
    st.stop()
try:
    result = sweep_service.sweep(
        s.model, keyed_texts(corpus.texts), pairs, s.pooling, s.max_length, tuple(sorted(dims)), k
    )
except InputError as exc:
    ui.user_error(exc)
    st.stop()
ui.show_warnings(result.warnings)

table = result.table
st.subheader(f"{len(corpus.texts):,} texts, {s.pooling} pooling, overlap@{result.k}")
measure = st.radio("Measure", list(MEASURES), horizontal=True, key="sweep_measure", format_func=lambda m: MEASURES[m])
fig = go.Figure()
for family, name in (("truncate", "first k dims"), ("pca", "PCA to k")):
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
ui.chart(fig, f"sweep_{measure}")
if measure == "spearman" and table["spearman"].isna().all():
    st.caption("No scored pairs: load the demo pairs or a file with scores to fill this curve.")

shown = table.copy()
shown["overlap_at_k"] = shown["overlap_at_k"].round(3)
st.dataframe(shown, width="stretch", hide_index=True)
ui.download_table(table, "precision_sweep")
best = table[(table["overlap_at_k"] >= 0.9)].sort_values("bytes_per_vector")
if len(best):
    small = best.iloc[0]
    ratio = float(table.loc[table["variant"] == "fp32", "bytes_per_vector"].iloc[0]) / float(small["bytes_per_vector"])
    st.caption(
        f"Smallest variant keeping at least 90% neighbour overlap: **{small['variant']}**, "
        f"{small['bytes_per_vector']:.0f} bytes per vector ({ratio:.0f}x smaller than fp32)"
        + ("" if np.isnan(small["spearman"]) else f", Spearman {small['spearman']:.2f}")
        + "."
    )
