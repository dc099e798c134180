"""Lexical overlap: does similarity just track how many words two sentences share?"""

from __future__ import annotations

import streamlit as st

from isoscope.dashboard import ui
from isoscope.dashboard.figures.pairs import pair_hover, scatter_panels
from isoscope.dashboard.services import embeddings, geometry
from isoscope.geometry.pairs import cosine_pairs

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Geometry",
    "title": "Lexical overlap",
    "icon": ":material/join_inner:",
    "order": 30,
    "teaches": "Does similarity just count shared words? Gold vs raw vs calibrated.",
}

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

panels = [(name, table[name]) for name in sims if sims[name] is not None]
fig = scatter_panels(
    table["edit_distance"],
    panels,
    pair_hover(pairs),
    "word edit distance",
    "edit distance %{x:.2f}<br>%{y:.3f}<br>%{text}<extra></extra>",
    shared_y=False,  # gold scores 0-5 next to cosines: each panel its own range and title
)
ui.chart(fig, "lexical_overlap")
st.dataframe(table, width="stretch", hide_index=True)
ui.download_table(table, "lexical_overlap")
