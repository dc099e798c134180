"""Hostile corpus files: isoscope.data.load_corpus, ``python -m isoscope embed --input``, and the corpus upload."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from isoscope.data import load_corpus
from isoscope.errors import InputError, printable
from tests.dashboard.conftest import open_page
from tests.hostile.cases import ACCEPTED_CORPUS, GOOD_CORPUS_TXT, REFUSED_CORPUS, ids, write
from tests.hostile.conftest import assert_app_refused, assert_cli_refused, assert_one_line, new_app

# ---------------------------------------------------------------- loader


@pytest.mark.parametrize(("case", "name", "data", "fragments"), REFUSED_CORPUS, ids=ids(REFUSED_CORPUS))
def test_loader_refuses(case: str, name: str, data: bytes, fragments: tuple[str, ...], tmp_path: Path) -> None:
    for source in (data, write(tmp_path, name, data)):
        with pytest.raises(InputError) as err:
            load_corpus(source, name)
        msg = str(err.value)
        assert_one_line(msg)
        assert name in msg
        for f in fragments:
            assert f.lower() in msg.lower(), f"{f!r} not in {msg!r}"


@pytest.mark.parametrize(("case", "name", "data", "check"), ACCEPTED_CORPUS, ids=ids(ACCEPTED_CORPUS))
def test_loader_accepts(case: str, name: str, data: bytes, check, tmp_path: Path) -> None:
    corpus = load_corpus(write(tmp_path, name, data))
    check(corpus)
    assert len(corpus.meta) == len(corpus.texts)
    for w in corpus.warnings:
        assert_one_line(w)


def test_loader_unknown_text_column() -> None:
    with pytest.raises(InputError, match="no column 'body'") as err:
        load_corpus(b"text,topic\na,b\n", "c.csv", text_column="body")
    assert_one_line(str(err.value))


# ---------------------------------------------------------------- CLI


@pytest.mark.parametrize(("case", "name", "data", "fragments"), REFUSED_CORPUS, ids=ids(REFUSED_CORPUS))
def test_cli_embed_refuses_and_keeps_output(cli, case, name, data, fragments, tmp_path: Path) -> None:
    out = tmp_path / "vectors.npy"
    np.save(out, np.ones((2, 3), dtype=np.float32))
    before = out.read_bytes()
    assert_cli_refused(cli("embed", "--input", str(write(tmp_path, name, data)), "--out", str(out)), *fragments)
    assert out.read_bytes() == before  # a failed run never touches what the user already had


def test_cli_embed_refuses_bad_options(cli, tmp_path: Path) -> None:
    good = write(tmp_path, "c.txt", GOOD_CORPUS_TXT)
    assert_cli_refused(cli("embed", "--input", str(good), "--out", str(tmp_path / "v.csv")), ".npy")
    assert_cli_refused(cli("embed", "--input", str(tmp_path / "none.txt"), "--out", str(tmp_path / "v.npy")))
    assert_cli_refused(cli("embed", "--input", str(tmp_path), "--out", str(tmp_path / "v.npy")), "folder")
    assert_cli_refused(
        cli("embed", "--input", str(good), "--out", str(tmp_path / "v.npy"), "--max-length", "0"), "max-length"
    )
    assert not (tmp_path / "v.npy").exists()


@pytest.mark.parametrize(("case", "name", "data", "check"), ACCEPTED_CORPUS, ids=ids(ACCEPTED_CORPUS))
def test_cli_embed_accepts(cli, case, name, data, check, tmp_path: Path) -> None:
    out = tmp_path / "v.npy"
    r = cli("embed", "--input", str(write(tmp_path, name, data)), "--out", str(out), "--json")
    assert r.code == 0, r.err
    result = json.loads(r.out.strip().splitlines()[-1])
    assert r.err_lines == [f"warning: {printable(w)}" for w in result["warnings"]]  # stderr: the warnings alone
    corpus = load_corpus(data, name)
    vectors = np.load(out, allow_pickle=False)
    assert vectors.shape == (len(corpus), result["dim"]) and np.isfinite(vectors).all()
    assert result["warnings"] == corpus.warnings


# ---------------------------------------------------------------- dashboard upload (AppTest)

CORPUS_PAGE, CORPUS_KEY = "anisotropy", "ani"  # the page that takes a corpus upload


def _upload(at, name: str, data: bytes):
    at.file_uploader(key=f"{CORPUS_KEY}_upload").set_value((name, data, "text/plain")).run()
    return at


def _loaded_caption(at) -> str:
    return " ".join(c.value for c in at.caption).replace("\\", "")


@pytest.fixture(scope="module")
def loaded():
    """One corpus session with a good corpus uploaded; every refused upload below must leave it loaded."""
    at = open_page(new_app(), CORPUS_PAGE)
    at.radio(key=f"{CORPUS_KEY}_source").set_value("Upload a file").run()
    _upload(at, "good.txt", GOOD_CORPUS_TXT)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "good.txt: 32 rows" in _loaded_caption(at)
    return at


# Streamlit's uploader itself refuses extensions outside its list (in the browser and on the server).
APP_REFUSED = [c for c in REFUSED_CORPUS if c[0] != "unsupported_extension"]


@pytest.mark.parametrize(("case", "name", "data", "fragments"), APP_REFUSED, ids=ids(APP_REFUSED))
def test_app_upload_refused_keeps_good_corpus(loaded, case, name, data, fragments) -> None:
    charts = len(loaded.get("plotly_chart"))
    _upload(loaded, name, data)
    assert_app_refused(loaded, *fragments)
    assert "good.txt: 32 rows" in _loaded_caption(loaded)  # the previous corpus is still in use
    assert len(loaded.get("plotly_chart")) == charts
