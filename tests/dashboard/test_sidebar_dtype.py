"""AppTest: the sidebar's Dtype box. On a GPU it offers float32, float16 and bfloat16 and the choice reaches the model
key (as the device does); on the CPU it is float32, shown disabled with why (float16 is refused there)."""

from __future__ import annotations

import torch
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.services.models import ModelKey
from isoscope.encode.device import DTYPE_DESCRIPTIONS, DTYPES


def test_the_dtype_is_part_of_the_model_key() -> None:
    assert str(ModelKey("org/name", "fp32", "cpu", "float32")) == "org/name" == str(ModelKey("org/name"))  # as before
    assert str(ModelKey("org/name", "fp32", "cuda:1", "float32")) == "cuda:1@org/name"  # float32 GPU keys as before
    key = ModelKey("org/name", "fp32", "cuda:1", "bfloat16")
    assert str(key) == "cuda:1+bfloat16@org/name" and key.precision == "fp32"
    assert (key.name, key.device, key.dtype) == ("org/name", "cuda:1", "bfloat16") and key.runs_on == (
        "cuda:1",
        "bfloat16",
    )
    assert key.on_cpu == ModelKey("org/name")  # what the CPU's fp32 copies load: the name
    assert key != ModelKey("org/name", "fp32", "cuda:1")  # a half dtype is a model of its own
    assert ModelKey("", "fp32", "mps", "float16").runs_on == ("mps", "float16")
    int8 = ModelKey("org/name", "int8", "cuda:0", "float16")
    assert str(int8) == "int8:cuda:0+float16@org/name" and int8.runs_on == ("cpu", "float32")
    assert int8.at("fp32") == ModelKey("org/name", "fp32", "cuda:0", "float16")
    path = ModelKey("/models/a+bfloat16@b")  # a path's @ and + are part of its name, never read as a device
    assert (path.name, path.device, path.dtype, str(path)) == ("/models/a+bfloat16@b", "cpu", "float32", path.name)
    assert ModelKey("org/name", "fp32", "cpu", "bfloat16") == ModelKey("org/name")  # the CPU runs float32


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
    assert settings.model == ModelKey("", "fp32", "cpu") and str(settings.model) == ""  # the keys before dtypes
    labels = [b.label for b in app.sidebar.selectbox]
    assert labels.index("Device") < labels.index("Dtype") < labels.index("Pooling")  # boxes read by label
