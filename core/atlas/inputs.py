"""What an atlas build reads, checked before any work, and the ``texts`` stage that writes it into
``points.parquet``.

given = read_input(texts, meta, vectors, engine="local")   # BuildInput: texts in memory, or Parquet shards
save_points(folder, given)                                 # points.parquet, a batch at a time

A build reads texts in memory (with their metadata and maybe their vectors) or ``ParquetShards``
(``isoscope.data.sharded``: texts, metadata and maybe vectors, read a batch at a time, never held whole).
``points.parquet`` holds the text and the metadata columns in row groups of ``ROW_GROUP_ROWS`` rows (a hover
reads one: ``isoscope.atlas.points``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isoscope.atlas.points import ROW_GROUP_ROWS
from isoscope.cache import text_digest
from isoscope.data.sharded import ParquetShards
from isoscope.errors import InputError

MAX_ATLAS_ROWS = 1_000_000  # the one-machine engine's limit (and its memory: isoscope.atlas.costs.check_fits)


@dataclass
class BuildInput:
    """What a build reads: texts in memory (with metadata and maybe vectors), or Parquet shards (``isoscope.data.
    sharded.ParquetShards``: texts, metadata and maybe vectors, read a batch at a time)."""

    n: int
    digest: str
    repeats: int
    texts: list[str] | None = None
    meta: pd.DataFrame | None = None
    vectors: np.ndarray | None = None
    shards: ParquetShards | None = None

    @property
    def precomputed(self) -> bool:
        return self.vectors is not None or (self.shards is not None and self.shards.vector is not None)


def read_input(texts, meta: pd.DataFrame | None, vectors: np.ndarray | None, *, engine: str) -> BuildInput:
    """What a build of ``texts`` (a sequence of texts, or ``ParquetShards``) reads, checked: at least 4 rows (at most
    ``MAX_ATLAS_ROWS`` on the one-machine ``engine``), no empty text, metadata and vectors of one row a text."""
    if isinstance(texts, ParquetShards):
        if meta is not None or vectors is not None:
            raise ValueError("Parquet shards carry their own metadata and vectors")
        scan = texts.scan()
        _check_rows(scan.n, engine)
        return BuildInput(scan.n, scan.digest, scan.repeats, shards=texts)
    texts = list(texts)
    vectors = None if vectors is None else np.asarray(vectors, np.float32)
    meta = _check_input(texts, meta, vectors, engine)
    return BuildInput(len(texts), text_digest(texts), len(texts) - len(set(texts)), texts, meta, vectors)


def repeat_warning(repeats: int) -> str | None:
    if repeats:
        return f"{repeats:,} text(s) repeat an earlier one; kept (repeated texts share one position)"
    return None


def _check_rows(n: int, engine: str) -> None:
    if n < 4:
        raise InputError(f"an atlas needs at least 4 texts, got {n}")
    if n > MAX_ATLAS_ROWS and engine == "local":
        raise InputError(
            f"{n:,} texts is over the one-machine atlas limit of {MAX_ATLAS_ROWS:,}; sample the corpus or use the ray engine"
        )


def _check_input(
    texts: list[str], meta: pd.DataFrame | None, vectors: np.ndarray | None, engine: str = "local"
) -> pd.DataFrame:
    n = len(texts)
    _check_rows(n, engine)
    if any(not t.strip() for t in texts):
        raise InputError("some texts are empty; drop empty rows first (load_corpus does)")
    meta = meta if meta is not None else pd.DataFrame(index=range(n))
    if len(meta) != n:
        raise ValueError(f"metadata has {len(meta)} rows for {n} texts")
    if vectors is not None and (vectors.ndim != 2 or len(vectors) != n):
        raise InputError(f"vectors must be ({n}, d) for {n} texts, got shape {vectors.shape}")
    return meta


def duplicate_warning(texts: Sequence[str]) -> str | None:
    """One line when some texts occur more than once (they are kept: each is a point on the same spot)."""
    return repeat_warning(len(texts) - len(set(texts)))


def _points_frame(texts: Sequence[str], meta: pd.DataFrame | None) -> pd.DataFrame:
    """The rows of ``points.parquet``: ``text`` first, then the metadata as text or numbers only (nothing that
    needs pickling; a metadata column named ``text`` becomes ``text_meta``)."""
    frame = (meta if meta is not None else pd.DataFrame(index=range(len(texts)))).reset_index(drop=True).copy()
    frame.columns = [str(c) for c in frame.columns]
    for c in frame.columns:
        if frame[c].dtype == object:
            frame[c] = frame[c].map(lambda v: None if v is None else str(v))
    frame.insert(0, "text", [str(t) for t in texts])
    if "text" in frame.columns[1:]:
        frame = frame.rename(columns={frame.columns[1 + list(frame.columns[1:]).index("text")]: "text_meta"})
    return frame


def save_points(out: Path, given: BuildInput) -> None:
    """``points.parquet`` in row groups of ``ROW_GROUP_ROWS`` (a hover reads one: ``atlas.points``), written under a
    temporary name and renamed; from shards, a batch at a time (never the whole corpus in memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = out / "points.parquet"
    tmp = path.with_name(path.name + ".partial")
    writer = None
    pending: list[pa.Table] = []
    rows = 0

    def flush(final: bool) -> None:
        nonlocal pending, rows
        while pending and (rows >= ROW_GROUP_ROWS or final):
            table = pa.concat_tables(pending)
            head, rest = table.slice(0, ROW_GROUP_ROWS), table.slice(ROW_GROUP_ROWS)
            writer.write_table(head, row_group_size=ROW_GROUP_ROWS)
            pending, rows = ([rest] if rest.num_rows else []), rest.num_rows

    batches = (
        [(given.texts, given.meta)]
        if given.shards is None
        else ((b.texts, b.meta) for b in given.shards.batches(vectors=False))
    )
    try:
        for texts, meta in batches:
            table = pa.Table.from_pandas(_points_frame(texts, meta), preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            elif table.schema != writer.schema:  # a shard whose column came out another type (e.g. all missing)
                table = table.cast(writer.schema)
            pending.append(table)
            rows += table.num_rows
            flush(final=False)
        flush(final=True)
        writer.close()
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def distinct_rows(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """(the distinct texts in order of first appearance, (n,) int64: each text's row among them)."""
    first: dict[str, int] = {}
    rows = np.fromiter((first.setdefault(t, len(first)) for t in texts), np.int64, len(texts))  # (n,)
    return list(first), rows
