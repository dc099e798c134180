"""Sentence pairs: cosine per pair, gold vs predicted, Spearman; pooling modes and calibration side by side."""

from __future__ import annotations

import numpy as np
import streamlit as st

from isoscope.dashboard import ui
from isoscope.dashboard.figures.pairs import column_widths, pair_hover, pairs_table, rank_moves, scatter_panels
from isoscope.dashboard.services import embeddings
from isoscope.geometry.pairs import correlations, cosine_pairs

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Similarity",
    "title": "Sentence pairs",
    "icon": ":material/compare_arrows:",
    "order": 10,
    "teaches": "Cosine per pair against gold scores (Spearman), several poolings and a calibrator side by side.",
}

s = ui.settings()
st.title("Sentence-pair similarity")
st.caption(
    "Cosine similarity of each pair's sentence vectors. With gold scores, the Spearman correlation (x100) "
    "says how well the ranking of cosines follows human judgement. Calibration maps the vectors to a more "
    "isotropic space before the cosine; raw and calibrated are shown side by side."
)

pairs = ui.pairs_input("sim")
if pairs is None:
    st.stop()

poolings = st.multiselect(
    "Pooling modes to compare side by side",
    s.pooling_modes,
    default=[s.pooling],
    key=f"sim_poolings:{s.pooling}",  # a new sidebar pooling starts a new comparison from it
    help=ui.pooling_help(s.pooling_modes, "The sidebar pooling is the default; add more to compare."),
)
if not poolings:
    st.info("Choose at least one pooling mode.")
    st.stop()
cal = ui.calibration_controls("sim")
fit = ui.fit_texts("sim", pairs.texts) if cal.active else None

n = len(pairs)
vectors = {p: v.array for p, v in embeddings.embed_many(s.model, pairs.texts, poolings, s.max_length).items()}
calibrate = cal.active and fit is not None
fit_vectors = embeddings.embed_many(s.model, fit[0], poolings, s.max_length) if calibrate else {}  # one pass
# (column label, cosines) for every raw and calibrated variant
variants: list[tuple[str, np.ndarray]] = []
first_moved: tuple[str, np.ndarray, np.ndarray] | None = None  # first pooling: label, raw and calibrated cosines
for p in poolings:
    raw_cos = cosine_pairs(vectors[p][:n], vectors[p][n:])
    variants.append((p, raw_cos))
    if calibrate:
        result = ui.calibrate(cal, p, fit[0], vectors[p], fit_vectors=fit_vectors[p])
        if result is not None:
            z = result[1][0]  # (2n, k)
            variants.append((f"{p} + {cal.method}", cosine_pairs(z[:n], z[n:])))
            first_moved = first_moved or (f"{p} → {p} + {cal.method}", raw_cos, variants[-1][1])

table = pairs_table(pairs.to_frame(), variants)

correlated = pairs.scores is not None and n >= 3 and np.ptp(pairs.scores) > 0  # else Spearman is undefined (nan)
if pairs.scores is not None and not correlated:
    st.info("A correlation needs at least 3 pairs whose scores differ; showing the cosines instead.")
cols = st.columns(len(variants))
if not correlated:
    for col, (label, c) in zip(cols, variants, strict=True):
        col.metric(f"cosine ({label})", f"{c[0]:.3f}" if n == 1 else f"mean {c.mean():.3f}")
else:
    for col, (label, c) in zip(cols, variants, strict=True):
        r = correlations(c, pairs.scores)
        col.metric(f"Spearman ({label})", f"{r['spearman']:.1f}", help=f"Pearson {r['pearson']:.1f}")

    fig = scatter_panels(
        pairs.scores,
        variants,
        pair_hover(pairs),
        "gold score",
        "gold %{x:.2f}<br>cosine %{y:.3f}<br>%{text}<extra></extra>",
        y_title="cosine",
        margin={"t": 40, "b": 40},
    )
    st.subheader("Gold vs predicted")
    ui.chart(fig, "similarity_scatter")

if first_moved is not None and n > 1:
    moved_label, raw, calibrated = first_moved
    moved = rank_moves(table, raw, calibrated)
    st.subheader(f"Pairs whose rank moved most ({moved_label})")
    st.caption("Positive: the pair ranks as more similar after calibration.")
    st.dataframe(moved, width="stretch", hide_index=True)
    ui.download_table(moved, "similarity_rank_shift")

st.subheader("Pairs")
widths = {c: st.column_config.Column(width=w) for c, w in column_widths(table).items()}
st.dataframe(table, width="stretch", hide_index=True, column_config=widths)
ui.download_table(table, "similarity")
