"""Parquet, bounded by what its pages hold before anything is decoded, then read a few rows at a time.

A Parquet file can be tiny on disk and enormous decoded (one-row row groups of megabyte cells compress
about a thousandfold), and its footer's sizes are whatever the writer put there. Before reading, the
footer's size, the number of row groups, columns and rows, and the uncompressed size the footer claims are
checked against the limits; then every page header is read (``isoscope.data.parquet_pages``) and the bytes
the pages really decompress to are checked against the same limit, so a footer that understates its data
is refused at the budget, before a byte is decompressed. Rows are read in batches sized from the pages
(about ``BATCH_BYTES`` each), texts read as dictionaries where the file stores them so (each distinct
text converted once), and every text is cut to the text limit before the next batch is read. What the
batches decode to is counted as they come (each dictionary once), against the same limit.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from isoscope.data.limits import DecodeLimits, MiB
from isoscope.data.parquet_pages import MAX_PAGES, PageError, chunk_start, file_bytes, walk_chunk
from isoscope.data.source import Source
from isoscope.data.text import CellBuilder, ClippedText, frame_of
from isoscope.errors import InputError
from isoscope.paths import open_regular

MAX_FOOTER = 16 * MiB  # the file's metadata (its schema and one entry per row group and column)
BATCH_BYTES = 32 * MiB  # decoded bytes per batch, from the metadata's average row size
MAX_BATCH_ROWS = 4096
PANDAS_INDEX = re.compile(r"__index_level_\d+__")


def _unreadable(name: str, exc: BaseException) -> InputError:
    return InputError(f"{name}: not a readable Parquet file ({type(exc).__name__})")


def _mib(n: float) -> str:
    return f"{n / MiB:,.0f} MiB"


def check_footer(src: Source, name: str) -> None:
    """Refuse a footer (metadata) larger than ``MAX_FOOTER`` before pyarrow parses it."""
    if src.path is not None:
        size = src.path.stat().st_size
        with open_regular(src.path) as f:
            f.seek(max(size - 8, 0))
            tail = f.read(8)
    else:
        data = src.data or b""
        size, tail = len(data), data[-8:]
    if size < 12 or tail[4:] != b"PAR1":
        raise InputError(f"{name}: not a readable Parquet file (no Parquet footer)")
    footer = int.from_bytes(tail[:4], "little")
    if footer > MAX_FOOTER or footer > size - 8:
        raise InputError(f"{name}: its metadata claims {_mib(footer)}, over the {_mib(MAX_FOOTER)} allowed")


def _check_metadata(md: Any, n_fields: int, name: str, limits: DecodeLimits) -> None:
    """Row groups, columns, rows and the uncompressed bytes the footer claims within the limits (cheap, first)."""
    if md.num_row_groups > limits.max_row_groups:
        raise InputError(
            f"{name}: {md.num_row_groups:,} row groups, over the limit of {limits.max_row_groups:,}; "
            "rewrite the file with fewer, larger row groups (or raise ISOSCOPE_MAX_ROW_GROUPS)"
        )
    if n_fields > limits.max_columns:
        raise InputError(f"{name}: {n_fields} columns, over the limit of {limits.max_columns} (ISOSCOPE_MAX_COLUMNS)")
    if md.num_rows > limits.max_rows:
        raise InputError(
            f"{name}: {md.num_rows:,} rows is over the limit of {limits.max_rows:,}; sample the file "
            "(or raise ISOSCOPE_MAX_ROWS)"
        )
    total = 0
    per_chunk = md.num_row_groups * md.num_columns <= 200_000  # cheap enough to add up column by column
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        size = rg.total_byte_size
        if per_chunk:
            size = max(size, sum(rg.column(j).total_uncompressed_size for j in range(rg.num_columns)))
        if size < 0 or rg.num_rows < 0:
            raise InputError(f"{name}: not a readable Parquet file (negative sizes in its metadata)")
        total += size
        if total > limits.max_parquet_bytes:
            raise _over_budget(name, limits)


def _over_budget(name: str, limits: DecodeLimits) -> InputError:
    return InputError(
        f"{name}: its data decodes to more than {_mib(limits.max_parquet_bytes)} (the limit for Parquet files) "
        "although the file is small; write fewer or shorter texts (or raise ISOSCOPE_MAX_PARQUET_BYTES)"
    )


def _check_pages(src: Source, md: Any, name: str, limits: DecodeLimits) -> int:
    """Walk every page header: the bytes the pages decompress to (plus a bound per value) within the limit.

    Returns rows per batch, from the heaviest row group's bytes per row as its pages give them.
    """
    budget, total, pages, widest = limits.max_parquet_bytes, 0, 0, 1.0
    size = src.path.stat().st_size if src.path is not None else len(src.data or b"")
    try:
        with file_bytes(src) as buf:
            for i in range(md.num_row_groups):
                rg = md.row_group(i)
                group, rows = 0, None
                for j in range(rg.num_columns):
                    col = rg.column(j)
                    chunk = walk_chunk(
                        buf,
                        chunk_start(col),
                        col.total_compressed_size,
                        size=size,
                        budget=budget - total,
                        max_pages=MAX_PAGES - pages,
                    )
                    pages += chunk.pages
                    total += chunk.decoded_bound
                    group += chunk.decoded_bound
                    rows = chunk.values if rows is None else min(rows, chunk.values)
                    if total > budget:
                        raise _over_budget(name, limits)
                    if pages > MAX_PAGES:
                        raise InputError(f"{name}: more than {MAX_PAGES:,} pages; rewrite the file with larger pages")
                widest = max(widest, group / max(rows or 1, 1))
    except (PageError, OSError) as exc:
        raise InputError(f"{name}: not a readable Parquet file ({exc})") from None
    return int(min(MAX_BATCH_ROWS, max(1, BATCH_BYTES // widest)))


def column_kind(t: Any) -> str:
    """'text', 'binary', 'plain' (numbers, booleans, dates) or 'nested' for an Arrow type."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        return column_kind(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "text"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_nested(t) or pa.types.is_union(t) or pa.types.is_fixed_size_binary(t):
        return "nested"
    return "plain"


def column_texts(arr: Any, kind: str, cell: CellBuilder) -> list[Any]:
    """Python values of a text or binary array, each cut to the builder's cap (long ones ClippedText)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(arr.type):
        values = column_texts(arr.dictionary, kind, cell)  # each distinct text once
        return [None if i is None else values[i] for i in arr.indices.to_pylist()]
    cap = cell.cap
    if kind == "binary":  # bytes without a text annotation: UTF-8, undecodable bytes replaced
        out: list[Any] = []
        for b in pc.binary_slice(arr, 0, 4 * cap + 4).to_pylist():  # enough bytes for cap + 1 characters
            if b is not None:
                cell.add(b.decode("utf-8", "replace"))
                b = cell.finish()
            out.append(b)
        return out
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    trimmed = pc.utf8_ltrim_whitespace(arr)
    long = pc.greater(pc.utf8_length(pc.utf8_rtrim_whitespace(trimmed)), cap).to_pylist()
    kept = pc.utf8_slice_codeunits(trimmed, 0, cap).to_pylist()
    return [ClippedText(v) if lg else v for v, lg in zip(kept, long, strict=True)]


class _Columns:
    """The kept columns as Python values, added batch by batch, with the bytes the batches decoded to.

    A text column read as a dictionary comes back with its row group's whole dictionary in every batch:
    it is converted (and counted) once while it stays the same, and each batch adds only its indices.
    """

    def __init__(self, kinds: dict[str, str], texts: list[str], cell: CellBuilder) -> None:
        self.kinds, self.texts, self.cell = kinds, set(texts), cell
        self.values: dict[str, list[Any]] = {c: [] for c in kinds}
        self.dictionaries: dict[str, tuple[Any, list[Any]]] = {}
        self.decoded = 0

    def add(self, batch: Any) -> None:
        import pyarrow as pa

        for c in batch.schema.names:
            arr, out = batch.column(c), self.values[c]
            if c not in self.texts:
                self.decoded += arr.get_total_buffer_size()
                out.extend(arr.to_pylist())
            elif pa.types.is_dictionary(arr.type):
                out.extend(self._lookup(c, arr))
            else:
                self.decoded += arr.get_total_buffer_size()
                out.extend(column_texts(arr, self.kinds[c], self.cell))

    def _lookup(self, c: str, arr: Any) -> list[Any]:
        d = arr.dictionary
        seen = self.dictionaries.get(c)
        if seen is None or len(seen[0]) != len(d) or not seen[0].equals(d):
            seen = self.dictionaries[c] = (d, column_texts(d, self.kinds[c], self.cell))  # each distinct text once
            self.decoded += d.get_total_buffer_size()
        self.decoded += arr.indices.get_total_buffer_size()
        values = seen[1]
        return [None if i is None else values[i] for i in arr.indices.to_pylist()]


def read_parquet(src: Source, name: str, limits: DecodeLimits) -> tuple[pd.DataFrame, list[str]]:
    """The file's columns (nested ones dropped, with a warning) as a frame of Python values."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    check_footer(src, name)
    handle: Any = str(src.path) if src.path is not None else pa.BufferReader(src.data or b"")
    options = {"thrift_string_size_limit": MAX_FOOTER, "thrift_container_size_limit": 1_000_000}
    try:
        pf = pq.ParquetFile(handle, schema_depth_limit=64, **options)
        md, schema = pf.metadata, pf.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _unreadable(name, exc) from None
    _check_metadata(md, len(schema), name, limits)
    batch_rows = _check_pages(src, md, name, limits)
    kinds = {f.name: column_kind(f.type) for f in schema if not PANDAS_INDEX.fullmatch(f.name)}
    warnings = [
        f"{name}: column '{c}' holds nested values (lists, structs, maps); ignored"
        for c, k in kinds.items()
        if k == "nested"
    ]
    keep = {c: k for c, k in kinds.items() if k != "nested"}
    texts = [c for c, k in keep.items() if k in ("text", "binary")]
    columns = _Columns(keep, texts, CellBuilder(limits.max_chars))
    try:
        pf = pq.ParquetFile(handle, metadata=md, read_dictionary=texts, **options)
        for c in keep:  # one column at a time: the reader holds one column's pages, not a hundred
            n = 0
            for batch in pf.iter_batches(batch_size=batch_rows, columns=[c], use_threads=False):
                columns.add(batch)
                if columns.decoded > limits.max_parquet_bytes:  # the pages were checked first: a last guard
                    raise _over_budget(name, limits)
                n += batch.num_rows
                if n > limits.max_rows:
                    break
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise _unreadable(name, exc) from None
    return frame_of(columns.values), warnings
