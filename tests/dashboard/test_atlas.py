"""AppTest: the Atlas page on the demo corpus (PCA layout, so no UMAP compile), search, selection, colours,
the raw/calibrated switch, the jump to Neighbours, and bad input through the file given to ``isoscope app``."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from isoscope.data import load_corpus
from isoscope.paths import DEMO_CORPUS
from tests.conftest import private_cache
from tests.dashboard.conftest import APP


@pytest.fixture()
def atlas_app(tmp_path, monkeypatch) -> AppTest:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(private_cache(tmp_path / "cache")))
    at = AppTest.from_file(APP, default_timeout=900)  # the first build of the 4,846-text demo atlas
    at.session_state["atlas_layout"] = "pca"
    at.switch_page("views/atlas.py").run()
    assert not at.exception, at.exception
    return at


def deck(at: AppTest) -> dict:
    (chart,) = at.get("deck_gl_json_chart")
    return json.loads(chart.proto.json)


def layer(spec: dict, layer_id: str) -> dict | None:
    return next((x for x in spec["layers"] if x["id"] == layer_id), None)


def captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def test_demo_corpus_every_point_live_with_labels_and_contours(atlas_app: AppTest) -> None:
    at = atlas_app
    spec = deck(at)
    points = layer(spec, "points")
    n = len(load_corpus(DEMO_CORPUS))
    assert len(points["data"]) == n and sorted(p["i"] for p in points["data"]) == list(range(n))
    assert layer(spec, "all-points") is None  # small corpora: every point is a live point, no image
    assert layer(spec, "contours")["image"].startswith("data:image/png;base64,")
    labels = layer(spec, "labels")["data"]
    assert labels and all(lab["label"] for lab in labels)
    assert spec["views"][0]["@@type"] == "OrthographicView"
    assert f"{n:,} points drawn" in captions(at)
    tip = points["data"][0]["t"]
    assert tip.startswith("#0 · cluster") and "<" not in spec["layers"][0].get("getFillColor", "")


def test_search_selects_highlights_and_measures(atlas_app: AppTest) -> None:
    at = atlas_app
    at.text_input(key="atlas_search").set_value("football").run()
    assert not at.exception, at.exception
    hits = layer(deck(at), "highlight")["data"]
    texts = load_corpus(DEMO_CORPUS).texts  # the hover text is cut to HOVER_CHARS: check the whole text
    assert hits and all("football" in texts[h["i"]].lower() for h in hits)
    (table, metrics) = at.dataframe[:2]
    assert len(table.value) == len(hits) and all("football" in t.lower() for t in table.value["text"])
    assert list(metrics.value.columns) == ["metric", "whole corpus", "selection"]
    assert set(metrics.value["metric"]) >= {"avg_cosine", "isoscore", "effective_rank"}
    at.text_input(key="atlas_search").set_value("no such words anywhere").run()
    assert layer(deck(at), "highlight") is None and "select texts" in at.info[0].value


def test_clusters_colour_and_space_switch(atlas_app: AppTest) -> None:
    at = atlas_app
    first = at.multiselect(key="atlas_clusters").options[0]
    at.multiselect(key="atlas_clusters").set_value([first]).run()
    table = at.dataframe[0].value
    assert len(table) > 0 and set(table["cluster"]) == {int(first.split(":")[0])}
    raw_xy = [(p["x"], p["y"]) for p in layer(deck(at), "points")["data"][:5]]
    at.radio(key="atlas_space").set_value("cal").run()
    assert not at.exception, at.exception
    cal_xy = [(p["x"], p["y"]) for p in layer(deck(at), "points")["data"][:5]]
    assert cal_xy != raw_xy
    at.selectbox(key="atlas_colour").set_value("norm").run()
    assert "from" in captions(at) and "(purple) to" in captions(at)
    at.selectbox(key="atlas_colour").set_value("topic").run()
    assert "sports" in captions(at)


def test_open_in_neighbours_passes_the_row(atlas_app: AppTest) -> None:
    at = atlas_app
    at.text_input(key="atlas_search").set_value("football").run()
    row = at.selectbox(key="atlas_open_pick").value
    at.button(key="atlas_open").click().run()
    assert not at.exception, at.exception
    assert at.session_state["atlas_open_row"]["row"] == row
    assert any(t.value == "Neighbours" for t in at.title)
    # the same corpus there, the row picked (not a typed query the model would embed again)
    assert at.radio(key="nb_source").value == "Demo corpus"
    assert at.selectbox(key="nb_pick").value == row and at.text_input(key="nb_query").value == ""
    assert "football" in " ".join(m.value for m in at.markdown if m.value.startswith("**Query:**")).lower()


def test_preloaded_file_with_hostile_rows_and_a_missing_column(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    texts = [f"sentence number {i} about cooking soup" for i in range(30)]
    rows = [*texts, "", texts[0], "x" * 100_000]
    src = tmp_path / "corpus.csv"
    pd.DataFrame({"text": rows, "topic": ["a"] * len(rows)}).to_csv(src, index=False)
    monkeypatch.setenv("ISOSCOPE_DATA_FILE", str(src))
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["atlas_layout"] = "pca"
    at.switch_page("views/atlas.py").run()
    assert not at.exception, at.exception
    assert at.radio(key="atlas_source").value == "File given to isoscope app"
    shown = (captions(at) + "\n".join(w.value for w in at.warning)).replace("\\", "")  # markdown-escaped
    assert "dropped 1 row(s) with empty text" in shown and "truncated" in shown and "repeat" in shown
    assert "32 points drawn" in captions(at)

    monkeypatch.setenv("ISOSCOPE_TEXT_COLUMN", "sentence")
    at2 = AppTest.from_file(APP, default_timeout=300)
    at2.switch_page("views/atlas.py").run()
    assert not at2.exception, at2.exception
    (err,) = at2.error
    assert "no column 'sentence'" in err.value and "\n" not in err.value.strip()
