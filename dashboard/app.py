"""Isoscope dashboard entry point: ``isoscope app`` (or ``streamlit run dashboard/app.py``).

An ``st.navigation`` router over the pages of ``views/``, each placed by its own ``PAGE`` (``navigation.pages``).
The sidebar (the space: the model or a vectors file; model, pooling, max length)
is drawn here once and shared by every page through ``ui.space()`` and ``ui.settings()``. Anything a page raises that is not the user's mistake
(``InputError``, which pages show as one line) is a bug: shown as a short box with the traceback in an
expander, and logged on the server.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import streamlit as st

from isoscope.dashboard import classroom, heap, navigation, ui

# a file, served by this server: a ":material/...:" page icon is fetched from a font CDN (fails offline)
st.set_page_config(page_title="Isoscope", page_icon=str(Path(__file__).with_name("favicon.png")), layout="wide")
classroom.gate()  # classroom mode: nothing below runs until this session has given the access code

PAGES = {
    section: [st.Page(p.path, title=p.title, icon=p.icon, default=p.default) for p in entries]
    for section, entries in navigation.pages().items()
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
