"""An atlas folder on disk: what proves its files, the lock of its build, and reading it back.

ledger = Ledger(out)                          # ledger.json: per stage, its inputs' and outputs' SHA-256
ledger.fresh(stage, inputs, outputs)          # outputs intact and built from the inputs as they are now
ledger.record(stage, inputs, outputs)         # after a stage has written its outputs
with build_lock(out, waiting):                # one build per folder, across threads and processes
    ...
atlas = load_atlas(out)                       # every file checked first; InputError names the damaged one

Every file a stage writes is recorded in ``ledger.json`` (size and SHA-256) with the SHA-256 of the files
the stage read. A rerun of the build recomputes a stage whose outputs are missing, cut short or changed, or
whose inputs changed since (so a damaged ``xy.npy`` is rebuilt, and the clusters drawn from it after it). A
reader checks, before decoding anything: each file is a regular file of the recorded size and SHA-256 (the
memory-mapped vectors: size and .npy header), then what the arrays hold (a finite layout, neighbour ids
within the corpus, cluster numbers the clusters file knows, a spatial index whose order and rank are one
permutation and its inverse), a chunk of ``CHECK_ROWS`` rows at a time. Hashes are memoised per file identity
(inode, size, modification time), so one process hashes a file once.

Reading back holds nothing of size n: every per-point array (layouts, densities, clusters, norms, lengths,
overlaps, the spatial index of ``isoscope.atlas.spatial``) is an ``np.memmap`` that checks its file's size
before each read (``isoscope.data.maps.CheckedMap``: a file cut short after it was opened is an InputError, not
SIGBUS), and ``points.parquet`` is opened for reads by row group (``isoscope.atlas.points``); ``Atlas.points`` /
``Atlas.texts`` read the whole table only when a caller asks for it (the Neighbours page), never on the map's path.

The build lock is ``isoscope.cache.file_lock`` on a file next to the folder (``.<name>.lock``): a second build
of the same folder (another session of the app, another ``isoscope atlas``) waits for the first, then finds its
stages done and reuses them. Where ``fcntl`` is missing (Windows) builds in one process are still serialised.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from isoscope.atlas.points import PointsFile
from isoscope.atlas.spatial import INDEX_FILES, SpatialIndex, World
from isoscope.cache import atomic_write_bytes, file_lock, file_sha256
from isoscope.data.jsonfile import SHA256, Int, ListOf, MapOf, Num, Str, Struct, Tuple, read_json
from isoscope.data.maps import checked_map
from isoscope.errors import InputError
from isoscope.paths import NotRegularFile, check_regular, open_regular

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
LEDGER = "ledger.json"
SPACES: tuple[str, ...] = ("raw", "cal")
SPACE_FILES = ("xy.npy", "density.npy", "cluster.npy", "grid.npy", "clusters.json")
ROOT_FILES = ("points.parquet", "vectors.npy", "norm.npy", "length.npy", "overlap.npy")
HASH_ON_LOAD_MAX = 512 * 2**20  # bytes: bigger files (the memory-mapped vectors) are checked by size and header
CHECK_ROWS = 1 << 20  # rows of a memory-mapped array checked at a time (finite values, id ranges)
REBUILD = "rerun its isoscope atlas command to rebuild it"
EXTRAS = "extras"  # extras/<name>.npy: one float per point added after the build (isoscope.atlas.extras), a colour
EXTRA_NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")
# the folder's JSON files, read by the bounded reader (isoscope.data.jsonfile) against these schemas
LEDGER_SCHEMA = Struct(
    {
        "stages": MapOf(
            Struct({"inputs": MapOf(SHA256), "outputs": MapOf(Tuple((Int(lo=0), SHA256), name="[bytes, sha256]"))})
        )
    },
    {"format": Str()},
)
MANIFEST_SCHEMA = Struct({"config": Struct(), "n": Int(lo=0)}, {"version": Int(), "format": Str()})
CLUSTER = Struct({"cluster": Int(lo=0), "size": Int(lo=0), "x": Num(), "y": Num(), "words": ListOf(Str())})
CLUSTERS_SCHEMA = Struct(
    {"bounds": Tuple((Num(),) * 4, name="[x0, y0, x1, y1] of finite numbers"), "clusters": ListOf(CLUSTER)},
    {"levels": ListOf(Struct({"clusters": ListOf(CLUSTER)}))},
)
_digests: dict[tuple, str] = {}
_digests_lock = threading.Lock()


class AtlasDamaged(InputError):
    """A file of an atlas folder is missing, cut short, changed or holds impossible values."""


def _regular(path: Path) -> os.stat_result:
    """``isoscope.paths.check_regular``: a FIFO, device, socket or folder is refused before opening."""
    try:
        return check_regular(path)
    except NotRegularFile as exc:
        raise AtlasDamaged(f"{path.name} is a {exc.kind}, not a regular file") from None


def file_digest(path: Path) -> str:
    """SHA-256 (hex) of a regular file, memoised by its identity (device, inode, size, mtime)."""
    st = _regular(path)
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _digests_lock:
        if key in _digests:
            return _digests[key]
    digest = file_sha256(path)
    with _digests_lock:
        _digests[key] = digest
    return digest


@dataclass
class Ledger:
    """``ledger.json`` of an atlas folder: {stage: {"inputs": {file: sha256}, "outputs": {file: [bytes, sha256]}}}
    with file names relative to the folder."""

    out: Path
    stages: dict = field(default_factory=dict)
    damage: str | None = field(default=None, repr=False)  # why ledger.json was unreadable (a reader says it)

    def __post_init__(self) -> None:
        path = self.out / LEDGER
        if os.path.lexists(path):
            try:
                self.stages = read_json(path, what=LEDGER, schema=LEDGER_SCHEMA, error=AtlasDamaged, fix=REBUILD)[
                    "stages"
                ]
            except (OSError, InputError) as exc:  # a build rebuilds every stage; load_atlas refuses the folder
                self.damage = str(exc) if isinstance(exc, InputError) else f"{LEDGER} cannot be read ({exc.strerror})"
                log.warning("atlas %s: %s; every stage is rebuilt", self.out.name, self.damage)
                self.stages = {}

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.out).as_posix()

    def fresh(self, stage: str, inputs: Sequence[Path], outputs: Sequence[Path]) -> bool:
        """True when ``stage`` was recorded from ``inputs`` as they are now and its ``outputs`` are intact."""
        entry = self.stages.get(stage)
        if not isinstance(entry, dict):
            return False
        try:
            want_in = {self._rel(p): file_digest(p) for p in inputs}
            if entry.get("inputs") != want_in:
                return False
            recorded = entry.get("outputs", {})
            if set(recorded) != {self._rel(p) for p in outputs}:
                return False
            for p in outputs:
                size, digest = recorded[self._rel(p)]
                if _regular(p).st_size != size or file_digest(p) != digest:
                    log.warning("atlas %s: %s is damaged (size or SHA-256 differs); rebuilding", self.out, p.name)
                    return False
        except (OSError, InputError, ValueError, TypeError):
            return False
        return True

    def record(self, stage: str, inputs: Sequence[Path], outputs: Sequence[Path]) -> None:
        self.stages[stage] = {
            "inputs": {self._rel(p): file_digest(p) for p in inputs},
            "outputs": {self._rel(p): [_regular(p).st_size, file_digest(p)] for p in outputs},
        }
        data = json.dumps({"format": "isoscope-atlas-ledger", "stages": self.stages}, indent=1).encode()
        atomic_write_bytes(self.out / LEDGER, data)

    def output(self, rel: str) -> tuple[int, str] | None:
        """(bytes, sha256) recorded for the file ``rel``, or None."""
        for entry in self.stages.values():
            if isinstance(entry, dict) and rel in entry.get("outputs", {}):
                size, digest = entry["outputs"][rel]
                return int(size), str(digest)
        return None


# ---------------------------------------------------------------- the build lock


def build_lock(out: Path, waiting: Callable[[], None] | None = None) -> contextlib.AbstractContextManager[None]:
    """Hold the build of folder ``out``: other threads and processes wait here (``waiting()`` is called once
    when this one has to wait) until the holder is done (``isoscope.cache.file_lock`` on ``.<name>.lock``
    next to the folder)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return file_lock(out.parent / f".{out.name}.lock", waiting)


# ---------------------------------------------------------------- reading an atlas back


@dataclass
class AtlasSpace:
    """One space's map: layout, density, clusters (the default level and every level), neighbour lists, and
    the spatial index written by the build (None for a folder built before it: built in memory when served).
    Read from a folder, the per-point arrays are memory maps."""

    xy: np.ndarray  # (n, 2) float32
    density: np.ndarray  # (n,) float32 in [0, 1]
    cluster: np.ndarray  # (n,) int32, -1 = none (the default level)
    grid: np.ndarray  # (G, G) smoothed counts
    bounds: tuple[float, float, float, float]
    clusters: list[dict]  # cluster, size, x, y, words (the default level)
    knn_ids: np.ndarray | None  # (n, k) int32, column 0 = the row itself; None for a raw-only PCA map
    levels: list[list[dict]] = field(default_factory=list)  # clusters of every level, coarse to fine
    index: SpatialIndex | None = None  # the folder's Morton-order index, memory-mapped

    @functools.cached_property
    def view(self) -> tuple[float, float, float, float]:
        """The box the map opens on: the bulk of the points (``density.view_box``), stray points outside."""
        from isoscope.atlas.density import view_box

        return view_box(self.xy)

    def cluster_names(self) -> dict[int, str]:
        return {int(c["cluster"]): f"{c['cluster']}: {' · '.join(c['words']) or '(no words)'}" for c in self.clusters}


@dataclass
class Atlas:
    """An atlas read back. Per-point arrays are memory maps; texts and metadata stay in ``points.parquet`` and
    are read per row (``texts_at``, ``table_at``, ``search``, ``column_chunks``: ``isoscope.atlas.points``).
    ``points`` and ``texts`` (the whole table and text column) are read on first use only, under the decode
    limits of any Parquet file; the map never uses them. Built by hand, ``frame`` and ``text_array`` are given."""

    path: Path
    frame: object | None  # pandas.DataFrame: text + metadata, one row per point; None: read on first use
    norm: np.ndarray  # (n,)
    length: np.ndarray  # (n,)
    overlap: np.ndarray  # (n,)
    spaces: dict[str, AtlasSpace]
    manifest: dict
    text_array: np.ndarray | None = None  # (n,) object, the "text" column; None: read on first use
    rows: PointsFile | None = None  # points.parquet, read by row group
    extras: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (n,) float, memory-mapped (EXTRAS)

    @property
    def n(self) -> int:
        return self.rows.n if self.rows is not None else len(self.points)

    @property
    def points(self) -> pd.DataFrame:
        """The whole table (read once, on first use: Open in Neighbours; never on the map's path)."""
        if self.frame is None:
            self.frame = _points(self.path / "points.parquet", self.n)
        return self.frame  # type: ignore[return-value]

    @property
    def texts(self) -> np.ndarray:
        """The whole text column (n,) object (read once, on first use)."""
        if self.text_array is None or (len(self.text_array) == 0 and self.n):
            self.text_array = self.points["text"].to_numpy(dtype=object)
        return self.text_array

    @property
    def columns(self) -> list[str]:
        """The metadata columns (every column but the text)."""
        names = self.rows.columns if self.rows is not None else list(self.points.columns)
        return [c for c in names if c != "text"]

    def texts_at(self, rows: np.ndarray | Sequence[int]) -> list[str]:
        """The texts of ``rows`` (m,), in their order."""
        if self.rows is not None and self.text_array is None:
            return self.rows.texts(rows)
        return [str(t) for t in self.texts[np.asarray(rows, np.int64)]]

    def table_at(self, rows: np.ndarray | Sequence[int], columns: Sequence[str]) -> pd.DataFrame:
        """A frame of the metadata ``columns`` at ``rows`` (m,), in their order."""
        if self.rows is not None and self.frame is None:
            return self.rows.take(rows, columns)
        return self.points[list(columns)].iloc[np.asarray(rows, np.int64)].reset_index(drop=True)

    def column_chunks(self, column: str) -> Iterator[tuple[int, pd.Series]]:
        """(first row, values) of a metadata column, one row group at a time."""
        if self.rows is not None and self.frame is None:
            yield from self.rows.chunks(column)
            return
        yield 0, self.points[column].reset_index(drop=True)

    def search(self, query: str) -> np.ndarray:
        """Rows (m,) int64, ascending, whose text contains ``query`` ignoring case (plain text, not a pattern)."""
        if self.rows is not None and self.text_array is None:
            return self.rows.search(query)
        texts = self.points["text"]
        return np.flatnonzero(texts.str.contains(query, case=False, regex=False).to_numpy(bool, na_value=False))

    def vectors(self, space: str = "raw") -> np.ndarray:
        """The space's vectors (n, d), memory-mapped."""
        rel = "vectors.npy" if space == "raw" else f"{space}/vectors.npy"
        return checked_map(np.load(self.path / rel, mmap_mode="r", allow_pickle=False), f"{self.path.name}/{rel}")


def space_names(config: dict) -> list[str]:
    return ["raw"] + ([] if config.get("calibrate") == "none" else ["cal"])


def needs_graph(config: dict) -> bool:
    """The kNN graph feeds UMAP and the raw-vs-calibrated overlap; a raw-only PCA map needs neither."""
    return config.get("layout") != "pca" or config.get("calibrate") != "none"


def required_files(path: Path, config: dict) -> list[Path]:
    """Every file of a finished atlas built with ``config`` (the manifest's)."""
    need = [path / f for f in ROOT_FILES]
    for s in space_names(config):
        need += [path / s / f for f in SPACE_FILES]
        need += [path / s / "vectors.npy"] if s != "raw" else []
        need += [path / s / "knn_ids.npy"] if needs_graph(config) else []
    return need


def _manifest(path: Path, *, strict: bool = False) -> dict | None:
    """manifest.json through the bounded reader; None when there is none, or (not ``strict``) when it is
    unreadable; ``strict``: AtlasDamaged naming the field."""
    try:
        return read_json(path / MANIFEST, what=MANIFEST, schema=MANIFEST_SCHEMA, error=AtlasDamaged, fix=REBUILD)
    except FileNotFoundError:
        return None
    except (OSError, InputError):
        if strict:
            raise
        return None


def read_clusters(path: Path, rel: str) -> dict:
    """A space's ``clusters.json`` (``rel`` names it) through the bounded reader and ``CLUSTERS_SCHEMA``."""
    return read_json(path, what=rel, schema=CLUSTERS_SCHEMA, error=AtlasDamaged, fix=REBUILD)


def is_complete(path: str | Path) -> bool:
    """True when every file of the atlas in ``path`` exists with the size its ledger recorded (no hashing:
    ``load_atlas`` checks the contents)."""
    path = Path(path)
    manifest = _manifest(path)
    if manifest is None:
        return False
    ledger = Ledger(path)
    for p in required_files(path, manifest["config"]):
        rec = ledger.output(p.relative_to(path).as_posix())
        try:
            if rec is None or _regular(p).st_size != rec[0]:
                return False
        except (OSError, InputError):
            return False
    return True


def is_atlas_folder(path: str | Path) -> bool:
    """True when ``path`` is a folder holding an atlas's manifest (finished or not)."""
    return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()


def finished_atlas(given: str | Path) -> Path:
    """The absolute path of the finished atlas folder ``given`` (``isoscope atlas --out FOLDER``); an InputError
    of one line when it is not a folder, not an atlas, or an unfinished build."""
    path = Path(given).expanduser().resolve()
    if not path.is_dir():
        raise InputError(f"atlas folder not found: {given}")
    if not is_atlas_folder(path):
        raise InputError(
            f"{given} is not an atlas folder (no {MANIFEST}): build one with isoscope atlas --input CORPUS --out {given}"
        )
    _manifest(path, strict=True)  # a damaged manifest or ledger is named, not called unfinished
    if (damage := Ledger(path).damage) is not None:
        raise AtlasDamaged(damage)
    if not is_complete(path):
        raise InputError(f"{given} holds an unfinished atlas: rerun its isoscope atlas command to finish it")
    return path


def _verified(path: Path, rel: str, ledger: Ledger) -> Path:
    """``path / rel`` after checking it against the ledger (size, and SHA-256 up to ``HASH_ON_LOAD_MAX``)."""
    p = path / rel
    rec = ledger.output(rel)
    if rec is None:
        raise AtlasDamaged(f"{rel} is not recorded in the atlas's ledger")
    try:
        size = _regular(p).st_size
    except FileNotFoundError:
        raise AtlasDamaged(f"{rel} is missing") from None
    if size != rec[0]:
        raise AtlasDamaged(f"{rel} has {size:,} bytes, {rec[0]:,} were written (cut short or replaced)")
    if size <= HASH_ON_LOAD_MAX and file_digest(p) != rec[1]:
        raise AtlasDamaged(f"{rel} was changed after it was written (SHA-256 differs)")
    return p


def _array(path: Path, rel: str, ledger: Ledger, *, shape: tuple, kinds: str, mmap: bool = False) -> np.ndarray:
    """A checked .npy: its header's shape must match ``shape`` (None = any) and its dtype kind ``kinds``."""
    p = _verified(path, rel, ledger)
    with open_regular(p) as f:
        try:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            header = read(f)
        except (ValueError, OSError) as exc:
            raise AtlasDamaged(f"{rel} is not a .npy file ({exc})") from None
    got, _, dtype = header
    if len(got) != len(shape) or any(w is not None and g != w for g, w in zip(got, shape, strict=True)):
        raise AtlasDamaged(f"{rel} has shape {got}, expected {tuple('any' if w is None else w for w in shape)}")
    if dtype.kind not in kinds or dtype.hasobject:
        raise AtlasDamaged(f"{rel} holds {dtype}, not numbers")
    if not mmap:
        return np.load(p, allow_pickle=False)
    return checked_map(np.load(p, mmap_mode="r", allow_pickle=False), f"{path.name}/{rel}")  # reads check the size


def _finite(rel: str, a: np.ndarray) -> np.ndarray:
    """``a`` (memory-mapped) after checking, ``CHECK_ROWS`` rows at a time, that it holds finite numbers."""
    for s in range(0, len(a), CHECK_ROWS):
        if not np.isfinite(np.asarray(a[s : s + CHECK_ROWS])).all():
            raise AtlasDamaged(f"{rel} holds NaN or infinite values")
    return a


def _load_index(path: Path, s: str, n: int, ledger: Ledger, bounds: tuple) -> SpatialIndex | None:
    """The space's spatial index (``isoscope.atlas.spatial.INDEX_FILES``) memory-mapped and checked chunk by
    chunk (codes ascending, order and rank inverse permutations of 0..n-1, a finite layout); None for a folder
    whose build wrote none (the server then builds one in memory)."""
    rels = [f"{s}/{name}" for name in INDEX_FILES]
    if all(ledger.output(rel) is None for rel in rels):
        log.info("atlas %s: no spatial index on disk (an older build); the map builds one in memory", path.name)
        return None
    codes = _array(path, rels[0], ledger, shape=(n,), kinds="u", mmap=True)
    order = _array(path, rels[1], ledger, shape=(n,), kinds="i", mmap=True)
    rank = _array(path, rels[2], ledger, shape=(n,), kinds="i", mmap=True)
    xy = _finite(rels[3], _array(path, rels[3], ledger, shape=(n, 2), kinds="f", mmap=True))
    if codes.dtype != np.uint32 or xy.dtype != np.float32:
        raise AtlasDamaged(f"{s}/{INDEX_FILES[0]} or {INDEX_FILES[3]} holds the wrong number type")
    last = None
    for a in range(0, n, CHECK_ROWS):
        block = np.asarray(codes[a : a + CHECK_ROWS], np.int64)  # (m,)
        if (np.diff(block) < 0).any() or (last is not None and len(block) and block[0] < last):
            raise AtlasDamaged(f"{rels[0]} is not in ascending order")
        last = block[-1] if len(block) else last
        pos = np.asarray(order[a : a + CHECK_ROWS], np.int64)
        if len(pos) and (pos.min() < 0 or pos.max() >= n):
            raise AtlasDamaged(f"{rels[1]} names rows outside 0..{n - 1}")
        if not np.array_equal(np.asarray(rank[pos], np.int64), np.arange(a, a + len(pos))):
            raise AtlasDamaged(f"{rels[1]} and {INDEX_FILES[2]} are not one permutation and its inverse")
    return SpatialIndex(World.around(bounds), codes=codes, order=order, xy=xy, rank=rank)


def _load_space(path: Path, s: str, n: int, ledger: Ledger, graph: bool) -> AtlasSpace:
    meta = read_clusters(_verified(path, f"{s}/clusters.json", ledger), f"{s}/clusters.json")
    bounds = tuple(float(b) for b in meta["bounds"])
    clusters = list(meta["clusters"])
    levels = [list(lv["clusters"]) for lv in meta.get("levels", [])]
    xy = _finite(f"{s}/xy.npy", _array(path, f"{s}/xy.npy", ledger, shape=(n, 2), kinds="f", mmap=True))
    density = _finite(f"{s}/density.npy", _array(path, f"{s}/density.npy", ledger, shape=(n,), kinds="f", mmap=True))
    cluster = _array(path, f"{s}/cluster.npy", ledger, shape=(n,), kinds="iu", mmap=True)
    lo, hi = _id_range(cluster)
    if len(cluster) and (lo < -1 or hi >= len(clusters)):
        raise AtlasDamaged(f"{s}/cluster.npy numbers clusters beyond the {len(clusters)} of clusters.json")
    grid = _finite(f"{s}/grid.npy", _array(path, f"{s}/grid.npy", ledger, shape=(None, None), kinds="f"))
    ids = None
    if graph:
        ids = _array(path, f"{s}/knn_ids.npy", ledger, shape=(n, None), kinds="iu", mmap=True)
        lo, hi = _id_range(ids)
        if lo < 0 or hi >= n:
            raise AtlasDamaged(f"{s}/knn_ids.npy names rows outside 0..{n - 1}")
    if s != "raw":
        _array(path, f"{s}/vectors.npy", ledger, shape=(n, None), kinds="f", mmap=True)
    index = _load_index(path, s, n, ledger, bounds)
    return AtlasSpace(xy, density, cluster, grid, bounds, clusters, ids, levels, index)  # type: ignore[arg-type]


def _id_range(ids: np.ndarray, chunk: int = CHECK_ROWS) -> tuple[int, int]:
    """(smallest, largest) value of ``ids`` (memory-mapped), ``chunk`` rows at a time; (0, -1) when empty."""
    lo, hi = None, None
    for s in range(0, len(ids), chunk):
        block = np.asarray(ids[s : s + chunk])
        if block.size:
            b_lo, b_hi = int(block.min()), int(block.max())
            lo, hi = (b_lo, b_hi) if lo is None else (min(lo, b_lo), max(hi, b_hi))
    return (0, -1) if lo is None else (lo, hi)


def _points(path: Path, n: int) -> pd.DataFrame:
    """points.parquet read under the decode limits of any user file (``isoscope.data.parquet``: the bytes its
    pages decode to within ``ISOSCOPE_MAX_PARQUET_BYTES``, each dictionary once, texts cut to
    ``ISOSCOPE_MAX_CHARS`` as the corpus's were), for its ``n`` rows and the text column besides the corpus's."""
    from isoscope.data.limits import current_limits
    from isoscope.data.parquet import read_parquet
    from isoscope.data.source import Source

    limits = current_limits()
    limits = limits.replace(max_rows=max(n, 1), max_columns=limits.max_columns + 1)
    points, _ = read_parquet(Source("points.parquet", path=path), "points.parquet", limits)
    return points


def load_atlas(path: str | Path) -> Atlas:
    """Open a finished atlas folder without reading it whole: every file checked first (``AtlasDamaged``, an
    InputError naming the file, when one is not what was written: size and SHA-256 up to
    ``HASH_ON_LOAD_MAX``, the .npy header, then the values ``CHECK_ROWS`` rows at a time), the per-point
    arrays memory-mapped (``np.memmap``), ``points.parquet`` opened for reads by row group."""
    import pyarrow.parquet as pq

    path = Path(path)
    manifest = _manifest(path, strict=True)
    if manifest is None:
        raise InputError("the folder holds no finished atlas; build it first (isoscope atlas --input ... --out DIR)")
    ledger = Ledger(path)
    if ledger.damage is not None:
        raise AtlasDamaged(ledger.damage)
    if not is_complete(path):
        recorded = [
            p for p in required_files(path, manifest["config"]) if ledger.output(p.relative_to(path).as_posix())
        ]
        if len(recorded) < len(required_files(path, manifest["config"])):  # a build not finished (or never run)
            raise InputError(
                "the folder holds no finished atlas; build it first (isoscope atlas --input ... --out DIR)"
            )
        for p in recorded:  # every file was written once: name the one that is not as written
            _verified(path, p.relative_to(path).as_posix(), ledger)
    n = manifest["n"]
    config = manifest["config"]
    points_path = _verified(path, "points.parquet", ledger)  # SHA-256 before a byte is decoded
    try:
        rows = pq.ParquetFile(points_path).metadata.num_rows
    except (OSError, ValueError) as exc:
        raise AtlasDamaged(f"points.parquet is not readable ({type(exc).__name__})") from None
    if rows != n:
        raise AtlasDamaged(f"points.parquet has {rows:,} rows for an atlas of {n:,}")
    try:
        rows = PointsFile.open(points_path, n)  # footer and page headers checked; nothing decoded
    except InputError as exc:  # its own reason: over a decode limit, not Parquet
        raise AtlasDamaged(str(exc)) from None
    if "text" not in rows.columns:
        raise AtlasDamaged("points.parquet has no text column")
    _array(path, "vectors.npy", ledger, shape=(n, None), kinds="f", mmap=True)
    spaces = {s: _load_space(path, s, n, ledger, needs_graph(config)) for s in space_names(config)}
    norm = _finite("norm.npy", _array(path, "norm.npy", ledger, shape=(n,), kinds="f", mmap=True))
    length = _array(path, "length.npy", ledger, shape=(n,), kinds="iu", mmap=True)
    overlap = _finite("overlap.npy", _array(path, "overlap.npy", ledger, shape=(n,), kinds="f", mmap=True))
    return Atlas(path, None, norm, length, overlap, spaces, manifest, rows=rows, extras=_load_extras(path, n, ledger))


def _load_extras(path: Path, n: int, ledger: Ledger) -> dict[str, np.ndarray]:
    """Every per-point column the ledger records under ``extras/`` (``isoscope.atlas.extras.write_extra``), each
    checked like the build's arrays ((n,) floats, its SHA-256); NaN allowed: a point without a value."""
    rels = sorted(
        {rel for entry in ledger.stages.values() if isinstance(entry, dict) for rel in entry.get("outputs", {})}
    )
    out = {}
    for rel in rels:
        folder, _, file = rel.partition("/")
        if folder != EXTRAS:
            continue
        name = file.removesuffix(".npy")
        if not file.endswith(".npy") or not EXTRA_NAME.fullmatch(name):
            raise AtlasDamaged(f"{rel} is not an extra column's file (extras/NAME.npy)")
        out[name] = _array(path, rel, ledger, shape=(n,), kinds="f", mmap=True)
    return out
