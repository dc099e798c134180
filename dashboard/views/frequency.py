"""Frequency bias: do frequent tokens sit near the origin and rare ones in sparse regions (BERT-flow Table 1)?"""

from __future__ import annotations

import streamlit as st

from isoscope.dashboard import ui
from isoscope.dashboard.figures.frequency import buckets_table, norm_vs_rank
from isoscope.dashboard.services import geometry
from isoscope.dashboard.services.keyed import texts as keyed_texts
from isoscope.errors import InputError

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Geometry",
    "title": "Frequency bias",
    "icon": ":material/bar_chart:",
    "order": 20,
    "teaches": "Frequent tokens sit near the origin and close together; rare ones far out and apart.",
}

s = ui.settings()
st.title("Word-frequency bias")
ui.needs_model("Frequency bias")
st.caption(
    "BERT-flow (Li et al. 2020) found that frequent tokens have small norms and sit close together, while rare "
    "tokens are far from the origin and from each other, so the space is shaped by frequency rather than "
    "meaning. Token frequencies are counted with the model's tokenizer over the corpus; each token's L2 norm "
    "and mean distance to its k nearest neighbours are grouped by frequency rank, raw and after calibration."
)
corpus = ui.corpus_input("freq")
if corpus is None:
    st.stop()
c1, c2 = st.columns(2)
space = c1.radio(
    "Token vectors",
    ["static", "contextual"],
    horizontal=True,
    key="freq_space",
    help="static: rows of the input embedding matrix; contextual: token vectors of the last layer in context.",
)
CALIBRATIONS = ("whitening", "sn+abtt:3", "flow", "none")
calibration = c2.selectbox("Calibration", CALIBRATIONS, key="freq_cal", help=ui.calibration_help(CALIBRATIONS))
try:
    result = geometry.frequency_result(s.model, keyed_texts(corpus.texts), s.max_length, calibration, (space,))
except InputError as exc:
    ui.user_error(exc)
    st.stop()

corr = result.correlations
cols = st.columns(len(corr))
for col, (_, row) in zip(cols, corr.iterrows(), strict=True):
    col.metric(
        f"Spearman(norm, count) {row['stage']}",
        f"{row['spearman_norm_count']:.1f}",
        help="Rank correlation of a token's norm with its frequency (x100); negative: frequent = small norm.",
    )

st.subheader("Norm vs frequency rank")
ui.chart(norm_vs_rank(result.tokens), "frequency_norm")

st.subheader("By frequency bucket")
st.dataframe(buckets_table(result.buckets), width="stretch", hide_index=True)
ui.download_table(result.buckets, "frequency_buckets")
with st.expander("Per-token table"):
    st.dataframe(result.tokens, width="stretch", hide_index=True)
    ui.download_table(result.tokens, "frequency_tokens")
