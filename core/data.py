"""Loading sentence pairs and corpora from user files, with validation that explains what to fix.

Supported: CSV, TSV, JSONL, Parquet and (corpora only) plain text, one text per line. Every problem is an
``InputError`` with one line; recoverable ones (dropped rows, truncated texts, a guessed encoding) are
returned as warnings next to the data. Nothing is ever evaluated or unpickled: cells are plain text.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from core.errors import InputError, first_line

log = logging.getLogger(__name__)

MAX_ROWS = int(os.environ.get("ISOSCOPE_MAX_ROWS", "50000"))
MAX_CHARS = 2000  # longer texts are truncated (the encoder sees at most max_length tokens anyway)
MAX_BYTES = 200 * 1024 * 1024
SCORE_RANGE = (0.0, 5.0)
TABLE_FORMATS = ("csv", "tsv", "jsonl", "parquet")
CORPUS_FORMATS = (*TABLE_FORMATS, "txt")
TEXT_COLUMN_NAMES = ("text", "sentence", "sentences", "document", "content")


@dataclass
class Pairs:
    """Sentence pairs with optional gold similarity scores."""

    sentence1: list[str]
    sentence2: list[str]
    scores: np.ndarray | None = None  # (n,) float64, or None when the file has no scores
    warnings: list[str] = field(default_factory=list)
    name: str = ""

    def __len__(self) -> int:
        return len(self.sentence1)

    @property
    def texts(self) -> list[str]:
        """All sentences, first column then second (what an unsupervised calibrator fits on)."""
        return self.sentence1 + self.sentence2

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"sentence1": self.sentence1, "sentence2": self.sentence2})
        if self.scores is not None:
            df["score"] = self.scores
        return df


@dataclass
class Corpus:
    """Texts with optional per-text metadata (topic, source, ...)."""

    texts: list[str]
    meta: pd.DataFrame  # one row per text, possibly no columns
    warnings: list[str] = field(default_factory=list)
    name: str = ""

    def __len__(self) -> int:
        return len(self.texts)


# ---------------------------------------------------------------- bytes and text


def read_source(source: str | Path | bytes, name: str | None = None) -> tuple[bytes, str]:
    """Return (raw bytes, file name) from a path or from uploaded bytes."""
    if isinstance(source, bytes | bytearray):
        return bytes(source), name or "upload"
    path = Path(source)
    if not path.exists():
        raise InputError(f"file not found: {path}")
    if path.is_dir():
        raise InputError(f"{path} is a folder; give a file")
    if path.stat().st_size > MAX_BYTES:
        raise InputError(f"{path.name} is larger than {MAX_BYTES // 2**20} MiB; split it or sample it")
    return path.read_bytes(), name or path.name


def file_format(name: str, allowed: tuple[str, ...]) -> str:
    """Format from the file extension; InputError listing the allowed ones."""
    ext = Path(name).suffix.lower().lstrip(".")
    ext = {"tab": "tsv", "json": "jsonl", "ndjson": "jsonl", "pq": "parquet", "text": "txt"}.get(ext, ext)
    if ext not in allowed:
        raise InputError(f"'{name}': unsupported file type; use one of {', '.join('.' + a for a in allowed)}")
    return ext


def decode_text(raw: bytes, name: str) -> tuple[str, list[str]]:
    """Decode bytes: UTF-8 (with or without BOM), UTF-16 with a BOM, else Latin-1 when it is clearly text.

    Binary data (NUL bytes or control characters) is refused.
    """
    warnings: list[str] = []
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16"), [f"{name}: decoded as UTF-16"]
        except UnicodeDecodeError:
            raise InputError(f"{name}: looks like UTF-16 but does not decode; save it as UTF-8") from None
    if b"\x00" in raw:
        raise InputError(f"{name}: this is a binary file, not text; upload a UTF-8 CSV, TSV, JSONL or text file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:  # Windows-1252 is Latin-1 plus printable characters (curly quotes, dashes) in 0x80-0x9F
            text = raw.decode("cp1252")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
        if _control_chars(text) > 0:
            raise InputError(f"{name}: the bytes are not text in a known encoding; save the file as UTF-8") from None
        warnings.append(f"{name}: not valid UTF-8, decoded as Latin-1 (Windows-1252); check accented characters")
    if _control_chars(text) > max(2, len(text) // 1000):
        raise InputError(f"{name}: contains binary data; upload a UTF-8 text file")
    return text, warnings


def _control_chars(text: str) -> int:
    return sum(1 for c in text if (ord(c) < 32 and c not in "\t\n\r\f") or 0x7F <= ord(c) < 0xA0)


# ---------------------------------------------------------------- tables


def _read_delimited(text: str, sep: str, name: str) -> list[list[str]]:
    """Rows of a delimited text (any line ending), blank rows skipped; malformed CSV is an InputError."""
    # csv refuses cells over 131,072 characters by default; long texts are truncated later with a warning
    csv.field_size_limit(max(csv.field_size_limit(), MAX_BYTES))
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=sep))
    except csv.Error as exc:
        raise InputError(f"{name}: not a readable CSV/TSV file ({exc}); check for an unmatched quote") from None
    if any(len(c) > _LONG_FIELD for r in rows[-1:] for c in r) and _quote_left_open(text, sep):
        raise InputError(f"{name}: a quoted field is never closed; check for an unmatched quote")
    return [r for r in rows if any(c.strip() for c in r)]


_LONG_FIELD = 131_072  # csv's default field limit: a longer last field is a long text or a quote left open


def _quote_left_open(text: str, sep: str) -> bool:
    """True when the file ends inside a quoted field (the lenient reader silently swallows the rest)."""
    try:
        for _ in csv.reader(io.StringIO(text, newline=""), delimiter=sep, strict=True):
            pass
    except csv.Error as exc:
        return "unexpected end of data" in str(exc)
    return False


def _common_width(rows: list[list[str]], sample: int = 50) -> int:
    """The number of columns shared by the first ``sample`` rows, or 0 when they differ."""
    widths = {len(r) for r in rows[:sample]}
    return widths.pop() if len(widths) == 1 else 0


def _split_rows(text: str, sep: str, name: str, warnings: list[str]) -> list[list[str]]:
    """Rows split on ``sep``, or on the other delimiter when the file clearly uses it.

    A .csv whose rows all hold the same number (>= 2) of tab-separated fields, while its comma-separated
    fields vary in number or are fewer, is a TSV (sentences often contain commas, rarely tabs); a .tsv
    without any tab but with commas is a CSV.
    """
    rows = _read_delimited(text, sep, name)
    if not rows:
        raise InputError(f"{name}: the file is empty")
    other = "," if sep == "\t" else "\t"
    try:
        needed = other in text and (sep == "," or max(len(r) for r in rows) == 1)
        alt = _read_delimited(text, other, name) if needed else []
    except InputError:
        alt = []
    if sep == ",":
        width, alt_width = _common_width(rows), _common_width(alt)
        switch = alt_width >= 2 and (width == 0 or alt_width > width)
    else:
        switch = any(len(r) > 1 for r in alt[:50])
    if switch:
        warnings.append(f"{name}: columns are separated by {'tabs' if other == chr(9) else 'commas'}; read as such")
        return alt
    return rows


def read_table(
    raw: bytes, name: str, fmt: str, header_names: tuple[str, ...] = ()
) -> tuple[pd.DataFrame, bool, list[str]]:
    """Parse a table into strings. Returns (frame, has_header, warnings); delimited files may lack a header.

    A first row naming a known column (sentence1, score, text, ... or one of ``header_names``) is a header.
    """
    warnings: list[str] = []
    if fmt == "parquet":
        try:
            import pyarrow.parquet as pq

            df = pq.read_table(io.BytesIO(raw)).to_pandas()
        except Exception as exc:
            raise InputError(f"{name}: not a readable Parquet file ({type(exc).__name__})") from None
        return df, True, warnings
    text, warnings = decode_text(raw, name)
    if fmt == "jsonl":
        return _read_jsonl(text, name), True, warnings
    rows = _split_rows(text, "\t" if fmt == "tsv" else ",", name, warnings)
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    header = [c.strip().lower() for c in rows[0]]
    known = {"sentence1", "sentence2", "score", *TEXT_COLUMN_NAMES, *(h.strip().lower() for h in header_names)}
    has_header = bool(known & set(header))
    if has_header:
        cols: list[str] = []
        for i, c in enumerate(header):  # unique names: a repeated or empty header cell gets its position
            cols.append(c if c and c not in cols else f"column{i}")
        df = pd.DataFrame(rows[1:], columns=cols, dtype=object)
    else:
        df = pd.DataFrame(rows, columns=[f"column{i}" for i in range(width)], dtype=object)
    return df, has_header, warnings


def _read_jsonl(text: str, name: str) -> pd.DataFrame:
    records = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            raise InputError(f"{name}: line {i} is not valid JSON; each line must be one JSON object") from None
        if not isinstance(obj, dict):
            raise InputError(f'{name}: line {i} is not a JSON object like {{"sentence1": ..., "sentence2": ...}}')
        records.append(obj)
    if not records:
        raise InputError(f"{name}: the file is empty")
    return pd.DataFrame.from_records(records)


def _check_rows(n: int, name: str, max_rows: int) -> None:
    if n == 0:
        raise InputError(f"{name}: no data rows (only a header?)")
    if n > max_rows:
        raise InputError(f"{name}: {n:,} rows is over the limit of {max_rows:,}; sample the file or raise the limit")


def clean_texts(values: pd.Series) -> pd.Series:
    """Strings, stripped; missing values become empty strings."""
    return values.map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v).strip())


def truncate_texts(
    columns: Sequence[pd.Series], name: str, warnings: list[str], max_chars: int = MAX_CHARS
) -> list[pd.Series]:
    """Texts cut to ``max_chars`` characters, with one warning for all ``columns`` when any was cut."""
    n_long = sum(int((c.str.len() > max_chars).sum()) for c in columns)
    if n_long:
        warnings.append(f"{name}: {n_long} text(s) longer than {max_chars} characters were truncated")
    return [c.str.slice(0, max_chars) if n_long else c for c in columns]


# ---------------------------------------------------------------- pairs


def load_pairs(
    source: str | Path | bytes,
    name: str | None = None,
    max_rows: int = MAX_ROWS,
    max_chars: int = MAX_CHARS,
) -> Pairs:
    """Load sentence pairs (sentence1, sentence2, optional score), with or without a header.

    Without a header, columns are taken by position: sentence1, sentence2, score. The STS-B files load
    as they are.
    """
    raw, name = read_source(source, name)
    if not raw.strip():
        raise InputError(f"{name}: the file is empty")
    fmt = file_format(name, TABLE_FORMATS)
    df, has_header, warnings = read_table(raw, name, fmt)
    df = _pair_columns(df, name, has_header)
    _check_rows(len(df), name, max_rows)
    s1, s2 = clean_texts(df["sentence1"]), clean_texts(df["sentence2"])
    keep = (s1 != "") & (s2 != "")
    if not keep.any():
        raise InputError(f"{name}: every row has an empty sentence")
    if (~keep).sum():
        warnings.append(f"{name}: dropped {int((~keep).sum())} row(s) with an empty sentence")
    scores = None
    if "score" in df.columns:
        scores_all = pd.to_numeric(df["score"].map(_as_number), errors="coerce")
        bad = scores_all.isna() | ~np.isfinite(scores_all.fillna(0))
        out = ~bad & ((scores_all < SCORE_RANGE[0]) | (scores_all > SCORE_RANGE[1]))
        if bad[keep].any():
            warnings.append(f"{name}: dropped {int(bad[keep].sum())} row(s) whose score is missing or not a number")
        if out[keep].any():
            lo, hi = SCORE_RANGE
            warnings.append(f"{name}: dropped {int(out[keep].sum())} row(s) with a score outside {lo:g}-{hi:g}")
        keep &= ~bad & ~out
        if not keep.any():
            raise InputError(f"{name}: no row has a numeric score between {SCORE_RANGE[0]:g} and {SCORE_RANGE[1]:g}")
        scores = scores_all[keep].to_numpy(np.float64)
    s1, s2 = s1[keep], s2[keep]
    s1, s2 = truncate_texts([s1, s2], name, warnings, max_chars)
    return Pairs(s1.tolist(), s2.tolist(), scores, warnings, name)


def _as_number(v: object) -> object:
    """Scores as numbers; text is parsed but never evaluated."""
    if isinstance(v, str):
        v = v.strip()
        return v if v else None
    return v


def _pair_columns(df: pd.DataFrame, name: str, has_header: bool) -> pd.DataFrame:
    cols = {str(c).strip().lower(): c for c in df.columns}
    if "sentence1" in cols and "sentence2" in cols:
        out = pd.DataFrame({"sentence1": df[cols["sentence1"]], "sentence2": df[cols["sentence2"]]})
        for alias in ("score", "label", "similarity", "gold"):
            if alias in cols:
                out["score"] = df[cols[alias]]
                break
        return out
    if has_header:
        raise InputError(
            f"{name}: missing columns; need sentence1 and sentence2 (and optionally score), found "
            + ", ".join(map(str, df.columns))[:200]
        )
    if df.shape[1] < 2:
        raise InputError(
            f"{name}: found one column; need sentence1, sentence2[, score] separated by commas (.csv) or tabs (.tsv)"
        )
    out = pd.DataFrame({"sentence1": df.iloc[:, 0], "sentence2": df.iloc[:, 1]})
    if df.shape[1] >= 3:
        out["score"] = df.iloc[:, 2]
    return out


# ---------------------------------------------------------------- corpora


def load_corpus(
    source: str | Path | bytes,
    name: str | None = None,
    text_column: str | None = None,
    max_rows: int = MAX_ROWS,
    max_chars: int = MAX_CHARS,
) -> Corpus:
    """Load texts: one per line (.txt), or a column of a table with the other columns as metadata."""
    raw, name = read_source(source, name)
    if not raw.strip():
        raise InputError(f"{name}: the file is empty")
    fmt = file_format(name, CORPUS_FORMATS)
    if fmt == "txt":
        text, warnings = decode_text(raw, name)
        lines = [ln.strip() for ln in text.splitlines()]
        texts = pd.Series([ln for ln in lines if ln], dtype=object)
        meta = pd.DataFrame(index=range(len(texts)))
    else:
        df, has_header, warnings = read_table(raw, name, fmt, (text_column,) if text_column else ())
        col = _text_column(df, name, text_column, has_header)
        texts = clean_texts(df[col])
        meta = df.drop(columns=[col])
        empty = texts == ""
        if empty.any():
            warnings.append(f"{name}: dropped {int(empty.sum())} row(s) with empty text")
            texts, meta = texts[~empty], meta[~empty]
        meta = meta.reset_index(drop=True)
        texts = texts.reset_index(drop=True)
    _check_rows(len(texts), name, max_rows)
    (texts,) = truncate_texts([texts], name, warnings, max_chars)
    return Corpus(texts.tolist(), meta, warnings, name)


def _text_column(df: pd.DataFrame, name: str, text_column: str | None, has_header: bool) -> str:
    lower = {str(c).strip().lower(): c for c in df.columns}
    if text_column:
        if text_column in df.columns:
            return text_column
        if text_column.strip().lower() in lower:  # delimited headers are read lower-cased
            return lower[text_column.strip().lower()]
        raise InputError(f"{name}: no column '{text_column}'; columns are {', '.join(map(str, df.columns))}")
    for cand in (*TEXT_COLUMN_NAMES, "sentence1"):
        if cand in lower:
            return lower[cand]
    if not has_header:
        return df.columns[0]
    raise InputError(
        f"{name}: no text column; name one 'text' (other columns become metadata), found "
        + ", ".join(map(str, df.columns))[:200]
    )


# ---------------------------------------------------------------- precomputed vectors


NPY_MAGIC = b"\x93NUMPY"


def check_npy_header(data: bytes, name: str, hint: str) -> None:
    """Refuse a .npy whose header claims more rows than MAX_ROWS or more bytes than the file holds.

    Read before ``np.load``, which would otherwise try to allocate whatever the header claims (a 130-byte
    file can claim exabytes). Malformed headers raise ValueError, which the caller reports.
    """
    stream = io.BytesIO(data)
    version = np.lib.format.read_magic(stream)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = read_header(stream, max_header_size=10_000)
    if dtype.hasobject:
        return  # np.load refuses it with allow_pickle=False
    if shape and shape[0] > MAX_ROWS:
        raise InputError(f"{name}: {shape[0]:,} rows is over the limit of {MAX_ROWS:,}; sample the vectors first")
    claimed = math.prod(shape) * dtype.itemsize
    if claimed > len(data) - stream.tell():
        raise InputError(f"{name}: unreadable .npy (its header claims {claimed:,} bytes, the file is shorter); {hint}")


def load_vectors(data: bytes, name: str) -> np.ndarray:
    """Precomputed vectors from an uploaded .npy file: (n, d) float32, validated; never unpickled.

    Raises InputError (one line, says what to fix) for anything but a finite, real, 2-D array.
    """
    hint = "save a 2-D float array with numpy.save(path, vectors, allow_pickle=False)"
    if not data.startswith(NPY_MAGIC):
        raise InputError(f"{name}: not a NumPy .npy file (pickles, .npz and text are refused); {hint}")
    try:
        check_npy_header(data, name, hint)
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, EOFError, OSError) as exc:
        raise InputError(f"{name}: unreadable .npy ({first_line(exc, 80)}); {hint}") from None
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "fiu":
        raise InputError(f"{name}: holds {getattr(arr, 'dtype', type(arr).__name__)} values, not numbers; {hint}")
    if arr.ndim != 2:
        raise InputError(f"{name}: vectors must be a 2-D array (rows, dimensions), got shape {arr.shape}")
    n, d = arr.shape
    if n < 3 or d < 2:
        raise InputError(f"{name}: need at least 3 rows and 2 dimensions, got {n} x {d}")
    if n > MAX_ROWS:
        raise InputError(f"{name}: {n:,} rows is over the limit of {MAX_ROWS:,}; sample the vectors first")
    out = np.ascontiguousarray(arr, dtype=np.float32)  # (n, d)
    bad = ~np.isfinite(out).all(axis=1)  # (n,)
    if bad.any():
        raise InputError(f"{name}: {int(bad.sum())} row(s) contain NaN or infinite values (in float32); fix them first")
    return out


# ---------------------------------------------------------------- export


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def safe_csv(df: pd.DataFrame) -> bytes:
    """CSV bytes in which text cells that a spreadsheet would run as formulas are prefixed with a quote."""

    def guard(v: object) -> object:
        return "'" + v if isinstance(v, str) and v.startswith(FORMULA_PREFIXES) else v

    safe = df.copy()
    safe.columns = [guard(c) for c in safe.columns]  # user-named metadata columns reach the header row
    for c in safe.columns:
        if safe[c].dtype == object or pd.api.types.is_string_dtype(safe[c]):
            safe[c] = safe[c].map(guard)
    # CRLF rows (RFC 4180): the csv writer then quotes any cell holding a \r or \n. With "\n" rows a bare \r
    # stays unquoted and a spreadsheet starts a new row there, so "a\r=cmd|..." would begin a cell with "=".
    return safe.to_csv(index=False, lineterminator="\r\n").encode("utf-8")
