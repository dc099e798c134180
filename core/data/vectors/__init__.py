"""Vectors computed elsewhere, from a file or an array: one bounded loader for every format a researcher has.

table = load_vector_file("openai.parquet", column="emb")     # or "openai.parquet:emb"
table.vectors      # (n, d) float32, every row finite
table.texts        # the text column (None when the file has none), table.meta the other columns
table.origin       # VectorOrigin: file, column, stored dtype, digest; .fingerprint goes into cache keys
table.vectors_for(texts)   # the rows of other texts: by text, or by position when the file has no texts

Formats (``VECTOR_FORMATS``): ``.npy`` (one 2-D array; its texts from a texts file, ``texts=``), Parquet and
Arrow IPC / Feather v2 (a ``list<number>`` or ``fixed_size_list<number>`` column, a text column, metadata
columns), ``.safetensors`` (one 2-D tensor; texts from a texts file) and a Hugging Face ``datasets`` folder
written by ``save_to_disk`` (read with pyarrow; the ``datasets`` package is not needed). The header or
schema is checked before anything is decoded (rows, dimensions, dtype, the bytes it decodes to:
``DecodeLimits.max_rows`` and ``max_vector_bytes``); every row must have the same length and finite values
(bad rows are named); float16, bfloat16, int8/uint8 codes and binary codes are accepted, with a warning
saying so. Nothing is unpickled. ``vectors_from_array`` applies the same checks to an array in memory.

Modules: table (VectorTable, VectorOrigin, the shared checks), npy, arrow (Parquet and IPC), ipc (IPC batch
headers read without decoding), tensors (.safetensors), datasets (Hugging Face folders).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from isoscope.data.limits import DecodeLimits, current_limits
from isoscope.data.vectors.npy import NPY_MAGIC, check_budget, check_npy_header, load_vectors, read_npy
from isoscope.data.vectors.table import VectorOrigin, VectorTable, vectors_digest, vectors_from_array
from isoscope.errors import InputError

if TYPE_CHECKING:
    from isoscope.data.source import Source

__all__ = [
    "NPY_MAGIC",
    "VECTOR_FORMATS",
    "VectorOrigin",
    "VectorTable",
    "check_budget",
    "check_npy_header",
    "load_vector_file",
    "load_vectors",
    "parse_vectors_ref",
    "vector_format",
    "vectors_digest",
    "vectors_from_array",
]

VECTOR_FORMATS: tuple[str, ...] = ("npy", "parquet", "arrow", "safetensors", "datasets")
SUFFIXES: dict[str, str] = {
    ".npy": "npy",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".feather": "arrow",
    ".arrow": "arrow",
    ".ipc": "arrow",
    ".safetensors": "safetensors",
}
FORMATS_HELP = ".npy, .parquet, .feather/.arrow, .safetensors or a Hugging Face datasets folder (save_to_disk)"


def parse_vectors_ref(text: str) -> tuple[str, str | None]:
    """``FILE[:COLUMN]`` -> (file, column or None). A text naming an existing file or folder is a file, whole
    (so ``C:\\data\\v.npy`` and names with colons work); otherwise the column follows the last colon."""
    text = (text or "").strip()
    if not text:
        raise InputError("no vectors file given; give FILE or FILE:COLUMN")
    if Path(text).expanduser().exists():
        return text, None
    file, sep, column = text.rpartition(":")
    if not sep or not file or not column or "/" in column or "\\" in column:
        return text, None
    return file, column


def vector_format(path: str | Path) -> str:
    """The format of a vectors file or folder from its name (a folder is a datasets folder); InputError otherwise."""
    from isoscope.data.vectors.datasets import is_dataset_folder

    p = Path(path)
    if p.is_dir():
        if is_dataset_folder(p):
            return "datasets"
        raise InputError(f"{p.name} is a folder but not a datasets folder (no state.json); give {FORMATS_HELP}")
    fmt = SUFFIXES.get(p.suffix.lower())
    if fmt is None:
        raise InputError(f"'{p.name}': not a vectors file; give {FORMATS_HELP}")
    return fmt


def _source(source: str | Path | bytes, name: str | None, limits: DecodeLimits) -> Source:
    from isoscope.data.source import as_source
    from isoscope.data.vectors.arrow import table_budget

    return as_source(source, name, limits.replace(max_bytes=max(limits.max_bytes, table_budget(limits))))


def load_vector_file(
    source: str | Path | bytes,
    column: str | None = None,
    *,
    text_column: str | None = None,
    texts: str | Path | bytes | None = None,
    name: str | None = None,
    texts_name: str | None = None,
    limits: DecodeLimits | None = None,
) -> VectorTable:
    """Vectors from a file or folder (or uploaded bytes named ``name``), checked; see the module docstring.

    ``column``: the vector column of a table or the tensor of a .safetensors (default: the only one); a path
    given as ``FILE:COLUMN`` works too. ``text_column``: the table's text column (default: text, sentence, ...
    when there is one), or the column of the ``texts`` file. ``texts``: a corpus file (.txt, .csv, ...) with one
    text per vector, in order; needed for texts with .npy and .safetensors.
    """
    from isoscope.data.vectors.arrow import ipc_sources, parquet_source, read_arrow
    from isoscope.data.vectors.datasets import read_dataset
    from isoscope.data.vectors.tensors import read_safetensors

    limits = limits or current_limits()
    if isinstance(source, str) and column is None:
        source, column = parse_vectors_ref(source)
    if isinstance(source, bytes | bytearray | memoryview):
        fmt = vector_format(name or "upload")
        if fmt == "datasets":
            raise InputError("a datasets folder cannot be uploaded; give its path")
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise InputError(f"file not found: {source}")
        fmt = vector_format(path)
        source = path
    if fmt == "datasets":
        table = read_dataset(
            Path(source), column=column, text_column=None if texts is not None else text_column, limits=limits
        )
    else:
        src = _source(source, name, limits)
        if fmt == "npy":
            if column is not None:
                raise InputError(f"{src.name}: a .npy file has no columns; give the file alone (not FILE:{column})")
            table = read_npy(src.path if src.path is not None else src.data or b"", src.name, limits)
        elif fmt == "safetensors":
            table = read_safetensors(src, src.name, column=column, limits=limits)
        else:
            text_col = None if texts is not None else text_column
            arrow = (
                parquet_source(src, src.name, column=column, limits=limits)
                if fmt == "parquet"
                else ipc_sources([src], src.name, limits)
            )
            table = read_arrow(arrow, column=column, text_column=text_col, limits=limits)
    if texts is not None:
        table = _with_texts_file(table, texts, texts_name, text_column, limits)
    elif text_column is not None and fmt in ("npy", "safetensors"):
        raise InputError(f"{table.origin.file} has no columns; give the texts as a texts file (one text per vector)")
    return table


def _with_texts_file(
    table: VectorTable, texts: str | Path | bytes, name: str | None, text_column: str | None, limits: DecodeLimits
) -> VectorTable:
    from isoscope.data.corpus import load_corpus

    if table.texts is not None:
        raise InputError(
            f"{table.name} has a text column ('{table.origin.text_column}') already; drop the texts file, or name "
            "another column"
        )
    corpus = load_corpus(texts, name=name, text_column=text_column, limits=limits)
    out = table.with_texts(corpus.texts, corpus.name)
    out.warnings = [*out.warnings, *corpus.warnings]
    if len(corpus.meta.columns):
        out.meta = corpus.meta
    return out
