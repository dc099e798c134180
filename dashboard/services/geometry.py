"""Isotropy metrics, spectra, per-layer metrics, token-frequency bias and lexical overlap."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import pandas as pd
import streamlit as st

from isoscope.cache import make_key
from isoscope.costs import FREE, Cost
from isoscope.dashboard.services import costs
from isoscope.dashboard.services.calibration import calibrated_key, calibrator_on_disk
from isoscope.dashboard.services.embeddings import embed_many, vectors_key
from isoscope.dashboard.services.keyed import HASH_FUNCS, Texts, Vectors
from isoscope.dashboard.services.models import ModelKey, encoder, fast_encoder
from isoscope.encode.embed import EmbedConfig, companion_poolings
from isoscope.encode.pooling import layer_names, resolve_pooling
from isoscope.geometry.costs import covariance_cost, metrics_cost

KEPT = 128  # metrics_of's entries
_computed: OrderedDict[str, None] = OrderedDict()  # what metrics_of and layer_metrics computed here, newest last
_computed_lock = threading.Lock()


def _mark(key: str) -> None:
    with _computed_lock:
        _computed[key] = None
        _computed.move_to_end(key)
        while len(_computed) > KEPT:
            _computed.popitem(last=False)


def computed(key: str) -> bool:
    """Whether this process computed the metrics named ``key`` (a ``Vectors`` key for ``metrics_of``,
    ``layer_metrics_key`` for ``layer_metrics``), so that its cache answers for them: what an estimate
    (``anisotropy_cost``) leaves out. Marked when computed, the newest ``KEPT`` kept."""
    with _computed_lock:
        return key in _computed


@st.cache_data(show_spinner="Computing isotropy metrics…", max_entries=KEPT, hash_funcs=HASH_FUNCS)
def metrics_of(vectors: Vectors) -> dict[str, float]:
    """isoscope.geometry.metrics.all_metrics of ``vectors``."""
    from isoscope.geometry.metrics import all_metrics

    out = all_metrics(vectors.array)
    _mark(vectors.key)
    return out


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
    _mark(layer_metrics_key(model, texts, max_length))
    return pd.DataFrame(rows).rename_axis("layer")


def layer_metrics_key(model: ModelKey, texts: Texts, max_length: int) -> str:
    """The name ``computed`` knows ``layer_metrics(model, texts, max_length)`` by."""
    return make_key("layer-metrics", str(model), texts.key, max_length)


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


def anisotropy_cost(model: ModelKey, items: Texts, pooling: str, max_length: int, *, methods: tuple[str, ...]) -> Cost:
    """What the Anisotropy page computes for ``items`` with the model: the embedding (``pooling``, the raw last
    layer's ``mean`` beside the model's recipe, every layer: one pass with its companions, a second for the layers
    it does not cache), each calibrator of ``methods`` fitted on the raw vectors, the metrics of every space shown
    and of every layer. What the caches hold is left out: the disk's embeddings and calibrators, the metrics
    ``computed`` here."""
    from isoscope.encode.pooling import MODEL_POOLING

    enc = encoder(model)
    n = len(items)
    if n < 3:
        return FREE
    layers = layer_names(enc.num_layers)
    first = [pooling, *(["mean"] if pooling == MODEL_POOLING and enc.recipe is not None else [])]
    cost = costs.embedding(model, items, first, max_length)
    written = {c.name for c in companion_poolings(fast_encoder(model), len(costs.distinct(items)))}
    rest = [layer for layer in layers if layer not in first and (cost == FREE or layer not in written)]
    cost += costs.embedding(model, items, rest, max_length) if rest else FREE
    raw = vectors_key(model, pooling, max_length, items)
    dim, hidden = enc.output_dim(resolve_pooling(pooling, enc)), enc.hidden_size
    rate = costs.metrics_rate(dim)
    for method in methods:
        if not calibrator_on_disk(method, "", raw):
            fit = costs.fits([method], n, dim) if method.strip() == "flow" else covariance_cost(n, rate)
            cost += fit
    shown = [raw, *(calibrated_key(m, "", raw, raw) for m in methods)]  # each: metrics and a spectrum
    spectra = sum(not computed(key) for key in shown)
    recipe = [vectors_key(model, "mean", max_length, items)] if len(first) > 1 else []  # metrics only
    cost += metrics_cost(n, rate, spaces=spectra + sum(not computed(key) for key in recipe))
    cost += covariance_cost(n, rate, passes=spectra)
    if not computed(layer_metrics_key(model, items, max_length)):
        cost += metrics_cost(n, costs.metrics_rate(hidden), spaces=len(layers))
    return cost
