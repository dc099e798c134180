"""Data the pages load: the demo files, parsed uploads, and the file ``isoscope app DATA_FILE`` preloads.

Uploads are decoded within ``isoscope.data``'s limits (the ``ISOSCOPE_MAX_*`` variables the server runs with),
and at most ``PARALLEL_PARSES`` at a time across all sessions, so a class uploading at once cannot multiply
the peak memory of one decode by the number of students.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import numpy as np
import streamlit as st

from isoscope.dashboard.launch import ENV_DATA_FILE, ENV_DATA_KIND, ENV_TEXT_COLUMN, ENV_VECTOR_COLUMN
from isoscope.data import Corpus, Pairs, data_kind, load_corpus, load_pairs, load_vectors
from isoscope.errors import InputError
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS

PARALLEL_PARSES = 2
_parsing = threading.BoundedSemaphore(PARALLEL_PARSES)


@st.cache_data(show_spinner=False)
def demo_pairs() -> Pairs:
    return load_pairs(DEMO_PAIRS)


@st.cache_data(show_spinner=False)
def demo_corpus() -> Corpus:
    return load_corpus(DEMO_CORPUS)


@st.cache_data(show_spinner=False, max_entries=16)
def parse_pairs(data: bytes, name: str) -> Pairs:
    """Parse an uploaded pairs file (raises InputError; errors are not cached)."""
    with _parsing:
        return load_pairs(data, name)


@st.cache_data(show_spinner=False, max_entries=16)
def parse_corpus(data: bytes, name: str) -> Corpus:
    """Parse an uploaded corpus file (raises InputError; errors are not cached)."""
    with _parsing:
        return load_corpus(data, name)


@st.cache_data(show_spinner=False, max_entries=8)
def parse_vectors(data: bytes, name: str) -> np.ndarray:
    """Validate an uploaded .npy of vectors (isoscope.data.load_vectors; never unpickled)."""
    with _parsing:
        return load_vectors(data, name)


@dataclass(frozen=True)
class Launched:
    """The file ``isoscope app DATA_FILE`` opened: a corpus, a pairs file or a vectors file."""

    path: str
    kind: str  # "corpus", "pairs" or "vectors" (isoscope.data.data_kind)
    text_column: str | None = None
    vector_column: str | None = None


@st.cache_data(show_spinner=False, max_entries=4)
def _kind(path: str, vector_column: str | None, text_column: str | None, mtime: float) -> str:
    return data_kind(path, vector_column, text_column)


def launched() -> Launched | None:
    """The file given to ``isoscope app`` (its kind as the command found it, or found here), or None."""
    path = os.environ.get(ENV_DATA_FILE, "").strip()
    if not path:
        return None
    text_column, vector_column = os.environ.get(ENV_TEXT_COLUMN) or None, os.environ.get(ENV_VECTOR_COLUMN) or None
    kind = os.environ.get(ENV_DATA_KIND, "").strip()
    if kind not in ("corpus", "pairs", "vectors"):
        try:
            kind = _kind(path, vector_column, text_column, os.stat(path).st_mtime)
        except (InputError, OSError):  # read as a corpus: its loader says what is wrong, where it is used
            kind = "corpus"
    return Launched(path, kind, text_column, vector_column)


def preloaded_file() -> tuple[str, str | None] | None:
    """(path, text column) of the corpus or pairs file given to ``isoscope app``, or None (none, or vectors)."""
    found = launched()
    return (found.path, found.text_column) if found is not None and found.kind != "vectors" else None


@st.cache_data(show_spinner="Reading the preloaded file…", max_entries=2)
def _preloaded_corpus(path: str, text_column: str | None, mtime: float) -> Corpus:
    return load_corpus(path, text_column=text_column)


@st.cache_data(show_spinner=False, max_entries=2)
def _sentences(path: str, mtime: float) -> Corpus:
    """A pairs file's sentences as a corpus: each distinct sentence once (sentence1s, then sentence2s)."""
    import pandas as pd

    pairs = _preloaded_pairs(path, mtime)
    texts = list(dict.fromkeys(pairs.texts))
    return Corpus(texts, pd.DataFrame(index=range(len(texts))), list(pairs.warnings), pairs.name)


@st.cache_data(show_spinner="Reading the preloaded file…", max_entries=2)
def _preloaded_pairs(path: str, mtime: float) -> Pairs:
    return load_pairs(path)


def preloaded_corpus() -> Corpus | None:
    """The corpus given to ``isoscope app`` (a pairs file: its distinct sentences), loaded once (reloaded when the
    file changes); None when no corpus or pairs file was given."""
    found = launched()
    if found is None or found.kind == "vectors":
        return None
    mtime = os.stat(found.path).st_mtime
    if found.kind == "pairs":
        return _sentences(found.path, mtime)
    return _preloaded_corpus(found.path, found.text_column, mtime)


def preloaded_pairs() -> Pairs | None:
    """The pairs file given to ``isoscope app``; None when none was given (or the file is not a pairs file)."""
    found = launched()
    if found is None or found.kind != "pairs":
        return None
    return _preloaded_pairs(found.path, os.stat(found.path).st_mtime)
