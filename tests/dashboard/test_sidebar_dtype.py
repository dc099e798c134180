"""AppTest: the sidebar's Dtype box. On a GPU it offers float32, float16 and bfloat16 and the choice reaches the model
key (as the device does); on the CPU it is float32, shown disabled with why (float16 is refused there)."""

from __future__ import annotations

import torch
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.services.models import model_key, split_device, split_key, split_placement
from isoscope.encode.device import DTYPE_DESCRIPTIONS, DTYPES


def test_dtype_in_the_model_key_round_trip() -> None:
    assert model_key("org/name", "fp32", "cpu", "float32") == "org/name" == model_key("org/name")  # CPU keys as before
    assert model_key("org/name", "fp32", "cuda:1", "float32") == "cuda:1@org/name"  # float32 GPU keys as before
    key = model_key("org/name", "fp32", "cuda:1", "bfloat16")
    assert key == "cuda:1+bfloat16@org/name" and split_key(key) == (key, "fp32")
    assert split_placement(key) == ("cuda:1", "bfloat16", "org/name")
    assert split_device(key) == ("cuda:1", "org/name")  # what the CPU's fp32 copies read: the name
    assert split_placement(model_key("", "fp32", "mps", "float16")) == ("mps", "float16", "")
    int8 = model_key("org/name", "int8", "cuda:0", "float16")
    assert split_key(int8) == ("cuda:0+float16@org/name", "int8")
    assert split_placement("/models/a+bfloat16@b") == ("cpu", "float32", "/models/a+bfloat16@b")  # a path's @
    assert model_key("org/name", "fp32", "cpu", "bfloat16") == "org/name"  # the sidebar runs the CPU in float32


def _gpu_box() -> None:
    import streamlit as st

    from isoscope.dashboard.ui.sidebar import _dtype_box

    st.session_state["chosen"] = _dtype_box("cuda:0")


def test_on_a_gpu_the_box_offers_every_dtype_and_says_what_each_does() -> None:
    """The box drawn for a GPU device (this machine may have none, so the box is drawn alone)."""
    at = AppTest.from_function(_gpu_box).run()
    assert not at.exception, at.exception
    box = at.selectbox(key="dtype")
    assert box.label == "Dtype" and tuple(box.options) == DTYPES and not box.disabled
    assert box.value == "float32" == at.session_state["chosen"]
    assert all(DTYPE_DESCRIPTIONS[d] in box.help for d in DTYPES)
    box.select("bfloat16").run()
    assert at.session_state["chosen"] == "bfloat16"


def test_on_the_cpu_the_box_is_float32_disabled_with_why(app: AppTest) -> None:
    if torch.cuda.is_available():
        app.sidebar.selectbox(key="device").select("cpu").run()
    box = app.sidebar.selectbox(key="dtype_cpu")
    assert box.label == "Dtype" and box.disabled and box.value == "float32"
    assert "float16 runs on a GPU only" in box.help and all(DTYPE_DESCRIPTIONS[d] in box.help for d in DTYPES)
    assert not [b for b in app.sidebar.selectbox if b.key == "dtype"]  # no live box on the CPU
    settings = app.session_state["_settings"]
    assert settings.device == "cpu" and settings.dtype == "float32"
    assert settings.model == model_key("", "fp32", "cpu") == ""  # the CPU's keys are the ones before dtypes
    labels = [b.label for b in app.sidebar.selectbox]
    assert labels.index("Device") < labels.index("Dtype") < labels.index("Pooling")  # boxes read by label
