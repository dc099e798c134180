"""``isoscope.data.inputs``: a corpus or a pairs file, auto-detected; the texts of several; and the lazy package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import isoscope.data
from isoscope.data import INPUT_KINDS, TextInput, load_input, load_texts, streamable_corpus
from isoscope.data.inputs import looks_like_pairs_header
from isoscope.errors import InputError
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS
from tests.data_helpers import demo_head


@pytest.fixture()
def small_pairs(tmp_path: Path) -> Path:
    return demo_head(DEMO_PAIRS, 60, tmp_path / "pairs.csv")


@pytest.fixture()
def small_corpus(tmp_path: Path) -> Path:
    return demo_head(DEMO_CORPUS, 50, tmp_path / "corpus.csv")


def test_load_input_detects_kind(small_pairs: Path, small_corpus: Path, tmp_path: Path) -> None:
    read = load_input(small_pairs)
    assert read.kind == "pairs" and read.pairs is not None and read.warnings == []
    assert read.texts == read.pairs.sentence1 + read.pairs.sentence2 and len(read) == 120
    assert read.name == "pairs.csv"
    read = load_input(str(small_corpus))
    assert read.kind == "corpus" and read.pairs is None and len(read) == 50 and read.name == "corpus.csv"
    txt = tmp_path / "lines.txt"
    txt.write_text("one line\nanother line\n")
    assert load_input(txt) == TextInput(["one line", "another line"], None, [], "lines.txt")


def test_unscored_pairs_are_pairs_by_their_header_and_kind_overrides(tmp_path: Path) -> None:
    unscored = tmp_path / "unscored.csv"
    unscored.write_text("sentence1,sentence2\na cat,a dog\nrain,snow\n")
    assert looks_like_pairs_header(unscored)
    read = load_input(unscored)
    assert read.pairs is not None and read.pairs.scores is None and read.texts == ["a cat", "rain", "a dog", "snow"]
    read = load_input(unscored, kind="corpus")  # the kind overrides detection: sentence1 is the text column
    assert read.pairs is None and read.texts == ["a cat", "rain"]
    read = load_input(unscored, text_column="sentence2")  # a text column means a corpus
    assert read.pairs is None and read.texts == ["a dog", "snow"]


def test_two_text_columns_without_the_pair_header_are_a_corpus(tmp_path: Path) -> None:
    """Two columns load as pairs by position, but without scores or a sentence1/sentence2 header auto reads a
    corpus (its first column)."""
    path = tmp_path / "two.csv"
    path.write_text("text,topic\nhello world,a\ngoodbye moon,b\n")
    assert not looks_like_pairs_header(path)
    read = load_input(path)
    assert read.kind == "corpus" and read.texts == ["hello world", "goodbye moon"]
    with pytest.raises(InputError, match="missing columns"):
        load_input(path, kind="pairs")


def test_pairs_header_is_read_from_the_first_line_only(tmp_path: Path) -> None:
    path = tmp_path / "late.csv"
    path.write_text("text\nsentence1 and sentence2 are words here\n")
    assert not looks_like_pairs_header(path)
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"sentence1": "a", "sentence2": "b"}\n')
    assert looks_like_pairs_header(jsonl) and load_input(jsonl).kind == "pairs"


def test_warnings_of_the_loader_are_kept(tmp_path: Path) -> None:
    bad_score = tmp_path / "bad.csv"
    bad_score.write_text("sentence1,sentence2,score\na,b,1\nc,d,x\ne,f,2\ng,h,3\n")
    read = load_input(bad_score)
    assert len(read.pairs) == 3 and len(read.warnings) == 1 and "dropped 1 row" in read.warnings[0]


def test_bad_kind_and_missing_file_are_input_errors(small_corpus: Path) -> None:
    assert INPUT_KINDS == ("auto", "pairs", "corpus")
    with pytest.raises(InputError, match="unknown input kind 'table'; choose one of auto, pairs, corpus"):
        load_input(small_corpus, kind="table")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="file not found"):
        load_input("no-such-file.csv")


def test_load_texts_concatenates_in_order_with_every_warning(small_pairs: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "c.csv"
    corpus.write_text("text,topic\nfirst,a\n,b\nsecond,c\n")  # a row with an empty text: one warning
    read = load_texts([small_pairs, corpus])
    pairs = load_input(small_pairs)
    assert read.texts == [*pairs.texts, "first", "second"]
    assert read.pairs is None and read.name == "pairs.csv, c.csv"
    assert read.warnings == load_input(corpus).warnings and len(read.warnings) == 1
    one = load_texts([small_pairs])  # one file: what load_input reads, its pairs included
    assert (one.texts, one.name, one.kind) == (pairs.texts, pairs.name, "pairs")


def test_distinct_texts_keep_the_first_of_each() -> None:
    read = TextInput(["b", "a", "b", "c", "a"])
    assert read.distinct_texts() == ["b", "a", "c"] and len(read) == 5


def test_streamable_corpus_keeps_a_txt_as_a_path(tmp_path: Path, small_corpus: Path) -> None:
    txt = tmp_path / "big.txt"
    txt.write_text("one\ntwo\n")
    assert streamable_corpus(txt) == (txt, [])
    texts, warnings = streamable_corpus(small_corpus)
    assert texts == load_input(small_corpus).texts and warnings == []
    assert streamable_corpus(txt, text_column="text")[0] == ["one", "two"]  # a column: loaded as a table
    with pytest.raises(InputError, match=r"file not found: nope\.txt"):
        streamable_corpus("nope.txt")


def test_package_names_resolve_and_are_imported_on_first_use() -> None:
    names = set(isoscope.data.__all__)
    assert names == set(isoscope.data._EXPORTS) | set(isoscope.data._LIMITS)
    assert list(isoscope.data.__all__) == sorted(names, key=lambda n: (not n.isupper(), n[0].islower(), n))
    for name in names:
        assert getattr(isoscope.data, name) is not None, name
    with pytest.raises(AttributeError):
        _ = isoscope.data.no_such_name
    code = "import sys; import isoscope.data.inputs; print('pandas' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"  # the --kind choices of a command's --help cost no pandas


def test_data_kind_tells_vectors_pairs_and_corpora_apart(tmp_path: Path) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from isoscope.data import data_kind

    assert data_kind(DEMO_PAIRS) == "pairs" and data_kind(DEMO_CORPUS) == "corpus"
    np.save(tmp_path / "v.npy", np.ones((3, 2), np.float32))
    assert data_kind(tmp_path / "v.npy") == "vectors"
    table = pa.table({"text": ["a", "b", "c"], "emb": pa.array([[1.0, 2.0]] * 3, pa.list_(pa.float32()))})
    pq.write_table(table, tmp_path / "v.parquet")
    pq.write_table(table.drop(["emb"]), tmp_path / "c.parquet")
    assert data_kind(tmp_path / "v.parquet") == "vectors"  # a list column: vectors
    assert data_kind(tmp_path / "c.parquet") == "corpus"
    assert data_kind(tmp_path / "c.parquet", vector_column="emb") == "vectors"  # as asked (the loader then says no)
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError):  # neither: the corpus loader's one line
        data_kind(tmp_path / "bad.parquet")
