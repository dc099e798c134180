"""A corpus spread over Parquet files (the shards of a dataset), read a batch at a time, never whole.

shards = ParquetShards.open("corpus/")                        # every *.parquet in the folder, in name order
shards = ParquetShards.open("corpus/", vector_column="emb")   # texts with their vectors
scan = shards.scan()                                          # rows kept, digest, repeats, warnings (one pass)
for batch in shards.batches(vectors=True):                    # Batch(texts, meta, vectors (b, d) float32)
    ...
column = ParquetColumn("atlas/points.parquet", "text")        # a column Isoscope wrote: len, rows(a, b), batches()

Each file is checked as a single Parquet file is (``isoscope.data.vectors.arrow.parquet_source``: its footer, row
groups, rows and the bytes its columns decode to, against the decode limits, before a row is read), so memory is
bounded by one batch of one file whatever the corpus's size; the byte limits apply per file, not to the corpus, and rows are not limited. Every
file must have the same columns. The text column is found as in a single table (``text``, ``sentence``, ...) or
named; texts are stripped and cut to the text limit like any corpus, rows with an empty text are dropped (their
vectors too) and counted; the other columns (numbers, texts) are metadata, nested ones ignored with a warning.
``scan`` reads the text column (and the vectors, for their checks) once: the rows kept, the texts' digest (the
rule of ``isoscope.cache.text_digest``, so a folder of shards and the same texts as a list key alike) and how many
texts repeat an earlier one (by a 64-bit hash of each text, counted bucket by bucket on disk: ``DistinctCount``,
so no process holds a value per row).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from isoscope.data.limits import DecodeLimits, current_limits
from isoscope.data.parquet import PANDAS_INDEX, column_kind
from isoscope.data.source import as_source
from isoscope.data.tables import find_text_column
from isoscope.data.text import CellBuilder, ClippedText
from isoscope.errors import InputError

__all__ = ["Batch", "ParquetShards", "ShardScan", "is_shard_folder"]
ROWS_PER_FILE = 1 << 40


def is_shard_folder(path: str | Path) -> bool:
    """A folder holding ``.parquet`` files (and not a Hugging Face ``datasets`` folder)."""
    p = Path(path)
    return p.is_dir() and not (p / "dataset_info.json").exists() and any(p.glob("*.parquet"))


@dataclass
class Batch:
    """Rows of one file, empty texts dropped: texts (b,), metadata columns (b rows; None when there are none),
    vectors (b, d) float32 when asked for."""

    texts: list[str]
    meta: pd.DataFrame | None
    vectors: np.ndarray | None = None


class DistinctCount:
    """How many distinct values (uint64 hashes) were added, in memory bounded by a batch and ``1 / BUCKETS`` of them:
    each batch's values go to ``BUCKETS`` files of a temporary folder by their top bits, each counted on its own."""

    BUCKETS = 256

    def __init__(self) -> None:
        import tempfile

        self._dir = tempfile.TemporaryDirectory(prefix="isoscope-distinct-")
        self._used: set[int] = set()

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values, np.uint64)
        bucket = (values >> np.uint64(56)).astype(np.int64) * self.BUCKETS >> 8  # (m,) the top bits
        order = np.argsort(bucket, kind="stable")
        edges = np.searchsorted(bucket[order], np.arange(self.BUCKETS + 1))
        for b in np.flatnonzero(np.diff(edges)).tolist():
            with open(Path(self._dir.name) / f"{b}.u64", "ab") as f:
                f.write(values[order[edges[b] : edges[b + 1]]].tobytes())
            self._used.add(b)

    def count(self) -> int:
        """The distinct values added (the folder goes with it)."""
        try:
            return sum(
                len(np.unique(np.fromfile(Path(self._dir.name) / f"{b}.u64", np.uint64))) for b in sorted(self._used)
            )
        finally:
            self._dir.cleanup()


@dataclass
class ShardScan:
    """What one pass over the shards found: ``n`` rows kept, their texts' digest, repeated texts, warnings."""

    n: int
    digest: str
    repeats: int
    dims: int | None
    warnings: list[str] = field(default_factory=list)


@dataclass
class ParquetShards:
    """The shards of a corpus (see the module doc). Build with ``open``."""

    name: str
    files: list[Path]
    text: str
    vector: str | None
    meta: list[str]
    kinds: dict[str, str]  # text/binary/plain of the text and metadata columns
    limits: DecodeLimits
    warnings: list[str]
    sources: list[Any] = field(default_factory=list, repr=False)  # each file's checked ArrowSource
    _scan: ShardScan | None = None

    @classmethod
    def open(
        cls,
        folder: str | Path,
        *,
        text_column: str | None = None,
        vector_column: str | None = None,
        limits: DecodeLimits | None = None,
    ) -> ParquetShards:
        folder = Path(folder)
        name = folder.name or str(folder)
        if not folder.is_dir():
            raise InputError(f"{name}: not a folder of Parquet files")
        files = _shard_files(folder, name)
        if not files:
            raise InputError(f"{name}: no .parquet files in the folder")
        # each file is bounded by the bytes it decodes to; its rows are read a batch at a time, so no row limit
        limits = (limits or current_limits()).replace(max_rows=ROWS_PER_FILE)
        sources = [_checked(f, limits) for f in files]  # footer, row groups, pages: once per file
        schema = sources[0].schema
        kinds = {f.name: column_kind(f.type) for f in schema if not PANDAS_INDEX.fullmatch(f.name)}
        for f, src in zip(files[1:], sources[1:], strict=True):
            other = src.schema
            if [g.name for g in other if not PANDAS_INDEX.fullmatch(g.name)] != list(kinds):
                raise InputError(f"{f.name}: its columns differ from {files[0].name}'s; every shard needs the same")
        if vector_column is not None:
            from isoscope.data.vectors.arrow import pick_columns

            pick_columns(schema, files[0].name, column=vector_column, text_column=text_column)  # names what is wrong
        text = _text_column(kinds, files[0].name, text_column, vector_column)
        nested = [c for c, k in kinds.items() if k == "nested" and c != vector_column]
        warnings = [f"{name}: column '{c}' holds nested values (lists, structs, maps); ignored" for c in nested]
        meta = [c for c, k in kinds.items() if k != "nested" and c not in (text, vector_column)]
        keep = {c: kinds[c] for c in [text, *meta]}
        return cls(name, files, text, vector_column, meta, keep, limits, warnings, sources)

    @property
    def dims(self) -> int | None:
        return self.scan().dims

    def batches(self, *, vectors: bool = False, meta: bool = True, texts: bool = True) -> Iterator[Batch]:
        """Every file's rows in order, a batch at a time (empty texts dropped, with their vectors)."""
        from isoscope.data.vectors.arrow import _matrix
        from isoscope.data.vectors.table import as_float32

        cell = CellBuilder(self.limits.max_chars)
        want_vectors = vectors and self.vector is not None
        columns = [self.text, *(self.meta if meta else []), *([self.vector] if want_vectors else [])]
        text_cols = [c for c in [self.text, *self.meta] if self.kinds[c] in ("text", "binary") and c in columns]
        for path, src in zip(self.files, self.sources, strict=True):
            start = 0
            try:
                for rb in src.batches(columns, text_cols, src.batch_rows):
                    values = _texts(rb.column(self.text), self.kinds[self.text], cell)
                    keep = np.fromiter((bool(t) for t in values), bool, len(values))  # (b,)
                    out = Batch([t for t, k in zip(values, keep, strict=True) if k] if texts else [], None)
                    if meta and self.meta:
                        frame = {}
                        for c in self.meta:
                            arr = rb.column(c)
                            col = _texts(arr, self.kinds[c], cell) if c in text_cols else arr.to_pylist()
                            frame[c] = [v for v, k in zip(col, keep, strict=True) if k]
                        out.meta = pd.DataFrame(frame)
                    if want_vectors:
                        label = f"{path.name}:{self.vector}"
                        m = _matrix(rb.column(self.vector), label, self.vector, start, None)  # (b, d)
                        out.vectors = as_float32(m, "float32")[keep]
                        if not np.isfinite(out.vectors).all():
                            bad = start + int(np.flatnonzero(~np.isfinite(out.vectors).all(axis=1))[0])
                            raise InputError(f"{label}: row {bad} (counting from 0) holds NaN or infinity")
                    start += rb.num_rows
                    yield out
            except InputError:
                raise
            except Exception as exc:  # pyarrow's errors on a damaged file
                import pyarrow as pa

                if isinstance(exc, pa.ArrowException | OSError | UnicodeDecodeError):
                    raise InputError(f"{path.name}: not a readable Parquet file ({type(exc).__name__})") from None
                raise

    def scan(self) -> ShardScan:
        """One pass over the texts (and the vectors): cached on the object."""
        if self._scan is not None:
            return self._scan
        import hashlib

        h = hashlib.sha256()
        hashes = DistinctCount()
        n = cut = 0
        dims = None
        for batch in self.batches(vectors=self.vector is not None, meta=False):
            for t in batch.texts:
                b = t.encode("utf-8", "surrogatepass")
                h.update(len(b).to_bytes(8, "little"))
                h.update(b)
                cut += isinstance(t, ClippedText)
            hashes.add(pd.util.hash_array(np.asarray(batch.texts, dtype=object)))
            n += len(batch.texts)
            if batch.vectors is not None:
                d = batch.vectors.shape[1]
                if dims is not None and d != dims:
                    raise InputError(
                        f"{self.name}: ragged vectors: {d} values after {dims}; every vector needs the same"
                    )
                dims = d
        total = sum(src.rows for src in self.sources)
        dropped = total - n
        if n == 0:
            raise InputError(f"{self.name}: no texts in the shards")
        warnings = list(self.warnings)
        if dropped:
            warnings.append(f"{self.name}: dropped {dropped:,} row(s) with empty text")
        if cut:
            warnings.append(
                f"{self.name}: {cut:,} text(s) longer than {self.limits.max_chars} characters were truncated"
            )
        repeats = n - hashes.count()
        self._scan = ShardScan(n, h.hexdigest(), repeats, dims, warnings)
        return self._scan


def _shard_files(folder: Path, name: str) -> list[Path]:
    """Every ``*.parquet`` entry of the folder (``isoscope.paths.regular_files``): one that is a FIFO, a device, a
    link loop or a dangling link stops the build naming it (skipping it would lose its rows without a word)."""
    from isoscope.paths import NotRegularFile, regular_files

    try:
        return regular_files(folder, "*.parquet")
    except NotRegularFile as exc:
        shard = Path(exc.filename).name
        raise InputError(f"{name}/{shard} is a {exc.kind}, not a regular file: every shard must be readable") from None
    except OSError as exc:  # a dangling link, a file removed while listed, no permission
        shard = Path(exc.filename or "?").name
        raise InputError(f"{name}/{shard} cannot be read ({exc.strerror}): every shard must be readable") from None


def _checked(path: Path, limits: DecodeLimits) -> Any:
    """The file as a checked ``ArrowSource`` (``parquet_source``: footer, row groups, pages, before any row)."""
    from isoscope.data.vectors.arrow import parquet_source

    return parquet_source(as_source(path, path.name, limits), path.name, column=None, limits=limits)


def _text_column(kinds: dict[str, str], name: str, text_column: str | None, vector_column: str | None) -> str:
    texts = [c for c, k in kinds.items() if k in ("text", "binary") and c != vector_column]
    if text_column is not None:
        if text_column not in kinds:
            raise InputError(f"{name}: no column '{text_column}'; columns are {', '.join(kinds)}"[:300])
        if kinds[text_column] not in ("text", "binary"):
            raise InputError(f"{name}: column '{text_column}' does not hold texts")
        return text_column
    if (found := find_text_column(texts)) is not None:
        return found
    raise InputError(
        f"{name}: no text column; name it 'text' or give --text-column; columns are {', '.join(kinds)}"[:300]
    )


def _texts(arr: Any, kind: str, cell: CellBuilder) -> list[str]:
    """A text column's values, stripped and cut to the text limit (missing values: '')."""
    from isoscope.data.vectors.arrow import _clean, _text_values

    return [_clean(v) for v in _text_values(arr, kind, cell)]


@dataclass(frozen=True)
class ParquetColumn:
    """The texts of one column of a Parquet file Isoscope wrote itself (an atlas's ``points.parquet``, checked by its
    folder's ledger), read a row group at a time: the texts of a corpus too big to hold."""

    path: Path
    column: str = "text"

    def __len__(self) -> int:
        import pyarrow.parquet as pq

        return pq.ParquetFile(self.path).metadata.num_rows

    def arrays(self) -> Iterator[Any]:
        """The column a row group at a time, as Arrow arrays."""
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(self.path).iter_batches(columns=[self.column], use_threads=False):
            yield batch.column(0)

    def batches(self) -> Iterator[list[str]]:
        """The texts a row group at a time."""
        for arr in self.arrays():
            yield arr.to_pylist()

    def __iter__(self) -> Iterator[str]:
        for batch in self.batches():
            yield from batch

    def rows(self, start: int, stop: int) -> list[str]:
        """The texts of rows [start, stop), reading only the row groups that hold them."""
        import pyarrow.parquet as pq

        f = pq.ParquetFile(self.path)
        md, groups, first, row = f.metadata, [], None, 0
        for g in range(md.num_row_groups):
            size = md.row_group(g).num_rows
            if row < stop and row + size > start:
                groups.append(g)
                first = row if first is None else first
            row += size
        if not groups:
            return []
        column = f.read_row_groups(groups, columns=[self.column], use_threads=False).column(0)
        return column.slice(start - first, stop - start).to_pylist()
