"""Fitted calibrators (kept in memory, and on disk by ``isoscope.calibrate.store``) and the vectors they map."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from isoscope.cache import make_key
from isoscope.calibrate import Calibrator, Flow
from isoscope.calibrate.store import CalibratorKey, is_stored, keep, load_stored
from isoscope.dashboard.services import costs
from isoscope.dashboard.services.embeddings import embed_many
from isoscope.dashboard.services.keyed import HASH_FUNCS, Texts, Vectors
from isoscope.dashboard.services.models import ModelKey
from isoscope.data import Pairs
from isoscope.evaluate.similarity import sts_scores


def _flow_progress(note: str = ""):
    """A bar and a live bits/dim curve for a flow's epochs (``note``: its cost, said before it starts); returns
    (callback, cleanup)."""
    bar = st.progress(0.0, text=f"Training the flow{note}…")
    curve = st.empty()
    history: list[float] = []

    def progress(epoch: int, n_epochs: int, bits: float) -> None:
        history.append(bits)
        bar.progress(epoch / max(n_epochs, 1), text=f"Flow epoch {epoch}/{n_epochs}: {bits:.3f} bits/dim{note}")
        curve.line_chart(pd.DataFrame({"bits/dim": history}), height=180)

    def cleanup() -> None:
        bar.empty()
        curve.empty()

    return progress, cleanup


@st.cache_resource(show_spinner=False, max_entries=32, hash_funcs=HASH_FUNCS)
def fit_calibrator(method: str, flow_json: str, fit: Vectors) -> Calibrator:
    """A calibrator fitted on ``fit``; also kept on disk (``isoscope.calibrate.store``) so a restart does not retrain.

    ``flow_json`` is the flow's parameters as JSON (``Flow().get_params()``; "" for the default). A flow shows its bits/dim per epoch live.
    """
    key = CalibratorKey(method, flow_json, fit.key)
    stored = load_stored(key)
    if stored is not None:
        return stored
    calibrator = key.calibrator()
    if isinstance(calibrator, Flow):
        cost = costs.flow(len(fit.array), fit.array.shape[1], flow_json)
        progress, cleanup = _flow_progress(f" · {cost.describe()}" if cost.long else "")
        try:
            calibrator.fit(fit.array, progress=progress)
        finally:
            cleanup()
    else:
        calibrator.fit(fit.array)
    keep(calibrator, key)
    return calibrator


def calibrator_on_disk(method: str, flow_json: str, fit_key: str) -> bool:
    """Whether ``fit_calibrator`` will read this calibrator from disk instead of fitting it."""
    return is_stored(CalibratorKey(method, flow_json, fit_key))


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH_FUNCS)
def _calibrated(method: str, flow_json: str, fit: Vectors, x: Vectors) -> np.ndarray:
    return np.asarray(fit_calibrator(method, flow_json, fit).transform(x.array), dtype=np.float32)


def calibrated(method: str, flow_json: str, fit: Vectors, x: Vectors) -> Vectors:
    """``x`` mapped by the calibrator fitted (cached) on ``fit``: (n, d') float32, named for caches."""
    return Vectors(calibrated_key(method, flow_json, fit.key, x.key), _calibrated(method, flow_json, fit, x))


def calibrated_key(method: str, flow_json: str, fit_key: str, x_key: str) -> str:
    """The key of ``calibrated(method, flow_json, fit, x)``'s vectors (known before they are computed)."""
    return make_key("cal", x_key, method, flow_json, fit_key)


def calibrate(method: str, flow_json: str, fit: Vectors, *arrays: np.ndarray) -> tuple[Calibrator, list[np.ndarray]]:
    """Fit (cached) on ``fit`` and map each of ``arrays`` (a transform is cheap next to a fit)."""
    calibrator = fit_calibrator(method, flow_json, fit)
    return calibrator, [calibrator.transform(a) for a in arrays]


def calibration_table(
    model: ModelKey,
    max_length: int,
    pairs: Pairs,
    poolings: tuple[str, ...],
    methods: tuple[str, ...],
    fit_on: Sequence[str] | Texts,
    flow_json: str = "",
) -> pd.DataFrame:
    """Spearman (x100) of every pooling x calibrator on ``pairs``, each fitted on ``fit_on`` (cached pieces)."""
    vecs = embed_many(model, pairs.texts, poolings, max_length)
    fits = embed_many(model, fit_on, poolings, max_length)
    return spaces_table(pairs, vecs, fits, methods, flow_json)


def spaces_table(
    pairs: Pairs,
    vecs: dict[str, Vectors],
    fits: dict[str, Vectors],
    methods: tuple[str, ...],
    flow_json: str = "",
) -> pd.DataFrame:
    """Spearman (x100) of every space x calibrator on ``pairs``: ``vecs[p]`` (2n, d) the pairs' vectors in space
    ``p`` (a pooling, or a vectors file), each calibrator fitted (cached) on ``fits[p]``."""
    n = len(pairs)
    poolings = tuple(vecs)
    rows = []
    bar = st.progress(0.0, text="Fitting calibrators…")
    total = max(len(poolings) * len(methods), 1)
    try:
        for i, p in enumerate(poolings):
            for j, m in enumerate(methods):
                bar.progress((i * len(methods) + j) / total, text=f"{p} + {m}")
                z = calibrated(m, flow_json if m == "flow" else "", fits[p], vecs[p]).array
                r = sts_scores(z[:n], z[n:], pairs.scores)
                rows.append({"pooling": p, "calibration": m, "spearman": round(r["spearman"], 2)})
    finally:
        bar.empty()
    return pd.DataFrame(rows)
