"""An atlas's ``points.parquet`` (text + metadata, one row per point) read row group by row group, never whole:
the texts under the cursor, the rows of a selection, a search over every text, a column for its colours.

rows = PointsFile.open(path, n)           # footer, metadata and every page header checked, nothing decoded
rows.texts([5, 17])                       # the texts of those rows (each row group they fall in read once)
rows.take(rows_, ["topic"])               # a frame of the rows asked, in their order
rows.search("storm")                      # rows (m,) whose text contains it, ignoring case
for start, values in rows.chunks("topic"): ...   # the column, one row group (a pandas Series) at a time

The build writes ``points.parquet`` in row groups of ``ROW_GROUP_ROWS`` (``isoscope.atlas.inputs``), so a
hover decodes one group of texts (a few MB), and the groups last read stay cached (``CACHE_BYTES``). Search
runs Arrow's ``match_substring`` (``ignore_case``) over each group's text column in turn: pyarrow is already
how Parquet is read here (a kept dependency), and DuckDB is not one; only the matching row numbers are kept.

Bounds, as for any user file (``isoscope.data.parquet``): the footer's size, its counts and every page header
are checked before a byte is decompressed. What one read may decode (a row group) is bounded by
``ISOSCOPE_MAX_PARQUET_BYTES``; the whole file by that or by what ``n`` texts of ``ISOSCOPE_MAX_CHARS``
characters can hold (an atlas of ten million texts is bigger than one user file, a small file that decodes
to gigabytes is still refused). Texts are cut to ``ISOSCOPE_MAX_CHARS`` characters as the corpus's were, and
a text column stored as a dictionary is read as one (each distinct text once).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from isoscope.data.limits import DecodeLimits, MiB
from isoscope.errors import InputError

ROW_GROUP_ROWS = 65_536  # rows per row group of points.parquet (inputs.save_points)
CACHE_BYTES = 32 * MiB  # decoded column chunks kept for the next hover (a row group's texts: a few MB)
BYTES_PER_CHAR = 4  # UTF-8


class PointsFile:
    """``points.parquet`` of ``n`` rows, opened checked; thread-safe (one read at a time)."""

    def __init__(self, path: Path, n: int, *, pf: Any, kinds: dict[str, str], limits: DecodeLimits) -> None:
        md = pf.metadata
        self.path, self.n, self.pf, self.kinds, self.limits = path, n, pf, kinds, limits
        self.offsets = np.cumsum([0] + [md.row_group(g).num_rows for g in range(md.num_row_groups)])  # (G + 1,)
        self.columns = list(kinds)
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[int, str], Any] = OrderedDict()
        self._cached = 0

    @classmethod
    def open(cls, path: Path, n: int, limits: DecodeLimits | None = None) -> PointsFile:
        """Check the file (``InputError`` in one line) and open it; nothing is decoded."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from isoscope.data.limits import current_limits
        from isoscope.data.parquet import MAX_FOOTER, PANDAS_INDEX, _check_metadata, check_footer, column_kind
        from isoscope.data.source import Source

        name = "points.parquet"
        limits = limits or current_limits()
        src = Source(name, path=path)
        check_footer(src, name)
        options = {"thrift_string_size_limit": MAX_FOOTER, "thrift_container_size_limit": 1_000_000}
        try:
            md = pq.ParquetFile(str(path), **options).metadata
            schema = md.schema.to_arrow_schema()
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(f"{name}: not a readable Parquet file ({type(exc).__name__})") from None
        kinds = {f.name: column_kind(f.type) for f in schema if not PANDAS_INDEX.fullmatch(f.name)}
        kinds = {c: k for c, k in kinds.items() if k != "nested"}
        per_row = BYTES_PER_CHAR * limits.max_chars * max(len(schema), 1)
        whole = limits.replace(
            max_rows=max(n, 1),
            max_columns=limits.max_columns + 1,
            max_parquet_bytes=max(limits.max_parquet_bytes, n * per_row),
        )
        _check_metadata(md, len(schema), name, whole)
        _check_groups(src, md, name, whole, group_budget=limits.max_parquet_bytes)
        texts = [c for c, k in kinds.items() if k in ("text", "binary")]
        try:
            pf = pq.ParquetFile(str(path), metadata=md, read_dictionary=texts, **options)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(f"{name}: not a readable Parquet file ({type(exc).__name__})") from None
        return cls(path, n, pf=pf, kinds=kinds, limits=limits)

    # ------------------------------------------------------------ row groups

    def _column(self, g: int, column: str) -> Any:
        """Row group ``g``'s ``column`` as an Arrow array (cached, least recently used out)."""
        import pyarrow as pa

        key = (g, column)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            try:
                arr = self.pf.read_row_group(g, columns=[column], use_threads=False).column(0).combine_chunks()
            except (pa.ArrowException, OSError) as exc:
                raise InputError(f"points.parquet: not a readable Parquet file ({type(exc).__name__})") from None
            self._cache[key] = arr
            self._cached += arr.get_total_buffer_size()
            while self._cached > CACHE_BYTES and len(self._cache) > 1:
                _, old = self._cache.popitem(last=False)
                self._cached -= old.get_total_buffer_size()
            return arr

    def _groups(self, rows: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(group, positions in ``rows`` (k,), rows within the group (k,)) of every group ``rows`` fall in."""
        group = np.searchsorted(self.offsets, rows, side="right") - 1  # (m,)
        order = np.argsort(group, kind="stable")
        cuts = np.flatnonzero(np.diff(group[order])) + 1
        for part in np.split(order, cuts):
            if len(part):
                g = int(group[part[0]])
                yield g, part, rows[part] - self.offsets[g]

    def _check_rows(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, np.int64).reshape(-1)
        if len(rows) and (rows.min() < 0 or rows.max() >= self.n):
            raise IndexError(f"rows outside 0..{self.n - 1}")
        return rows

    def _python(self, arr: Any, column: str) -> list[Any]:
        """Python values of a (small) array: texts cut to the text limit as the corpus's were."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from isoscope.data.parquet import column_texts
        from isoscope.data.text import CellBuilder

        kind = self.kinds[column]
        if pa.types.is_dictionary(arr.type) and len(arr) < len(arr.dictionary):  # a few rows of a big dictionary
            arr = pc.take(arr.dictionary, arr.indices)
        if kind in ("text", "binary"):
            return [None if v is None else str(v) for v in column_texts(arr, kind, CellBuilder(self.limits.max_chars))]
        return arr.to_pylist()

    def values(self, rows: Sequence[int] | np.ndarray, column: str) -> list[Any]:
        """The values of ``column`` at ``rows`` (m,), in their order."""
        rows = self._check_rows(rows)
        out: list[Any] = [None] * len(rows)
        for g, at, local in self._groups(rows):
            got = self._python(self._column(g, column).take(local), column)
            for i, v in zip(at.tolist(), got, strict=True):
                out[i] = v
        return out

    def texts(self, rows: Sequence[int] | np.ndarray) -> list[str]:
        """The texts of ``rows`` (m,), in their order."""
        return [t if t is not None else "" for t in self.values(rows, "text")]

    def take(self, rows: Sequence[int] | np.ndarray, columns: Sequence[str]):
        """A frame of ``columns`` at ``rows`` (m,), in their order."""
        import pandas as pd

        from isoscope.data.text import frame_of

        return frame_of({c: self.values(rows, c) for c in columns}) if columns else pd.DataFrame(index=range(len(rows)))

    def chunks(self, column: str) -> Iterator[tuple[int, Any]]:
        """(first row, pandas Series) of ``column``, one row group at a time (nothing cached)."""
        import pandas as pd

        for g in range(len(self.offsets) - 1):
            with self._lock:
                arr = self.pf.read_row_group(g, columns=[column], use_threads=False).column(0).combine_chunks()
            if self.kinds[column] in ("text", "binary"):
                yield int(self.offsets[g]), pd.Series(self._python(arr, column), dtype=object)
            else:
                yield int(self.offsets[g]), arr.to_pandas()

    def search(self, query: str) -> np.ndarray:
        """Rows (m,) int64, ascending, whose text (cut to the text limit) contains ``query``, ignoring case; a
        plain string, not a pattern. One row group's text column in memory at a time."""
        import pyarrow as pa
        import pyarrow.compute as pc

        found = []
        for g in range(len(self.offsets) - 1):
            with self._lock:
                arr = self.pf.read_row_group(g, columns=["text"], use_threads=False).column(0).combine_chunks()
            values = arr.dictionary if pa.types.is_dictionary(arr.type) else arr
            if pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type):
                values = pc.cast(values, pa.large_string(), safe=False)
            values = pc.utf8_slice_codeunits(pc.utf8_ltrim_whitespace(values), 0, self.limits.max_chars)
            hit = pc.match_substring(values, query, ignore_case=True)
            if pa.types.is_dictionary(arr.type):
                hit = pc.take(hit, arr.indices)
            found.append(self.offsets[g] + np.flatnonzero(hit.to_numpy(zero_copy_only=False) == True))  # noqa: E712
        pa.default_memory_pool().release_unused()  # the groups' buffers back to the system, not kept by the pool
        return np.concatenate(found).astype(np.int64) if found else np.zeros(0, np.int64)


def _check_groups(src: Any, md: Any, name: str, limits: DecodeLimits, *, group_budget: int) -> None:
    """Every page header walked (``isoscope.data.parquet_pages``): the file within ``limits.max_parquet_bytes``
    decoded, each row group (what one read decodes) within ``group_budget``."""
    from isoscope.data.parquet import _over_budget
    from isoscope.data.parquet_pages import MAX_PAGES, PageError, chunk_start, file_bytes, walk_chunk

    total, pages = 0, 0
    size = src.path.stat().st_size
    try:
        with file_bytes(src) as buf:
            for i in range(md.num_row_groups):
                rg, group = md.row_group(i), 0
                for j in range(rg.num_columns):
                    col = rg.column(j)
                    budget = min(limits.max_parquet_bytes - total, group_budget - group)
                    chunk = walk_chunk(
                        buf, chunk_start(col), col.total_compressed_size, size=size, budget=budget, max_pages=MAX_PAGES
                    )
                    pages += chunk.pages
                    total += chunk.decoded_bound
                    group += chunk.decoded_bound
                    if total > limits.max_parquet_bytes or group > group_budget:
                        raise _over_budget(
                            name,
                            limits
                            if total > limits.max_parquet_bytes
                            else limits.replace(max_parquet_bytes=group_budget),
                        )
                    if pages > MAX_PAGES:
                        raise InputError(f"{name}: more than {MAX_PAGES:,} pages; rewrite the file with larger pages")
    except (PageError, OSError) as exc:
        raise InputError(f"{name}: not a readable Parquet file ({exc})") from None
