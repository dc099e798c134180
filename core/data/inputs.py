"""Texts from a corpus or from a pairs file, the kind auto-detected: what ``geometry`` and ``compare`` read.

A pairs file gives its sentences, first column then second (``Pairs.texts``), and keeps its pairs (for the
lexical-overlap and STS columns); a corpus gives its texts. ``load_vector_input``: a vectors file and the texts
it is measured on (its own text column, or another file's texts looked up in it). ``auto`` reads a file as pairs when it loads as
pairs and has scores or a header naming sentence1 and sentence2, and as a corpus otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from isoscope.errors import InputError

if TYPE_CHECKING:  # the loaders import pandas: imported where used, so INPUT_KINDS is cheap to import
    import numpy as np

    from isoscope.data.pairs import Pairs
    from isoscope.data.vectors import VectorOrigin, VectorTable

InputKind = Literal["auto", "pairs", "corpus"]
INPUT_KINDS: tuple[InputKind, ...] = get_args(InputKind)
DataKind = Literal["corpus", "pairs", "vectors"]
TABLE_VECTOR_SUFFIXES = (".parquet", ".pq")  # tables that hold texts, or vectors in a list column
_HEADER_BYTES = 4096  # the pairs header must be on the first line within this many bytes


@dataclass
class TextInput:
    """The texts of a corpus or of a pairs file, with the pairs when it was a pairs file."""

    texts: list[str]
    pairs: Pairs | None = None  # the pairs whose sentences ``texts`` are (first column, then second)
    warnings: list[str] = field(default_factory=list)
    name: str = ""
    meta: Any = field(
        default=None, compare=False
    )  # a corpus's per-text metadata (pandas.DataFrame, one row per text), None for pairs

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def kind(self) -> Literal["pairs", "corpus"]:
        return "pairs" if self.pairs is not None else "corpus"

    def distinct_texts(self) -> list[str]:
        """Each text once, in the order of first appearance."""
        return list(dict.fromkeys(self.texts))

    def distinct_rows(self) -> list[int]:
        """The row of each of ``distinct_texts()`` (its first appearance)."""
        first: dict[str, int] = {}
        for i, t in enumerate(self.texts):
            first.setdefault(t, i)
        return list(first.values())


def looks_like_pairs_header(source: str | Path) -> bool:
    """True when the first line of the file names both sentence1 and sentence2 (CSV/TSV header or JSONL keys)."""
    from isoscope.data.source import as_source

    with as_source(source, None).open() as f:
        head = f.read(_HEADER_BYTES)
    lines = head.decode("utf-8", errors="ignore").lower().splitlines()
    first = lines[0] if lines else ""
    return "sentence1" in first and "sentence2" in first


def load_input(source: str | Path, kind: InputKind = "auto", text_column: str | None = None) -> TextInput:
    """A corpus or a pairs file: ``kind`` says which, or ``auto`` detects it (see the module docstring).

    ``text_column`` names a corpus's text column (and makes ``auto`` read a corpus).
    """
    from isoscope.data.pairs import load_pairs

    if kind not in INPUT_KINDS:
        raise InputError(f"unknown input kind '{kind}'; choose one of {', '.join(INPUT_KINDS)}")
    if kind == "corpus" or (kind == "auto" and text_column):
        return _corpus(source, text_column)
    if kind == "pairs":
        return _pairs(load_pairs(source))
    try:
        pairs = load_pairs(source)
    except InputError:
        return _corpus(source, text_column)
    if pairs.scores is not None or looks_like_pairs_header(source):
        return _pairs(pairs)
    return _corpus(source, text_column)


def data_kind(source: str | Path, vector_column: str | None = None, text_column: str | None = None) -> DataKind:
    """What a data file holds: ``vectors`` (a vectors format, a folder, ``vector_column`` given, or a Parquet file
    with a list column), else ``pairs`` or ``corpus`` as ``load_input`` reads it (InputError when it is neither)."""
    from isoscope.data.vectors import SUFFIXES

    path = Path(source).expanduser()
    suffix = path.suffix.lower()
    if vector_column or path.is_dir() or (suffix in SUFFIXES and suffix not in TABLE_VECTOR_SUFFIXES):
        return "vectors"
    if suffix in TABLE_VECTOR_SUFFIXES and _has_list_column(path):
        return "vectors"
    return load_input(path, "auto", text_column).kind


def _has_list_column(path: Path) -> bool:
    """True when the Parquet file's schema (its footer only) has a list column; False when it has none or is
    unreadable (the corpus loader then says why)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException):
        return False
    return any(
        pa.types.is_list(f.type) or pa.types.is_fixed_size_list(f.type) or pa.types.is_large_list(f.type)
        for f in schema
    )


def load_texts(sources: Sequence[str | Path], kind: InputKind = "auto", text_column: str | None = None) -> TextInput:
    """The texts of several corpora or pairs files (each read as ``load_input`` reads it), one after another,
    with all their warnings; ``pairs`` is set only for a single pairs file."""
    if len(sources) == 1:
        return load_input(sources[0], kind, text_column)
    parts = [load_input(source, kind, text_column) for source in sources]
    return TextInput(
        texts=[t for part in parts for t in part.texts],
        warnings=[w for part in parts for w in part.warnings],
        name=", ".join(part.name for part in parts),
    )


def _corpus(source: str | Path, text_column: str | None) -> TextInput:
    from isoscope.data.corpus import load_corpus

    corpus = load_corpus(source, text_column=text_column)
    return TextInput(corpus.texts, None, list(corpus.warnings), corpus.name, corpus.meta)


def _pairs(pairs: Pairs) -> TextInput:
    return TextInput(pairs.texts, pairs, list(pairs.warnings), pairs.name)


@dataclass
class VectorInput:
    """Texts and their vectors computed elsewhere (a vectors file, an endpoint): one row of ``vectors`` per text."""

    texts: TextInput  # the texts (for a file without texts: placeholders "row 0", "row 1", ...; has_texts False)
    vectors: np.ndarray  # (n, d) float32
    name: str  # FILE:COLUMN, or the endpoint's openai:NAME
    fingerprint: str  # what the vectors came from, for cache keys
    origin: VectorOrigin | None = None  # a file's provenance
    has_texts: bool = True
    table: VectorTable | None = None  # the file as read (its metadata columns, all its rows)

    def __len__(self) -> int:
        return len(self.texts)


def load_vector_input(
    vectors: str | Path,
    source: str | Path | None = None,
    *,
    kind: InputKind = "auto",
    text_column: str | None = None,
) -> VectorInput:
    """A vectors file (``FILE[:COLUMN]``, ``isoscope.data.load_vector_file``) and the texts it is measured on.

    With ``source`` (a corpus or a pairs file, read as ``load_input`` reads it; ``text_column`` is its column)
    the vectors of its texts are looked up by text when the file has a text column, else taken by position (one
    vector per text, in order). Without, the file's rows are the texts (``text_column``: the file's text column;
    a file without texts gets the placeholders ``row 0``, ``row 1``, ...).
    """
    from isoscope.data.vectors import load_vector_file

    if source is not None:
        table = load_vector_file(str(vectors))
        texts = load_input(source, kind, text_column)
        found = table.vectors_for(texts.texts)  # (n, d)
        texts.warnings = [*table.warnings, *texts.warnings]
        return VectorInput(texts, found, table.name, table.origin.fingerprint, table.origin, True, table)
    return rows_input(load_vector_file(str(vectors), text_column=text_column))


def rows_input(table: VectorTable) -> VectorInput:
    """A vectors file's own rows as the texts measured (placeholders ``row 0``, ... for a file without texts)."""
    has_texts = table.texts is not None
    items = list(table.texts) if table.texts is not None else [f"row {i}" for i in range(len(table))]
    texts = TextInput(items, None, list(table.warnings), table.origin.file)
    return VectorInput(texts, table.vectors, table.name, table.origin.fingerprint, table.origin, has_texts, table)


@dataclass
class PairVectors:
    """Scored pairs and the vectors of their two sides, from vectors files."""

    pairs: Pairs
    a: np.ndarray  # (n, d) sentence1
    b: np.ndarray  # (n, d) sentence2
    name: str  # FILE:COLUMN (of both sides when they differ: "A | B")
    origin: VectorOrigin
    warnings: list[str] = field(default_factory=list)
    table: VectorTable | None = field(default=None, repr=False, compare=False)  # the (first) file, read once


def _row_ids(values: list[str], table: VectorTable, pairs: Pairs) -> np.ndarray:
    """Row numbers of ``table`` written as the texts of one side of the pairs (``pair_ids``)."""
    import numpy as np

    out = np.empty(len(values), np.int64)
    for i, v in enumerate(values):
        if not v.isdigit() or int(v) >= len(table):
            raise InputError(
                f"{pairs.name}: row ids must be row numbers of {table.name} (0 to {len(table) - 1}); "
                f"pair {i} has '{v[:40]}'"
            )
        out[i] = int(v)
    return out


def load_pair_vectors(
    pairs: str | Path | Pairs,
    vectors: str | Path,
    vectors_b: str | Path | None = None,
    *,
    pair_ids: bool = False,
) -> PairVectors:
    """The vectors of both sides of a pairs file, from one vectors file or two.

    One file: each sentence's vector is looked up by text (the file has a text column), or with ``pair_ids`` the
    pairs file's two text columns hold row numbers into it, or else the file holds the sentence1 rows then the
    sentence2 rows (``Pairs.texts`` order). Two files: ``vectors`` gives sentence1's vectors and ``vectors_b``
    sentence2's, each by text or row by row.
    """
    from isoscope.data.pairs import load_pairs
    from isoscope.data.vectors import load_vector_file

    read = pairs if not isinstance(pairs, str | Path) else load_pairs(pairs)
    table = load_vector_file(str(vectors))
    if vectors_b is not None:
        if pair_ids:
            raise InputError("row ids (--pair-ids) index one vectors file; give one, not two")
        other = load_vector_file(str(vectors_b))
        a, b = table.vectors_for(read.sentence1), other.vectors_for(read.sentence2)
        if a.shape[1] != b.shape[1]:
            raise InputError(
                f"{table.name} has {a.shape[1]} dimensions and {other.name} {b.shape[1]}; the two sides of a pair "
                "must come from one space"
            )
        name = f"{table.name} | {other.name}"
        return PairVectors(read, a, b, name, table.origin, [*table.warnings, *other.warnings], table)
    if pair_ids:
        a = table.vectors[_row_ids(read.sentence1, table, read)]
        b = table.vectors[_row_ids(read.sentence2, table, read)]
    else:
        both = table.vectors_for(read.texts)  # (2n, d)
        a, b = both[: len(read)], both[len(read) :]
    return PairVectors(read, a, b, table.name, table.origin, list(table.warnings), table)
