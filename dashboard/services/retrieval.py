"""Retrieval and clustering (isoscope.retrieval): the task read once, the run embedded, fitted, searched and scored
once per model, task, prompts and fixes; clustering once per vectors, labels and fixes."""

from __future__ import annotations

import numpy as np
import streamlit as st

from isoscope.cache import ArrayCache
from isoscope.dashboard.services.keyed import HASH_FUNCS, Vectors
from isoscope.dashboard.services.models import ModelKey, fast_encoder
from isoscope.encode.embed import EmbedConfig
from isoscope.retrieval.clustering import ClusteringResult, cluster_scores
from isoscope.retrieval.embedding import embed_side
from isoscope.retrieval.run import RetrievalConfig, RetrievalResult, evaluate_retrieval
from isoscope.retrieval.task import RetrievalTask

HASH_TASKS = {**HASH_FUNCS, RetrievalTask: lambda task: task.fingerprint}


@st.cache_data(show_spinner=False, max_entries=4)
def demo_task() -> RetrievalTask:
    """The demo task shipped in ``isoscope.assets`` (a BEIR folder)."""
    from isoscope.paths import DEMO_RETRIEVAL
    from isoscope.retrieval.load import load_beir

    return load_beir(DEMO_RETRIEVAL)


@st.cache_data(show_spinner=False, max_entries=8)
def parse_zip(data: bytes, name: str, split: str) -> RetrievalTask:
    """An uploaded BEIR zip, through the bounded reader."""
    from isoscope.retrieval.load import load_beir_zip

    return load_beir_zip(data, name, split)


def _bar(text: str):
    bar = st.progress(0.0, text=text)
    return bar, lambda done, total: bar.progress(done / max(total, 1), text=f"{text} {done:,} / {total:,}")


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH_TASKS)
def run_model(
    model: ModelKey,
    task: RetrievalTask,
    pooling: str,
    max_length: int,
    prompts: tuple[str, str],
    variants: tuple[str, ...],
) -> RetrievalResult:
    """Queries and documents embedded by ``model`` (``isoscope.retrieval.embedding.embed_side``, each with its
    prompt, the disk cache), then every fix fitted, searched and scored (``evaluate_retrieval``)."""
    enc, config, cache = fast_encoder(model), EmbedConfig(max_length=max_length), ArrayCache()
    sides = []
    for texts, prompt, what in ((task.queries, prompts[0], "queries"), (task.documents, prompts[1], "documents")):
        bar, progress = _bar(f"Embedding {what}…")
        try:
            sides.append(embed_side(enc, texts, pooling=pooling, prompt=prompt, config=config, cache=cache,
                                    progress=progress))  # fmt: skip
        finally:
            bar.empty()
    result = _evaluate(sides[0], sides[1], task, variants)
    result.model, result.pooling = str(model), pooling  # the key as one string, as before it was typed
    result.prompts = {"query": prompts[0], "document": prompts[1]}
    return result


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH_TASKS)
def run_vectors(
    queries: Vectors, documents: Vectors, task: RetrievalTask, variants: tuple[str, ...]
) -> RetrievalResult:
    """Every fix on vectors computed elsewhere (the session's vectors file, the task's texts looked up in it)."""
    return _evaluate(queries.array, documents.array, task, variants)


def _evaluate(Q: np.ndarray, D: np.ndarray, task: RetrievalTask, variants: tuple[str, ...]) -> RetrievalResult:
    bar, progress = _bar("Fitting, searching and scoring each fix…")
    try:
        stage = lambda name: progress if name == "variants" else None  # noqa: E731
        return evaluate_retrieval(Q, D, task, config=RetrievalConfig(variants=variants), progress=stage)
    finally:
        bar.empty()


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH_FUNCS)
def clustering(vectors: Vectors, labels: tuple[str, ...], variants: tuple[str, ...]) -> ClusteringResult:
    """V-measure of k-means over seeds, raw and each fix (``isoscope.retrieval.clustering.cluster_scores``)."""
    bar, progress = _bar("Clustering, seed by seed…")
    try:
        return cluster_scores(vectors.array, list(labels), variants=variants, progress=progress)
    finally:
        bar.empty()
