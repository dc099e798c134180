"""The shared sidebar (model, device, dtype, precision, pooling, max length), drawn once by the router, and its
Settings."""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass

import streamlit as st

from isoscope.dashboard import classroom
from isoscope.dashboard.services.models import ModelKey
from isoscope.dashboard.services.models import encoder as load_model
from isoscope.dashboard.text import glossary, literal
from isoscope.dashboard.ui.errors import bug_report, user_error
from isoscope.encode.device import DTYPE_DESCRIPTIONS, DTYPES, available_devices, resolve_device
from isoscope.encode.pooling import PoolingSpec, default_pooling, describe_pooling, parse_pooling, pooling_choices
from isoscope.encode.precision import PRECISION_DESCRIPTIONS, PRECISIONS
from isoscope.errors import InputError

log = logging.getLogger("isoscope.dashboard")

MAX_LENGTHS = (32, 64, 128, 256, 512)
PRECISION_HELP = glossary(PRECISIONS, PRECISION_DESCRIPTIONS.__getitem__) + (
    "\n\nLoss surfaces and parameter budgets always use fp32."
)
POOLING_LEAD = "How token vectors become one sentence vector."
DEVICE_HELP = (
    "Where the model runs: the CPU, or a GPU this machine has (CUDA, Apple MPS). The vectors are the same within "
    "float32 round-off; int8 always runs on the CPU."
)
DTYPE_HELP = glossary(
    DTYPES, DTYPE_DESCRIPTIONS.__getitem__, "The float type of the model's weights and arithmetic."
) + (
    "\n\nVectors come back as float32 whatever the dtype; a half dtype gets its own caches. Loss surfaces and "
    "parameter budgets always use float32."
)
DTYPE_CPU_HELP = (
    "float32 on the CPU: float16 runs on a GPU only, and the CPU's fast paths are the ONNX float32 and int8 "
    "engines (Precision). Choose a GPU under Device for float16 or bfloat16.\n\n" + DTYPE_HELP
)


def pooling_help(modes: list[str], lead: str = POOLING_LEAD) -> str:
    """The help of a pooling selector: each of ``modes`` in words (``isoscope.encode.pooling.describe_pooling``)."""
    return glossary(modes, describe_pooling, lead)


@dataclass(frozen=True)
class Settings:
    """What the sidebar chose; shared by every page."""

    model: ModelKey  # the model, precision, device and dtype: every service's key (services.models)
    model_label: str
    pooling: str  # the selector's value: one of ``pooling_modes``
    max_length: int
    num_layers: int
    hidden_size: int
    is_encoder_decoder: bool
    pooling_spec: PoolingSpec | None = None  # ``pooling`` parsed, once, by the sidebar
    has_recipe: bool = False  # the model has its own recipe (the pooling ``model``)
    recipe: str = ""  # that recipe in words (``Recipe.describe``)

    @property
    def precision(self) -> str:
        """``fp32`` or ``int8`` (``isoscope.encode.precision.PRECISIONS``): the key's."""
        return self.model.precision

    @property
    def device(self) -> str:
        """Where the model runs (``isoscope.encode.device``): the key's device, the CPU for int8."""
        return self.model.runs_on[0]

    @property
    def dtype(self) -> str:
        """Its float type (``isoscope.encode.device.DTYPES``): the key's dtype, float32 for int8 and on the CPU."""
        return self.model.runs_on[1]

    @property
    def spec(self) -> PoolingSpec:
        """The session's pooling as the library takes it."""
        return self.pooling_spec if self.pooling_spec is not None else parse_pooling(self.pooling)

    @property
    def pooling_modes(self) -> list[str]:
        """Every pooling the loaded model accepts, layers included."""
        return pooling_choices(self.num_layers, self.is_encoder_decoder, self.has_recipe)


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


def device_choices() -> list[str]:
    """The devices this machine has, the one ``auto`` picks first: ``cpu``, ``cuda:0``, ..., ``mps``."""
    found = [d for d in available_devices() if d != "auto"]
    first = str(resolve_device("auto"))
    return [first, *(d for d in found if d != first)]


def _device_box() -> str:
    """The device the model runs on: a select box of what this machine has (classroom mode: ``auto``'s pick)."""
    choices = device_choices()
    if classroom.enabled() or len(choices) == 1:
        if len(choices) == 1 and not classroom.enabled():
            st.selectbox("Device", choices, key="device", help=DEVICE_HELP, disabled=True)
        return choices[0]
    return st.selectbox("Device", choices, key="device", help=DEVICE_HELP)


def _dtype_box(device: str) -> str:
    """The float type the model runs in: a select box on a GPU; on the CPU, float32, shown disabled with why
    (``isoscope.encode.device.check_dtype`` refuses float16 there; a box of its own key, so a GPU's choice waits
    for the GPU). Classroom mode: float32, no box."""
    if classroom.enabled():
        return "float32"
    if device == "cpu":
        st.selectbox("Dtype", DTYPES, index=0, key="dtype_cpu", help=DTYPE_CPU_HELP, disabled=True)
        return "float32"
    return st.selectbox("Dtype", DTYPES, key="dtype", help=DTYPE_HELP)


def sidebar() -> Settings:
    """Draw the shared sidebar and store the chosen Settings in the session."""
    with st.sidebar:
        st.markdown("#### Model")
        model, label = _model_box()
        device = _device_box()
        dtype = _dtype_box(device)
        try:  # the key is built here, once: every page reads it from the Settings
            key = ModelKey(model, "fp32", device, dtype)
            enc = load_model(key)
        except Exception as exc:  # a model that fails to load falls back to the default, so every page works
            if classroom.enabled():  # the loader's message may name server files: the label only, details logged
                log.error("could not load the allowed model %s: %s", model, "".join(traceback.format_exception(exc)))
                st.error(f"Could not load {literal(label)}.", icon=":material/error:")
            elif isinstance(exc, InputError):
                user_error(exc)
            else:
                bug_report(exc)
            st.caption("Using the embedded default instead.")
            key, label = ModelKey(), None
            enc = load_model(key)
        label = label or enc.name
        where = enc.device if enc.dtype == "float32" else f"{enc.device} · {enc.dtype}"
        st.caption(f"{literal(label)} · {enc.num_layers} layers · d = {enc.hidden_size} · {where}")
        precision = st.radio("Precision", PRECISIONS, horizontal=True, key="precision", help=PRECISION_HELP)
        modes = pooling_choices(enc.num_layers, enc.is_encoder_decoder, enc.has_recipe)
        if st.session_state.get("pooling") not in modes:
            st.session_state["pooling"] = default_pooling(enc).name
        pooling = st.selectbox("Pooling", modes, key="pooling", help=pooling_help(modes))
        if pooling == "model" and enc.recipe is not None:
            st.caption(f"The model's recipe: {literal(enc.recipe.describe())}")
        max_length = st.select_slider("Max tokens per text", MAX_LENGTHS, value=128, key="max_length")
    settings = Settings(
        model=key.at(precision),
        model_label=label,
        pooling=pooling,
        max_length=int(max_length),
        num_layers=enc.num_layers,
        hidden_size=enc.hidden_size,
        is_encoder_decoder=enc.is_encoder_decoder,
        has_recipe=enc.has_recipe,
        recipe=enc.recipe.describe() if enc.recipe is not None else "",
        pooling_spec=parse_pooling(pooling),
    )
    st.session_state["_settings"] = settings
    return settings


def settings() -> Settings:
    """The sidebar's current choice (the router draws the sidebar before every page)."""
    s = st.session_state.get("_settings")
    return s if s is not None else sidebar()
