"""AppTest: the Compare spaces page: presets, self-comparison known answers, neighbour lists, a fine-tuned checkpoint."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import numpy as np
import pytest
from streamlit.elements.lib import policies
from streamlit.testing.v1 import AppTest

from isoscope.cache import ArrayCache
from isoscope.comparison import compare_spaces
from isoscope.data import load_corpus
from isoscope.encode.embed import EmbedConfig, encode_many
from isoscope.paths import DEMO_CORPUS
from tests.conftest import private_cache
from tests.dashboard.conftest import open_page


def heatmap(at: AppTest) -> np.ndarray:
    """The layer x layer CKA matrix drawn by the page (its first chart)."""
    (fig,) = [
        f for f in (json.loads(c.proto.spec) for c in at.get("plotly_chart")) if f["data"][0]["type"] == "heatmap"
    ]
    z = fig["data"][0]["z"]
    if isinstance(z, dict):  # plotly's typed-array JSON: {"dtype", "bdata" (base64), "shape"}
        shape = tuple(int(x) for x in str(z["shape"]).split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape).astype(np.float64)
    return np.array(z, dtype=np.float64)


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def frame(at: AppTest, column: str):
    """The first dataframe that has ``column``."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


@pytest.fixture()
def no_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(private_cache(tmp_path / "cache")))  # no runs; embeddings shared
    return tmp_path / "cache"


def test_cls_vs_mean_matches_core_and_shows_both_lists(app: AppTest, encoder, no_runs: Path) -> None:
    at = open_page(app, "compare")
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="cmp_preset").value == "CLS vs mean"
    texts = list(dict.fromkeys(load_corpus(DEMO_CORPUS).texts))
    vec = encode_many(
        encoder, texts, ["cls", "mean"], config=EmbedConfig(max_length=128), cache=ArrayCache()
    )  # sidebar's
    want = compare_spaces(vec["cls"], vec["mean"], k=10, maps=False)
    shown = metrics(at)
    assert float(shown["CKA (linear)"]) == pytest.approx(want.cka_linear, abs=6e-4)
    assert float(shown["CKA (debiased)"]) == pytest.approx(want.cka_debiased, abs=6e-4)
    assert float(shown["overlap@10"]) == pytest.approx(want.overlap_at_k, abs=6e-4)
    skew_a, skew_b = (float(x) for x in shown["hubness skew A → B"].split(" → "))
    assert skew_a == pytest.approx(want.hubness_a.skewness, abs=6e-3)
    assert skew_b == pytest.approx(want.hubness_b.skewness, abs=6e-3)
    assert len(at.get("plotly_chart")) == 4  # layer heatmap, overlap histogram, two maps

    moved = frame(at, "shared")
    assert len(moved) == 20 and moved["overlap"].is_monotonic_increasing
    assert moved["overlap"].iloc[0] == pytest.approx(want.overlap.overlap.min(), abs=6e-4)
    at.selectbox(key="cmp_pick").set_value(3).run()
    assert not at.exception, at.exception
    lists = [d.value for d in at.dataframe if "in both" in d.value.columns]
    assert len(lists) == 2 and all(len(x) == 10 for x in lists)
    assert set(lists[0]["text"]) & set(lists[1]["text"]) == set(lists[0].loc[lists[0]["in both"], "text"])
    assert lists[0]["in both"].sum() == moved["shared"].iloc[3]
    assert any(moved["text"].iloc[3][:30] in m.value.replace("\\", "") for m in at.markdown)


def test_self_comparison_is_exact(app: AppTest, no_runs: Path) -> None:
    at = open_page(app, "compare")
    at.selectbox(key="cmp_preset").set_value("Choose A and B yourself").run()
    at.selectbox(key="cmp_b_pooling").set_value("cls").run()  # A is cls too
    assert not at.exception, at.exception
    shown = metrics(at)
    assert shown["CKA (linear)"] == "1.000" and shown["CKA (debiased)"] == "1.000"
    assert shown["overlap@10"] == "1.000" and shown["Procrustes disparity"] == "0.000"
    hubs = frame(at, "anti-hub share")
    assert list(hubs["space"]) == ["A", "B"] and hubs["skewness"].iloc[0] == hubs["skewness"].iloc[1]


def test_calibration_and_untrained_presets(app: AppTest, no_runs: Path) -> None:
    """... and a preset sets cmp_b_cal_k through the Session State without Streamlit's duplicate warning (issue
    41: "The widget with key 'cmp_b_cal_k' was created with a default value but also had its value set via the
    Session State API", logged with a stack trace): the widget takes its default from the Session State only."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # a real handler on Streamlit's own logger, which does not propagate
    policies._shown_default_value_warning = False  # Streamlit logs it once per process
    policies._LOGGER.addHandler(handler)
    try:
        at = open_page(app, "compare")
        at.selectbox(key="cmp_preset").set_value("What calibration changed").run()
    finally:
        policies._LOGGER.removeHandler(handler)
    duplicated = [r.getMessage() for r in records if "Session State API" in r.getMessage()]
    assert not duplicated, duplicated
    assert not at.exception, at.exception
    assert (
        at.selectbox(key="cmp_b_cal_method").value == "whitening:K" and at.number_input(key="cmp_b_cal_k").value == 64
    )
    assert any("whitening:64" in m.value.replace("\\", "") for m in at.markdown)
    hubs = frame(at, "anti-hub share")
    assert hubs["max N_k"].min() >= 10
    calibrated_overlap = float(metrics(at)["overlap@10"])
    assert 0 < calibrated_overlap < 1

    at.selectbox(key="cmp_preset").set_value("Trained vs untrained").run()
    assert not at.exception, at.exception
    assert at.radio(key="cmp_b_init").value.startswith("random")
    assert any("random init" in m.value for m in at.markdown)
    shown = metrics(at)
    assert float(shown["overlap@10"]) < calibrated_overlap  # random weights keep far fewer neighbours
    at.radio(key="cmp_cka_kind").set_value("debiased").run()
    at.radio(key="cmp_colour").set_value("source").run()  # 11 styles; 31 topics are more than MAX_CATEGORIES
    at.toggle(key="cmp_arrows").set_value(True).run()
    assert not at.exception, at.exception


def test_fine_tuning_preset_without_a_run_says_what_to_do(app: AppTest, no_runs: Path) -> None:
    at = open_page(app, "compare")
    at.selectbox(key="cmp_preset").set_value("What fine-tuning changed").run()
    assert not at.exception, at.exception
    assert any("No finished loss-surface experiment" in i.value for i in at.info)
    assert not at.metric


def test_fine_tuned_checkpoint_per_layer(app: AppTest, no_runs: Path) -> None:
    """A tiny saved BERT fine-tuned by a real landscape run: epoch 0 is the model itself (CKA 1 on every
    layer's diagonal), the last epoch differs."""
    from isoscope.encode.models import load_encoder
    from isoscope.landscape import LandscapeConfig, TrainConfig, load_task, run_landscape
    from tests.tiny_models import tiny_bert

    folder = no_runs / "tiny-model"
    tiny = tiny_bert(3)
    tiny.model.save_pretrained(folder)
    tiny.tokenizer.save_pretrained(folder)
    base = load_encoder(str(folder))
    train = TrainConfig(lr=1e-3, epochs=2, batch_size=8, n_train=24, max_length=48, seed=0)
    config = LandscapeConfig(train=train, eval_size=8, eval_chunk=8, grid=3, points_1d=3, hessian_iters=0)
    run_landscape(
        base,
        load_task("demo-topic", 0),
        load_task("demo-pairs", 0),
        config=config,
        out_dir=no_runs / "landscape" / "r1",
    )

    at = open_page(app, "compare")
    at.text_input(key="model_input").set_value(str(folder)).run()
    at.selectbox(key="cmp_preset").set_value("What fine-tuning changed").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.select_slider(key="cmp_b_epoch").value == 2
    assert any("fine-tuned (pretrained, task1, epoch 2)" in m.value.replace("\\", "") for m in at.markdown)
    assert float(metrics(at)["CKA (linear)"]) < 1.0
    assert heatmap(at).shape == (3, 3)  # tiny_bert: embeddings + 2 layers, on both sides
    assert heatmap(at)[-1, -1] < 1.0

    at.select_slider(key="cmp_b_epoch").set_value(0).run()
    assert not at.exception, at.exception
    assert metrics(at)["CKA (linear)"] == "1.000" and metrics(at)["overlap@10"] == "1.000"
    # the same weights in two encoders: the A-vs-B path, exact to float64 rounding of n = 336, d = 32 Grams
    np.testing.assert_allclose(np.diag(heatmap(at)), 1.0, atol=10 * (336 + 32 * 32) * np.finfo(np.float64).eps)
