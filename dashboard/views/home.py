"""Home: what Isoscope shows, and a guided tour for teaching."""

from __future__ import annotations

import streamlit as st

from isoscope.dashboard import navigation, tour

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Start",
    "title": "Home",
    "icon": ":material/home:",
    "order": 10,
    "default": True,
}

st.title("Isoscope")
st.markdown(
    "**See the geometry of transformer embedding spaces, and fix it.** Sentence vectors from pre-trained "
    "encoders are *anisotropic*: they crowd into a narrow cone, so any two sentences look similar and "
    "cosine similarity is dominated by a few directions and by word frequency (BERT-flow, Li et al. 2020). "
    "Isoscope measures this, shows it, and calibrates the space (a normalizing flow, whitening, "
    "all-but-the-top) so you can compare before and after on your own data."
)

st.subheader("Pages")
st.markdown(navigation.home_table())  # each page's own line (its PAGE), in the sidebar's order

st.subheader("A guided tour (20 minutes, for a class)")
st.markdown(tour.STEPS)
st.caption(
    "Everything runs locally on the embedded all-MiniLM-L6-v2; set another model in the sidebar. "
    "Results are cached, so a second visit is instant."
)
