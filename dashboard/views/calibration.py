"""Calibration: fit a calibrator without labels, watch a flow train, compare every method and pooling."""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from isoscope.anatomy.poolings import best_row
from isoscope.costs import FREE, Cost
from isoscope.dashboard import ui
from isoscope.dashboard.figures.scores import flow_training, spearman_grid, spearman_heatmap
from isoscope.dashboard.services import calibration, costs, embeddings
from isoscope.dashboard.services.keyed import pairs_key
from isoscope.dashboard.services.keyed import texts as keyed_texts
from isoscope.encode.pooling import canonical_pooling
from isoscope.errors import InputError
from isoscope.evaluate.similarity import sts_scores
from isoscope.geometry.metrics import avg_cosine

# its place in the navigation and its line on the Home page (dashboard/navigation.py)
PAGE = {
    "section": "Similarity",
    "title": "Calibration",
    "icon": ":material/tune:",
    "order": 20,
    "teaches": "Fit a flow or whitening without labels; watch it train; every pooling x calibrator.",
}

s = ui.settings()
st.title("Calibration")
st.caption(
    "Pre-trained sentence vectors sit in a narrow cone. A calibrator, fitted on unlabelled sentences, maps "
    "them to an isotropic space: BERT-flow learns an invertible map to a standard Gaussian; whitening is its "
    "linear counterpart. Gold scores are used only to evaluate, never to fit."
)

pairs = ui.scored_pairs_input("calp", "Calibration is evaluated with")

fit = ui.fit_texts("calp", pairs.texts)
if fit is None:
    st.stop()
fit_on, fit_label = fit
space = ui.space()
cal = ui.calibration_controls("calp", default="flow", include_none=False, n_fit=len(fit_on))
inputs = (pairs_key(pairs), fit_on.key, s.model if space.is_model else space.key, s.max_length)


def fit_cost(poolings: list[str], methods: list[str], flow_json: str) -> Cost:
    """Embedding the pairs and the fit texts with ``poolings`` and fitting ``methods`` on each (the model's space:
    a vectors file is read, not computed)."""
    if not space.is_model:
        return FREE
    pair_texts = keyed_texts(pairs.texts)
    cost = costs.embedding(s.model, pair_texts, poolings, s.max_length)
    cost += costs.embedding(s.model, fit_on, poolings, s.max_length)
    for p in poolings:
        key = embeddings.vectors_key(s.model, p, s.max_length, fit_on)
        flows = [m for m in methods if m == "flow" and not calibration.calibrator_on_disk(m, flow_json, key)]
        cost += costs.fits(flows, len(fit_on), s.hidden_size, flow_json)
    return cost


ui.estimate(fit_cost([s.pooling], [cal.method], cal.flow_json))
if not ui.run_button("Fit calibrator", "calp_fit", (*inputs, cal, s.pooling), type="primary"):
    st.info(f"Press **Fit calibrator** to fit {cal.method} on {ui.literal(fit_label)} with {ui.space_name()}.")
else:
    n = len(pairs)
    try:
        raw = ui.space_vectors(pairs.texts).array  # (2n, d)
    except InputError as exc:  # a vectors file without these sentences
        ui.user_error(exc)
        st.stop()
    result = ui.calibrate(cal, s.pooling, fit_on, raw)
    if result is not None:
        calibrator, (z,) = result
        before = sts_scores(raw[:n], raw[n:], pairs.scores)
        after = sts_scores(z[:n], z[n:], pairs.scores)
        c = st.columns(4)
        c[0].metric("Spearman raw", f"{before['spearman']:.1f}")
        c[1].metric(
            f"Spearman {cal.method}", f"{after['spearman']:.1f}", f"{after['spearman'] - before['spearman']:+.1f}"
        )
        c[2].metric("avg cosine raw", f"{avg_cosine(raw):.3f}", help="Mean cosine of random pairs: 0 is isotropic.")
        c[3].metric(f"avg cosine {cal.method}", f"{avg_cosine(z):.3f}")
        history = getattr(calibrator, "history_", None)
        if history:
            if getattr(calibrator, "diverged_", False):
                st.warning("Training diverged; the last good state was kept. Lower the learning rate.")
            st.subheader("Training curve")
            curve = flow_training(
                pd.DataFrame(history),
                calibrator.gaussian_bits_per_dim_,
                trained_bits_per_dim=calibrator.bits_per_dim_,
                noise_std=calibrator.noise_std,
            )
            ui.chart(curve, "flow_training")

        buf = io.BytesIO()
        np.save(buf, z.astype(np.float32), allow_pickle=False)
        d1, d2 = st.columns(2)
        d1.download_button(
            "Download calibrated vectors (.npy)",
            buf.getvalue(),
            file_name=f"calibrated_{cal.method}.npy",
            on_click="ignore",
            key="calp_dl_npy",
            icon=":material/download:",
        )

        def zipped() -> bytes:
            with tempfile.TemporaryDirectory() as tmp:
                calibrator.save(tmp)
                out = io.BytesIO()
                with zipfile.ZipFile(out, "w") as zf:
                    for f in sorted(Path(tmp).iterdir()):
                        zf.write(f, f.name)
                return out.getvalue()

        d2.download_button(
            "Download fitted calibrator (.zip: safetensors + JSON)",
            zipped,
            file_name=f"calibrator_{cal.method}.zip",
            on_click="ignore",
            key="calp_dl_cal",
            icon=":material/download:",
        )
        ui.fixed_model_download("calp", cal.method, cal.flow_json, fit_on)

st.divider()
st.subheader("Every pooling x every calibrator")
st.caption(
    "Spearman (x100) on the loaded pairs, each calibrator fitted on the chosen fit texts for that pooling. "
    "On a model already fine-tuned for similarity (like all-MiniLM-L6-v2 with mean pooling), calibration "
    "can add little and full whitening lowers the score (it amplifies the weakest, noisiest directions); "
    "whitening that keeps the top K components helps where the space is anisotropic (cls, first_last_avg)."
)
t1, t2 = st.columns(2)
if space.is_model:
    table_poolings = t1.multiselect(
        "Poolings",
        s.pooling_modes,
        default=list(
            dict.fromkeys(canonical_pooling(p, s.is_encoder_decoder) for p in (s.pooling, "cls", "first_last_avg"))
        ),
        key="calp_tp",
        help=ui.pooling_help(s.pooling_modes, "Each pooling is embedded once, every calibrator fitted on it."),
    )
else:  # the file's vectors are pooled already
    table_poolings = [space.label]
    t1.caption(f"One space: {ui.literal(space.label)} (its vectors are pooled already).")
TABLE_METHODS = ("none", "whitening", "whitening:64", "whitening:128", "sn", "abtt:3", "sn+abtt:3", "flow")
methods = t2.multiselect(
    "Calibrators",
    TABLE_METHODS,
    default=["none", "whitening", "whitening:64", "sn+abtt:3"],  # a flow per pooling: add it (minutes)
    key="calp_tm",
    help=ui.calibration_help(TABLE_METHODS),
)
table_request = (*inputs, tuple(table_poolings), tuple(methods), cal.flow_json)
ui.estimate(fit_cost(list(table_poolings) if space.is_model else [], list(methods), cal.flow_json))
if ui.run_button("Compute table", "calp_table_go", table_request):
    try:
        if space.is_model:
            df = calibration.calibration_table(
                s.model, s.max_length, pairs, tuple(table_poolings), tuple(methods), fit_on, cal.flow_json
            )
        else:
            vecs, fits = {space.label: ui.space_vectors(pairs.texts)}, {space.label: ui.space_vectors(fit_on)}
            df = calibration.spaces_table(pairs, vecs, fits, tuple(methods), cal.flow_json)
    except InputError as exc:
        ui.user_error(exc)
        st.stop()
    grid = spearman_grid(df, table_poolings, methods)
    best = best_row(df)
    if best:
        st.success(f"Best: {best['pooling']} + {best['calibration']} ({best['spearman']:.1f})")
    ui.chart(spearman_heatmap(grid, 120 + 40 * len(table_poolings)), "calibration_table")
    st.dataframe(grid, width="stretch")
    ui.download_table(df, "calibration_table")
