"""Home: what Isoscope shows, and a guided tour for teaching."""

from __future__ import annotations

import streamlit as st

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
| **Anisotropy** | How much of the space the vectors use: average cosine, IsoScore, effective rank, per layer. |
| **Frequency bias** | Frequent tokens sit near the origin and close together; rare ones far out and apart. |
| **Lexical overlap** | Does similarity just count shared words? Gold vs raw vs calibrated. |
| **Neighbours** | Who is whose nearest neighbour, before and after calibration. |
| **Projection map** | The space as a 2D/3D map (PCA, UMAP, t-SNE), raw and calibrated side by side. |
| **Compare spaces** | Two models, layers, poolings or calibrations on the same texts: CKA, neighbours kept, hubs, aligned maps. |
| **Pooling explorer** | CLS, mean, max, layer averages and every single layer, scored on the same pairs. |
| **Embedding anatomy** | How many parameters are embeddings, and how much of the input table a model needs. |
| **Loss surfaces** | Why pre-training helps: fine-tuning vs training from scratch on the same loss landscape. |
"""
)

st.subheader("A guided tour (20 minutes, for a class)")
st.markdown(
    """
1. **Sentence pairs**, demo pairs, sidebar pooling `cls`: note the Spearman and how high even unrelated pairs
   score. Add `mean` to the comparison: pooling matters.
2. Choose **Type two sentences**: *The dog bit the man.* / *The man bit the dog.* The cosine is almost 1 for
   opposite meanings: embeddings follow shared words. **Lexical overlap** shows it on every pair.
3. **Anisotropy**: raw `cls` vectors have an average cosine far above 0 and a low IsoScore; whitening spreads
   them over all directions. The layer heatmap shows where in the network the cone forms.
4. **Calibration**: fit a flow (a few epochs) and see the pooling x calibrator table: calibration lifts the
   anisotropic poolings, and can hurt a model already trained for cosine similarity.
5. **Neighbours** and **Projection map**: pick a sentence; compare its neighbours before and after.
6. **Compare spaces**, preset *Trained vs untrained*: random weights keep fewer than one of each text's ten
   neighbours, yet CKA stays above 0 (compare linear and debiased; the heatmap shows it layer by layer). Then
   *CLS vs mean*: `cls` has hubs (skewness above 5: a few texts are everyone's neighbour), mean pooling hardly.
7. **Embedding anatomy**: switch to xlm-roberta-base: two thirds of the parameters are embeddings.
"""
)
st.caption(
    "Everything runs locally on the embedded all-MiniLM-L6-v2; set another model in the sidebar. "
    "Results are cached, so a second visit is instant."
)
