"""AppTest: the sidebar's Device box lists what this machine has, and the session's settings say which runs."""

from __future__ import annotations

import torch
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.services.models import ModelKey
from isoscope.dashboard.ui.sidebar import device_choices


def test_the_device_is_part_of_the_model_key() -> None:
    assert str(ModelKey("org/name", "fp32", "cpu")) == "org/name" == str(ModelKey("org/name"))  # CPU keys unchanged
    key = ModelKey("org/name", "fp32", "cuda:1")
    assert str(key) == "cuda:1@org/name" and (key.name, key.precision, key.device) == ("org/name", "fp32", "cuda:1")
    assert key != ModelKey("org/name") and key.on_cpu == ModelKey("org/name")
    int8 = ModelKey("", "int8", "mps")
    assert (int8.device, int8.runs_on, str(int8)) == ("mps", ("cpu", "float32"), "int8:mps@")
    assert ModelKey("/models/a@b").device == "cpu"  # an @ inside a path is no device
    assert ModelKey("org/name", device="auto") == ModelKey("org/name")  # auto is the CPU, as in the keys before


def test_device_choices_are_this_machines() -> None:
    choices = device_choices()
    assert "cpu" in choices and "auto" not in choices
    assert any(c.startswith("cuda:") for c in choices) == torch.cuda.is_available()
    assert choices[0] == ("cuda:0" if torch.cuda.is_available() else choices[0])


def test_sidebar_shows_the_device_and_the_settings_carry_it(app: AppTest) -> None:
    box = app.sidebar.selectbox(key="device")
    assert box.label == "Device" and list(box.options) == device_choices()
    settings = app.session_state["_settings"]
    assert settings.device == box.value == device_choices()[0]
    assert settings.model == ModelKey("", "fp32", settings.device)
    assert any(settings.device in c.value for c in app.sidebar.caption)


def test_the_loss_surfaces_train_in_float32_on_the_sidebars_device() -> None:
    """What the Loss surfaces page trains (``trainable_encoder``): the float32 weights on the key's device, whatever
    its dtype and precision; on this machine's CPU, the one fp32 encoder every page shares."""
    from isoscope.dashboard.services.models import fp32_encoder, trainable_encoder, training_device

    assert training_device(ModelKey("", "fp32", "cpu")) == "the CPU"
    assert training_device(ModelKey("", "int8", "cuda:1", "bfloat16")) == "cuda:1"
    assert training_device(ModelKey("", "fp32", "mps", "float16")) == "mps"
    assert ModelKey("", "int8", "cuda:1", "bfloat16").trainable == ModelKey("", "fp32", "cuda:1")  # float32 there
    encoder = trainable_encoder(ModelKey("", "int8", "cpu"))
    assert encoder is fp32_encoder(ModelKey()) and encoder.device == "cpu" and encoder.dtype == "float32"
