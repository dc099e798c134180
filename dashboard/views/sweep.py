"""Precision & size: what the geometry and the STS score become as the vectors shrink (isoscope.evaluate.sweep)."""

from __future__ import annotations

import streamlit as st

from isoscope.dashboard import ui
from isoscope.dashboard.figures.sweep import MEASURES, smallest_kept, sweep_figure
from isoscope.dashboard.services import costs
from isoscope.dashboard.services import sweep as sweep_service
from isoscope.dashboard.services.keyed import texts as keyed_texts
from isoscope.errors import InputError, first_line
from isoscope.evaluate.sweep import default_dims

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Geometry",
    "title": "Precision & size",
    "icon": ":material/compress:",
    "order": 40,
    "teaches": "How far the vectors can shrink (int8, bits, fewer dimensions) before neighbours and scores change.",
}

s = ui.settings()
st.title("Precision & size")
st.caption(
    "How much can the vectors shrink? The corpus below is encoded by the sidebar's model in fp32 and in int8, then "
    "stored as fp32, as int8 codes per dimension, as one bit per dimension, cut to its first k dimensions "
    "(Matryoshka-style: a model not trained for it loses most here) or projected on its top-k principal axes. "
    "Each variant is scored against the fp32 space: neighbour overlap@k, the STS Spearman of the pairs, IsoScore, "
    "average cosine, effective rank, and its bytes per vector."
)
space = ui.space()
corpus = ui.space_corpus("sweep")
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
pair_vectors = None
if pairs is not None and not space.is_model:  # the pairs' vectors are looked up in the file by text
    try:
        pair_vectors = ui.space_vectors(pairs.texts)
    except InputError as exc:
        st.caption(f"The Spearman column stays empty: {ui.literal(first_line(exc))}")
        pairs = None
c1, c2 = st.columns(2)
grid = default_dims(s.hidden_size if space.is_model else space.dims)
dims = c1.multiselect("Dimensions k (first-k and PCA-k)", grid, default=list(grid), key="sweep_dims")
ui.clamp("sweep_k", 1, max(len(corpus.texts) - 1, 1))
k = int(
    c2.number_input("Neighbours k", 1, max(len(corpus.texts) - 1, 1), min(10, len(corpus.texts) - 1), key="sweep_k")
)
request = (
    keyed_texts(corpus.texts).key,
    None if pairs is None else len(pairs),
    s.model if space.is_model else space.key,
    s.pooling,
    s.max_length,
    tuple(dims),
    k,
)
if space.is_model:  # the int8 copy's build (once per model) and both passes, when not cached
    swept = list(corpus.texts) + (list(pairs.texts) if pairs is not None else [])
    ui.estimate(costs.sweep(s.model, keyed_texts(swept), s.pooling, s.max_length))
if not ui.run_button("Run the sweep", "sweep_run", request, type="primary"):
    if space.is_model:
        st.info("Press **Run the sweep**: it encodes the texts with both models (cached) and measures every variant.")
    else:
        st.info(
            "Press **Run the sweep**: it measures every variant of the file's vectors (no int8-model row: there is "
            "no model to quantise)."
        )
    st.stop()
try:
    if space.is_model:
        result = sweep_service.sweep(
            s.model, keyed_texts(corpus.texts), pairs, s.pooling, s.max_length, tuple(sorted(dims)), k
        )
    else:
        result = sweep_service.sweep_vectors(space.vectors(), pairs, pair_vectors, tuple(sorted(dims)), k)
except InputError as exc:
    ui.user_error(exc)
    st.stop()
ui.show_warnings(result.warnings)

table = result.table
st.subheader(f"{len(corpus.texts):,} texts, {ui.space_name()}, overlap@{result.k}")
measure = st.radio("Measure", list(MEASURES), horizontal=True, key="sweep_measure", format_func=lambda m: MEASURES[m])
fig = sweep_figure(result, measure)
ui.chart(fig, f"sweep_{measure}")
if measure == "spearman" and table["spearman"].isna().all():
    st.caption("No scored pairs: load the demo pairs or a file with scores to fill this curve.")

shown = table.copy()
shown["overlap_at_k"] = shown["overlap_at_k"].round(3)
st.dataframe(shown, width="stretch", hide_index=True)
ui.download_table(table, "precision_sweep")
if (kept := smallest_kept(table)) is not None:
    st.caption(kept)
