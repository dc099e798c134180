"""Anisotropy: how isotropic is the space, per layer, and what does calibration change."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from isoscope.dashboard import ui
from isoscope.dashboard.figures.anisotropy import cosine_histograms, layer_heatmap, spectra
from isoscope.dashboard.services import calibration, embeddings, geometry
from isoscope.dashboard.services.keyed import Vectors
from isoscope.dashboard.services.keyed import texts as keyed_texts
from isoscope.errors import InputError

METRIC_HELP = {
    "avg_cosine": "mean cosine of random pairs (0 = isotropic; Ethayarajh 2019)",
    "isoscore": "IsoScore (Rudman et al. 2022): 1 = all directions used equally, 0 = one direction",
    "partition_isotropy": "min/max of the partition function over principal directions (Mu & Viswanath 2018)",
    "effective_rank": "exp of the entropy of the normalised singular values",
    "explained_variance_top1": "share of variance on the first principal component",
    "explained_variance_top10": "share of variance on the first ten principal components",
    "uniformity": "log mean exp(-2 |x - y|^2) on the unit sphere (Wang & Isola 2020); lower is more uniform",
}

s = ui.settings()
st.title("Anisotropy")
st.caption(
    "Are the sentence vectors spread over all directions, or crowded in a cone? Each metric is computed on "
    "the corpus below for the sidebar's model and pooling, raw and after each calibrator (fitted on the same "
    "texts, no labels)."
)
corpus = ui.corpus_input("ani")
if corpus is None:
    st.stop()
texts = corpus.texts
methods = st.multiselect(
    "Calibrators to compare",
    ["whitening", "sn", "abtt:3", "sn+abtt:3", "flow"],
    default=["whitening", "sn+abtt:3"],
    key="ani_methods",
    help=ui.CALIBRATION_HELP,
)

if len(texts) < 3:
    st.info("Isotropy metrics need at least 3 texts; load a larger corpus.")
    st.stop()

raw = embeddings.embed(s.model, texts, s.pooling, s.max_length)  # (n, d)
spaces: dict[str, Vectors] = {"raw": raw}
for m in methods:
    try:
        spaces[m] = calibration.calibrated(m, "", raw, raw)  # fitted on the corpus itself
    except InputError as exc:
        ui.user_error(exc)

rows = {name: geometry.metrics_of(x) for name, x in spaces.items()}
table = pd.DataFrame(rows).T
table.index.name = "space"
st.subheader(f"Isotropy metrics ({s.pooling} pooling, {len(texts):,} texts)")
st.dataframe(table.style.format("{:.3f}"), width="stretch")
with st.expander("What the metrics mean"):
    for k, v in METRIC_HELP.items():
        st.markdown(f"- **{k}**: {v}")
ui.download_table(table.reset_index(), "anisotropy_metrics")

st.subheader("Pairwise cosines")
cosines = {name: geometry.cosine_histogram_of(x, 20_000, seed=0) for name, x in spaces.items()}
ui.chart(cosine_histograms(cosines), "cosine_histogram")

st.subheader("Singular-value spectrum")
ui.chart(spectra({name: geometry.singular_values_of(x) for name, x in spaces.items()}), "singular_values")

st.subheader("Every layer (mean pooling of each layer)")
per_layer = geometry.layer_metrics(s.model, keyed_texts(texts), s.max_length)
ui.chart(layer_heatmap(per_layer), "layer_metrics")
with st.expander("Per-layer table"):
    st.dataframe(per_layer.style.format("{:.3f}"), width="stretch")
ui.download_table(per_layer.reset_index(), "layer_metrics")
