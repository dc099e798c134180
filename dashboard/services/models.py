"""Loaded models: shared, cached once per server process.

The sidebar names the encoder with one typed value, ``ModelKey`` (the model, its precision, the device and the
dtype), built once by ``ui.settings()`` and passed to every service. Streamlit's caches hash a frozen dataclass by
its fields (``dataclasses.asdict``), so each distinct key loads its model once and every cached result keyed by it
(and every on-disk cache, keyed by the encoder's fingerprint) keeps precisions, devices and dtypes apart.
``str(key)`` is the key as one string for the keys of arrays (``make_key``): the string these keys were written as
before they were typed (``int8:`` + ``DEVICE[+DTYPE]@`` + the name, the CPU and float32 adding nothing), so arrays
and the calibrators kept on disk under them keep their keys. It is written, never parsed back.

``encoder(key)`` gives the encoder at the key's precision (what encodes); ``fp32_encoder(key)`` the fp32 model on
the CPU (what is counted or edited: parameter budgets, rank-k shrinking); ``trainable_encoder(key)`` the float32
model on the key's device (what the loss surfaces train there).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import streamlit as st

from isoscope.dashboard.services.keyed import HASH_FUNCS, Texts
from isoscope.encode.device import parse_device, parse_dtype
from isoscope.encode.models import Encoder, load_encoder
from isoscope.encode.precision import parse_precision


@dataclass(frozen=True)
class ModelKey:
    """The sidebar's model as every service takes it: which model, at which precision, where and in which dtype.

    Normalised when built, so two keys of the same encoder are equal: the device is parsed (``auto`` is the CPU,
    as the sidebar offers what ``auto`` picks first), the CPU runs float32 whatever ``dtype`` says. An int8 key
    keeps the sidebar's device and dtype (the loss surfaces train there), though the int8 model itself runs on
    the CPU in float32 (``runs_on``).
    """

    name: str = ""  # "" = the embedded default, else a path or hub id
    precision: str = "fp32"  # isoscope.encode.precision.PRECISIONS
    device: str = "cpu"  # isoscope.encode.device: cpu, cuda, cuda:N, mps
    dtype: str = "float32"  # isoscope.encode.device.DTYPES; float32 on the CPU

    def __post_init__(self) -> None:
        device = parse_device(self.device)
        device = "cpu" if device == "auto" else device
        object.__setattr__(self, "precision", parse_precision(self.precision))
        object.__setattr__(self, "device", device)
        object.__setattr__(self, "dtype", "float32" if device == "cpu" else parse_dtype(self.dtype))

    def __str__(self) -> str:
        """The key as one string, for the keys of arrays (see the module docstring); never parsed."""
        where = (
            "" if self.device == "cpu" else self.device + ("" if self.dtype == "float32" else f"+{self.dtype}") + "@"
        )
        return ("int8:" if self.precision == "int8" else "") + where + self.name

    def at(self, precision: str) -> ModelKey:
        """The same model, device and dtype at ``precision``."""
        return replace(self, precision=precision)

    @property
    def runs_on(self) -> tuple[str, str]:
        """(device, dtype) the key's encoder runs in: the CPU in float32 for int8, else the key's own."""
        return ("cpu", "float32") if self.precision == "int8" else (self.device, self.dtype)

    @property
    def on_cpu(self) -> ModelKey:
        """The fp32 model on the CPU, in float32 (what is counted or edited)."""
        return ModelKey(self.name)

    @property
    def trainable(self) -> ModelKey:
        """The fp32 model in float32 on the key's device (what the loss surfaces train)."""
        return ModelKey(self.name, "fp32", self.device)


@st.cache_resource(show_spinner="Loading model…", max_entries=3)
def _fp32(key: ModelKey) -> Encoder:
    return load_encoder(key.name or None, key.device, dtype=key.dtype)


@st.cache_resource(show_spinner="Building the int8 model (once per model)…", max_entries=2)
def _int8(key: ModelKey) -> Encoder:
    from isoscope.encode.quantize import quantize_encoder

    return quantize_encoder(_fp32(key.on_cpu))  # a copy on the CPU: the shared fp32 encoder stays as it is


def encoder(key: ModelKey) -> Encoder:
    """A loaded encoder at the key's precision (on its device, in its dtype; int8 on the CPU)."""
    return _int8(key) if key.precision == "int8" else _fp32(key)


@st.cache_resource(show_spinner="Preparing the fast engine (once per model)…", max_entries=2)
def fast_encoder(key: ModelKey) -> Encoder:
    """The encoder that embeds for ``key``: the fastest fp32 engine of its model (``isoscope.encode.engines``:
    the same vectors within the fp32 tolerance), or the int8 copy as it is."""
    from isoscope.encode.engines import fastest_fp32_encoder

    return fastest_fp32_encoder(encoder(key))


def fp32_encoder(key: ModelKey) -> Encoder:
    """The fp32 encoder of ``key``'s model on the CPU, whatever its precision, device and dtype (for counting or
    editing weights: parameter budgets, the anatomy of the model)."""
    return _fp32(key.on_cpu)


def trainable_encoder(key: ModelKey) -> Encoder:
    """The float32 weights of ``key``'s model on the sidebar's device, whatever the key's precision and dtype (what
    the loss surfaces train and evaluate there, ``isoscope.landscape.placement``). On the CPU it is
    ``fp32_encoder(key)``; on a GPU in float32, the sidebar's own encoder."""
    return _fp32(key.trainable)


def training_device(key: ModelKey) -> str:
    """Where ``trainable_encoder(key)`` runs, in words for a caption: ``the CPU``, ``cuda:0``, ``mps``."""
    return "the CPU" if key.device == "cpu" else key.device


@st.cache_resource(show_spinner="Loading a private copy of the model…", max_entries=1)
def _private(key: ModelKey) -> Encoder:
    return load_encoder(key.name or None, key.device)


def private_encoder(key: ModelKey) -> Encoder:
    """A second fp32 copy of the model whose weights may be swapped temporarily (rank-k shrink), so the shared
    cached encoder that other pages use is never touched. Always fp32: the int8 model's graph holds its own
    copy of the weights, which a swap would not reach."""
    return _private(key.on_cpu)  # on the CPU, like fp32_encoder


@st.cache_data(show_spinner="Counting tokens…", max_entries=16, hash_funcs=HASH_FUNCS)
def token_lengths(key: ModelKey, texts: Texts) -> np.ndarray:
    """Number of tokens of each text (n,) with the model's tokenizer, special tokens included, untruncated."""
    tok = fp32_encoder(key).tokenizer
    items = texts.items
    out = np.empty(len(items), np.int64)
    for s in range(0, len(items), 1024):
        ids = tok(list(items[s : s + 1024]), add_special_tokens=True, truncation=False)["input_ids"]
        out[s : s + len(ids)] = [len(x) for x in ids]
    return out
