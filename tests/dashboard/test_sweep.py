"""AppTest: the Precision & size page (isoscope.evaluate.sweep through the services) and the sidebar's precision control."""

from __future__ import annotations

import numpy as np
from streamlit.testing.v1 import AppTest

from isoscope.dashboard.services.models import ModelKey
from tests.dashboard.conftest import open_page

VARIANTS = ["fp32", "int8-model", "int8-vectors", "binary"]


def test_the_precision_is_part_of_the_model_key() -> None:
    assert str(ModelKey("", "fp32")) == "" and str(ModelKey("/m", "int8")) == "int8:/m"
    key = ModelKey("org/name", "int8")
    assert (key.name, key.precision) == ("org/name", "int8") and key.at("fp32") == ModelKey("org/name")
    assert ModelKey("org/name", " INT8 ") == key  # the precision is parsed as the sidebar's radio names it


def test_sweep_page_on_the_demo_corpus(app: AppTest) -> None:
    at = open_page(app, "sweep")
    assert not at.dataframe  # nothing runs before the button
    at.button(key="sweep_run").click().run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value.set_index("variant")
    assert list(table.index[:4]) == VARIANTS
    assert {"truncate:32", "pca:32", "pca:384"} <= set(table.index) and "truncate:384" not in table.index
    assert table.loc["fp32", "overlap_at_k"] == 1.0
    assert table.loc["pca:384", "overlap_at_k"] > 0.95  # a rotation of the fp32 space
    # the demo pairs fill the Spearman column; int8 stays within a point or two of fp32 (test_quantize.py)
    assert np.isfinite(table["spearman"]).all()
    assert abs(table.loc["int8-model", "spearman"] - table.loc["fp32", "spearman"]) < 2
    assert table.loc["binary", "bytes_per_vector"] == 48 and table.loc["int8-vectors", "bytes_per_vector"] == 384
    assert len(at.get("plotly_chart")) == 1
    at.radio(key="sweep_measure").set_value("spearman").run()
    assert not at.exception and len(at.get("plotly_chart")) == 1


def test_sidebar_precision_reaches_the_pages(app: AppTest) -> None:
    at = open_page(app, "anisotropy")
    fp32 = at.dataframe[0].value.loc["raw"]
    at.radio(key="precision").set_value("int8").run()
    assert not at.exception and not at.error
    int8 = at.dataframe[0].value.loc["raw"]
    assert int8["isoscore"] != fp32["isoscore"]  # other vectors: the int8 model's
    # int8 moves each vector by ~1e-2 in cosine (test_quantize.py): corpus-level geometry barely changes
    assert abs(int8["avg_cosine"] - fp32["avg_cosine"]) < 0.02
    assert abs(int8["isoscore"] - fp32["isoscore"]) < 0.05 * fp32["isoscore"]
