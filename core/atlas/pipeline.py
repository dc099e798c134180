"""The whole-corpus atlas: texts -> embeddings -> kNN graph -> 2-D layout -> density, clusters, labels,
for the raw space and a calibrated one, stage by stage into a folder, resumable, checked and cached.

run = build_atlas(encoder, corpus, "atlas-dir", AtlasConfig(calibrate="whitening"), progress=fn)
atlas = load_atlas("atlas-dir")     # texts, metadata, per-point extras, per-space layouts and clusters

Stages (``STAGES``), each writing its files atomically (temporary file + rename) and recording them in the
folder's ledger (``isoscope.atlas.folder``: size and SHA-256 of what it wrote and of what it read), so a
rerun skips a stage whose files are intact and were built from its inputs as they are now, and rebuilds a
missing, damaged or outdated one (and, through their inputs, the stages after it); ``progress(stage, done,
total)`` reports each stage (``wait`` while another build of the same folder holds its lock):
- ``texts`` (``isoscope.atlas.inputs``): ``points.parquet`` (text + metadata columns), in row groups of
  ``ROW_GROUP_ROWS`` rows, written a batch at a time from ``ParquetShards`` (``isoscope.data.sharded``: a corpus no
  process holds); every later stage that reads texts (embedding from shards, labels, lengths) reads them from
  this file a row group at a time.
- ``embed`` (``isoscope.atlas.vectors``): ``vectors.npy`` float32 (n, d) through
  ``isoscope.encode.chunked.embed_to_npy`` (chunked into a memory map, itself resumable chunk by chunk).
- ``calibrate`` (``isoscope.atlas.vectors``): a calibrator fitted on a seeded sample of ``fit_rows`` rows
  (``cal/calibrator/``), then applied to every row in chunks (``cal/vectors.npy``).
- per space (``raw``, ``cal``): ``knn_ids.npy`` int32 (n, k) / ``knn_dist.npy`` (``isoscope.atlas.graph``; not
  built for a raw-only PCA map, which needs no graph),
  ``xy.npy`` float32 (n, 2) (``isoscope.atlas.layout``: above ``landmarks`` rows, UMAP on that many and the
  rest placed from the graph; from ``PARALLEL_LAYOUT_ROWS`` rows the two spaces' seeded, single-core UMAP
  layouts run side by side in worker processes, ``isoscope.atlas.workers``), then ``density.npy``,
  ``cluster.npy``, ``grid.npy`` and ``clusters.json`` (``isoscope.atlas.clusters``: the clusters at three
  levels, labelled by ``isoscope.atlas.labels``). Both spaces' vectors and graphs come before either layout.
- ``extras`` (``isoscope.atlas.extras``): ``norm.npy`` (raw L2 norm), ``length.npy`` (characters), ``overlap.npy`` (Jaccard of the raw
  and calibrated neighbour lists).
- ``index``: per space, the points in Morton order (``isoscope.atlas.spatial.INDEX_FILES``), which the
  server memory-maps (a folder built before this stage is served from an index built in memory).
- ``tiles``: per space, levels 0 .. ``isoscope.atlas.pyramid.TOP_LEVEL`` of the tile pyramid in the Atlas
  page's default style (``{space}/tiles/{z}/{x}-{y}.png``), what a fresh server's first view shows: served
  from the folder once checked against the ledger (a folder built before this stage renders them on demand).
``manifest.json`` records what the folder was built from (texts digest, model, settings); a folder built
from something else is refused rather than mixed. One build per folder at a time (``folder.build_lock``).
The settings are ``isoscope.atlas.config.AtlasConfig``; the ray engine runs the stages as Ray tasks
(``isoscope.atlas.distributed`` and the ``ray_*`` modules it names).
Memory: the vectors are memory-mapped and read in chunks; the largest resident pieces at 1M x 384 are
NN-descent's unit copy of the vectors (1.5 GiB) with its heaps, and UMAP's graph in each layout worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from isoscope.atlas.clusters import clusters_stage
from isoscope.atlas.config import ENGINES, AtlasConfig, StageProgress
from isoscope.atlas.costs import check_fits
from isoscope.atlas.distributed import load_npy, ray_session, ray_tiles
from isoscope.atlas.extras import extras_stage
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
from isoscope.atlas.inputs import (
    MAX_ATLAS_ROWS,
    BuildInput,
    distinct_rows,
    duplicate_warning,
    read_input,
    repeat_warning,
    save_points,
)
from isoscope.atlas.layout import layout
from isoscope.atlas.pyramid import TOP_LEVEL, render_levels, stage_files, write_renderer
from isoscope.atlas.ray_graph import RECALL_FILE, ivf_graph
from isoscope.atlas.ray_index import ray_index
from isoscope.atlas.ray_layout import ray_layout
from isoscope.atlas.spatial import INDEX_FILES, World, write_index
from isoscope.atlas.vectors import calibrate_stage, embed_stage
from isoscope.atlas.workers import PARALLEL_LAYOUT_ROWS, Job, run_side_by_side
from isoscope.cache import atomic_save_npy, atomic_write_bytes, file_sha256
from isoscope.data.jsonfile import read_json
from isoscope.data.sharded import ParquetShards
from isoscope.data.vectors.table import vectors_digest
from isoscope.encode.pooling import resolve_pooling
from isoscope.errors import InputError

__all__ = [
    "ENGINES",
    "MAX_ATLAS_ROWS",
    "SPACES",
    "STAGES",
    "Atlas",
    "AtlasConfig",
    "AtlasRun",
    "AtlasSpace",
    "build_atlas",
    "distinct_rows",
    "duplicate_warning",
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

    def reporter(self, name: str) -> Callable[[int, int], None] | None:
        """The ``(done, total)`` callback of stage ``name``'s own progress (None without a ``progress``)."""
        if self.progress is None:
            return None
        return lambda done, total: self.progress(name, done, total)

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
    given = read_input(texts, meta, vectors, engine=config.engine)
    _check_memory(encoder, given, config)
    fingerprint = _fingerprint(encoder, given)
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
        if (w := repeat_warning(given.repeats)) is not None:
            run.warnings.append(w)
        with contextlib.ExitStack() as stack:
            if config.engine == "ray":
                stack.enter_context(ray_session(ray_address))
            _run_stages(run, encoder, given, config=config, progress=progress)
    return run


def _check_memory(encoder, given: BuildInput, config: AtlasConfig) -> None:
    """The one-machine engine refuses in one line, before any work, a build whose peak cannot fit here."""
    if config.engine != "local":
        return

    if given.shards is not None and given.shards.vector is not None:
        dim = given.shards.dims
    else:
        dim = given.vectors.shape[1] if given.vectors is not None else encoder.hidden_size
    spaces = 1 if config.calibrate == "none" else 2
    check_fits(given.n, dim, k=config.k, spaces=spaces, graph=needs_graph(config.to_dict()))


def _fingerprint(encoder, given: BuildInput) -> str:
    """What the folder's vectors come from: the model's fingerprint, or a digest of vectors computed elsewhere."""
    if given.vectors is not None:
        return "precomputed-" + vectors_digest(given.vectors)[:32]
    if given.precomputed:
        return "precomputed-" + _files_digest(given.shards.files)[:32]
    return encoder.fingerprint


def _files_digest(files: Sequence[Path]) -> str:
    """SHA-256 of the files' names and SHA-256s, in order (each file read once, in blocks)."""
    import hashlib

    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.name}:{file_sha256(f)};".encode())
    return h.hexdigest()


def _run_stages(
    run: AtlasRun, encoder, given: BuildInput, *, config: AtlasConfig, progress: StageProgress | None
) -> None:
    stage = _Stages(run, Ledger(run.path), progress)
    spaces = ["raw"] + ([] if config.calibrate == "none" else ["cal"])
    _vector_stages(stage, encoder, given, spaces, config=config)
    _layout_stages(stage, given, spaces, config=config)
    _later_stages(stage, spaces, config=config)


def _vector_stages(stage: _Stages, encoder, given: BuildInput, spaces: list[str], *, config: AtlasConfig) -> None:
    """The texts, the vectors and every space's graph, before either layout (so that they can run side by side)."""
    out, progress, run = stage.run.path, stage.progress, stage.run
    k = min(config.k, given.n - 1)

    def embed() -> None:
        run.engine = embed_stage(out, encoder, given, config=config, progress=progress)

    stage("texts", [], [out / "points.parquet"], lambda: save_points(out, given))
    stage("embed", [], [out / "vectors.npy"], embed)
    graph = needs_graph(config.to_dict())
    for space in spaces:
        d = out / space
        d.mkdir(parents=True, exist_ok=True)
        if space == "cal":
            cal_files = [
                d / "vectors.npy",
                d / "calibrator" / "calibrator.json",
                d / "calibrator" / "calibrator.safetensors",
            ]
            stage("calibrate", [out / "vectors.npy"], cal_files, lambda d=d: calibrate_stage(out, d, config, progress))
        if graph:
            vec_path = _space_vectors(out, space)
            stage(
                f"{space}_knn",
                [vec_path],
                _graph_files(out, space) + _recall_files(out, space, config),
                lambda s=space, v=vec_path: _knn(out, s, v, k=k, config=config, progress=progress),
            )


def _layout_stages(stage: _Stages, given: BuildInput, spaces: list[str], *, config: AtlasConfig) -> None:
    """Each space's layout: landmarks on the driver and the rest in shard tasks on the ray engine, else in this
    process or, from ``PARALLEL_LAYOUT_ROWS`` rows, the two spaces side by side in worker processes."""
    out, progress = stage.run.path, stage.progress
    graph = needs_graph(config.to_dict())
    spec = LayoutSpec(graph, config.layout, config.seed, config.landmarks)
    layouts = {
        f"{s}_layout": (
            [_space_vectors(out, s), *(_graph_files(out, s) if graph else [])],
            [out / s / "xy.npy"],
            (_write_layout, (str(out), s, spec)),
        )
        for s in spaces
    }
    if config.engine == "ray" and config.layout == "umap":  # landmarks here, the rest in shard tasks
        for s in spaces:
            report = None if progress is None else (lambda a, b, s=s: progress(f"{s}_layout", a, b))
            run_it = lambda s=s, r=report: ray_layout(_space_vectors(out, s), out / s, config, progress=r)  # noqa: E731
            stage(f"{s}_layout", *layouts[f"{s}_layout"][:2], run_it)
    else:
        stage.side_by_side(layouts, config.layout == "umap" and given.n >= PARALLEL_LAYOUT_ROWS)


def _later_stages(stage: _Stages, spaces: list[str], *, config: AtlasConfig) -> None:
    """Clusters, extras, the spatial index and the top tiles, from the layouts; each reports its progress block by
    block (shard by shard on the ray engine)."""
    out = stage.run.path
    for space in spaces:
        d = out / space
        outputs = [d / f for f in ("grid.npy", "density.npy", "cluster.npy", "clusters.json")]
        inputs = [d / "xy.npy", out / "points.parquet"]
        report = stage.reporter(f"{space}_clusters")
        stage(f"{space}_clusters", inputs, outputs, lambda d=d, r=report: clusters_stage(out, d, config, progress=r))
    extra_in = [out / "vectors.npy", *([out / s / "knn_ids.npy" for s in spaces] if "cal" in spaces else [])]
    extra_out = [out / f for f in ("norm.npy", "length.npy", "overlap.npy")]
    report = stage.reporter("extras")
    stage(
        "extras",
        [*extra_in, out / "points.parquet"],
        extra_out,
        lambda: extras_stage(out, spaces, config, progress=report),
    )
    report = stage.reporter("index")
    stage("index", *_index_files(out, spaces), lambda: _index(out, spaces, config, report))
    _, index_out = _index_files(out, spaces)  # the tiles draw the index's points, the clusters' colours and contours
    drawn = [out / s / f for s in spaces for f in ("clusters.json", "cluster.npy", "density.npy", "grid.npy")]
    tile_out = [p for s in spaces for p in stage_files(out, s)]
    stage("tiles", index_out + drawn, tile_out, lambda: _tiles(out, spaces, config))


def _tiles(out: Path, spaces: Sequence[str], config: AtlasConfig) -> None:
    """The top of each space's tile pyramid in the default style (``isoscope.atlas.pyramid``): level by level
    here, or one Ray task per space and level with the ray engine."""
    if config.engine == "ray":
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


def _index(out: Path, spaces: Sequence[str], config: AtlasConfig, progress: Callable[[int, int], None] | None) -> None:
    """Each space's points in Morton order on disk (``isoscope.atlas.spatial.write_index``) over the world
    around its bounds: the server reads a tile's points from memory maps instead of sorting n points. On the ray
    engine a sample sort in tasks (``ray_index.ray_index``: the same files, no process sorting n points, resumable
    task by task). ``progress(done, total)``: task by task on the ray engine, space by space here."""
    for i, s in enumerate(spaces):
        world = World.around(read_clusters(out / s / "clusters.json", f"{s}/clusters.json")["bounds"])
        if config.engine == "ray":
            space_report = None if progress is None else (lambda a, b, i=i: progress(i * b + a, len(spaces) * b))
            ray_index(out / s, world, shard_rows=config.shard_rows, progress=space_report)
        else:
            write_index(out / s, load_npy(out / s / "xy.npy"), world)
            if progress is not None:
                progress(i + 1, len(spaces))


def _space_vectors(out: Path, space: str) -> Path:
    return out / "vectors.npy" if space == "raw" else out / space / "vectors.npy"


def _graph_files(out: Path, space: str) -> list[Path]:
    return [out / space / "knn_ids.npy", out / space / "knn_dist.npy"]


def _recall_files(out: Path, space: str, config: AtlasConfig) -> list[Path]:
    """The ray engine's graph recall (``isoscope.atlas.ray_graph.RECALL_FILE``); none for the exact or NN-descent
    graph of the local engine."""
    return [out / space / RECALL_FILE] if config.engine == "ray" else []


def _knn(out: Path, space: str, vec_path: Path, *, k: int, config: AtlasConfig, progress: StageProgress | None) -> None:
    """The kNN graph of ``space`` (``k`` neighbours and the row itself): the IVF graph in tasks on the ray engine,
    else exact or NN-descent here (``isoscope.atlas.graph``)."""
    report = None if progress is None else (lambda a, b: progress(f"{space}_knn", a, b))
    if config.engine == "ray":
        ivf_graph(vec_path, out / space, k=k + 1, seed=config.seed, shard_rows=config.shard_rows, progress=report)
        return
    ids, dist = knn_graph_chunked(load_npy(vec_path), k + 1, progress=report, seed=config.seed)
    ids_path, dist_path = _graph_files(out, space)
    atomic_save_npy(dist_path, dist)
    atomic_save_npy(ids_path, ids)


@dataclass(frozen=True)
class LayoutSpec:
    """How a space is laid out (``_write_layout``'s settings, picklable for a worker process): from its graph or
    not, the method, the seed, the landmarks."""

    graph: bool
    method: str
    seed: int
    landmarks: int


def _write_layout(out: str, space: str, spec: LayoutSpec, report: Callable[[int, int], None]) -> None:
    """The layout of ``space`` into its ``xy.npy`` (n, 2); module-level, so a worker process can run it."""
    folder = Path(out)
    knn_pair = tuple(load_npy(p, mmap=False) for p in _graph_files(folder, space)) if spec.graph else None
    vectors = load_npy(_space_vectors(folder, space))  # (n, d)
    xy = layout(vectors, spec.method, knn=knn_pair, seed=spec.seed, landmarks=spec.landmarks, progress=report)
    atomic_save_npy(folder / space / "xy.npy", xy)
