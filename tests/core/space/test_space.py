"""isoscope.Space, isoscope.embed and isoscope.compare on the real model: every method returns what the library's
own function gives for the same vectors, and the cards escape user text."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import isoscope
from isoscope.calibrate import make_calibrator
from isoscope.data import load_corpus, load_pairs
from isoscope.encode.embed import encode
from isoscope.errors import InputError
from isoscope.geometry.metrics import all_metrics, per_layer_metrics
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS

N = 80


@pytest.fixture(scope="module")
def corpus():
    c = load_corpus(DEMO_CORPUS)
    rows = np.linspace(0, len(c.texts) - 1, N).astype(int)  # (N,) spread over the demo, which is sorted by topic
    return [c.texts[i] for i in rows], c.meta.iloc[rows].reset_index(drop=True)


@pytest.fixture()
def space(encoder, corpus, tmp_cache):
    texts, meta = corpus
    return isoscope.embed(texts, encoder, pooling="cls", metadata=meta, cache=tmp_cache, progress=False)


def test_embed_gives_the_encoders_vectors_and_remembers_how(space, encoder, corpus) -> None:
    texts, _ = corpus
    np.testing.assert_array_equal(space.vectors, encode(encoder, texts, "cls"))
    p = space.provenance
    assert p["source"] == "model" and p["model"] == encoder.name and p["fingerprint"] == encoder.fingerprint
    assert p["pooling"] == "cls" and p["rows"] == N and p["dims"] == 384 and p["calibration"] == []
    assert space.metadata["topic"].nunique() > 1 and space.label == "raw"


def test_embed_reads_a_corpus_with_its_metadata(encoder, tmp_cache) -> None:
    from pathlib import Path

    space = isoscope.embed(Path(DEMO_CORPUS), encoder, cache=tmp_cache, progress=False)
    assert len(space) == len(load_corpus(DEMO_CORPUS).texts) and list(space.metadata.columns) == ["topic", "source"]
    with pytest.raises(InputError, match="at least 3 texts"):
        isoscope.embed(["one", "two"], encoder, progress=False)
    with pytest.raises(InputError, match="pooling"):
        isoscope.embed(["a", "b", "c"], encoder, pooling="nope", progress=False)


def test_geometry_is_all_metrics_of_each_space_raw_first(space) -> None:
    white = space.calibrate("whitening:32")
    frame = white.geometry()
    assert isinstance(frame, pd.DataFrame) and list(frame.index) == ["raw", "whitening:32"]
    assert frame.loc["raw"].to_dict() == all_metrics(space.vectors)
    assert frame.loc["whitening:32"].to_dict() == all_metrics(white.vectors)
    assert type(frame.head(1)) is pd.DataFrame  # anything derived is a plain frame
    html = frame._repr_html_()
    assert "isoscope-card" in html and "<svg" in html and "IsoScore" in html


def test_printing_the_geometry_shows_the_whole_frame(space) -> None:
    """print(space.geometry()) names every row and column and never cuts with "...", in lines that fit."""
    frame = space.calibrate("whitening:32").geometry(layers=True)
    with pd.option_context("display.max_columns", 4, "display.max_rows", 4):  # pandas would cut both
        text, shown = str(frame), repr(frame)
    assert text == shown and "..." not in text
    assert all(str(column) in text for column in frame.columns) and all(str(row) in text for row in frame.index)
    assert max(len(line) for line in text.splitlines()) <= 100


def test_geometry_layers_are_per_layer_metrics(space) -> None:
    frame = space.geometry(layers=True)
    stack = space.layer_vectors()
    assert len(stack) == 7 and list(frame.index) == ["raw", *(f"layer:{k}" for k in range(7))]
    expected = per_layer_metrics(stack)
    for k in range(7):
        assert frame.loc[f"layer:{k}"].to_dict() == expected[k]
    bare = isoscope.Space(space.vectors)
    with pytest.raises(InputError, match="layers need the model"):
        bare.geometry(layers=True)


def test_calibrate_fits_on_the_space_and_keeps_the_fitted_calibrator(space) -> None:
    white = space.calibrate("whitening:32")
    ref = make_calibrator("whitening:32").fit(space.vectors)
    np.testing.assert_array_equal(white.vectors, np.asarray(ref.transform(space.vectors), np.float32))
    assert white.calibrator.method == "whitening:32" and white.parent is space
    assert white.provenance["calibration"] == ["whitening:32"] and white.shape == (N, 32)
    assert space.calibrate("whitening:32") is white  # the same request is not fitted twice
    again = space.calibrate(white.calibrator)  # a fitted calibrator is applied as it is
    np.testing.assert_array_equal(again.vectors, white.vectors)
    chained = white.calibrate("sn")
    assert chained.label == "whitening:32 → sn" and [s.label for s in chained.lineage()] == [
        "raw",
        "whitening:32",
        "whitening:32 → sn",
    ]
    full = space.calibrate("whitening")  # 80 vectors for 384 dimensions: warned, not refused
    assert full.warnings and "fitted on 80 vectors" in full.warnings[0]
    with pytest.raises(InputError, match="unknown"):
        space.calibrate("nope")


def test_neighbours_of_a_row_a_text_and_a_vector(space) -> None:
    from isoscope.neighbours.exact import exact_topk
    from isoscope.neighbours.index import as_unit_float32

    U = as_unit_float32(space.vectors)
    scores, ids = exact_topk(U, U[[3]], 5, exclude=np.array([3]))
    frame = space.neighbours(3, k=5)
    assert frame["id"].tolist() == ids[0].tolist() and 3 not in frame["id"].tolist()
    np.testing.assert_array_equal(frame["cosine"].to_numpy(), scores[0])
    assert frame["text"].tolist() == [space.texts[i] for i in ids[0]] and "topic" in frame
    by_text = space.neighbours(space.texts[3], k=5)  # embedded again: the row itself comes first
    assert by_text["id"].iloc[0] == 3 and by_text["cosine"].iloc[0] == pytest.approx(1.0, abs=1e-6)
    assert by_text["id"].tolist()[1:] == ids[0].tolist()[:4]
    by_vector = space.neighbours(space.vectors[3], k=5)
    assert by_vector["id"].tolist() == by_text["id"].tolist()
    white = space.calibrate("whitening:32")
    assert white.neighbours(white.texts[7], k=1)["id"].tolist() == [7]  # new texts go through the calibrator
    with pytest.raises(InputError, match="at most"):
        space.neighbours(0, k=N)
    with pytest.raises(InputError, match="outside"):
        space.neighbours(N)
    with pytest.raises(InputError, match="cannot embed new texts"):
        isoscope.Space(space.vectors).neighbours("a text")


def test_sts_is_sts_scores_of_the_pair_vectors(space, encoder) -> None:
    from isoscope.evaluate.similarity import sts_scores

    pairs = load_pairs(DEMO_PAIRS)
    got = space.sts(DEMO_PAIRS)
    V = encode(encoder, pairs.texts, "cls")
    m = len(pairs)
    assert (got.spearman, got.pearson) == tuple(sts_scores(V[:m], V[m:], pairs.scores).values())
    assert got.n_pairs == m and got.pairs == "demo_pairs.csv"
    assert space.sts(pairs.to_frame()).spearman == got.spearman
    tuples = list(zip(pairs.sentence1, pairs.sentence2, pairs.scores, strict=True))
    assert space.sts(tuples).spearman == got.spearman
    assert "Spearman" in got._repr_html_() and json.dumps(got.to_dict())
    # a space of vectors finds the sentences among its texts, or says they are missing
    own = isoscope.Space(V, pairs.texts)
    assert own.sts(pairs).spearman == pytest.approx(got.spearman, abs=1e-9)
    with pytest.raises(InputError, match="not among its texts"):
        isoscope.Space(space.vectors, space.texts).sts(pairs)
    with pytest.raises(InputError, match="no gold scores"):
        space.sts([("a", "b"), ("c", "d"), ("e", "f")])


def test_project_is_the_projection_of_every_row_and_is_cached(space) -> None:
    from isoscope.neighbours.projection import project

    p = space.project("pca")
    np.testing.assert_array_equal(p.coords, project(space.vectors, "pca"))
    assert p.rows.tolist() == list(range(N)) and "<svg" in p._repr_html_()
    u = space.project("umap", seed=1)
    assert u.coords.shape == (N, 2) and space.project("umap", seed=1).coords is u.coords
    fresh = isoscope.embed(space.texts, space.encoder, pooling="cls", cache=space._cache, progress=False)
    np.testing.assert_array_equal(fresh.project("umap", seed=1).coords, u.coords)  # read back from the disk cache
    sample = space.project("pca", max_points=20)
    assert len(sample.rows) == 20 and sample.to_frame(space.texts).shape == (20, 4)


def test_compare_has_the_numbers_of_the_compare_command(space, cli_main, capsys, tmp_path) -> None:
    from isoscope.comparison import compare_spaces

    white = space.calibrate("whitening:32")
    cmp = isoscope.compare(space, white, k=5)
    ref = compare_spaces(space.vectors, white.vectors, 5)
    assert cmp.cka_linear == ref.cka_linear and cmp.overlap_at_k == ref.overlap_at_k
    assert cmp.n_texts == N and cmp.k == 5 and cmp.hubness["a"]["skewness"] == ref.hubness_a.skewness
    # the command line on the same texts gives the same numbers
    corpus = tmp_path / "texts.txt"
    corpus.write_text("\n".join(space.texts) + "\n", encoding="utf-8")
    argv = ["compare", "--input", str(corpus), "--a", "pooling=cls", "--b", "pooling=cls,calibrate=whitening:32"]
    assert cli_main([*argv, "--k", "5", "--quiet", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    mine = json.loads(json.dumps(cmp.to_dict(), default=float))
    for key in (
        "n_texts",
        "k",
        "cka_linear",
        "cka_debiased",
        "overlap_at_k",
        "overlap_histogram",
        "hubness",
        "procrustes_disparity",
    ):
        assert mine[key] == pytest.approx(out[key]) if isinstance(out[key], float) else mine[key] == out[key], key
    assert set(out) - set(mine) <= {"input", "n_read", "seconds", "device", "dtype"}  # the command says where it ran
    assert "isoscope-card" in cmp._repr_html_()
    assert isoscope.compare(space, space, k=5).overlap_at_k == 1.0
    with pytest.raises(InputError, match=r"two isoscope\.Space"):
        isoscope.compare(space.vectors, white.vectors)
    with pytest.raises(InputError, match="same texts"):
        isoscope.compare(space, isoscope.Space(space.vectors[:10]))


def test_compare_layers_of_one_model_have_a_unit_diagonal(space) -> None:
    cmp = isoscope.compare(space, space.calibrate("sn"), k=5, layers=True, map="none")
    assert cmp.cka_layers.shape == (7, 7) and cmp.procrustes_disparity is None
    np.testing.assert_allclose(np.diag(cmp.cka_layers), 1.0, atol=1e-12)
    assert cmp.to_dict()["layers_a"][0] == "layer:0"


def test_cards_escape_user_text(encoder, tmp_cache) -> None:
    evil = "<script>alert(1)</script>"
    space = isoscope.Space(np.random.default_rng(0).normal(size=(10, 4)), [evil] * 10, name=evil)
    html = space._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<script>" not in space.geometry()._repr_html_()


def test_isoscope_imports_the_api_lazily() -> None:
    code = (
        "import sys, isoscope; heavy = [m for m in ('numpy', 'torch', 'pandas') if m in sys.modules];"
        "print(heavy, callable(isoscope.compare), isoscope.Space.__module__, isoscope.embed.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True).stdout
    assert out.split()[0] == "[]" and "True isoscope.space.space isoscope.space.space" in out
