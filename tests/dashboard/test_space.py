"""AppTest: the session's space as a vectors file, on every page that works from vectors alone.

The files are written here with pyarrow/numpy: seeded random vectors (so a page that quietly used the model
instead would show other numbers) or the embedded model's own vectors (so comparing them with the model gives
CKA 1 and overlap 1). Every number checked is computed again here from the file's vectors.
"""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from streamlit.testing.v1 import AppTest

from isoscope.data import load_corpus, load_pairs
from isoscope.evaluate.similarity import sts_scores
from isoscope.geometry.metrics import all_metrics
from isoscope.neighbours.exact import knn_table
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS
from tests.dashboard.conftest import APP

LAUNCHED = "Vectors given to isoscope app"


def write_vectors(path, vectors: np.ndarray, texts: list[str] | None, topics: list[str] | None = None) -> None:
    """A Parquet file with a fixed_size_list<float32> column ``emb`` (and ``text``, ``topic`` columns)."""
    d = vectors.shape[1]
    columns = {"emb": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), d)}
    if texts is not None:
        columns["text"] = pa.array(texts)
    if topics is not None:
        columns["topic"] = pa.array(topics)
    pq.write_table(pa.table(columns), path)


def random_vectors(n: int, d: int = 24, seed: int = 0) -> np.ndarray:
    """Seeded vectors in a cone (a common offset), float32 (n, d)."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, d)) + 2.0 * rng.standard_normal(d)).astype(np.float32)


def launched_app(monkeypatch, tmp_path, path, **env: str) -> AppTest:
    """A session of the app started as ``isoscope app FILE``, on a private cache."""
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ISOSCOPE_DATA_FILE", str(path))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    assert not at.exception, at.exception
    return at


def open_page(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def text_of(elements) -> str:
    return "\n".join(str(e.value) for e in elements).replace("\\", "")  # Markdown-escaped user text


@pytest.fixture()
def corpus_space(tmp_path, monkeypatch):
    """(app, vectors, corpus): the demo corpus's texts with seeded random vectors, launched as a vectors file."""
    corpus = load_corpus(DEMO_CORPUS)
    X = random_vectors(len(corpus))
    path = tmp_path / "mine.parquet"
    write_vectors(path, X, corpus.texts, list(corpus.meta["topic"]))
    at = launched_app(monkeypatch, tmp_path, path, ISOSCOPE_VECTOR_COLUMN="emb", ISOSCOPE_TEXT_COLUMN="text")
    return at, X, corpus


def test_anisotropy_measures_the_files_vectors(corpus_space) -> None:
    at, X, corpus = corpus_space
    assert at.radio(key="space_source").value == LAUNCHED
    assert "mine.parquet:emb" in text_of(at.sidebar.caption)
    at = open_page(at, "anisotropy")
    assert "mine.parquet:emb" in text_of(at.subheader) and f"{len(corpus):,} texts" in text_of(at.subheader)
    table = at.dataframe[0].value
    expected = all_metrics(X)
    for name, value in expected.items():
        assert table.loc["raw", name] == pytest.approx(value, rel=1e-9, abs=1e-12), name
    # the per-layer section is the model's: said in one line, not computed from another space
    assert any("needs the model itself" in i.value for i in at.info)


def test_neighbours_search_the_files_vectors(corpus_space) -> None:
    at, X, corpus = corpus_space
    at = open_page(at, "neighbours")
    assert all(r.key != "nb_source" for r in at.radio)  # the space's rows are the corpus: no corpus choice
    at.selectbox(key="nb_pick").set_value(7).run()
    at.slider(key="nb_k").set_value(5).run()
    assert not at.exception, at.exception
    raw = at.dataframe[0].value
    ids, _ = knn_table(X, 5)  # (n, 5) exact neighbours in the file's space, each row without itself
    assert list(raw["text"]) == [corpus.texts[i] for i in ids[7]]
    assert "topic" in raw.columns
    assert "mine.parquet:emb" in text_of(at.markdown)


def test_projection_draws_the_files_vectors(corpus_space) -> None:
    at, _, _ = corpus_space
    at = open_page(at, "projection")
    assert "token length" not in at.selectbox(key="pj_color").options  # that needs the model's tokenizer
    assert len(at.get("plotly_chart")) == 2
    assert "mine.parquet:emb" in text_of(at.caption)


def test_sweep_on_the_files_vectors(corpus_space) -> None:
    at, X, _ = corpus_space
    at = open_page(at, "sweep")
    at.button(key="sweep_run").click().run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert "int8-model" not in set(table["variant"])  # no model to quantise
    fp32 = table[table["variant"] == "fp32"].iloc[0]
    assert fp32["dims"] == X.shape[1] and fp32["isoscore"] == pytest.approx(all_metrics(X)["isoscore"], rel=1e-6)


def test_atlas_of_the_files_vectors_opens_its_rows_in_neighbours(corpus_space) -> None:
    at, X, corpus = corpus_space
    at.session_state["atlas_layout"] = "pca"
    at = open_page(at, "atlas")
    assert all(r.key != "atlas_source" for r in at.radio)
    assert f"{len(corpus):,} points, every one drawn" in text_of(at.caption)
    at.text_input(key="atlas_search").set_value("football").run()
    row = at.selectbox(key="atlas_open_pick").value
    at.button(key="atlas_open").click().run()
    assert not at.exception, at.exception
    assert any(t.value == "Neighbours" for t in at.title)
    # the same space and the same row: the picked row of the file, no typed query for the model to embed
    assert at.radio(key="space_source").value == LAUNCHED
    assert at.selectbox(key="nb_pick").value == row and at.text_input(key="nb_query").value == ""
    assert corpus.texts[row] in text_of(at.markdown)
    ids, _ = knn_table(X, 10)
    assert list(at.dataframe[0].value["text"]) == [corpus.texts[i] for i in ids[row]]


def test_model_pages_say_they_need_the_model_and_offer_it(corpus_space) -> None:
    at, _, _ = corpus_space
    for page in ("pooling", "frequency", "anatomy", "landscape"):
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception, (page, at.exception)
        lines = [i.value for i in at.info if "needs the model itself" in i.value]
        assert len(lines) == 1 and "mine.parquet:emb" in lines[0].replace("\\", ""), page
    at.button(key="space_use_model").click().run()
    assert not at.exception, at.exception
    assert at.radio(key="space_source").value == "Model"
    assert not [i for i in at.info if "needs the model itself" in i.value]


def test_calibration_on_the_files_vectors_of_the_pairs(tmp_path, monkeypatch) -> None:
    pairs = load_pairs(DEMO_PAIRS)
    texts = list(dict.fromkeys(pairs.texts))
    X = random_vectors(len(texts), d=16, seed=1)
    path = tmp_path / "pairs_vectors.parquet"
    write_vectors(path, X, texts)
    at = launched_app(monkeypatch, tmp_path, path)  # the only list column is the vectors
    assert at.radio(key="space_source").value == LAUNCHED
    at.session_state["calp_method"] = "whitening"
    at.session_state["calp_tm"] = ["none", "whitening"]
    at = open_page(at, "calibration")
    at.button(key="calp_fit").click().run()
    assert not at.exception, at.exception
    row = {t: i for i, t in enumerate(texts)}
    a = X[[row[t] for t in pairs.sentence1]]
    b = X[[row[t] for t in pairs.sentence2]]
    expected = sts_scores(a, b, pairs.scores)["spearman"]
    (raw,) = [m.value for m in at.metric if m.label == "Spearman raw"]
    assert float(raw) == pytest.approx(expected, abs=0.05)  # shown with one decimal
    at.button(key="calp_table_go").click().run()
    assert not at.exception, at.exception
    grid = at.dataframe[0].value
    assert len(grid) == 1 and "pairs_vectors.parquet:emb" in str(grid.index[0])
    assert float(grid.iloc[0]["none"]) == pytest.approx(expected, abs=0.006)


def test_compare_the_models_own_vectors_with_the_model(tmp_path, monkeypatch, encoder) -> None:
    from isoscope.cache import ArrayCache
    from isoscope.encode.embed import EmbedConfig, encode_many

    corpus = load_corpus(DEMO_CORPUS)
    texts = list(dict.fromkeys(corpus.texts))[:120]
    X = encode_many(encoder, texts, ("mean",), config=EmbedConfig(max_length=128), progress=None, cache=ArrayCache())[
        "mean"
    ]
    path = tmp_path / "own.parquet"
    write_vectors(path, X, texts)
    at = launched_app(monkeypatch, tmp_path, path)
    at.session_state["cmp_map"] = "PCA"
    at = open_page(at, "compare")
    assert at.selectbox(key="cmp_preset").value == "Vectors file vs the model"
    assert at.selectbox(key="cmp_a_source").value.startswith("Vectors file")
    metrics = {m.label: m.value for m in at.metric}
    # the same vectors, up to the float32 round-off of two forward passes: CKA 1, the same neighbours
    assert float(metrics["CKA (linear)"]) == pytest.approx(1.0, abs=1e-3)
    assert float(metrics["overlap@10"]) == pytest.approx(1.0, abs=0.02)
    assert any("a vectors file has none" in i.value for i in at.info)


def test_an_uploaded_vectors_file_becomes_the_space_and_a_bad_one_loses_nothing(app: AppTest) -> None:
    corpus = load_corpus(DEMO_CORPUS)
    X = random_vectors(len(corpus), d=12, seed=3)
    buf = io.BytesIO()
    write_vectors(buf, X, corpus.texts)
    at = app
    at.radio(key="space_source").set_value("Upload vectors").run()
    at.file_uploader(key="space_upload").set_value(("up.parquet", buf.getvalue(), "application/octet-stream")).run()
    assert not at.exception, at.exception
    assert "up.parquet" in text_of(at.sidebar.caption)
    ragged = io.BytesIO()
    pq.write_table(pa.table({"emb": pa.array([[1.0, 2.0], [1.0], [3.0, 4.0]], pa.list_(pa.float32()))}), ragged)
    at.file_uploader(key="space_upload").set_value(("bad.parquet", ragged.getvalue(), "application/octet-stream")).run()
    assert not at.exception, at.exception
    (err,) = at.sidebar.error
    assert "\n" not in err.value.strip()
    assert "Still using up.parquet" in text_of(at.sidebar.caption)
    at.switch_page("views/anisotropy.py").run()  # the bad file is still in the uploader: its line stays there
    assert not at.exception and not at.main.error, at.exception
    assert at.dataframe[0].value.loc["raw", "avg_cosine"] == pytest.approx(all_metrics(X)["avg_cosine"], rel=1e-9)
