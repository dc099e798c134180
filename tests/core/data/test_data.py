"""Loading pairs and corpora from user files: formats, encodings, validation and one-line errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isoscope.data import Corpus, DecodeLimits, Pairs, current_limits, load_corpus, load_pairs, safe_csv
from isoscope.data.delimited import DelimitedParser
from isoscope.data.text import BLOCK
from isoscope.errors import InputError
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS

FORMULA = "=cmd|' /C calc'!A0"

ROWS = [
    ("A man is strumming a guitar.", "A person plays the guitar.", 4.5),
    ("The cat sits on the mat, quietly.", "A dog runs in the park.", 0.5),
    ("Stocks fell sharply on Monday.", "Markets dropped at the start of the week.", 3.8),
]


def _frame(rows=ROWS) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["sentence1", "sentence2", "score"])


def _csv(rows=ROWS, header: bool = True, sep: str = ",") -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=sep, lineterminator="\n")
    if header:
        w.writerow(["sentence1", "sentence2", "score"])
    w.writerows(rows)
    return buf.getvalue().encode("utf-8")


def _raises_one_line(fn, *args, match: str | None = None, **kwargs) -> str:
    """Call ``fn``; it must raise InputError whose message is one non-empty line (matching ``match``)."""
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert msg and "\n" not in msg and "\r" not in msg
    if match:
        assert match.lower() in msg.lower(), msg
    return msg


def _assert_rows(pairs: Pairs, rows=ROWS) -> None:
    assert pairs.sentence1 == [r[0] for r in rows]
    assert pairs.sentence2 == [r[1] for r in rows]
    assert pairs.scores is not None
    np.testing.assert_allclose(pairs.scores, [r[2] for r in rows])


# ---------------------------------------------------------------- STS-B as it is


@pytest.mark.parametrize(("split", "n"), [("train", 5749), ("dev", 1500), ("test", 1379)])
def test_stsb_files_load_as_they_are(stsb_dir: Path, split: str, n: int) -> None:
    path = stsb_dir / f"stsb-en-{split}.csv"
    pairs = load_pairs(path)
    assert len(pairs) == n == len(pairs.sentence2)
    assert pairs.scores is not None and pairs.scores.dtype == np.float64 and pairs.scores.shape == (n,)
    assert pairs.scores.min() == 0.0 and pairs.scores.max() == 5.0
    assert pairs.warnings == []
    assert all(pairs.sentence1) and all(pairs.sentence2)
    first = next(csv.reader(io.StringIO(path.read_text("utf-8"))))
    assert [pairs.sentence1[0], pairs.sentence2[0], pairs.scores[0]] == [
        first[0].strip(),
        first[1].strip(),
        float(first[2]),
    ]
    assert pairs.name == path.name


def test_stsb_bytes_upload_equals_path(stsb_dir: Path) -> None:
    path = stsb_dir / "stsb-en-dev.csv"
    a, b = load_pairs(path), load_pairs(path.read_bytes(), "dev.csv")
    assert a.sentence1 == b.sentence1 and np.array_equal(a.scores, b.scores)


# ---------------------------------------------------------------- headers and formats


def test_header_and_no_header_give_the_same_pairs() -> None:
    _assert_rows(load_pairs(_csv(header=True), "p.csv"))
    _assert_rows(load_pairs(_csv(header=False), "p.csv"))


def test_header_in_any_order_case_and_score_alias() -> None:
    df = _frame()[["score", "sentence2", "sentence1"]].rename(
        columns={"score": "Label", "sentence1": "Sentence1", "sentence2": "SENTENCE2"}
    )
    _assert_rows(load_pairs(df.to_csv(index=False).encode(), "p.csv"))


def test_pairs_without_scores() -> None:
    pairs = load_pairs(b"sentence1,sentence2\na b,c d\ne f,g h\n", "p.csv")
    assert pairs.scores is None and len(pairs) == 2
    assert pairs.texts == ["a b", "e f", "c d", "g h"]
    assert list(pairs.to_frame().columns) == ["sentence1", "sentence2"]
    headerless = load_pairs(b"a b,c d\ne f,g h\n", "p.csv")
    assert headerless.scores is None and headerless.sentence2 == ["c d", "g h"]


def _jsonl(rows=ROWS) -> bytes:
    return "\n".join(json.dumps(dict(zip(("sentence1", "sentence2", "score"), r, strict=True))) for r in rows).encode()


def _parquet(rows=ROWS) -> bytes:
    buf = io.BytesIO()
    _frame(rows).to_parquet(buf, index=False)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("p.csv", lambda: _csv()),
        ("p.tsv", lambda: _csv(sep="\t")),
        ("p.tsv", lambda: _csv(sep="\t", header=False)),
        ("p.jsonl", _jsonl),
        ("p.json", _jsonl),
        ("p.parquet", _parquet),
    ],
)
def test_formats(name: str, make, tmp_path: Path) -> None:
    raw = make()
    _assert_rows(load_pairs(raw, name))
    (tmp_path / name).write_bytes(raw)
    _assert_rows(load_pairs(tmp_path / name))


def test_jsonl_scores_as_strings_and_blank_lines() -> None:
    raw = b'{"sentence1": "a", "sentence2": "b", "score": "4.5"}\n\n{"sentence1": "c", "sentence2": "d", "score": 2}\n'
    pairs = load_pairs(raw, "p.jsonl")
    assert pairs.sentence1 == ["a", "c"] and pairs.scores.tolist() == [4.5, 2.0]


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (b'{"sentence1": "a", "sentence2": "b"}\n{not json}\n', "line 2"),
        (b'["a", "b", 3]\n', "line 1"),
    ],
)
def test_jsonl_errors(raw: bytes, match: str) -> None:
    _raises_one_line(load_pairs, raw, "p.jsonl", match=match)


def test_corrupt_parquet() -> None:
    _raises_one_line(load_pairs, b"PAR1 this is not parquet PAR1", "p.parquet", match="parquet")


def test_unsupported_extension() -> None:
    msg = _raises_one_line(load_pairs, _csv(), "p.xlsx", match="unsupported")
    for ext in (".csv", ".tsv", ".jsonl", ".parquet"):
        assert ext in msg


def test_missing_file_and_folder(tmp_path: Path) -> None:
    _raises_one_line(load_pairs, tmp_path / "nope.csv", match="not found")
    _raises_one_line(load_pairs, tmp_path, match="folder")


# ---------------------------------------------------------------- delimiters and line endings


def test_tsv_saved_as_csv_is_detected_even_with_commas_in_sentences() -> None:
    pairs = load_pairs(_csv(header=False, sep="\t"), "p.csv")
    _assert_rows(pairs)
    assert any("tabs" in w for w in pairs.warnings)


def test_csv_saved_as_tsv_is_detected() -> None:
    rows = [(a.replace(",", ""), b, s) for a, b, s in ROWS]
    pairs = load_pairs(_csv(rows, header=True, sep=","), "p.tsv")
    _assert_rows(pairs, rows)
    assert any("commas" in w for w in pairs.warnings)


def test_right_delimiter_gives_no_warning() -> None:
    assert load_pairs(_csv(), "p.csv").warnings == []
    assert load_pairs(_csv(sep="\t"), "p.tsv").warnings == []


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_windows_and_old_mac_line_endings(newline: str) -> None:
    raw = _csv().decode().replace("\n", newline).encode()
    _assert_rows(load_pairs(raw, "p.csv"))


def test_quoted_newline_inside_a_cell() -> None:
    pairs = load_pairs(b'sentence1,sentence2,score\n"line one\nline two",other,3\n', "p.csv")
    assert pairs.sentence1 == ["line one\nline two"]


def test_unmatched_quote_over_a_huge_file_is_one_line_error() -> None:
    raw = b'sentence1,sentence2,score\n"' + b"x" * 200_000 + b"\na,b,3\n"
    _raises_one_line(load_pairs, raw, "p.csv", match="quote")


# ---------------------------------------------------------------- structure problems


@pytest.mark.parametrize("raw", [b"", b"   \n\n  \n"])
def test_empty_file(raw: bytes) -> None:
    _raises_one_line(load_pairs, raw, "p.csv", match="empty")
    _raises_one_line(load_corpus, raw, "c.txt", match="empty")


def test_header_only() -> None:
    _raises_one_line(load_pairs, b"sentence1,sentence2,score\n", "p.csv", match="no data rows")
    _raises_one_line(load_corpus, b"text,topic\n", "c.csv", match="no data rows")


def test_missing_columns() -> None:
    msg = _raises_one_line(load_pairs, b"text,score\nhello,3\n", "p.csv", match="missing columns")
    assert "sentence1" in msg and "text" in msg


def test_an_unknown_header_is_refused_by_name_never_read_by_position() -> None:
    """Issue 26: question,answer,rating was read by position, its header reported as "dropped 1 row whose
    score is missing" and scored (Spearman 13.4 on 9 pairs). Now it is refused, naming the columns found."""
    rows = "".join(f"q{i},a{i},{i % 5}\n" for i in range(9))
    msg = _raises_one_line(load_pairs, f"question,answer,rating\n{rows}".encode(), "p.csv", match="missing columns")
    assert "question, answer, rating" in msg and "sentence1" in msg
    pairs = load_pairs(rows.encode(), "p.csv")  # the same rows without a header: by position, as STS-B
    assert len(pairs) == 9 and not pairs.warnings


def test_single_column_without_header() -> None:
    _raises_one_line(load_pairs, b"just one column\nanother line\n", "p.csv", match="one column")


def test_repeated_header_names_do_not_crash() -> None:
    corpus = load_corpus(b"text,text\nfirst,second\n", "c.csv")
    assert corpus.texts == ["first"] and corpus.meta.iloc[0].tolist() == ["second"]


# ---------------------------------------------------------------- scores


def test_non_numeric_and_missing_scores_dropped_with_count() -> None:
    raw = b"sentence1,sentence2,score\na,b,4\nc,d,abc\ne,f,\ng,h,nan\ni,j,1.5\nk,l,inf\n"
    pairs = load_pairs(raw, "p.csv")
    assert pairs.sentence1 == ["a", "i"] and pairs.scores.tolist() == [4.0, 1.5]
    assert any("dropped 4 row(s)" in w and "not a number" in w for w in pairs.warnings), pairs.warnings


def test_out_of_range_scores_dropped_with_count_bounds_kept() -> None:
    raw = b"a,b,-0.5\nc,d,0\ne,f,5\ng,h,5.01\ni,j,10\n"
    pairs = load_pairs(raw, "p.csv")
    assert pairs.sentence1 == ["c", "e"] and pairs.scores.tolist() == [0.0, 5.0]
    assert any("dropped 3 row(s)" in w and "0-5" in w for w in pairs.warnings), pairs.warnings


def test_no_valid_score_at_all() -> None:
    _raises_one_line(load_pairs, b"a,b,high\nc,d,low\n", "p.csv", match="numeric score")


# ---------------------------------------------------------------- encodings and binary data


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_with_bom(codec: str) -> None:
    text = "sentence1,sentence2,score\ncafé crème,naïve façade,3.5\n"
    bom = {"utf-16-le": "\ufeff", "utf-16-be": "\ufeff"}.get(codec, "")
    pairs = load_pairs((bom + text).encode(codec), "p.csv")
    assert pairs.sentence1 == ["café crème"] and pairs.sentence2 == ["naïve façade"]
    assert any("UTF-16" in w for w in pairs.warnings)


def test_utf8_bom_does_not_hide_the_header() -> None:
    pairs = load_pairs(b"\xef\xbb\xbf" + _csv(), "p.csv")
    _assert_rows(pairs)
    assert pairs.warnings == []


def test_latin1_decoded_with_warning() -> None:
    pairs = load_pairs("crème brûlée,café,2\n".encode("latin-1"), "p.csv")
    assert pairs.sentence1 == ["crème brûlée"] and pairs.sentence2 == ["café"]
    assert any("Latin-1" in w for w in pairs.warnings)


def test_windows_1252_curly_quotes_decoded() -> None:
    pairs = load_pairs("\u201cquoted\u201d \u2013 café,other,3\n".encode("cp1252"), "p.csv")
    assert pairs.sentence1 == ["\u201cquoted\u201d \u2013 café"]
    assert any("Latin-1" in w for w in pairs.warnings)


BINARY = {
    "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
    "zip": b"PK\x03\x04\x14\x00\x06\x00" + bytes(200),
    "random": np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8).tobytes(),
    "controls_no_nul": bytes(range(1, 9)) * 300,
    "undecodable": b"\x81\x8d\x8f\x90\x9d" * 100,
}


@pytest.mark.parametrize("kind", sorted(BINARY))
def test_binary_junk_refused(kind: str) -> None:
    raw = BINARY[kind]
    for loader, name in ((load_pairs, "p.csv"), (load_corpus, "c.txt"), (load_corpus, "c.jsonl")):
        msg = _raises_one_line(loader, raw, name)
        assert any(w in msg for w in ("binary", "not text", "encoding")), msg


# ---------------------------------------------------------------- rows and texts


def test_too_many_rows_refused() -> None:
    raw = "".join(f"s{i},t{i},1\n" for i in range(11)).encode()
    assert len(load_pairs(raw, "p.csv", max_rows=11)) == 11
    _raises_one_line(load_pairs, raw, "p.csv", max_rows=10, match="limit")
    _raises_one_line(load_corpus, raw, "c.txt", max_rows=10, match="limit")


def test_empty_sentences_dropped_with_count() -> None:
    raw = b"sentence1,sentence2,score\na,b,1\n,x,2\n   ,y,3\nc,d,4\nz,,5\n"
    pairs = load_pairs(raw, "p.csv")
    assert pairs.sentence1 == ["a", "c"] and pairs.scores.tolist() == [1.0, 4.0]
    assert any("dropped 3 row(s) with an empty sentence" in w for w in pairs.warnings), pairs.warnings


def test_all_sentences_empty() -> None:
    _raises_one_line(load_pairs, b"sentence1,sentence2\n ,x\ny, \n", "p.csv", match="empty sentence")


def test_long_texts_truncated_with_warning() -> None:
    raw = f"{'x' * 80},short,3\nshort,{'y' * 60},2\n".encode()
    pairs = load_pairs(raw, "p.csv", max_chars=50)
    assert pairs.sentence1 == ["x" * 50, "short"] and pairs.sentence2 == ["short", "y" * 50]
    assert any("2 text(s) longer than 50" in w for w in pairs.warnings), pairs.warnings
    corpus = load_corpus(f"{'z' * 80}\nok\n".encode(), "c.txt", max_chars=50)
    assert corpus.texts == ["z" * 50, "ok"] and any("truncated" in w for w in corpus.warnings)


def test_whitespace_is_stripped() -> None:
    pairs = load_pairs(b"  a b  ,\tc d ,3\n", "p.csv")
    assert pairs.sentence1 == ["a b"] and pairs.sentence2 == ["c d"]


# ---------------------------------------------------------------- formula cells


def test_formula_cells_kept_as_plain_text() -> None:
    rows = [(FORMULA, "+1+2", 3.0), ("@SUM(A1:A9)", "-2-3", 4.0)]
    for raw, name in ((_csv(rows), "p.csv"), (_csv(rows, sep="\t"), "p.tsv"), (_jsonl(rows), "p.jsonl")):
        pairs = load_pairs(raw, name)
        assert pairs.sentence1 == [FORMULA, "@SUM(A1:A9)"] and pairs.sentence2 == ["+1+2", "-2-3"], name
    corpus = load_corpus(f"{FORMULA}\n".encode(), "c.txt")
    assert corpus.texts == [FORMULA]


def test_safe_csv_neutralises_formula_cells() -> None:
    df = pd.DataFrame(
        {
            "text": [FORMULA, "+1", "-2", "@x", "\tTAB", "plain text", "a = b"],
            "number": [-1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
            "=HYPERLINK(1)": ["a", "b", "c", "d", "e", "f", "g"],
        }
    )
    rows = list(csv.reader(io.StringIO(safe_csv(df).decode("utf-8"))))
    assert rows[0] == ["text", "number", "'=HYPERLINK(1)"]
    body = rows[1:]
    assert [r[0] for r in body] == ["'" + FORMULA, "'+1", "'-2", "'@x", "'\tTAB", "plain text", "a = b"]
    assert [float(r[1]) for r in body] == df["number"].tolist()  # numbers stay numbers
    assert df["text"][0] == FORMULA  # the input frame is not modified


def test_safe_csv_roundtrip_of_normal_pairs() -> None:
    pairs = load_pairs(_csv(), "p.csv")
    back = load_pairs(safe_csv(pairs.to_frame()), "back.csv")
    _assert_rows(back)


# ---------------------------------------------------------------- corpora


def test_corpus_txt() -> None:
    corpus = load_corpus(b"  first line \n\nsecond line\n   \nthird\n", "c.txt")
    assert isinstance(corpus, Corpus)
    assert corpus.texts == ["first line", "second line", "third"]
    assert len(corpus.meta) == 3 and list(corpus.meta.columns) == []


def test_corpus_csv_with_metadata_aligned_after_drops() -> None:
    raw = b"text,topic,source\nalpha,sports,news\n,empty,x\nbeta,finance,blog\n"
    corpus = load_corpus(raw, "c.csv")
    assert corpus.texts == ["alpha", "beta"]
    assert corpus.meta.to_dict("list") == {"topic": ["sports", "finance"], "source": ["news", "blog"]}
    assert any("dropped 1 row(s) with empty text" in w for w in corpus.warnings)


def test_corpus_jsonl_with_metadata() -> None:
    raw = b'{"text": "one", "lang": "en", "n": 1}\n{"text": "two", "lang": "fr", "n": 2}\n'
    corpus = load_corpus(raw, "c.jsonl")
    assert corpus.texts == ["one", "two"]
    assert corpus.meta["lang"].tolist() == ["en", "fr"] and corpus.meta["n"].tolist() == [1, 2]


def test_corpus_parquet_and_tsv() -> None:
    df = pd.DataFrame({"sentence": ["x y", "z w"], "label": [1, 2]})
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    assert load_corpus(buf.getvalue(), "c.parquet").texts == ["x y", "z w"]
    assert load_corpus(df.to_csv(index=False, sep="\t").encode(), "c.tsv").texts == ["x y", "z w"]


def test_corpus_explicit_text_column_with_unknown_header() -> None:
    corpus = load_corpus(b"Title,Body\nA,the body text\nB,another body\n", "c.csv", text_column="Body")
    assert corpus.texts == ["the body text", "another body"]
    assert corpus.meta.iloc[:, 0].tolist() == ["A", "B"]


def test_corpus_unknown_text_column() -> None:
    msg = _raises_one_line(load_corpus, b"text,topic\na,b\n", "c.csv", text_column="body", match="no column 'body'")
    assert "topic" in msg


def test_corpus_table_without_text_column() -> None:
    _raises_one_line(load_corpus, b'{"title": "a", "n": 1}\n', "c.jsonl", match="no text column")


def test_corpus_headerless_csv_uses_first_column() -> None:
    corpus = load_corpus(b"hello there,meta1\ngeneral kenobi,meta2\n", "c.csv")
    assert corpus.texts == ["hello there", "general kenobi"]


# ---------------------------------------------------------------- shipped demo data


def test_demo_corpus_loads(repo_root: Path) -> None:
    """What assets/README.md says of demo_corpus.csv."""
    corpus = load_corpus(DEMO_CORPUS)
    assert corpus.warnings == [] and len(corpus.meta) == len(corpus.texts)
    assert len(corpus) == 4_846 and len(corpus) >= 10 * 384  # at least ten texts per dimension of the default model
    assert len({" ".join(t.lower().split()) for t in corpus.texts}) == len(corpus.texts)  # no duplicates
    topics, sources = corpus.meta["topic"].value_counts(), corpus.meta["source"].value_counts()
    assert len(topics) == 31 and topics.min() >= 140
    assert set(sources.index) == {
        "news", "chat", "howto", "review", "question", "fact", "story", "caption", "headline", "reply", "forum"
    }  # fmt: skip
    words = np.array([len(t.split()) for t in corpus.texts])
    assert words.min() >= 4 and words.max() <= 41 and (words >= 25).sum() >= 300 and (words <= 6).sum() >= 300


def test_demo_pairs_load(repo_root: Path) -> None:
    """What assets/README.md says of demo_pairs.csv: graded pairs spread over the five score bins."""
    pairs = load_pairs(DEMO_PAIRS)
    assert len(pairs) == 974 and pairs.warnings == []
    assert pairs.scores is not None and pairs.scores.min() >= 0 and pairs.scores.max() <= 5
    np.testing.assert_array_equal(pairs.scores * 10, np.round(pairs.scores * 10))  # one decimal
    bins = np.bincount(np.minimum(pairs.scores.astype(int), 4), minlength=5)
    assert bins.min() >= 169 and bins.max() <= 220  # the bins' counts the README gives
    n = len(pairs)
    assert all(a != b for a, b in zip(pairs.texts[:n], pairs.texts[n:], strict=True))
    assert ("The dog bit the man.", "The man bit the dog.") in set(zip(pairs.texts[:n], pairs.texts[n:], strict=True))


# ---------------------------------------------------------------- bounded decoding (issue 17)


def test_limits_defaults_environment_and_validation(monkeypatch) -> None:
    assert current_limits() == DecodeLimits()
    monkeypatch.setenv("ISOSCOPE_MAX_ROWS", "1_000")
    monkeypatch.setenv("ISOSCOPE_MAX_CHARS", "77")
    assert current_limits() == DecodeLimits(max_rows=1000, max_chars=77)
    assert current_limits().replace(max_rows=5, max_chars=None).max_chars == 77
    monkeypatch.setenv("ISOSCOPE_MAX_CHARS", "0")
    _raises_one_line(current_limits, match="ISOSCOPE_MAX_CHARS must be at least 1")
    with pytest.raises(ValueError, match="positive integer"):
        DecodeLimits(max_bytes=-1)


TRICKY_CSV = [
    "a,b,c\n1,2,3\n",
    'a,"b,c",d\n',
    '"a ""quoted"" word",x\n',
    '"multi\nline",y\r\n"two\r\nlines",z\r\n',
    'x"y",z\n',  # a quote inside an unquoted cell is text
    '"abc"def,x\n',  # text after a closing quote is kept
    ' "x",y\n',  # a space before the quote: unquoted
    "a,b,\n",
    "a,b,",
    "\n\na,b\n\n",
    "a\rb\rc\r",
    '"",""\n',
    ",,,\n",
    "é,ü\n",
]


@pytest.mark.parametrize("text", TRICKY_CSV)
@pytest.mark.parametrize("piece", [1, 2, 3, 1000])
def test_delimited_parser_reads_what_the_csv_module_reads(text: str, piece: int) -> None:
    """The streaming parser against the csv module (excel dialect), fed in pieces of every size."""
    expected = [[c.strip() for c in row] for row in csv.reader(io.StringIO(text, newline=""))]
    parser = DelimitedParser(",", "t.csv", cap=10_000, max_columns=100)
    rows = []
    for i in range(0, len(text), piece):
        rows += parser.feed(text[i : i + piece])
    last = parser.close()
    rows += [last] if last is not None else []
    got = [[c.strip() for c in r] for r in rows]
    assert [r for r in got if any(r)] == [r for r in expected if any(r)]


def test_cells_are_cut_while_read_and_counted() -> None:
    raw = b"sentence1,sentence2,score\n" + b" " * 50 + b"x" * 5000 + b",short,3\n" + b"y" * 10 + b" " * 9000 + b",s,2\n"
    pairs = load_pairs(raw, "p.csv", max_chars=100)
    assert pairs.sentence1 == ["x" * 100, "y" * 10]  # leading spaces do not count, trailing ones are not text
    assert pairs.warnings == ["p.csv: 1 text(s) longer than 100 characters were truncated"]


def test_a_line_longer_than_a_block_keeps_its_encoding_rules() -> None:
    """A line of several MiB is decoded in pieces: a multibyte character across a block boundary survives,
    and a Windows-1252 byte in its tail is named by its line number."""
    long_line = "é" * (BLOCK // 2 + 7)  # 2 bytes each: the line crosses the first block boundary mid-character
    raw = ("first\n" + long_line + "\nthird\n").encode() + "caf\xe9\n".encode("latin-1")
    corpus = load_corpus(raw, "c.txt", max_chars=10_000_000)
    assert corpus.texts == ["first", long_line, "third", "café"]
    assert corpus.warnings == [
        "c.txt: 1 line(s) not valid UTF-8 (line 4), decoded as Latin-1 (Windows-1252); check accented characters"
    ]
    tail = ("x" * (BLOCK + 10)).encode() + b" caf\xe9\nok\n"
    corpus = load_corpus(tail, "c.txt", max_chars=10_000_000)
    assert corpus.texts[1] == "ok" and corpus.texts[0].endswith(" café") and "line 1" in corpus.warnings[0]


def test_utf16_lines_across_blocks() -> None:
    texts = [f"ligne numéro {i}" for i in range(60_000)]  # ~2 MiB in UTF-16: several blocks
    corpus = load_corpus(("\n".join(texts) + "\n").encode("utf-16"), "c.txt", max_rows=100_000)
    assert corpus.texts == texts and corpus.warnings == ["c.txt: decoded as UTF-16"]


def test_jsonl_line_endings_and_values_cut() -> None:
    raw = b'{"text": "a", "n": 1}\r\n{"text": "' + b"b" * 300 + b'", "n": 2}\r{"text": "c", "n": 3}'
    corpus = load_corpus(raw, "c.jsonl", max_chars=100)
    assert corpus.texts == ["a", "b" * 100, "c"] and corpus.meta["n"].tolist() == [1, 2, 3]
    assert any("1 text(s) longer than 100" in w for w in corpus.warnings)


def _parquet_of(table) -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def test_parquet_nested_columns_dropped_binary_read_as_text() -> None:
    import pyarrow as pa

    table = pa.table(
        {
            "text": pa.array([b"caf\xc3\xa9", b"x" * 50], pa.binary()),
            "tags": pa.array([[1, 2], [3]], pa.list_(pa.int64())),
            "n": [1, 2],
        }
    )
    corpus = load_corpus(_parquet_of(table), "c.parquet", max_chars=20)
    assert corpus.texts == ["café", "x" * 20] and corpus.meta["n"].tolist() == [1, 2]
    assert "c.parquet: column 'tags' holds nested values (lists, structs, maps); ignored" in corpus.warnings
    assert any("1 text(s) longer than 20" in w for w in corpus.warnings)


def test_parquet_limits_are_checked_before_reading(monkeypatch) -> None:
    """Rows and row groups come from the metadata: over a limit, nothing is decoded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def no_reading(*a, **k):
        raise AssertionError("decoded rows although the metadata was over a limit")

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", no_reading)
    many_rows = _parquet_of(pa.table({"text": [f"t{i}" for i in range(500)]}))
    _raises_one_line(load_corpus, many_rows, "c.parquet", max_rows=100, match="500 rows is over the limit of 100")
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, pa.schema([("text", pa.string())])) as w:
        for i in range(30):
            w.write_table(pa.table({"text": [f"t{i}"]}))
    monkeypatch.setenv("ISOSCOPE_MAX_ROW_GROUPS", "20")
    _raises_one_line(load_corpus, buf.getvalue(), "c.parquet", match="30 row groups, over the limit of 20")


def test_parquet_decoded_bytes_are_counted_batch_by_batch(monkeypatch) -> None:
    """The last guard: were the footer and the page checks both fooled, the decoded bytes are counted too, batch
    by batch (each dictionary once), and reading stops at the limit. (A real lying footer: tests/hostile.)"""
    import pyarrow as pa

    import isoscope.data.parquet

    data = _parquet_of(pa.table({"text": [c * 600_000 for c in "wxyz"]}))
    monkeypatch.setattr(isoscope.data.parquet, "_check_metadata", lambda *a: None)  # as if the footer said "tiny"
    monkeypatch.setattr(isoscope.data.parquet, "_check_pages", lambda *a: 1)  # ... and the pages too
    monkeypatch.setenv("ISOSCOPE_MAX_PARQUET_BYTES", str(2**20))
    _raises_one_line(load_corpus, data, "c.parquet", match="decodes to more than 1 MiB")
