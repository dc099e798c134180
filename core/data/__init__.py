"""Loading sentence pairs, corpora and vectors from user files, bounded, with errors that say what to fix.

Supported: CSV, TSV, JSONL, Parquet and (corpora only) plain text, one text per line; for vectors .npy,
Parquet, Arrow/Feather, .safetensors and Hugging Face datasets folders (``load_vector_file``).
Every problem is an ``InputError`` with one line; recoverable ones (dropped rows, truncated texts, a guessed
encoding) are returned as warnings next to the data. Nothing is ever evaluated or unpickled: cells are
plain text. What a file may decode to is bounded by ``DecodeLimits`` (isoscope.data.limits), read from the
``ISOSCOPE_MAX_*`` environment variables.

Modules: limits (the bounds), jsonfile (every JSON file: bounded, its schema checked), source (paths and uploads),
text (encodings, line rules), delimited (CSV/TSV),
jsonl, parquet, tables (any table to a frame), pairs, corpus, inputs (a corpus or a pairs file, auto-detected),
vectors (a package: .npy, Parquet, Arrow/Feather, .safetensors, Hugging Face datasets folders, arrays; the
VectorTable and its VectorOrigin), export (safe CSV downloads).

Names are imported from their module on first use (PEP 562), so a command's ``--help`` that names
``isoscope.data.inputs.INPUT_KINDS`` does not import pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from isoscope._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("Corpus", "load_corpus", "stream_texts", "streamable_corpus", "streaming_limits"), "corpus"),
    **dict.fromkeys(("FORMULA_PREFIXES", "safe_csv"), "export"),
    **dict.fromkeys(
        (
            "INPUT_KINDS",
            "DataKind",
            "InputKind",
            "PairVectors",
            "TextInput",
            "VectorInput",
            "data_kind",
            "load_input",
            "load_pair_vectors",
            "load_texts",
            "load_vector_input",
        ),
        "inputs",
    ),
    "json_depth_exceeds": "jsonfile",
    **dict.fromkeys(("ENV_VARS", "DecodeLimits", "current_limits", "limits_help"), "limits"),
    **dict.fromkeys(("SCORE_RANGE", "Pairs", "load_pairs"), "pairs"),
    **dict.fromkeys(("CORPUS_FORMATS", "TABLE_FORMATS", "Source", "as_source", "file_format", "read_source"), "source"),
    **dict.fromkeys(("TEXT_COLUMN_NAMES", "check_rows", "clean_texts", "read_table", "truncate_texts"), "tables"),
    **dict.fromkeys(("ClippedText", "TextStats", "decode_text"), "text"),
    **dict.fromkeys(
        (
            "NPY_MAGIC",
            "VECTOR_FORMATS",
            "VectorOrigin",
            "VectorTable",
            "check_npy_header",
            "load_vector_file",
            "load_vectors",
            "parse_vectors_ref",
            "vectors_from_array",
        ),
        "vectors",
    ),
}
# the limits when first asked for, for callers that name them (prefer current_limits())
_LIMITS = {"MAX_ROWS": "max_rows", "MAX_CHARS": "max_chars", "MAX_BYTES": "max_bytes"}

__all__ = [
    "CORPUS_FORMATS",
    "ENV_VARS",
    "FORMULA_PREFIXES",
    "INPUT_KINDS",
    "MAX_BYTES",
    "MAX_CHARS",
    "MAX_ROWS",
    "NPY_MAGIC",
    "SCORE_RANGE",
    "TABLE_FORMATS",
    "TEXT_COLUMN_NAMES",
    "VECTOR_FORMATS",
    "ClippedText",
    "Corpus",
    "DataKind",
    "DecodeLimits",
    "InputKind",
    "PairVectors",
    "Pairs",
    "Source",
    "TextInput",
    "TextStats",
    "VectorInput",
    "VectorOrigin",
    "VectorTable",
    "as_source",
    "check_npy_header",
    "check_rows",
    "clean_texts",
    "current_limits",
    "data_kind",
    "decode_text",
    "file_format",
    "json_depth_exceeds",
    "limits_help",
    "load_corpus",
    "load_input",
    "load_pair_vectors",
    "load_pairs",
    "load_texts",
    "load_vector_file",
    "load_vector_input",
    "load_vectors",
    "parse_vectors_ref",
    "read_source",
    "read_table",
    "safe_csv",
    "stream_texts",
    "streamable_corpus",
    "streaming_limits",
    "truncate_texts",
    "vectors_from_array",
]  # the names of _EXPORTS and _LIMITS (tests/core/data check it)


def _first_limits() -> Any:
    from isoscope.data.limits import DecodeLimits, current_limits
    from isoscope.errors import InputError

    try:
        return current_limits()
    except InputError:  # a bad ISOSCOPE_MAX_* value is reported when a file is loaded, not here
        return DecodeLimits()


__getattr__, __dir__ = lazy_exports(
    __name__,
    _EXPORTS,
    computed={name: lambda field=field: getattr(_first_limits(), field) for name, field in _LIMITS.items()},
)


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from isoscope.data.corpus import Corpus, load_corpus, stream_texts, streamable_corpus, streaming_limits
    from isoscope.data.export import FORMULA_PREFIXES, safe_csv
    from isoscope.data.inputs import (
        INPUT_KINDS,
        DataKind,
        InputKind,
        PairVectors,
        TextInput,
        VectorInput,
        data_kind,
        load_input,
        load_pair_vectors,
        load_texts,
        load_vector_input,
    )
    from isoscope.data.jsonfile import json_depth_exceeds
    from isoscope.data.limits import ENV_VARS, DecodeLimits, current_limits, limits_help
    from isoscope.data.pairs import SCORE_RANGE, Pairs, load_pairs
    from isoscope.data.source import CORPUS_FORMATS, TABLE_FORMATS, Source, as_source, file_format, read_source
    from isoscope.data.tables import TEXT_COLUMN_NAMES, check_rows, clean_texts, read_table, truncate_texts
    from isoscope.data.text import ClippedText, TextStats, decode_text
    from isoscope.data.vectors import (
        NPY_MAGIC,
        VECTOR_FORMATS,
        VectorOrigin,
        VectorTable,
        check_npy_header,
        load_vector_file,
        load_vectors,
        parse_vectors_ref,
        vectors_from_array,
    )

    MAX_ROWS: int
    MAX_CHARS: int
    MAX_BYTES: int
