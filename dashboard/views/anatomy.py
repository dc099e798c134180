"""Embedding anatomy: how many parameters are embeddings, and how much of the input table is needed."""

from __future__ import annotations

import streamlit as st

from isoscope.anatomy.budget import PRESET_NAMES, Architecture, architecture_from_model, get_preset, parameter_budget
from isoscope.dashboard import ui
from isoscope.dashboard.figures import anatomy as figures
from isoscope.dashboard.services import anatomy
from isoscope.dashboard.services.keyed import pairs_key
from isoscope.dashboard.services.models import fp32_encoder
from isoscope.errors import InputError

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Model anatomy",
    "title": "Embedding anatomy",
    "icon": ":material/grid_on:",
    "order": 20,
    "teaches": "How many parameters are embeddings, and how much of the input table a model needs.",
}

s = ui.settings()
st.title("Embedding anatomy")
ui.needs_model("Embedding anatomy")
st.caption(
    "Embeddings are a large share of a transformer's parameters, most of all for multilingual vocabularies "
    "(Chung et al. 2020). The output embedding is only used in pre-training, so input and output embeddings "
    "can be decoupled: a small input embedding, a large output one that fine-tuning drops."
)

st.header("Parameter budget")
LOADED = "loaded model"
choice = st.selectbox("Architecture", [LOADED, *PRESET_NAMES, "custom"], key="anat_preset")
try:
    if choice == LOADED:
        arch = architecture_from_model(fp32_encoder(s.model).model, name=s.model_label)
    elif choice == "custom":
        c = st.columns(4)
        arch = Architecture(
            vocab_size=int(c[0].number_input("Vocabulary", 100, 1_000_000, 250_000, key="anat_v")),
            hidden_size=int(c[1].number_input("Hidden size", 16, 8192, 768, key="anat_h")),
            num_layers=int(c[2].number_input("Layers", 1, 128, 12, key="anat_l")),
            intermediate_size=int(c[3].number_input("Intermediate size", 16, 65536, 3072, key="anat_i")),
            tied=st.toggle("Tied output embedding", False, key="anat_tied"),
            input_embedding_size=int(c[0].number_input("E_in", 16, 8192, 768, key="anat_ein")),
            output_embedding_size=int(c[1].number_input("E_out", 16, 8192, 768, key="anat_eout")),
            name="custom",
        ).validate()
    else:
        arch = get_preset(choice)
    budget = parameter_budget(arch)
except InputError as exc:
    ui.user_error(exc)
    st.stop()

m = st.columns(3)
m[0].metric("Parameters (pre-training)", f"{budget.pretraining_total / 1e6:,.1f} M")
m[1].metric("Embedding share, pre-training", f"{budget.embedding_share_pretraining:.1%}")
m[2].metric("Embedding share, fine-tuning", f"{budget.embedding_share_finetuning:.1%}")
ui.chart(figures.budget_bars(budget), "parameter_budget")

presets = figures.presets_table([parameter_budget(get_preset(n)) for n in PRESET_NAMES])
with st.expander("All presets (from the public configurations)"):
    st.dataframe(presets, width="stretch", hide_index=True)
    ui.download_table(presets, "parameter_presets")
components = figures.components_table(budget)
with st.expander("Components of this architecture"):
    st.dataframe(components, width="stretch", hide_index=True)
    ui.download_table(components, "parameter_components")

st.header("The input embedding of the loaded model")
spectrum = anatomy.input_spectrum(s.model)
c = st.columns(2)
c[0].metric("Table shape", f"{spectrum.shape[0]:,} x {spectrum.shape[1]}")
c[1].metric("Effective rank", f"{spectrum.effective_rank:.1f}", help="exp(entropy of normalised singular values)")
ui.chart(figures.spectrum_figure(spectrum), "input_embedding_spectrum")

st.subheader("Shrink it to rank k")
st.caption(
    "Replace the table by its best rank-k approximation (what an input embedding of size k with a projection "
    "would keep) and re-encode the pairs: STS Spearman and how many of each sentence's 10 nearest neighbours stay."
)
pairs = ui.pairs_input("anat")
ranks = st.multiselect("Ranks", [8, 16, 32, 64, 128, 192, 256], default=[16, 64, 128], key="anat_ranks")
if pairs is not None and ranks:
    request = (pairs_key(pairs), tuple(sorted(ranks)), s.pooling, s.model, s.max_length)
    if ui.run_button("Shrink and re-encode", "anat_go", request):
        try:
            result = anatomy.shrink_curve(s.model, pairs, request[1], s.pooling, s.max_length)
        except InputError as exc:
            ui.user_error(exc)
            st.stop()
        curve = result.curve
        ui.chart(figures.shrink_figure(curve, pairs.scores is not None), "shrink_curve")
        st.dataframe(curve, width="stretch", hide_index=True)
        ui.download_table(curve, "shrink_curve")
if fp32_encoder(s.model).model.get_output_embeddings() is None:
    st.caption(
        "The loaded model has no masked-LM head, so there is no output embedding to compare with. Load a "
        "model saved with its MLM head (e.g. BertForMaskedLM) to compare input and output embeddings."
    )
