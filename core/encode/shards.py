"""Embedding corpora beyond one machine: shards of vectors written by a pool of Ray actors.

Beyond one machine (``embed_with_ray``): the same ``encode`` runs in a pool of Ray actors (one model
each; ``map_batches`` with ``compute=ActorPoolStrategy(size=num_actors)``, the non-deprecated form of
``concurrency``) over Ray Data items of ``shard_rows`` texts; each actor writes ``shard-NNNNNN.npz`` (``ids``
int64 (m,), ``vectors`` float32 (m, d); no pickle) atomically into ``shard_dir`` next to a
``manifest.json``. Shards already on disk are skipped, so a rerun resumes. On a cluster ``shard_dir``
must be a filesystem every node sees and the nodes need the model (``isoscope`` itself is shipped to them
as a Ray ``py_modules`` package).
``load_shards`` reads them back in id order; ``build_ivfpq_from_shards`` indexes corpora whose flat
vectors do not fit in memory.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from isoscope.cache import atomic_write_bytes
from isoscope.data.jsonfile import Bool, Int, Nullable, Str, Struct, read_json
from isoscope.data.limits import check_count
from isoscope.encode.chunked import FORMAT_VERSION, ParquetColumn, TextSource, iter_chunks, plan_run
from isoscope.encode.embed import EmbedConfig, encode
from isoscope.encode.pooling import Pooling
from isoscope.errors import InputError

log = logging.getLogger(__name__)

DEFAULT_SHARD_ROWS = 1024
SHARDS_FORMAT = "isoscope-embedding-shards"
MANIFEST_SCHEMA = Struct(
    {"format": Str()},
    {"n": Int(lo=0), "dim": Nullable(Int(lo=1)), "complete": Bool(), "num_shards": Int(lo=0), "shard_rows": Int(lo=1)},
)
SHARD_GLOB = "shard-*.npz"
MANIFEST = "manifest.json"


def shard_path(shard_dir: Path, shard: int) -> Path:
    return shard_dir / f"shard-{shard:06d}.npz"


def write_shard(shard_dir: Path, shard: int, *, ids: np.ndarray, vectors: np.ndarray) -> Path:
    """Save one shard atomically: ``ids`` (m,) int64 and ``vectors`` (m, d) float32 in an .npz."""
    import io

    buf = io.BytesIO()
    np.savez(buf, ids=np.asarray(ids, np.int64), vectors=np.asarray(vectors, np.float32))
    path = shard_path(shard_dir, shard)
    atomic_write_bytes(path, buf.getvalue())
    return path


def read_shard(path: Path, ids_only: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """(ids (m,), vectors (m, d) or None) of one shard; InputError when it is unreadable or inconsistent."""
    try:
        with np.load(path, allow_pickle=False) as z:
            ids = np.asarray(z["ids"], np.int64)
            vectors = None if ids_only else np.asarray(z["vectors"], np.float32)
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(f"{path.name} is not a readable shard ({type(exc).__name__}); delete it and rerun") from None
    if ids.ndim != 1 or (vectors is not None and (vectors.ndim != 2 or len(vectors) != len(ids))):
        raise InputError(f"{path.name}: ids and vectors do not match; delete it and rerun")
    return ids, vectors


def read_manifest(shard_dir: Path) -> dict | None:
    path = Path(shard_dir) / MANIFEST
    if not path.exists():
        return None
    meta = read_json(path, schema=MANIFEST_SCHEMA, fix="delete the shard folder and rerun")  # isoscope.data.jsonfile
    if meta.get("format") != SHARDS_FORMAT:
        raise InputError(f"{path} is not an Isoscope shard manifest")
    return meta


def _write_manifest(shard_dir: Path, meta: dict) -> None:
    atomic_write_bytes(Path(shard_dir) / MANIFEST, json.dumps(meta, indent=2).encode())


class ShardEmbedder:
    """Ray Data actor: loads one model, embeds whole shards and writes them to ``shard_dir``."""

    def __init__(
        self,
        *,
        model: str,
        pooling: str,
        batch_size: int,
        max_length: int,
        shard_dir: str,
        device: str = "cpu",
        dtype: str = "float32",
    ) -> None:
        from isoscope.encode.models import load_encoder

        self.encoder = load_encoder(model or None, device, dtype=dtype)
        self.pooling = pooling
        self.config = EmbedConfig(batch_size=batch_size, max_length=max_length)
        self.shard_dir = Path(shard_dir)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows, dims = [], []
        for shard, start, texts in zip(batch["shard"], batch["start"], batch["texts"], strict=True):
            if isinstance(texts, dict):  # a reference: the rows of a Parquet column, read here (ParquetColumn)
                source = ParquetColumn(Path(texts["path"]), texts["column"])
                texts = source.rows(int(start), int(start) + int(texts["rows"]))
            texts = [str(t) for t in texts]
            vectors = encode(self.encoder, texts, self.pooling, config=self.config)  # (m, d)
            ids = np.arange(int(start), int(start) + len(texts), dtype=np.int64)  # (m,)
            write_shard(self.shard_dir, int(shard), ids=ids, vectors=vectors)
            rows.append(len(texts))
            dims.append(vectors.shape[1])
        return {"shard": np.asarray(batch["shard"], np.int64), "rows": np.array(rows), "dim": np.array(dims)}


@dataclass
class ShardRun:
    """What ``embed_with_ray`` did."""

    shard_dir: Path
    n: int
    dim: int
    shard_rows: int
    num_shards: int
    computed_shards: list[int] = field(default_factory=list)
    resumed_shards: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # from reading a .txt source (encoding, truncation)


def _finished_shards(shard_dir: Path, n: int, shard_rows: int) -> set[int]:
    done = set()
    for path in shard_dir.glob(SHARD_GLOB):
        try:
            shard = int(path.stem.split("-")[1])
            ids, _ = read_shard(path, ids_only=True)
        except (InputError, ValueError, IndexError):
            log.warning("ignoring unreadable shard %s; it will be recomputed", path.name)
            continue
        start = shard * shard_rows
        if np.array_equal(ids, np.arange(start, min(n, start + shard_rows))):
            done.add(shard)
    return done


RAY_MISSING = 'the ray engine needs Ray, an optional extra: pip install "isoscope[ray]"'


def require_ray() -> None:
    """InputError (one line naming the extra to install) when Ray Data is not installed."""
    try:
        import ray.data  # noqa: F401
    except ImportError:
        raise InputError(RAY_MISSING) from None


def package_for_workers(folder: Path | None = None) -> Path:
    """A folder named ``isoscope`` holding this package without the dashboard, for Ray's ``py_modules``.

    Ray imports a shipped folder under the folder's own name; in a checkout the package lives in ``core/``
    (mapped to ``isoscope`` by the install), so the library is copied into ``<folder>/isoscope``.
    """
    import shutil
    import tempfile

    from isoscope.paths import PACKAGE

    source = PACKAGE
    target = Path(folder or tempfile.mkdtemp(prefix="isoscope-ray-")) / "isoscope"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "dashboard")
    shutil.copytree(source, target, ignore=ignore, dirs_exist_ok=True)
    return target


def _ray_init(address: str, num_cpus: int) -> bool:
    """Connect to Ray (``local``: start a private instance; a cluster's address is checked first and must answer
    in time: ``isoscope.encode.ray_address``). Returns True when this call started it."""
    from isoscope.encode.ray_address import connect, parse_ray_address

    parse_ray_address(address)  # the form first, before Ray is imported
    try:
        import ray
        import ray.data
    except ImportError:
        raise InputError(RAY_MISSING) from None
    # Ray's bar manager (ray.experimental.tqdm_ray), made when the driver first prints a worker's error (a task
    # retried), would put its own print in builtins for the life of the process: numba then refuses every kernel
    # that prints, such as pynndescent's NN-descent, compiled at its first call (the landmarks' graph)
    os.environ.setdefault("RAY_TQDM_PATCH_PRINT", "0")
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    return connect(address, num_cpus, ship=lambda: str(package_for_workers()))


def actor_device(device: str) -> str:
    """The device each actor loads its model on: ``cuda`` for any CUDA device (Ray gives each actor its own GPU,
    which the actor sees as ``cuda:0``); ``auto`` is decided here, by this machine's hardware; else as given."""
    from isoscope.encode.device import parse_device, resolve_device

    text = parse_device(device)
    if text == "auto":
        text = resolve_device("auto").type
    return "cuda" if text.startswith("cuda") else text


def actor_options(device: str) -> dict[str, int]:
    """Ray's resources for one embedding actor on ``device`` (``actor_device``'s answer): one CPU, and one GPU
    each when the device is CUDA."""
    return {"num_cpus": 1, "num_gpus": 1} if device == "cuda" else {"num_cpus": 1}


def pool_size(num_actors: int, shards: int, *, cpus: int | None = None) -> int:
    """How many actors to start: ``num_actors``, but never more than the shards to embed, nor than ``cpus``, the
    CPUs of a Ray started here for this run (each actor asks for one: more would wait, each holding its model)."""
    return max(1, min(num_actors, shards, cpus or num_actors))


def embed_with_ray(
    source: TextSource,
    shard_dir: str | Path,
    *,
    model: str | None = None,
    pooling: Pooling = None,
    config: EmbedConfig | None = None,
    shard_rows: int = DEFAULT_SHARD_ROWS,
    num_actors: int = 2,
    address: str = "local",
    num_cpus: int = 2,
    device: str = "cpu",
    dtype: str = "float32",
) -> ShardRun:
    """Embed ``source`` with a pool of ``num_actors`` Ray actors into shards in ``shard_dir``.

    ``address`` is ``local`` (start Ray here with ``num_cpus``) or a cluster address such as
    ``ray://head:10001`` / ``auto``. Every actor loads ``model`` (default: the embedded
    all-MiniLM-L6-v2) and runs ``isoscope.encode.embed.encode`` over whole shards of ``shard_rows`` texts, so the
    vectors equal a single-process run. Shards already in ``shard_dir`` are kept (resume). When Ray is
    already initialised in this process it is used as it is (workers must then be able to import core).
    Actors load the model on ``device`` in ``dtype`` (``actor_device``); on CUDA each asks Ray for a GPU
    (``actor_options``). This process loads its own copy on the CPU in float32, for the checks and the fingerprint.
    """
    from isoscope.encode.device import parse_dtype
    from isoscope.encode.models import load_encoder

    config = config or EmbedConfig()
    shard_dir = Path(shard_dir)
    check_count("chunk_size", shard_rows, "shard rows")  # isoscope.data.limits.COUNTS: before anything starts
    check_count("actors", num_actors, "the number of actors")
    check_count("num_cpus", num_cpus, "the number of CPUs")
    if model and Path(model).expanduser().exists():  # a local folder: absolute, since workers run elsewhere
        model = str(Path(model).expanduser().resolve())
    on, dtype = actor_device(device), parse_dtype(dtype)
    encoder = load_encoder(model or None, "cpu")  # checks model and pooling before any work; gives the fingerprint
    plan = plan_run(encoder, source, pooling=pooling, config=config, chunk_size=shard_rows)
    n, num_shards = plan.n, plan.num_chunks
    signature = {"format": SHARDS_FORMAT, "version": FORMAT_VERSION, **plan.signature, "num_shards": num_shards}
    if dtype != "float32":  # a half dtype changes the vectors (float32 runs keep their manifests' signature)
        signature["dtype"] = dtype
    signature["shard_rows"] = signature.pop("chunk_size")
    old = read_manifest(shard_dir)
    if old is not None and {k: old.get(k) for k in signature} != signature:
        raise InputError(
            f"{shard_dir} holds shards of another run (texts, model or settings differ); use an empty folder"
        )
    if old is None and shard_dir.exists() and any(shard_dir.glob(SHARD_GLOB)):
        raise InputError(f"{shard_dir} holds shards without a manifest; use an empty folder")
    shard_dir.mkdir(parents=True, exist_ok=True)
    done = _finished_shards(shard_dir, n, shard_rows)
    _write_manifest(shard_dir, {**signature, "dim": old.get("dim") if old else None, "complete": False})
    run = ShardRun(shard_dir, n, 0, shard_rows, num_shards, resumed_shards=sorted(done), warnings=plan.warnings)
    if isinstance(source, ParquetColumn):  # each actor reads its shard's texts: the driver never holds them all
        ref = {"path": str(Path(source.path).resolve()), "column": source.column}
        items = [
            {"shard": c, "start": c * shard_rows, "texts": {**ref, "rows": min(shard_rows, n - c * shard_rows)}}
            for c in range(num_shards)
            if c not in done
        ]
    else:
        items = [
            {"shard": c, "start": c * shard_rows, "texts": texts}
            for c, texts in iter_chunks(source, shard_rows)
            if c not in done
        ]
    if items:
        started = _ray_init(address, num_cpus)
        import ray
        import ray.data

        try:
            ds = ray.data.from_items(items, override_num_blocks=len(items))
            ds = ds.map_batches(
                ShardEmbedder,
                fn_constructor_kwargs={
                    "model": model or "",
                    "pooling": plan.pooling.name,  # checked here; each actor's copy of the model takes it
                    "batch_size": config.batch_size,
                    "max_length": config.max_length,
                    "shard_dir": str(shard_dir.resolve()),
                    "device": on,
                    "dtype": dtype,
                },
                batch_size=1,
                compute=ray.data.ActorPoolStrategy(
                    size=pool_size(num_actors, len(items), cpus=num_cpus if started and address == "local" else None)
                ),
                **actor_options(on),
            )
            summary = ds.take_all()
        finally:
            if started:
                ray.shutdown()
        run.computed_shards = sorted(int(r["shard"]) for r in summary)
        dims = {int(r["dim"]) for r in summary}
        if len(dims) != 1:
            raise RuntimeError(f"shards came back with different dimensions {sorted(dims)}")
        run.dim = dims.pop()
    else:
        run.dim = int(read_shard(shard_path(shard_dir, 0))[1].shape[1])
    missing = set(range(num_shards)) - _finished_shards(shard_dir, n, shard_rows)
    if missing:
        raise RuntimeError(f"{len(missing)} shard(s) missing after the Ray run, e.g. {min(missing)}; rerun to finish")
    _write_manifest(shard_dir, {**signature, "dim": run.dim, "complete": True})
    log.info("embedded %d texts into %d shards in %s", n, num_shards, shard_dir)
    return run


def save_shards(vectors: np.ndarray, shard_dir: str | Path, shard_rows: int = DEFAULT_SHARD_ROWS) -> int:
    """Split vectors (n, d) (e.g. a memory-mapped .npy from ``embed_to_npy``) into shards with a complete
    manifest, so ``build_ivfpq_from_shards`` can index them. Reads one shard of rows at a time. Returns
    the number of shards."""
    shard_dir = Path(shard_dir)
    if vectors.ndim != 2 or len(vectors) == 0:
        raise InputError(f"need a non-empty 2-D array of vectors, got shape {vectors.shape}")
    if shard_rows < 1:
        raise InputError(f"shard rows must be at least 1, got {shard_rows}")
    if shard_dir.exists() and (any(shard_dir.glob(SHARD_GLOB)) or (shard_dir / MANIFEST).exists()):
        raise InputError(f"{shard_dir} already holds shards; use an empty folder")
    n, dim = vectors.shape
    num_shards = -(-n // shard_rows)
    for c in range(num_shards):
        start = c * shard_rows
        block = np.asarray(vectors[start : start + shard_rows], np.float32)  # (m, d)
        write_shard(shard_dir, c, ids=np.arange(start, start + len(block)), vectors=block)
    meta = {"format": SHARDS_FORMAT, "version": FORMAT_VERSION, "n": n, "dim": dim, "shard_rows": shard_rows}
    _write_manifest(shard_dir, {**meta, "num_shards": num_shards, "complete": True})
    return num_shards


def iter_shards(shard_dir: str | Path) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(ids (m,), vectors (m, d)) of each shard, in shard order."""
    for path in sorted(Path(shard_dir).glob(SHARD_GLOB)):
        ids, vectors = read_shard(path)
        assert vectors is not None
        yield ids, vectors


def load_shards(shard_dir: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """All shards in id order: ids (n,) int64 and vectors (n, d) float32; checks nothing is missing."""
    shard_dir = Path(shard_dir)
    if not shard_dir.is_dir():
        raise InputError(f"shard folder not found: {shard_dir}")
    meta = read_manifest(shard_dir)
    parts = list(iter_shards(shard_dir))
    if not parts:
        raise InputError(f"{shard_dir} holds no shards ({SHARD_GLOB})")
    ids = np.concatenate([p[0] for p in parts])  # (n,)
    dims = {p[1].shape[1] for p in parts}
    if len(dims) != 1:
        raise InputError(f"{shard_dir}: shards have different dimensions {sorted(dims)}")
    vectors = np.concatenate([p[1] for p in parts])  # (n, d)
    order = np.argsort(ids, kind="stable")
    ids, vectors = ids[order], vectors[order]
    if len(ids) > 1 and (np.diff(ids) == 0).any():
        raise InputError(f"{shard_dir}: some ids appear in two shards; delete the folder and rerun")
    if meta is not None:
        if not meta.get("complete") or meta.get("n") != len(ids) or not np.array_equal(ids, np.arange(len(ids))):
            raise InputError(
                f"{shard_dir}: shards are incomplete ({len(ids)} of {meta.get('n')} rows); rerun to finish"
            )
    return ids, vectors


def build_ivfpq_from_shards(
    shard_dir: str | Path,
    *,
    sample_size: int = 100_000,
    nlist: int | None = None,
    m: int | None = None,
    nbits: int = 8,
    nprobe: int | None = None,
    seed: int = 0,
):
    """IVF-PQ index over every shard without holding all flat vectors: k-means and PQ codebooks are
    trained on a seeded sample of ``sample_size`` rows, then shards are added one by one with their ids.
    ``nlist`` defaults to ~4 sqrt(n) (at most sample / 39), ``m`` to dim / 8 (must divide dim).
    Returns a ``isoscope.neighbours.index.VectorIndex``.
    """
    from isoscope.neighbours.index import IndexParams, VectorIndex
    from isoscope.sampling import sample_indices

    shard_dir = Path(shard_dir)
    meta = read_manifest(shard_dir)
    if meta is None or not meta.get("complete"):
        raise InputError(f"{shard_dir}: no complete shard set (manifest.json missing or run unfinished)")
    n, dim = int(meta["n"]), int(meta["dim"])
    wanted = sample_indices(n, sample_size, seed)  # (s,) sorted ids
    sample = np.concatenate([v[np.isin(ids, wanted)] for ids, v in iter_shards(shard_dir)])  # (s, d)
    params = IndexParams(nlist=nlist, pq_m=m, pq_nbits=nbits, nprobe=nprobe, train_size=sample_size, seed=seed)
    params = params.resolved("ivfpq", n, dim)  # the default nlist rule lives there (sample rows // 39 at most)
    index = VectorIndex.create(dim, "ivfpq", params)
    index.train(sample)
    del sample
    for ids, vectors in iter_shards(shard_dir):
        index.add(vectors, ids)
    if index.ntotal != n:
        raise InputError(f"{shard_dir}: indexed {index.ntotal} rows, the manifest says {n}")
    return index
