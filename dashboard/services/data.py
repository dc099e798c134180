"""Data the pages load: the demo files, parsed uploads, and the file ``isoscope app DATA_FILE`` preloads.

Uploads are decoded within ``isoscope.data``'s limits (the ``ISOSCOPE_MAX_*`` variables the server runs with),
and at most ``PARALLEL_PARSES`` at a time across all sessions, so a class uploading at once cannot multiply
the peak memory of one decode by the number of students.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import streamlit as st

from isoscope.dashboard.launch import ENV_DATA_FILE, ENV_TEXT_COLUMN
from isoscope.data import Corpus, Pairs, load_corpus, load_pairs, load_vectors
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


def preloaded_file() -> tuple[str, str | None] | None:
    """(path, text column) of the file given to ``isoscope app``, or None."""
    path = os.environ.get(ENV_DATA_FILE, "").strip()
    return (path, os.environ.get(ENV_TEXT_COLUMN) or None) if path else None


@st.cache_data(show_spinner="Reading the preloaded file…", max_entries=2)
def _preloaded_corpus(path: str, text_column: str | None, mtime: float) -> Corpus:
    return load_corpus(path, text_column=text_column)


@st.cache_data(show_spinner="Reading the preloaded file…", max_entries=2)
def _preloaded_pairs(path: str, mtime: float) -> Pairs:
    return load_pairs(path)


def preloaded_corpus() -> Corpus | None:
    """The corpus file given to ``isoscope app``, loaded once (reloaded when the file changes); None if none."""
    found = preloaded_file()
    if found is None:
        return None
    path, column = found
    return _preloaded_corpus(path, column, os.stat(path).st_mtime)


def preloaded_pairs() -> Pairs | None:
    """The file given to ``isoscope app``, read as sentence pairs; None if none was given."""
    found = preloaded_file()
    if found is None:
        return None
    return _preloaded_pairs(found[0], os.stat(found[0]).st_mtime)
