"""Map stored vectors through a saved adapter without holding them: ``isoscope migrate apply``.

report = apply_adapter("adapter/", "old.npy", "new.npy")                       # a file: .npy, Parquet, Arrow IPC
report = apply_adapter("adapter/", "old.parquet", "new.parquet", column="emb")  # every other column kept
report = apply_adapter("adapter/", "shards/", "mapped/", engine="ray")          # a folder of Parquet shards

The output keeps the input's format, row order and every other column (ids, texts, metadata); the vector column
becomes the adapter's float32 vectors, each row ``adapter.transform`` of the row Isoscope's loader reads
(``isoscope.export.vectors.calibrate_vectors``, ``COMPUTE_ROWS`` rows at a time). Memory is a block of rows
(``isoscope.migrate.streams``), whatever the file's size; ``chunk_rows`` sets how much work is recorded at once.

Resumable. A file is mapped chunk by chunk into a work folder beside the output (``.NAME.isoscope-apply``): a
``.npy`` into one file of the final size, a table into one part file per chunk; each finished chunk is made
durable (fsync) and then recorded in the folder's ledger with its SHA-256, so a rerun of the same job (the same
adapter, input, column and chunk size) maps only the chunks missing, after checking the recorded ones. When every
chunk is there the output is renamed into place (a table's parts are first joined), so the output's name holds
nothing or the whole result: a killed run never leaves a half file under it. A folder of shards is mapped shard by
shard into the output folder, each shard written beside its name and renamed in, recorded in the folder's ledger
(``isoscope-apply.json``); on the Ray engine each shard is a task (the folders on a filesystem every node sees).

The output rules are ``isoscope.data.outputs``': never an input (nor the adapter's folder); an existing output file
is replaced when it is one in the same format, another file only with ``force``; a folder is never removed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.errors import InputError

if TYPE_CHECKING:
    from isoscope.migrate.adapters import Adapter
    from isoscope.migrate.streams import TableFile

log = logging.getLogger(__name__)

ENGINES: tuple[str, ...] = ("local", "ray")
DEFAULT_CHUNK_ROWS = 65_536
COMPUTE_ROWS = 8192  # rows mapped by one adapter.transform call (its float64 temporaries: a few times this x d x 8)
LEDGER = "ledger.json"
SHARDS_LEDGER = "isoscope-apply.json"
LEDGER_FORMAT = "isoscope-apply"
WORK_SUFFIX = ".isoscope-apply"
Progress = Callable[[int, int], None]


@dataclass
class ApplyReport:
    """One run of ``apply_adapter``: what was mapped, how much of it an earlier run had done, how long it took;
    ``to_dict()`` is what ``isoscope migrate apply --json`` prints."""

    out: str
    source: str
    format: str  # npy, parquet, arrow, or shards (a folder of Parquet files)
    column: str | None
    rows: int
    dim_in: int
    dim_out: int
    method: str
    direction: str | None
    units: int  # chunks of a file, shards of a folder
    resumed: int  # of them, done by an earlier run and kept
    engine: str
    seconds: float
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------- shared pieces


def adapter_digest(adapter: Adapter) -> str:
    """SHA-256 of the adapter's class, parameters and arrays: the ledger's name for it."""
    h = hashlib.sha256(f"{type(adapter).__name__}:{adapter.method}".encode())
    for name, arr in sorted(adapter._tensors().items()):
        a = np.ascontiguousarray(arr)
        h.update(f"{name}{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _identity(path: Path) -> list[Any]:
    """What says a file is the one a ledger was written for: its name, size and modification time."""
    st = path.stat()
    return [path.name, st.st_size, st.st_mtime_ns]


def _as_adapter(adapter: Adapter | str | Path) -> Adapter:
    from isoscope.migrate.adapters import Adapter

    if isinstance(adapter, str | Path):
        return Adapter.load(adapter)
    if not isinstance(adapter, Adapter):
        raise InputError(f"apply needs a fitted adapter or its folder; got {type(adapter).__name__}")
    adapter._check_fitted()
    return adapter


def map_block(adapter: Adapter, X: np.ndarray, name: str, start: int) -> np.ndarray:
    """``adapter.transform`` of rows ``X`` (b, d) float32 as float32 (b, k), ``COMPUTE_ROWS`` at a time; a row
    with NaN, inf or no direction (all zeros) is refused naming its row in the file (``start``: X's first)."""
    from isoscope.export.vectors import calibrate_vectors

    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        raise InputError(f"{name}: row {start + int(np.flatnonzero(bad)[0]):,} (counting from 0) holds NaN or infinity")
    zero = ~X.any(axis=1)
    if zero.any():
        raise InputError(
            f"{name}: row {start + int(np.flatnonzero(zero)[0]):,} (counting from 0) is all zeros: it has no "
            "direction, so no adapter maps it"
        )
    out = np.empty((len(X), adapter.n_features_out_), np.float32)  # (b, k)
    for s in range(0, len(X), COMPUTE_ROWS):
        out[s : s + COMPUTE_ROWS] = calibrate_vectors(adapter, X[s : s + COMPUTE_ROWS])
    return out


def _check_dims(adapter: Adapter, dims: int, name: str) -> None:
    if dims != adapter.n_features_in_:
        raise InputError(
            f"{name} holds {dims}-dimensional vectors but {adapter.method} maps {adapter.n_features_in_}-dimensional "
            "ones: give the vectors of the model the adapter reads (the old one for old->new)"
        )


def _read_ledger(path: Path) -> dict[str, Any] | None:
    """A ledger's JSON, None when there is none; InputError for a file that is not one (never removed)."""
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        doc = None
    if not isinstance(doc, dict) or doc.get("format") != LEDGER_FORMAT:
        raise InputError(f"{path} is not an Isoscope apply ledger; move it away, or give another --out")
    return doc


def _write_ledger(path: Path, doc: dict[str, Any]) -> None:
    from isoscope.cache import atomic_write_bytes

    atomic_write_bytes(path, (json.dumps(doc, indent=1) + "\n").encode("utf-8"))


class _Rows:
    """A (done, total) progress over rows, and the running count."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self.done, self.total, self.progress = 0, total, progress
        self.tick(0)

    def tick(self, rows: int) -> None:
        self.done += rows
        if self.progress is not None:
            self.progress(self.done, self.total)


# ---------------------------------------------------------------- one file


def _check_file_out(source: Path, out: Path, fmt: str, force: bool, adapter_dir: Path | None) -> None:
    """The output rules (``isoscope.data.outputs``): never an input, in the input's format, an existing file
    replaced when it is one in that format (another only with ``force``), never a folder."""
    from isoscope.data.outputs import VECTOR_FILES, check_destination, check_inputs
    from isoscope.data.vectors import vector_format

    check_inputs(out, [("--vectors", source), ("--adapter", adapter_dir)])
    if out.is_dir():
        raise InputError(f"--out {out} is a folder; give a file name ending in {source.suffix}")
    try:
        out_fmt = vector_format(out) if out.suffix else None
    except InputError:
        out_fmt = None
    if out_fmt != fmt:
        raise InputError(f"--out {out.name}: write the mapped vectors as {source.suffix} like {source.name}")
    check_destination(out, kind=VECTOR_FILES[fmt], force=force)


def _place(work: Path, name: str, out: Path, fmt: str, force: bool) -> None:
    """The finished file ``work/name`` renamed to ``out`` (its destination checked again first), the work folder
    removed."""
    from isoscope.data.outputs import VECTOR_FILES, check_destination

    check_destination(out, kind=VECTOR_FILES[fmt], force=force)
    os.replace(work / name, out)
    shutil.rmtree(work, ignore_errors=True)


def _work_folder(out: Path, job: dict[str, Any]) -> tuple[Path, dict[str, Any], list[str]]:
    """The work folder beside ``out`` and its ledger: kept when it was made for this ``job`` (a resumed run),
    else made new (an earlier run's folder for another job is replaced, with a warning)."""
    work = out.parent / f".{out.name}{WORK_SUFFIX}"
    warnings: list[str] = []
    if work.exists() or work.is_symlink():
        doc = _read_ledger(work / LEDGER) if work.is_dir() and not work.is_symlink() else None
        if doc is None and (work.is_symlink() or not work.is_dir() or any(work.iterdir())):
            raise InputError(f"{work} is not an Isoscope apply folder; move it away, or give another --out")
        if doc is not None and doc.get("job") == job:
            return work, doc, warnings
        if doc is not None:
            warnings.append(
                f"{work.name}: an unfinished run of another job (adapter, input or chunk size) was discarded"
            )
        shutil.rmtree(work)
    work.mkdir(parents=True)
    doc = {"format": LEDGER_FORMAT, "job": job, "chunks": {}}
    _write_ledger(work / LEDGER, doc)
    return work, doc, warnings


def _apply_flat(adapter, source: Path, out: Path, *, chunk_rows: int, force: bool, progress: Progress | None):
    """A .npy mapped chunk by chunk into one file of the final size in the work folder, then renamed to ``out``."""
    from isoscope.migrate.streams import FlatArray, FlatWriter

    src = FlatArray.open(source)
    _check_dims(adapter, src.dims, src.name)
    if src.rows == 0:
        raise InputError(f"{src.name} holds no rows")
    job = {"adapter": adapter_digest(adapter), "input": _identity(source), "chunk_rows": chunk_rows}
    work, ledger, warnings = _work_folder(out, job)
    writer = FlatWriter(work / "mapped.npy", src.rows, adapter.n_features_out_, resume=True)
    rows = _Rows(src.rows, progress)
    chunks = [(s, min(src.rows, s + chunk_rows)) for s in range(0, src.rows, chunk_rows)]
    resumed = 0
    try:
        for i, (a, b) in enumerate(chunks):
            digest = ledger["chunks"].get(str(i))
            if digest is not None and writer.resumed and hashlib.sha256(writer.read(a, b)).hexdigest() == digest:
                resumed += 1
                rows.tick(b - a)
                continue
            h = hashlib.sha256()
            for s in range(a, b, COMPUTE_ROWS):
                e = min(b, s + COMPUTE_ROWS)
                Z = map_block(adapter, src.read(s, e), src.name, s)  # (e - s, k)
                writer.write(s, Z)
                h.update(Z.tobytes())
                rows.tick(e - s)
            writer.sync()  # the chunk is on disk before the ledger says so
            ledger["chunks"][str(i)] = h.hexdigest()
            _write_ledger(work / LEDGER, ledger)
    finally:
        writer.close()
    _place(work, "mapped.npy", out, "npy", force)
    return src.rows, src.dims, None, len(chunks), resumed, warnings


class _Part:
    """One chunk of a table being written: a new file of the work folder, renamed in when complete."""

    def __init__(self, adapter, table: TableFile, schema: Any, path: Path) -> None:
        from isoscope.migrate.streams import TableWriter

        self.adapter, self.table, self.schema, self.path = adapter, table, schema, path
        self.tmp = path.parent / f".{path.name}.tmp"
        self.writer = TableWriter(self.tmp, table.format, schema, table.column)

    def write(self, batch: Any, start: int) -> None:
        """``batch`` (its first row is row ``start`` of the file) with its vectors mapped."""
        t = self.table
        X = t.vectors(batch, start)  # (b, d) float32
        _check_dims(self.adapter, X.shape[1], t.name)
        self.writer.write(t.mapped(batch, map_block(self.adapter, X, f"{t.name}:{t.column}", start), self.schema))

    def close(self) -> None:
        self.writer.close()  # fsynced
        os.replace(self.tmp, self.path)

    def discard(self) -> None:
        try:
            self.writer.close()
        finally:
            self.tmp.unlink(missing_ok=True)


def _pieces(batches, chunk_rows: int):
    """(chunk index, first row, a slice of a batch) in row order: each batch cut where a chunk ends."""
    pos = 0
    for batch in batches:
        s = 0
        while s < batch.num_rows:
            chunk = (pos + s) // chunk_rows
            take = min(batch.num_rows - s, (chunk + 1) * chunk_rows - (pos + s))
            yield chunk, pos + s, batch.slice(s, take)
            s += take
        pos += batch.num_rows


def _apply_table(adapter, source: Path, out: Path, fmt: str, *, column, chunk_rows, force, progress):
    """A Parquet or IPC file mapped chunk by chunk into part files of the work folder, then joined into ``out``."""
    from isoscope.cache import file_sha256
    from isoscope.migrate.streams import TableFile, TableWriter, read_table_batches

    table = TableFile.open(source, fmt, column)
    if table.dims:
        _check_dims(adapter, table.dims, table.name)
    if table.rows == 0:
        raise InputError(f"{table.name} holds no rows")
    schema = table.out_schema(adapter.n_features_out_)
    job = {"adapter": adapter_digest(adapter), "input": _identity(source), "column": table.column}
    job["chunk_rows"] = chunk_rows
    work, ledger, warnings = _work_folder(out, job)
    rows, resumed, current, part = _Rows(table.rows, progress), 0, -1, None

    def done(i: int) -> bool:
        path, digest = work / f"part-{i:06d}.{fmt}", ledger["chunks"].get(str(i))
        return digest is not None and path.is_file() and file_sha256(path) == digest

    def finish() -> None:
        if part is not None:
            part.close()
            ledger["chunks"][str(current)] = file_sha256(part.path)
            _write_ledger(work / LEDGER, ledger)

    try:
        for i, start, piece in _pieces(table.batches(), chunk_rows):
            if i != current:
                finish()
                current, part = i, None
                if done(i):
                    resumed += 1
                else:
                    part = _Part(adapter, table, schema, work / f"part-{i:06d}.{fmt}")
            if part is not None:
                part.write(piece, start)
            rows.tick(piece.num_rows)
        finish()
    except BaseException:
        if part is not None:
            part.discard()
        raise
    joined = TableWriter(work / f"joined.{fmt}", fmt, schema, table.column)
    try:
        for i in range(current + 1):
            for batch in read_table_batches(work / f"part-{i:06d}.{fmt}", fmt):
                joined.write(batch)
    finally:
        joined.close()
    _place(work, f"joined.{fmt}", out, fmt, force)
    return table.rows, table.dims, table.column, current + 1, resumed, warnings


# ---------------------------------------------------------------- a folder of shards


def map_shard(adapter: Adapter, source: str, out: str, column: str | None) -> int:
    """Map one Parquet shard ``source`` into a new file ``out`` (written beside it, renamed in); returns its rows.
    A Ray task on the ray engine, called here on the local one."""
    from isoscope.migrate.streams import TableFile

    table = TableFile.open(Path(source), "parquet", column)
    if table.dims:
        _check_dims(adapter, table.dims, table.name)
    part, start = _Part(adapter, table, table.out_schema(adapter.n_features_out_), Path(out)), 0
    try:
        for batch in table.batches():
            part.write(batch, start)
            start += batch.num_rows
    except BaseException:
        part.discard()
        raise
    part.close()
    return table.rows


def _check_folder_out(source: Path, out: Path) -> None:
    src, dst = source.resolve(), out.resolve()
    if src == dst or src in dst.parents or dst in src.parents:
        raise InputError(f"--out {out} overlaps the input folder {source}; give a folder outside it")
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; give a folder for the mapped shards")


def _apply_shards(adapter, source: Path, out: Path, *, column, force, engine, progress, ray_address):
    from isoscope.cache import file_sha256
    from isoscope.data.sharded import _shard_files
    from isoscope.migrate.streams import TableFile

    _check_folder_out(source, out)
    files = _shard_files(source, source.name)
    if not files:
        raise InputError(f"{source.name}: no .parquet files in the folder")
    tables = [TableFile.open(f, "parquet", column) for f in files]  # every footer and schema, before any work
    for t in tables:
        if t.column != tables[0].column:
            raise InputError(f"{t.name}: its vector column is '{t.column}', {tables[0].name}'s '{tables[0].column}'")
        if t.dims:
            _check_dims(adapter, t.dims, t.name)
    job = {"adapter": adapter_digest(adapter), "column": tables[0].column}
    out.mkdir(parents=True, exist_ok=True)
    ledger = _read_ledger(out / SHARDS_LEDGER)
    if ledger is None:
        if any(out.iterdir()):
            raise InputError(f"--out {out} is a folder holding other files; give a new or empty folder")
        ledger = {"format": LEDGER_FORMAT, "job": job, "shards": {}}
    elif ledger.get("job") != job:
        if not force:
            raise InputError(f"{out} holds the output of another adapter or column; give a new folder, or --force")
        ledger = {"format": LEDGER_FORMAT, "job": job, "shards": {}}
    _write_ledger(out / SHARDS_LEDGER, ledger)
    rows = _Rows(sum(t.rows for t in tables), progress)
    todo = []
    for f, t in zip(files, tables, strict=True):
        entry = ledger["shards"].get(f.name)
        target = out / f.name
        if entry and entry.get("input") == _identity(f) and target.is_file() and file_sha256(target) == entry["sha256"]:
            rows.tick(t.rows)
        else:
            todo.append((f, t))

    def record(f: Path, n: int) -> None:
        ledger["shards"][f.name] = {"input": _identity(f), "rows": n, "sha256": file_sha256(out / f.name)}
        _write_ledger(out / SHARDS_LEDGER, ledger)
        rows.tick(n)

    if engine == "ray" and todo:
        _run_on_ray(adapter, todo, out, tables[0].column, record, ray_address)
    else:
        for f, _ in todo:
            record(f, map_shard(adapter, str(f), str(out / f.name), tables[0].column))
    return rows.total, adapter.n_features_in_, tables[0].column, len(files), len(files) - len(todo), []


def _run_on_ray(adapter, todo, out: Path, column: str, record, address: str) -> None:
    """Each shard a Ray task (one CPU, retried when a worker dies); recorded as each one finishes."""
    import ray

    from isoscope.atlas.distributed import ray_session

    with ray_session(address):
        task, ref = ray.remote(num_cpus=1, max_retries=3)(map_shard), ray.put(adapter)
        pending = {task.remote(ref, str(f), str(out / f.name), column): f for f, _ in todo}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            f = pending.pop(ready[0])
            record(f, ray.get(ready[0]))


# ---------------------------------------------------------------- the one call


def apply_adapter(
    adapter: Adapter | str | Path,
    source: str | Path,
    out: str | Path,
    *,
    column: str | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    engine: str = "local",
    force: bool = False,
    progress: Progress | None = None,
    ray_address: str = "local",
) -> ApplyReport:
    """Map the vectors of ``source`` (a ``.npy``, Parquet or Arrow IPC file, its ``column``; or a folder of Parquet
    shards) through ``adapter`` (fitted, or a folder it was saved or exported to) into ``out``, in the same
    format (see the module doc). ``chunk_rows``: rows recorded at once (the unit a rerun skips); ``engine``:
    ``local`` or ``ray`` (a shard folder's shards as Ray tasks; ``ray_address`` as the atlas's); ``force``:
    replace an existing output file, or a shard folder another adapter wrote; ``progress(done, total)`` rows."""
    from isoscope.data.limits import check_count

    started = time.perf_counter()
    adapter_path = adapter if isinstance(adapter, str | Path) else None
    adapter = _as_adapter(adapter)
    check_count("chunk_rows", chunk_rows, "--chunk-rows")
    if engine not in ENGINES:
        raise InputError(f"unknown engine '{engine!s:.40}'; choose one of {', '.join(ENGINES)}")
    source, out = Path(source).expanduser(), Path(out).expanduser()
    if not source.exists():
        raise InputError(f"file not found: {source}")
    if source.is_dir():
        done = _apply_shards(
            adapter, source, out, column=column, force=force, engine=engine, progress=progress, ray_address=ray_address
        )
        fmt = "shards"
    else:
        from isoscope.data.vectors import vector_format
        from isoscope.migrate.streams import STREAM_FORMATS

        if engine == "ray":
            raise InputError("--engine ray maps a folder of Parquet shards (--shards); a file is mapped here")
        fmt = vector_format(source)
        if fmt not in STREAM_FORMATS:
            raise InputError(f"{source.name}: apply maps .npy, .parquet and .feather/.arrow files; not {fmt}")
        _check_file_out(source, out, fmt, force, Path(adapter_path) if adapter_path is not None else None)
        if fmt == "npy":
            if column is not None:
                raise InputError(f"{source.name}: a .npy file has no columns; give the file alone (not FILE:{column})")
            done = _apply_flat(adapter, source, out, chunk_rows=chunk_rows, force=force, progress=progress)
        else:
            done = _apply_table(
                adapter, source, out, fmt, column=column, chunk_rows=chunk_rows, force=force, progress=progress
            )
    n, dim_in, column_used, units, resumed, warnings = done
    meta = getattr(adapter, "metadata_", {}) or {}
    return ApplyReport(
        out=str(out),
        source=str(source),
        format=fmt,
        column=column_used,
        rows=int(n),
        dim_in=int(dim_in),
        dim_out=int(adapter.n_features_out_),
        method=adapter.method,
        direction=meta.get("direction"),
        units=units,
        resumed=resumed,
        engine=engine,
        seconds=time.perf_counter() - started,
        warnings=warnings,
    )
