"""Loaded models: shared, cached once per server process.

The sidebar names the encoder with one string, ``model_key(model, precision, device, dtype)``: the model path or hub
id ("" for the embedded default), prefixed with ``DEVICE@`` when it runs elsewhere than on the CPU (``cuda:0@``,
``mps@``: ``isoscope.encode.device``), ``DEVICE+DTYPE@`` when it runs there in a half dtype (``cuda:0+bfloat16@``;
the CPU runs float32 here), and with ``int8:`` for the int8 copy (isoscope.encode.quantize), which always runs on
the CPU in float32. Every service takes that key,
so every cached result keyed by it (and every on-disk cache, keyed by the encoder's fingerprint) keeps the two
precisions (and dtypes) apart. ``encoder(key)`` gives the encoder at the key's precision (what encodes);
``fp32_encoder(key)`` the fp32 model on the CPU (what is counted or edited: parameter budgets, rank-k shrinking);
``trainable_encoder(key)`` the float32 model on the key's device (what the loss surfaces train there).
"""

from __future__ import annotations

import re

import numpy as np
import streamlit as st

from isoscope.dashboard.services.keyed import HASH_FUNCS, Texts
from isoscope.encode.device import parse_device, parse_dtype
from isoscope.encode.models import Encoder, load_encoder
from isoscope.encode.precision import parse_precision

INT8_PREFIX = "int8:"
DEVICE_SEP = "@"
DTYPE_SEP = "+"
_DEVICE_PREFIX = re.compile(r"^(cuda(?::\d{1,3})?|mps)(?:\+(float16|bfloat16))?@")


def model_key(model: str, precision: str = "fp32", device: str = "cpu", dtype: str = "float32") -> str:
    """The string that names ``model`` at ``precision`` on ``device`` in ``dtype`` in every service (the CPU and
    float32 add nothing: those keys are the ones written before devices)."""
    device, dtype = parse_device(device), parse_dtype(dtype)
    if device in ("cpu", "auto"):
        where = ""
    else:
        where = device + (f"{DTYPE_SEP}{dtype}" if dtype != "float32" else "") + DEVICE_SEP
    return (INT8_PREFIX if parse_precision(precision) == "int8" else "") + where + model


def split_placement(model: str) -> tuple[str, str, str]:
    """(device, dtype, model) of a model string that may start with ``DEVICE@`` or ``DEVICE+DTYPE@``: ``cpu`` and
    ``float32`` when it does not."""
    found = _DEVICE_PREFIX.match(model)
    if found is None:
        return "cpu", "float32", model
    return found.group(1), found.group(2) or "float32", model[found.end() :]


def split_device(model: str) -> tuple[str, str]:
    """(device, model) of a model string that may start with ``DEVICE@`` (its dtype dropped): ``cpu`` when it does
    not."""
    device, _dtype, name = split_placement(model)
    return device, name


def split_key(key: str) -> tuple[str, str]:
    """(model, precision) of a ``model_key``."""
    if key.startswith(INT8_PREFIX):
        return key[len(INT8_PREFIX) :], "int8"
    return key, "fp32"


@st.cache_resource(show_spinner="Loading model…", max_entries=3)
def _fp32(model: str) -> Encoder:
    device, dtype, name = split_placement(model)
    return load_encoder(name or None, device, dtype=dtype)


@st.cache_resource(show_spinner="Building the int8 model (once per model)…", max_entries=2)
def _int8(model: str) -> Encoder:
    from isoscope.encode.quantize import quantize_encoder

    return quantize_encoder(_fp32(split_device(model)[1]))  # a copy on the CPU: the shared fp32 encoder stays as it is


def encoder(key: str) -> Encoder:
    """A loaded encoder at the key's precision; ``key`` is a ``model_key`` ("" for the embedded default)."""
    model, precision = split_key(key)
    return _int8(model) if precision == "int8" else _fp32(model)


@st.cache_resource(show_spinner="Preparing the fast engine (once per model)…", max_entries=2)
def fast_encoder(key: str) -> Encoder:
    """The encoder that embeds for ``key``: the fastest fp32 engine of its model (``isoscope.encode.engines``:
    the same vectors within the fp32 tolerance), or the int8 copy as it is."""
    from isoscope.encode.engines import fastest_fp32_encoder

    return fastest_fp32_encoder(encoder(key))


def fp32_encoder(key: str) -> Encoder:
    """The fp32 encoder of ``key``'s model on the CPU, whatever its precision, device and dtype (for counting or
    editing weights: parameter budgets, the anatomy of the model)."""
    return _fp32(split_device(split_key(key)[0])[1])


def trainable_encoder(key: str) -> Encoder:
    """The float32 weights of ``key``'s model on the sidebar's device, whatever the key's precision and dtype (what
    the loss surfaces train and evaluate there, ``isoscope.landscape.placement``). On the CPU it is
    ``fp32_encoder(key)``; on a GPU in float32, the sidebar's own encoder."""
    device, _dtype, name = split_placement(split_key(key)[0])
    return _fp32(model_key(name, "fp32", device))


def training_device(key: str) -> str:
    """Where ``trainable_encoder(key)`` runs, in words for a caption: ``the CPU``, ``cuda:0``, ``mps``."""
    device = split_placement(split_key(key)[0])[0]
    return "the CPU" if device == "cpu" else device


@st.cache_resource(show_spinner="Loading a private copy of the model…", max_entries=1)
def _private(model: str) -> Encoder:
    device, name = split_device(model)
    return load_encoder(name or None, device)


def private_encoder(key: str) -> Encoder:
    """A second fp32 copy of the model whose weights may be swapped temporarily (rank-k shrink), so the shared
    cached encoder that other pages use is never touched. Always fp32: the int8 model's graph holds its own
    copy of the weights, which a swap would not reach."""
    return _private(split_device(split_key(key)[0])[1])  # on the CPU, like fp32_encoder


@st.cache_data(show_spinner="Counting tokens…", max_entries=16, hash_funcs=HASH_FUNCS)
def token_lengths(model: str, texts: Texts) -> np.ndarray:
    """Number of tokens of each text (n,) with the model's tokenizer, special tokens included, untruncated."""
    tok = fp32_encoder(model).tokenizer
    items = texts.items
    out = np.empty(len(items), np.int64)
    for s in range(0, len(items), 1024):
        ids = tok(list(items[s : s + 1024]), add_special_tokens=True, truncation=False)["input_ids"]
        out[s : s + len(ids)] = [len(x) for x in ids]
    return out
