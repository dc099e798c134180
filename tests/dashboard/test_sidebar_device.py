"""AppTest: the sidebar's Device box lists what this machine has, and the session's settings say which runs."""

from __future__ import annotations

import torch
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.services.models import model_key, split_device, split_key
from isoscope.dashboard.ui.sidebar import device_choices


def test_device_in_the_model_key_round_trip() -> None:
    assert model_key("org/name", "fp32", "cpu") == "org/name" == model_key("org/name")  # CPU keys are unchanged
    key = model_key("org/name", "fp32", "cuda:1")
    assert key == "cuda:1@org/name" and split_key(key) == ("cuda:1@org/name", "fp32")
    assert split_device(split_key(key)[0]) == ("cuda:1", "org/name")
    assert split_device(split_key(model_key("", "int8", "mps"))[0]) == ("mps", "")
    assert split_device("/models/a@b") == ("cpu", "/models/a@b")  # an @ inside a path is no device


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
    assert settings.model == model_key("", "fp32", settings.device)
    assert any(settings.device in c.value for c in app.sidebar.caption)


def test_the_loss_surfaces_train_in_float32_on_the_sidebars_device() -> None:
    """What the Loss surfaces page trains (``trainable_encoder``): the float32 weights on the key's device, whatever
    its dtype and precision; on this machine's CPU, the one fp32 encoder every page shares."""
    from isoscope.dashboard.services.models import fp32_encoder, trainable_encoder, training_device

    assert training_device(model_key("", "fp32", "cpu")) == "the CPU"
    assert training_device(model_key("", "int8", "cuda:1", "bfloat16")) == "cuda:1"
    assert training_device(model_key("", "fp32", "mps", "float16")) == "mps"
    encoder = trainable_encoder(model_key("", "int8", "cpu"))
    assert encoder is fp32_encoder("") and encoder.device == "cpu" and encoder.dtype == "float32"
