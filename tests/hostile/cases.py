"""Hostile files shared by the loader, CLI and AppTest tests.

``REFUSED_*``: (case id, file name, bytes, fragments the one-line message must contain).
``ACCEPTED_*``: (case id, file name, bytes, check(data)) for input that loads, possibly with a warning.
"""

from __future__ import annotations

import csv
import io
import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

FORMULAS = ("=cmd|' /C calc'!A0", "+1+1", "@SUM(A1)", "-2+3", '=HYPERLINK("http://x.invalid","click")')
HTML = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<b>bold</b> & <i>it</i>", "**not bold**")
LONG = "a" * 100_000  # one sentence of 100k characters
HUGE = "b" * 300_000  # longer than the csv module's default field limit (131,072)
ROWS_200K = 200_000


def csv_bytes(rows: list[list[Any]], header: list[str] | None = None, encoding: str = "utf-8") -> bytes:
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    if header:
        w.writerow(header)
    w.writerows(rows)
    return buf.getvalue().encode(encoding)


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    """``data`` saved as ``tmp_path / name``; returns the path."""
    path = tmp_path / name
    path.write_bytes(data)
    return path


def npy(arr: np.ndarray) -> bytes:
    """The bytes of a .npy file of ``arr`` (np.save with allow_pickle=False)."""
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def junk(n: int = 4096, seed: int = 0) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def deep_json(depth: int = 1000, key: str = "sentence1") -> bytes:
    """One JSONL record nested ``depth`` arrays deep (2 KB): json.loads would exhaust its recursion."""
    return (
        json.dumps({"sentence2": "b", "text": "t", "score": 1})[:-1]
        + f', "{key}": '
        + "[" * depth
        + "]" * depth
        + "}\n"
    ).encode()


def parquet_bomb(
    path: Path | None = None, groups: int = 2000, cell: int = 1_000_000, dictionary: bool = False
) -> bytes:
    """A small Parquet file that decodes to about ``2 * groups * cell`` bytes: ``groups`` zstd row groups of
    one row each, sentence1 and sentence2 = 'c' * cell (issue 17: 1.2 MB on disk, 4 GB decoded).

    ``dictionary``: instead one row group of ``groups`` rows all holding the same ``cell``-long text, stored
    once in a dictionary page (the metadata's uncompressed size stays ~``cell``; decoded it is ``groups * cell``).
    Written to ``path`` when given; returns the bytes.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = "c" * cell
    buf = io.BytesIO()
    if dictionary:  # built as a dictionary array: the test never holds the decoded texts either
        col = pa.DictionaryArray.from_arrays(pa.array(np.zeros(groups, np.int32)), pa.array([text]))
        table = pa.table({"sentence1": col, "sentence2": col, "score": np.full(groups, 3.0)})
        pq.write_table(table, buf, compression="zstd", use_dictionary=True, store_schema=False)  # read back as text
    else:
        table = pa.table({"sentence1": [text], "sentence2": [text], "score": [3.0]})
        with pq.ParquetWriter(buf, table.schema, compression="zstd") as w:
            for _ in range(groups):
                w.write_table(table)
    data = buf.getvalue()
    if path is not None:
        path.write_bytes(data)
    return data


def _varint(n: int, length: int | None = None) -> bytes:
    """Thrift's unsigned varint of ``n``; with ``length``, padded to that many bytes (readers accept the padding)."""
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        last = n == 0 and (length is None or len(out) + 1 >= length)
        out.append(b if last else b | 0x80)
        if last:
            return bytes(out)


def lying_footer(data: bytes, claim: int = 100) -> bytes:
    """``data`` (a Parquet file) with its footer rewritten to claim ``claim`` bytes for every row group and column
    chunk: each ``total_byte_size`` and ``total_uncompressed_size`` (zigzag varints in the Thrift footer) is
    replaced by a varint of ``claim`` padded to the same length, so no offset moves. The pages are untouched."""
    import pyarrow.parquet as pq

    md = pq.ParquetFile(io.BytesIO(data)).metadata
    footer_len = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - footer_len
    footer = data[start:-8]
    sizes = {md.row_group(i).total_byte_size for i in range(md.num_row_groups)}
    sizes |= {
        md.row_group(i).column(j).total_uncompressed_size
        for i in range(md.num_row_groups)
        for j in range(md.num_columns)
    }
    for size in sorted((s for s in sizes if s > 10 * claim), reverse=True):
        true = _varint(2 * size)
        footer = footer.replace(true, _varint(2 * claim, len(true)))
    lie = data[:start] + footer + data[-8:]
    md = pq.ParquetFile(io.BytesIO(lie)).metadata
    claimed = sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
    assert claimed <= claim * md.num_row_groups, "the footer rewrite did not take"
    return lie


def lying_parquet(path: Path | None = None, groups: int = 600, cell: int = 1_000_000, claim: int = 100) -> bytes:
    """The issue-28 file: a Parquet bomb (``2 * groups * cell`` bytes decoded, a few hundred KB on disk) whose
    footer claims ``claim`` bytes per row group, so that a reader trusting the footer sizes its batches from
    it. Written to ``path`` when given; returns the bytes."""
    data = lying_footer(parquet_bomb(groups=groups, cell=cell), claim)
    if path is not None:
        path.write_bytes(data)
    return data


def wide_parquet(path: Path, rows: int = 49_999, columns: int = 100) -> Path:
    """A valid file as pyarrow writes it by default: ``columns`` columns (the first named text) of ``rows``
    short distinct strings each (issue 28: called 'damaged or crafted' after 1.1 GB)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = ["text", *(f"c{j}" for j in range(1, columns))]
    pq.write_table(pa.table({n: [f"{n} {i}" for i in range(rows)] for n in names}), path)
    return path


class MarkerPayload:
    """Unpickling this creates ``path``: proof that a loader unpickled user data."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def pickled_npy(marker: Path) -> bytes:
    """A real .npy file (np.save with allow_pickle=True) of an object array holding a MarkerPayload."""
    arr = np.empty(2, dtype=object)
    arr[0], arr[1] = MarkerPayload(marker), "x"
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    return buf.getvalue()


def raw_pickle(marker: Path) -> bytes:
    return pickle.dumps(MarkerPayload(marker))


PARQUET_BOMB = parquet_bomb(groups=60, cell=5_000_000)  # 600 MB decoded, over the 512 MiB default limit

GOOD_PAIRS = [
    ["A man is strumming a guitar.", "A man plays the guitar.", 4.8],
    ["A woman slices an onion.", "Someone cuts an onion.", 4.2],
    ["Two dogs run in a field.", "The stock market fell.", 0.4],
    ["A child reads a book.", "A kid is reading.", 4.0],
]
GOOD_PAIRS_CSV = csv_bytes(GOOD_PAIRS, ["sentence1", "sentence2", "score"])
PAIRS_TEXT = (
    "sentence1,sentence2,score\nCafé crème brûlée,Thé glacé à la pêche,2.5\nÉté,Hiver,1\n"
    "Le garçon mange,Un garçon mange,4.5\n"
)
# Two short pairs with other scores: every accepted file can be evaluated (a correlation needs 3 pairs whose
# scores differ).
EXTRA_ROWS = [["A dog runs.", "A dog is running.", 4.8], ["Stocks fell.", "It rained.", 0.2]]

REFUSED_PAIRS: list[tuple[str, str, bytes, tuple[str, ...]]] = [
    ("empty", "p.csv", b"", ("empty",)),
    ("whitespace_only", "p.csv", b"  \n\n\t \n", ("empty",)),
    ("header_only", "p.csv", b"sentence1,sentence2,score\n", ("no data rows",)),
    ("semicolon_delimiter", "p.csv", b"sentence1;sentence2;score\nA cat.;A dog.;3\nB.;C.;2\n", ("one column",)),
    ("one_column", "p.csv", b"just one sentence\nanother one\n", ("one column",)),
    ("missing_columns", "p.csv", b"text,label\nA cat,1\n", ("missing columns", "sentence1")),
    ("jsonl_missing_keys", "p.jsonl", b'{"a": "x", "b": "y"}\n', ("missing columns",)),
    ("scores_out_of_range", "p.csv", b"sentence1,sentence2,score\nA,B,7\nC,D,-1\nE,F,5.01\n", ("between 0 and 5",)),
    (
        "scores_not_numbers",
        "p.csv",
        b"sentence1,sentence2,score\nA,B,abc\nC,D,nan\nE,F,inf\nG,H,=1+1\n",
        ("numeric score",),
    ),
    ("all_sentences_empty", "p.csv", b"sentence1,sentence2\n,x\ny,\n", ("empty sentence",)),
    ("binary_junk", "p.csv", junk(), ("binary",)),
    ("png_renamed_csv", "p.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + junk(512, 1), ("binary",)),
    ("control_chars", "p.csv", b"sentence1,sentence2\n" + bytes(range(1, 9)) * 50 + b",b\n", ("binary",)),
    ("utf16_without_bom", "p.csv", PAIRS_TEXT.encode("utf-16-le"), ("binary",)),
    ("pickle_as_csv", "p.csv", pickle.dumps({"a": 1}), ("binary",)),
    ("jsonl_not_json", "p.jsonl", b'{"sentence1": "a", \n', ("not valid json",)),
    ("jsonl_not_objects", "p.jsonl", b"[1, 2]\n", ("not a json object",)),
    ("parquet_junk", "p.parquet", b"PAR1" + junk(256), ("parquet",)),
    ("unsupported_extension", "p.xlsx", b"PK\x03\x04" + junk(64), ("unsupported file type",)),
    ("rows_200k", "p.csv", b"sentence1,sentence2,score\n" + b"a,b,1\n" * ROWS_200K, ("over the limit",)),
    ("quote_never_closed", "p.csv", b'sentence1,sentence2,score\na,"' + b"x\n" * 100_000 + b"c,d,3\n", ("quote",)),
    # issue 17: bounded decoding
    ("jsonl_nested_1000_deep", "p.jsonl", deep_json(), ("line 1", "deeper than")),
    (
        "jsonl_number_5000_digits",
        "p.jsonl",
        b'{"sentence1": "a", "sentence2": "b", "score": 1' + b"0" * 5000 + b"}\n",
        ("line 1", "not valid json"),
    ),
    (
        "jsonl_10k_keys",
        "p.jsonl",
        json.dumps({f"k{i}": i for i in range(10_000)}).encode() + b"\n",
        ("different keys",),
    ),
    ("csv_10k_columns", "p.csv", b"sentence1,sentence2,score\n" + b",".join([b"a"] * 10_000) + b"\n", ("columns",)),
    ("quote_left_open_short", "p.csv", b'sentence1,sentence2,score\na,b,3\n"c,d,4\n', ("quote",)),
    (
        "line_neither_utf8_nor_latin1",
        "p.csv",
        b"sentence1,sentence2,score\nok,fine,3\nbad \x81\x8d\x8f,x,2\n",
        ("line 3", "encoding"),
    ),
    ("parquet_600mb_decoded", "p.parquet", PARQUET_BOMB, ("parquet", "limit")),
]


def _check_utf16(p) -> None:
    assert p.sentence1 == ["Café crème brûlée", "Été", "Le garçon mange"] and any("UTF-16" in w for w in p.warnings)


def _check_latin1(p) -> None:
    assert p.sentence1 == ["Café crème brûlée", "Été", "Le garçon mange"] and any("Latin-1" in w for w in p.warnings)


def _check_long(p) -> None:
    assert len(p.sentence1[0]) < 10_000 and p.sentence1[0] == LONG[: len(p.sentence1[0])]
    assert any("truncated" in w for w in p.warnings)


def _check_huge(p) -> None:
    assert len(p.sentence2[0]) < 10_000 and p.sentence2[0] == HUGE[: len(p.sentence2[0])]
    assert any("truncated" in w for w in p.warnings)


def _check_formulas(p) -> None:
    assert p.sentence1 == list(FORMULAS) and p.sentence2 == list(FORMULAS)[::-1]
    assert p.scores.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def _check_html(p) -> None:
    assert p.sentence1 == list(HTML)


def _check_some_bad_scores(p) -> None:
    assert p.sentence1 == ["C", "G", "H"] and list(p.scores) == [3.0, 1.0, 5.0]
    assert any("not a number" in w for w in p.warnings) and any("outside" in w for w in p.warnings)


def _check_tabs(p) -> None:
    assert p.sentence1 == ["A cat, sitting", "A dog, running", "Rain, again"] and any("tabs" in w for w in p.warnings)


MIXED = (
    "sentence1,sentence2,score\nCafé,Thé,2\n".encode() + "Crème,Brûlée,3\n".encode("latin-1") + "Été,Hiver,1\n".encode()
)


def _check_mixed(p) -> None:  # UTF-8 with one Windows-1252 line: decoded line by line, the line named
    assert p.sentence1 == ["Café", "Crème", "Été"] and p.sentence2 == ["Thé", "Brûlée", "Hiver"]
    assert any("line 3" in w and "Latin-1" in w for w in p.warnings), p.warnings


ACCEPTED_PAIRS: list[tuple[str, str, bytes, Callable[[Any], None]]] = [
    ("utf16_with_bom", "p.csv", PAIRS_TEXT.encode("utf-16"), _check_utf16),
    ("latin1", "p.csv", PAIRS_TEXT.encode("latin-1"), _check_latin1),
    (
        "sentence_100k_chars",
        "p.csv",
        csv_bytes([[LONG, "short", 3], *EXTRA_ROWS], ["sentence1", "sentence2", "score"]),
        _check_long,
    ),
    (
        "sentence_300k_chars",
        "p.csv",
        csv_bytes([["short", HUGE, 3], *EXTRA_ROWS], ["sentence1", "sentence2", "score"]),
        _check_huge,
    ),
    (
        "formula_cells",
        "p.csv",
        csv_bytes(
            [[a, b, i] for i, (a, b) in enumerate(zip(FORMULAS, FORMULAS[::-1], strict=True))],
            ["sentence1", "sentence2", "score"],
        ),
        _check_formulas,
    ),
    (
        "html_and_script",
        "p.csv",
        csv_bytes([[h, "plain", 1] for h in HTML], ["sentence1", "sentence2", "score"]),
        _check_html,
    ),
    (
        "some_scores_bad",
        "p.csv",
        b"sentence1,sentence2,score\nA,B,abc\nC,D,3\nE,F,9\nG,H,1\nH,I,5\n",
        _check_some_bad_scores,
    ),
    (
        "tabs_in_csv",
        "p.csv",
        b"sentence1\tsentence2\tscore\nA cat, sitting\tA cat\t4\nA dog, running\tA dog\t2\nRain, again\tSun\t0.5\n",
        _check_tabs,
    ),
    ("utf8_with_one_latin1_line", "p.csv", MIXED, _check_mixed),
]

GOOD_CORPUS_TXT = "\n".join(
    f"{s} number {i}." for i, s in enumerate(["A cat sleeps", "Stocks fell", "Rain is coming", "I cook rice"] * 8)
).encode()

REFUSED_CORPUS: list[tuple[str, str, bytes, tuple[str, ...]]] = [
    ("empty", "c.txt", b"", ("empty",)),
    ("whitespace_only", "c.txt", b"\n \n\t\n", ("empty",)),
    ("header_only", "c.csv", b"text,topic\n", ("no data rows",)),
    ("no_text_column", "c.csv", b"score,label\n1,2\n", ("no text column",)),
    ("binary_junk", "c.txt", junk(), ("binary",)),
    ("binary_junk_csv", "c.csv", junk(seed=3), ("binary",)),
    ("utf16_without_bom", "c.txt", "héllo\nwörld\n".encode("utf-16-le"), ("binary",)),
    ("pickle_as_txt", "c.txt", pickle.dumps(["a", "b"]), ("binary",)),
    ("jsonl_not_json", "c.jsonl", b"{not json}\n", ("not valid json",)),
    ("parquet_junk", "c.parquet", b"PAR1" + junk(128), ("parquet",)),
    ("unsupported_extension", "c.docx", b"PK\x03\x04", ("unsupported file type",)),
    ("lines_200k", "c.txt", b"some text\n" * ROWS_200K, ("over the limit",)),
    ("quote_never_closed", "c.csv", b'text,topic\n"' + b"x\n" * 100_000 + b"c,d\n", ("quote",)),
    # issue 17: bounded decoding, and one set of rules for every text
    ("jsonl_nested_1000_deep", "c.jsonl", deep_json(key="topic"), ("line 1", "deeper than")),
    ("txt_nul_after_text", "c.txt", b"a line of text\n" * 100 + b"then a NUL \x00 byte\n", ("binary",)),
    ("txt_line_neither_utf8_nor_latin1", "c.txt", b"fine\nalso fine\n\x81\x8d\x8f\x90\n", ("line 3", "encoding")),
    ("parquet_600mb_decoded", "c.parquet", PARQUET_BOMB, ("parquet", "limit")),
]


def _c_utf16(c) -> None:
    assert c.texts == ["héllo", "wörld"] and any("UTF-16" in w for w in c.warnings)


def _c_latin1(c) -> None:
    assert c.texts == ["héllo", "wörld"] and any("Latin-1" in w for w in c.warnings)


def _c_long(c) -> None:
    assert len(c.texts) == 2 and len(c.texts[0]) < 10_000 and any("truncated" in w for w in c.warnings)


def _c_formulas(c) -> None:
    assert c.texts == list(FORMULAS)


def _c_html(c) -> None:
    assert c.texts == list(HTML)


def _c_mixed(c) -> None:
    assert c.texts == ["Café au lait", "Crème brûlée", "Été"]
    assert any("line 2" in w and "Latin-1" in w for w in c.warnings), c.warnings


MIXED_TXT = "Café au lait\n".encode() + "Crème brûlée\n".encode("latin-1") + "Été\n".encode()


ACCEPTED_CORPUS: list[tuple[str, str, bytes, Callable[[Any], None]]] = [
    ("utf16_with_bom", "c.txt", "héllo\nwörld\n".encode("utf-16"), _c_utf16),
    ("latin1", "c.txt", "héllo\nwörld\n".encode("latin-1"), _c_latin1),
    ("text_100k_chars", "c.txt", (LONG + "\nshort\n").encode(), _c_long),
    ("text_100k_chars_csv", "c.csv", csv_bytes([[LONG], ["short"]], ["text"]), _c_long),
    ("text_300k_chars_csv", "c.csv", csv_bytes([[HUGE], ["short"]], ["text"]), _c_long),
    ("formula_cells", "c.csv", csv_bytes([[f, "t"] for f in FORMULAS], ["text", "topic"]), _c_formulas),
    ("html_and_script", "c.txt", "\n".join(HTML).encode(), _c_html),
    ("html_jsonl", "c.jsonl", "\n".join(json.dumps({"text": h}) for h in HTML).encode(), _c_html),
    ("utf8_with_one_latin1_line", "c.txt", MIXED_TXT, _c_mixed),
]


def ids(cases: list[tuple]) -> list[str]:
    return [c[0] for c in cases]
