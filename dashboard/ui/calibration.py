"""Calibration on a page: the method controls, the texts a calibrator is fitted on, and the calibrated space."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import streamlit as st

from isoscope.calibrate.base import Param
from isoscope.calibrate.methods import calibration_methods, explain_method, fill_placeholder, open_param, parse_method
from isoscope.dashboard.services import calibration as calibration_service
from isoscope.dashboard.services import data as data_service
from isoscope.dashboard.services.keyed import Texts, Vectors, joined
from isoscope.dashboard.services.keyed import texts as keyed_texts
from isoscope.dashboard.text import glossary, literal
from isoscope.dashboard.ui.errors import user_error
from isoscope.dashboard.ui.pickers import uploaded
from isoscope.dashboard.ui.sidebar import settings
from isoscope.dashboard.ui.space import space, space_vectors
from isoscope.data import CORPUS_FORMATS
from isoscope.errors import InputError

CALIBRATION_CHOICES = calibration_methods()  # from the registered calibrators, a class of your own included


def calibration_help(methods: Sequence[str]) -> str:
    """The help of a calibrator selector: each of ``methods`` in words (``isoscope.calibrate.methods``)."""
    return glossary(methods, explain_method, "Fitted on unlabelled texts; gold scores are only used to evaluate.")


CALIBRATION_HELP = calibration_help(CALIBRATION_CHOICES)
FIT_CHOICES = ("Demo corpus + these sentences", "These sentences only", "Upload a corpus")
VECTOR_FIT_CHOICES = ("Every row of the vectors file", "These sentences only")  # a vectors space: no other texts


@dataclass(frozen=True)
class Calibration:
    """A calibration choice: method string for isoscope.calibrate.make_calibrator, the flow's parameters as JSON."""

    method: str
    flow_json: str = ""

    @property
    def active(self) -> bool:
        return self.method != "none"


def safe_default(method: str, n_fit: int | None, dim: int) -> str:
    """A page's default calibrator for a fit set of ``n_fit`` vectors: ``method``, or whitening:K when the fit
    set is too small for it (``isoscope.calibrate.fitting.safe_method``); unknown size: ``method``."""
    from isoscope.calibrate.fitting import safe_method

    if n_fit is None or open_param(method):  # a choice whose parameter is set next to it
        return method
    return safe_method(method, n_fit, dim)


def seed_default(name: str, default: object) -> None:
    """Give the keyed widget ``name`` its default through the Session State only, never as the widget's value too
    (a preset sets these keys: Streamlit warns about a widget with both). A default that moved (a fit set of
    another size) replaces a value still at the old default; a value the user chose stays."""
    remembered = f"{name}_default"
    old = st.session_state.get(remembered)
    if name not in st.session_state or (old is not None and old != default and st.session_state[name] == old):
        st.session_state[name] = default
    st.session_state[remembered] = default


def param_box(where, name: str, param: Param, *, dim: int, components: int) -> float:
    """A number box (widget key ``name``) for the parameter a generic choice leaves open (K of whitening:K, D of
    abtt:D), labelled and bounded by its ``Param`` and the vectors' dimension ``dim``. Its first value: ``components``
    for a count of principal components (what the fit set supports), else the parameter's suggestion."""
    cast = int if param.type is int else float
    low = cast(max(param.low or 0, 2 if param.components else 0))  # one whitened component: every cosine +-1
    bounds = [b for b in ({"d": dim, "d-1": dim - 1}.get(param.dims), param.high, param.box_high) if b is not None]
    high = cast(max(low, min(bounds))) if bounds else None
    if high is not None and st.session_state.get(name, low) > high:  # kept from vectors with more dimensions
        st.session_state[name] = high
    first = components if param.components else param.suggest if param.suggest is not None else low
    seed_default(name, cast(max(low, first if high is None else min(first, high))))
    return cast(where.number_input(param.label, low, high, key=name))


def calibration_controls(
    key: str, default: str = "none", include_none: bool = True, *, dim: int | None = None, n_fit: int | None = None
) -> Calibration:
    """Method selector with its parameter (K, D) and, for the flow, its training settings.

    ``dim``: dimension of the vectors to calibrate (default: the session's space's); bounds K and D. ``n_fit``:
    the size of the default fit set, when known: a ``default`` too big for it becomes whitening:K with a K it
    supports (a default must never show a degenerate fit as a success).
    """
    from isoscope.calibrate import Flow
    from isoscope.calibrate.fitting import SAFE_COMPONENTS, safe_components

    dim = int(dim or space().dims or settings().hidden_size)
    default_k = min(SAFE_COMPONENTS, dim) if n_fit is None else safe_components(n_fit, dim)
    safe = safe_default(default, n_fit, dim)
    default = safe if open_param(safe) else parse_method(safe).generic  # whitening:12 is the whitening:K choice
    choices = CALIBRATION_CHOICES if include_none else CALIBRATION_CHOICES[1:]
    c1, c2 = st.columns([2, 1])
    seed_default(f"{key}_method", default)
    choice = c1.selectbox("Calibration", choices, key=f"{key}_method", help=calibration_help(choices))
    method = choice
    if (param := open_param(choice)) is not None:
        method = fill_placeholder(
            choice, param_box(c2, f"{key}_{param.symbol.lower()}", param, dim=dim, components=default_k)
        )
    flow_json = ""
    if choice == "flow":
        base = Flow()
        with st.expander("Flow settings"):
            f1, f2, f3 = st.columns(3)
            flow = Flow(
                epochs=int(f1.number_input("Epochs", 1, 200, base.epochs, key=f"{key}_epochs")),
                lr=float(f2.select_slider("Learning rate", (1e-4, 3e-4, 1e-3, 3e-3), base.lr, key=f"{key}_lr")),
                n_steps=int(f3.number_input("Flow steps", 1, 16, base.n_steps, key=f"{key}_steps")),
                hidden=int(f1.select_slider("Coupling width", (64, 128, 256, 512), base.hidden, key=f"{key}_hid")),
                coupling=f2.selectbox("Coupling", ("additive", "affine"), key=f"{key}_coupling"),
                seed=int(f3.number_input("Seed", 0, 10_000, base.seed, key=f"{key}_seed")),
            )
        flow_json = json.dumps(flow.get_params(), sort_keys=True)
    return Calibration(method, flow_json)


def fit_texts(key: str, target: Sequence[str]) -> tuple[Texts, str] | None:
    """Which texts a calibrator is fitted on: the evaluated sentences, the demo corpus, or an upload (a vectors
    space: every row of the file, or the evaluated sentences); with a label naming them. "Demo corpus + these
    sentences" is ``keyed.joined``: embedded from the pieces, which the pages embed anyway."""
    current = space()
    if not current.is_model:
        st.session_state.setdefault(f"{key}_fit_on_vectors", VECTOR_FIT_CHOICES[0])
        picked = st.radio("Fit the calibrator on", VECTOR_FIT_CHOICES, horizontal=True, key=f"{key}_fit_on_vectors")
        if picked == VECTOR_FIT_CHOICES[0]:
            return keyed_texts(current.texts), current.label
        return keyed_texts(target), "these sentences"
    choice = st.radio("Fit the calibrator on", FIT_CHOICES, horizontal=True, key=f"{key}_fit_on")
    if choice == FIT_CHOICES[0]:
        return joined(data_service.demo_corpus().texts, target), "the demo corpus + these sentences"
    if choice == FIT_CHOICES[1]:
        return keyed_texts(target), "these sentences"
    corpus = uploaded(f"{key}_fitcorpus", "Corpus to fit on", CORPUS_FORMATS, data_service.parse_corpus)
    return (keyed_texts(corpus.texts), corpus.name) if corpus is not None else None


def calibrate(
    cal: Calibration,
    pooling: str,
    fit_on: Sequence[str] | Texts,
    *arrays: np.ndarray,
    fit_vectors: Vectors | None = None,
) -> tuple[object, list[np.ndarray]] | None:
    """Embed the fit texts (unless ``fit_vectors`` are given), fit (cached) and map ``arrays``; a calibrator
    that cannot be fitted on these vectors shows one error line and returns None."""
    try:
        if fit_vectors is None:
            fit_vectors = space_vectors(fit_on, pooling)
        calibrator, mapped = calibration_service.calibrate(cal.method, cal.flow_json, fit_vectors, *arrays)
    except InputError as exc:
        user_error(exc)
        return None
    warn_fit_size(calibrator, fit_vectors.array)
    return calibrator, mapped


def warn_fit_size(calibrator, fit_vectors: np.ndarray) -> None:
    """A warning line when there are too few fit vectors for the dimensions the calibrator whitens."""
    from isoscope.calibrate.fitting import fit_size_warning

    warning = fit_size_warning(calibrator, len(fit_vectors), fit_vectors.shape[1])
    if warning:
        st.warning(literal(warning), icon=":material/warning:")


@dataclass(frozen=True)
class CalibratedSpace:
    """A corpus's vectors after a calibrator chosen on the page, with what the calibrator was fitted on."""

    calibration: Calibration
    vectors: Vectors  # (n, k) calibrated
    fit: Vectors  # (m, d) the fit vectors


def calibrated_space(key: str, raw: Vectors, texts: list[str] | None = None) -> CalibratedSpace:
    """Calibration controls, a (cached) fit and the calibrated ``raw``; stops the page on a bad fit.

    With ``texts`` the user chooses the fit texts (default: the corpus itself); without (uploaded vectors)
    the calibrator is fitted on ``raw``. Warns when there are too few fit vectors for the dimensions.
    """
    cal = calibration_controls(key, default="whitening:K", include_none=False, dim=raw.shape[1], n_fit=len(raw))
    fit_vectors = raw
    if texts is not None:
        st.session_state.setdefault(f"{key}_fit_on", FIT_CHOICES[1])  # the corpus itself, unless the user asks
        fit = fit_texts(key, texts)
        if fit is None:
            st.stop()
        if fit[0].items != tuple(texts):
            try:
                fit_vectors = space_vectors(fit[0])
            except InputError as exc:  # a vectors file without the fit texts
                user_error(exc)
                st.stop()
    try:
        calibrated = calibration_service.calibrated(cal.method, cal.flow_json, fit_vectors, raw)
    except InputError as exc:
        user_error(exc)
        st.stop()
    warn_fit_size(calibration_service.fit_calibrator(cal.method, cal.flow_json, fit_vectors), fit_vectors.array)
    return CalibratedSpace(cal, calibrated, fit_vectors)


def fixed_model_download(
    key: str, method: str, flow_json: str, fit_texts: Sequence[str] | Texts, *, pooling: str | None = None
) -> None:
    """Take the fix home: "Prepare the fixed model" writes the session's model with ``method`` (fitted, cached, on
    the vectors of ``fit_texts`` with ``pooling``, default the sidebar's) as a sentence-transformers folder
    (``isoscope.export``), then "Download the fixed model" hands its zip over. A vectors file has no model, and a
    flow is not affine: one line says so."""
    from isoscope.dashboard.services import export as export_service
    from isoscope.dashboard.ui.controls import run_button

    st.markdown("**Take the fix home**")
    if not space().is_model:
        st.caption(
            "A vectors file has no model to export: write its calibrated vectors or a FAISS index with "
            "`isoscope export --vectors FILE --calibrate METHOD`."
        )
        return
    if parse_method(method).trains_for_epochs:
        st.caption(
            f"{literal(method)} is not an affine map, so it cannot ride along as a Dense layer: export it as one "
            "ONNX graph with `isoscope export --format onnx`."
        )
        return
    s = settings()
    pooling = pooling or s.pooling
    items = fit_texts if isinstance(fit_texts, Texts) else keyed_texts(fit_texts)
    request = (s.model, pooling, s.max_length, method, flow_json, items.key)
    st.caption(
        "A sentence-transformers folder: the model's recipe, then a Dense layer holding the fitted map (exactly), "
        "with a README of what it was fitted on and the numbers before and after. It runs without Isoscope."
    )
    if not run_button("Prepare the fixed model", f"{key}_fixed", request):
        return
    try:
        fit = space_vectors(items, pooling)
        data = export_service.fixed_model_zip(
            s.model, pooling, s.max_length, method=method, flow_json=flow_json, fit=fit, fit_texts=items
        )
    except InputError as exc:
        user_error(exc)
        return
    st.download_button(
        "Download the fixed model (.zip)",
        data,
        file_name=f"fixed-{method.replace(':', '-').replace('+', '-')}.zip",
        mime="application/zip",
        on_click="ignore",
        key=f"{key}_fixed_dl",
        icon=":material/download:",
    )
