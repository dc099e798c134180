"""Home: what Isoscope shows, and a guided tour for teaching."""

from __future__ import annotations

import streamlit as st

from isoscope.dashboard import tour

st.title("Isoscope")
st.markdown(
    "**See the geometry of transformer embedding spaces, and fix it.** Sentence vectors from pre-trained "
    "encoders are *anisotropic*: they crowd into a narrow cone, so any two sentences look similar and "
    "cosine similarity is dominated by a few directions and by word frequency (BERT-flow, Li et al. 2020). "
    "Isoscope measures this, shows it, and calibrates the space (a normalizing flow, whitening, "
    "all-but-the-top) so you can compare before and after on your own data."
)

st.subheader("Pages")
st.markdown(
    """
| Page | What it teaches |
|---|---|
| **Sentence pairs** | Cosine per pair against gold scores (Spearman), several poolings and a calibrator side by side. |
| **Calibration** | Fit a flow or whitening without labels; watch it train; every pooling x calibrator. |
| **Retrieval** | Would a fix help search? nDCG@10 per fix with a significance test, and clustering V-measure. |
| **Anisotropy** | How much of the space the vectors use: average cosine, IsoScore, effective rank, per layer. |
| **Frequency bias** | Frequent tokens sit near the origin and close together; rare ones far out and apart. |
| **Lexical overlap** | Does similarity just count shared words? Gold vs raw vs calibrated. |
| **Precision & size** | How far the vectors can shrink (int8, bits, fewer dimensions) before neighbours and scores change. |
| **Neighbours** | Who is whose nearest neighbour, before and after calibration. |
| **Projection map** | The space as a 2D/3D map (PCA, UMAP, t-SNE), raw and calibrated side by side. |
| **Atlas** | Every text of a corpus on one map, with clusters, labels and search; open a text in Neighbours. |
| **Compare spaces** | Two models, layers, poolings or calibrations on the same texts: CKA, neighbours kept, hubs, aligned maps. |
| **Pooling explorer** | CLS, mean, max, layer averages and every single layer, scored on the same pairs. |
| **Embedding anatomy** | How many parameters are embeddings, and how much of the input table a model needs. |
| **Loss surfaces** | Why pre-training helps: fine-tuning vs training from scratch on the same loss landscape. |
"""
)

st.subheader("A guided tour (20 minutes, for a class)")
st.markdown(tour.STEPS)
st.caption(
    "Everything runs locally on the embedded all-MiniLM-L6-v2; set another model in the sidebar. "
    "Results are cached, so a second visit is instant."
)
