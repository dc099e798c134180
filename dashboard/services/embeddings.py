"""Sentence embeddings: one forward pass per list of texts, every requested pooling, cached in memory and on disk.

An fp32 model embeds on its fastest engine whose vectors equal the torch model's within
``isoscope.encode.precision.FP32_ENGINE_TOLERANCE`` (``isoscope.encode.engines``: ONNX Runtime on the CPU); the two
share their cache entries, and the progress bar says which engine ran. int8 stays the sidebar's explicit choice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import streamlit as st

from isoscope.cache import ArrayCache, make_key
from isoscope.dashboard.services.costs import embedding as embedding_cost
from isoscope.dashboard.services.keyed import HASH_FUNCS, Joined, Texts, Vectors, texts
from isoscope.dashboard.services.models import ModelKey, fast_encoder
from isoscope.encode.embed import EmbedConfig, encode_many
from isoscope.encode.engines import engine_in_use
from isoscope.encode.pooling import resolve_pooling


def engine_label(model: ModelKey, poolings: Sequence[str] = ()) -> str:
    """What embeds for ``model`` (the sidebar's key) with these poolings (none: the model's own): ``ONNX Runtime
    fp32``, ``PyTorch fp32``, ..."""
    enc = fast_encoder(model)
    hidden = any(resolve_pooling(p, enc).needs_hidden_states for p in poolings or [None])
    return engine_in_use(enc, hidden)


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=HASH_FUNCS)
def _embed_many(model: ModelKey, items: Texts, poolings: tuple[str, ...], max_length: int) -> dict[str, np.ndarray]:
    enc = fast_encoder(model)
    label = engine_label(model, poolings)
    cost = embedding_cost(model, items, poolings, max_length)  # the disk cache may hold it: then FREE
    note = f" · {cost.describe()} in all" if cost.long else ""  # said before the pass starts, kept while it runs
    bar = st.progress(0.0, text=f"Embedding {len(items):,} texts ({label}){note}…")

    def progress(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"Embedding {done:,} / {total:,} texts ({label}){note}")

    try:
        config = EmbedConfig(max_length=max_length)
        return encode_many(
            enc, items.items, poolings, config=config, progress=progress, cache=ArrayCache(), companions=True
        )
    finally:
        bar.empty()


def _embed_joined(model: ModelKey, items: Joined, poolings: tuple[str, ...], max_length: int) -> dict[str, np.ndarray]:
    """Each part embedded as itself (cached), then the rows of each text's first occurrence."""
    parts = [_embed_many(model, part, poolings, max_length) for part in items.parts]
    first: dict[str, int] = {}
    for i, t in enumerate(t for part in items.parts for t in part.items):
        first.setdefault(t, i)
    rows = np.fromiter(first.values(), dtype=np.int64, count=len(first))  # (n,) in the order of items
    return {p: np.concatenate([a[p] for a in parts])[rows] for p in poolings}


def embed_many(
    model: ModelKey, items: Sequence[str] | Texts, poolings: Sequence[str], max_length: int
) -> dict[str, Vectors]:
    """Pooled embeddings of ``items``, one (n, d) float32 ``Vectors`` per pooling, from one forward pass."""
    items = items if isinstance(items, Texts) else texts(items)
    if isinstance(items, Joined) and len(items.parts) > 1:
        arrays = _embed_joined(model, items, tuple(poolings), max_length)
    else:
        arrays = _embed_many(model, items, tuple(poolings), max_length)
    return {p: Vectors(vectors_key(model, p, max_length, items), a) for p, a in arrays.items()}


def vectors_key(model: ModelKey, pooling: str, max_length: int, items: Texts) -> str:
    """The key of ``embed_many``'s vectors of ``items`` (known before they are computed; ``str(model)``: the
    key's string, so these keys are the ones written before the key was typed)."""
    return make_key("emb", str(model), pooling, max_length, items.key)


def embed(model: ModelKey, items: Sequence[str] | Texts, pooling: str, max_length: int) -> Vectors:
    """Pooled embeddings (n, d) float32 of ``items`` for one pooling mode."""
    return embed_many(model, items, [pooling], max_length)[pooling]
