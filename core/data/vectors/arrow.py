"""Vectors from an Arrow table: a Parquet file, an Arrow IPC file or stream (Feather v2, ``.arrow``), or the
shards of a Hugging Face dataset: one ``list<number>`` or ``fixed_size_list<number>`` column, a text column,
any other plain columns as metadata.

What the file claims is checked before anything is decoded: the schema (a vector column of numbers), the rows
(Parquet metadata, IPC batch headers), the dimensions of a fixed-size list, and the bytes the data decodes to.
Then batches are decoded one at a time into one preallocated float32 array, every row checked to have the
same length, and the decoded bytes counted against the limit (a file whose headers understate its data stops
there anyway).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from isoscope.data.limits import DecodeLimits, MiB
from isoscope.data.parquet import PANDAS_INDEX, check_footer, column_kind, column_texts
from isoscope.data.source import Source
from isoscope.data.tables import TEXT_COLUMN_NAMES
from isoscope.data.text import CellBuilder, ClippedText, frame_of
from isoscope.data.vectors.npy import check_budget
from isoscope.data.vectors.table import VectorOrigin, VectorTable, as_float32, finish
from isoscope.errors import InputError

BATCH_BYTES = 32 * MiB  # decoded bytes per batch (Parquet: from the metadata's widest row group)
MAX_BATCH_ROWS = 8192
LIST_HINT = "store each vector as a list of numbers (pyarrow list<float32> or fixed_size_list<float32, d>)"
# value types of a vector column, as VectorOrigin.dtype names them
_NUMERIC = {
    "halffloat": "float16",
    "float": "float32",
    "double": "float64",
    "bool": "bool",
    **{t: t for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")},
}


def table_budget(limits: DecodeLimits) -> int:
    """Bytes a vectors table may decode to: its vector column (float64 stored is twice the float32 limit) and
    its other columns (the Parquet limit)."""
    return 2 * limits.max_vector_bytes + limits.max_parquet_bytes


def _mib(n: float) -> str:
    return f"{n / MiB:,.0f} MiB"


def _is_list(t: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or _is_view(t)


def _is_view(t: Any) -> bool:
    import pyarrow as pa

    return hasattr(pa.types, "is_list_view") and (pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


def _describe(t: Any) -> str:
    """A short name of an Arrow type for messages: list<float>, fixed_size_list<float, 384>, string, ..."""
    import pyarrow as pa

    if pa.types.is_fixed_size_list(t):
        return f"fixed_size_list<{_describe(t.value_type)}, {t.list_size}>"
    if _is_list(t):
        return f"list<{_describe(t.value_type)}>"
    if pa.types.is_dictionary(t):
        return _describe(t.value_type)
    return str(t)


def _value_dtype(t: Any) -> str | None:
    """The dtype name of a vector column's values, or None when it is not a list of numbers."""
    return _NUMERIC.get(str(t.value_type)) if _is_list(t) else None


@dataclass
class ArrowSource:
    """An Arrow table behind a file: its schema, the rows its headers claim, and a way to read its batches."""

    name: str
    schema: Any  # pyarrow.Schema
    rows: int  # claimed (checked against the limits before reading)
    batches: Callable[[list[str], list[str], int], Iterator[Any]]  # (columns, text columns, rows) -> batches
    batch_rows: int = MAX_BATCH_ROWS


@dataclass
class Columns:
    """Which columns are the vectors, the texts and the metadata."""

    vector: str
    dtype: str  # of the vector values
    dims: int | None  # known from a fixed_size_list type
    text: str | None
    meta: list[str]
    text_kinds: dict[str, str]  # text or binary columns read as texts (cut to max_chars)
    warnings: list[str]


def pick_columns(schema: Any, name: str, *, column: str | None, text_column: str | None) -> Columns:
    """The vector, text and metadata columns of a schema; InputError naming what is wrong and what there is."""
    import pyarrow as pa

    fields = {f.name: f.type for f in schema if not PANDAS_INDEX.fullmatch(f.name)}
    listing = ", ".join(f"{c} ({_describe(t)})" for c, t in fields.items())[:300]
    if column is not None:
        if column not in fields:
            raise InputError(f"{name}: no column '{column}'; columns are {listing}")
        t = fields[column]
        if not _is_list(t):
            what = "strings" if column_kind(t) in ("text", "binary") else f"{_describe(t)} values"
            raise InputError(f"{name}: column '{column}' holds {what}, not vectors; {LIST_HINT}")
        if _value_dtype(t) is None:
            raise InputError(f"{name}: column '{column}' holds {_describe(t)}, not lists of numbers; {LIST_HINT}")
    else:
        found = [c for c, t in fields.items() if _value_dtype(t) is not None]
        if not found:
            raise InputError(f"{name}: no vector column (a list of numbers); columns are {listing}; {LIST_HINT}")
        if len(found) > 1:
            raise InputError(f"{name}: several vector columns ({', '.join(found)}); name one as {name}:COLUMN")
        column = found[0]
    t = fields[column]
    dims = t.list_size if pa.types.is_fixed_size_list(t) else None
    kinds = {c: column_kind(ft) for c, ft in fields.items() if c != column}
    if text_column is not None:
        if text_column not in fields:
            raise InputError(f"{name}: no text column '{text_column}'; columns are {listing}")
        if kinds.get(text_column) not in ("text", "binary"):
            raise InputError(f"{name}: column '{text_column}' holds {_describe(fields[text_column])}, not texts")
    else:
        lower = {c.lower(): c for c, k in kinds.items() if k == "text"}
        text_column = next((lower[c] for c in TEXT_COLUMN_NAMES if c in lower), None)
    nested = [c for c, k in kinds.items() if k == "nested"]
    warnings = [f"{name}: column '{c}' holds nested values (lists, structs, maps); ignored" for c in nested]
    meta = [c for c, k in kinds.items() if k != "nested" and c != text_column]
    texts = {c: kinds[c] for c in [*([text_column] if text_column else []), *meta] if kinds[c] in ("text", "binary")}
    return Columns(column, _value_dtype(t) or "float32", dims, text_column, meta, texts, warnings)


def _rows_named(idx: np.ndarray, start: int) -> str:
    shown = ", ".join(str(int(i) + start) for i in idx[:5])
    return f"row {shown}" if len(idx) == 1 else f"rows {shown}{' and more' if len(idx) > 5 else ''}"


def _matrix(arr: Any, name: str, column: str, start: int, dims: int | None) -> np.ndarray:
    """One batch of a vector column as (b, d) stored values; InputError for missing or ragged rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if _is_view(arr.type):
        arr = arr.cast(pa.large_list(arr.type.value_type))
    if arr.null_count:
        idx = np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))
        raise InputError(f"{name}: {_rows_named(idx, start)} (counting from 0) of '{column}' hold no vector")
    lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)  # (b,)
    d = dims if dims is not None else (int(lengths[0]) if len(lengths) else 0)
    ragged = np.flatnonzero(lengths != d)
    if len(ragged):
        first = int(ragged[0])
        raise InputError(
            f"{name}: ragged vectors in '{column}': row {first + start} (counting from 0) has {int(lengths[first])} "
            f"values, row {start if first else start + 1} has {d}; every vector needs the same dimensions"
        )
    flat = arr.flatten()
    if flat.null_count:
        idx = np.unique(np.flatnonzero(flat.is_null().to_numpy(zero_copy_only=False)) // max(d, 1))
        raise InputError(f"{name}: {_rows_named(idx, start)} (counting from 0) of '{column}' have missing values")
    return flat.to_numpy(zero_copy_only=False).reshape(len(arr), d)  # (b, d)


def _text_values(arr: Any, kind: str, cell: CellBuilder) -> list[Any]:
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return column_texts(arr, kind, cell)


def _clean(v: Any) -> str:
    if v is None:
        return ""
    return ClippedText(v.strip()) if isinstance(v, ClippedText) else str(v).strip()


def read_arrow(
    src: ArrowSource, *, column: str | None, text_column: str | None, limits: DecodeLimits, file: str | None = None
) -> VectorTable:
    """The vectors (and texts, metadata) of an Arrow source, bounded as the module docstring says."""
    import pyarrow as pa

    name = src.name
    cols = pick_columns(src.schema, name, column=column, text_column=text_column)
    label = f"{name}:{cols.vector}"
    if len([*cols.meta, cols.vector, *([cols.text] if cols.text else [])]) > limits.max_columns:
        raise InputError(f"{name}: more than {limits.max_columns} columns (ISOSCOPE_MAX_COLUMNS)")
    check_budget(src.rows, cols.dims or 0, label, limits=limits, hint="sample the rows first (or raise the limit)")
    wanted = [cols.vector, *([cols.text] if cols.text else []), *cols.meta]
    cell = CellBuilder(limits.max_chars)
    out: np.ndarray | None = None
    texts: list[Any] = []
    meta: dict[str, list[Any]] = {c: [] for c in cols.meta}
    n = 0
    try:
        for batch in src.batches(wanted, list(cols.text_kinds), src.batch_rows):
            values = _matrix(batch.column(cols.vector), label, cols.vector, n, cols.dims)  # (b, d)
            b, d = values.shape
            if out is None:
                check_budget(src.rows, d, label, limits=limits, hint="sample the rows first (or raise the limit)")
                out = np.empty((src.rows, d), np.float32)  # (n, d)
            if d != out.shape[1]:
                raise InputError(
                    f"{label}: ragged vectors: row {n} (counting from 0) has {d} values, row 0 has {out.shape[1]}; "
                    "every vector needs the same dimensions"
                )
            if n + b > src.rows:
                raise InputError(f"{name}: holds more rows than its headers say ({src.rows:,}); the file is damaged")
            out[n : n + b] = as_float32(values, cols.dtype)
            if cols.text:
                texts += [_clean(v) for v in _text_values(batch.column(cols.text), cols.text_kinds[cols.text], cell)]
            for c in cols.meta:
                arr = batch.column(c)
                meta[c] += _text_values(arr, cols.text_kinds[c], cell) if c in cols.text_kinds else arr.to_pylist()
            n += b
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{name}: not a readable Arrow or Parquet file ({type(exc).__name__})") from None
    if out is None:
        raise InputError(f"{name}: no rows")
    if n != src.rows:
        raise InputError(f"{name}: holds {n:,} rows but its headers say {src.rows:,}; the file is damaged")
    origin = VectorOrigin(file or name, cols.vector, cols.text, cols.dtype)
    warnings = list(cols.warnings)
    if n_cut := sum(isinstance(t, ClippedText) for t in texts):
        warnings.append(f"{name}: {n_cut} text(s) longer than {limits.max_chars} characters were truncated")
    frame = frame_of(meta) if meta else None
    texts_out = [str(t) for t in texts] if cols.text else None
    return finish(out, origin, texts=texts_out, meta=frame, warnings=warnings)


# ---------------------------------------------------------------- Parquet


def _check_parquet(md: Any, schema: Any, name: str, column: str | None, limits: DecodeLimits) -> int:
    """Row groups, rows and decoded bytes from the metadata (before any data is read); returns rows per batch."""
    if md.num_row_groups > limits.max_row_groups:
        raise InputError(
            f"{name}: {md.num_row_groups:,} row groups, over the limit of {limits.max_row_groups:,} "
            "(ISOSCOPE_MAX_ROW_GROUPS); rewrite the file with fewer, larger row groups"
        )
    if md.num_rows > limits.max_rows:
        raise InputError(
            f"{name}: {md.num_rows:,} rows is over the limit of {limits.max_rows:,}; sample the file first"
        )
    vector = column or next((f.name for f in schema if _value_dtype(f.type) is not None), None)
    itemsize = max(np.dtype(_value_dtype(schema.field(vector).type) or "float32").itemsize, 1) if vector else 4
    decoded = other = 0.0  # float32 bytes of the vectors, bytes of the other columns
    widest = 1.0
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        sizes = [rg.column(j) for j in range(rg.num_columns)]
        if rg.num_rows < 0 or any(c.total_uncompressed_size < 0 or c.num_values < 0 for c in sizes):
            raise InputError(f"{name}: not a readable Parquet file (negative sizes in its metadata)")
        vec = [c for c in sizes if c.path_in_schema.split(".")[0] == vector]
        in_vec = sum(c.total_uncompressed_size for c in vec)
        # a dictionary-encoded page of repeated values is small even uncompressed: the number of values it
        # holds (every element of every list) says what it decodes to
        vec_decoded = max(in_vec * 4 / itemsize, 4.0 * sum(c.num_values for c in vec))
        decoded += vec_decoded
        rest = sum(c.total_uncompressed_size for c in sizes) - in_vec
        other += rest
        widest = max(widest, rg.total_byte_size / max(rg.num_rows, 1), (vec_decoded + rest) / max(rg.num_rows, 1))
    if decoded > limits.max_vector_bytes:
        raise InputError(
            f"{name}: its vectors decode to about {_mib(decoded)} of float32 (from its metadata) "
            f"although the file is {'small' if decoded > 100 * md.serialized_size else 'smaller'}, over the limit of "
            f"{_mib(limits.max_vector_bytes)} (ISOSCOPE_MAX_VECTOR_BYTES); sample the rows first"
        )
    if other > limits.max_parquet_bytes:
        raise InputError(
            f"{name}: its other columns decode to more than {_mib(limits.max_parquet_bytes)} "
            "(ISOSCOPE_MAX_PARQUET_BYTES); drop columns or sample the rows first"
        )
    return int(min(MAX_BATCH_ROWS, max(1, BATCH_BYTES // widest)))


def parquet_source(src: Source, name: str, *, column: str | None, limits: DecodeLimits) -> ArrowSource:
    import pyarrow as pa
    import pyarrow.parquet as pq

    check_footer(src, name)
    handle: Any = str(src.path) if src.path is not None else pa.BufferReader(src.data or b"")
    options = {"thrift_string_size_limit": 16 * MiB, "thrift_container_size_limit": 1_000_000}
    try:
        pf = pq.ParquetFile(handle, schema_depth_limit=64, **options)
        md, schema = pf.metadata, pf.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"{name}: not a readable Parquet file ({type(exc).__name__})") from None
    if len(schema) > limits.max_columns:
        raise InputError(
            f"{name}: {len(schema)} columns, over the limit of {limits.max_columns} (ISOSCOPE_MAX_COLUMNS)"
        )
    if column is not None and column in schema.names:
        pick_columns(schema, name, column=column, text_column=None)  # a column of strings is named before the sizes are
    batch_rows = _check_parquet(md, schema, name, column if column in schema.names else None, limits)

    def batches(columns: list[str], texts: list[str], rows: int) -> Iterator[Any]:
        f = pq.ParquetFile(handle, metadata=md, read_dictionary=texts, **options)
        decoded = 0
        for batch in f.iter_batches(batch_size=rows, columns=columns, use_threads=False):
            decoded += batch.get_total_buffer_size()
            if decoded > table_budget(limits):
                raise InputError(f"{name}: decodes to more than its metadata says; the file is damaged or crafted")
            yield batch

    return ArrowSource(name, schema, md.num_rows, batches, batch_rows)


# ---------------------------------------------------------------- Arrow IPC (Feather v2, .arrow, datasets shards)

ARROW_FILE_MAGIC = b"ARROW1"
FEATHER_V1_MAGIC = b"FEA1"


def _ipc_input(src: Source | Path) -> Any:
    import pyarrow as pa

    path = src if isinstance(src, Path) else src.path
    return pa.memory_map(str(path)) if path is not None else pa.BufferReader(src.data or b"")  # type: ignore[union-attr]


def _messages(f: Any, is_file: bool) -> Any:
    """A reader over the encapsulated messages of an IPC stream, or of the stream inside an IPC file (between its
    8-byte magic and its footer), without copying a memory-mapped body."""
    import pyarrow as pa

    f.seek(0)
    whole = f.read_buffer()
    if not is_file:
        return pa.BufferReader(whole)
    footer = int.from_bytes(whole[whole.size - 10 : whole.size - 6].to_pybytes(), "little", signed=True)
    end = whole.size - 10 - footer
    if whole.size < 18 or footer < 0 or end < 8 or whole[whole.size - 6 :].to_pybytes() != ARROW_FILE_MAGIC:
        raise ValueError("no Arrow file footer")
    return pa.BufferReader(whole.slice(8, end - 8))


def ipc_sources(parts: list[Source | Path], name: str, limits: DecodeLimits) -> ArrowSource:
    """One ArrowSource over IPC files or streams read one after another (a dataset's shards), their batch headers
    checked first: rows, and the bytes compressed bodies decompress to."""
    import pyarrow as pa

    from isoscope.data.vectors.ipc import scan_stream

    schema, rows, decoded = None, 0, 0
    for part in parts:
        with _ipc_input(part) as f:
            head = f.read(8)
            if head.startswith(FEATHER_V1_MAGIC):
                raise InputError(
                    f"{name}: a Feather version 1 file; rewrite it with pyarrow.feather.write_feather (version 2)"
                )
            is_file = head.startswith(ARROW_FILE_MAGIC)
            try:
                claims = scan_stream(_messages(f, is_file))
                f.seek(0)
                part_schema = (pa.ipc.open_file(f) if is_file else pa.ipc.open_stream(f)).schema
            except (pa.ArrowException, ValueError, OSError) as exc:
                raise InputError(f"{name}: not a readable Arrow IPC (Feather) file ({type(exc).__name__})") from None
        if schema is not None and not part_schema.equals(schema):
            raise InputError(f"{name}: its files have different columns; the dataset is damaged")
        schema = part_schema
        rows += claims.rows
        decoded += claims.decoded_bytes
    if rows > limits.max_rows:
        raise InputError(f"{name}: {rows:,} rows is over the limit of {limits.max_rows:,}; sample the rows first")
    if decoded > table_budget(limits):
        raise InputError(
            f"{name}: its batches decode to {_mib(decoded)}, over the {_mib(table_budget(limits))} allowed for a "
            "vectors file (ISOSCOPE_MAX_VECTOR_BYTES); sample the rows first"
        )
    if schema is None:
        raise InputError(f"{name}: no data files")
    if len(schema) > limits.max_columns:
        raise InputError(
            f"{name}: {len(schema)} columns, over the limit of {limits.max_columns} (ISOSCOPE_MAX_COLUMNS)"
        )

    def batches(columns: list[str], texts: list[str], _rows: int) -> Iterator[Any]:
        for part in parts:
            with _ipc_input(part) as f:
                is_file = f.read(8).startswith(ARROW_FILE_MAGIC)
                f.seek(0)
                if is_file:
                    reader = pa.ipc.open_file(f)
                    for i in range(reader.num_record_batches):
                        yield reader.get_batch(i).select(columns)
                else:
                    for batch in pa.ipc.open_stream(f):
                        yield batch.select(columns)

    return ArrowSource(name, schema, rows, batches)
