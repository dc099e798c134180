"""Anisotropy: how isotropic is the space, per layer, and what does calibration change."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from isoscope.dashboard import ui
from isoscope.dashboard.figures.anisotropy import cosine_histograms, layer_heatmap, spectra
from isoscope.dashboard.services import calibration, geometry
from isoscope.dashboard.services import report as reports
from isoscope.dashboard.services.keyed import Vectors
from isoscope.dashboard.services.keyed import texts as keyed_texts
from isoscope.errors import InputError
from isoscope.geometry.options import METRIC_HELP

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Geometry",
    "title": "Anisotropy",
    "icon": ":material/scatter_plot:",
    "order": 10,
    "teaches": "How much of the space the vectors use: average cosine, IsoScore, effective rank, per layer.",
}

s = ui.settings()
st.title("Anisotropy")
st.caption(
    "Are the sentence vectors spread over all directions, or crowded in a cone? Each metric is computed on "
    "the corpus below for the sidebar's model and pooling, raw and after each calibrator (fitted on the same "
    "texts, no labels)."
)
corpus = ui.space_corpus("ani")
if corpus is None:
    st.stop()
texts = corpus.texts
# fitted on the corpus itself: on a corpus too small to whiten every dimension the default is whitening:K
defaults = [ui.safe_default(m, len(texts), s.hidden_size) for m in ("whitening", "sn+abtt:3")]
offered = list(dict.fromkeys([*defaults, "whitening", "whitening:64", "sn", "abtt:3", "sn+abtt:3", "flow"]))
methods = st.multiselect(
    "Calibrators to compare", offered, default=defaults, key="ani_methods", help=ui.calibration_help(offered)
)

if len(texts) < 3:
    st.info("Isotropy metrics need at least 3 texts; load a larger corpus.")
    st.stop()

if ui.space().is_model:  # the first visit's work, said before it starts (nothing once it is cached)
    ui.estimate(geometry.anisotropy_cost(s.model, keyed_texts(texts), s.pooling, s.max_length, methods=tuple(methods)))
raw = ui.space_vectors(texts)  # (n, d)
spaces: dict[str, Vectors] = {"raw": raw}
for m in methods:
    try:
        spaces[m] = calibration.calibrated(m, "", raw, raw)  # fitted on the corpus itself
    except InputError as exc:
        ui.user_error(exc)
        continue
    ui.warn_fit_size(calibration.fit_calibrator(m, "", raw), raw.array)

rows = {name: geometry.metrics_of(x) for name, x in spaces.items()}
table = pd.DataFrame(rows).T
table.index.name = "space"
st.subheader(f"Isotropy metrics ({ui.space_name()}, {len(texts):,} texts)")
st.dataframe(table.style.format("{:.3f}"), width="stretch")
with st.expander("What the metrics mean"):
    for k, v in METRIC_HELP.items():
        st.markdown(f"- **{k}**: {v}")
ui.download_table(table.reset_index(), "anisotropy_metrics")

if ui.space().is_model and s.pooling == "model" and s.recipe:
    st.subheader("What the model's recipe does to the geometry")
    st.caption(
        f"The model's recipe ({ui.literal(s.recipe)}) against the mean of its raw last layer, the same texts: "
        "a Dense projection changes the dimensions and the spread, normalisation only the lengths."
    )
    head = {"the model's recipe (model)": raw, "raw last layer (mean)": ui.space_vectors(texts, "mean")}
    recipe_table = pd.DataFrame({name: geometry.metrics_of(x) for name, x in head.items()}).T
    recipe_table.index.name = "space"
    recipe_table.insert(0, "dimensions", [x.array.shape[1] for x in head.values()])
    st.dataframe(recipe_table.style.format("{:.3f}", subset=list(recipe_table.columns[1:])), width="stretch")
    ui.download_table(recipe_table.reset_index(), "recipe_geometry")

st.subheader("Pairwise cosines")
cosines = {name: geometry.cosine_histogram_of(x, 20_000, seed=0) for name, x in spaces.items()}
ui.chart(cosine_histograms(cosines), "cosine_histogram")

st.subheader("Singular-value spectrum")
ui.chart(spectra({name: geometry.singular_values_of(x) for name, x in spaces.items()}), "singular_values")

st.subheader("Every layer (mean pooling of each layer)")
if not ui.space().is_model:
    st.info("The layers are the model's: this section needs the model itself, not a vectors file.")
    st.stop()
per_layer = geometry.layer_metrics(s.model, keyed_texts(texts), s.max_length)
ui.chart(layer_heatmap(per_layer), "layer_metrics")
with st.expander("Per-layer table"):
    st.dataframe(per_layer.style.format("{:.3f}"), width="stretch")
ui.download_table(per_layer.reset_index(), "layer_metrics")

st.subheader("Report")
vs = methods[0] if methods else "whitening"
st.caption(f"All of this (and hubness, what {vs} changes in the neighbourhoods, a map) in one HTML file to mail.")
ui.report_download(
    "anisotropy",
    (s.model, raw.key, s.pooling, vs),
    lambda: reports.space_report(s.model, keyed_texts(texts), s.pooling, s.max_length, vs, corpus.meta),
)
