"""Model anatomy: every pooling and layer scored on pairs, the input embedding's spectrum and rank-k shrinking."""

from __future__ import annotations

import streamlit as st

from isoscope.cache import ArrayCache, make_key
from isoscope.calibrate import Calibrator, make_calibrator
from isoscope.costs import FREE, Cost, total
from isoscope.dashboard.services import costs
from isoscope.dashboard.services.keyed import HASH_FUNCS, pairs_key
from isoscope.dashboard.services.models import ModelKey, encoder, private_encoder
from isoscope.data import Pairs
from isoscope.encode.costs import embed_texts_cost
from isoscope.encode.embed import EmbedConfig


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH_FUNCS)
def pooling_report(model: ModelKey, pairs: Pairs, calibrations: tuple[str, ...], max_length: int):
    """isoscope.anatomy.poolings.explore_poolings: every pooling and layer, raw and calibrated, one forward pass."""
    from isoscope.anatomy.poolings import RAW, explore_poolings, pooling_modes_for

    enc = encoder(model)
    n_fits = len(pooling_modes_for(enc)) * len([c for c in calibrations if c.strip().lower() != RAW])
    bar = st.progress(0.0, text="Embedding with every pooling…")
    fitted = [-1]  # -1 until the embedding pass is over (the explorer checks each method once before it)

    def embedding(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"Embedding {done:,} / {total:,} sentences")
        if done >= total:
            fitted[0] = 0

    def calibrator(method: str) -> Calibrator:
        if fitted[0] >= 0:
            fitted[0] += 1
            bar.progress(min(fitted[0] / max(n_fits, 1), 1.0), text=f"Fitting {method}: {fitted[0]} / {n_fits}")
        return make_calibrator(method)

    try:
        report = explore_poolings(
            enc,
            pairs,
            calibrations=calibrations,
            config=EmbedConfig(max_length=max_length),
            progress=embedding,
            cache=ArrayCache(),
            calibrator_factory=calibrator,
        )
    finally:
        bar.empty()
    _reported.add(_report_key(model, pairs, calibrations, max_length))
    return report


_reported: set[str] = set()  # the reports pooling_report holds (its calibrators are kept in memory only)


def _report_key(model: ModelKey, pairs: Pairs, calibrations: tuple[str, ...], max_length: int) -> str:
    return make_key("pooling-report", str(model), pairs_key(pairs), calibrations, max_length)


def pooling_report_cost(model: ModelKey, pairs: Pairs, calibrations: tuple[str, ...], max_length: int) -> Cost:
    """What ``pooling_report`` will cost: one pass with every pooling over the unique sentences (unless the
    disk cache holds them), per pooling a flow when ``flow`` is asked for and a fit of each linear calibrator,
    and the uniformity of every pooling x calibration (the unique sentences' pairs: issue 50)."""
    from isoscope.anatomy.poolings import pooling_modes_for, unique_index
    from isoscope.geometry.costs import covariance_cost, uniformity_cost

    if _report_key(model, pairs, calibrations, max_length) in _reported:
        return FREE
    enc = encoder(model)
    texts, _ = unique_index(pairs.texts)
    modes = pooling_modes_for(enc)
    rate = lambda hidden: costs.throughput(model, hidden, max_length, fast=False)  # noqa: E731
    embed = embed_texts_cost(enc, texts, modes, max_length=max_length, rate=rate, cache=ArrayCache())
    methods = [m for m in dict.fromkeys(calibrations) if m.strip() not in ("none", "")]
    linear = sum(m.strip() != "flow" for m in methods)
    metrics = costs.metrics_rate(enc.hidden_size)
    scores = uniformity_cost(len(texts), metrics, spaces=len(modes) * (1 + len(methods)))
    fits = covariance_cost(len(texts), metrics, passes=len(modes) * linear)
    return embed + total([costs.fits(calibrations, len(texts), enc.hidden_size) for _ in modes]) + scores + fits


@st.cache_data(show_spinner="Singular values of the input embedding table…", max_entries=8)
def input_spectrum(model: ModelKey):
    """Singular values and effective rank of the model's input embedding table."""
    from isoscope.anatomy.spectrum import embedding_spectrum, input_embedding_weight

    return embedding_spectrum(input_embedding_weight(encoder(model).model))


@st.cache_data(show_spinner=False, max_entries=8, hash_funcs=HASH_FUNCS)
def shrink_curve(model: ModelKey, pairs: Pairs, ranks: tuple[int, ...], pooling: str, max_length: int):
    """STS and neighbour overlap with the input embedding shrunk to each rank (SVD)."""
    from isoscope.anatomy.spectrum import shrink_curve as curve

    bar = st.progress(0.0, text="Re-encoding at each rank…")
    try:
        return curve(
            private_encoder(model),
            pairs,
            ranks=list(ranks),
            pooling=pooling,
            config=EmbedConfig(max_length=max_length),
            progress=lambda d, t: bar.progress(d / max(t, 1), text=f"Re-encoding: {d:,} / {t:,} sentences"),
            cache=ArrayCache(),
        )
    finally:
        bar.empty()
