"""Isoscope dashboard entry point: ``isoscope app`` (or ``streamlit run dashboard/app.py``).

An ``st.navigation`` router. The sidebar (the space: the model or a vectors file; model, pooling, max length)
is drawn here once and shared by every page through ``ui.space()`` and ``ui.settings()``. Anything a page raises that is not the user's mistake
(``InputError``, which pages show as one line) is a bug: shown as a short box with the traceback in an
expander, and logged on the server.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import streamlit as st

from isoscope.dashboard import classroom, heap, ui

# a file, served by this server: a ":material/...:" page icon is fetched from a font CDN (fails offline)
st.set_page_config(page_title="Isoscope", page_icon=str(Path(__file__).with_name("favicon.png")), layout="wide")
classroom.gate()  # classroom mode: nothing below runs until this session has given the access code

PAGES = {
    "Start": [
        st.Page("views/home.py", title="Home", icon=":material/home:", default=True),
    ],
    "Similarity": [
        st.Page("views/similarity.py", title="Sentence pairs", icon=":material/compare_arrows:"),
        st.Page("views/calibration.py", title="Calibration", icon=":material/tune:"),
        st.Page("views/retrieval.py", title="Retrieval", icon=":material/search:"),
    ],
    "Geometry": [
        st.Page("views/anisotropy.py", title="Anisotropy", icon=":material/scatter_plot:"),
        st.Page("views/frequency.py", title="Frequency bias", icon=":material/bar_chart:"),
        st.Page("views/overlap.py", title="Lexical overlap", icon=":material/join_inner:"),
        st.Page("views/sweep.py", title="Precision & size", icon=":material/compress:"),
    ],
    "Neighbours": [
        st.Page("views/neighbours.py", title="Neighbours", icon=":material/hub:"),
        st.Page("views/projection.py", title="Projection map", icon=":material/map:"),
        st.Page("views/atlas.py", title="Atlas", icon=":material/travel_explore:"),
        st.Page("views/compare.py", title="Compare spaces", icon=":material/difference:"),
        st.Page("views/migration.py", title="Migration", icon=":material/swap_horiz:"),
    ],
    "Model anatomy": [
        st.Page("views/pooling.py", title="Pooling explorer", icon=":material/layers:"),
        st.Page("views/anatomy.py", title="Embedding anatomy", icon=":material/grid_on:"),
        st.Page("views/landscape.py", title="Loss surfaces", icon=":material/landscape:"),
    ],
}

nav = st.navigation(PAGES, expanded=True)  # every page listed (the default folds all past the 10th)
with st.sidebar:
    space_slot = st.container()  # the space choice sits above the model box, and may use the model's settings
ui.sidebar()
with space_slot:
    ui.space_box()
heap.freeze_once()  # the libraries and the model are loaded: later full collections skip them
try:
    nav.run()
except Exception as exc:  # st.stop/st.rerun are BaseExceptions and pass through
    (classroom.bug_report if classroom.enabled() else ui.bug_report)(exc)
