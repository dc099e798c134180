"""Precision and dimension sweep (isoscope.evaluate.sweep): the corpus and the pairs through the fp32 and the int8 model, then
every variant measured; cached by the model, the texts, the pairs and the settings."""

from __future__ import annotations

import numpy as np
import streamlit as st

from isoscope.dashboard.services import embeddings
from isoscope.dashboard.services.keyed import HASH_FUNCS, Texts, Vectors
from isoscope.dashboard.services.models import ModelKey
from isoscope.data import Pairs
from isoscope.evaluate.sweep import SweepConfig, SweepPairs, SweepResult, run_sweep


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH_FUNCS)
def sweep(
    model: ModelKey, texts: Texts, pairs: Pairs | None, pooling: str, max_length: int, dims: tuple[int, ...], k: int
) -> SweepResult:
    """``isoscope.evaluate.sweep.run_sweep`` of ``texts`` (and ``pairs`` with scores) for ``model``'s fp32 and int8 encoders."""
    items = list(texts.items) + (list(pairs.texts) if pairs is not None else [])
    full = embeddings.embed(model.at("fp32"), items, pooling, max_length).array  # (n + 2m, d)
    full8 = embeddings.embed(model.at("int8"), items, pooling, max_length).array  # (n + 2m, d)
    n = len(texts)
    swept = None
    if pairs is not None:
        m = len(pairs)
        gold = np.asarray(pairs.scores, np.float64)
        swept = SweepPairs(full[n : n + m], full[n + m :], gold, full8[n : n + m], full8[n + m :])
    return _measured(full[:n], full8[:n], swept, dims, k)


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH_FUNCS)
def sweep_vectors(
    corpus: Vectors, pairs: Pairs | None, pair_vectors: Vectors | None, dims: tuple[int, ...], k: int
) -> SweepResult:
    """``run_sweep`` from vectors computed elsewhere (no int8-model row: there is no model to quantise);
    ``pair_vectors`` (2m, d): the pairs' sentence1 rows then their sentence2 rows."""
    swept = None
    if pairs is not None and pair_vectors is not None:
        m = len(pairs)
        gold = np.asarray(pairs.scores, np.float64)
        swept = SweepPairs(pair_vectors.array[:m], pair_vectors.array[m:], gold)
    return _measured(corpus.array, None, swept, dims, k)


def _measured(X: np.ndarray, X8: np.ndarray | None, pairs: SweepPairs | None, dims: tuple[int, ...], k: int):
    bar = st.progress(0.0, text="Measuring each variant…")
    try:
        return run_sweep(
            X,
            X8,
            pairs,
            config=SweepConfig(dims=dims, k=k),
            progress=lambda d, t: bar.progress(d / max(t, 1), text=f"Measuring variant {d} / {t}"),
        )
    finally:
        bar.empty()
