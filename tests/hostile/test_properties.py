"""Property tests (hypothesis): loaders fail only with InputError, text survives a CSV round trip, and
CSV downloads never start a cell with a formula character."""

from __future__ import annotations

import csv
import io

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from isoscope.data import FORMULA_PREFIXES, load_corpus, load_pairs, safe_csv
from isoscope.errors import InputError

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EXTENSIONS = ("csv", "tsv", "jsonl", "parquet", "txt", "json", "tab", "xlsx", "")

# Printable text without line breaks, as a user would type in a cell (csv handles the quoting).
cell_text = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc", "Zl", "Zp"),  # no surrogates, control characters, line separators
    ),
    min_size=1,
    max_size=60,
).filter(lambda s: s.strip())


@SETTINGS
@given(data=st.binary(max_size=2048), ext=st.sampled_from(EXTENSIONS))
@example(data=b"", ext="csv")
@example(data=b'"', ext="csv")
@example(data=b"\xff\xfe\x00", ext="csv")
@example(data=b"PAR1", ext="parquet")
@example(data=b"{}", ext="jsonl")
@example(data=b"null\n", ext="jsonl")
@example(data=b'{"sentence1": [1], "sentence2": {"a": 1}, "score": [2]}', ext="jsonl")
def test_load_pairs_bytes_only_raise_input_error(data: bytes, ext: str) -> None:
    try:
        pairs = load_pairs(data, f"f.{ext}")
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    assert len(pairs.sentence1) == len(pairs.sentence2) > 0
    assert all(isinstance(s, str) and s for s in pairs.texts)


@SETTINGS
@given(data=st.binary(max_size=2048), ext=st.sampled_from(EXTENSIONS))
@example(data=b"\xef\xbb\xbf", ext="txt")
@example(data=b'{"text": null}\n', ext="jsonl")
@example(data=b'{"text": {"a": [1]}}\n', ext="jsonl")
def test_load_corpus_bytes_only_raise_input_error(data: bytes, ext: str) -> None:
    try:
        corpus = load_corpus(data, f"f.{ext}")
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    assert len(corpus.texts) == len(corpus.meta) > 0
    assert all(isinstance(t, str) and t for t in corpus.texts)


@SETTINGS
@given(rows=st.lists(st.tuples(cell_text, cell_text), min_size=1, max_size=20), delimiter=st.sampled_from([",", "\t"]))
def test_pairs_round_trip(rows: list[tuple[str, str]], delimiter: str) -> None:
    """Sentence pairs written with the csv module load back equal (after strip)."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf, delimiter=delimiter)
    w.writerow(["sentence1", "sentence2"])
    w.writerows(rows)
    pairs = load_pairs(buf.getvalue().encode("utf-8"), "p.csv" if delimiter == "," else "p.tsv")
    assert pairs.sentence1 == [a.strip() for a, _ in rows]
    assert pairs.sentence2 == [b.strip() for _, b in rows]
    assert pairs.scores is None


@SETTINGS
@given(texts=st.lists(cell_text, min_size=1, max_size=20))
def test_corpus_round_trip(texts: list[str]) -> None:
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(["text", "topic"])
    w.writerows([t, str(i)] for i, t in enumerate(texts))
    corpus = load_corpus(buf.getvalue().encode("utf-8"), "c.csv")
    assert corpus.texts == [t.strip() for t in texts]
    assert corpus.meta["topic"].tolist() == [str(i) for i in range(len(texts))]


@SETTINGS
@given(texts=st.lists(cell_text, min_size=1, max_size=20))
def test_corpus_txt_round_trip(texts: list[str]) -> None:
    corpus = load_corpus("\n".join(texts).encode("utf-8"), "c.txt")
    assert corpus.texts == [t.strip() for t in texts]


any_cell = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1", "=cmd|' /C calc'!A0"]),
    st.integers(),
    st.floats(allow_nan=True),
    st.none(),
)


@SETTINGS
@given(
    columns=st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=4, unique=True),
    data=st.data(),
)
def test_safe_csv_never_starts_a_text_cell_with_a_formula(columns: list[str], data) -> None:
    n = data.draw(st.integers(0, 8))
    df = pd.DataFrame({c: data.draw(st.lists(any_cell, min_size=n, max_size=n)) for c in columns})
    out = safe_csv(df).decode("utf-8")
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert len(rows) == n + 1
    for header in rows[0]:
        assert not header.startswith(FORMULA_PREFIXES), header
    for j, c in enumerate(columns):
        for i, value in enumerate(df[c]):
            if isinstance(value, str):
                cell = rows[i + 1][j]
                assert not cell.startswith(FORMULA_PREFIXES), cell
                # the text itself is kept, with at most a leading quote added
                assert cell == value or cell == "'" + value, (cell, value)


@pytest.mark.parametrize("dtype", ["object", "string", "category"])
def test_safe_csv_guards_every_text_dtype(dtype: str) -> None:
    df = pd.DataFrame({"t": pd.Series(["=1+1", "@x", "ok", "-2"], dtype=dtype), "n": [-1.5, 2, 3, 4]})
    rows = list(csv.reader(io.StringIO(safe_csv(df).decode("utf-8"))))
    assert [r[0] for r in rows[1:]] == ["'=1+1", "'@x", "ok", "'-2"]
    assert rows[1][1] == "-1.5"  # numbers are numbers, not formulas


@pytest.mark.parametrize("text", ["a\r=cmd|' /C calc'!A0", "b\n+1+1", "c\r\n@SUM(A1)", "\r=1", "\n-2"])
def test_safe_csv_line_breaks_stay_inside_the_cell(text: str) -> None:
    """A line break inside a cell must not start a new spreadsheet row that begins with a formula."""
    raw = safe_csv(pd.DataFrame({"sentence": [text, "next"]}))
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
    assert rows == [["sentence"], [text if not text.startswith(FORMULA_PREFIXES) else "'" + text], ["next"]]
    assert raw.decode("utf-8").count('"') == 2  # the cell with the break is quoted, the others are not
