"""Loading sentence pairs, corpora and vectors from user files, bounded, with errors that say what to fix.

Supported: CSV, TSV, JSONL, Parquet and (corpora only) plain text, one text per line; .npy for vectors.
Every problem is an ``InputError`` with one line; recoverable ones (dropped rows, truncated texts, a guessed
encoding) are returned as warnings next to the data. Nothing is ever evaluated or unpickled: cells are
plain text. What a file may decode to is bounded by ``DecodeLimits`` (isoscope.data.limits), read from the
``ISOSCOPE_MAX_*`` environment variables.

Modules: limits (the bounds), source (paths and uploads), text (encodings, line rules), delimited (CSV/TSV),
jsonl, parquet, tables (any table to a frame), pairs, corpus, vectors (.npy), export (safe CSV downloads).
"""

from __future__ import annotations

from isoscope.data.corpus import Corpus, load_corpus, stream_texts, streaming_limits
from isoscope.data.export import FORMULA_PREFIXES, safe_csv
from isoscope.data.jsonl import json_depth_exceeds
from isoscope.data.limits import ENV_VARS, DecodeLimits, current_limits, limits_help
from isoscope.data.pairs import SCORE_RANGE, Pairs, load_pairs
from isoscope.data.source import CORPUS_FORMATS, TABLE_FORMATS, Source, as_source, file_format, read_source
from isoscope.data.tables import TEXT_COLUMN_NAMES, check_rows, clean_texts, read_table, truncate_texts
from isoscope.data.text import ClippedText, TextStats, decode_text
from isoscope.data.vectors import NPY_MAGIC, check_npy_header, load_vectors
from isoscope.errors import InputError


def _import_time_limits() -> DecodeLimits:
    try:
        return current_limits()
    except InputError:  # a bad ISOSCOPE_MAX_* value is reported when a file is loaded, not at import
        return DecodeLimits()


_DEFAULTS = _import_time_limits()
MAX_ROWS = _DEFAULTS.max_rows  # the limits at import time, for callers that name them (prefer current_limits())
MAX_CHARS = _DEFAULTS.max_chars
MAX_BYTES = _DEFAULTS.max_bytes

__all__ = [
    "CORPUS_FORMATS",
    "ENV_VARS",
    "FORMULA_PREFIXES",
    "MAX_BYTES",
    "MAX_CHARS",
    "MAX_ROWS",
    "NPY_MAGIC",
    "SCORE_RANGE",
    "TABLE_FORMATS",
    "TEXT_COLUMN_NAMES",
    "ClippedText",
    "Corpus",
    "DecodeLimits",
    "Pairs",
    "Source",
    "TextStats",
    "as_source",
    "check_npy_header",
    "check_rows",
    "clean_texts",
    "current_limits",
    "decode_text",
    "file_format",
    "json_depth_exceeds",
    "limits_help",
    "load_corpus",
    "load_pairs",
    "load_vectors",
    "read_source",
    "read_table",
    "safe_csv",
    "stream_texts",
    "streaming_limits",
    "truncate_texts",
]
