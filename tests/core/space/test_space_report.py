"""The one-file report (isoscope.space.report) and ``isoscope report``: every section, the numbers it shows are the
library's, user text escaped, nothing loaded from another host, under 10 MB for 10k texts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import isoscope
from isoscope.data import load_corpus
from isoscope.geometry.metrics import all_metrics
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS

EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?(?:https?:)?//|@import""", re.I)


def external_references(html: str) -> list[str]:
    """Resources the page would load from another host: in its markup and styles, and scripts with a src (the
    inlined plotly.js holds link strings of its own, which load nothing; the browser test checks requests)."""
    markup = re.sub(r"<script\b[^>]*>.*?</script>", "", html, flags=re.S | re.I)
    return EXTERNAL.findall(markup) + re.findall(r"<script[^>]*\bsrc\s*=", html, flags=re.I)


def embedded_data(html: str) -> dict:
    match = re.search(r'<script type="application/json" id="isoscope-data">(.*?)</script>', html, re.S)
    assert match, "the numbers are embedded as JSON"
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def demo_report(encoder, tmp_path_factory):
    """Built once (the tests that read it share an xdist group, so one worker builds it), on the session's cache."""
    corpus = load_corpus(DEMO_CORPUS)
    space = isoscope.embed(corpus, encoder, pooling="cls", progress=False)
    path = space.report(tmp_path_factory.mktemp("report") / "demo.html", vs="whitening:64", pairs=DEMO_PAIRS, map="pca")
    return space, path, path.read_text(encoding="utf-8")


@pytest.mark.xdist_group("demo_report")
def test_the_report_has_every_section_and_the_librarys_numbers(demo_report) -> None:
    space, _, html = demo_report
    for anchor in ("anisotropy", "layers", "hubness", "calibration", "map", "made"):
        assert f'id="{anchor}"' in html, anchor
    data = embedded_data(html)
    raw = data["metrics"]["raw"]
    assert raw == pytest.approx(all_metrics(space.vectors))
    white = space.calibrate("whitening:64")
    assert data["metrics"]["whitening:64"] == pytest.approx(all_metrics(white.vectors))
    assert data["comparison"]["overlap_at_k"] == isoscope.compare(space, white, map="none").overlap_at_k
    sts = {r["space"]: r["spearman"] for r in data["sts"]}
    assert sts["raw"] == space.sts(DEMO_PAIRS).spearman and sts["whitening:64"] == white.sts(DEMO_PAIRS).spearman
    assert "How it was made" in html and space.encoder.fingerprint in html and "version numpy" in html
    assert html.count('class="figure"') >= 5  # histogram, spectrum, layers, overlap, map


@pytest.mark.xdist_group("demo_report")
def test_the_report_is_self_contained(demo_report) -> None:
    _, path, html = demo_report
    assert not external_references(html), external_references(html)[:3]
    assert html.count("<script") >= 3  # plotly inlined, the figures, the data
    assert path.stat().st_size < 10e6


def test_user_text_is_escaped_and_10k_texts_stay_under_10_mb(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 10_000
    evil = '<img src=x onerror="alert(1)">'
    texts = [f"{evil} text number {i} " + "word " * 20 for i in range(n)]
    X = rng.normal(size=(n, 64)).astype(np.float32) + 2.0 * rng.normal(size=(1, 64)).astype(np.float32)
    space = isoscope.Space(X, texts, {"group": [f"g{i % 5}" for i in range(n)]}, name=evil, cache=False)
    path = space.report(tmp_path / "big.html", map="pca", layers=False)
    html = path.read_text(encoding="utf-8")
    assert evil not in html and "&lt;img src=x" in html
    assert path.stat().st_size < 10e6, path.stat().st_size
    assert "vectors from array" in html and space.digest in html


def test_a_comparison_report(encoder, tmp_path: Path) -> None:
    texts = load_corpus(DEMO_CORPUS).texts[:60]
    a = isoscope.embed(texts, encoder, pooling="cls", cache=False, progress=False)
    b = isoscope.embed(texts, encoder, pooling="mean", cache=False, progress=False)
    path = isoscope.compare(a, b, k=5, layers=True).report(tmp_path / "cmp.html")
    html = path.read_text(encoding="utf-8")
    for anchor in ("anisotropy", "hubness", "calibration", "maps", "layers", "made"):
        assert f'id="{anchor}"' in html, anchor
    assert embedded_data(html)["comparison"]["k"] == 5 and not external_references(html)


def test_the_report_command(cli_main, capsys, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    argv = ["report", "--input", str(DEMO_CORPUS), "--pooling", "cls", "--vs", "whitening:64", "--map", "pca"]
    assert cli_main([*argv, "--no-layers", "--out", str(out), "--quiet", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (
        result["out"] == str(out)
        and result["n_texts"] == len(load_corpus(DEMO_CORPUS).texts)
        and out.stat().st_size == result["bytes"]
    )
    html = out.read_text(encoding="utf-8")
    assert "isoscope report --input" in html and 'id="layers"' not in html
    assert "topic" in html  # the map is coloured by the corpus's topic column
    assert cli_main(["report", "--out", str(out)]) == 2
    assert "--input" in capsys.readouterr().err
    assert cli_main(["report", "--input", str(DEMO_CORPUS), "--vs", "nope", "--out", str(out)]) == 2
    assert cli_main(["report", "--pairs", str(DEMO_CORPUS), "--out", str(tmp_path)]) == 2


def test_the_report_of_vectors_computed_elsewhere(capsys, tmp_path: Path) -> None:
    """``--vectors FILE:COLUMN``: no model is loaded; the report names the file and its digest, has no layer
    table, and scores STS on pairs whose sentences are among the file's texts."""
    from isoscope.cli import main
    from isoscope.data.vectors import vectors_digest
    from tests.vector_files import write_parquet

    rng = np.random.default_rng(0)
    X = (rng.normal(size=(120, 16)) + 3.0).astype(np.float32)  # off-centre: anisotropic on purpose
    texts = [f"sentence {i}" for i in range(120)]
    write_parquet(tmp_path / "v.parquet", X, texts, extra={"topic": [f"t{i % 4}" for i in range(120)]})
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("".join(f"sentence {i},sentence {i + 1},{i % 6}\n" for i in range(0, 40, 2)), encoding="utf-8")
    out = tmp_path / "r.html"
    argv = ["report", "--vectors", f"{tmp_path / 'v.parquet'}:emb", "--pairs", str(pairs), "--vs", "whitening:8"]
    assert main([*argv, "--map", "pca", "--k", "5", "--out", str(out), "--quiet", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n_texts"] == 120
    html = out.read_text(encoding="utf-8")
    assert vectors_digest(X) in html and "v.parquet:emb" in html and 'id="layers"' not in html
    assert embedded_data(html)["sts"] is not None and not external_references(html)
    assert main([*argv, "--model", "some/model", "--out", str(out)]) == 2
    assert "--vectors is the space; drop --model" in capsys.readouterr().err


def test_a_report_of_the_models_recipe_shows_the_raw_last_layer_beside_it(encoder, tmp_path: Path) -> None:
    """Issue 37: the default pooling is the model's own recipe (mean, then normalised); the report sets the mean of
    its raw last layer beside it, numbers from all_metrics of those vectors."""
    from isoscope.encode.embed import encode

    texts = load_corpus(DEMO_CORPUS).texts[:300]
    space = isoscope.embed(texts, encoder, progress=False)
    assert space.embedding.pooling.name == "model"
    html = space.report(tmp_path / "r.html", vs="whitening:32", layers=False, map="pca", progress=False).read_text()
    assert "The model&#x27;s recipe against the mean of its raw last layer" in html or (
        "The model's recipe against the mean of its raw last layer" in html
    )
    mean = all_metrics(encode(encoder, texts, "mean"))
    assert f"{mean['isoscore']:.3f}" in html and "raw last layer (mean)" in html


def test_report_tables_cut_texts_after_whole_words() -> None:
    """Issue 41: the neighbour texts of the report's most-changed table were cut mid-word (``[:60]``). Each is
    whole, or a whole-word prefix of its text followed by "…", within the limit; a long cell the same."""
    from isoscope.space.html import clip
    from isoscope.space.report.content import NEIGHBOUR_CHARS, changed_table
    from isoscope.space.report.render import MAX_CELL_CHARS, table_html

    texts = load_corpus(DEMO_CORPUS).texts[:120]
    rng = np.random.default_rng(0)
    a = isoscope.Space(rng.normal(size=(120, 16)).astype(np.float32), texts)
    b = isoscope.Space(rng.normal(size=(120, 16)).astype(np.float32), texts)
    table = changed_table(isoscope.compare(a, b, map="none"))
    pieces = [
        p
        for column in table.columns
        if column.startswith("nearest")
        for cell in table[column]
        for p in cell.split(" | ")
    ]
    assert pieces and any(p.endswith("…") for p in pieces)
    for piece in pieces:
        assert len(piece) <= NEIGHBOUR_CHARS
        if piece.endswith("…"):
            head = piece[:-1]
            whole = next((t for t in texts if t.startswith(head)), None)
            assert whole is not None and not whole[len(head)].isalnum(), piece  # the next character ends the word
        else:
            assert piece in texts
    long = "word " * 100
    cell = table_html("t", pd.DataFrame({"text": [long]}))
    shown = clip(long, MAX_CELL_CHARS)
    assert shown in cell and shown.endswith("word…") and len(shown) <= MAX_CELL_CHARS
    assert clip("one two three", 9) == "one two…" and clip("abcdefgh", 5) == "abcd…" and clip("short", 9) == "short"
