"""AppTest: the file given to ``isoscope app`` is the session's data on every page that can use it.

A corpus feeds Neighbours, Projection map, Anisotropy, Compare and the Atlas; a pairs file is the pairs of
Sentence pairs and Calibration, and its distinct sentences are the corpus elsewhere (the Atlas included,
never a corpus of its first column).
"""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from isoscope.data import load_corpus, load_pairs
from isoscope.paths import DEMO_CORPUS
from tests.dashboard.conftest import APP

PRELOADED = "File given to isoscope app"
TOPICS = {
    "cooking": ["Simmer the {} soup slowly.", "Bake the {} bread until golden.", "Slice the {} onions thin."],
    "sports": ["The {} team won the final.", "She ran the {} marathon fast.", "The {} striker scored twice."],
}


def corpus_rows() -> pd.DataFrame:
    words = ["red", "green", "small", "large", "fresh", "old", "young"]
    rows = [(t.format(w), topic) for topic, ts in TOPICS.items() for t in ts for w in words]
    return pd.DataFrame(rows, columns=["text", "topic"])  # 42 distinct texts


def launched(monkeypatch, tmp_path, path) -> AppTest:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ISOSCOPE_DATA_FILE", str(path))
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    assert not at.exception, at.exception
    return at


def page(at: AppTest, name: str) -> AppTest:
    at.switch_page(f"views/{name}.py").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def test_a_launched_corpus_feeds_every_corpus_page(tmp_path, monkeypatch) -> None:
    rows = corpus_rows()
    path = tmp_path / "mine.csv"
    rows.to_csv(path, index=False)
    at = launched(monkeypatch, tmp_path, path)
    assert at.radio(key="space_source").value == "Model"  # a corpus is not a space: the model embeds it

    at = page(at, "anisotropy")
    assert at.radio(key="ani_source").value == PRELOADED
    assert "42 texts" in " ".join(s.value for s in at.subheader)

    at = page(at, "neighbours")
    assert at.radio(key="nb_source").value == PRELOADED
    assert set(at.dataframe[0].value["text"]) <= set(rows["text"]) and "topic" in at.dataframe[0].value.columns

    at.session_state["pj_projection"] = "PCA"
    at = page(at, "projection")
    assert at.radio(key="pj_source").value == PRELOADED
    assert at.number_input(key="pj_sample").value == len(rows)

    at.session_state["cmp_map"] = "PCA"
    at = page(at, "compare")
    assert at.radio(key="cmp_source").value == PRELOADED
    shown = at.dataframe[0].value  # the most changed texts are the file's
    assert set(shown["text"]) <= set(rows["text"])

    at.session_state["atlas_layout"] = "pca"
    at = page(at, "atlas")
    assert at.radio(key="atlas_source").value == PRELOADED
    assert "42 points, every one drawn" in " ".join(c.value for c in at.caption)

    # the demo is one click away
    at = page(at, "anisotropy")
    at.radio(key="ani_source").set_value("Demo corpus").run()
    n_demo = len(load_corpus(DEMO_CORPUS))
    assert not at.exception and f"{n_demo:,} texts" in " ".join(s.value for s in at.subheader)


def test_a_launched_pairs_file_is_pairs_and_its_sentences(tmp_path, monkeypatch) -> None:
    rows = corpus_rows()
    texts = list(rows["text"])
    pairs = pd.DataFrame(
        {
            "sentence1": texts[:21],
            "sentence2": texts[21:],
            "score": [float(i % 6) for i in range(21)],
        }
    )
    path = tmp_path / "graded.csv"
    pairs.to_csv(path, index=False)
    expected = load_pairs(path)
    at = launched(monkeypatch, tmp_path, path)

    at = page(at, "similarity")
    assert at.radio(key="sim_source").value == PRELOADED
    assert f"{len(expected)} pairs" in " ".join(c.value for c in at.caption)

    at.session_state["calp_method"] = "whitening"
    at = page(at, "calibration")
    assert at.radio(key="calp_source").value == PRELOADED

    at = page(at, "anisotropy")  # a corpus page: the file's distinct sentences
    assert at.radio(key="ani_source").value == PRELOADED
    assert f"{len(set(expected.texts))} texts" in " ".join(s.value for s in at.subheader)

    at.session_state["atlas_layout"] = "pca"
    at = page(at, "atlas")
    assert f"{len(set(expected.texts))} points, every one drawn" in " ".join(c.value for c in at.caption)
    names = at.multiselect(key="atlas_clusters").options
    assert names and not any("(no words)" in n for n in names)


@pytest.mark.parametrize("source", ["Demo corpus", PRELOADED])
def test_open_in_neighbours_keeps_the_atlas_corpus(tmp_path, monkeypatch, source: str) -> None:
    rows = corpus_rows()
    path = tmp_path / "mine.csv"
    rows.to_csv(path, index=False)
    at = launched(monkeypatch, tmp_path, path)
    at.session_state["atlas_layout"] = "pca"
    at.session_state["atlas_source"] = source
    at = page(at, "atlas")
    at.text_input(key="atlas_search").set_value("the").run()
    last = at.selectbox(key="atlas_open_pick").options[-1]  # shown as "#ROW: text"
    row = int(str(last).split(":")[0].lstrip("#"))
    assert row > 0  # (row 0 is the Neighbours page's default pick)
    at.selectbox(key="atlas_open_pick").set_value(row).run()
    at.button(key="atlas_open").click().run()
    assert not at.exception, at.exception
    assert any(t.value == "Neighbours" for t in at.title)
    assert at.radio(key="nb_source").value == source
    assert at.selectbox(key="nb_pick").value == row and at.text_input(key="nb_query").value == ""
