"""Pooling explorer: STS for every pooling mode and every layer, raw and calibrated."""

from __future__ import annotations

import streamlit as st

from isoscope.dashboard import ui
from isoscope.dashboard.figures.scores import alignment_uniformity, spearman_grid, spearman_heatmap
from isoscope.dashboard.services import anatomy
from isoscope.dashboard.services.keyed import pairs_key
from isoscope.errors import InputError

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Model anatomy",
    "title": "Pooling explorer",
    "icon": ":material/layers:",
    "order": 10,
    "teaches": "CLS, mean, max, layer averages and every single layer, scored on the same pairs.",
}

s = ui.settings()
st.title("Pooling explorer")
ui.needs_model("The Pooling explorer")
st.caption(
    "How a sequence of token vectors becomes one sentence vector matters as much as the model (BERT-flow, "
    "Sentence-T5). Every pooling mode and every layer's mean, from one forward pass, scored by Spearman (x100) "
    "on the pairs; calibrators are fitted per pooling on the pairs' own sentences (no labels)."
)
pairs = ui.scored_pairs_input("pool", "The explorer needs")
OFFERED = ("whitening", "whitening:64", "sn", "abtt:3", "sn+abtt:3", "flow")
methods = st.multiselect(
    "Calibrators", OFFERED, default=["whitening:64"], key="pool_methods", help=ui.calibration_help(OFFERED)
)
request = (pairs_key(pairs), tuple(methods), s.model, s.max_length)
ui.estimate(anatomy.pooling_report_cost(s.model, pairs, tuple(methods), s.max_length))
if not ui.run_button("Run the explorer", "pool_go", request, type="primary"):
    st.info("Press **Run the explorer** (one forward pass for all poolings; calibrators add a fit each).")
    st.stop()

try:
    report = anatomy.pooling_report(s.model, pairs, tuple(methods), s.max_length)
except InputError as exc:
    ui.user_error(exc)
    st.stop()
ui.show_warnings(report.warnings)
table = report.table
best = report.best
st.success(
    f"Best: {best['pooling']} + {best['calibration']}, Spearman {best['spearman']:.1f} "
    f"({report.n_pairs} pairs, {report.n_sentences} unique sentences)"
)
grid = spearman_grid(table, dict.fromkeys(table["pooling"]), dict.fromkeys(table["calibration"]))
st.subheader("Spearman: pooling (and layer) x calibration")
ui.chart(spearman_heatmap(grid, 140 + 32 * len(grid), "Spearman"), "pooling_heatmap")

st.subheader("Alignment and uniformity (Wang & Isola 2020)")
st.caption("Alignment: distance of positive pairs (gold > 4), lower is better. Uniformity: lower is more spread.")
ui.chart(alignment_uniformity(table), "alignment_uniformity")
st.dataframe(table, width="stretch", hide_index=True)
ui.download_table(table, "pooling_table")
