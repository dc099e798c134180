"""Loaded models: shared, cached once per server process."""

from __future__ import annotations

import numpy as np
import streamlit as st

from core.models import Encoder, load_encoder
from dashboard.services.keyed import HASH_FUNCS, Texts


@st.cache_resource(show_spinner="Loading model…", max_entries=3)
def encoder(model: str) -> Encoder:
    """A loaded encoder; ``model`` is a path or hub id, ``""`` for the embedded default."""
    return load_encoder(model or None)


@st.cache_resource(show_spinner="Loading a private copy of the model…", max_entries=1)
def private_encoder(model: str) -> Encoder:
    """A second copy of the model whose weights may be swapped temporarily (rank-k shrink), so the shared
    cached encoder that other pages use is never touched."""
    return load_encoder(model or None)


@st.cache_data(show_spinner="Counting tokens…", max_entries=16, hash_funcs=HASH_FUNCS)
def token_lengths(model: str, texts: Texts) -> np.ndarray:
    """Number of tokens of each text (n,) with the model's tokenizer, special tokens included, untruncated."""
    tok = encoder(model).tokenizer
    items = texts.items
    out = np.empty(len(items), np.int64)
    for s in range(0, len(items), 1024):
        ids = tok(list(items[s : s + 1024]), add_special_tokens=True, truncation=False)["input_ids"]
        out[s : s + len(ids)] = [len(x) for x in ids]
    return out
