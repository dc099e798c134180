"""Vectors read and written a block of rows at a time, for ``isoscope.migrate.apply``: memory is a block, never
the file, whatever its rows.

- ``FlatArray`` / ``FlatWriter``: a ``.npy`` (C order) read with ``os.pread`` at a row's offset and written the
  same way into a file of the final size, so any range of rows can be (re)written in any order: a run resumes
  where it stopped;
- ``TableFile``: a Parquet or Arrow IPC (Feather v2) file whose vector column is replaced, every other column
  (ids, texts, metadata) kept as it is, in row order: read in batches of at most ``READ_ROWS`` rows (Parquet
  pages streamed through a small buffer; an IPC file a record batch at a time, so its largest record batch
  bounds the memory), written by ``table_writer`` in the same format with the mapped column as
  ``fixed_size_list<float32>[d]`` (what ``isoscope export --vectors`` writes).

The checks are the loaders' (``isoscope.data.vectors``): a header's claimed size against the file's bytes, the
footer's size, the vector column picked and named by ``pick_columns``, missing or ragged vectors named by row.
The whole-file limits (``ISOSCOPE_MAX_*``) bound what a loader holds in memory; a stream holds a block, so they
do not apply here (rows are not limited).
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from isoscope.errors import InputError, first_line

READ_ROWS = 8192  # rows decoded at once (fewer for wide rows: at most READ_BYTES)
READ_BYTES = 32 * 2**20
PARQUET_BUFFER = 2**20  # Parquet pages read through a buffer of this size, never a whole column chunk
STREAM_FORMATS: tuple[str, ...] = ("npy", "parquet", "arrow")
MAX_NPY_HEADER = 10_000


# ---------------------------------------------------------------- .npy


@dataclass(frozen=True)
class FlatArray:
    """A 2-D ``.npy`` on disk: ``rows`` x ``dims`` values of ``dtype`` from byte ``offset``, C order."""

    path: Path
    name: str
    rows: int
    dims: int
    dtype: np.dtype
    offset: int

    @classmethod
    def open(cls, path: Path) -> FlatArray:
        from isoscope.paths import open_regular

        name = path.name
        with open_regular(path) as f:
            try:
                version = np.lib.format.read_magic(f)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, fortran, dtype = read(f, max_header_size=MAX_NPY_HEADER)
            except (ValueError, EOFError, OSError) as exc:
                raise InputError(f"{name}: not a readable .npy file ({first_line(exc, 120)})") from None
            offset, size = f.tell(), os.fstat(f.fileno()).st_size
        if dtype.hasobject or dtype.fields is not None or dtype.kind not in "fiub":
            raise InputError(f"{name}: holds {dtype} values, not numbers; save a 2-D float array")
        if len(shape) != 2 or shape[1] < 1:
            raise InputError(f"{name}: vectors must be a 2-D array (rows, dimensions), got shape {shape}")
        if fortran and shape[0] > 1 and shape[1] > 1:
            raise InputError(f"{name}: a Fortran-order array cannot be read a row at a time; save it in C order")
        claimed = math.prod(shape) * dtype.itemsize
        if claimed != size - offset:
            raise InputError(
                f"{name}: its header describes {shape[0]:,} x {shape[1]:,} {dtype} values ({claimed:,} bytes) but the "
                f"file holds {size - offset:,} bytes of data"
            )
        return cls(path, name, int(shape[0]), int(shape[1]), dtype, offset)

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as float32 (b, d) (``as_float32``: binary codes to -1/+1)."""
        from isoscope.data.vectors.table import as_float32

        row = self.dims * self.dtype.itemsize
        buf = bytearray((stop - start) * row)
        view, pos = memoryview(buf), self.offset + start * row
        with open(self.path, "rb", buffering=0) as f:
            got = 0
            while got < len(buf):
                n = os.preadv(f.fileno(), [view[got:]], pos + got)
                if n <= 0:
                    raise InputError(f"{self.name}: ended before row {start + got // row:,}; the file was cut short")
                got += n
        values = np.frombuffer(buf, self.dtype).reshape(stop - start, self.dims)
        return as_float32(values, "bool" if self.dtype.kind == "b" else self.dtype.name)


class FlatWriter:
    """A ``.npy`` of (rows, dims) float32 at ``path``, made at its full size (the header written, the data zero)
    and filled by row ranges in any order; ``sync`` makes what was written durable. Opened again (``resume``) it
    keeps what an earlier run wrote."""

    def __init__(self, path: Path, rows: int, dims: int, *, resume: bool = False) -> None:
        head = io.BytesIO()
        np.lib.format.write_array_header_1_0(head, {"descr": "<f4", "fortran_order": False, "shape": (rows, dims)})
        self.path, self.dims, self.header = path, dims, len(head.getvalue())
        self.size = self.header + rows * dims * 4
        keep = resume and path.is_file() and path.stat().st_size == self.size
        if not keep:
            from isoscope.cache import check_free

            check_free(path, self.size)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | (0 if keep else os.O_TRUNC), 0o644)
        if not keep:
            os.pwrite(self.fd, head.getvalue(), 0)
            os.ftruncate(self.fd, self.size)
        self.resumed = keep

    def write(self, start: int, block: np.ndarray) -> None:
        data = np.ascontiguousarray(block, "<f4").tobytes()
        pos, done = self.header + start * self.dims * 4, 0
        while done < len(data):
            done += os.pwrite(self.fd, data[done:], pos + done)

    def read(self, start: int, stop: int) -> bytes:
        """The bytes of rows [start, stop) as written (a resumed run checks them against the ledger)."""
        return os.pread(self.fd, (stop - start) * self.dims * 4, self.header + start * self.dims * 4)

    def sync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)


# ---------------------------------------------------------------- Parquet and Arrow IPC


@dataclass
class TableFile:
    """A Parquet or Arrow IPC file with a vector ``column`` of ``dims`` values per row (``open``)."""

    path: Path
    name: str
    format: str  # parquet or arrow
    schema: Any  # pyarrow.Schema
    column: str
    dims: int
    rows: int
    read_rows: int

    @classmethod
    def open(cls, path: Path, fmt: str, column: str | None) -> TableFile:
        import pyarrow as pa

        name = path.name
        try:
            schema, rows, widest = _parquet_layout(path) if fmt == "parquet" else _ipc_layout(path)
        except (pa.ArrowException, OSError, ValueError) as exc:
            kind = "Parquet" if fmt == "parquet" else "Arrow IPC"
            raise InputError(f"{name}: not a readable {kind} file ({first_line(exc, 120)})") from None
        from isoscope.data.vectors.arrow import pick_columns

        picked = pick_columns(schema, name, column=column, text_column=None)
        vector, dims = picked.vector, picked.dims or 0  # a list<>: the first batch says
        read_rows = int(min(READ_ROWS, max(1, READ_BYTES // max(widest, 1.0))))
        return cls(path, name, fmt, schema, vector, dims, rows, read_rows)

    def batches(self) -> Iterator[Any]:
        """Every row in order, as record batches of at most ``read_rows`` rows (all columns)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self.format == "parquet":
            f = pq.ParquetFile(self.path, buffer_size=PARQUET_BUFFER, pre_buffer=False, **THRIFT)
            yield from f.iter_batches(batch_size=self.read_rows, use_threads=False)
            return
        with pa.OSFile(str(self.path), "rb") as raw:
            for batch in _ipc_batches(raw):
                for s in range(0, batch.num_rows, self.read_rows):
                    yield batch.slice(s, self.read_rows)

    def vectors(self, batch: Any, start: int) -> np.ndarray:
        """The batch's vectors as float32 (b, d); InputError naming missing or ragged rows (``start``: its first
        row's number in the file)."""
        from isoscope.data.vectors.arrow import _matrix, _value_dtype
        from isoscope.data.vectors.table import as_float32

        arr = batch.column(self.column)
        m = _matrix(arr, f"{self.name}:{self.column}", self.column, start, self.dims or None)  # (b, d)
        self.dims = self.dims or int(m.shape[1])
        return as_float32(m, _value_dtype(arr.type) or "float32")

    def out_schema(self, dims: int) -> Any:
        """The schema with the vector column as ``fixed_size_list<float32>[dims]`` (name, nullability, metadata of
        the field and of the table kept)."""
        import pyarrow as pa

        i = self.schema.get_field_index(self.column)
        old = self.schema.field(i)
        return self.schema.set(i, pa.field(old.name, pa.list_(pa.float32(), dims), old.nullable, old.metadata))

    def mapped(self, batch: Any, Z: np.ndarray, schema: Any) -> Any:
        """``batch`` with its vector column replaced by ``Z`` (b, k) float32, cast to ``schema``."""
        import pyarrow as pa

        values = pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(Z, np.float32).ravel()), Z.shape[1])
        columns = [values if n == self.column else batch.column(n) for n in batch.schema.names]
        return pa.RecordBatch.from_arrays(columns, schema=schema)


THRIFT = {"thrift_string_size_limit": 16 * 2**20, "thrift_container_size_limit": 1_000_000}


def _parquet_layout(path: Path) -> tuple[Any, int, float]:
    """(schema, rows, the widest row group's bytes per row) from the footer, its size checked first."""
    import pyarrow.parquet as pq

    from isoscope.data.limits import current_limits
    from isoscope.data.parquet import check_footer
    from isoscope.data.source import as_source

    streamed = current_limits().replace(max_bytes=1 << 62)  # read a batch at a time: no limit on the file's size
    check_footer(as_source(path, path.name, streamed), path.name)
    pf = pq.ParquetFile(path, schema_depth_limit=64, **THRIFT)
    md, widest = pf.metadata, 1.0
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        sizes = [rg.column(j).total_uncompressed_size for j in range(rg.num_columns)]
        if rg.num_rows < 0 or min(sizes, default=0) < 0:
            raise ValueError("negative sizes in its metadata")
        widest = max(widest, sum(sizes) / max(rg.num_rows, 1))
    return pf.schema_arrow, int(md.num_rows), widest


def _ipc_batches(raw: Any) -> Iterator[Any]:
    """The record batches of an IPC file (by index: one in memory at a time) or stream (in order)."""
    import pyarrow as pa

    head = raw.read(6)
    raw.seek(0)
    if head == b"ARROW1":
        reader = pa.ipc.open_file(raw)
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)
    else:
        yield from pa.ipc.open_stream(raw)


def _ipc_layout(path: Path) -> tuple[Any, int, float]:
    """(schema, rows, bytes per row of the widest batch): the IPC file's batches read one at a time (a stream:
    rows counted in a first pass)."""
    import pyarrow as pa

    from isoscope.paths import check_regular

    check_regular(path)
    with open(path, "rb") as f:
        if f.read(4) == b"FEA1":
            raise ValueError("Feather v1; rewrite it as Feather v2 (pyarrow.feather.write_feather)")
    rows, widest = 0, 1.0
    with pa.OSFile(str(path), "rb") as raw:
        schema = None
        for batch in _ipc_batches(raw):
            schema = batch.schema if schema is None else schema
            rows += batch.num_rows
            widest = max(widest, batch.nbytes / max(batch.num_rows, 1))
        if schema is None:
            raw.seek(0)
            schema = (pa.ipc.open_file(raw) if raw.read(6) == b"ARROW1" else pa.ipc.open_stream(raw)).schema
    return schema, rows, widest


@dataclass
class TableWriter:
    """Record batches appended to a new Parquet or Arrow IPC file (the vector column without dictionary
    encoding or statistics: floats gain nothing from either)."""

    path: Path
    format: str
    schema: Any
    column: str

    def __post_init__(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self.format == "parquet":
            others = [n for n in self.schema.names if n != self.column]
            self.writer = pq.ParquetWriter(
                self.path, self.schema, use_dictionary=others, write_statistics=others or False
            )
        else:
            self.sink = pa.OSFile(str(self.path), "wb")
            self.writer = pa.ipc.new_file(self.sink, self.schema)

    def write(self, batch: Any) -> None:
        self.writer.write_batch(batch)

    def close(self) -> None:
        self.writer.close()
        if self.format != "parquet":
            self.sink.close()
        with open(self.path, "rb+") as f:
            os.fsync(f.fileno())


def read_table_batches(path: Path, fmt: str) -> Iterator[Any]:
    """The batches of a file ``TableWriter`` wrote (a part of a run), in order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if fmt == "parquet":
        yield from pq.ParquetFile(path, buffer_size=PARQUET_BUFFER, pre_buffer=False).iter_batches(
            batch_size=READ_ROWS, use_threads=False
        )
        return
    with pa.OSFile(str(path), "rb") as raw:
        yield from _ipc_batches(raw)
