"""Every cached wrapper around ``core`` lives here: models and indexes in ``st.cache_resource``, arrays
and metrics in ``st.cache_data``. Pages call these, never heavy ``core`` functions directly.

Long work shows an ``st.progress`` bar created inside the cached function (so a cache hit replays
nothing visible), and the embedding cache on disk makes a second visit instant even after a restart.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from core.cache import ArrayCache, default_cache_dir, make_key
from core.calibrate import Calibrator, Flow, FlowConfig, load_calibrator, make_calibrator
from core.data import Corpus, Pairs, load_corpus, load_pairs
from core.embed import EmbedConfig, encode_many
from core.errors import InputError
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


# ------------------------------------------------------------------ calibration


def fit_key(model: str, pooling: str, max_length: int, texts: Sequence[str]) -> str:
    """Identity of a set of fit vectors (for caches): model, pooling, length, texts."""
    from core.cache import text_digest

    return make_key(model, pooling, max_length, text_digest(texts))


@st.cache_resource(show_spinner=False, max_entries=32)
def fit_calibrator(method: str, flow_json: str, key: str, _fit_vectors: np.ndarray) -> Calibrator:
    """A fitted calibrator; also kept on disk (safetensors + JSON) so a restart does not retrain.

    ``flow_json`` is the FlowConfig as JSON ("" for the default); ``key`` identifies ``_fit_vectors``.
    A flow shows its bits/dim per epoch live while it trains.
    """
    folder = default_cache_dir() / "calibrators" / make_key(method, flow_json, key)
    if (folder / "calibrator.json").exists():
        try:
            return load_calibrator(folder)
        except (InputError, OSError, ValueError):
            shutil.rmtree(folder, ignore_errors=True)
    config = FlowConfig.from_dict(json.loads(flow_json)) if flow_json else None
    calibrator = make_calibrator(method, config)
    if isinstance(calibrator, Flow):
        bar = st.progress(0.0, text="Training the flow…")
        curve = st.empty()
        history: list[float] = []

        def progress(epoch: int, n_epochs: int, bits: float) -> None:
            history.append(bits)
            bar.progress(epoch / max(n_epochs, 1), text=f"Flow epoch {epoch}/{n_epochs}: {bits:.3f} bits/dim")
            curve.line_chart(pd.DataFrame({"bits/dim": history}), height=180)

        try:
            calibrator.fit(_fit_vectors, progress=progress)
        finally:
            bar.empty()
            curve.empty()
    else:
        calibrator.fit(_fit_vectors)
    try:
        calibrator.save(folder)
    except OSError:
        pass  # a read-only cache only costs a refit next time
    return calibrator


def calibrate(
    method: str, flow_json: str, key: str, fit_vectors: np.ndarray, *arrays: np.ndarray
) -> tuple[Calibrator, list[np.ndarray]]:
    """Fit (cached) on ``fit_vectors`` and map each of ``arrays`` (a transform is cheap next to a fit)."""
    calibrator = fit_calibrator(method, flow_json, key, fit_vectors)
    return calibrator, [calibrator.transform(a) for a in arrays]


def calibration_table(
    model: str,
    max_length: int,
    pairs: Pairs,
    poolings: tuple[str, ...],
    methods: tuple[str, ...],
    fit_on: Sequence[str],
    flow_json: str = "",
) -> pd.DataFrame:
    """Spearman (x100) of every pooling x calibrator on ``pairs``, each fitted on ``fit_on`` (cached pieces)."""
    from core.evaluate import correlations, cosine_pairs

    n = len(pairs)
    vecs = embed_many(model, pairs.texts, poolings, max_length)
    fits = embed_many(model, fit_on, poolings, max_length)
    rows = []
    bar = st.progress(0.0, text="Fitting calibrators…")
    total = max(len(poolings) * len(methods), 1)
    for i, p in enumerate(poolings):
        key = fit_key(model, p, max_length, fit_on)
        for j, m in enumerate(methods):
            bar.progress((i * len(methods) + j) / total, text=f"{p} + {m}")
            _, (z,) = calibrate(m, flow_json if m == "flow" else "", key, fits[p], vecs[p])
            r = correlations(cosine_pairs(z[:n], z[n:]), pairs.scores)
            rows.append({"pooling": p, "calibration": m, "spearman": round(r["spearman"], 2)})
    bar.empty()
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ geometry


@st.cache_data(show_spinner="Computing isotropy metrics…", max_entries=128)
def metrics_of(vectors_key: str, _vectors: np.ndarray) -> dict[str, float]:
    """core.metrics.all_metrics, cached by a key naming the vectors."""
    from core.metrics import all_metrics

    return all_metrics(_vectors)


def vectors_key(model: str, pooling: str, max_length: int, texts: Sequence[str], calibration: str = "none") -> str:
    """Key naming a set of (possibly calibrated) vectors, for caches."""
    return make_key(fit_key(model, pooling, max_length, texts), calibration)


@st.cache_data(show_spinner=False, max_entries=16)
def layer_metrics(model: str, texts_key: str, max_length: int, _texts: tuple[str, ...]) -> pd.DataFrame:
    """all_metrics of mean pooling at every layer: one row per layer."""
    from core.metrics import all_metrics

    enc = encoder(model)
    layers = [f"layer:{k}" for k in range(enc.num_layers + 1)]
    vecs = embed_many(model, _texts, layers, max_length)
    bar = st.progress(0.0, text="Metrics per layer…")
    rows = []
    for i, name in enumerate(layers):
        rows.append({"layer": i, **all_metrics(vecs[name])})
        bar.progress((i + 1) / len(layers), text=f"Metrics per layer: {name}")
    bar.empty()
    return pd.DataFrame(rows).set_index("layer")


# ------------------------------------------------------------------ model anatomy


def pairs_key(pairs: Pairs) -> str:
    """Key naming a pairs set (texts and scores), for caches."""
    from core.cache import text_digest

    scores = "" if pairs.scores is None else np.asarray(pairs.scores, np.float64).tobytes().hex()
    return make_key(text_digest(pairs.texts), scores)


@st.cache_data(show_spinner=False, max_entries=16)
def pooling_report(model: str, key: str, calibrations: tuple[str, ...], max_length: int, _pairs: Pairs):
    """core.pooling_explorer.explore_poolings: every pooling and layer, raw and calibrated, one forward pass."""
    from core.pooling_explorer import explore_poolings

    bar = st.progress(0.0, text="Embedding with every pooling…")
    try:
        return explore_poolings(
            encoder(model),
            _pairs,
            calibrations,
            EmbedConfig(max_length=max_length),
            lambda d, t: bar.progress(d / max(t, 1), text=f"Embedding {d:,} / {t:,} sentences"),
            ArrayCache(),
        )
    finally:
        bar.empty()


@st.cache_resource(show_spinner="Loading a private copy of the model…", max_entries=1)
def private_encoder(model: str) -> Encoder:
    """A second copy of the model whose weights may be swapped temporarily (rank-k shrink), so the shared
    cached encoder that other pages use is never touched."""
    return load_encoder(model or None)


@st.cache_data(show_spinner=False, max_entries=8)
def input_spectrum(model: str):
    """Singular values and effective rank of the model's input embedding table."""
    from core.embedding_anatomy import embedding_spectrum, input_embedding_weight

    return embedding_spectrum(input_embedding_weight(encoder(model).model))


@st.cache_data(show_spinner=False, max_entries=8)
def shrink_curve(model: str, key: str, ranks: tuple[int, ...], pooling: str, max_length: int, _pairs: Pairs):
    """STS and neighbour overlap with the input embedding shrunk to each rank (SVD)."""
    from core.embedding_anatomy import shrink_curve as curve

    bar = st.progress(0.0, text="Re-encoding at each rank…")
    try:
        return curve(
            private_encoder(model),
            _pairs,
            list(ranks),
            pooling,
            EmbedConfig(max_length=max_length),
            lambda d, t: bar.progress(d / max(t, 1), text=f"Re-encoding: {d:,} / {t:,} sentences"),
            ArrayCache(),
        )
    finally:
        bar.empty()
