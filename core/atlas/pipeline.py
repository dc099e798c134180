"""The whole-corpus atlas: texts -> embeddings -> kNN graph -> 2-D layout -> density, clusters, labels,
for the raw space and a calibrated one, stage by stage into a folder, resumable and cached.

run = build_atlas(encoder, corpus, "atlas-dir", AtlasConfig(calibrate="whitening"), progress=fn)
atlas = load_atlas("atlas-dir")     # texts, metadata, per-point extras, per-space layouts and clusters

Stages (``STAGES``), each writing its files atomically (temporary file + rename), so a file that exists
is complete and a rerun skips it; ``progress(stage, done, total)`` reports each stage:
- ``texts``: ``points.parquet`` (text + metadata columns).
- ``embed``: ``vectors.npy`` float32 (n, d) through ``isoscope.encode.chunked.embed_to_npy`` (chunked into a
  memory map, itself resumable chunk by chunk).
- ``calibrate``: a calibrator fitted on a seeded sample of ``fit_rows`` rows (``cal/calibrator/``), then
  applied to every row in chunks (``cal/vectors.npy``).
- per space (``raw``, ``cal``): ``knn_ids.npy`` int32 (n, k) / ``knn_dist.npy`` (``isoscope.atlas.graph``; not
  built for a raw-only PCA map, which needs no graph),
  ``xy.npy`` float32 (n, 2) (``isoscope.atlas.layout``), then ``density.npy``, ``cluster.npy``, ``grid.npy`` and
  ``clusters.json`` (``isoscope.atlas.density``).
- ``extras``: ``norm.npy`` (raw L2 norm), ``length.npy`` (characters), ``overlap.npy`` (Jaccard of the raw
  and calibrated neighbour lists).
``manifest.json`` records what the folder was built from (texts digest, model, settings); a folder built
from something else is refused rather than mixed. Memory: the vectors are memory-mapped and read in
chunks; the largest resident pieces at 1M x 384 are the HNSW index (~1.7 GiB) and UMAP's graph.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from isoscope.atlas import density as dens
from isoscope.atlas.graph import knn_graph_chunked
from isoscope.atlas.layout import check_method, layout
from isoscope.cache import atomic_save_npy, atomic_write_bytes, text_digest
from isoscope.errors import InputError
from isoscope.neighbours.overlap import jaccard_tables

log = logging.getLogger(__name__)

FORMAT = "isoscope-atlas"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
SPACES: tuple[str, ...] = ("raw", "cal")
STAGES: tuple[str, ...] = (
    "texts",
    "embed",
    "raw_knn",
    "raw_layout",
    "raw_clusters",
    "calibrate",
    "cal_knn",
    "cal_layout",
    "cal_clusters",
    "extras",
)
MAX_ATLAS_ROWS = 1_000_000
StageProgress = Callable[[str, int, int], None]  # (stage, done, total)
CHUNK_ROWS = 65_536


@dataclass
class AtlasConfig:
    """What an atlas is built with. ``calibrate="none"`` builds the raw space only."""

    pooling: str = "mean"
    max_length: int = 128
    batch_size: int = 64
    k: int = 15
    layout: str = "umap"
    calibrate: str = "whitening"
    fit_rows: int = 100_000
    seed: int = 0
    embed_chunk: int = 16_384

    def validate(self) -> None:
        check_method(self.layout)
        if self.k < 2:
            raise InputError(f"k must be at least 2, got {self.k}")
        if self.fit_rows < 2:
            raise InputError(f"fit rows must be at least 2, got {self.fit_rows}")


@dataclass
class AtlasRun:
    """What ``build_atlas`` did: stages computed now, stages found done, seconds per computed stage."""

    path: Path
    n: int
    computed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    engine: str = ""  # what embedded the texts in this run (isoscope.encode.engines); "" when nothing was embedded


def _signature(encoder_fingerprint: str, digest: str, n: int, config: AtlasConfig) -> dict:
    return {"format": FORMAT, "version": FORMAT_VERSION, "model": encoder_fingerprint, "texts": digest, "n": n}
    # config is stored next to it and compared field by field in _check_manifest


def _check_manifest(out: Path, signature: dict, config: AtlasConfig) -> None:
    path = out / MANIFEST
    want = {**signature, "config": asdict(config)}
    if path.exists():
        try:
            have = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            raise InputError(f"{path} is not readable; delete the folder and rerun") from None
        if have != want:
            raise InputError(f"{out} holds an atlas of other texts, model or settings; use another --out or delete it")
        return
    if out.exists() and any(out.iterdir()):
        raise InputError(f"{out} is not empty and holds no atlas; use an empty or new folder")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(want, indent=2).encode())


def duplicate_warning(texts: Sequence[str]) -> str | None:
    """One line when some texts occur more than once (they are kept: each is a point on the same spot)."""
    dup = len(texts) - len(set(texts))
    if dup:
        return f"{dup:,} text(s) repeat an earlier one; kept (repeated texts share one position)"
    return None


def _save_points(out: Path, texts: Sequence[str], meta: pd.DataFrame) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = meta.reset_index(drop=True).copy()
    frame.columns = [str(c) for c in frame.columns]
    for c in frame.columns:  # metadata as text or numbers only: nothing that needs pickling
        if frame[c].dtype == object:
            frame[c] = frame[c].map(lambda v: None if v is None else str(v))
    frame.insert(0, "text", list(texts))
    if "text" in frame.columns[1:]:
        frame = frame.rename(columns={frame.columns[1 + list(frame.columns[1:]).index("text")]: "text_meta"})
    buf = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), buf)
    atomic_write_bytes(out / "points.parquet", buf.getvalue().to_pybytes())


def _chunked_transform(calibrator, vectors: np.ndarray, path: Path, progress: StageProgress | None) -> None:
    """calibrator.transform over ``vectors`` (n, d) in chunks into ``path`` (.npy, renamed when complete)."""
    n = len(vectors)
    tmp = path.with_name(path.name + ".partial")
    mm = None
    for s in range(0, n, CHUNK_ROWS):
        z = np.asarray(calibrator.transform(np.asarray(vectors[s : s + CHUNK_ROWS], np.float32)), np.float32)
        if mm is None:
            mm = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(n, z.shape[1]))
        mm[s : s + len(z)] = z
        if progress is not None:
            progress("calibrate", min(n, s + CHUNK_ROWS), n)
    assert mm is not None
    mm.flush()
    del mm
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _space_dir(out: Path, space: str) -> Path:
    d = out / space
    d.mkdir(parents=True, exist_ok=True)
    return d


def _load(path: Path, mmap: bool = False) -> np.ndarray:
    return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)


def _clusters(texts: Sequence[str], xy: np.ndarray, d: Path) -> None:
    bounds = dens.layout_bounds(xy)
    grid = dens.density_grid(xy, bounds)  # (G, G)
    point_density = dens.point_density(xy, bounds, grid)  # (n,)
    labels = dens.density_clusters(xy, bounds, grid)  # (n,)
    words = dens.cluster_words(texts, labels)
    info = []
    for c in range(int(labels.max()) + 1 if len(labels) and labels.max() >= 0 else 0):
        members = xy[labels == c]
        x, y = np.median(members, axis=0)
        info.append({"cluster": c, "size": len(members), "x": float(x), "y": float(y), "words": words.get(c, [])})
    atomic_save_npy(d / "grid.npy", grid.astype(np.float32))
    atomic_save_npy(d / "density.npy", point_density)
    atomic_save_npy(d / "cluster.npy", labels)
    meta = {"bounds": list(bounds), "clusters": info}
    atomic_write_bytes(d / "clusters.json", json.dumps(meta, indent=1).encode())


class _Stages:
    """Runs named stages once: skips one whose outputs all exist, times the others."""

    def __init__(self, run: AtlasRun, progress: StageProgress | None) -> None:
        self.run, self.progress = run, progress

    def __call__(self, name: str, outputs: Sequence[Path], fn: Callable[[], None]) -> None:
        if all(p.exists() for p in outputs):
            self.run.skipped.append(name)
            return
        t0 = time.perf_counter()
        if self.progress is not None:
            self.progress(name, 0, 1)
        fn()
        self.run.seconds[name] = time.perf_counter() - t0
        self.run.computed.append(name)
        if self.progress is not None:
            self.progress(name, 1, 1)
        log.info("atlas stage %s: %.1f s", name, self.run.seconds[name])


def build_atlas(
    encoder,
    texts: Sequence[str],
    out: str | Path,
    config: AtlasConfig | None = None,
    meta: pd.DataFrame | None = None,
    progress: StageProgress | None = None,
    vectors: np.ndarray | None = None,
) -> AtlasRun:
    """Build (or finish) the atlas of ``texts`` in folder ``out``; see the module doc for the stages.

    ``vectors`` (n, d): embeddings computed elsewhere; then nothing is embedded and ``encoder`` may be None
    (the folder is keyed by a digest of the vectors instead of the model).
    """
    from isoscope.encode.chunked import embed_to_npy
    from isoscope.encode.embed import EmbedConfig

    config = config or AtlasConfig()
    config.validate()
    out = Path(out)
    texts = list(texts)
    n = len(texts)
    if n < 4:
        raise InputError(f"an atlas needs at least 4 texts, got {n}")
    if n > MAX_ATLAS_ROWS:
        raise InputError(f"{n:,} texts is over the atlas limit of {MAX_ATLAS_ROWS:,}; sample the corpus first")
    if any(not t.strip() for t in texts):
        raise InputError("some texts are empty; drop empty rows first (load_corpus does)")
    meta = meta if meta is not None else pd.DataFrame(index=range(n))
    if len(meta) != n:
        raise ValueError(f"metadata has {len(meta)} rows for {n} texts")
    if vectors is not None:
        vectors = np.asarray(vectors, np.float32)
        if vectors.ndim != 2 or len(vectors) != n:
            raise InputError(f"vectors must be ({n}, d) for {n} texts, got shape {vectors.shape}")
        fingerprint = "precomputed-" + hashlib.sha256(np.ascontiguousarray(vectors).data).hexdigest()[:32]
    else:
        fingerprint = encoder.fingerprint
    _check_manifest(out, _signature(fingerprint, text_digest(texts), n, config), config)
    run = AtlasRun(out, n)
    if (w := duplicate_warning(texts)) is not None:
        run.warnings.append(w)
    stage = _Stages(run, progress)
    k = min(config.k, n - 1)
    stage("texts", [out / "points.parquet"], lambda: _save_points(out, texts, meta))

    def embed() -> None:
        if vectors is not None:
            atomic_save_npy(out / "vectors.npy", vectors)
            return
        from isoscope.encode.engines import engine_in_use, fastest_fp32_encoder
        from isoscope.encode.pooling import parse_pooling

        fast = fastest_fp32_encoder(encoder)  # the fp32 vectors within FP32_ENGINE_TOLERANCE, faster; int8 as asked
        spec = parse_pooling(config.pooling, encoder.num_layers, encoder.is_encoder_decoder)
        run.engine = engine_in_use(fast, spec.needs_hidden_states)
        log.info("atlas: embedding %d texts with %s", n, run.engine)
        cfg = EmbedConfig(batch_size=config.batch_size, max_length=config.max_length)
        report = None if progress is None else (lambda d, t: progress("embed", d, t))
        embed_to_npy(fast, texts, out / "vectors.npy", config.pooling, cfg, config.embed_chunk, report)

    stage("embed", [out / "vectors.npy"], embed)
    spaces = ["raw"] + ([] if config.calibrate == "none" else ["cal"])
    for space in spaces:
        d = _space_dir(out, space)
        if space == "cal":
            stage("calibrate", [d / "vectors.npy"], lambda d=d: _calibrate(out, d, config, progress))
        vec_path = out / "vectors.npy" if space == "raw" else d / "vectors.npy"

        def knn(d: Path = d, vec_path: Path = vec_path, space: str = space) -> None:
            report = None if progress is None else (lambda a, b: progress(f"{space}_knn", a, b))
            ids, dist = knn_graph_chunked(_load(vec_path, mmap=True), k + 1, report)
            atomic_save_npy(d / "knn_dist.npy", dist)
            atomic_save_npy(d / "knn_ids.npy", ids)

        if needs_graph(config):
            stage(f"{space}_knn", [d / "knn_ids.npy", d / "knn_dist.npy"], knn)

        def lay(d: Path = d, vec_path: Path = vec_path) -> None:
            graph = (_load(d / "knn_ids.npy"), _load(d / "knn_dist.npy")) if needs_graph(config) else None
            atomic_save_npy(d / "xy.npy", layout(_load(vec_path, mmap=True), config.layout, graph, config.seed))

        stage(f"{space}_layout", [d / "xy.npy"], lay)
        outputs = [d / f for f in ("grid.npy", "density.npy", "cluster.npy", "clusters.json")]
        stage(f"{space}_clusters", outputs, lambda d=d: _clusters(texts, _load(d / "xy.npy"), d))
    stage("extras", [out / f for f in ("norm.npy", "length.npy", "overlap.npy")], lambda: _extras(out, texts, spaces))
    return run


def needs_graph(config: AtlasConfig | dict) -> bool:
    """The kNN graph feeds UMAP and the raw-vs-calibrated overlap; a raw-only PCA map needs neither."""
    get = config.get if isinstance(config, dict) else lambda key: getattr(config, key)
    return get("layout") != "pca" or get("calibrate") != "none"


def _calibrate(out: Path, d: Path, config: AtlasConfig, progress: StageProgress | None) -> None:
    from isoscope.calibrate import load_calibrator, make_calibrator
    from isoscope.sampling import sample_indices

    vectors = _load(out / "vectors.npy", mmap=True)
    cal_dir = d / "calibrator"
    if (cal_dir / "calibrator.json").exists():
        calibrator = load_calibrator(cal_dir)
    else:
        rows = sample_indices(len(vectors), config.fit_rows, config.seed)  # (s,) sorted
        calibrator = make_calibrator(config.calibrate).fit(np.asarray(vectors[rows], np.float32))
        calibrator.save(cal_dir, {"fit_rows": len(rows), "seed": config.seed})
    _chunked_transform(calibrator, vectors, d / "vectors.npy", progress)


def _extras(out: Path, texts: Sequence[str], spaces: Sequence[str]) -> None:
    vectors = _load(out / "vectors.npy", mmap=True)
    norm = np.concatenate(
        [
            np.linalg.norm(np.asarray(vectors[s : s + CHUNK_ROWS], np.float64), axis=1)
            for s in range(0, len(vectors), CHUNK_ROWS)
        ]
    ).astype(np.float32)  # (n,)
    length = np.fromiter((len(t) for t in texts), np.int32, len(texts))  # (n,)
    if "cal" in spaces:
        ids_raw, ids_cal = _load(out / "raw" / "knn_ids.npy"), _load(out / "cal" / "knn_ids.npy")  # (n, k) self first
        overlap = jaccard_tables(ids_raw[:, 1:], ids_cal[:, 1:])[1].astype(np.float32)  # (n,) the row itself left out
    else:
        overlap = np.ones(len(texts), np.float32)
    atomic_save_npy(out / "norm.npy", norm)
    atomic_save_npy(out / "length.npy", length)
    atomic_save_npy(out / "overlap.npy", overlap)


# ---------------------------------------------------------------- reading an atlas back


@dataclass
class AtlasSpace:
    """One space's map: layout, density, clusters, neighbour lists."""

    xy: np.ndarray  # (n, 2) float32
    density: np.ndarray  # (n,) float32 in [0, 1]
    cluster: np.ndarray  # (n,) int32, -1 = none
    grid: np.ndarray  # (G, G) smoothed counts
    bounds: tuple[float, float, float, float]
    clusters: list[dict]  # cluster, size, x, y, words
    knn_ids: np.ndarray | None  # (n, k) int32, column 0 = the row itself; None for a raw-only PCA map

    def cluster_names(self) -> dict[int, str]:
        return {int(c["cluster"]): f"{c['cluster']}: {' · '.join(c['words']) or '(no words)'}" for c in self.clusters}


@dataclass
class Atlas:
    path: Path
    points: pd.DataFrame  # text + metadata, one row per point
    norm: np.ndarray  # (n,)
    length: np.ndarray  # (n,)
    overlap: np.ndarray  # (n,)
    spaces: dict[str, AtlasSpace]
    manifest: dict
    texts: np.ndarray = field(default_factory=lambda: np.zeros(0, object))  # (n,) object, the "text" column

    @property
    def n(self) -> int:
        return len(self.points)

    def vectors(self, space: str = "raw") -> np.ndarray:
        """The space's vectors (n, d), memory-mapped."""
        return _load(self.path / "vectors.npy" if space == "raw" else self.path / space / "vectors.npy", mmap=True)


def is_complete(path: str | Path) -> bool:
    """True when every output of the atlas in ``path`` exists."""
    path = Path(path)
    if not (path / MANIFEST).exists():
        return False
    try:
        config = json.loads((path / MANIFEST).read_text(encoding="utf-8"))["config"]
    except (OSError, ValueError, KeyError):
        return False
    spaces = ["raw"] + ([] if config.get("calibrate") == "none" else ["cal"])
    need = [path / f for f in ("points.parquet", "vectors.npy", "norm.npy", "length.npy", "overlap.npy")]
    for s in spaces:
        need += [path / s / f for f in ("xy.npy", "density.npy", "cluster.npy", "grid.npy", "clusters.json")]
        need += [path / s / "knn_ids.npy"] if needs_graph(config) else []
    return all(p.exists() for p in need)


def load_atlas(path: str | Path) -> Atlas:
    """Read a finished atlas folder (arrays fully in memory except the vectors)."""
    import pyarrow.parquet as pq

    path = Path(path)
    if not is_complete(path):
        raise InputError(f"{path} holds no finished atlas; build it first (python -m isoscope atlas ...)")
    manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    spaces = {}
    for s in SPACES:
        d = path / s
        if not (d / "xy.npy").exists():
            continue
        meta = json.loads((d / "clusters.json").read_text(encoding="utf-8"))
        spaces[s] = AtlasSpace(
            xy=_load(d / "xy.npy"),
            density=_load(d / "density.npy"),
            cluster=_load(d / "cluster.npy"),
            grid=_load(d / "grid.npy"),
            bounds=tuple(meta["bounds"]),
            clusters=meta["clusters"],
            knn_ids=_load(d / "knn_ids.npy", mmap=True) if (d / "knn_ids.npy").exists() else None,
        )
    points = pq.read_table(path / "points.parquet").to_pandas()
    return Atlas(
        path=path,
        points=points,
        norm=_load(path / "norm.npy"),
        length=_load(path / "length.npy"),
        overlap=_load(path / "overlap.npy"),
        spaces=spaces,
        manifest=manifest,
        texts=points["text"].to_numpy(dtype=object),
    )
