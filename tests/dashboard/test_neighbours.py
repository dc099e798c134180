"""AppTest: the Neighbours page on the demo corpus, typed queries and uploaded vectors."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from isoscope.data import load_corpus
from isoscope.encode.embed import EmbedConfig, encode
from isoscope.paths import DEMO_CORPUS
from tests.dashboard.conftest import open_page
from tests.hostile.cases import npy


def overlap(at: AppTest) -> float:
    (value,) = [m.value for m in at.metric if m.label.startswith("overlap@")]
    return float(value)


def test_pick_a_sentence_raw_vs_calibrated(app: AppTest) -> None:
    at = open_page(app, "neighbours")
    assert not at.error
    corpus = load_corpus(DEMO_CORPUS)
    at.selectbox(key="nb_pick").set_value(5).run()
    at.slider(key="nb_k").set_value(8).run()
    assert not at.exception, at.exception
    raw, cal = at.dataframe[0].value, at.dataframe[1].value
    assert len(raw) == 8 and len(cal) == 8
    assert {"rank", "text", "score", "shift"} <= set(raw.columns) and "raw rank" in cal.columns
    # a picked sentence is never its own neighbour (the rule of every overlap@k in Isoscope)
    assert corpus.texts[5] not in set(raw["text"]) | set(cal["text"])
    assert raw["score"].is_monotonic_decreasing
    assert "topic" in raw.columns  # metadata travels with each neighbour
    ov = overlap(at)
    assert 0.0 <= ov <= 1.0
    # the overlap metric agrees with the two tables (Jaccard of their text sets)
    a, b = set(raw["text"]), set(cal["text"])
    assert ov == pytest.approx(len(a & b) / len(a | b), abs=0.006)
    # "new" marks exactly the calibrated neighbours that were outside the raw top-k
    assert set(cal.loc[cal["shift"] == "new", "text"]) == b - a

    # corpus-wide: the most changed sentences, and the mean overlap of each calibrator
    changed = at.dataframe[2].value
    assert len(changed) == 20 and changed["overlap@8"].is_monotonic_increasing
    assert changed["overlap@8"].between(0, 1).all()
    assert len(at.get("plotly_chart")) == 1


def test_typed_query(app: AppTest) -> None:
    at = open_page(app, "neighbours")
    at.selectbox(key="nb_cal_method").set_value("sn+abtt:D").run()
    at.text_input(key="nb_query").set_value("Which team won the football match?").run()
    assert not at.exception, at.exception
    raw, cal = at.dataframe[0].value, at.dataframe[1].value
    assert len(raw) == 10 and len(cal) == 10
    corpus = load_corpus(DEMO_CORPUS)
    topic = dict(zip(corpus.texts, corpus.meta["topic"], strict=True))
    assert topic[raw["text"].iloc[0]] == "sports"
    assert raw["score"].iloc[0] < 0.99  # a typed query is not in the corpus
    assert 0.0 <= overlap(at) <= 1.0
    assert any("Which team won" in m.value for m in at.markdown)
    # whitening:K has its own K input next to the k slider (distinct keys)
    at.selectbox(key="nb_cal_method").set_value("whitening:K").run()
    at.number_input(key="nb_cal_k").set_value(64).run()
    assert not at.exception, at.exception
    assert len(at.dataframe[1].value) == 10 and at.slider(key="nb_k").value == 10
    assert any("whitening:64" in m.value.replace("\\", "") for m in at.markdown)


def test_uploaded_vectors_and_a_bad_npy(app: AppTest, encoder) -> None:
    texts = [
        "The striker scored a late winner in the derby.",
        "Fans celebrated the championship in the streets.",
        "The goalkeeper saved two penalties in the shootout.",
        "Simmer the tomatoes with garlic for twenty minutes.",
        "Knead the dough until it is smooth and elastic.",
        "Roast the vegetables at a high heat until golden.",
        "The central bank raised interest rates again.",
        "Shares fell sharply after the profit warning.",
    ]
    topics = ["sports"] * 3 + ["cooking"] * 3 + ["finance"] * 2
    vectors = encode(encoder, texts, "mean", config=EmbedConfig(max_length=128))  # (8, 384)
    meta = pd.DataFrame({"text": texts, "topic": topics}).to_csv(index=False).encode()

    at = open_page(app, "neighbours")
    at.selectbox(key="nb_pick").set_value(200)
    at.slider(key="nb_k").set_value(40).run()
    at.radio(key="nb_source").set_value("Upload vectors (.npy)").run()
    # a pickle named .npy, uploaded before anything good: one error, nothing unpickled, no tables
    evil = pickle.dumps({"vectors": vectors})
    at.file_uploader(key="nb_vec_upload").set_value(("vectors.npy", evil, "application/octet-stream")).run()
    at.file_uploader(key="nb_meta_upload").set_value(("meta.csv", meta, "text/csv")).run()
    assert not at.exception, at.exception
    assert len(at.error) == 1 and "not a NumPy .npy file" in at.error[0].value.replace("\\", "")
    assert not at.dataframe

    good = npy(vectors)
    at.file_uploader(key="nb_vec_upload").set_value(("vectors.npy", good, "application/octet-stream")).run()
    assert not at.exception, at.exception
    assert not at.error
    # the 336-row demo's pick and k do not fit 8 rows: back to the defaults (k <= 7 other rows), no warning
    assert at.selectbox(key="nb_pick").value == 0 and at.slider(key="nb_k").value == 7
    assert len(at.dataframe[0].value) == 7
    assert not any("Session State" in w.value for w in at.warning)
    at.selectbox(key="nb_cal_method").set_value("sn+abtt:D").run()
    at.selectbox(key="nb_pick").set_value(3).run()
    at.slider(key="nb_k").set_value(2).run()
    raw = at.dataframe[0].value
    assert len(raw) == 2 and len(at.dataframe[1].value) == 2
    assert set(raw["text"]) == set(texts[4:6])  # the other two cooking sentences, never the picked one itself
    # the same model's typed query works on vectors it made
    at.text_input(key="nb_query").set_value("How long should I bake bread?").run()
    assert not at.exception and not at.error
    assert set(at.dataframe[0].value["topic"]) == {"cooking"}

    # a pickle disguised as .npy replacing the good file: one error line, the good vectors stay loaded
    at.file_uploader(key="nb_vec_upload").set_value(("more.npy", evil, "application/octet-stream")).run()
    assert not at.exception, at.exception
    assert len(at.error) == 1 and "\n" not in at.error[0].value
    assert set(at.dataframe[0].value["topic"]) == {"cooking"}
    assert "vectors.npy" in " ".join(c.value for c in at.caption).replace("\\", "")

    # wrong shapes and values are refused with one line each, still keeping the good upload
    for bad, word in [
        (npy(vectors[:5]), "must match row for row"),
        (npy(np.where(np.arange(8)[:, None] == 2, np.nan, vectors)), "NaN"),
        (npy(vectors[0]), "2-D"),
        (npy(np.array(texts)), "not numbers"),
    ]:
        at.file_uploader(key="nb_vec_upload").set_value(("bad.npy", bad, "application/octet-stream")).run()
        assert not at.exception, at.exception
        assert len(at.error) == 1 and word in at.error[0].value.replace("\\", ""), (word, at.error[0].value)
        assert len(at.dataframe[0].value) == 2


def test_three_dimensional_vectors_leave_out_what_cannot_be_fitted(app: AppTest) -> None:
    """abtt:3 needs more than 3 dimensions: the corpus-wide comparison leaves it out and says so."""
    rng = np.random.default_rng(0)
    texts = [f"Short text number {i}." for i in range(12)]
    meta = pd.DataFrame({"text": texts}).to_csv(index=False).encode()
    at = open_page(app, "neighbours")
    at.radio(key="nb_source").set_value("Upload vectors (.npy)").run()
    at.file_uploader(key="nb_meta_upload").set_value(("meta.csv", meta, "text/csv")).run()
    vectors = npy(rng.standard_normal((12, 3)).astype(np.float32))
    at.file_uploader(key="nb_vec_upload").set_value(("v.npy", vectors, "application/octet-stream")).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any("Left out" in c.value and "abtt:3" in c.value for c in at.caption), [c.value for c in at.caption]


def test_corpus_wide_overlap_equals_isoscope_compare(app: AppTest, cli_main, capsys) -> None:
    """One overlap@k: the Neighbours page's mean overlap@10 over every sentence (raw vs whitening:64 fitted on the
    corpus) is the overlap_at_k that `isoscope compare` reports for the same two spaces."""
    import json

    at = open_page(app, "neighbours")
    n = len(load_corpus(DEMO_CORPUS))
    at.number_input(key="nb_sample").set_value(n).run()
    assert not at.exception, at.exception
    assert at.slider(key="nb_k").value == 10 and at.number_input(key="nb_cal_k").value == 64
    (page,) = [m for m in at.metric if m.label.startswith("mean overlap@10 under whitening:64")]
    argv = [
        "compare",
        "--input",
        str(DEMO_CORPUS),
        "--a",
        "pooling=model",
        "--b",
        "pooling=model,calibrate=whitening:64",
    ]
    assert cli_main([*argv, "--k", "10", "--max-length", "128", "--quiet", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n_texts"] == n
    assert float(page.value) == round(result["overlap_at_k"], 3)


def calibrated_label(at: AppTest) -> str:
    (label,) = [m.value for m in at.markdown if m.value.startswith("**Calibrated**")]
    return label.replace("\\", "")  # ui.literal escapes Markdown


def test_the_calibrator_shown_is_the_one_used_across_sources(app: AppTest) -> None:
    """Issue 26: sn+abtt chosen, then "Upload vectors": the box read whitening:K while the tables said
    "Calibrated (sn+abtt:3)"; back to the demo it silently selected whitening:64. And with an empty text box
    the page said "A typed sentence is embedded ...". The shown value is the used value, on every source."""
    rng = np.random.default_rng(0)
    texts = [f"Short text number {i}." for i in range(12)]
    meta = pd.DataFrame({"text": texts}).to_csv(index=False).encode()
    at = open_page(app, "neighbours")
    at.selectbox(key="nb_cal_method").set_value("sn+abtt:D").run()
    assert calibrated_label(at) == "**Calibrated** (sn+abtt:3)"
    at.radio(key="nb_source").set_value("Upload vectors (.npy)").run()  # stops before the controls: no upload
    at.file_uploader(key="nb_meta_upload").set_value(("meta.csv", meta, "text/csv")).run()
    vectors = npy(rng.standard_normal((12, 16)).astype(np.float32))  # not the sidebar model's 384 dimensions
    at.file_uploader(key="nb_vec_upload").set_value(("v.npy", vectors, "application/octet-stream")).run()
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    assert at.selectbox(key="nb_cal_method").value == "sn+abtt:D"
    assert calibrated_label(at) == "**Calibrated** (sn+abtt:3)"
    assert at.text_input(key="nb_query").value == ""
    assert not any("typed sentence" in i.value for i in at.info), [i.value for i in at.info]
    at.radio(key="nb_source").set_value("Demo corpus").run()
    assert at.selectbox(key="nb_cal_method").value == "sn+abtt:D"
    assert calibrated_label(at) == "**Calibrated** (sn+abtt:3)"
