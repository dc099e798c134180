"""Lexical overlap: does similarity just track how many words two sentences share?"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from isoscope.dashboard import ui
from isoscope.dashboard.services import embeddings, geometry
from isoscope.evaluate.similarity import cosine_pairs

s = ui.settings()
st.title("Lexical overlap")
st.caption(
    "BERT-flow reports that raw BERT similarity tracks the edit distance between the two sentences much more "
    "than human judgements do, and that calibration reduces this. Spearman (x100) of each similarity with the "
    "word-level edit distance (normalised by the longer sentence): the closer to 0, the less the similarity is "
    "about surface overlap."
)
pairs = ui.pairs_input("ovl")
if pairs is None or len(pairs) < 3:
    st.info("Load at least three pairs (the demo pairs, or an upload).")
    st.stop()
# whitening:K (K = 64 by default), not full whitening: the default fit (demo corpus + the 330 pair sentences,
# 666 vectors) is too small to whiten all 384 dimensions, and a default must not need a warning
cal = ui.calibration_controls("ovl", default="whitening:K", include_none=False)
fit = ui.fit_texts("ovl", pairs.texts)
if fit is None:
    st.stop()

n = len(pairs)
raw = embeddings.embed(s.model, pairs.texts, s.pooling, s.max_length).array  # (2n, d)
sims = {"gold": pairs.scores, "raw cosine": cosine_pairs(raw[:n], raw[n:])}
result = ui.calibrate(cal, s.pooling, fit[0], raw)
if result is not None:
    z = result[1][0]
    sims[f"{cal.method} cosine"] = cosine_pairs(z[:n], z[n:])
summary, table = geometry.overlap(tuple(pairs.sentence1), tuple(pairs.sentence2), sims)

cols = st.columns(len(summary["spearman"]))
for col, (name, rho) in zip(cols, summary["spearman"].items(), strict=True):
    col.metric(f"Spearman with edit distance: {name}", f"{rho:.1f}")
small = summary["small_edit"]
st.caption(
    f"Among the {small['n_pairs']} pairs that differ by at most {small['max_edits']} words: "
    + ", ".join(f"{k} {v:.1f}" for k, v in small["spearman"].items())
)

names = [k for k in sims if sims[k] is not None]
fig = make_subplots(rows=1, cols=len(names), subplot_titles=names)
hover = [ui.plot_text(f"{a}  ||  {b}") for a, b in zip(pairs.sentence1, pairs.sentence2, strict=True)]
for i, name in enumerate(names, start=1):
    fig.add_trace(
        go.Scattergl(
            x=table["edit_distance"],
            y=table[name],
            mode="markers",
            name=name,
            text=hover,
            hovertemplate="edit distance %{x:.2f}<br>%{y:.3f}<br>%{text}<extra></extra>",
            marker={"size": 6, "opacity": 0.6},
        ),
        row=1,
        col=i,
    )
    fig.update_xaxes(title_text="word edit distance", row=1, col=i)
fig.update_layout(height=420, showlegend=False)
ui.chart(fig, "lexical_overlap")
st.dataframe(table, width="stretch", hide_index=True)
ui.download_table(table, "lexical_overlap")
