"""The session's space, chosen once in the sidebar and read by every page with ``ui.space()``.

A space is the sidebar's model (as before: it computes the vectors of whatever texts a page shows), or a
vectors file computed elsewhere: uploaded in the sidebar, or given to ``isoscope app`` (``isoscope app
vectors.parquet --vector-column emb --text-column text``). Pages that work from vectors alone read their corpus
with ``space_corpus`` and their vectors with ``space_vectors``; pages that need the model itself say so with
``needs_model``. A bad upload shows one line and keeps the space already loaded.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from isoscope.dashboard.services import data as data_service
from isoscope.dashboard.services import embeddings
from isoscope.dashboard.services import space as space_service
from isoscope.dashboard.services.keyed import Texts, Vectors
from isoscope.dashboard.services.space import SessionSpace
from isoscope.dashboard.text import literal
from isoscope.dashboard.ui.errors import show_warnings, user_error
from isoscope.dashboard.ui.pickers import corpus_input
from isoscope.dashboard.ui.sidebar import settings
from isoscope.data import Corpus
from isoscope.errors import InputError

MODEL = "Model"
UPLOAD = "Upload vectors"
LAUNCHED = "Vectors given to isoscope app"
UPLOAD_TYPES = ["npy", "parquet", "pq", "feather", "arrow", "safetensors"]
TEXT_TYPES = ["txt", "csv", "tsv", "tab", "jsonl", "json", "parquet"]
SPACE_HELP = (
    "Model: the model below computes every vector. A vectors file: vectors computed elsewhere (an API model, a "
    "model run on a GPU, a column your retrieval system stores); every page that works from vectors alone uses "
    "them, the pages that need the model itself say so."
)


def _launched_space() -> SessionSpace | None:
    found = data_service.launched()
    if found is None or found.kind != "vectors":
        return None
    table = space_service.launched_table(found.path, found.vector_column, found.text_column)
    return SessionSpace(table, "launch")


def _upload_box() -> SessionSpace | None:
    """The vectors uploader (and, for .npy/.safetensors, the texts file); a failed file keeps the last space."""
    up = st.file_uploader("Vectors file", type=UPLOAD_TYPES, key="space_upload", help=SPACE_HELP)
    c1, c2 = st.columns(2)
    column = c1.text_input("Vector column", key="space_vector_column", placeholder="the only one").strip() or None
    text_column = c2.text_input("Text column", key="space_text_column", placeholder="text").strip() or None
    texts_up = None
    if up is not None and up.name.lower().endswith((".npy", ".safetensors")):
        texts_up = st.file_uploader("Texts, one per vector (optional)", type=TEXT_TYPES, key="space_texts_upload")
    loaded: SessionSpace | None = st.session_state.get("space_loaded")
    if up is not None:
        request = (up.file_id, column, text_column, None if texts_up is None else texts_up.file_id)
        if st.session_state.get("space_request") != request:
            try:
                table = space_service.parse_upload(
                    up.getvalue(),
                    up.name,
                    column,
                    text_column=text_column if texts_up is None else None,
                    texts=None if texts_up is None else texts_up.getvalue(),
                    texts_name=None if texts_up is None else texts_up.name,
                )
                loaded = st.session_state["space_loaded"] = SessionSpace(table, "upload")
                st.session_state["space_request"] = request
            except InputError as exc:
                user_error(exc)
                if loaded is not None:
                    st.caption(f"Still using {literal(loaded.label)}.")
    if loaded is None:
        st.caption("Upload a vectors file; until then the model computes the vectors.")
    return loaded


def space_box() -> SessionSpace:
    """The sidebar's space choice (the router draws it above the model box); stored in the session."""
    try:
        launched = _launched_space()
    except (InputError, OSError) as exc:  # the file changed since isoscope app checked it
        user_error(exc)
        launched = None
    options = [LAUNCHED, MODEL, UPLOAD] if launched is not None else [MODEL, UPLOAD]
    st.markdown("#### Space")
    choice = st.radio("Space", options, key="space_source", help=SPACE_HELP, label_visibility="collapsed")
    space = SessionSpace()
    if choice == LAUNCHED and launched is not None:
        space = launched
    elif choice == UPLOAD:
        space = _upload_box() or SessionSpace()
    if not space.is_model:
        assert space.table is not None
        texts = f"texts from {literal(space.table.origin.text_column)}" if space.has_texts else "no texts"
        st.caption(f"{literal(space.label)} · {len(space.table):,} vectors · d = {space.dims} · {texts}")
        st.caption("The model below is used only where a page needs it.")
    st.session_state["_space"] = space
    return space


def space() -> SessionSpace:
    """The session's current space (the router draws the sidebar before every page)."""
    current = st.session_state.get("_space")
    return current if current is not None else SessionSpace()


def use_model() -> None:
    """Switch the session's space to the model (a button callback: runs before the sidebar is drawn)."""
    st.session_state["space_source"] = MODEL


def needs_model(page: str) -> None:
    """On a page that runs the model itself: one line saying so when the space is a vectors file, and the
    button that switches the space to the model. The page goes on with the sidebar's model."""
    current = space()
    if current.is_model:
        return
    c1, c2 = st.columns([5, 1])
    c1.info(
        f"{page} needs the model itself, not vectors: it uses {literal(settings().model_label)} (the sidebar's "
        f"model), not {literal(current.label)}.",
        icon=":material/info:",
    )
    c2.button("Use the model", key="space_use_model", on_click=use_model, help="Make the model the session's space")


def space_corpus(key: str) -> Corpus | None:
    """The corpus of a page that works from vectors alone: the vectors file's rows, or the page's corpus picker
    (the file given to isoscope app, the demo, an upload) when the space is the model."""
    current = space()
    if current.is_model:
        return corpus_input(key)
    corpus = current.corpus()
    show_warnings(corpus.warnings)
    texts = "" if current.has_texts else " (the file has no texts: rows are named row 0, row 1, ...)"
    st.caption(f"The space's {len(corpus):,} rows, from {literal(current.label)}{texts}.")
    return corpus


def space_vectors(texts: Sequence[str] | Texts, pooling: str | None = None) -> Vectors:
    """The vectors (len(texts), d) of ``texts`` in the session's space: embedded by the sidebar's model (with
    ``pooling``, default the sidebar's), or looked up by text in the vectors file (InputError for a text it lacks).
    """
    current = space()
    if current.is_model:
        s = settings()
        return embeddings.embed(s.model, texts, pooling or s.pooling, s.max_length)
    return space_service.vectors_for(current, texts)


def space_name(pooling: str | None = None) -> str:
    """How a page names the raw space in Markdown: "mean pooling" (the model's), or the vectors file's name
    (escaped: it is user text)."""
    current = space()
    return f"{pooling or settings().pooling} pooling" if current.is_model else literal(current.label)
