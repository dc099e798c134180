"""Data pickers: demo data, uploads and typed sentences. What the user loaded is kept in ``st.session_state``,
so a bad upload shows one error line and loses nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np
import streamlit as st

from isoscope.dashboard.services import data as data_service
from isoscope.dashboard.text import literal
from isoscope.dashboard.ui.errors import show_warnings, user_error
from isoscope.data import CORPUS_FORMATS, TABLE_FORMATS, Corpus, Pairs
from isoscope.errors import InputError

Loaded = TypeVar("Loaded", Pairs, Corpus)
CORPUS_SOURCES = ("Demo corpus", "Upload a file")
PAIRS_SOURCES = ("Demo pairs", "Upload a file", "Type two sentences")
PRELOADED = "File given to isoscope app"  # offered first (and chosen) when `isoscope app DATA_FILE` gave one
ATLAS_OPENED = "The atlas opened on the Atlas page"  # Neighbours: the atlas folder's texts and vectors


def _launched_caption(data: Corpus | Pairs, what: str) -> None:
    show_warnings(data.warnings)
    st.caption(f"{literal(data.name)}, given to isoscope app: {len(data):,} {what}.")


def pairs_input(key: str = "pairs") -> Pairs | None:
    """Demo pairs, an uploaded pairs file, or two typed sentences.

    An upload that fails shows one error line and keeps the previously loaded file.
    """
    try:
        launched = data_service.preloaded_pairs()
    except (InputError, OSError) as exc:  # the file changed since isoscope app checked it
        user_error(exc)
        launched = None
    sources = [PRELOADED, *PAIRS_SOURCES] if launched is not None else list(PAIRS_SOURCES)
    source = st.radio("Sentence pairs", sources, horizontal=True, key=f"{key}_source")
    if source == PRELOADED and launched is not None:
        _launched_caption(launched, "pairs")
        return launched
    if source == PAIRS_SOURCES[0]:
        pairs = data_service.demo_pairs()
        st.caption(f"{len(pairs):,} hand-written pairs with gold scores 0-5 (assets/demo_pairs.csv).")
        return pairs
    if source == PAIRS_SOURCES[1]:
        return uploaded(
            key,
            "Pairs file: sentence1, sentence2 and an optional score 0-5 (header optional)",
            TABLE_FORMATS,
            data_service.parse_pairs,
        )
    a = st.text_input("First sentence", "A man is playing a guitar on stage.", key=f"{key}_a", max_chars=2000)
    b = st.text_input("Second sentence", "Someone performs music for an audience.", key=f"{key}_b", max_chars=2000)
    if not a.strip() or not b.strip():
        st.info("Type two sentences to compare.")
        return None
    return Pairs([a.strip()], [b.strip()], None, [], "typed")


def scored_pairs_input(key: str, needs: str) -> Pairs:
    """Pairs with gold scores (at least 3), else an info line naming what ``needs`` them and the page stops."""
    pairs = pairs_input(key)
    if pairs is None:
        st.stop()
    if pairs.scores is None or len(pairs) < 3:
        st.info(f"{needs} gold scores: use the demo pairs or upload a file with a score column.")
        st.stop()
    if np.ptp(pairs.scores) == 0:
        st.info(f"{needs} gold scores that differ: every pair here has the same score, so no correlation exists.")
        st.stop()
    return pairs


def corpus_source(key: str = "corpus", extra: tuple[str, ...] = ()) -> str:
    """Where the corpus comes from: the file given to ``isoscope app`` (first, when there is one), one of
    ``CORPUS_SOURCES`` or a page's own ``extra`` sources."""
    first = [PRELOADED] if data_service.preloaded_file() is not None else []
    return st.radio("Corpus", [*first, *CORPUS_SOURCES, *extra], horizontal=True, key=f"{key}_source")


def corpus_from(source: str, key: str = "corpus") -> Corpus | None:
    """The launched file (a pairs file: its sentences), the demo corpus or an uploaded corpus (``source`` from
    ``corpus_source``); a failed upload keeps the previous one."""
    if source == PRELOADED:
        try:
            corpus = data_service.preloaded_corpus()
        except (InputError, OSError) as exc:  # the file changed since isoscope app checked it
            user_error(exc)
            return None
        if corpus is not None:
            what = "distinct sentences of its pairs" if data_service.preloaded_pairs() is not None else "texts"
            _launched_caption(corpus, what)
            return corpus
        source = CORPUS_SOURCES[0]
    if source == CORPUS_SOURCES[0]:
        corpus = data_service.demo_corpus()
        st.caption(f"{demo_corpus_summary(corpus)} (assets/demo_corpus.csv).")
        return corpus
    return uploaded(
        key,
        "Corpus: one text per line (.txt) or a table with a 'text' column",
        CORPUS_FORMATS,
        data_service.parse_corpus,
    )


def demo_corpus_summary(corpus: Corpus) -> str:
    """ "4,846 hand-written texts over 31 topics in 11 styles", counted from the file."""
    counts = [
        f"{corpus.meta[c].nunique()} {word}"
        for c, word in (("topic", "topics"), ("source", "styles"))
        if c in corpus.meta.columns
    ]
    return f"{len(corpus):,} hand-written texts" + (f" over {' in '.join(counts)}" if counts else "")


def corpus_input(key: str = "corpus") -> Corpus | None:
    """The demo corpus or an uploaded corpus, as the user picks."""
    return corpus_from(corpus_source(key), key)


def uploaded(key: str, label: str, formats: tuple[str, ...], parse: Callable[[bytes, str], Loaded]) -> Loaded | None:
    """A file uploader whose parsed file (``parse(data, name)``) is kept in the session under ``{key}_loaded``.

    A new file that fails to parse shows one error line and keeps the previous one; each file is parsed once.
    """
    up = st.file_uploader(label, type=[*formats, "json", "tab"], key=f"{key}_upload")
    loaded_key = f"{key}_loaded"
    if up is not None and st.session_state.get(f"{key}_file_id") != up.file_id:
        try:
            st.session_state[loaded_key] = parse(up.getvalue(), up.name)
            st.session_state[f"{key}_file_id"] = up.file_id
        except InputError as exc:
            user_error(exc)
            if st.session_state.get(loaded_key) is not None:
                st.caption(f"Still using the previous file, {literal(st.session_state[loaded_key].name)}.")
    data = st.session_state.get(loaded_key)
    if data is None:
        st.info("Upload a file to begin.")
        return None
    show_warnings(data.warnings)
    st.caption(f"Loaded {literal(data.name)}: {len(data):,} rows.")
    return data


def meta_columns(corpus: Corpus, exclude: Iterable[str] = ()) -> list[str]:
    """The corpus's metadata columns to show, without precomputed coordinates (x, y, z) and ``exclude``."""
    from isoscope.neighbours.projection import COORDINATE_COLUMNS

    skip = {*COORDINATE_COLUMNS, *(e.lower() for e in exclude)}
    return [c for c in corpus.meta.columns if str(c).strip().lower() not in skip]
