"""Home: what Isoscope shows, and a guided tour for teaching."""

from __future__ import annotations

import streamlit as st

st.title("Isoscope")
st.markdown(
    "**See the geometry of transformer embedding spaces, and fix it.** Sentence vectors from pre-trained "
    "encoders are *anisotropic*: they crowd into a narrow cone, so any two sentences look similar and "
    "cosine similarity is dominated by a few directions and by word frequency. Isoscope measures this, "
    "shows it, and calibrates the space (BERT-flow, whitening, all-but-the-top) so you can compare "
    "before and after on your own data."
)

st.subheader("Pages")
st.markdown(
    """
| Page | What it teaches |
|---|---|
| **Sentence pairs** | Cosine similarity per pair against gold scores (Spearman), for several pooling modes side by side. |
"""
)

st.subheader("A guided tour (15 minutes, for a class)")
st.markdown(
    """
1. **Sentence pairs** with the demo pairs and pooling `cls`: note the Spearman and how high every cosine
   is, even for unrelated pairs. Switch to `mean` and compare side by side: pooling matters.
2. Type *The dog bit the man.* / *The man bit the dog.*: a very high cosine for opposite meanings.
   Embeddings track word overlap more than meaning.
3. Upload your own pairs file (CSV: sentence1, sentence2, score) and download the table.
"""
)
st.caption(
    "Everything runs locally on the embedded all-MiniLM-L6-v2; set another model in the sidebar. "
    "Results are cached, so a second visit is instant."
)
