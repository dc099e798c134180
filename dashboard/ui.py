"""Shared widgets: the sidebar settings, data pickers, errors shown as one line, charts with downloads.

User text is never rendered as HTML: tables show it literally, messages escape Markdown, and plot hover
text is HTML-escaped (plotly renders a subset of HTML tags in hover labels).
"""

from __future__ import annotations

import html
import json
import logging
import re
import traceback
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from isoscope.calibrate.methods import CALIBRATION_METHODS, METHOD_DESCRIPTIONS
from isoscope.dashboard import classroom
from isoscope.dashboard.bugs import log_bug
from isoscope.dashboard.services import calibration as calibration_service
from isoscope.dashboard.services import data as data_service
from isoscope.dashboard.services import embeddings
from isoscope.dashboard.services.keyed import Vectors
from isoscope.dashboard.services.models import encoder as load_model
from isoscope.dashboard.services.models import model_key
from isoscope.data import CORPUS_FORMATS, TABLE_FORMATS, Corpus, Pairs, safe_csv
from isoscope.encode.pooling import default_pooling, pooling_choices
from isoscope.encode.precision import PRECISIONS
from isoscope.errors import InputError, first_line

log = logging.getLogger("isoscope.dashboard")

MAX_LENGTHS = (32, 64, 128, 256, 512)
PRECISION_HELP = (
    "fp32: the model as trained. int8: its Linear layers in int8 through ONNX Runtime, about twice as fast on a "
    "CPU for a few tenths of a Spearman point (built once per model; cached apart from fp32). Loss surfaces and "
    "parameter budgets always use fp32."
)
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


@dataclass(frozen=True)
class Settings:
    """What the sidebar chose; shared by every page."""

    model: str  # services.models.model_key: "" = embedded default, else a path or hub id; "int8:" + it for int8
    model_label: str
    pooling: str
    max_length: int
    num_layers: int
    hidden_size: int
    is_encoder_decoder: bool
    precision: str = "fp32"

    @property
    def pooling_modes(self) -> list[str]:
        """Every pooling the loaded model accepts, layers included."""
        return pooling_choices(self.num_layers, self.is_encoder_decoder)


# ------------------------------------------------------------------ text and errors


def literal(text: object) -> str:
    """Escape Markdown so user text shows exactly as typed inside st.markdown/st.error."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def plot_text(text: object, width: int = 80) -> str:
    """User text for plotly hover labels: HTML-escaped, wrapped with <br>."""
    words, lines, line = str(text).split(), [], ""
    for w in words:
        if line and len(line) + len(w) > width:
            lines.append(line)
            line = ""
        line = f"{line} {w}".strip()
    lines.append(line)
    return "<br>".join(html.escape(x) for x in lines[:6])


def user_error(exc: BaseException | str) -> None:
    """One-line error box for the user's mistake (never a traceback)."""
    st.error(literal(first_line(exc, 10_000)), icon=":material/error:")


def bug_report(exc: BaseException) -> None:
    """A short "this is a bug" box with the traceback in an expander, also logged on the server.

    For anything that is not an ``InputError``: a bug must look like a bug, never like bad input.
    """
    log_bug(exc)
    st.error(
        f"This is a bug in Isoscope, not a problem with your input ({type(exc).__name__}: "
        f"{literal(first_line(exc, 300))}). What you loaded is kept; please report it with the traceback below.",
        icon=":material/bug_report:",
    )
    with st.expander("Traceback"):
        st.exception(exc)


def show_warnings(warnings: Iterable[str]) -> None:
    for w in warnings:
        st.warning(literal(w), icon=":material/warning:")


# ------------------------------------------------------------------ sidebar


def _model_box() -> tuple[str, str | None]:
    """(model to load: "" = embedded, else a path or hub id; its label, None = the encoder's name).

    In classroom mode there is no free text box: a select box offers the embedded model and the teacher's
    allowlist by label, so nobody can probe the server's file system through it.
    """
    if classroom.enabled():
        options = {"all-MiniLM-L6-v2 (embedded)": "", **dict(classroom.allowed_models())}
        label = st.selectbox(
            "Model", list(options), key="model_choice", help="The embedded model, or one your teacher made available."
        )
        return options[label], label
    typed = st.text_input(
        "Model path or Hugging Face id",
        key="model_input",
        placeholder="empty = embedded all-MiniLM-L6-v2",
        help="A folder saved with save_pretrained, or a hub id (needs a network). "
        "Leave empty for the embedded, offline all-MiniLM-L6-v2.",
    ).strip()
    return typed, None


def sidebar() -> Settings:
    """Draw the shared sidebar and store the chosen Settings in the session."""
    with st.sidebar:
        st.markdown("#### Model")
        model, label = _model_box()
        try:
            enc = load_model(model)
        except Exception as exc:  # a model that fails to load falls back to the default, so every page works
            if classroom.enabled():  # the loader's message may name server files: the label only, details logged
                log.error("could not load the allowed model %s: %s", model, "".join(traceback.format_exception(exc)))
                st.error(f"Could not load {literal(label)}.", icon=":material/error:")
            elif isinstance(exc, InputError):
                user_error(exc)
            else:
                bug_report(exc)
            st.caption("Using the embedded default instead.")
            model, label = "", None
            enc = load_model("")
        label = label or enc.name
        st.caption(f"{literal(label)} · {enc.num_layers} layers · d = {enc.hidden_size}")
        precision = st.radio("Precision", PRECISIONS, horizontal=True, key="precision", help=PRECISION_HELP)
        modes = pooling_choices(enc.num_layers, enc.is_encoder_decoder)
        if st.session_state.get("pooling") not in modes:
            st.session_state["pooling"] = default_pooling(enc.is_encoder_decoder)
        pooling = st.selectbox("Pooling", modes, key="pooling", help="How token vectors become one sentence vector.")
        max_length = st.select_slider("Max tokens per text", MAX_LENGTHS, value=128, key="max_length")
    settings = Settings(
        model=model_key(model, precision),
        model_label=label,
        pooling=pooling,
        max_length=int(max_length),
        num_layers=enc.num_layers,
        hidden_size=enc.hidden_size,
        is_encoder_decoder=enc.is_encoder_decoder,
        precision=precision,
    )
    st.session_state["_settings"] = settings
    return settings


def settings() -> Settings:
    """The sidebar's current choice (the router draws the sidebar before every page)."""
    s = st.session_state.get("_settings")
    return s if s is not None else sidebar()


# ------------------------------------------------------------------ data pickers


def pairs_input(key: str = "pairs") -> Pairs | None:
    """Demo pairs, an uploaded pairs file, or two typed sentences.

    An upload that fails shows one error line and keeps the previously loaded file.
    """
    options = ["Demo pairs", "Upload a file", "Type two sentences"]
    source = st.radio("Sentence pairs", options, horizontal=True, key=f"{key}_source")
    if source == options[0]:
        pairs = data_service.demo_pairs()
        st.caption(f"{len(pairs)} hand-written pairs with gold scores 0-5 (assets/demo_pairs.csv).")
        return pairs
    if source == options[1]:
        return _uploaded(
            key,
            "Pairs file: sentence1, sentence2 and an optional score 0-5 (header optional)",
            TABLE_FORMATS,
            data_service.parse_pairs,
        )
    a = st.text_input("First sentence", "A man is playing a guitar on stage.", key=f"{key}_a", max_chars=2000)
    b = st.text_input("Second sentence", "Someone performs music for an audience.", key=f"{key}_b", max_chars=2000)
    if not a.strip() or not b.strip():
        st.info("Type two sentences to compare.")
        return None
    return Pairs([a.strip()], [b.strip()], None, [], "typed")


def scored_pairs_input(key: str, needs: str) -> Pairs:
    """Pairs with gold scores (at least 3), else an info line naming what ``needs`` them and the page stops."""
    pairs = pairs_input(key)
    if pairs is None:
        st.stop()
    if pairs.scores is None or len(pairs) < 3:
        st.info(f"{needs} gold scores: use the demo pairs or upload a file with a score column.")
        st.stop()
    if np.ptp(pairs.scores) == 0:
        st.info(f"{needs} gold scores that differ: every pair here has the same score, so no correlation exists.")
        st.stop()
    return pairs


def meta_columns(corpus: Corpus, exclude: Iterable[str] = ()) -> list[str]:
    """The corpus's metadata columns to show, without precomputed coordinates (x, y, z) and ``exclude``."""
    from isoscope.neighbours.projection import COORDINATE_COLUMNS

    skip = {*COORDINATE_COLUMNS, *(e.lower() for e in exclude)}
    return [c for c in corpus.meta.columns if str(c).strip().lower() not in skip]


def clamp(key: str, low: float, high: float) -> None:
    """Forget a number widget's value that is out of its range (the corpus changed size): back to its default."""
    value = st.session_state.get(key)
    if isinstance(value, int | float) and not low <= value <= high:
        del st.session_state[key]


def run_button(label: str, key: str, request: object, **button: object) -> bool:
    """A button that starts a long job: True from its press until ``request`` changes.

    ``request`` holds everything the job depends on (inputs, settings), so changing any of them waits for a
    new press instead of silently starting the job again.
    """
    if st.button(label, key=key, **button):
        st.session_state[f"{key}_request"] = request
    return st.session_state.get(f"{key}_request") == request


CORPUS_SOURCES = ("Demo corpus", "Upload a file")


def corpus_source(key: str = "corpus", extra: tuple[str, ...] = ()) -> str:
    """Where the corpus comes from: one of ``CORPUS_SOURCES`` or a page's own ``extra`` sources."""
    return st.radio("Corpus", [*CORPUS_SOURCES, *extra], horizontal=True, key=f"{key}_source")


def corpus_from(source: str, key: str = "corpus") -> Corpus | None:
    """The demo corpus or an uploaded corpus (``source`` in ``CORPUS_SOURCES``); a failed upload keeps the previous one."""
    if source == CORPUS_SOURCES[0]:
        corpus = data_service.demo_corpus()
        st.caption(f"{len(corpus)} hand-written texts over 8 topics (assets/demo_corpus.csv).")
        return corpus
    return _uploaded(
        key,
        "Corpus: one text per line (.txt) or a table with a 'text' column",
        CORPUS_FORMATS,
        data_service.parse_corpus,
    )


def corpus_input(key: str = "corpus") -> Corpus | None:
    """The demo corpus or an uploaded corpus, as the user picks."""
    return corpus_from(corpus_source(key), key)


def _uploaded(key: str, label: str, formats: tuple[str, ...], parse):  # -> Pairs | Corpus | None
    up = st.file_uploader(label, type=[*formats, "json", "tab"], key=f"{key}_upload")
    loaded_key = f"{key}_loaded"
    if up is not None and st.session_state.get(f"{key}_file_id") != up.file_id:
        try:
            st.session_state[loaded_key] = parse(up.getvalue(), up.name)
            st.session_state[f"{key}_file_id"] = up.file_id
        except InputError as exc:
            user_error(exc)
            if st.session_state.get(loaded_key) is not None:
                st.caption(f"Still using the previous file, {literal(st.session_state[loaded_key].name)}.")
    data = st.session_state.get(loaded_key)
    if data is None:
        st.info("Upload a file to begin.")
        return None
    show_warnings(data.warnings)
    st.caption(f"Loaded {literal(data.name)}: {len(data):,} rows.")
    return data


# ------------------------------------------------------------------ outputs


def download_table(df: pd.DataFrame, name: str, label: str = "Download CSV") -> None:
    """CSV download (formula-like cells neutralised)."""
    st.download_button(
        label,
        data=safe_csv(df),
        file_name=f"{name}.csv",
        mime="text/csv",
        key=f"dl_csv_{name}",
        on_click="ignore",
        icon=":material/download:",
    )


def chart(fig: go.Figure, name: str, selectable: bool = False):
    """An interactive plotly chart (PNG from its toolbar) with a standalone HTML download.

    ``selectable``: lasso/box selection reruns the page; returns the selection event (else None).
    """
    event = st.plotly_chart(
        fig,
        width="stretch",
        key=f"chart_{name}",
        config={"toImageButtonOptions": {"format": "png", "filename": name, "scale": 2}, "displaylogo": False},
        **({"on_select": "rerun", "selection_mode": ("lasso", "box")} if selectable else {}),
    )
    st.download_button(
        "Download HTML",
        data=lambda: fig.to_html(include_plotlyjs=True, full_html=True).encode("utf-8"),
        file_name=f"{name}.html",
        mime="text/html",
        key=f"dl_html_{name}",
        on_click="ignore",
        icon=":material/download:",
    )
    return event if selectable else None


# ------------------------------------------------------------------ calibration


CALIBRATION_CHOICES = CALIBRATION_METHODS
CALIBRATION_HELP = "; ".join(f"{m}: {d}" for m, d in METHOD_DESCRIPTIONS.items() if m != "none") + "."
FIT_CHOICES = ("Demo corpus + these sentences", "These sentences only", "Upload a corpus")


@dataclass(frozen=True)
class Calibration:
    """A calibration choice: method string for isoscope.calibrate.make_calibrator, flow settings as JSON."""

    method: str
    flow_json: str = ""

    @property
    def active(self) -> bool:
        return self.method != "none"


def calibration_controls(
    key: str, default: str = "none", include_none: bool = True, dim: int | None = None
) -> Calibration:
    """Method selector with its parameter (K, D) and, for the flow, its training settings.

    ``dim``: dimension of the vectors to calibrate (default: the sidebar model's); bounds K and D.
    """
    from isoscope.calibrate import FlowConfig

    dim = int(dim or settings().hidden_size)
    for name, top in ((f"{key}_k", dim), (f"{key}_d", max(1, min(64, dim - 1)))):
        if st.session_state.get(name, 0) > top:  # kept from vectors with more dimensions
            st.session_state[name] = top
    choices = CALIBRATION_CHOICES if include_none else CALIBRATION_CHOICES[1:]
    c1, c2 = st.columns([2, 1])
    choice = c1.selectbox(
        "Calibration", choices, index=choices.index(default), key=f"{key}_method", help=CALIBRATION_HELP
    )
    method = choice
    if choice.endswith(":K"):
        k = c2.number_input("K (components kept)", 2, max(2, dim), min(64, dim), key=f"{key}_k")
        method = f"whitening:{int(k)}"
    elif choice.endswith(":D"):
        top = max(1, min(64, dim - 1))
        d = c2.number_input("D (top directions removed)", 1, top, min(3, top), key=f"{key}_d")
        method = choice.replace("D", str(int(d)))
    flow_json = ""
    if choice == "flow":
        base = FlowConfig()
        with st.expander("Flow settings"):
            f1, f2, f3 = st.columns(3)
            cfg = FlowConfig(
                epochs=int(f1.number_input("Epochs", 1, 200, base.epochs, key=f"{key}_epochs")),
                lr=float(f2.select_slider("Learning rate", (1e-4, 3e-4, 1e-3, 3e-3), base.lr, key=f"{key}_lr")),
                n_steps=int(f3.number_input("Flow steps", 1, 16, base.n_steps, key=f"{key}_steps")),
                hidden=int(f1.select_slider("Coupling width", (64, 128, 256, 512), base.hidden, key=f"{key}_hid")),
                coupling=f2.selectbox("Coupling", ("additive", "affine"), key=f"{key}_coupling"),
                seed=int(f3.number_input("Seed", 0, 10_000, base.seed, key=f"{key}_seed")),
            )
        flow_json = json.dumps(asdict(cfg), sort_keys=True)
    return Calibration(method, flow_json)


def fit_texts(key: str, target: list[str]) -> tuple[list[str], str] | None:
    """Which texts a calibrator is fitted on: the evaluated sentences, the demo corpus, or an upload."""
    choice = st.radio("Fit the calibrator on", FIT_CHOICES, horizontal=True, key=f"{key}_fit_on")
    if choice == FIT_CHOICES[0]:
        return list(dict.fromkeys(data_service.demo_corpus().texts + list(target))), "demo corpus + target"
    if choice == FIT_CHOICES[1]:
        return target, "target"
    corpus = _uploaded(f"{key}_fitcorpus", "Corpus to fit on", CORPUS_FORMATS, data_service.parse_corpus)
    return (corpus.texts, corpus.name) if corpus is not None else None


def calibrate(
    cal: Calibration, pooling: str, fit_on: list[str], *arrays: np.ndarray, fit_vectors: Vectors | None = None
) -> tuple[object, list[np.ndarray]] | None:
    """Embed the fit texts (unless ``fit_vectors`` are given), fit (cached) and map ``arrays``; a calibrator
    that cannot be fitted on these vectors shows one error line and returns None."""
    s = settings()
    if fit_vectors is None:
        fit_vectors = embeddings.embed(s.model, fit_on, pooling, s.max_length)
    try:
        calibrator, mapped = calibration_service.calibrate(cal.method, cal.flow_json, fit_vectors, *arrays)
    except InputError as exc:
        user_error(exc)
        return None
    warn_fit_size(calibrator, fit_vectors.array)
    return calibrator, mapped


def warn_fit_size(calibrator, fit_vectors: np.ndarray) -> None:
    """A warning line when there are too few fit vectors for the dimensions the calibrator whitens."""
    from isoscope.evaluate.sts import fit_size_warning

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
    s = settings()
    cal = calibration_controls(key, default="whitening:K", include_none=False, dim=raw.shape[1])
    fit_vectors = raw
    if texts is not None:
        st.session_state.setdefault(f"{key}_fit_on", FIT_CHOICES[1])  # the corpus itself, unless the user asks
        fit = fit_texts(key, texts)
        if fit is None:
            st.stop()
        if fit[0] != texts:
            fit_vectors = embeddings.embed(s.model, fit[0], s.pooling, s.max_length)
    try:
        calibrated = calibration_service.calibrated(cal.method, cal.flow_json, fit_vectors, raw)
    except InputError as exc:
        user_error(exc)
        st.stop()
    warn_fit_size(calibration_service.fit_calibrator(cal.method, cal.flow_json, fit_vectors), fit_vectors.array)
    return CalibratedSpace(cal, calibrated, fit_vectors)
