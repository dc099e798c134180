"""Every cached wrapper around ``core`` lives here: models and indexes in ``st.cache_resource``, arrays
and metrics in ``st.cache_data``. Pages call these, never heavy ``core`` functions directly.

Long work shows an ``st.progress`` bar created inside the cached function (so a cache hit replays
nothing visible), and the embedding cache on disk makes a second visit instant even after a restart.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import streamlit as st

from core.cache import ArrayCache
from core.data import Corpus, Pairs, load_corpus, load_pairs
from core.embed import EmbedConfig, encode_many
from core.models import Encoder, load_encoder
from core.paths import DEMO_CORPUS, DEMO_PAIRS


@st.cache_resource(show_spinner="Loading model…", max_entries=3)
def encoder(model: str) -> Encoder:
    """A loaded encoder; ``model`` is a path or hub id, ``""`` for the embedded default."""
    return load_encoder(model or None)


@st.cache_data(show_spinner=False, max_entries=64)
def _embed_many(
    model: str, texts_key: str, poolings: tuple[str, ...], max_length: int, _texts: tuple[str, ...]
) -> dict[str, np.ndarray]:
    enc = encoder(model)
    bar = st.progress(0.0, text=f"Embedding {len(_texts):,} texts…")

    def progress(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"Embedding {done:,} / {total:,} texts")

    try:
        return encode_many(enc, _texts, poolings, EmbedConfig(max_length=max_length), progress, ArrayCache())
    finally:
        bar.empty()


def embed_many(model: str, texts: Sequence[str], poolings: Sequence[str], max_length: int) -> dict[str, np.ndarray]:
    """Pooled embeddings, one (n, d) float32 array per pooling, from one forward pass over ``texts``."""
    from core.cache import text_digest

    texts = tuple(texts)
    return _embed_many(model, text_digest(texts), tuple(poolings), max_length, texts)


def embed(model: str, texts: Sequence[str], pooling: str, max_length: int) -> np.ndarray:
    """Pooled embeddings (n, d) float32 for one pooling mode."""
    return embed_many(model, texts, [pooling], max_length)[pooling]


@st.cache_data(show_spinner=False)
def demo_pairs() -> Pairs:
    return load_pairs(DEMO_PAIRS)


@st.cache_data(show_spinner=False)
def demo_corpus() -> Corpus:
    return load_corpus(DEMO_CORPUS)


@st.cache_data(show_spinner=False, max_entries=16)
def parse_pairs(data: bytes, name: str) -> Pairs:
    """Parse an uploaded pairs file (raises InputError; errors are not cached)."""
    return load_pairs(data, name)


@st.cache_data(show_spinner=False, max_entries=16)
def parse_corpus(data: bytes, name: str) -> Corpus:
    """Parse an uploaded corpus file (raises InputError; errors are not cached)."""
    return load_corpus(data, name)
