"""The whole-corpus atlas: texts -> embeddings -> kNN graph -> 2-D layout -> density, clusters, labels,
for the raw space and a calibrated one, stage by stage into a folder, resumable, checked and cached.

run = build_atlas(encoder, corpus, "atlas-dir", AtlasConfig(calibrate="whitening"), progress=fn)
atlas = load_atlas("atlas-dir")     # texts, metadata, per-point extras, per-space layouts and clusters

Stages (``STAGES``), each writing its files atomically (temporary file + rename) and recording them in the
folder's ledger (``isoscope.atlas.folder``: size and SHA-256 of what it wrote and of what it read), so a
rerun skips a stage whose files are intact and were built from its inputs as they are now, and rebuilds a
missing, damaged or outdated one (and, through their inputs, the stages after it); ``progress(stage, done,
total)`` reports each stage (``wait`` while another build of the same folder holds its lock):
- ``texts``: ``points.parquet`` (text + metadata columns), in row groups of ``ROW_GROUP_ROWS`` rows, written a
  batch at a time from ``ParquetShards`` (``isoscope.data.sharded``: a corpus no process holds); every later stage
  that reads texts (embedding from shards, labels, lengths) reads them from this file a row group at a time.
- ``embed``: ``vectors.npy`` float32 (n, d) through ``isoscope.encode.chunked.embed_to_npy`` (chunked into a
  memory map, itself resumable chunk by chunk).
- ``calibrate``: a calibrator fitted on a seeded sample of ``fit_rows`` rows (``cal/calibrator/``), then
  applied to every row in chunks (``cal/vectors.npy``).
- per space (``raw``, ``cal``): ``knn_ids.npy`` int32 (n, k) / ``knn_dist.npy`` (``isoscope.atlas.graph``; not
  built for a raw-only PCA map, which needs no graph),
  ``xy.npy`` float32 (n, 2) (``isoscope.atlas.layout``: above ``landmarks`` rows, UMAP on that many and the
  rest placed from the graph; from ``PARALLEL_LAYOUT_ROWS`` rows the two spaces' seeded, single-core UMAP
  layouts run side by side in worker processes, ``isoscope.atlas.workers``), then ``density.npy``,
  ``cluster.npy``, ``grid.npy`` and ``clusters.json`` (the clusters at three levels, labelled by
  ``isoscope.atlas.labels``). Both spaces' vectors and graphs come before either layout.
- ``extras``: ``norm.npy`` (raw L2 norm), ``length.npy`` (characters), ``overlap.npy`` (Jaccard of the raw
  and calibrated neighbour lists).
- ``index``: per space, the points in Morton order (``isoscope.atlas.spatial.INDEX_FILES``), which the
  server memory-maps (a folder built before this stage is served from an index built in memory).
- ``tiles``: per space, levels 0 .. ``isoscope.atlas.pyramid.TOP_LEVEL`` of the tile pyramid in the Atlas
  page's default style (``{space}/tiles/{z}/{x}-{y}.png``), what a fresh server's first view shows: served
  from the folder once checked against the ledger (a folder built before this stage renders them on demand).
``manifest.json`` records what the folder was built from (texts digest, model, settings); a folder built
from something else is refused rather than mixed. One build per folder at a time (``folder.build_lock``).
Memory: the vectors are memory-mapped and read in chunks; the largest resident pieces at 1M x 384 are
NN-descent's unit copy of the vectors (1.5 GiB) with its heaps, and UMAP's graph in each layout worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from isoscope.atlas import density as dens
from isoscope.atlas.distributed import map_rows, shards
from isoscope.atlas.folder import (
    MANIFEST,
    SPACES,
    Atlas,
    AtlasSpace,
    Ledger,
    build_lock,
    is_complete,
    load_atlas,
    needs_graph,
    read_clusters,
)
from isoscope.atlas.graph import knn_graph_chunked
from isoscope.atlas.labels import TermTally
from isoscope.atlas.layout import LANDMARKS, check_method, layout
from isoscope.atlas.points import ROW_GROUP_ROWS
from isoscope.atlas.pyramid import TOP_LEVEL, render_levels, stage_files, write_renderer
from isoscope.atlas.spatial import INDEX_FILES, World, write_index
from isoscope.atlas.workers import Job, run_side_by_side
from isoscope.cache import NpyBlocks, PartialNpy, atomic_save_npy, atomic_write_bytes, text_digest
from isoscope.data.jsonfile import read_json
from isoscope.data.limits import check_count
from isoscope.data.sharded import ParquetColumn, ParquetShards
from isoscope.data.vectors.table import vectors_digest
from isoscope.encode.pooling import PoolingSpec, resolve_pooling
from isoscope.errors import InputError
from isoscope.neighbours.overlap import jaccard_tables
from isoscope.sampling import sample_indices

__all__ = [
    "SPACES",
    "STAGES",
    "Atlas",
    "AtlasConfig",
    "AtlasRun",
    "AtlasSpace",
    "build_atlas",
    "is_complete",
    "load_atlas",
    "planned_stages",
]
log = logging.getLogger(__name__)

FORMAT = "isoscope-atlas"
FORMAT_VERSION = 2  # 2: the ledger, cluster levels
STAGES: tuple[str, ...] = (
    "texts",
    "embed",
    "raw_knn",
    "calibrate",
    "cal_knn",
    "raw_layout",
    "cal_layout",
    "raw_clusters",
    "cal_clusters",
    "extras",
    "index",
    "tiles",
)

MAX_ATLAS_ROWS = 1_000_000  # the one-machine engine's limit (and its memory: isoscope.atlas.costs.check_fits)
ENGINES: tuple[str, ...] = ("local", "ray")
StageProgress = Callable[[str, int, int], None]  # (stage, done, total)
CHUNK_ROWS = 65_536
CENTRE_SAMPLE = 200_000  # the rows whose median places each cluster's label (every row below that)
PARALLEL_LAYOUT_ROWS = 50_000  # from here the two spaces' UMAP layouts run side by side (isoscope.atlas.workers)


@dataclass
class AtlasConfig:
    """What an atlas is built with. ``calibrate="none"`` builds the raw space only; a UMAP layout of more
    than ``landmarks`` rows is the landmark layout (0: full UMAP at any size). ``pooling`` None is the model's
    default; ``build_atlas`` records the pooling it used (none for vectors computed elsewhere)."""

    pooling: PoolingSpec | None = None
    max_length: int = 128
    batch_size: int = 64
    k: int = 15
    layout: str = "umap"
    calibrate: str = "whitening"
    fit_rows: int = 100_000
    seed: int = 0
    embed_chunk: int = 16_384
    landmarks: int = LANDMARKS
    engine: str = "local"  # ENGINES: this process, or the stages as Ray tasks (isoscope.atlas.distributed)
    shard_rows: int = 100_000  # rows per Ray task (the ray engine only)

    def to_dict(self) -> dict:
        """The plain-JSON settings the folder's manifest records (the pooling by name; the engine and its shards
        only for the ray engine, so folders built before it existed keep their manifests)."""
        out = {**asdict(self), "pooling": None if self.pooling is None else self.pooling.name}
        if self.engine == "local":
            del out["engine"], out["shard_rows"]
        return out

    def validate(self) -> None:
        check_method(self.layout)
        if self.k < 2:
            raise InputError(f"k must be at least 2, got {self.k}")
        if self.fit_rows < 2:
            raise InputError(f"fit rows must be at least 2, got {self.fit_rows}")
        if self.landmarks != 0 and self.landmarks < 1_000:
            raise InputError(f"landmarks must be 0 (full UMAP) or at least 1,000, got {self.landmarks}")
        if self.engine not in ENGINES:
            raise InputError(f"unknown engine '{self.engine}'; choose one of {', '.join(ENGINES)}")
        check_count("shard_rows", self.shard_rows, "shard rows")


def planned_stages(config: AtlasConfig) -> list[str]:
    """The stages a build with ``config`` runs or finds done, in order (a raw-only map has no ``cal_*``; a
    raw-only PCA map needs no graph)."""
    spaces = ["raw"] + ([] if config.calibrate == "none" else ["cal"])
    graph = needs_graph(config.to_dict())
    skip = {"calibrate"} if "cal" not in spaces else set()
    skip |= {f"cal_{s}" for s in ("knn", "layout", "clusters")} if "cal" not in spaces else set()
    skip |= {f"{s}_knn" for s in SPACES} if not graph else set()
    return [s for s in STAGES if s not in skip]


@dataclass
class AtlasRun:
    """What ``build_atlas`` did: stages computed now, stages found done, seconds per computed stage."""

    path: Path
    n: int
    computed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    waited_seconds: float = 0.0  # for another build of the same folder
    engine: str = ""  # what embedded the texts in this run (isoscope.encode.engines); "" when nothing was embedded


def _check_manifest(out: Path, signature: dict, config: AtlasConfig) -> None:
    path = out / MANIFEST
    want = {**signature, "config": config.to_dict()}
    if path.exists():
        have = read_json(path, what=f"{out.name}/{MANIFEST}", expect=dict, fix="delete the folder and rerun")
        if isinstance(have, dict) and have.get("version") != FORMAT_VERSION:
            raise InputError(f"{out} holds an atlas of an older Isoscope; use another --out or delete it")
        if have != want:
            raise InputError(f"{out} holds an atlas of other texts, model or settings; use another --out or delete it")
        return
    if out.exists() and any(out.iterdir()):
        raise InputError(f"{out} is not empty and holds no atlas; use an empty or new folder")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(want, indent=2).encode())


def duplicate_warning(texts: Sequence[str]) -> str | None:
    """One line when some texts occur more than once (they are kept: each is a point on the same spot)."""
    return _repeat_warning(len(texts) - len(set(texts)))


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


def _save_points(out: Path, given: _Input) -> None:
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


def _chunked_transform(calibrator, vectors: np.ndarray, path: Path, progress: StageProgress | None) -> None:
    """calibrator.transform over ``vectors`` (n, d) in chunks into ``path`` (.npy, renamed when complete)."""
    n = len(vectors)
    part = None
    try:
        for s in range(0, n, CHUNK_ROWS):
            z = np.asarray(calibrator.transform(np.asarray(vectors[s : s + CHUNK_ROWS], np.float32)), np.float32)
            if part is None:
                part = PartialNpy.create(path.with_name(path.name + ".partial"), (n, z.shape[1]))
            part.write(s, z)
            if progress is not None:
                progress("calibrate", min(n, s + CHUNK_ROWS), n)
        assert part is not None
        part.finish(path)
    finally:
        if part is not None:
            part.close()


def _load(path: Path, mmap: bool = False) -> np.ndarray:
    return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)


def _cluster_info(cmap: dens.ClusterMap, which: int, centres: np.ndarray, words: dict[int, list[str]]) -> list[dict]:
    sizes = cmap.sizes(which)  # (C,)
    return [
        {"cluster": c, "size": int(sizes[c]), "x": float(x), "y": float(y), "words": words.get(c, [])}
        for c, (x, y) in enumerate(centres)
    ]


def _centres(xy: np.ndarray, labelings: Sequence[np.ndarray], cmap: dens.ClusterMap) -> list[np.ndarray]:
    """Each level's cluster centres (C, 2): the median of its points among a seeded sample of ``CENTRE_SAMPLE``
    rows (every row below that), or its cells' weighted centre when the sample holds none of them."""
    rows = sample_indices(len(xy), CENTRE_SAMPLE, 0)  # (s,) sorted: reads the memory maps in order
    pts = np.asarray(xy[rows])  # (s, 2) float32: the median of float32 coordinates, as a full-size sample takes it
    out = []
    for which, labels in enumerate(labelings):
        lab = np.asarray(labels[rows])  # (s,)
        centres = cmap.cell_centres(which)  # (C, 2)
        for c in range(len(centres)):
            members = pts[lab == c]
            if len(members):
                centres[c] = np.median(members, axis=0)
        out.append(centres)
    return out


def _clusters(out: Path, d: Path, config: AtlasConfig) -> None:
    """Density, the cluster levels (the default one in ``cluster.npy``) and their c-TF-IDF labels, from
    ``xy.npy`` in blocks of rows (``density.ClusterMap``: bounds and points per cell summed over blocks, then each
    block's rows labelled), as Ray tasks on that engine; the labels' texts read a row group at a time from
    ``points.parquet``, every level counted in one pass. Every level's labels go to a file, never held whole."""
    xy_path = d / "xy.npy"
    xy = _load(xy_path, mmap=True)  # (n, 2)
    n = len(xy)
    ranges = shards(n, config.shard_rows if config.engine == "ray" else CHUNK_ROWS)
    engine = config.engine
    bounds = dens.bounds_of(list(map_rows(dens.extent, [xy_path], ranges, engine=engine)))
    specs = dens.levels(n)
    counts = None  # per level (G, G), summed block by block
    for block in map_rows(dens.block_counts, [xy_path], ranges, bounds, specs, engine=engine):
        counts = block if counts is None else [a + b for a, b in zip(counts, block, strict=True)]
    cmap = dens.ClusterMap.fit(bounds, specs, counts)
    parts = d / "clusters.parts"
    shutil.rmtree(parts, ignore_errors=True)
    label_paths = [parts / f"level-{i}.npy" for i in range(len(specs))]
    with contextlib.ExitStack() as files:
        density = files.enter_context(NpyBlocks(d / "density.npy", (n,), np.float32))
        levels = [files.enter_context(NpyBlocks(p, (n,), np.int32)) for p in label_paths]
        for block_density, labelings in map_rows(_label_rows, [xy_path], ranges, cmap, engine=engine):
            density.write(block_density)
            for f, labels in zip(levels, labelings, strict=True):
                f.write(labels)
    labelings = [_load(p, mmap=True) for p in label_paths]  # each (n,)
    if engine == "ray":  # counted in tasks over row groups, merged here
        from isoscope.atlas.distributed import ray_tally

        tally = ray_tally(out / "points.parquet", label_paths)
    else:
        tally = TermTally(labelings)
        for texts in ParquetColumn(out / "points.parquet").batches():
            tally.add(texts)
    centres = _centres(xy, labelings, cmap)
    levels = [
        {"grid": level.grid, "clusters": _cluster_info(cmap, i, centres[i], tally.top_words(i))}
        for i, level in enumerate(specs)
    ]
    atomic_save_npy(d / "grid.npy", cmap.grids[dens.DEFAULT_LEVEL].astype(np.float32))
    os.replace(label_paths[dens.DEFAULT_LEVEL], d / "cluster.npy")
    shutil.rmtree(parts, ignore_errors=True)
    meta = {"bounds": list(bounds), "clusters": levels[dens.DEFAULT_LEVEL]["clusters"], "levels": levels}
    atomic_write_bytes(d / "clusters.json", json.dumps(meta, indent=1).encode())


def _label_rows(xy: np.ndarray, cmap: dens.ClusterMap) -> tuple[np.ndarray, list[np.ndarray]]:
    return cmap.rows(xy)


class _Stages:
    """Runs named stages: skips one the ledger shows fresh, runs and records the others, times them."""

    def __init__(self, run: AtlasRun, ledger: Ledger, progress: StageProgress | None) -> None:
        self.run, self.ledger, self.progress = run, ledger, progress

    def __call__(self, name: str, inputs: Sequence[Path], outputs: Sequence[Path], fn: Callable[[], None]) -> None:
        if self.ledger.fresh(name, inputs, outputs):
            self.run.skipped.append(name)
            if self.progress is not None:
                self.progress(name, 1, 1)  # found done
            return
        t0 = time.perf_counter()
        if self.progress is not None:
            self.progress(name, 0, 1)
        fn()
        self.ledger.record(name, inputs, outputs)
        self.run.seconds[name] = time.perf_counter() - t0
        self.run.computed.append(name)
        if self.progress is not None:
            self.progress(name, 1, 1)
        log.info("atlas stage %s: %.1f s", name, self.run.seconds[name])

    def side_by_side(self, jobs: dict[str, tuple[Sequence[Path], Sequence[Path], Job]], parallel: bool) -> None:
        """Stages (name -> (inputs, outputs, job)) whose jobs may run at once: in worker processes when
        ``parallel`` and more than one is stale (``isoscope.atlas.workers``), else one after the other here.
        Each stage's seconds run from the common start to its own end."""
        stale = {name: job for name, job in jobs.items() if not self.ledger.fresh(name, job[0], job[1])}
        if not parallel or len(stale) < 2:
            for name, (inputs, outputs, (fn, args)) in jobs.items():
                report = None if self.progress is None else (lambda a, b, name=name: self.progress(name, a, b))
                self(name, inputs, outputs, lambda fn=fn, args=args, report=report: fn(*args, report))
            return
        self.run.skipped += [name for name in jobs if name not in stale]
        for name in jobs:
            if name not in stale and self.progress is not None:
                self.progress(name, 1, 1)  # found done
        for name in stale:
            if self.progress is not None:
                self.progress(name, 0, 1)
        seconds = run_side_by_side({name: job[2] for name, job in stale.items()}, self.progress)
        for name, (inputs, outputs, _) in stale.items():
            self.ledger.record(name, inputs, outputs)
            self.run.seconds[name] = seconds[name]
            self.run.computed.append(name)
            if self.progress is not None:
                self.progress(name, 1, 1)
            log.info("atlas stage %s: %.1f s (side by side)", name, seconds[name])


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


@dataclass
class _Input:
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


def _input(texts, meta: pd.DataFrame | None, vectors: np.ndarray | None, engine: str) -> _Input:
    if isinstance(texts, ParquetShards):
        if meta is not None or vectors is not None:
            raise ValueError("Parquet shards carry their own metadata and vectors")
        scan = texts.scan()
        _check_rows(scan.n, engine)
        return _Input(scan.n, scan.digest, scan.repeats, shards=texts)
    texts = list(texts)
    vectors = None if vectors is None else np.asarray(vectors, np.float32)
    meta = _check_input(texts, meta, vectors, engine)
    return _Input(len(texts), text_digest(texts), len(texts) - len(set(texts)), texts, meta, vectors)


def _repeat_warning(repeats: int) -> str | None:
    if repeats:
        return f"{repeats:,} text(s) repeat an earlier one; kept (repeated texts share one position)"
    return None


def build_atlas(
    encoder,
    texts: Sequence[str] | ParquetShards,
    out: str | Path,
    *,
    config: AtlasConfig | None = None,
    meta: pd.DataFrame | None = None,
    progress: StageProgress | None = None,
    vectors: np.ndarray | None = None,
    ray_address: str = "local",
) -> AtlasRun:
    """Build (or finish, or repair) the atlas of ``texts`` in folder ``out``; see the module doc for the stages.

    ``texts``: a sequence of texts, or ``ParquetShards`` (a corpus in Parquet files, with its metadata columns and,
    when it names a vector column, its vectors; read a batch at a time, never held whole). ``vectors`` (n, d):
    embeddings computed elsewhere; then nothing is embedded and ``encoder`` may be None (the folder is keyed by a
    digest of the vectors instead of the model). ``config.engine == "ray"`` runs the stages as Ray tasks
    (``isoscope.atlas.distributed``) on the Ray at ``ray_address`` (``local``: started here; an initialised Ray is
    used as it is).
    """
    config = config or AtlasConfig()
    config.validate()
    out = Path(out)
    given = _input(texts, meta, vectors, config.engine)
    if given.shards is not None and given.shards.vector is not None:
        dim = given.shards.dims
    else:
        dim = given.vectors.shape[1] if given.vectors is not None else encoder.hidden_size
    if config.engine == "local":  # refused in one line before any work when its peak cannot fit here
        from isoscope.atlas.costs import check_fits

        spaces = 1 if config.calibrate == "none" else 2
        check_fits(given.n, dim, k=config.k, spaces=spaces, graph=needs_graph(config.to_dict()))
    if given.vectors is not None:
        fingerprint = "precomputed-" + vectors_digest(given.vectors)[:32]
    elif given.precomputed:
        fingerprint = "precomputed-" + _files_digest(given.shards.files)[:32]
    else:
        fingerprint = encoder.fingerprint
    if given.precomputed:
        config = replace(config, pooling=None)  # pooled already
    else:
        config = replace(config, pooling=resolve_pooling(config.pooling, encoder))
    n = given.n
    signature = {"format": FORMAT, "version": FORMAT_VERSION, "model": fingerprint, "texts": given.digest, "n": n}
    run = AtlasRun(out, n)
    waited = time.perf_counter()

    def waiting() -> None:
        if progress is not None:
            progress("wait", 0, 1)

    with build_lock(out, waiting):
        run.waited_seconds = time.perf_counter() - waited
        _check_manifest(out, signature, config)
        if (w := _repeat_warning(given.repeats)) is not None:
            run.warnings.append(w)
        with contextlib.ExitStack() as stack:
            if config.engine == "ray":
                from isoscope.atlas.distributed import ray_session

                stack.enter_context(ray_session(ray_address))
            _run_stages(run, encoder, given, config, progress)
    return run


def _files_digest(files: Sequence[Path]) -> str:
    """SHA-256 of the files' names and SHA-256s, in order (each file read once, in blocks)."""
    import hashlib

    from isoscope.cache import file_sha256

    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.name}:{file_sha256(f)};".encode())
    return h.hexdigest()


def _run_stages(run, encoder, given: _Input, config: AtlasConfig, progress: StageProgress | None) -> None:
    out = run.path
    stage = _Stages(run, Ledger(out), progress)
    k = min(config.k, given.n - 1)
    stage("texts", [], [out / "points.parquet"], lambda: _save_points(out, given))
    stage("embed", [], [out / "vectors.npy"], lambda: _embed(run, encoder, given, config, progress))
    spaces = ["raw"] + ([] if config.calibrate == "none" else ["cal"])
    graph = needs_graph(config.to_dict())
    for space in spaces:  # every vector and graph first, so that the two layouts can run side by side
        d = out / space
        d.mkdir(parents=True, exist_ok=True)
        if space == "cal":
            cal_files = [
                d / "vectors.npy",
                d / "calibrator" / "calibrator.json",
                d / "calibrator" / "calibrator.safetensors",
            ]
            stage("calibrate", [out / "vectors.npy"], cal_files, lambda d=d: _calibrate(out, d, config, progress))
        if graph:
            vec_path = _space_vectors(out, space)
            stage(
                f"{space}_knn",
                [vec_path],
                _graph_files(out, space) + _recall_files(out, space, config),
                lambda s=space, v=vec_path: _knn(out, s, v, k, config, progress),
            )
    layouts = {
        f"{s}_layout": (
            [_space_vectors(out, s), *(_graph_files(out, s) if graph else [])],
            [out / s / "xy.npy"],
            (_write_layout, (str(out), s, graph, config.layout, config.seed, config.landmarks)),
        )
        for s in spaces
    }
    if config.engine == "ray" and config.layout == "umap":  # landmarks here, the rest in shard tasks
        from isoscope.atlas.distributed import ray_layout

        for s in spaces:
            report = None if progress is None else (lambda a, b, s=s: progress(f"{s}_layout", a, b))
            run_it = lambda s=s, r=report: ray_layout(_space_vectors(out, s), out / s, config, progress=r)  # noqa: E731
            stage(f"{s}_layout", *layouts[f"{s}_layout"][:2], run_it)
    else:
        stage.side_by_side(layouts, config.layout == "umap" and given.n >= PARALLEL_LAYOUT_ROWS)
    for space in spaces:
        d = out / space
        outputs = [d / f for f in ("grid.npy", "density.npy", "cluster.npy", "clusters.json")]
        inputs = [d / "xy.npy", out / "points.parquet"]
        stage(f"{space}_clusters", inputs, outputs, lambda d=d: _clusters(out, d, config))
    extra_in = [out / "vectors.npy", *([out / s / "knn_ids.npy" for s in spaces] if "cal" in spaces else [])]
    extra_out = [out / f for f in ("norm.npy", "length.npy", "overlap.npy")]
    stage("extras", [*extra_in, out / "points.parquet"], extra_out, lambda: _extras(out, spaces, config))
    stage("index", *_index_files(out, spaces), lambda: _index(out, spaces, config))
    _, index_out = _index_files(out, spaces)  # the tiles draw the index's points, the clusters' colours and contours
    drawn = [out / s / f for s in spaces for f in ("clusters.json", "cluster.npy", "density.npy", "grid.npy")]
    tile_out = [p for s in spaces for p in stage_files(out, s)]
    stage("tiles", index_out + drawn, tile_out, lambda: _tiles(out, spaces, config))


def _tiles(out: Path, spaces: Sequence[str], config: AtlasConfig) -> None:
    """The top of each space's tile pyramid in the default style (``isoscope.atlas.pyramid``): level by level
    here, or one Ray task per space and level with the ray engine."""
    if config.engine == "ray":
        from isoscope.atlas.distributed import ray_tiles

        ray_tiles(out, spaces)
    else:
        for s in spaces:
            render_levels(out, s, range(TOP_LEVEL + 1))
    for s in spaces:
        write_renderer(out, s)


def _index_files(out: Path, spaces: Sequence[str]) -> tuple[list[Path], list[Path]]:
    """(inputs, outputs) of the ``index`` stage: each space's layout and bounds -> its spatial index."""
    inputs = [out / s / f for s in spaces for f in ("xy.npy", "clusters.json")]
    return inputs, [out / s / f for s in spaces for f in INDEX_FILES]


def _index(out: Path, spaces: Sequence[str], config: AtlasConfig) -> None:
    """Each space's points in Morton order on disk (``isoscope.atlas.spatial.write_index``) over the world
    around its bounds: the server reads a tile's points from memory maps instead of sorting n points. On the ray
    engine a sample sort in tasks (``distributed.ray_index``: the same files, no process sorting n points)."""
    for s in spaces:
        world = World.around(read_clusters(out / s / "clusters.json", f"{s}/clusters.json")["bounds"])
        if config.engine == "ray":
            from isoscope.atlas.distributed import ray_index

            ray_index(out / s, world, shard_rows=config.shard_rows)
        else:
            write_index(out / s, _load(out / s / "xy.npy", mmap=True), world)


def _space_vectors(out: Path, space: str) -> Path:
    return out / "vectors.npy" if space == "raw" else out / space / "vectors.npy"


def _graph_files(out: Path, space: str) -> list[Path]:
    return [out / space / "knn_ids.npy", out / space / "knn_dist.npy"]


def _embed(run: AtlasRun, encoder, given: _Input, config: AtlasConfig, progress: StageProgress | None) -> None:
    """``vectors.npy`` (n, d): the given vectors (or the shards'), or every distinct text embedded once
    (``distinct_rows``) on the fastest engine of the encoder's precision, resumable chunk by chunk, then copied to
    the rows repeating it (texts from shards: each embedded, read from ``points.parquet`` a row group at a time)."""
    out = run.path / "vectors.npy"
    if given.vectors is not None:  # chunk by chunk: a memory-mapped input is never read whole
        _spread(given.vectors, np.arange(len(given.vectors)), out)
        return
    if given.precomputed:
        _shard_vectors(given, out)
        return
    from isoscope.encode.chunked import embed_to_npy  # torch: only when texts are embedded here
    from isoscope.encode.embed import EmbedConfig

    texts = given.texts if given.shards is None else ParquetColumn(run.path / "points.parquet", "text")
    if config.engine == "ray":  # Ray Data actors (a GPU each on CUDA), each loading the model by its name
        from isoscope.atlas.distributed import embed_on_ray

        run.engine = embed_on_ray(texts, out, encoder=encoder, pooling=config.pooling, config=config)
        return
    from isoscope.encode.engines import engine_in_use, fastest_fp32_encoder

    fast = fastest_fp32_encoder(encoder)  # the fp32 vectors within FP32_ENGINE_TOLERANCE, faster; int8 as asked
    run.engine = engine_in_use(fast, config.pooling.needs_hidden_states)
    cfg = EmbedConfig(batch_size=config.batch_size, max_length=config.max_length)
    report = None if progress is None else (lambda d, t: progress("embed", d, t))
    embed = dict(pooling=config.pooling, config=cfg, chunk_size=config.embed_chunk, progress=report)
    if given.shards is not None or given.repeats == 0:
        log.info("atlas: embedding %d texts with %s", given.n, run.engine)
        embed_to_npy(fast, texts, out, **embed)
        return
    distinct, rows = distinct_rows(texts)
    log.info("atlas: embedding %d distinct of %d texts with %s", len(distinct), given.n, run.engine)
    once = run.path / "vectors.distinct.npy"  # resumable like any chunked embedding; gone once copied out
    embed_to_npy(fast, distinct, once, **embed)
    _spread(_load(once, mmap=True), rows, out)
    once.unlink()


def _shard_vectors(given: _Input, out: Path) -> None:
    """The shards' vectors (n, d) into ``out`` a batch at a time (rows whose text was empty were dropped)."""
    assert given.shards is not None
    part = PartialNpy.create(out.with_name(out.name + ".partial"), (given.n, given.shards.dims))
    try:
        row = 0
        for batch in given.shards.batches(vectors=True, meta=False, texts=False):
            part.write(row, batch.vectors)
            row += len(batch.vectors)
        if row != given.n:
            raise InputError(f"{given.shards.name}: the shards changed while the atlas was built; rerun")
        part.finish(out)
    finally:
        part.close()


def distinct_rows(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """(the distinct texts in order of first appearance, (n,) int64: each text's row among them)."""
    first: dict[str, int] = {}
    rows = np.fromiter((first.setdefault(t, len(first)) for t in texts), np.int64, len(texts))  # (n,)
    return list(first), rows


def _spread(vectors: np.ndarray, rows: np.ndarray, path: Path) -> None:
    """``vectors[rows]`` (n, d) into ``path`` (.npy), chunk by chunk, renamed when complete."""
    part = PartialNpy.create(path.with_name(path.name + ".partial"), (len(rows), vectors.shape[1]))
    try:
        for s in range(0, len(rows), CHUNK_ROWS):
            block = rows[s : s + CHUNK_ROWS]  # (m,)
            order = np.argsort(block, kind="stable")  # read the memory map in ascending rows
            out = np.empty((len(block), vectors.shape[1]), np.float32)  # (m, d)
            out[order] = vectors[block[order]]
            part.write(s, out)
        part.finish(path)
    finally:
        part.close()


def _recall_files(out: Path, space: str, config: AtlasConfig) -> list[Path]:
    """The ray engine's graph recall (``isoscope.atlas.distributed.RECALL_FILE``); none for the exact or NN-descent
    graph of the local engine."""
    return [out / space / "knn_recall.json"] if config.engine == "ray" else []


def _knn(out: Path, space: str, vec_path: Path, k: int, config: AtlasConfig, progress: StageProgress | None) -> None:
    report = None if progress is None else (lambda a, b: progress(f"{space}_knn", a, b))
    if config.engine == "ray":
        from isoscope.atlas.distributed import ivf_graph

        ivf_graph(vec_path, out / space, k=k + 1, seed=config.seed, shard_rows=config.shard_rows, progress=report)
        return
    ids, dist = knn_graph_chunked(_load(vec_path, mmap=True), k + 1, progress=report, seed=config.seed)
    ids_path, dist_path = _graph_files(out, space)
    atomic_save_npy(dist_path, dist)
    atomic_save_npy(ids_path, ids)


def _write_layout(
    out: str, space: str, graph: bool, method: str, seed: int, landmarks: int, report: Callable[[int, int], None]
) -> None:
    """The layout of ``space`` into its ``xy.npy`` (n, 2); module-level, so a worker process can run it."""
    folder = Path(out)
    knn_pair = tuple(_load(p) for p in _graph_files(folder, space)) if graph else None
    vectors = _load(_space_vectors(folder, space), mmap=True)  # (n, d)
    xy = layout(vectors, method, knn=knn_pair, seed=seed, landmarks=landmarks, progress=report)
    atomic_save_npy(folder / space / "xy.npy", xy)


def _calibrate(out: Path, d: Path, config: AtlasConfig, progress: StageProgress | None) -> None:
    """Fit the calibrator on a seeded sample (a calibrator left by an interrupted run is refitted, never read
    unchecked), save it, and apply it to every row."""
    from isoscope.calibrate import make_calibrator

    vectors = _load(out / "vectors.npy", mmap=True)
    cal_dir = d / "calibrator"
    shutil.rmtree(cal_dir, ignore_errors=True)
    rows = sample_indices(len(vectors), config.fit_rows, config.seed)  # (s,) sorted
    calibrator = make_calibrator(config.calibrate).fit(np.asarray(vectors[rows], np.float32))
    calibrator.save(cal_dir, {"fit_rows": len(rows), "seed": config.seed})
    _chunked_transform(calibrator, vectors, d / "vectors.npy", progress)


def _norm_rows(vectors: np.ndarray) -> np.ndarray:
    return np.linalg.norm(vectors.astype(np.float64), axis=1).astype(np.float32)  # (m,)


def _overlap_rows(ids_raw: np.ndarray, ids_cal: np.ndarray) -> np.ndarray:
    return jaccard_tables(ids_raw[:, 1:], ids_cal[:, 1:])[1].astype(np.float32)  # (m,) the row itself left out


def _extras(out: Path, spaces: Sequence[str], config: AtlasConfig) -> None:
    """Per row: the raw L2 norm and, with a calibrated space, the Jaccard overlap of the two neighbour lists (in
    blocks of rows, as Ray tasks on that engine); the text's length in characters (code points, as ``len``) from
    ``points.parquet`` a row group at a time."""
    import pyarrow.compute as pc

    n = len(_load(out / "vectors.npy", mmap=True))
    ranges = shards(n, config.shard_rows if config.engine == "ray" else CHUNK_ROWS)
    with NpyBlocks(out / "norm.npy", (n,), np.float32) as norm:
        for block in map_rows(_norm_rows, [out / "vectors.npy"], ranges, engine=config.engine):
            norm.write(block)
    with NpyBlocks(out / "length.npy", (n,), np.int32) as length:
        for texts in ParquetColumn(out / "points.parquet").arrays():
            length.write(pc.utf8_length(texts).to_numpy())
    with NpyBlocks(out / "overlap.npy", (n,), np.float32) as overlap:
        if "cal" not in spaces:
            overlap.write(np.ones(n, np.float32))
            return
        graphs = [out / "raw" / "knn_ids.npy", out / "cal" / "knn_ids.npy"]  # each (n, k), the row itself first
        for block in map_rows(_overlap_rows, graphs, ranges, engine=config.engine):
            overlap.write(block)
