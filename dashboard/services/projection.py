"""2-D and 3-D maps of a space (PCA, UMAP, t-SNE) of a seeded sample."""

from __future__ import annotations

import json
import time

import numpy as np
import streamlit as st

from isoscope.dashboard.services import costs
from isoscope.dashboard.services.keyed import HASH_FUNCS, Vectors
from isoscope.neighbours.costs import record_umap, umap_cost

_MESSAGE = {
    "pca": "PCA of {n:,} points…",
    "umap": "UMAP of {n:,} points… (the first UMAP run on this machine compiles its code: allow a minute)",
    "tsne": "t-SNE of {n:,} points… (slow beyond a few thousand points: lower the sample size)",
}


@st.cache_data(show_spinner=False, max_entries=32, hash_funcs=HASH_FUNCS)
def projection(
    vectors: Vectors, method: str, n_components: int, *, sample: int, seed: int, params_json: str
) -> tuple[np.ndarray, np.ndarray]:
    """isoscope.neighbours.projection.project of a seeded sample of ``vectors``: (rows (m,) int64, coordinates (m, c) float32).

    ``params_json`` holds the method's extra parameters (n_neighbors, perplexity, ...) as JSON.
    """
    from isoscope.neighbours.projection import project
    from isoscope.sampling import sample_indices

    rows = sample_indices(len(vectors), sample, seed)  # (m,)
    message = _MESSAGE.get(method, "Projecting {n:,} points…").format(n=len(rows))
    rate = costs.umap_rate() if method == "umap" else None
    if rate is not None:  # measured on this process's earlier layouts, or on a probe
        cost = umap_cost(len(rows), rate)
        message = f"UMAP of {len(rows):,} points… ({cost.describe()})" if cost.long else message
    start = time.perf_counter()
    with st.spinner(message, show_time=True):
        coords = project(vectors.array[rows], method, n_components, seed=seed, **json.loads(params_json or "{}"))
    if method == "umap":
        record_umap(len(rows), time.perf_counter() - start)
    return rows, coords
