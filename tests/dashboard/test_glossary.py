"""Every selector that offers method names explains each option in its tooltip, from the library's one glossary
per concept (a new option without a description fails here)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from isoscope.calibrate.methods import calibration_methods, explain_method
from isoscope.comparison.cka import CKA_DESCRIPTIONS, CKA_KINDS
from isoscope.encode.pooling import POOLING_DESCRIPTIONS, describe_pooling, pooling_choices
from isoscope.encode.precision import PRECISION_DESCRIPTIONS, PRECISIONS
from isoscope.neighbours.projection import PROJECTION_DESCRIPTIONS, PROJECTION_METHODS
from tests.dashboard.test_launched_data import launched, page


def test_every_option_tuple_has_its_description():
    assert all(explain_method(choice) for choice in calibration_methods())  # each class says what it does
    assert set(PRECISIONS) == set(PRECISION_DESCRIPTIONS)
    assert set(PROJECTION_METHODS) == set(PROJECTION_DESCRIPTIONS)
    assert set(CKA_KINDS) == set(CKA_DESCRIPTIONS)
    for layers, encdec in ((6, False), (12, True)):
        for mode in pooling_choices(layers, encdec):
            assert describe_pooling(mode) in POOLING_DESCRIPTIONS.values(), mode
    assert explain_method("whitening:64") == "whitening that keeps the top 64 principal components"
    assert explain_method("sn+abtt:3").startswith(explain_method("sn") + ", then all-but-the-top")
    with pytest.raises(KeyError):
        describe_pooling("no-such-pooling")


def small_pairs(tmp_path):
    rows = [(f"The cat sat on mat number {i}.", f"A cat was sitting on mat {i}.", i % 5) for i in range(20)]
    path = tmp_path / "pairs.csv"
    pd.DataFrame(rows, columns=["sentence1", "sentence2", "score"]).to_csv(path, index=False)
    return path


def projection_words(label: str) -> str:
    return PROJECTION_DESCRIPTIONS[label.lower().replace("-", "")]


def explained(widget, describe: Callable[[str], str]) -> None:
    """Every option of ``widget`` has a description, and the widget's tooltip carries it."""
    assert widget.options, widget
    for option in widget.options:
        words = describe(str(option))
        assert words and words in (widget.help or ""), (widget.key, option)


def test_every_method_selector_explains_its_options(tmp_path, monkeypatch) -> None:
    at = launched(monkeypatch, tmp_path, small_pairs(tmp_path))  # 20 pairs: their 40 sentences are the corpus
    explained(at.selectbox(key="pooling"), describe_pooling)
    explained(at.radio(key="precision"), PRECISION_DESCRIPTIONS.__getitem__)

    at = page(at, "calibration")
    explained(at.selectbox(key="calp_method"), explain_method)
    explained(at.multiselect(key="calp_tp"), describe_pooling)
    explained(at.multiselect(key="calp_tm"), explain_method)
    at = page(at, "pooling")
    explained(at.multiselect(key="pool_methods"), explain_method)
    at = page(at, "similarity")
    explained(at.multiselect(key="sim_poolings:model"), describe_pooling)
    explained(at.selectbox(key="sim_method"), explain_method)
    at = page(at, "anisotropy")
    explained(at.multiselect(key="ani_methods"), explain_method)
    at = page(at, "neighbours")
    explained(at.selectbox(key="nb_cal_method"), explain_method)
    at = page(at, "projection")
    explained(at.selectbox(key="pj_projection"), projection_words)
    explained(at.selectbox(key="pj_method"), explain_method)
    at = page(at, "compare")
    explained(at.selectbox(key="cmp_a_pooling"), describe_pooling)
    explained(at.selectbox(key="cmp_b_cal_method"), explain_method)
    explained(at.radio(key="cmp_map"), projection_words)
    explained(at.radio(key="cmp_cka_kind"), CKA_DESCRIPTIONS.__getitem__)
    at.session_state["atlas_layout"] = "pca"  # UMAP's first compile would cost a minute here
    at = page(at, "atlas")
    explained(at.radio(key="atlas_layout"), PROJECTION_DESCRIPTIONS.__getitem__)
    explained(at.selectbox(key="atlas_calibrate"), explain_method)
    at = page(at, "frequency")
    explained(at.selectbox(key="freq_cal"), explain_method)
