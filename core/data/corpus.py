"""Corpora (texts with optional metadata) from a user's file, and texts streamed from a .txt file."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from isoscope.data.limits import DecodeLimits, current_limits, resolve
from isoscope.data.source import CORPUS_FORMATS, Source, as_source
from isoscope.data.tables import check_rows, clean_texts, find_text_column, read_table, truncate_texts
from isoscope.data.text import TextStats, decoded_pieces, iter_text_lines
from isoscope.errors import InputError


@dataclass
class Corpus:
    """Texts with optional per-text metadata (topic, source, ...)."""

    texts: list[str]
    meta: pd.DataFrame  # one row per text, possibly no columns
    warnings: list[str] = field(default_factory=list)
    name: str = ""

    def __len__(self) -> int:
        return len(self.texts)


def stream_texts(
    source: str | Path | bytes | Source,
    name: str | None = None,
    limits: DecodeLimits | None = None,
    *,
    stats: TextStats | None = None,
) -> Iterator[str]:
    """Texts of a one-text-per-line file, one at a time: stripped, empty lines skipped, long ones cut.

    The same rules as ``load_corpus`` on a .txt (encodings, binary data, truncation); ``stats`` collects
    what the warnings need (``stats.warnings() + stats.truncation_warning()``). Reading stops with an
    InputError past ``limits.max_rows`` texts; pass ``streaming_limits()`` for no row or size limit.
    """
    limits = limits or current_limits()
    src = as_source(source, name, limits)
    stats = stats if stats is not None else TextStats(src.name)
    with src.open() as stream:
        for n, text in enumerate(iter_text_lines(decoded_pieces(stream, stats), stats, limits.max_chars), 1):
            if n > limits.max_rows:
                check_rows(n, src.name, limits.max_rows)
            yield text


def streaming_limits() -> DecodeLimits:
    """The current limits without a row or size limit (for embedding a big .txt chunk by chunk)."""
    return current_limits().replace(max_rows=sys.maxsize, max_bytes=sys.maxsize)


def streamable_corpus(source: str | Path, text_column: str | None = None) -> tuple[Path | list[str], list[str]]:
    """A corpus for chunked or sharded embedding, and its load warnings: a .txt file (and no text column) stays
    a path, streamed later without a row or size limit; any other file is loaded with ``load_corpus``."""
    path = Path(source)
    if path.suffix.lower() in (".txt", ".text") and text_column is None:
        as_source(path, None, streaming_limits())  # a missing file, a FIFO, a device: one line, at once
        return path, []
    corpus = load_corpus(source, text_column=text_column)
    return corpus.texts, corpus.warnings


def load_corpus(
    source: str | Path | bytes,
    name: str | None = None,
    *,
    text_column: str | None = None,
    max_rows: int | None = None,
    max_chars: int | None = None,
    limits: DecodeLimits | None = None,
) -> Corpus:
    """Load texts: one per line (.txt), or a column of a table with the other columns as metadata."""
    limits = resolve(limits, max_rows, max_chars)
    src = as_source(source, name, limits)
    name = src.name
    if src.is_blank():
        raise InputError(f"{name}: the file is empty")
    fmt = src.format(CORPUS_FORMATS)
    if fmt == "txt":
        stats = TextStats(name)
        lines = list(stream_texts(src, name, limits, stats=stats))
        if not lines:
            raise InputError(f"{name}: the file is empty")
        warnings = stats.warnings() + stats.truncation_warning()
        return Corpus(lines, pd.DataFrame(index=range(len(lines))), warnings, name)
    df, has_header, warnings = read_table(
        src, name, fmt, header_names=(text_column,) if text_column else (), limits=limits
    )
    col = _text_column(df, name, text_column, has_header)
    texts = clean_texts(df[col])
    meta = df.drop(columns=[col])
    empty = texts == ""
    if empty.any():
        warnings.append(f"{name}: dropped {int(empty.sum())} row(s) with empty text")
        texts, meta = texts[~empty], meta[~empty]
    meta = meta.reset_index(drop=True)
    texts = texts.reset_index(drop=True)
    check_rows(len(texts), name, limits.max_rows)
    (texts,) = truncate_texts([texts], name, warnings, max_chars=limits.max_chars)
    return Corpus(texts.tolist(), meta, warnings, name)


def _text_column(df: pd.DataFrame, name: str, text_column: str | None, has_header: bool) -> str:
    lower = {str(c).strip().lower(): c for c in df.columns}
    if text_column:
        if text_column in df.columns:
            return text_column
        if text_column.strip().lower() in lower:  # delimited headers are read lower-cased
            return lower[text_column.strip().lower()]
        raise InputError(f"{name}: no column '{text_column}'; columns are {', '.join(map(str, df.columns))}")
    if (found := find_text_column(df.columns)) is not None:
        return found
    if not has_header:
        return df.columns[0]
    raise InputError(
        f"{name}: no text column; name one 'text' (other columns become metadata), found "
        + ", ".join(map(str, df.columns))[:200]
    )
