"""Isotropy metrics, spectra, per-layer metrics, token-frequency bias and lexical overlap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from isoscope.dashboard.services.embeddings import embed_many
from isoscope.dashboard.services.keyed import HASH_FUNCS, Texts, Vectors
from isoscope.dashboard.services.models import ModelKey, encoder
from isoscope.encode.embed import EmbedConfig
from isoscope.encode.pooling import layer_names


@st.cache_data(show_spinner="Computing isotropy metrics…", max_entries=128, hash_funcs=HASH_FUNCS)
def metrics_of(vectors: Vectors) -> dict[str, float]:
    """isoscope.geometry.metrics.all_metrics of ``vectors``."""
    from isoscope.geometry.metrics import all_metrics

    return all_metrics(vectors.array)


@st.cache_data(show_spinner=False, max_entries=128, hash_funcs=HASH_FUNCS)
def cosine_histogram_of(vectors: Vectors, n_pairs: int, seed: int = 0) -> np.ndarray:
    """isoscope.geometry.metrics.cosine_histogram_sample of ``vectors`` (shared by every session: a class of 30 computed
    the same 20,000 cosines per space once each)."""
    from isoscope.geometry.metrics import cosine_histogram_sample

    return cosine_histogram_sample(vectors.array, n_pairs, seed=seed)


@st.cache_data(show_spinner=False, max_entries=128, hash_funcs=HASH_FUNCS)
def singular_values_of(vectors: Vectors) -> np.ndarray:
    """isoscope.geometry.metrics.singular_values of the centred ``vectors``."""
    from isoscope.geometry.metrics import singular_values

    return singular_values(vectors.array)


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH_FUNCS)
def layer_metrics(model: ModelKey, texts: Texts, max_length: int) -> pd.DataFrame:
    """all_metrics of mean pooling at every layer, one row per layer: the ``layers`` of ``isoscope geometry``
    (``isoscope.geometry.metrics.per_layer_metrics``, which ``isoscope.geometry.report.analyse_geometry`` calls)."""
    from isoscope.geometry.metrics import per_layer_metrics

    layers = layer_names(encoder(model).num_layers)
    vecs = embed_many(model, texts, layers, max_length)
    bar = st.progress(0.0, text="Metrics per layer…")

    def progress(done: int, total: int) -> None:
        bar.progress(done / total, text=f"Metrics per layer: {layers[done - 1]}")

    try:
        rows = per_layer_metrics([vecs[name].array for name in layers], progress=progress)
    finally:
        bar.empty()
    return pd.DataFrame(rows).rename_axis("layer")


@st.cache_data(show_spinner=False, max_entries=8, hash_funcs=HASH_FUNCS)
def frequency_result(model: ModelKey, texts: Texts, max_length: int, calibration: str, spaces: tuple[str, ...]):
    """isoscope.geometry.frequency.frequency_analysis (token norms and kNN distances by frequency bucket), raw and calibrated."""
    from isoscope.geometry.frequency import frequency_analysis

    bar = st.progress(0.0, text="Token vectors…")
    try:
        return frequency_analysis(
            encoder(model),
            list(texts.items),
            spaces=spaces,
            calibrator=None if calibration == "none" else calibration,
            embed_config=EmbedConfig(max_length=max_length),
            progress=lambda d, t: bar.progress(d / max(t, 1), text=f"Token vectors: {d:,} / {t:,} texts"),
        )
    finally:
        bar.empty()


@st.cache_data(show_spinner="Edit distances…", max_entries=16)
def overlap(sentence1: tuple[str, ...], sentence2: tuple[str, ...], similarities: dict[str, np.ndarray | None]):
    """isoscope.geometry.lexical.overlap_analysis: Spearman of each similarity with the word edit distance."""
    from isoscope.geometry.lexical import overlap_analysis

    return overlap_analysis(sentence1, sentence2, similarities)
