"""Any table format to a frame of strings (CSV/TSV with or without a header, JSONL, Parquet), bounded."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from isoscope.data.delimited import read_delimited
from isoscope.data.jsonl import read_jsonl
from isoscope.data.limits import DecodeLimits, current_limits
from isoscope.data.parquet import read_parquet
from isoscope.data.source import Source, as_source
from isoscope.data.text import ClippedText, TextStats, decoded_pieces
from isoscope.errors import InputError

TEXT_COLUMN_NAMES = ("text", "sentence", "sentences", "document", "content")
CORPUS_COLUMN_NAMES = (*TEXT_COLUMN_NAMES, "sentence1")  # a corpus's text column, in this order of preference


def find_text_column(columns) -> object | None:
    """The column of a corpus's texts among ``columns`` by name (``CORPUS_COLUMN_NAMES``, first match, case and
    spaces ignored), as it is spelt there; None when no column has one of those names."""
    lower = {str(c).strip().lower(): c for c in columns}
    return next((lower[name] for name in CORPUS_COLUMN_NAMES if name in lower), None)


def read_table(
    raw: bytes | str | Path | Source,
    name: str,
    fmt: str,
    *,
    header_names: tuple[str, ...] = (),
    limits: DecodeLimits | None = None,
) -> tuple[pd.DataFrame, bool, list[str]]:
    """Parse a table into strings. Returns (frame, has_header, warnings); delimited files may lack a header.

    A first row naming a known column (sentence1, score, text, ... or one of ``header_names``) is a header.
    At most ``max_rows + 2`` rows are read, so a caller's row check sees that the file is over the limit.
    """
    limits = limits or current_limits()
    src = as_source(raw, name, limits)
    if fmt == "parquet":
        df, warnings = read_parquet(src, name, limits)
        return df, True, warnings
    stats = TextStats(name)
    with src.open() as stream:
        pieces = decoded_pieces(stream, stats)
        if fmt == "jsonl":
            df = read_jsonl(pieces, name, limits, stats=stats)
            return df, True, stats.warnings()
        warnings: list[str] = []
        rows = read_delimited(pieces, "\t" if fmt == "tsv" else ",", name, limits=limits, warnings=warnings)
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
    return df, has_header, stats.warnings() + warnings


def check_rows(n: int, name: str, max_rows: int) -> None:
    if n == 0:
        raise InputError(f"{name}: no data rows (only a header?)")
    if n > max_rows:
        raise InputError(
            f"{name}: more than {max_rows:,} rows is over the limit; sample the file (or raise ISOSCOPE_MAX_ROWS)"
        )


def _clean(v: object) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    if isinstance(v, ClippedText):
        return ClippedText(v.strip())
    return str(v).strip()


def clean_texts(values: pd.Series) -> pd.Series:
    """Strings, stripped; missing values become empty strings (texts cut while reading stay marked)."""
    return pd.Series([_clean(v) for v in values], index=values.index, dtype=object)


def truncate_texts(
    columns: Sequence[pd.Series], name: str, warnings: list[str], *, max_chars: int | None = None
) -> list[pd.Series]:
    """Texts cut to ``max_chars`` characters, with one warning for all ``columns`` when any was (or had been) cut."""
    max_chars = max_chars or current_limits().max_chars
    n_long = sum(
        sum(isinstance(v, str) and (len(v) > max_chars or isinstance(v, ClippedText)) for v in c) for c in columns
    )
    if n_long:
        warnings.append(f"{name}: {n_long} text(s) longer than {max_chars} characters were truncated")
    return [
        pd.Series([v[:max_chars] if isinstance(v, str) else v for v in c], index=c.index, dtype=object) for c in columns
    ]
